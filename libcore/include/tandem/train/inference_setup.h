#pragma once
// Where and in what precision a command runs a model it does not train
// (generate, eval, predict, test reports, sample): the rank's device, the
// GPU's math set as training sets it, and the precision the model was
// trained in, so that a model trained under bf16 autocast is not run in plain
// fp32 (on a T4 about 8 against 65 TFLOP/s), nor one trained in fp32 (perhaps
// because fp16 diverged) under fp16 autocast.
//
// The choice (inference_precision) is a function of four things alone:
// - dist.inference_fp32 forces fp32;
// - the command's train.precision, when it is not "auto", wins (checked as
//   training checks it: bf16 needs compute capability 8);
// - else the precision the model file records it was trained in (the
//   Trainer writes what train.precision resolved to), where the device runs
//   it: a bf16 model on a GPU without bf16 (a T4) runs in fp16, as "auto"
//   would have trained it there;
// - else (no record: weights from elsewhere, a file from before the record)
//   "auto" for the device.
// On the CPU inference runs fp32, as "auto" trains there (autocast on the
// CPU is bf16 only, and slower than fp32 on most CPUs).
#include <c10/core/Device.h>

#include <string>

#include "tandem/train/precision.h"

namespace tandem {

class World;
class Config;
class Schema;

struct InferenceSetup {
  c10::Device device = c10::Device(c10::kCPU);
  Precision precision = Precision::FP32;  // run forward passes under AutocastGuard(precision, device.is_cuda())
};

struct PrecisionChoice {
  Precision precision = Precision::FP32;
  std::string why;  // for the log: which of the rules above decided
};

// `trained`: the model's recorded precision ("fp32", "fp16", "bf16"), or ""
// when it records none; `setting`: the command's train.precision.
PrecisionChoice inference_precision(const std::string& trained, const std::string& setting, bool inference_fp32,
                                    bool cuda, int cc_major);

// The precision the model file at `path` was trained in: its "precision"
// state, or, in a file written before that was recorded, its config's
// train.precision when that names one (read over `schema`, the program's);
// "" when neither says (or no path). Reads no tensors.
std::string trained_precision(const std::string& path, const Schema& schema);

// The rank's device and the precision inference_precision picks for the
// model file `model_file` ("" when the model comes from no file of a
// training run), logged with its reason; `fixed_shapes` as
// Task::fixed_shapes.
InferenceSetup inference_setup(const World& world, const Config& config, bool fixed_shapes,
                               const std::string& model_file);

}  // namespace tandem
