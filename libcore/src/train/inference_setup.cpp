#include "tandem/train/inference_setup.h"

#include "tandem/config/config.h"
#include "tandem/dist/cuda_info.h"
#include "tandem/dist/dist_keys.h"
#include "tandem/dist/gpu_math.h"
#include "tandem/dist/placement.h"
#include "tandem/train/train_keys.h"

namespace tandem {

InferenceSetup inference_setup(const World& world, const Config& config, bool fixed_shapes) {
  const DistSettings dist = dist_settings(config);
  const Placement placement = place_rank(world, dist.device, dist.backend);
  InferenceSetup setup;
  setup.device = c10::Device(placement.torch_device());
  if (!placement.cuda) return setup;
  set_gpu_math(dist, fixed_shapes);
  if (dist.inference_fp32) return setup;
  setup.precision = resolve_precision(run_settings(config).precision, true, gpu_info(placement.device_index).cc_major);
  return setup;
}

}  // namespace tandem
