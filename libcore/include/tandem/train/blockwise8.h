#pragma once
// Blockwise 8-bit quantisation of AdamW's moments (train.optimizer_state =
// "8bit"; Dettmers et al., "8-bit Optimizers via Block-wise Quantization",
// as bitsandbytes' AdamW8bit stores them).
//
// A moment is cut into blocks of kQuantBlock consecutive elements in its
// parameter's memory order: a tensor's last block may be short, and no block
// spans two tensors, so a moment quantises the same whether one rank holds
// it or its runs lie on several (ZeRO's runs start at block boundaries).
// Each block keeps one fp32 scale, its largest |value| (absmax), and each
// element one byte: the index of the code nearest to value / absmax in a map
// of 256 ascending codes, the lower of two equally near ones. Dequantised,
// an element is map[code] * absmax. A block of zeros has absmax 0 and the
// code of 0 everywhere. A block whose absmax is subnormal (under 1.2e-38)
// overflows the reciprocal as in bitsandbytes: its elements are off by up to
// twice that absmax, and its zeros stay zeros.
//
// The maps are bitsandbytes' dynamic maps (functional.create_dynamic_map,
// max_exponent_bits 7), signed for the first moment and unsigned for the
// second, which is never negative: decades 1e-6 ... 1 of absmax, each cut
// linearly into twice as many codes as the one below it (the signed map
// spends a bit on the sign), with 0 and 1 exact. The signed map's most
// negative code is -0.9930 (none is -1), as in bitsandbytes. Its
// quantize_blockwise (the default backend: argmin |scaled - map|, the first
// of equal distances) picks the codes we pick; we find them by binary search.
//
// Error: an element moves by at most half the gap between the two codes
// around value / absmax, times absmax: in the top decade [0.1, 1] the gaps
// are 0.9/64 (signed) and 0.9/128 (unsigned), so at most 0.70% and 0.36% of
// absmax; each decade below has half as many codes over a tenth of the
// range. Under half the smallest code (2.75e-7 of absmax signed, 1.6e-7
// unsigned) an element becomes 0.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace torch::nn {
class Module;
}

namespace tandem {

inline constexpr int64_t kQuantBlock = 2048;
// Smaller moments stay fp32 (bitsandbytes' min_8bit_size): their scales
// and the rounding would cost more than the bytes saved.
inline constexpr int64_t kQuantMinElements = 4096;

// Whether "8bit" quantises the moments of parameter `name`, the one rule
// AdamW and the memory plan share: fp32 parameters (the step dequantises
// their moments to fp32 beside them) of kQuantMinElements or more, other
// than those named in `fp32_names` (embedding_weights).
bool keeps_8bit(const std::string& name, const at::Tensor& param, const std::vector<std::string>& fp32_names);

// The weights of a model's embedding layers (torch::nn::Embedding), whose
// moments stay fp32: each step's gradient touches few of their rows, the
// second moments of the rest decay to under a block's smallest code, and
// the first moments left over then divide by 0 + eps. bitsandbytes keeps
// them in 32 bits (StableEmbedding's optim_bits override), as transformers'
// Trainer does for every nn.Embedding under its 8-bit optimizers; measured
// here, GPT-2 tiny on SciTLDR was 13% worse at step 40 with them quantised.
std::vector<std::string> embedding_weights(torch::nn::Module& model);

// The 256 codes, ascending, fp32 on the CPU.
at::Tensor dynamic_map(bool is_signed);

// Blocks of a moment of `numel` elements (the last may be short).
inline int64_t quant_blocks(int64_t numel) { return (numel + kQuantBlock - 1) / kQuantBlock; }

// A moment's bytes and scales: codes uint8 [numel], absmax fp32
// [quant_blocks(numel)], on the parameter's device.
struct QuantizedMoment {
  at::Tensor codes;
  at::Tensor absmax;
  bool is_signed = true;
};

// `values` (fp32, 1-D, contiguous) quantised into `codes` and `absmax`
// (views of the sizes above, on values' device) with `map` (dynamic_map,
// on that device).
void quantize_blockwise(const at::Tensor& values, const at::Tensor& map, const at::Tensor& codes,
                        const at::Tensor& absmax);
// map[codes] * absmax of each element's block, into `out` (fp32, codes' length).
void dequantize_blockwise(const at::Tensor& codes, const at::Tensor& absmax, const at::Tensor& map,
                          const at::Tensor& out);

}  // namespace tandem
