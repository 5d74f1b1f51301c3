#include "model/vae_loss.h"

#include <torch/torch.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "tandem/obs/log.h"

namespace vavae {
namespace {

namespace F = torch::nn::functional;

void check_pair(const at::Tensor& z, const at::Tensor& features, const char* what) {
  if (z.dim() != 4 || !z.sizes().equals(features.sizes())) {
    throw std::invalid_argument(std::string(what) +
                                ": latents and features must both be [N, C, h, w] of one shape, got " +
                                c10::str(z.sizes()) + " and " + c10::str(features.sizes()));
  }
}

// The gradient of `loss` at `weight`, keeping the graph for later backward passes.
at::Tensor gradient_at(const at::Tensor& loss, const at::Tensor& weight, const char* which) {
  if (!loss.requires_grad())
    throw std::invalid_argument(std::string("adaptive_weight: the ") + which + " loss has no graph");
  const auto grads = torch::autograd::grad({loss}, {weight}, {}, /*retain_graph=*/true, /*create_graph=*/false,
                                           /*allow_unused=*/true);
  if (!grads[0].defined()) {
    throw std::invalid_argument(std::string("adaptive_weight: the ") + which +
                                " loss does not depend on the given layer (the VF loss reaches the encoder only)");
  }
  return grads[0];
}

at::Tensor norm_of(const at::Tensor& grad) { return grad.detach().norm(); }

at::Tensor weight_of(const at::Tensor& rec_norm, const at::Tensor& vf_norm, double max_weight) {
  return (rec_norm / (vf_norm + 1e-4)).clamp(0.0, max_weight);
}

}  // namespace

VaeLossTerms vae_loss(const at::Tensor& images, const at::Tensor& reconstruction, const Posterior& posterior,
                      double kl_weight) {
  const double n = static_cast<double>(images.size(0));
  const at::Tensor l1 = (images - reconstruction).abs();
  VaeLossTerms terms;
  terms.reconstruction = l1.sum() / n;
  terms.kl = posterior.kl().sum() / n;
  terms.total = terms.reconstruction + kl_weight * terms.kl;
  terms.l1_per_pixel = l1.mean().detach();
  return terms;
}

at::Tensor vf_cosine_margin_loss(const at::Tensor& z, const at::Tensor& features, double margin) {
  check_pair(z, features, "vf_cosine_margin_loss");
  const at::Tensor cos = F::cosine_similarity(features, z, F::CosineSimilarityFuncOptions().dim(1));
  return torch::relu(1.0 - margin - cos).mean();
}

at::Tensor vf_distance_matrix_loss(const at::Tensor& z, const at::Tensor& features, double margin) {
  check_pair(z, features, "vf_distance_matrix_loss");
  const auto similarities = [](const at::Tensor& x) {
    const at::Tensor unit = F::normalize(x.flatten(2), F::NormalizeFuncOptions().dim(1));  // [N, C, hw]
    return at::bmm(unit.transpose(1, 2), unit);                                            // [N, hw, hw]
  };
  return torch::relu((similarities(z) - similarities(features)).abs() - margin).mean();
}

at::Tensor adaptive_weight(const at::Tensor& reconstruction_loss, const at::Tensor& vf_loss,
                           const at::Tensor& last_layer, double max_weight) {
  const at::Tensor rec_grad = gradient_at(reconstruction_loss, last_layer, "reconstruction");
  const at::Tensor vf_grad = gradient_at(vf_loss, last_layer, "VF");
  return weight_of(norm_of(rec_grad), norm_of(vf_grad), max_weight);
}

at::Tensor AdaptiveWeight::operator()(const at::Tensor& reconstruction_loss, const at::Tensor& vf_loss,
                                      const at::Tensor& last_layer) {
  return from_norms(norm_of(gradient_at(reconstruction_loss, last_layer, "reconstruction")),
                    norm_of(gradient_at(vf_loss, last_layer, "VF")));
}

at::Tensor AdaptiveWeight::from_norms(const at::Tensor& reconstruction_norm, const at::Tensor& vf_norm) {
  const at::Tensor both = torch::stack({reconstruction_norm.to(at::kDouble), vf_norm.to(at::kDouble)}).cpu();
  const double rec = both[0].item<double>(), vf = both[1].item<double>();
  if (std::isfinite(rec) && std::isfinite(vf) && rec > 0 && vf > 0) {
    last_ = weight_of(reconstruction_norm, vf_norm, max_weight_);
    return last_;
  }
  ++kept_;
  tandem::log::warn("VF loss: gradient norms at the encoder's last layer of ", rec, " (reconstruction) and ", vf,
                    " (VF) give no weight; keeping ", last_.defined() ? "the last one" : "0 (none yet)", " (",
                    kept_, " step(s) so far)");
  return last_.defined() ? last_ : torch::zeros({}, reconstruction_norm.options());
}

}  // namespace vavae
