#include "app/summarize_task.h"

#include <torch/torch.h>

#include "model/gpt2_hf.h"
#include "tandem/error.h"

namespace summarize {

GPT make_model(const GPTConfig& config, const std::string& init_from) {
  if (init_from == "scratch") return GPT(config);
  if (init_from.rfind("hf:", 0) == 0) {
    auto model = load_hf(init_from.substr(3));
    if (model->config().block_size < config.block_size)
      throw tandem::UsageError("model.init_from " + init_from + " has " +
                               std::to_string(model->config().block_size) +
                               " positions, fewer than model.block_size " +
                               std::to_string(config.block_size));
    return model;
  }
  throw tandem::UsageError("model.init_from must be \"scratch\" or \"hf:DIR\", got \"" + init_from +
                           "\"");
}

SummarizeTask::SummarizeTask(GPTConfig config, std::string init_from, TokenSet train, TokenSet val,
                             int64_t pad)
    : config_(config), init_from_(std::move(init_from)), train_(std::move(train)),
      val_(std::move(val)), pad_(pad) {
  if (train_.size() > 0) mean_length_ = double(train_.ids.size()) / train_.size();
}

std::shared_ptr<torch::nn::Module> SummarizeTask::build_model() {
  return make_model(config_, init_from_).ptr();
}

tandem::Batch SummarizeTask::make_batch(const std::vector<int64_t>& indices, bool train,
                                        uint64_t) {
  const TokenSet& set = train ? train_ : val_;
  int64_t len = 1;
  for (int64_t i : indices) len = std::max(len, set.length(i));
  const auto n = static_cast<int64_t>(indices.size());
  // Padding is the end token, masked out of the loss: it never teaches anything.
  auto idx = torch::full({n, len}, pad_, torch::kLong);
  auto mask = torch::zeros({n, len}, torch::kBool);
  auto idx_a = idx.accessor<int64_t, 2>();
  auto mask_a = mask.accessor<bool, 2>();
  for (int64_t r = 0; r < n; ++r) {
    const int64_t i = indices[r];
    const int64_t begin = set.offsets[i], length = set.length(i);
    for (int64_t t = 0; t < length; ++t) idx_a[r][t] = set.ids[begin + t];
    for (int64_t t = set.prompt_len[i]; t < length; ++t) mask_a[r][t] = true;
  }
  return {{"idx", idx}, {"loss_mask", mask}};
}

at::Tensor SummarizeTask::loss(torch::nn::Module& module, const tandem::Batch& batch) {
  auto& model = static_cast<GPTImpl&>(module);
  const auto& idx = batch.at("idx");
  auto mask = batch.at("loss_mask") & batch.at("valid").unsqueeze(1);
  // The head runs only where a summary token is predicted: with GPT-2's 50257
  // outputs it is most of the work, and the prompt's logits are never used.
  auto hidden = model.features(idx);
  auto predicts = mask.narrow(1, 1, mask.size(1) - 1);
  auto h = hidden.narrow(1, 0, hidden.size(1) - 1).index({predicts});
  auto targets = idx.narrow(1, 1, idx.size(1) - 1).index({predicts});
  if (targets.numel() == 0) return hidden.sum() * 0;
  return torch::nn::functional::cross_entropy(model.head(h).to(torch::kFloat), targets);
}

double SummarizeTask::flops_per_sample() const {
  // nanoGPT's per-token estimate for a full forward and backward, the usual
  // basis of MFU, though our head skips the prompt positions.
  return config_.flops_per_token(static_cast<int64_t>(mean_length_)) * mean_length_;
}

int64_t SummarizeTask::tokens_in(const tandem::Batch& batch) const {
  return (batch.at("idx") != pad_).sum().item<int64_t>();
}

}  // namespace summarize
