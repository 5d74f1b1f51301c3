#include "metrics/feature_distances.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace vavae {

namespace {

void require_rows(const at::Tensor& features, int64_t at_least, const char* what) {
  if (features.dim() != 2)
    throw std::invalid_argument(std::string(what) + ": features must be [samples, features], got " +
                                std::to_string(features.dim()) + " dimensions");
  if (features.size(0) < at_least)
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(features.size(0)) + " samples, " +
                                std::to_string(at_least) + " or more needed");
}

void require_same_width(const at::Tensor& a, const at::Tensor& b, const char* what) {
  if (a.size(-1) != b.size(-1))
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(a.size(-1)) + " features against " +
                                std::to_string(b.size(-1)));
}

// The square root of a symmetric positive semi-definite matrix, through its
// eigen-decomposition; eigenvalues below 0 (rounding) count as 0.
at::Tensor psd_sqrt(const at::Tensor& m) {
  auto [values, vectors] = torch::linalg_eigh(m);
  return (vectors * values.clamp_min(0).sqrt().unsqueeze(0)).matmul(vectors.transpose(0, 1));
}

// The unbiased MMD^2 of torch-fidelity's mmd2 under its cubic kernel.
double polynomial_mmd(const at::Tensor& x, const at::Tensor& y) {
  const double d = static_cast<double>(x.size(1)), m = static_cast<double>(x.size(0));
  const auto kernel = [d](const at::Tensor& a, const at::Tensor& b) { return (a.matmul(b.t()) / d + 1).pow(3); };
  const at::Tensor kxx = kernel(x, x), kyy = kernel(y, y), kxy = kernel(x, y);
  const double off_diagonal = (kxx.sum() - kxx.trace() + kyy.sum() - kyy.trace()).item<double>();
  return off_diagonal / (m * (m - 1)) - 2 * kxy.sum().item<double>() / (m * m);
}

}  // namespace

at::Tensor knn_radii(const at::Tensor& features, int64_t k) {
  require_rows(features, k + 1, "knn_radii");
  const at::Tensor set = features.detach().cpu();
  // 1024 rows at a time: 60,000 real images would need a 14 GB matrix at once.
  std::vector<at::Tensor> parts;
  for (const at::Tensor& rows : set.split(1024))
    parts.push_back(std::get<0>(torch::cdist(rows, set).kthvalue(k + 1, /*dim=*/1)));
  return torch::cat(parts);
}

FeatureStats feature_stats(const at::Tensor& features) {
  require_rows(features, 2, "feature_stats");
  const at::Tensor x = features.detach().to(torch::kCPU, torch::kDouble);
  const at::Tensor centred = x - x.mean(0, /*keepdim=*/true);
  return {x.mean(0), centred.t().matmul(centred) / static_cast<double>(x.size(0) - 1), x.size(0)};
}

double frechet_distance(const FeatureStats& a, const FeatureStats& b) {
  require_same_width(a.mean, b.mean, "frechet_distance");
  // The square roots of the eigenvalues of C_a^(1/2) C_b C_a^(1/2) are the
  // singular values of C_b^(1/2) C_a^(1/2): taken directly, a null
  // direction gives about 1e-16, where the square root of an eigenvalue's
  // rounding (about 1e-15) would give 3e-8 for each.
  const double trace_root = torch::linalg_svdvals(psd_sqrt(b.cov).matmul(psd_sqrt(a.cov))).sum().item<double>();
  const at::Tensor diff = a.mean - b.mean;
  return diff.dot(diff).item<double>() + a.cov.trace().item<double>() + b.cov.trace().item<double>() - 2 * trace_root;
}

KernelDistance kernel_distance(const at::Tensor& real, const at::Tensor& fake, int64_t subsets, int64_t subset_size,
                               uint64_t seed) {
  require_rows(real, 2, "kernel_distance (real)");
  require_rows(fake, 2, "kernel_distance (generated)");
  require_same_width(real, fake, "kernel_distance");
  if (subsets < 1 || subset_size < 2)
    throw std::invalid_argument("kernel_distance: subsets must be 1 or more and subset_size 2 or more");
  const at::Tensor x = real.detach().to(torch::kCPU, torch::kDouble), y = fake.detach().to(torch::kCPU, torch::kDouble);
  const int64_t m = std::min({subset_size, x.size(0), y.size(0)});
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const auto pick = [&](const at::Tensor& set) {
    if (m == set.size(0)) return set;
    return set.index_select(0, torch::randperm(set.size(0), gen, torch::TensorOptions(torch::kLong)).slice(0, 0, m));
  };
  at::Tensor mmds = torch::empty({subsets}, torch::kDouble);
  for (int64_t i = 0; i < subsets; ++i) mmds[i] = polynomial_mmd(pick(x), pick(y));
  return {mmds.mean().item<double>(), mmds.std(/*unbiased=*/false).item<double>(), subsets, m};
}

PrecisionRecall precision_recall(const at::Tensor& real, const at::Tensor& fake, int64_t k) {
  return precision_recall(real, knn_radii(real, k), fake, k);
}

PrecisionRecall precision_recall(const at::Tensor& real, const at::Tensor& real_radii, const at::Tensor& fake,
                                 int64_t k) {
  require_rows(real, k + 1, "precision_recall (real)");
  require_rows(fake, k + 1, "precision_recall (generated)");
  require_same_width(real, fake, "precision_recall");
  const at::Tensor r = real.detach().cpu(), f = fake.detach().cpu().to(r.scalar_type());
  // One distance matrix read both ways, as torch-fidelity's
  // calculate_precision_recall_full reads it, so that ties fall alike.
  const at::Tensor real_to_fake = torch::cdist(r, f);
  const at::Tensor fake_inside = (real_to_fake <= real_radii.unsqueeze(1)).any(/*dim=*/0);
  const at::Tensor real_inside = (real_to_fake <= knn_radii(f, k).unsqueeze(0)).any(/*dim=*/1);
  return {fake_inside.to(torch::kDouble).mean().item<double>(), real_inside.to(torch::kDouble).mean().item<double>()};
}

}  // namespace vavae
