// GPT-2 generation throughput with and without the KV cache, in one run:
//   build/tests/bench/bench_generate [--presets tiny,gpt2] [--batches 1,8]
//       [--prompt N] [--new N] [--threads N] [--repeats N] [--device cpu|cuda]
// Greedy continuation of random prompts by a freshly initialised model:
//   kv-cache : summarize::generate (prefill once, then one position per step),
//   no cache : model->forward on the whole growing sequence every step, the
//              next token from the last position's logits,
// and the ratio of their new tokens per second, with whether the two chose
// the same tokens (they should, up to float rounding on near ties). The two
// modes run alternately --repeats times (default 2) and each keeps its best.
// The no-cache loop computes logits at every position, as a forward without a
// cache does; the head then dominates its cost for the tiny preset.
// Defaults: tiny continues a 64-token prompt by 64 tokens, gpt2 (124M) a
// 32-token prompt by 32 (its no-cache pass at batch 8 takes a minute on a
// 2-core CPU). --prompt and --new, when given, apply to every preset.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "model/generate.h"
#include "bench_args.h"
#include "model/gpt2.h"
#include "tandem/error.h"
#include "tandem/host_memory.h"

using summarize::GPTConfig;
using Rows = std::vector<std::vector<int64_t>>;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// What summarize::generate does, without the cache: the full sequence through
// the model for each new token. Rows stop at eot as generate's do (the batch
// runs on until every row has stopped).
Rows generate_no_cache(summarize::GPT& model, const Rows& prompts, const summarize::GenerateOptions& options,
                       const torch::Device& device) {
  torch::NoGradGuard no_grad;
  model->eval();
  const int64_t batch = static_cast<int64_t>(prompts.size());
  std::vector<at::Tensor> rows;
  for (const auto& prompt : prompts) rows.push_back(torch::tensor(prompt, torch::kLong));
  at::Tensor idx = torch::stack(rows).to(device);
  at::Tensor done = torch::zeros({batch}, torch::TensorOptions(torch::kBool).device(device));
  std::vector<at::Tensor> steps;
  for (int64_t step = 0; step < options.max_new_tokens; ++step) {
    const at::Tensor next = model->forward(idx).select(1, -1).argmax(-1);
    steps.push_back(next);
    done |= next == options.eot_token;
    if (done.all().item<bool>()) break;
    idx = torch::cat({idx, next.view({batch, 1})}, 1);
  }
  if (steps.empty()) return Rows(prompts.size());
  return summarize::tokens_until(torch::stack(steps, 1).cpu(), options.eot_token);
}

int64_t count(const Rows& rows) {
  int64_t n = 0;
  for (const auto& row : rows) n += static_cast<int64_t>(row.size());
  return n;
}

// Tokens that agree, position by position, up to the first disagreement of each row.
int64_t agreeing(const Rows& a, const Rows& b) {
  int64_t n = 0;
  for (size_t r = 0; r < a.size(); ++r) {
    const size_t len = std::min(a[r].size(), b[r].size());
    size_t i = 0;
    while (i < len && a[r][i] == b[r][i]) ++i;
    n += static_cast<int64_t>(i);
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  std::string presets = "tiny,gpt2", batches = "1,8";
  std::string device_name = torch::cuda::is_available() ? "cuda" : "cpu";
  int64_t prompt_flag = 0, new_flag = 0;
  int threads = 2, repeats = 2;
  const auto take = [&](const std::string& key, const char* value) {
    if (key == "--presets")
      presets = value;
    else if (key == "--batches")
      batches = value;
    else if (key == "--prompt")
      prompt_flag = std::atoll(value);
    else if (key == "--new")
      new_flag = std::atoll(value);
    else if (key == "--threads")
      threads = std::atoi(value);
    else if (key == "--repeats")
      repeats = std::max(1, std::atoi(value));
    else if (key == "--device")
      device_name = value;
    else
      return false;
    return true;
  };
  const char* usage =
      "[--presets tiny,gpt2] [--batches 1,8] [--prompt N] [--new N] [--threads N] [--repeats N] "
      "[--device cpu|cuda]";
  if (const auto stop = bench::parse_flags(argc, argv, "bench_generate", usage, take)) return *stop;
  tandem::keep_freed_host_memory();  // as the apps do (run_program)

  try {
    at::set_num_threads(threads);
    const torch::Device device(device_name);
    std::printf(
        "GPT-2 greedy generation, fp32 on %s, %d intra-op threads; random prompts, fresh weights; "
        "best of %d alternating runs\n",
        device_name.c_str(), threads, repeats);
    std::printf("%-6s %5s %7s %5s %-9s %10s %10s %9s %s\n", "preset", "batch", "prompt", "new", "mode", "seconds",
                "tokens/s", "vs no-kv", "same tokens");
    for (const auto& preset : bench::split(presets)) {
      const GPTConfig config = GPTConfig::preset(preset);
      const bool tiny = preset == "tiny";
      const int64_t prompt_len = prompt_flag > 0 ? prompt_flag : (tiny ? 64 : 32);
      const int64_t new_tokens = new_flag > 0 ? new_flag : (tiny ? 64 : 32);
      if (prompt_len + new_tokens > config.block_size)
        throw tandem::UsageError("prompt + new exceed " + preset + "'s block_size " +
                                 std::to_string(config.block_size));
      torch::manual_seed(0);
      summarize::GPT model(config);
      model->to(device);
      summarize::GenerateOptions options;
      options.max_new_tokens = new_tokens;

      for (const auto& b : bench::split(batches)) {
        const int64_t batch = std::atoll(b.c_str());
        const at::Tensor ids = torch::randint(config.vocab_size - 1, {batch, prompt_len}, torch::kLong);  // no eot
        Rows prompts(batch);
        for (int64_t r = 0; r < batch; ++r)
          prompts[r] = std::vector<int64_t>(ids[r].data_ptr<int64_t>(), ids[r].data_ptr<int64_t>() + prompt_len);

        // Warm-up: allocator and kernels, a few tokens each way.
        summarize::GenerateOptions warm = options;
        warm.max_new_tokens = 4;
        summarize::generate(model, prompts, warm);
        generate_no_cache(model, prompts, warm, device);

        // Alternating runs, the best of each: a shared machine's noise mostly slows a run down.
        Rows cached, full;
        double cached_s = 1e300, full_s = 1e300;
        for (int r = 0; r < repeats; ++r) {
          auto start = std::chrono::steady_clock::now();
          cached = summarize::generate(model, prompts, options);
          cached_s = std::min(cached_s, seconds_since(start));
          start = std::chrono::steady_clock::now();
          full = generate_no_cache(model, prompts, options, device);
          full_s = std::min(full_s, seconds_since(start));
        }

        const double cached_rate = count(cached) / cached_s, full_rate = count(full) / full_s;
        char same[48];
        std::snprintf(same, sizeof same, "%lld/%lld", (long long)agreeing(cached, full), (long long)count(full));
        std::printf("%-6s %5lld %7lld %5lld %-9s %10.2f %10.1f %8.2fx %s\n", preset.c_str(), (long long)batch,
                    (long long)prompt_len, (long long)new_tokens, "kv-cache", cached_s, cached_rate,
                    cached_rate / full_rate, same);
        std::printf("%-6s %5lld %7lld %5lld %-9s %10.2f %10.1f %8.2fx\n", preset.c_str(), (long long)batch,
                    (long long)prompt_len, (long long)new_tokens, "no cache", full_s, full_rate, 1.0);
      }
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench_generate: %s\n", error.what());
    return 2;
  }
  return 0;
}
