#pragma once
// Runs the forward pass in the chosen precision: while an AutocastGuard lives,
// eligible ops (matmuls, convolutions) on the device compute in fp16 or bf16
// and precision-sensitive ones (softmax, losses) stay fp32, as torch.autocast.
#include <c10/core/impl/LocalDispatchKeySet.h>

#include "tandem/compat.h"
#include "tandem/train/precision.h"

namespace tandem {

class AutocastGuard {
 public:
  // FP32 changes nothing. FP16 needs `cuda` (resolve_precision ensures it).
  AutocastGuard(Precision precision, bool cuda);
  // The state compat::autocast_state gave earlier, enabled or not (for
  // recomputing a forward in backward as it first ran, whatever autocast the
  // backward's thread inherited).
  AutocastGuard(bool cuda, const compat::AutocastState& state);
  // Restores the autocast state found on entry; the outermost guard also drops
  // the cached low-precision copies of the weights, which the optimizer step
  // is about to make stale.
  ~AutocastGuard();

  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  void enter(const compat::AutocastState& state);

  bool active_;
  bool cuda_;
  compat::AutocastState previous_;
};

// While alive, no op on any device is autocast: what runs computes in the
// dtype of its inputs (cast them to fp32 first). For the few layers whose
// results must not be half, as torch.autocast(enabled=False) inside an
// autocast region.
class AutocastOff {
 public:
  AutocastOff() : exclude_(c10::autocast_dispatch_keyset) {}

 private:
  c10::impl::ExcludeDispatchKeyGuard exclude_;
};

}  // namespace tandem
