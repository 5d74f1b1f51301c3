#include "tandem/train/blockwise8.h"

#include <torch/torch.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace tandem {
namespace {

// `scaled` (fp32, 1-D, within [-1, 1]) to the index of its nearest code,
// the lower of two equally near: the codes around it are the first at or
// above it (binary search) and the one below that.
at::Tensor nearest_codes(const at::Tensor& scaled, const at::Tensor& map) {
  const at::Tensor hi = at::searchsorted(map, scaled, /*out_int32=*/true).clamp_(1, map.numel() - 1);
  const at::Tensor lo = hi - 1;
  const at::Tensor above = map.index_select(0, hi) - scaled;
  const at::Tensor below = scaled - map.index_select(0, lo);
  return at::where(above < below, hi, lo).to(at::kByte);
}

// Rows of `values` ([rows, length], one block each) with their absmax rows
// ([rows]) into `codes` ([rows * length]).
void quantize_rows(const at::Tensor& values, const at::Tensor& map, const at::Tensor& codes,
                   const at::Tensor& absmax) {
  const auto [low, high] = at::aminmax(values, /*dim=*/1);
  at::Tensor scales = absmax;  // the same view; maximum_out writes through it
  at::maximum_out(scales, high, low.neg());
  // Multiplied by the reciprocal, as bitsandbytes scales; a block of zeros
  // scales by 0 instead of 1/0, so that its codes are 0's. A subnormal
  // absmax (under 1.2e-38) has an infinite reciprocal there too: its block's
  // elements go to the ends of the map, and a zero among them (0 x inf, NaN
  // in bitsandbytes) to 0's code.
  at::Tensor inverse = absmax.reciprocal();
  inverse.masked_fill_(absmax == 0, 0.0f);
  const at::Tensor scaled = (values * inverse.unsqueeze(1)).clamp_(-1.0, 1.0).nan_to_num_(0.0).reshape({-1});
  codes.copy_(nearest_codes(scaled, map));
}

// The same on the CPU as one pass a block, threads over blocks: the chain of
// tensor ops above costs about 100 ns an element on one core (a DiT-B/1
// step 159x fused AdamW's), most of it in int32 and float temporaries.
// Each element is computed as those ops compute it: the same float
// reciprocal, product, clamp and comparisons, and the first code at or above
// (std::lower_bound's, searchsorted's) by a branchless binary search.
void quantize_cpu(const at::Tensor& given, const at::Tensor& map, const at::Tensor& codes, const at::Tensor& absmax) {
  TORCH_CHECK(codes.is_contiguous() && absmax.is_contiguous(), "quantize_blockwise: outputs must be contiguous");
  const at::Tensor values = given.to(at::kFloat).contiguous();
  const float* x = values.data_ptr<float>();
  const float* code = map.data_ptr<float>();
  uint8_t* out = codes.data_ptr<uint8_t>();
  float* scale = absmax.data_ptr<float>();
  const int64_t n = values.numel();
  at::parallel_for(0, quant_blocks(n), 16, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const int64_t first = b * kQuantBlock, last = std::min(n, first + kQuantBlock);
      // NaN sticks, as aminmax propagates it.
      float largest = 0.0f;
      for (int64_t i = first; i < last; ++i) {
        const float a = std::fabs(x[i]);
        largest = std::isnan(a) || a > largest ? a : largest;
      }
      scale[b] = largest;
      const float inverse = largest == 0.0f ? 0.0f : 1.0f / largest;
      for (int64_t i = first; i < last; ++i) {
        float v = x[i] * inverse;
        v = std::isnan(v) ? 0.0f : std::min(1.0f, std::max(-1.0f, v));
        int below_count = 0;  // codes below v
        for (int step = 128; step > 0; step >>= 1) below_count += code[below_count + step - 1] < v ? step : 0;
        const int hi = std::clamp(below_count, 1, 255), lo = hi - 1;
        out[i] = static_cast<uint8_t>(code[hi] - v < v - code[lo] ? hi : lo);
      }
    }
  });
}

