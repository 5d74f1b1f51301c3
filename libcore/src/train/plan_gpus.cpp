#include "tandem/train/plan_gpus.h"

#include <cmath>
#include <cstdio>
#include <regex>

#include "tandem/dist/cuda_info.h"
#include "tandem/error.h"
#include "tandem/train/memory_plan.h"

namespace tandem {

const std::vector<GpuModel>& gpu_models() {
  static const std::vector<GpuModel> table = {
      {"t4", "Tesla T4", 15095, 7, 5},
      {"l4", "NVIDIA L4", 22700, 8, 9},
      {"a10g", "NVIDIA A10G", 22587, 8, 6},
      {"v100-16gb", "Tesla V100-SXM2-16GB", 16160, 7, 0},
      {"v100-32gb", "Tesla V100-SXM2-32GB", 32510, 7, 0},
      {"a100-40gb", "NVIDIA A100-SXM4-40GB", 40536, 8, 0},
      {"a100-80gb", "NVIDIA A100-SXM4-80GB", 81920, 8, 0},
      {"h100-80gb", "NVIDIA H100 80GB HBM3", 81090, 9, 0},
      {"h200", "NVIDIA H200", 143156, 9, 0},
  };
  return table;
}

namespace {

std::string names() {
  std::string list;
  for (const GpuModel& g : gpu_models()) list += (list.empty() ? "" : ", ") + g.name;
  return list;
}

}  // namespace

PlannedDevices parse_gpus(const std::string& text, const std::string& key) {
  static const std::regex form(R"(^([A-Za-z0-9.\-]+?)(?:x([0-9]+))?$)");
  static const std::regex size(R"(^([0-9]+(?:\.[0-9]+)?)(GiB|GB)$)");
  std::smatch m, s;
  const auto refuse = [&](const std::string& why) {
    return UsageError(key + " = \"" + text + "\": " + why + "; expected NAMExCOUNT (NAME one of " + names() +
                      ") or SIZExCOUNT (\"15.0GiBx2\", \"16GBx1\")");
  };
  if (!std::regex_match(text, m, form)) throw refuse("not a device list");
  PlannedDevices d;
  const std::string count = m[2].matched ? m[2].str() : "1";
  if (count.size() > 4 || std::stoi(count) < 1 || std::stoi(count) > 4096)
    throw refuse("the count must be from 1 to 4096");
  d.count = std::stoi(count);
  const std::string what = m[1].str();
  int64_t memory = 0;
  if (std::regex_match(what, s, size)) {
    const double value = std::stod(s[1].str());
    memory = static_cast<int64_t>(std::llround(value * (s[2] == "GiB" ? 1024.0 * 1024 * 1024 : 1e9)));
    d.cc_major = 8;
    d.name = std::to_string(d.count) + " x " + what + " (compute capability 8.0 assumed)";
  } else {
    std::string lower;
    for (char c : what) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const GpuModel* found = nullptr;
    for (const GpuModel& g : gpu_models())
      if (g.name == lower) found = &g;
    if (!found) throw refuse("no GPU named \"" + what + "\"");
    memory = found->memory_mib << 20;
    d.cc_major = found->cc_major;
    d.cc_minor = found->cc_minor;
    d.name = std::to_string(d.count) + " x " + found->name + " (" + found->product + ", " +
             std::to_string(found->memory_mib) + " MiB, compute capability " + std::to_string(found->cc_major) + "." +
             std::to_string(found->cc_minor) + ")";
  }
  if (memory <= kContextBytes)
    throw refuse("a card needs more than the CUDA context's " + std::to_string(kContextBytes >> 20) + " MiB");
  d.free_bytes = memory - kContextBytes;
  return d;
}

PlannedDevices this_machine(bool cpu) {
  const std::vector<GpuInfo> gpus = cpu ? std::vector<GpuInfo>{} : visible_gpus();
  PlannedDevices d;
  if (gpus.empty()) {
    d.cuda = false;
    d.name = "this machine's CPU";
    d.free_bytes = device_free_bytes(false, 0, 1);
    return d;
  }
  d.count = static_cast<int>(gpus.size());
  d.cc_major = gpus[0].cc_major;
  d.cc_minor = gpus[0].cc_minor;
  d.free_bytes = device_free_bytes(true, gpus[0].index, 1);
  d.name = std::to_string(d.count) + " x " + gpus[0].name + " (this machine's, " + std::to_string(d.free_bytes >> 20) +
           " MiB free on the first)";
  return d;
}

}  // namespace tandem
