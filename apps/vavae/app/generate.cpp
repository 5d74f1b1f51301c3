#include "app/generate.h"

#include <torch/torch.h>

#include "app/dit_for_latents.h"
#include "data/load_image.h"
#include "data/sample_seed.h"
#include "tandem/train/autocast_guard.h"

namespace vavae {

at::Tensor generate_images(DitImpl& dit, VaeImpl& vae, const LatentSet& stats,
                           const std::vector<ImageRequest>& requests, const GenerateOptions& options) {
  const c10::Device device = dit.parameters().front().device();
  const auto shape = stats.latents.sizes().slice(1).vec();
  std::vector<at::Tensor> noise;
  std::vector<int64_t> labels;
  for (const ImageRequest& r : requests) {
    noise.push_back(
        at::randn(shape, sample_generator(options.seed, static_cast<uint64_t>(r.user * 1000003 + r.index))));
    labels.push_back(r.user - 1);
  }
  const VelocityFn velocity = [&](const at::Tensor& x, const at::Tensor& t, const at::Tensor& y) {
    tandem::AutocastGuard autocast(options.precision, device.is_cuda());
    return dit.forward(x, t, y).to(at::kFloat);
  };
  torch::NoGradGuard no_grad;
  const at::Tensor z = sample_euler(velocity, torch::stack(noise).to(device),
                                    torch::tensor(labels, torch::kLong).to(device), options.sampler);
  tandem::AutocastGuard autocast(options.precision, device.is_cuda());
  return vae.decode(denormalise(z, stats)).to(at::kFloat);
}

at::Tensor as_eight_bit(const at::Tensor& images) {
  // write_png's rounding, then load_image's scaling.
  return to_unit_range(images).mul(255).add_(0.5).floor_().div_(255).mul_(2).sub_(1);
}

}  // namespace vavae
