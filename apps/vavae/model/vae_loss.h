#pragma once
// The VAE's training loss: L1 reconstruction plus a small KL term, as LDM's
// LPIPSWithDiscriminator computes them (without the perceptual and GAN terms
// and with its learned log-variance left at 0), and VA-VAE's alignment of the
// latents with a frozen vision foundation model's features, weighted
// adaptively against the reconstruction.
#include <ATen/core/Tensor.h>

#include "model/posterior.h"

namespace vavae {

struct VaeLossTerms {
  // Both summed over each sample's elements and averaged over the batch, as
  // LDM reduces them (torch.sum(x) / x.shape[0]). The reductions must match
  // for kl_weight to mean what it means upstream: LDM's 1e-6 weighs a sum of
  // KL over 8192 latent numbers against a sum of L1 over 196608 pixel numbers.
  // The totals scale with the image size; Adam does not mind.
  at::Tensor reconstruction;  // sum |x - x_rec| / N
  at::Tensor kl;              // sum KL(q || N(0, I)) / N
  at::Tensor total;           // reconstruction + kl_weight * kl
  at::Tensor l1_per_pixel;    // mean |x - x_rec|, detached: the figure to log
};

VaeLossTerms vae_loss(const at::Tensor& images, const at::Tensor& reconstruction, const Posterior& posterior,
                      double kl_weight = 1e-6);

// The vision-foundation (VF) terms compare the latents, projected to the
// features' width by the caller (VA-VAE: linear_proj, a 1x1 conv without
// bias), with the features at the same positions: both [N, C, h, w].

// mean over positions of relu(1 - margin - cos(z[n,:,i,j], f[n,:,i,j])):
// each latent points near its feature's direction, within a margin.
at::Tensor vf_cosine_margin_loss(const at::Tensor& z, const at::Tensor& features, double margin = 0.5);

// mean of relu(|S(z) - S(f)| - margin), S(x)[n] the [hw, hw] matrix of cosine
// similarities between the positions of sample n: the latents keep the
// features' relations between positions, within a margin.
at::Tensor vf_distance_matrix_loss(const at::Tensor& z, const at::Tensor& features, double margin = 0.25);

// ||d rec / d W|| / (||d vf / d W|| + 1e-4), clamped to [0, max_weight] and
// detached (VQGAN's calculate_adaptive_weight): scales the VF term so its
// gradient at W is as large as the reconstruction's. W must be reached by
// both losses: the VF loss depends on the encoder only, so VA-VAE takes the
// encoder's last layer (VaeImpl::encoder_last_layer()); its VF weight uses
// max_weight 1e8, VQGAN's GAN weight 1e4. Keeps both graphs
// (retain_graph), for the backward of the total that follows. Throws
// std::invalid_argument when either loss does not reach W.
// W is an fp32 parameter, so its gradients and their norms are fp32. For
// them to be finite and nonzero under fp16 autocast, W's layer and every
// layer between it and the VF loss run in fp32 (the encoder's conv_out and
// linear_proj do): only the loss scale would otherwise keep a half gradient
// from overflowing (the weight gradient sums N x h x w products) or
// underflowing (the VF gradient's elements are about 1e-6), and these two
// backward passes are not scaled.
at::Tensor adaptive_weight(const at::Tensor& reconstruction_loss, const at::Tensor& vf_loss,
                           const at::Tensor& last_layer, double max_weight = 1e4);

// The adaptive weight from step to step. A step whose gradient norms are not
// finite, or zero (half precision overflowing or underflowing upstream of W,
// where inf / inf would be NaN on every step and skip them all), keeps the
// last finite weight, or 0 before there is one (the VF term sits that step
// out); each such step is counted and warned about. Reading the norms is one
// wait for the device per call.
class AdaptiveWeight {
 public:
  explicit AdaptiveWeight(double max_weight) : max_weight_(max_weight) {}
  at::Tensor operator()(const at::Tensor& reconstruction_loss, const at::Tensor& vf_loss, const at::Tensor& last_layer);
  // The same from the two norms (0-dim tensors).
  at::Tensor from_norms(const at::Tensor& reconstruction_norm, const at::Tensor& vf_norm);
  int64_t kept() const { return kept_; }  // steps that kept the last weight

 private:
  double max_weight_;
  at::Tensor last_;
  int64_t kept_ = 0;
};

}  // namespace vavae
