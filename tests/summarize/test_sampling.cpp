// Sampling draws from the distribution the options describe, on each device:
// 40,000 rows of the same logits drawn at once, each token's frequency
// against its probability worked out by hand (top-k, then top-p, then
// renormalised), and nothing drawn outside the kept set. The CUDA case skips
// without a GPU; env/gpu-check.sh's `sampling-gpu` runs it where one is.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <string>
#include <vector>

#include "model/generate.h"

namespace {

using summarize::GenerateOptions;

constexpr int64_t kRows = 40000;

// The tokens' probabilities, in an order that is not sorted, so the top-p
// scatter back to token order is exercised.
const std::vector<double> kProbs = {0.10, 0.40, 0.04, 0.25, 0.06, 0.15};

class Sampling : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "cuda" && !torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device visible to LibTorch";
  }
  at::Device device() const { return at::Device(GetParam()); }

  // Frequencies of each token over kRows draws from log(kProbs).
  std::vector<double> frequencies(const GenerateOptions& options, uint64_t seed) const {
    const at::Tensor tokens = draws(options, seed);
    const at::Tensor counts = tokens.bincount({}, static_cast<int64_t>(kProbs.size())).to(torch::kDouble);
    const at::Tensor f = counts / static_cast<double>(kRows);
    return {f.data_ptr<double>(), f.data_ptr<double>() + f.numel()};
  }
  at::Tensor draws(const GenerateOptions& options, uint64_t seed) const {
    const at::Tensor logits =
        torch::tensor(kProbs, torch::kDouble).log().to(torch::kFloat).expand({kRows, -1}).contiguous().to(device());
    at::Generator generator = summarize::generator_for(device(), seed);
    return summarize::next_tokens(logits, options, generator).cpu();
  }
};

GenerateOptions sampling(int64_t top_k, double top_p, double temperature = 1.0) {
  GenerateOptions o;
  o.sample = true;
  o.top_k = top_k;
  o.top_p = top_p;
  o.temperature = temperature;
  return o;
}

// Within five standard deviations of a binomial frequency, and exactly zero
// where the probability is.
void expect_distribution(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t t = 0; t < want.size(); ++t) {
    if (want[t] == 0.0) {
      EXPECT_EQ(got[t], 0.0) << "token " << t << " is outside the kept set";
    } else {
      const double sigma = std::sqrt(want[t] * (1.0 - want[t]) / kRows);
      EXPECT_NEAR(got[t], want[t], 5.0 * sigma) << "token " << t;
    }
  }
}

TEST_P(Sampling, TopKKeepsTheKLikeliest) {
  // Tokens 1, 3, 5 (0.40, 0.25, 0.15) of 0.80.
  expect_distribution(frequencies(sampling(3, 1.0), 1), {0, 0.5, 0, 0.3125, 0, 0.1875});
}

TEST_P(Sampling, TopPAfterTopK) {
  // Top 4 (tokens 1, 3, 5, 0) renormalised over 0.90: 0.444, 0.278, 0.167,
  // 0.111. The likelier ones before token 5 already hold 0.722 >= 0.7, so it
  // and token 0 go: 0.40 and 0.25 of 0.65 remain.
  expect_distribution(frequencies(sampling(4, 0.7), 2), {0, 0.40 / 0.65, 0, 0.25 / 0.65, 0, 0});
}

TEST_P(Sampling, TemperatureFlattens) {
  // softmax(log p / 2) is sqrt(p) renormalised.
  std::vector<double> want;
  double sum = 0;
  for (double p : kProbs) sum += std::sqrt(p);
  for (double p : kProbs) want.push_back(std::sqrt(p) / sum);
  expect_distribution(frequencies(sampling(0, 1.0, 2.0), 3), want);
}

TEST_P(Sampling, ASeedGivesTheSameDrawsRunToRun) {
  const GenerateOptions o = sampling(4, 0.9);
  const at::Tensor first = draws(o, 11);
  EXPECT_TRUE(torch::equal(draws(o, 11), first));
  EXPECT_FALSE(torch::equal(draws(o, 12), first));
}

INSTANTIATE_TEST_SUITE_P(Devices, Sampling, testing::Values("cpu", "cuda"),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
