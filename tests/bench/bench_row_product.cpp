// One row times each of GPT-2's weights, as batch-1 decoding multiplies them:
//   build/tests/bench/bench_row_product [--threads N] [--calls N] [--rounds N]
// row_product over the weight as stored (W.t(), a transposed view: tandem's
// own AVX2 loop where the CPU has it) against row_product over a row-major
// copy of W^T (MKL's product, the layout MKL reads fastest) and against
// at::mm(x, W.t()) (LibTorch's own call: MKL on one thread). The three take
// turns; each prints its best mean ms per product, then the ratios. Weights
// are read again on every call, so the smaller ones partly sit in cache
// (GPT-2's layers are 2.4-9.4 MB); the heads are not.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "bench_args.h"
#include "model/row_product.h"

namespace {

double mean_ms(int calls, const std::function<void()>& product) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) product();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / calls;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, calls = 200, rounds = 3;
  const auto take = [&](const std::string& key, const char* value) {
    if (key == "--threads")
      threads = std::atoi(value);
    else if (key == "--calls")
      calls = std::atoi(value);
    else if (key == "--rounds")
      rounds = std::atoi(value);
    else
      return false;
    return true;
  };
  if (const auto stop = bench::parse_flags(argc, argv, "bench_row_product", "[--threads N] [--calls N] [--rounds N]",
                                           take))
    return *stop;
  if (threads < 1 || calls < 1 || rounds < 1) {
    std::fprintf(stderr, "bench_row_product: --threads, --calls and --rounds must be positive\n");
    return 2;
  }
  torch::set_num_threads(threads);
  torch::manual_seed(0);
  torch::NoGradGuard no_grad;
  // out x in: GPT-2's c_attn, attention c_proj, c_fc, MLP c_proj, its head;
  // the tiny preset's head.
  const std::vector<std::pair<const char*, std::pair<int64_t, int64_t>>> shapes = {
      {"gpt2 c_attn", {2304, 768}}, {"gpt2 attn c_proj", {768, 768}}, {"gpt2 c_fc", {3072, 768}},
      {"gpt2 mlp c_proj", {768, 3072}}, {"gpt2 head", {50257, 768}}, {"tiny head", {50257, 128}}};
  std::printf("one row times W^T, %d threads, best of %d rounds of %d calls; own loop: %s\n", threads, rounds, calls,
              summarize::row_product_reads_weights_as_stored() ? "yes (AVX2)" : "no (MKL on this CPU)");
  std::printf("%-18s %12s %14s %14s %10s %10s\n", "weight (out x in)", "as stored", "W^T copy", "at::mm", "copy/own",
              "mm/own");
  for (const auto& [name, shape] : shapes) {
    const at::Tensor w = torch::randn({shape.first, shape.second}), x = torch::randn({1, shape.second});
    const at::Tensor copy = w.t().contiguous();
    double own = std::numeric_limits<double>::infinity(), mkl = own, mm = own;
    for (int r = 0; r < rounds; ++r) {
      own = std::min(own, mean_ms(calls, [&] { summarize::row_product(x, w.t()); }));
      mkl = std::min(mkl, mean_ms(calls, [&] { summarize::row_product(x, copy); }));
      mm = std::min(mm, mean_ms(calls, [&] { at::mm(x, w.t()); }));
    }
    std::printf("%-18s %9.3f ms %11.3f ms %11.3f ms %9.2fx %9.2fx\n", name, own, mkl, mm, mkl / own, mm / own);
  }
  return 0;
}
