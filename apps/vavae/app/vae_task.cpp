#include "app/vae_task.h"

#include <torch/torch.h>

#include "data/load_image.h"
#include "data/sample_seed.h"
#include "model/vae_loss.h"
#include "tandem/nn/init_from.h"

namespace vavae {

VaeTask::VaeTask(VaeTaskOptions options, std::vector<ImageItem> train, std::vector<ImageItem> val)
    : options_(std::move(options)), train_(std::move(train)), val_(std::move(val)) {}

std::shared_ptr<torch::nn::Module> VaeTask::build_model() {
  Vae vae(options_.vae);
  if (!options_.init_from.empty()) {
    tandem::nn::InitOptions init;
    init.allow_unexpected = true;  // upstream files also hold the training loss's and foundation model's tensors
    tandem::nn::init_from_safetensors(*vae, options_.init_from, init);
  }
  return vae.ptr();
}

tandem::Batch VaeTask::make_batch(const std::vector<int64_t>& indices, bool train, uint64_t seed) {
  const auto& items = train ? train_ : val_;
  const int64_t f = options_.vae.downsample_factor();
  const int64_t latent = options_.image_size / f;
  std::vector<at::Tensor> images, noise;
  for (const int64_t i : indices) {
    at::Generator g = sample_generator(seed, static_cast<uint64_t>(i));
    at::Tensor image = load_image(items.at(i).path, options_.image_size);
    if (train && options_.hflip && at::rand({1}, g).item<float>() < 0.5f) image = image.flip({2});
    images.push_back(image);
    noise.push_back(at::randn({options_.vae.embed_dim, latent, latent}, g));
  }
  return {{"image", torch::stack(images)}, {"noise", torch::stack(noise)}};
}

at::Tensor VaeTask::loss(torch::nn::Module& model, const tandem::Batch& batch) {
  auto& vae = dynamic_cast<VaeImpl&>(model);
  const at::Tensor images = batch.at("image");
  const VaeOutput out = vae.forward(images, batch.at("noise"));
  return vae_loss(images, out.reconstruction.to(at::kFloat), out.posterior, options_.kl_weight).total;
}

tandem::EvalRows VaeTask::eval_rows(torch::nn::Module& model, const tandem::Batch& batch) {
  auto& vae = dynamic_cast<VaeImpl&>(model);
  const at::Tensor images = batch.at("image");
  const VaeOutput out = vae.forward(images, batch.at("noise"));
  const at::Tensor error = (images - out.reconstruction.to(at::kFloat)).abs().flatten(1);
  const at::Tensor kl = out.posterior.kl().to(at::kFloat);
  return {{"loss", (error.sum(1) + options_.kl_weight * kl).cpu()}, {"l1", error.mean(1).cpu()}};
}

tandem::Metrics VaeTask::eval_metrics(const tandem::EvalRows& rows) {
  return {{"loss", rows.at("loss").to(at::kDouble).mean().item<double>()},
          {"l1", rows.at("l1").to(at::kDouble).mean().item<double>()}};
}

}  // namespace vavae
