#include "app/distance_report.h"

#include <torch/torch.h>

#include <algorithm>
#include <iomanip>
#include <set>
#include <sstream>

namespace vavae {

namespace {

constexpr int64_t kNeighbours = 3;

std::string images(int64_t n) { return std::to_string(n) + (n == 1 ? " generated image" : " generated images"); }

}  // namespace

std::vector<std::string> supported_figures(int64_t real, int64_t generated, int64_t features) {
  const int64_t fewest = std::min(real, generated);
  std::vector<std::string> names;
  if (fewest > features) names.push_back("fid");
  if (fewest >= 2) names.push_back("kid_mean");
  if (fewest > kNeighbours) names.insert(names.end(), {"precision", "recall"});
  return names;
}

RealReference real_reference(const at::Tensor& real) {
  RealReference out;
  out.features = real;
  if (real.size(0) > real.size(1)) out.stats = feature_stats(real);
  if (real.size(0) > kNeighbours) out.radii = knn_radii(real, kNeighbours);
  return out;
}

DistanceFigures distance_figures(const at::Tensor& real, const at::Tensor& generated, int64_t kid_subset_size) {
  return distance_figures(real_reference(real), generated, kid_subset_size);
}

DistanceFigures distance_figures(const RealReference& real, const at::Tensor& generated, int64_t kid_subset_size) {
  DistanceFigures out;
  out.real = real.features.size(0);
  out.generated = generated.size(0);
  const int64_t features = real.features.size(1);
  const std::vector<std::string> supported = supported_figures(out.real, out.generated, features);
  const auto has = [&](const char* name) {
    return std::find(supported.begin(), supported.end(), name) != supported.end();
  };
  const std::string counts = std::to_string(out.real) + " real and " + images(out.generated);
  if (has("fid"))
    out.fid = frechet_distance(*real.stats, feature_stats(generated));
  else
    out.skipped.push_back("fid: " + counts + ", FID needs more than the " + std::to_string(features) +
                          " features on each side (read kid_mean)");
  if (has("kid_mean"))
    out.kid = kernel_distance(real.features, generated, 100, kid_subset_size);
  else
    out.skipped.push_back("kid: " + counts + ", KID needs 2 on each side");
  if (has("precision"))
    out.precision_recall = precision_recall(real.features, real.radii, generated, kNeighbours);
  else
    out.skipped.push_back("precision, recall: " + counts + ", they need more than " + std::to_string(kNeighbours) +
                          " on each side");
  return out;
}

nlohmann::json DistanceFigures::to_json() const {
  nlohmann::json j;
  j["fid"] = fid ? nlohmann::json(*fid) : nlohmann::json();
  j["kid_mean"] = kid ? nlohmann::json(kid->mean) : nlohmann::json();
  j["kid_std"] = kid ? nlohmann::json(kid->std) : nlohmann::json();
  j["kid_subset_size"] = kid ? nlohmann::json(kid->subset_size) : nlohmann::json();
  j["precision"] = precision_recall ? nlohmann::json(precision_recall->precision) : nlohmann::json();
  j["recall"] = precision_recall ? nlohmann::json(precision_recall->recall) : nlohmann::json();
  if (!skipped.empty()) j["skipped"] = skipped;
  return j;
}

std::string DistanceFigures::summary() const {
  const auto figure = [](bool present, double value) {
    if (!present) return std::string("-");
    std::ostringstream out;
    out << std::fixed << std::setprecision(4) << value;
    return out.str();
  };
  const PrecisionRecall pr = precision_recall.value_or(PrecisionRecall{});
  const KernelDistance k = kid.value_or(KernelDistance{});
  return "FID " + figure(fid.has_value(), fid.value_or(0)) + ", KID " + figure(kid.has_value(), k.mean) + " +- " +
         figure(kid.has_value(), k.std) + ", precision " + figure(precision_recall.has_value(), pr.precision) +
         ", recall " + figure(precision_recall.has_value(), pr.recall) + " (" + std::to_string(real) +
         " real training and " + std::to_string(generated) + " generated images)";
}

std::map<std::string, double> DistanceFigures::scalars() const {
  std::map<std::string, double> out;
  if (fid) out["fid"] = *fid;
  if (kid) {
    out["kid_mean"] = kid->mean;
    out["kid_std"] = kid->std;
  }
  if (precision_recall) {
    out["precision"] = precision_recall->precision;
    out["recall"] = precision_recall->recall;
  }
  return out;
}

DistanceReport distance_report(const ImageFeatures& real, const ImageFeatures& generated) {
  DistanceReport report;
  report.overall = distance_figures(real.features, generated.features, kKidSubsetSize);
  const at::Tensor ids = generated.users.to(at::kLong).contiguous();
  const std::set<int64_t> users(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + ids.numel());
  for (const int64_t user : users) {
    report.per_user[user] = distance_figures(real.features.index({real.users == user}),
                                             generated.features.index({generated.users == user}), kKidUserSubsetSize);
  }
  return report;
}

}  // namespace vavae
