#include "model/generate.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <limits>
#include <string>

#include "tandem/error.h"
#include "tandem/train/autocast_guard.h"

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

// How many steps pass between looks at which rows have ended: on a GPU each
// look reads the flags copied to the host at the look before, waiting for
// that copy only if it has not arrived, so the host stays up to this many
// steps ahead of the device; on the CPU there is nothing to wait for, and
// every step looks. Reading the copy of a fixed step, rather than whichever
// has arrived, makes rows leave the batch at the same steps on every run:
// the batch's size picks the GPU's kernels and their rounding, so greedy
// summaries, and the ROUGE that judges a run, are the same run after run.
constexpr int64_t kGpuStepsPerLook = 8;

// The decoding state: every row's tokens so far on the device ([steps, B]
// for the original B rows, eot after a row's end), and the rows still in the
// batch.
class Decoding {
 public:
  Decoding(int64_t batch, int64_t steps, int64_t eot, const at::Device& device)
      : eot_(eot),
        tokens_(torch::full({steps, batch}, eot, torch::TensorOptions(torch::kLong).device(device))),
        rows_(torch::arange(batch, tokens_.options())),
        done_(torch::zeros({batch}, tokens_.options().dtype(torch::kBool))),
        gpu_(device.is_cuda()) {}

  // The step's tokens for the rows in the batch, eot for those already ended.
  at::Tensor record(at::Tensor next, int64_t step) {
    next = next.masked_fill(done_, eot_);
    tokens_[step].index_copy_(0, rows_, next);
    done_ |= next == eot_;
    return next;
  }

  // Whether every row has ended, as far as the host knows at `step`; also
  // which rows of the batch had (as a host bool tensor), in `ended`.
  bool all_ended(int64_t step, at::Tensor& ended) {
    if (!gpu_) {
      ended = done_;
      return done_.all().item<bool>();
    }
    if (step % kGpuStepsPerLook != kGpuStepsPerLook - 1) return false;
    const bool have = look_.has_value();
    if (have) {
      look_->synchronize();
      ended = seen_;
    }
    seen_ = torch::empty(done_.sizes(), done_.options().device(torch::kCPU).pinned_memory(true));
    seen_.copy_(done_, /*non_blocking=*/true);
    const auto* guard = c10::impl::getDeviceGuardImpl(done_.device().type());
    look_.emplace(done_.device().type());
    look_->record(guard->getStream(done_.device()));
    return have && ended.all().item<bool>();
  }

  // The rows of the batch that are still running, as host indices.
  at::Tensor running(const at::Tensor& ended) const {
    const at::Tensor keep = (~ended).nonzero().squeeze(1);
    if (!rows_.is_cuda()) return keep;
    return keep.pin_memory().to(rows_.device(), keep.scalar_type(), /*non_blocking=*/true);
  }

  // Keeps only `keep` (indices into the batch) of the batch's rows.
  void keep(const at::Tensor& keep) {
    rows_ = rows_.index_select(0, keep);
    done_ = done_.index_select(0, keep);
    look_.reset();  // a look in flight was of the old rows
  }

  // Each original row's tokens up to its end, on the host.
  std::vector<std::vector<int64_t>> outputs() const {
    const at::Tensor host = tokens_.t().contiguous().cpu();
    return tokens_until(host, eot_);
  }

 private:
  int64_t eot_;
  at::Tensor tokens_, rows_, done_;
  bool gpu_;
  at::Tensor seen_;                // pinned copy of done_, once look_ has happened
  std::optional<c10::Event> look_;  // recorded after seen_'s copy
};

}  // namespace

at::Tensor next_tokens(const at::Tensor& logits, const GenerateOptions& options, at::Generator& generator) {
  if (!options.sample) return logits.argmax(-1);
  at::Tensor scores = logits.to(torch::kFloat) / options.temperature;
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

at::Generator generator_for(const at::Device& device, uint64_t seed) {
  if (device.is_cpu()) return at::detail::createCPUGenerator(seed);
  at::Generator generator = at::globalContext().defaultGenerator(device).clone();
  generator.set_current_seed(seed);
  return generator;
}

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
  EvalMode eval(model);
  torch::NoGradGuard no_grad;
  tandem::AutocastGuard autocast(options.precision, device.is_cuda());
  at::Generator generator = generator_for(device, options.seed);
  KVCache cache(config.n_layer, total);

  const at::Tensor positions = (torch::arange(width, idx.options()).unsqueeze(0) - pad).clamp_min(0);
  at::Tensor last =
      model->features(idx, &cache, positions, padded ? key_mask.narrow(1, 0, width) : at::Tensor()).select(1, -1);
  const bool drop = options.drop_finished.value_or(device.is_cuda());
  Decoding decoding(batch, options.max_new_tokens, options.eot_token, device);
  for (int64_t step = 0;; ++step) {
    at::Tensor next = decoding.record(next_tokens(model->head(last), options, generator), step);
    if (step + 1 == options.max_new_tokens) break;
    at::Tensor ended;
    if (decoding.all_ended(step, ended)) break;
    if (drop && ended.defined() && ended.any().item<bool>()) {
      // Ended rows leave the batch, their cache and padding with them.
      const at::Tensor keep = decoding.running(ended);
      decoding.keep(keep);
      cache.keep_rows(keep);
      next = next.index_select(0, keep);
      pad = pad.index_select(0, keep);
      if (padded) key_mask = key_mask.index_select(0, keep);
    }
    const int64_t column = width + step;
    last = model->features(next.view({-1, 1}), &cache, column - pad, padded ? key_mask.narrow(1, 0, column + 1)
                                                                            : at::Tensor())
               .select(1, -1);
  }
  return decoding.outputs();
}

std::vector<std::vector<int64_t>> tokens_until(const at::Tensor& tokens, int64_t eot_token) {
  const auto rows = tokens.accessor<int64_t, 2>();
  std::vector<std::vector<int64_t>> out(static_cast<size_t>(rows.size(0)));
  for (int64_t b = 0; b < rows.size(0); ++b)
    for (int64_t s = 0; s < rows.size(1) && rows[b][s] != eot_token; ++s) out[b].push_back(rows[b][s]);
  return out;
}

}  // namespace summarize
