#include "baseline.h"

#include <torch/cuda.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#ifndef TANDEM_BENCH_DIR
#define TANDEM_BENCH_DIR "tests/bench"
#endif

namespace fs = std::filesystem;

namespace bench {

BaselineFlags::BaselineFlags() : device(torch::cuda::is_available() ? "cuda" : "cpu") {}

bool BaselineFlags::take(const std::string& key, const char* value) {
  if (key == "--threads")
    threads = std::atoi(value);
  else if (key == "--repeats")
    repeats = std::max(1, std::atoi(value));
  else if (key == "--device")
    device = value;
  else if (key == "--python")
    python = value;
  else
    return false;
  return true;
}

std::optional<Figures> run_python(const std::string& script_name, const std::string& args, const BaselineFlags& flags,
                                  const std::string& rate_key, std::string* why) {
  const fs::path script = fs::path(TANDEM_BENCH_DIR) / script_name;
  if (flags.python.find('/') != std::string::npos && !fs::exists(flags.python)) {
    *why = flags.python + " not found (env/setup.sh makes tandem's venv with torch)";
    return std::nullopt;
  }
  if (!fs::exists(script)) {
    *why = script.string() + " not found";
    return std::nullopt;
  }
  const std::string command = "'" + flags.python + "' '" + script.string() + "' " + args + " --threads " +
                              std::to_string(flags.threads) + " --device " + flags.device + " 2>&1";
  std::string output;
  int status = -1;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buffer[4096];
    for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
    status = pclose(pipe);
  }
  // The JSON is the last line; anything before it is a warning.
  const size_t end = output.find_last_not_of('\n');
  const size_t begin = end == std::string::npos ? 0 : output.rfind('\n', end);
  const auto json = nlohmann::json::parse(
      end == std::string::npos ? std::string() : output.substr(begin == std::string::npos ? 0 : begin + 1), nullptr,
      false);
  if (!json.is_discarded() && json.contains("error")) {
    *why = json["error"].get<std::string>();
  } else if (status != 0 || json.is_discarded() || !json.contains(rate_key)) {
    *why = "unexpected output (status " + std::to_string(status) + ") from " + command + ": " + output;
  }
  if (!why->empty()) return std::nullopt;
  return Figures{json[rate_key],
                 json["loss_first"],
                 json["loss_last"],
                 json["parameters"],
                 json.value("forward_ms", -1.0),
                 json.value("backward_ms", -1.0),
                 json.value("optimizer_ms", -1.0)};
}

Race race(int repeats, const std::function<Figures()>& ours,
          const std::function<std::optional<Figures>(std::string* why)>& python) {
  Race result;
  for (int r = 0; r < repeats; ++r) {
    const Figures mine = ours();
    if (mine.items_per_s > result.ours.items_per_s) result.ours = mine;
    if (!result.why.empty()) continue;
    const auto theirs = python(&result.why);
    if (theirs && (!result.python || theirs->items_per_s > result.python->items_per_s)) result.python = theirs;
  }
  return result;
}

bool print_race(const Race& race, const std::function<void(const char* impl, const Figures&)>& row,
                const std::string& lead, int width) {
  row("ours (C++)", race.ours);
  if (!race.python) return false;
  row("python", *race.python);
  std::printf("%s%-11s %*.2fx\n", lead.c_str(), "ours/python", width, race.ours.items_per_s / race.python->items_per_s);
  if (race.python->parameters != race.ours.parameters)
    std::printf("  warning: python's model has %lld parameters, ours %lld\n", (long long)race.python->parameters,
                (long long)race.ours.parameters);
  return true;
}

}  // namespace bench
