#include "app/vae_task.h"

#include <torch/torch.h>

#include "data/load_image.h"
#include "data/sample_seed.h"
#include "model/vae_loss.h"
#include "model/vae.h"
#include "tandem/nn/init_from.h"
#include "tandem/train/autocast_guard.h"

namespace vavae {

namespace {

// VA-VAE's: VQGAN's cap on a GAN weight (1e4) would bind the VF weight early on.
constexpr double kMaxVfWeight = 1e8;

}  // namespace

VaeTask::VaeTask(VaeTaskOptions options, std::vector<ImageItem> train, std::vector<ImageItem> val)
    : options_(std::move(options)), train_(std::move(train)), val_(std::move(val)), vf_weigh_(kMaxVfWeight) {}

at::Tensor vae_training_loss(VaeImpl& vae, const at::Tensor& images, const at::Tensor& noise,
                             const at::Tensor& features, const VaeTaskOptions& options, AdaptiveWeight* weigh) {
  const VaeOutput out = vae.forward(images, noise);
  const VaeLossTerms terms = vae_loss(images, out.reconstruction.to(at::kFloat), out.posterior, options.kl_weight);
  if (!features.defined()) return terms.total;
  // Upstream aligns the sampled latents, the ones the decoder saw.
  // The VF loss's path back to the encoder's last layer, in fp32 as that
  // layer is: its gradient's elements (about 1e-6) would round to zero in half.
  at::Tensor z;
  {
    tandem::AutocastOff fp32;
    z = dynamic_cast<VfVaeImpl&>(vae).linear_proj(out.latents.to(at::kFloat));
  }
  const at::Tensor f = features.to(at::kFloat);
  const at::Tensor vf = vf_cosine_margin_loss(z, f) + vf_distance_matrix_loss(z, f);
  AdaptiveWeight fresh(kMaxVfWeight);
  const at::Tensor weight = (weigh ? *weigh : fresh)(terms.reconstruction, vf, vae.encoder_last_layer());
  return terms.total + options.vf_weight * weight * vf;
}

std::shared_ptr<torch::nn::Module> VaeTask::build_model() {
  if (options_.vf_features.defined()) {
    VfVae vae(options_.vae, options_.vf_features.size(1));
    if (!options_.init_from.empty()) {
      tandem::nn::InitOptions init;
      init.allow_unexpected = true;
      init.may_differ = {kVfProjectionPrefix};  // another foundation model's width, or none
      tandem::nn::init_from_safetensors(*vae, options_.init_from, init);
    }
    return vae.ptr();
  }
  Vae vae(options_.vae);
  if (!options_.init_from.empty()) {
    tandem::nn::InitOptions init;
    init.allow_unexpected = true;  // upstream files also hold the training loss's and foundation model's tensors
    tandem::nn::init_from_safetensors(*vae, options_.init_from, init);
  }
  return vae.ptr();
}

tandem::Activations VaeTask::activation_bytes(const tandem::ActivationQuery& query) const {
  return vae_activation_bytes(options_.vae, options_.image_size,
                              options_.vf_features.defined() ? options_.vf_features.size(1) : 0, query);
}

tandem::Activations vae_activation_bytes(const VaeOptions& vae, int64_t image_size, int64_t vf_channels,
                                         const tandem::ActivationQuery& query) {
  tandem::Activations bytes = vae.activation_bytes(query, image_size);
  if (vf_channels == 0) return bytes;
  const int64_t hw = (image_size / vae.downsample_factor()) * (image_size / vae.downsample_factor());
  // The projection's output, its normalised copy and the features'; S(z),
  // S(f), their difference and its relu, in fp32.
  bytes.start += query.micro_batch * (3 * vf_channels * hw * 4 + 4 * hw * hw * 4);
  return bytes;
}

tandem::Batch VaeTask::make_batch(const std::vector<int64_t>& indices, bool train, uint64_t seed) {
  const auto& items = train ? train_ : val_;
  const int64_t f = options_.vae.downsample_factor();
  const int64_t latent = options_.image_size / f;
  const bool vf = train && options_.vf_features.defined();
  std::vector<at::Tensor> images, noise, features;
  for (const int64_t i : indices) {
    at::Generator g = sample_generator(seed, static_cast<uint64_t>(i));
    at::Tensor image = load_image(items.at(i).path, options_.image_size);
    at::Tensor feature = vf ? options_.vf_features[i].to(at::kFloat) : at::Tensor();
    if (train && options_.hflip && at::rand({1}, g).item<float>() < 0.5f) {
      image = image.flip({2});
      // Upstream computes the features of the flipped image; a ViT's features
      // of a mirrored image are close to its features mirrored.
      if (vf) feature = feature.flip({2});
    }
    images.push_back(image);
    noise.push_back(at::randn({options_.vae.embed_dim, latent, latent}, g));
    if (vf) features.push_back(feature);
  }
  tandem::Batch batch{{"image", torch::stack(images)}, {"noise", torch::stack(noise)}};
  if (vf) batch["vf"] = torch::stack(features);
  return batch;
}

// A mean over the batch's samples, all valid (drop_last), of equal weight;
// the VF loss's distance matrix is over the micro-batch's pairs (see Loss).
tandem::Loss VaeTask::loss(torch::nn::Module& model, const tandem::Batch& batch) {
  const auto vf = batch.find("vf");
  return tandem::Loss::of_mean(vae_training_loss(dynamic_cast<VaeImpl&>(model), batch.at("image"), batch.at("noise"),
                                                  vf == batch.end() ? at::Tensor() : vf->second, options_, &vf_weigh_),
                               batch.at("image").size(0));
}

tandem::EvalRows VaeTask::eval_rows(torch::nn::Module& model, const tandem::Batch& batch) {
  auto& vae = dynamic_cast<VaeImpl&>(model);
  const at::Tensor images = batch.at("image");
  const VaeOutput out = vae.forward(images, batch.at("noise"));
  const at::Tensor error = (images - out.reconstruction.to(at::kFloat)).abs().flatten(1);
  const at::Tensor kl = out.posterior.kl().to(at::kFloat);
  return {{"loss", error.sum(1) + options_.kl_weight * kl}, {"l1", error.mean(1)}};
}

tandem::Metrics VaeTask::eval_metrics(const tandem::EvalRows& rows) {
  return {{"loss", rows.at("loss").to(at::kDouble).mean().item<double>()},
          {"l1", rows.at("l1").to(at::kDouble).mean().item<double>()}};
}

std::vector<std::string> VaeTask::metric_names() const { return {"loss", "l1"}; }

}  // namespace vavae
