// compare_runs losses A/metrics.jsonl B/metrics.jsonl TOL
//   every step's training loss in A and B differs by at most TOL (the last
//   line for a step counts, as after a resume); the same steps in both.
// compare_runs models A.h5 B.h5 TOL
//   every tensor of the "model" set differs by at most TOL; TOL 0 means
//   bitwise equal.
// compare_runs ema A.h5 B.h5 TOL
//   the same for the "ema" set (runs with train.ema_decay > 0).
// compare_runs optim A.h5 B.h5 TOL
//   the same for the "optim" set (the optimizer's moments and step counts).
// compare_runs ema-vs-model A.h5 B.h5 TOL
//   A's "ema" set against B's "model" set; B "-" is A itself.
// compare_runs checkpoints A.h5 B.h5 0
//   every set, tensor and state entry of B bitwise equal to A's; exit 0 when
//   they are, 1 when B loads but differs, 3 when B is refused (its message
//   printed). tests/fuzz/flip_bits.py tallies damaged copies with it.
#include <torch/torch.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "tandem/error.h"
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

bool same_tensors(const tandem::NamedTensors& a, const tandem::NamedTensors& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto& ta = a[i].second;
    const auto& tb = b[i].second;
    if (a[i].first != b[i].first || ta.scalar_type() != tb.scalar_type() || !ta.sizes().equals(tb.sizes()) ||
        !torch::equal(ta, tb))
      return false;
  }
  return true;
}

// Doubles bitwise: a state's NaN (no best value yet) equals itself.
bool same_state(const tandem::CheckpointState& a, const tandem::CheckpointState& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [key, value] : a) {
    const auto it = b.find(key);
    if (it == b.end() || it->second.index() != value.index()) return false;
    const auto* da = std::get_if<double>(&value);
    const bool same = da ? std::memcmp(da, std::get_if<double>(&it->second), sizeof(double)) == 0 : value == it->second;
    if (!same) return false;
  }
  return true;
}

int compare_checkpoints(const std::string& a, const std::string& b) {
  const auto ca = tandem::load_checkpoint(a);
  tandem::Checkpoint cb;
  try {
    cb = tandem::load_checkpoint(b);
  } catch (const tandem::UsageError& e) {
    std::printf("refused: %s\n", e.what());
    return 3;
  }
  bool same = same_state(ca.state, cb.state) && ca.sets.size() == cb.sets.size();
  for (const auto& [name, set] : ca.sets) same = same && cb.sets.count(name) && same_tensors(set, cb.sets.at(name));
  std::printf("%s\n", same ? "equal" : "loads, differs");
  return same ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: compare_runs losses|models|ema|optim|ema-vs-model|checkpoints A B TOL\n");
    return 2;
  }
  const std::string what = argv[1];
  const std::string b = argv[3];
  const double tol = std::stod(argv[4]);
  if (what == "losses") return compare_losses(argv[2], argv[3], tol);
  if (what == "checkpoints") return compare_checkpoints(argv[2], argv[3]);
  if (what == "ema" || what == "optim") return compare_sets(argv[2], what, argv[3], what, tol);
  if (what == "ema-vs-model") return compare_sets(argv[2], "ema", b == "-" ? argv[2] : b, "model", tol);
  return compare_sets(argv[2], "model", argv[3], "model", tol);
}
