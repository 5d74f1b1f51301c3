#include "tandem/obs/mfu.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "tandem/text/message_text.h"

namespace tandem {
namespace {

// Dense peak TFLOP/s, 0 where the GPU has no fast path for the precision.
// From NVIDIA's datasheets and architecture whitepapers (GeForce: FP16/BF16
// tensor rate with FP32 accumulate, which is what training uses); where a
// datasheet gives only "with sparsity" figures, they are halved.
struct Peak {
  const char* name;  // matched as whole words, so "A10" is not "A100"
  double fp32, tf32, fp16, bf16;
  int sms = 0;  // the whole GPU's SMs, for the GPUs MIG can slice
};

// More specific names first: "H100 PCIe" before "H100".
constexpr Peak kPeaks[] = {
    {"GH200", 67, 494.7, 989.4, 989.4, 132},
    {"H200 NVL", 60, 417.5, 835.5, 835.5, 132},
    {"H200", 67, 494.7, 989.4, 989.4, 132},
    {"H100 NVL", 60, 417.5, 835.5, 835.5, 132},
    {"H100 PCIe", 51, 378, 756.5, 756.5, 114},
    {"H100", 67, 494.7, 989.4, 989.4, 132},  // SXM ("NVIDIA H100 80GB HBM3")
    {"A100", 19.5, 156, 312, 312, 108},      // SXM and PCIe alike
    {"A10G", 35, 35, 70, 70},           // AWS's variant: AWS's figures, no NVIDIA datasheet
    {"A10", 31.2, 62.5, 125, 125},
    {"A30", 10.3, 82, 165, 165, 56},
    {"A40", 37.4, 74.8, 149.7, 149.7},
    {"L40S", 91.6, 183, 362, 362},
    {"L40", 90.5, 90.5, 181, 181},
    {"L4", 30.3, 60, 121, 121},
    {"T4", 8.1, 0, 65, 0},
    {"V100S", 16.4, 0, 130, 0},
    {"V100-PCIE", 14, 0, 112, 0},
    {"V100", 15.7, 0, 125, 0},  // SXM2
    {"P100-PCIE", 9.3, 0, 18.7, 0},
    {"P100", 10.6, 0, 21.2, 0},  // SXM2; FP16 at twice FP32, no tensor cores
    {"RTX 4090", 82.6, 82.6, 165.2, 165.2},
    {"RTX 3090 Ti", 40, 40, 80, 80},
    {"RTX 3090", 35.6, 35.6, 71, 71},
};

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// `needle` occurs in `text` with no letter or digit directly before or after it.
bool contains_word(const std::string& text, const std::string& needle) {
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    const size_t end = at + needle.size();
    if ((at == 0 || !word_char(text[at - 1])) && (end == text.size() || !word_char(text[end]))) return true;
  }
  return false;
}

}  // namespace

std::optional<double> peak_flops(const std::string& gpu_name, const std::string& precision, int sm_count) {
  double Peak::*rate = nullptr;
  if (precision == "fp32")
    rate = &Peak::fp32;
  else if (precision == "tf32")
    rate = &Peak::tf32;
  else if (precision == "fp16")
    rate = &Peak::fp16;
  else if (precision == "bf16")
    rate = &Peak::bf16;
  else
    throw std::invalid_argument("peak_flops: precision must be fp32, tf32, fp16 or bf16, got '" + precision + "'");
  const std::string name = upper_text(gpu_name);
  for (const Peak& peak : kPeaks) {
    if (!contains_word(name, upper_text(peak.name))) continue;
    const double tflops = peak.*rate;
    if (tflops <= 0) return std::nullopt;
    if (!contains_word(name, "MIG")) return tflops * 1e12;
    // A MIG slice computes on its share of the SMs ("3g.20gb": 42 of the
    // A100's 108); without its SM count there is no telling which share.
    if (peak.sms <= 0 || sm_count <= 0) return std::nullopt;
    return tflops * 1e12 * std::min(1.0, static_cast<double>(sm_count) / peak.sms);
  }
  return std::nullopt;
}

std::optional<double> mfu(double flops_per_second_per_gpu, const std::string& gpu_name, const std::string& precision,
                          int sm_count) {
  const auto peak = peak_flops(gpu_name, precision, sm_count);
  if (!peak) return std::nullopt;
  return flops_per_second_per_gpu / *peak;
}

}  // namespace tandem
