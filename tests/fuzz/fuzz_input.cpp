#include "fuzz_input.h"

#include <cxxabi.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <typeinfo>

namespace tandem::fuzz {
namespace {

// One folder per process: libFuzzer's -fork and -jobs run several at once.
// Never destroyed: the exit handler that removes it runs after the statics
// made before it are gone, and would otherwise read a destroyed path (and
// remove nothing, leaving a folder in /tmp per run).
const std::filesystem::path& scratch() {
  static const std::filesystem::path* const dir = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "tandem-fuzz-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) {
      std::perror("tandem-fuzz: mkdtemp");
      std::abort();
    }
    const auto* made = new std::filesystem::path(pattern);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(scratch(), ignored);
    });
    return made;
  }();
  return *dir;
}

}  // namespace

std::string scratch_path(const std::string& name) { return (scratch() / name).string(); }

std::string write_input(const uint8_t* data, size_t size, const std::string& name) {
  const std::string path = scratch_path(name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) fail("cannot write the input to " + path);
  return path;
}

void fail(const std::string& what) {
  std::fprintf(stderr, "tandem-fuzz: %s\n", what.c_str());
  std::abort();
}

void fail_on(const std::exception& error) {
  int status = 0;
  const std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(typeid(error).name(), nullptr, nullptr, &status),
                                                    std::free);
  fail(std::string(status == 0 ? name.get() : typeid(error).name()) + " escaped (a program would end with status 1, not 2): " +
       error.what());
}

}  // namespace tandem::fuzz