void dequantize_cpu(const at::Tensor& given, const at::Tensor& scales, const at::Tensor& map, const at::Tensor& out) {
  TORCH_CHECK(out.is_contiguous() && out.scalar_type() == at::kFloat, "dequantize_blockwise: out must be contiguous fp32");
  const at::Tensor codes = given.to(at::kByte).contiguous(), absmax = scales.to(at::kFloat).contiguous();
  const uint8_t* c = codes.data_ptr<uint8_t>();
  const float* code = map.data_ptr<float>();
  const float* scale = absmax.data_ptr<float>();
  float* y = out.data_ptr<float>();
  at::parallel_for(0, codes.numel(), kQuantBlock * 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = code[c[i]] * scale[i / kQuantBlock];
  });
}

}  // namespace

at::Tensor dynamic_map(bool is_signed) {
  // bitsandbytes' create_dynamic_map(signed, max_exponent_bits=7,
  // total_bits=8), computed as it computes it (fp32 linspace and midpoints,
  // scaled by a double), so that the codes are its codes to the bit.
  constexpr int kExponentBits = 7;
  std::vector<at::Tensor> parts;
  for (int i = 0; i < kExponentBits; ++i) {
    const int64_t items = (int64_t{1} << (is_signed ? i : i + 1)) + 1;
    const at::Tensor bounds = at::linspace(0.1, 1.0, items, at::kFloat);
    const at::Tensor means = (bounds.narrow(0, 0, items - 1) + bounds.narrow(0, 1, items - 1)) / 2.0;
    const double decade = std::pow(10.0, i - (kExponentBits - 1));
    parts.push_back(means * decade);
    if (is_signed) parts.push_back(means * -decade);
  }
  parts.push_back(torch::tensor({0.0f, 1.0f}));
  return std::get<0>(at::cat(parts).sort());
}

bool keeps_8bit(const std::string& name, const at::Tensor& param, const std::vector<std::string>& fp32_names) {
  return param.numel() >= kQuantMinElements && param.scalar_type() == at::kFloat &&
         std::find(fp32_names.begin(), fp32_names.end(), name) == fp32_names.end();
}

std::vector<std::string> embedding_weights(torch::nn::Module& model) {
  // Without the model itself in named_modules: that needs it held in a
  // shared_ptr, which a model on the stack is not.
  std::vector<std::string> names;
  if (model.as<torch::nn::Embedding>()) names.emplace_back("weight");
  for (const auto& item : model.named_modules("", /*include_self=*/false))
    if (item.value()->as<torch::nn::Embedding>()) names.push_back(item.key() + ".weight");
  return names;
}

void quantize_blockwise(const at::Tensor& values, const at::Tensor& map, const at::Tensor& codes,
                        const at::Tensor& absmax) {
  torch::NoGradGuard no_grad;
  if (values.is_cpu()) return quantize_cpu(values, map, codes, absmax);
  const int64_t n = values.numel(), full = n / kQuantBlock, rest = n % kQuantBlock;
  if (full > 0) {
    quantize_rows(values.narrow(0, 0, full * kQuantBlock).view({full, kQuantBlock}), map,
                  codes.narrow(0, 0, full * kQuantBlock), absmax.narrow(0, 0, full));
  }
  if (rest > 0) {
    quantize_rows(values.narrow(0, full * kQuantBlock, rest).view({1, rest}), map,
                  codes.narrow(0, full * kQuantBlock, rest), absmax.narrow(0, full, 1));
  }
}

void dequantize_blockwise(const at::Tensor& codes, const at::Tensor& absmax, const at::Tensor& map,
                          const at::Tensor& out) {
  torch::NoGradGuard no_grad;
  if (codes.is_cpu()) return dequantize_cpu(codes, absmax, map, out);
  const int64_t n = codes.numel(), full = n / kQuantBlock, rest = n % kQuantBlock;
  const at::Tensor unscaled = map.index_select(0, codes.to(at::kInt));
  if (full > 0) {
    at::Tensor rows = out.narrow(0, 0, full * kQuantBlock).view({full, kQuantBlock});
    at::mul_out(rows, unscaled.narrow(0, 0, full * kQuantBlock).view({full, kQuantBlock}),
                absmax.narrow(0, 0, full).unsqueeze(1));
  }
  if (rest > 0) {
    at::Tensor tail = out.narrow(0, full * kQuantBlock, rest);
    at::mul_out(tail, unscaled.narrow(0, full * kQuantBlock, rest), absmax.narrow(0, full, 1));
  }
}

}  // namespace tandem
