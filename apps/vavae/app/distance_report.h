#pragma once
// evaluate's FID, KID and precision/recall (metrics/feature_distances.h) of
// the generated images against the real training images, overall and per
// user, each with the counts it came from, as evaluate.json and TensorBoard
// carry them. A figure that its counts cannot support is left out (null in
// the JSON) with the reason, rather than reported wrong:
// - FID needs more images than features on each side (2048 for Inception's
//   pool3): below that a covariance is singular and FID is dominated by its
//   small-N bias. Per user that is rarely met; KID is the figure to read there.
// - KID needs 2 images a side; its subsets hold min(subset size, N_real,
//   N_generated) images: torch-fidelity's 1000 overall, 100 per user.
// - Precision and recall need more than k = 3 images a side.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "app/image_features.h"
#include "metrics/feature_distances.h"

namespace vavae {

struct DistanceFigures {
  int64_t real = 0, generated = 0;  // images on each side
  std::optional<double> fid;
  std::optional<KernelDistance> kid;
  std::optional<PrecisionRecall> precision_recall;
  std::vector<std::string> skipped;  // "fid: ...": why a figure is absent

  // fid, kid_mean, kid_std, kid_subset_size, precision, recall (null when
  // absent), and "skipped" when not empty; the counts are the caller's to name.
  nlohmann::json to_json() const;
  // "FID 12.3456, KID 0.0123 +- 0.0010, precision 0.6100, recall 0.5500 (N
  // real training and M generated images)", with "-" for a figure left out.
  std::string summary() const;
  // The figures present, by those names, for TensorBoard.
  std::map<std::string, double> scalars() const;
};

inline constexpr int64_t kKidSubsetSize = 1000;
inline constexpr int64_t kKidUserSubsetSize = 100;

// What the real images bring to every comparison, computed once: their
// features, statistics (where FID can use them) and k-NN radii (where
// precision can).
struct RealReference {
  at::Tensor features;
  std::optional<FeatureStats> stats;
  at::Tensor radii;
};
RealReference real_reference(const at::Tensor& real);

DistanceFigures distance_figures(const RealReference& real, const at::Tensor& generated, int64_t kid_subset_size);
DistanceFigures distance_figures(const at::Tensor& real, const at::Tensor& generated, int64_t kid_subset_size);

// Which figures `real` and `generated` images a side support, by their
// names in DistanceFigures::scalars() (kid_std aside): what
// distance_figures will give for those counts.
std::vector<std::string> supported_figures(int64_t real, int64_t generated, int64_t features);

struct DistanceReport {
  DistanceFigures overall;
  std::map<int64_t, DistanceFigures> per_user;  // by 1-based user, for each user with generated images
};
DistanceReport distance_report(const ImageFeatures& real, const ImageFeatures& generated);

}  // namespace vavae
