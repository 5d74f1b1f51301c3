// tandem's side of bench_generate_hf.py: the model a Hugging Face directory
// holds, greedy continuation of the prompts the script chose, timed apart
// from loading, so that the script can set it beside transformers' generate
// on the same weights, prompts and threads:
//   build/tests/bench/bench_generate_peer --hf DIR --prompts FILE --new N
//       [--threads N] [--repeats N] --out FILE
// FILE (prompts): a JSON array of rows of token ids. Out: a JSON object with
// "seconds" (the best of --repeats runs after one warm-up) and "tokens" (the
// new tokens of each row, <|endoftext|> ending a row as in generate()).
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_args.h"
#include "model/generate.h"
#include "model/gpt2_hf.h"
#include "tandem/error.h"
#include "tandem/host_memory.h"

using Rows = std::vector<std::vector<int64_t>>;

int main(int argc, char** argv) {
  std::string hf_dir, prompts_path, out_path;
  int64_t new_tokens = 64;
  int threads = 2, repeats = 3;
  const auto take = [&](const std::string& key, const char* value) {
    if (key == "--hf")
      hf_dir = value;
    else if (key == "--prompts")
      prompts_path = value;
    else if (key == "--out")
      out_path = value;
    else if (key == "--new")
      new_tokens = std::atoll(value);
    else if (key == "--threads")
      threads = std::atoi(value);
    else if (key == "--repeats")
      repeats = std::max(1, std::atoi(value));
    else
      return false;
    return true;
  };
  const char* usage = "--hf DIR --prompts FILE --out FILE [--new N] [--threads N] [--repeats N]";
  if (const auto stop = bench::parse_flags(argc, argv, "bench_generate_peer", usage, take)) return *stop;
  tandem::keep_freed_host_memory();  // as summarize does (run_program)

  try {
    if (hf_dir.empty() || prompts_path.empty() || out_path.empty())
      throw tandem::UsageError(std::string("--hf, --prompts and --out are needed; usage: ") + usage);
    std::ifstream in(prompts_path);
    if (!in) throw tandem::UsageError(prompts_path + ": cannot open");
    Rows prompts;
    try {
      prompts = nlohmann::json::parse(in).get<Rows>();
    } catch (const nlohmann::json::exception& error) {
      throw tandem::UsageError(prompts_path + ": expected a JSON array of rows of token ids (" + error.what() + ")");
    }

    at::set_num_threads(threads);
    summarize::GPT model = summarize::load_hf(hf_dir);
    summarize::GenerateOptions options;
    options.max_new_tokens = new_tokens;

    summarize::GenerateOptions warm = options;
    warm.max_new_tokens = 4;
    summarize::generate(model, prompts, warm);

    Rows tokens;
    double best = 1e300;
    for (int r = 0; r < repeats; ++r) {
      const auto start = std::chrono::steady_clock::now();
      tokens = summarize::generate(model, prompts, options);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::ofstream out(out_path);
    out << nlohmann::json{{"seconds", best}, {"tokens", tokens}}.dump() << "\n";
    if (!out.flush()) throw std::runtime_error(out_path + ": cannot write");
  } catch (const tandem::UsageError& error) {
    std::fprintf(stderr, "bench_generate_peer: %s\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench_generate_peer: %s\n", error.what());
    return 1;
  }
  return 0;
}
