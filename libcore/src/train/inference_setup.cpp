#include "tandem/train/inference_setup.h"

#include "tandem/config/checkpoint_config.h"
#include "tandem/config/config.h"
#include "tandem/dist/cuda_info.h"
#include "tandem/dist/dist_keys.h"
#include "tandem/dist/gpu_math.h"
#include "tandem/dist/placement.h"
#include "tandem/error.h"
#include "tandem/io/h5file.h"
#include "tandem/obs/log.h"
#include "tandem/train/train_keys.h"

namespace tandem {

PrecisionChoice inference_precision(const std::string& trained, const std::string& setting, bool inference_fp32,
                                    bool cuda, int cc_major) {
  if (!cuda) return {Precision::FP32, "fp32 on the CPU"};
  if (inference_fp32) return {Precision::FP32, "fp32: dist.inference_fp32 is set"};
  if (setting != "auto") {
    const Precision p = resolve_precision(setting, cuda, cc_major);
    return {p, to_string(p) + ": train.precision = \"" + setting + "\""};
  }
  if (trained == "fp32" || trained == "fp16" || (trained == "bf16" && cc_major >= 8)) {
    const Precision p = resolve_precision(trained, cuda, cc_major);
    return {p, to_string(p) + ", the precision the model was trained in"};
  }
  const Precision p = resolve_precision("auto", cuda, cc_major);
  if (trained == "bf16")
    return {p, to_string(p) + ": the model was trained in bf16, which this GPU (compute capability " +
                   std::to_string(cc_major) + ".x) lacks"};
  return {p, to_string(p) + ": train.precision = \"auto\" for this GPU (the model records no precision)"};
}

std::string trained_precision(const std::string& path, const Schema& schema) {
  if (path.empty()) return "";
  const H5File file(path);
  if (file.has_attr("", "precision")) return file.attr_string("", "precision");
  if (!has_config(path)) return "";
  // A file from before the record: its config's train.precision, when not
  // "auto". A config this program cannot read (another version's keys) only
  // loses the hint.
  try {
    const std::string configured = run_fields(config_from_checkpoint(schema, path)).precision;
    return configured == "auto" ? "" : configured;
  } catch (const UsageError& e) {
    log::warn("the precision ", path, " was trained in is unknown: ", e.what());
    return "";
  }
}

InferenceSetup inference_setup(const World& world, const Config& config, bool fixed_shapes,
                               const std::string& model_file) {
  const DistKeys dist = dist_settings(config);
  const Placement placement = place_rank(world, dist.device, dist.backend);
  InferenceSetup setup;
  setup.device = c10::Device(placement.torch_device());
  if (placement.cuda) set_gpu_math(dist, fixed_shapes);
  const PrecisionChoice choice =
      inference_precision(trained_precision(model_file, config.schema()), run_settings(config).precision, dist.inference_fp32,
                          placement.cuda, placement.cuda ? gpu_info(placement.device_index).cc_major : 0);
  setup.precision = choice.precision;
  log::info("inference on ", setup.device.str(), ": ", choice.why);
  return setup;
}

}  // namespace tandem
