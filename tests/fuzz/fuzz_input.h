#pragma once
// What every fuzz target shares. tandem's parsers read files, as users hand
// them over, so the bytes libFuzzer makes land in a file first. A bad file has
// one acceptable outcome besides success: a UsageError, which a program turns
// into exit status 2 with a message naming the file. Anything else that
// escapes a parser (another exception, which would end the program with
// status 1, or a signal) is a finding.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

#include "tandem/error.h"

namespace tandem::fuzz {

// `data` in the file `name` of this process's own scratch folder (made on the
// first call, removed at exit); rewritten on every call.
std::string write_input(const uint8_t* data, size_t size, const std::string& name);
std::string scratch_path(const std::string& name);

// Prints the finding and aborts, so libFuzzer (or the replay) keeps the input.
[[noreturn]] void fail(const std::string& what);
[[noreturn]] void fail_on(const std::exception& error);

// Runs `action`; a UsageError ends it quietly, anything else is a finding.
template <class Action>
void expect_clean(Action&& action) {
  try {
    action();
  } catch (const UsageError&) {
  } catch (const std::exception& error) {
    fail_on(error);
  } catch (...) {
    fail("an exception that is not a std::exception escaped");
  }
}

// The same where a parser documents another error as its way of refusing a
// file (image::ImageError, which the apps count or turn into a UsageError).
template <class Refusal, class Action>
void expect_clean_or(Action&& action) {
  expect_clean([&] {
    try {
      action();
    } catch (const Refusal&) {
    }
  });
}

}  // namespace tandem::fuzz
