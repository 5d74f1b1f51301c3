#pragma once
// Where and in what precision a command runs a model it does not train
// (generate, eval, predict, test reports, sample): the rank's device, the
// GPU's math set as training sets it, and the run's own precision, so that a
// model trained under bf16 autocast is not run in plain fp32 (on a T4 about
// 8 against 65 TFLOP/s).
#include <c10/core/Device.h>

#include "tandem/train/precision.h"

namespace tandem {

class World;
class Config;

struct InferenceSetup {
  c10::Device device = c10::Device(c10::kCPU);
  Precision precision = Precision::FP32;  // run forward passes under AutocastGuard(precision, device.is_cuda())
};

// train.precision resolved for the rank's device (fp32 on the CPU), or fp32
// with dist.inference_fp32; `fixed_shapes` as Task::fixed_shapes.
InferenceSetup inference_setup(const World& world, const Config& config, bool fixed_shapes);

}  // namespace tandem
