#include "model/generate.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <limits>
#include <string>

#include "tandem/error.h"

namespace summarize {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Restores the model's train/eval mode however generate() returns.
class EvalMode {
 public:
  explicit EvalMode(GPT& model) : model_(model), was_training_(model->is_training()) { model_->eval(); }
  ~EvalMode() { model_->train(was_training_); }
  EvalMode(const EvalMode&) = delete;
  EvalMode& operator=(const EvalMode&) = delete;

 private:
  GPT& model_;
  bool was_training_;
};

// The next token of each row, [B] on the CPU, from last-position logits [B,V].
at::Tensor choose(const at::Tensor& logits, const GenerateOptions& options, at::Generator& generator) {
  if (!options.sample) return logits.argmax(-1).to(torch::kCPU);
  // Drawn on the CPU, so that a seed gives the same draws on every device.
  at::Tensor scores = logits.to(torch::kCPU, torch::kFloat) / options.temperature;
  if (options.top_k > 0 && options.top_k < scores.size(-1)) {
    const at::Tensor kth = std::get<0>(scores.topk(options.top_k)).narrow(-1, options.top_k - 1, 1);
    scores = scores.masked_fill(scores < kth, -kInf);
  }
  if (options.top_p < 1.0) {
    const auto [sorted, order] = scores.sort(-1, /*descending=*/true);
    const at::Tensor probs = sorted.softmax(-1);
    // A token goes when the likelier ones already reach p: the likeliest always stays.
    const at::Tensor drop = (probs.cumsum(-1) - probs) >= options.top_p;
    scores = scores.scatter(-1, order, sorted.masked_fill(drop, -kInf));
  }
  return at::multinomial(scores.softmax(-1), 1, /*replacement=*/false, generator).squeeze(-1);
}

}  // namespace

void GenerateOptions::validate() const {
  const auto fail = [](const std::string& what) { throw tandem::UsageError("generate: " + what); };
  if (max_new_tokens < 0) fail("max_new_tokens must be >= 0, got " + std::to_string(max_new_tokens));
  if (sample && !(temperature > 0)) fail("temperature must be > 0 to sample, got " + std::to_string(temperature));
  if (top_k < 0) fail("top_k must be >= 0 (0 keeps all tokens), got " + std::to_string(top_k));
  if (!(top_p > 0 && top_p <= 1)) fail("top_p must be in (0, 1], got " + std::to_string(top_p));
}

std::vector<std::vector<int64_t>> generate(GPT& model, const std::vector<std::vector<int64_t>>& prompts,
                                           const GenerateOptions& options) {
  options.validate();
  const GPTConfig& config = model->config();
  const int64_t batch = static_cast<int64_t>(prompts.size());
  std::vector<std::vector<int64_t>> out(prompts.size());
  if (batch == 0 || options.max_new_tokens == 0) return out;
  if (options.eot_token < 0 || options.eot_token >= config.vocab_size) {
    throw tandem::UsageError("generate: eot_token " + std::to_string(options.eot_token) +
                             " is not in the vocabulary (vocab_size " + std::to_string(config.vocab_size) + ")");
  }
  const int64_t room = config.block_size - options.max_new_tokens;
  if (room < 1) {
    throw tandem::UsageError("generate: max_new_tokens (" + std::to_string(options.max_new_tokens) +
                             ") leaves no room for a prompt in block_size " + std::to_string(config.block_size));
  }

  // Left-pad: row b's prompt fills the last len[b] of `width` columns.
  std::vector<std::vector<int64_t>> kept(prompts.size());
  int64_t width = 0;
  for (size_t b = 0; b < prompts.size(); ++b) {
    const std::vector<int64_t>& prompt = prompts[b];
    if (prompt.empty())
      kept[b] = {options.eot_token};
    else
      kept[b].assign(prompt.end() - std::min<int64_t>(room, static_cast<int64_t>(prompt.size())), prompt.end());
    width = std::max(width, static_cast<int64_t>(kept[b].size()));
  }
  const int64_t total = width + options.max_new_tokens;
  at::Tensor idx = torch::full({batch, width}, options.eot_token, torch::kLong);
  at::Tensor key_mask = torch::ones({batch, total}, torch::kBool);
  at::Tensor pad = torch::empty({batch, 1}, torch::kLong);
  bool padded = false;
  for (int64_t b = 0; b < batch; ++b) {
    const auto& row = kept[b];
    const int64_t n = static_cast<int64_t>(row.size());
    idx[b].narrow(0, width - n, n).copy_(torch::tensor(row, torch::kLong));
    key_mask[b].narrow(0, 0, width - n).fill_(false);
    pad[b][0] = width - n;
    padded = padded || n < width;
  }

  const at::Device device = model->transformer->wte->weight.device();
  idx = idx.to(device);
  pad = pad.to(device);
  // Without padding, no mask: attention keeps its fastest kernels.
  key_mask = padded ? key_mask.to(device) : at::Tensor();
  const auto keys_upto = [&](int64_t end) { return padded ? key_mask.narrow(1, 0, end) : at::Tensor(); };
  EvalMode eval(model);
  torch::NoGradGuard no_grad;
  at::Generator generator = at::detail::createCPUGenerator(options.seed);
  KVCache cache(config.n_layer, total);

  const at::Tensor positions = (torch::arange(width, idx.options()).unsqueeze(0) - pad).clamp_min(0);
  at::Tensor last = model->features(idx, &cache, positions, keys_upto(width)).select(1, -1);
  std::vector<bool> done(prompts.size(), false);
  for (int64_t step = 0;; ++step) {
    const at::Tensor next = choose(model->head(last), options, generator);
    const int64_t running = append_step(next, options.eot_token, out, done);
    if (running == 0 || step + 1 == options.max_new_tokens) break;
    const int64_t column = width + step;
    last = model->features(next.to(device).view({batch, 1}), &cache, column - pad, keys_upto(column + 1)).select(1, -1);
  }
  return out;
}

int64_t append_step(const at::Tensor& tokens, int64_t eot_token, std::vector<std::vector<int64_t>>& out,
                    std::vector<bool>& done) {
  const int64_t* t = tokens.data_ptr<int64_t>();
  int64_t running = 0;
  for (size_t b = 0; b < done.size(); ++b) {
    if (done[b]) continue;
    if (t[b] == eot_token) {
      done[b] = true;
    } else {
      out[b].push_back(t[b]);
      ++running;
    }
  }
  return running;
}

}  // namespace summarize
