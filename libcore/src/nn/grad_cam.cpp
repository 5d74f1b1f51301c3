#include "tandem/nn/grad_cam.h"

#include <torch/autograd.h>
#include <torch/nn/functional/upsampling.h>
#include <torch/torch.h>

#include <stdexcept>

#include "tandem/nn/resnet.h"

namespace tandem::nn {

at::Tensor scale_each_map(const at::Tensor& maps) {
  const at::Tensor flat = maps.flatten(1);
  const at::Tensor shifted = flat - std::get<0>(flat.min(1, /*keepdim=*/true));
  return (shifted / (std::get<0>(shifted.max(1, /*keepdim=*/true)) + 1e-7)).view_as(maps);
}

at::Tensor grad_cam(ResNetImpl& model, const at::Tensor& images, const at::Tensor& classes) {
  if (images.dim() != 4 || classes.dim() != 1 || classes.size(0) != images.size(0))
    throw std::invalid_argument("grad_cam: images [N, C, H, W] and classes [N] expected");
  at::Tensor activations;
  {
    torch::NoGradGuard no_grad;
    activations = model.feature_map(images).detach();
  }
  activations.requires_grad_(true);
  at::Tensor grads;
  {
    torch::AutoGradMode enabled(true);
    const at::Tensor logits = model.classify(activations);
    const at::Tensor scores = logits.gather(1, classes.to(logits.device(), torch::kLong).view({-1, 1})).sum();
    grads = torch::autograd::grad({scores}, {activations})[0];
  }
  torch::NoGradGuard no_grad;
  const at::Tensor a = activations.detach().to(torch::kFloat);
  const at::Tensor weights = grads.to(torch::kFloat).mean({2, 3}, /*keepdim=*/true);
  const at::Tensor small = scale_each_map((weights * a).sum(1).clamp_min(0));
  namespace F = torch::nn::functional;
  const at::Tensor resized =
      F::interpolate(small.unsqueeze(1), F::InterpolateFuncOptions()
                                             .size(std::vector<int64_t>{images.size(2), images.size(3)})
                                             .mode(torch::kBilinear)
                                             .align_corners(false))
          .squeeze(1);
  return scale_each_map(resized);
}

}  // namespace tandem::nn
