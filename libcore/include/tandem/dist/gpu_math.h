#pragma once
// How a rank's GPU does its math, set once per process from the dist.* keys,
// as a PyTorch script sets torch.backends before its loop: TF32 for fp32
// matmuls and convolutions on Ampere and later (LibTorch's own default keeps
// cuBLAS in full fp32: 67 against 989 TFLOP/s on an H100), and cuDNN's
// autotuner for models whose batches all have one shape.
#include "tandem/dist/dist_keys.h"

namespace tandem {

// Sets LibTorch's global flags: TF32 in cuBLAS and cuDNN (dist.tf32), cuDNN
// deterministic (dist.deterministic), cuDNN benchmark when `fixed_shapes`
// and not deterministic. Only for a rank on a GPU: the flags mean nothing to
// the CPU, whose results stay bitwise as before.
void set_gpu_math(const DistKeys& dist, bool fixed_shapes);

// Whether fp32 matmuls run on TF32 tensor cores on a GPU of compute
// capability `cc_major`: what MFU compares an fp32 run against.
bool tf32_active(const DistKeys& dist, int cc_major);

}  // namespace tandem
