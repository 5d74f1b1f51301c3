#include "model/lora.h"

#include <torch/torch.h>

#include <algorithm>
#include <set>

#include "model/gpt2.h"
#include "tandem/error.h"
#include "tandem/text/message_text.h"

namespace summarize {

const std::vector<std::string>& lora_targets() {
  static const std::vector<std::string> kTargets = {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"};
  return kTargets;
}

void LoraKeys::validate(const GPTConfig& config) const {
  using tandem::UsageError;
  std::set<std::string> seen;
  for (const std::string& target : targets) {
    const auto& known = lora_targets();
    if (std::find(known.begin(), known.end(), target) == known.end())
      throw UsageError("model.lora.targets: unknown layer \"" + target + "\" (GPT-2's are " +
                       tandem::first_few(known, known.size()) + ")");
    if (!seen.insert(target).second) throw UsageError("model.lora.targets names \"" + target + "\" twice");
  }
  // Each of GPT-2's projections has n_embd on its narrower side.
  if (enabled() && rank > config.n_embd)
    throw UsageError("model.lora.rank must be from 1 to the targeted layers' narrower side, n_embd = " +
                     std::to_string(config.n_embd) + ", got " + std::to_string(rank));
}

LoraAdapter LoraAdapter::attach(torch::nn::Module& layer, int64_t in, int64_t out, const LoraKeys& settings) {
  LoraAdapter adapter;
  adapter.A =
      layer.register_module("lora_A", torch::nn::Linear(torch::nn::LinearOptions(in, settings.rank).bias(false)));
  adapter.B =
      layer.register_module("lora_B", torch::nn::Linear(torch::nn::LinearOptions(settings.rank, out).bias(false)));
  torch::NoGradGuard no_grad;
  torch::nn::init::zeros_(adapter.B->weight);
  adapter.scale = settings.scale();
  adapter.dropout = settings.dropout;
  return adapter;
}

at::Tensor LoraAdapter::delta(const at::Tensor& x, bool training) const {
  const at::Tensor in = dropout > 0 && training ? torch::dropout(x, dropout, true) : x;
  return at::linear(at::linear(in, A->weight), B->weight) * scale;
}

at::Tensor LoraAdapter::weight_delta() const { return B->weight.matmul(A->weight) * scale; }

void add_lora(GPT& model, const LoraKeys& settings) {
  for (auto& p : model->parameters()) p.requires_grad_(false);
  for (auto& block : *model->transformer->h) {
    auto* b = block->as<Block>();
    b->attn->add_lora(settings);
    b->mlp->add_lora(settings);
  }
}

void merge_lora(GPT& model) {
  for (auto& block : *model->transformer->h) {
    auto* b = block->as<Block>();
    b->attn->merge_lora();
    b->mlp->merge_lora();
  }
}

}  // namespace summarize
