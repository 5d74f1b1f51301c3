#include "tandem/dist/gpu_math.h"

#include <ATen/Context.h>

namespace tandem {

void set_gpu_math(const DistKeys& dist, bool fixed_shapes) {
  auto& context = at::globalContext();
  context.setAllowTF32CuBLAS(dist.tf32);
  context.setAllowTF32CuDNN(dist.tf32);
  context.setDeterministicCuDNN(dist.deterministic);
  // Timing every algorithm for each new shape pays off only when the shapes
  // repeat: summarize's sequence lengths vary from batch to batch.
  context.setBenchmarkCuDNN(fixed_shapes && !dist.deterministic);
}

bool tf32_active(const DistKeys& dist, int cc_major) { return dist.tf32 && cc_major >= 8; }

}  // namespace tandem
