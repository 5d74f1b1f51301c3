#pragma once
// Where a ResNet looked: Grad-CAM (Selvaraju et al. 2017) of its last stage,
// computed as pytorch-grad-cam's GradCAM computes it with
// target_layers = [model.layer4[-1]] and ClassifierOutputTarget(c), so that
// maps from tandem and from that package agree (tests/carotid: 1e-4).
//
// For each image, with A = layer4's output [512, h, w] and y_c the logit of
// the class the map explains (before softmax and any temperature, which
// the normalisation below would cancel anyway):
//   1. each channel's weight is the mean over h x w of dy_c / dA;
//   2. the map is the weighted sum of A's channels, clamped at 0;
//   3. it is scaled to [0, 1]: minus its minimum, over 1e-7 + its maximum;
//   4. it is resized bilinearly to the image's H x W with half-pixel centres
//      (cv2.resize's INTER_LINEAR, torch's interpolate with
//      align_corners = false), and scaled to [0, 1] again as in 3 (the
//      package's aggregation over layers does so, with one layer too).
// A map that is 0 everywhere (no channel raises the class) stays 0.
//
// ResNet pools A globally before its one linear layer, so dy_c / dA is that
// layer's row for c over h x w whatever the image: Grad-CAM is then CAM
// (Zhou et al. 2016), and the backbone's forward needs no gradients. The
// gradient is still taken through the head by autograd, so a head that is
// not linear would be explained right too.
#include <ATen/core/Tensor.h>

namespace tandem::nn {

class ResNetImpl;

// images [N, C, H, W] as the model's forward takes them; classes [N] (long),
// the class each map explains. Returns the maps [N, H, W], float32 on the
// images' device. The model runs in whatever mode it is in (callers put it in
// eval mode, for BatchNorm's running statistics); its parameters' gradients
// are neither needed nor touched.
at::Tensor grad_cam(ResNetImpl& model, const at::Tensor& images, const at::Tensor& classes);

// Step 3 and 4's scaling of [N, H, W] maps, each to [0, 1] on its own.
at::Tensor scale_each_map(const at::Tensor& maps);

}  // namespace tandem::nn
