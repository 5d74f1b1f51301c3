#include "flow/sampler.h"

#include <torch/torch.h>

#include <stdexcept>
#include <string>

#include "tandem/error.h"

namespace vavae {

void SamplerOptions::validate() const {
  if (guidance_scale != 1.0 && null_class < 0) {
    throw tandem::UsageError("sampler: guidance needs the null class (the model's num_classes)");
  }
}

double shift_timestep(double t, double shift) { return shift * t / (1.0 + (shift - 1.0) * t); }

std::vector<double> timestep_grid(int64_t num_steps, double shift) {
  std::vector<double> grid;
  grid.reserve(num_steps + 1);
  for (int64_t i = 0; i <= num_steps; ++i) {
    grid.push_back(shift_timestep(static_cast<double>(i) / static_cast<double>(num_steps), shift));
  }
  return grid;
}

at::Tensor sample_euler(const VelocityFn& model, const at::Tensor& noise, const at::Tensor& labels,
                        const SamplerOptions& options) {
  options.validate();
  if (noise.dim() < 2 || labels.dim() != 1 || labels.size(0) != noise.size(0)) {
    throw std::invalid_argument("sample_euler: expected noise [B, C, ...] and labels [B], got " +
                                c10::str(noise.sizes()) + " and " + c10::str(labels.sizes()));
  }
  const int64_t channels = noise.size(1);
  if (options.cfg_channels > channels) {
    throw tandem::UsageError("sampler: cfg_channels (" + std::to_string(options.cfg_channels) +
                             ") exceeds the latents' " + std::to_string(channels) + " channels");
  }
  const int64_t guided_channels = options.cfg_channels == 0 ? channels : options.cfg_channels;
  const int64_t batch = noise.size(0);
  const bool guidance = options.guidance_scale != 1.0;
  const at::Tensor both_labels = guidance ? torch::cat({labels, torch::full_like(labels, options.null_class)}) : labels;

  torch::NoGradGuard no_grad;
  const std::vector<double> grid = timestep_grid(options.num_steps, options.shift);
  at::Tensor x = noise.clone();
  for (int64_t i = 0; i < options.num_steps; ++i) {
    const double t = grid[i];
    at::Tensor v;
    if (guidance && t >= options.cfg_interval_start) {
      const at::Tensor out =
          model(torch::cat({x, x}), torch::full({2 * batch}, t, x.options().dtype(torch::kFloat)), both_labels);
      const at::Tensor cond = out.narrow(0, 0, batch), uncond = out.narrow(0, batch, batch);
      v = cond.clone();
      const at::Tensor c = cond.narrow(1, 0, guided_channels), u = uncond.narrow(1, 0, guided_channels);
      v.narrow(1, 0, guided_channels).copy_(u + options.guidance_scale * (c - u));
    } else {
      v = model(x, torch::full({batch}, t, x.options().dtype(torch::kFloat)), labels);
    }
    x = x + (grid[i + 1] - t) * v;
  }
  return x;
}

}  // namespace vavae
