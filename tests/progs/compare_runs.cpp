// compare_runs losses A/metrics.jsonl B/metrics.jsonl TOL
//   every step's training loss in A and B differs by at most TOL (the last
//   line for a step counts, as after a resume); the same steps in both.
// compare_runs models A.h5 B.h5 TOL
//   every tensor of the "model" set differs by at most TOL; TOL 0 means
//   bitwise equal.
// compare_runs ema A.h5 B.h5 TOL
//   the same for the "ema" set (runs with train.ema_decay > 0).
// compare_runs ema-vs-model A.h5 B.h5 TOL
//   A's "ema" set against B's "model" set; B "-" is A itself.
#include <torch/torch.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "tandem/io/checkpoint.h"

namespace {

std::map<int64_t, double> losses(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::map<int64_t, double> out;
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j.contains("loss") && j["loss"].is_number()) out[j["step"]] = j["loss"];
  }
  return out;
}

int compare_losses(const std::string& a, const std::string& b, double tol) {
  auto la = losses(a), lb = losses(b);
  if (la.size() != lb.size() || la.empty()) {
    std::printf("step counts differ: %zu vs %zu\n", la.size(), lb.size());
    return 1;
  }
  double worst = 0;
  for (const auto& [step, v] : la) {
    if (!lb.count(step)) {
      std::printf("step %lld missing in %s\n", static_cast<long long>(step), b.c_str());
      return 1;
    }
    worst = std::max(worst, std::abs(v - lb[step]));
  }
  std::printf("%zu steps, largest loss difference %.3g (tolerance %.3g)\n", la.size(), worst, tol);
  return worst <= tol ? 0 : 1;
}

int compare_sets(const std::string& a, const std::string& set_a, const std::string& b, const std::string& set_b,
                 double tol) {
  auto ca = tandem::load_checkpoint(a), cb = tandem::load_checkpoint(b);
  const auto& ma = ca.set(set_a);
  const auto& mb = cb.set(set_b);
  if (ma.size() != mb.size()) {
    std::printf("tensor counts differ\n");
    return 1;
  }
  double worst = 0;
  bool bitwise = true;
  for (size_t i = 0; i < ma.size(); ++i) {
    if (ma[i].first != mb[i].first) {
      std::printf("names differ: %s vs %s\n", ma[i].first.c_str(), mb[i].first.c_str());
      return 1;
    }
    bitwise = bitwise && torch::equal(ma[i].second, mb[i].second);
    if (ma[i].second.is_floating_point())
      worst = std::max(worst, (ma[i].second - mb[i].second).abs().max().item<double>());
  }
  std::printf("%zu tensors, largest difference %.3g, bitwise %s (tolerance %.3g)\n", ma.size(), worst,
              bitwise ? "equal" : "different", tol);
  return (tol == 0 ? bitwise : worst <= tol) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: compare_runs losses|models|ema|ema-vs-model A B TOL\n");
    return 2;
  }
  const std::string what = argv[1];
  const std::string b = argv[3];
  const double tol = std::stod(argv[4]);
  if (what == "losses") return compare_losses(argv[2], argv[3], tol);
  if (what == "ema") return compare_sets(argv[2], "ema", argv[3], "ema", tol);
  if (what == "ema-vs-model") return compare_sets(argv[2], "ema", b == "-" ? argv[2] : b, "model", tol);
  return compare_sets(argv[2], "model", argv[3], "model", tol);
}
