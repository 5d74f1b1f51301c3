#pragma once
// How far a set of generated images lies from the real ones, measured on
// their features (Inception-v3's pool3, 2048-d, for the published figures):
// the field's standard figures, defined once for evaluate, its reports and
// the tests. Each follows a reference implementation, named below, so a
// figure can be checked against it on the same features.
//
// Rows are samples, columns features; inputs may be any floating dtype and
// device. FID and KID compute in float64 on the CPU; precision and recall
// compute distances in the features' own dtype, as torch-fidelity does, so
// that the same features give the same counts.
#include <torch/torch.h>

#include <cstdint>

namespace vavae {

// A set's mean [D] and covariance [D, D] (unbiased, over N - 1, as numpy's
// np.cov(rowvar=False) that pytorch-fid uses), float64 on the CPU: what the
// run folder caches for the real images. Throws std::invalid_argument for
// fewer than 2 rows or a non-2-D input.
struct FeatureStats {
  at::Tensor mean, cov;
  int64_t count = 0;
};
FeatureStats feature_stats(const at::Tensor& features);

// Fréchet Inception Distance between the Gaussians of two sets:
//   |mu_a - mu_b|^2 + tr(C_a) + tr(C_b) - 2 tr((C_a C_b)^(1/2)),
// pytorch-fid's calculate_frechet_distance (clean-fid's and torch-fidelity's
// are the same formula). The trace of the square root is the sum of the
// square roots of the eigenvalues of C_a C_b, which are those of the
// symmetric C_a^(1/2) C_b C_a^(1/2): taken as the singular values of
// C_b^(1/2) C_a^(1/2), each square root from a symmetric eigen-decomposition
// (linalg.eigh, eigenvalues below 0 from rounding taken as 0). Never NaN or
// complex, also when a covariance is singular (fewer samples than
// features), where scipy's sqrtm needs pytorch-fid's 1e-6 offset; equal
// sets give 0 to about 1e-12. Biased upwards at small N: per-user figures
// are reported with their N, and KID is the figure to compare there.
// Throws std::invalid_argument when the two sets' feature sizes differ.
double frechet_distance(const FeatureStats& a, const FeatureStats& b);

// Kernel Inception Distance: the unbiased estimate of the squared maximum
// mean discrepancy under the cubic polynomial kernel
// k(x, y) = (x.y / D + 1)^3, averaged over `subsets` pairs of random subsets
// of m = min(subset_size, N_real, N_fake) rows each, drawn without
// replacement from a generator seeded with `seed`; `std` is their standard
// deviation (numpy's, over `subsets`). torch-fidelity's
// kid_features_to_metric, which refuses sets smaller than its subset size;
// here the subsets shrink to the smaller set instead, so a user's 20
// samples still give a figure (with m = N both, every subset is the whole
// set and std is 0). Unbiased: near 0, and may be slightly negative, for two
// draws of one distribution. Throws std::invalid_argument for sets of fewer
// than 2 rows, feature sizes that differ, or subsets < 1.
struct KernelDistance {
  double mean = 0, std = 0;
  int64_t subsets = 0, subset_size = 0;
};
KernelDistance kernel_distance(const at::Tensor& real, const at::Tensor& fake, int64_t subsets = 100,
                               int64_t subset_size = 1000, uint64_t seed = 0);

// Improved precision and recall (Kynkaanniemi et al. 2019), with k = 3
// nearest neighbours as torch-fidelity's prc: each sample's ball reaches its
// k-th nearest neighbour in its own set (itself excluded); precision is the
// share of generated samples inside some real sample's ball (distance <=
// radius), recall the share of real samples inside some generated sample's.
// Throws std::invalid_argument when a set has k rows or fewer, or the
// feature sizes differ.
struct PrecisionRecall {
  double precision = 0, recall = 0;
};
PrecisionRecall precision_recall(const at::Tensor& real, const at::Tensor& fake, int64_t k = 3);
// The same with the real set's radii given (knn_radii(real, k)), for many
// comparisons against one real set.
PrecisionRecall precision_recall(const at::Tensor& real, const at::Tensor& real_radii, const at::Tensor& fake,
                                 int64_t k = 3);

// Each sample's radius: the distance to its k-th nearest neighbour in its
// own set (the 0 to itself is the first of the k + 1 smallest), computed a
// block of rows at a time. Throws std::invalid_argument for k rows or fewer.
at::Tensor knn_radii(const at::Tensor& features, int64_t k);

}  // namespace vavae
