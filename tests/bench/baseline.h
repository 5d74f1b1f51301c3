#pragma once
// What bench_gpt2_train and bench_resnet_train share to race our C++ training
// against the same model in PyTorch eager mode (their .py scripts here, run
// with tandem's venv, whose torch is the LibTorch tandem builds on): the flags that set the
// race up, running the Python side, alternating the two sides, and the rows
// that compare them.
#include <functional>
#include <optional>
#include <string>

#include "train_timing.h"

namespace bench {

// --threads N, --repeats N, --device cpu|cuda and --python PATH.
struct BaselineFlags {
  std::string python = TANDEM_BENCH_PYTHON;
  std::string device;  // cuda where LibTorch sees one, else cpu
  int threads = 2;
  int repeats = 2;

  BaselineFlags();
  // False when `key` is none of these flags.
  bool take(const std::string& key, const char* value);
};

// Runs tests/bench/`script` with `args` (its model, shape and step counts)
// then the threads and device of `flags`; the script prints its figures as
// one JSON line, the rate under `rate_key`. nullopt and why when it cannot.
std::optional<Figures> run_python(const std::string& script, const std::string& args, const BaselineFlags& flags,
                                  const std::string& rate_key, std::string* why);

// Each side's best run, or why Python has none.
struct Race {
  Figures ours;
  std::optional<Figures> python;
  std::string why;
};

// `repeats` runs of each side, alternating, each side keeping its best: a
// shared machine's noise mostly slows a run down, and alternating spreads it
// over both. Python is not tried again once it has failed.
Race race(int repeats, const std::function<Figures()>& ours,
          const std::function<std::optional<Figures>(std::string* why)>& python);

// Prints ours and python with `row`, then "ours/python" and the ratio of
// their rates after `lead` (the ratio line's text before the impl column),
// right-aligned in `width` characters, and a warning when the two models'
// sizes differ. False, with nothing past our row, when Python has none.
bool print_race(const Race& race, const std::function<void(const char* impl, const Figures&)>& row,
                const std::string& lead, int width);

}  // namespace bench
