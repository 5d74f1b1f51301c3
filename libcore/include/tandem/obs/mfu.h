#pragma once
// Model FLOPs utilisation: achieved model FLOP/s over the GPU's peak, the
// number that says how far a run is from what the hardware can do, comparable
// across GPUs (PaLM, Appendix B). Peaks are dense (no 2:4 sparsity) tensor-core
// rates where the GPU has tensor cores for the precision.
#include <optional>
#include <string>

namespace tandem {

// Peak FLOP/s of one GPU, by its name as CUDA or NVML reports it ("NVIDIA
// H100 80GB HBM3", "Tesla T4"), for precision "fp32", "tf32", "fp16" or
// "bf16". "fp32" is the plain FP32 rate: pass "tf32" where FP32 matmuls are
// allowed to use TF32 tensor cores. nullopt for an unknown GPU (a CPU
// included) or a precision the GPU has no fast path for (bf16 before Ampere).
// Throws std::invalid_argument for any other precision string. A MIG slice
// ("NVIDIA A100-SXM4-40GB MIG 3g.20gb") gets the whole GPU's peak scaled by
// its share of the SMs, `sm_count` of them (cudaDeviceProp's
// multiProcessorCount for the slice); nullopt when that count is not given.
std::optional<double> peak_flops(const std::string& gpu_name, const std::string& precision, int sm_count = 0);

// flops_per_second_per_gpu / peak, a fraction (0.4 means 40%); nullopt where
// peak_flops is (logged as "n/a").
std::optional<double> mfu(double flops_per_second_per_gpu, const std::string& gpu_name, const std::string& precision,
                          int sm_count = 0);

}  // namespace tandem
