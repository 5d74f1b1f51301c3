#pragma once
// LoRA (Hu et al., 2021), as PEFT does it, on GPT-2's projections: beside a
// frozen Linear layer (W, b) a trained low-rank update,
//   y = x W^T + b + (alpha / r) dropout(x) A^T B^T,
// A [r, in] drawn as torch.nn.Linear draws its weights (Kaiming uniform) and
// B [out, r] zero, so that training starts from the base model exactly. The
// adapters are registered on their layer as "lora_A" and "lora_B"
// (transformer.h.0.attn.c_attn.lora_A.weight): PEFT's names, so its layout
// only adds a prefix (export_peft_adapter, model/gpt2_hf.h). Everything else in the model is
// frozen: the base comes from a Hugging Face folder (model.init_from), and
// checkpoints hold the adapters alone (Task::frozen_base).
#include <torch/nn/modules/linear.h>

#include <string>
#include <vector>
#include "tandem/config/settings.h"

namespace summarize {

struct GPTConfig;
class GPT;

struct LoraKeys {
  std::vector<std::string> targets;  // of kLoraTargets; none: no LoRA
  int64_t rank = 8;
  double alpha = 16;
  double dropout = 0;

  // The model.lora keys, each declared once (tandem/config/settings.h).
  template <class Self, class Visit>
  static void each_key(Self& s, Visit&& visit) {
    visit("model.lora.targets", s.targets,
          "LoRA: train low-rank adapters on these layers of every block (attn.c_attn, attn.c_proj, mlp.c_fc, "
          "mlp.c_proj) and freeze the rest, the Hugging Face base model.init_from names; empty: train the whole "
          "model",
          tandem::any());
    visit("model.lora.rank", s.rank, "LoRA: the adapters' rank r, from 1 to n_embd", tandem::at_least(1));
    visit("model.lora.alpha", s.alpha, "LoRA: the adapters' updates are scaled by alpha / r", tandem::above(0));
    visit("model.lora.dropout", s.dropout, "LoRA: dropout on the adapters' inputs while training", tandem::fraction());
  }

  bool enabled() const { return !targets.empty(); }
  double scale() const { return alpha / static_cast<double>(rank); }
  // What the keys' own checks cannot say, as UsageError naming the key: a
  // target not in lora_targets() or named twice; a rank above the narrower
  // side of a targeted layer (n_embd for each of GPT-2's), where the update
  // would be no low-rank one.
  void validate(const GPTConfig& config) const;
};

// The layers model.lora.targets may name, in each block, as PEFT's
// target_modules name them: "attn.c_attn", "attn.c_proj", "mlp.c_fc",
// "mlp.c_proj".
const std::vector<std::string>& lora_targets();

// One layer's adapter; empty (no A) for a layer without one.
struct LoraAdapter {
  torch::nn::Linear A{nullptr}, B{nullptr};
  double scale = 0, dropout = 0;

  // Registers A and B on `layer` as lora_A and lora_B, A initialised from
  // LibTorch's global generator.
  static LoraAdapter attach(torch::nn::Module& layer, int64_t in, int64_t out, const LoraKeys& settings);
  // The update for input x [..., in]: [..., out], dropout applied in training.
  at::Tensor delta(const at::Tensor& x, bool training) const;
  // (alpha / r) B A, [out, in]: what merging adds to the layer's weight.
  at::Tensor weight_delta() const;
  bool empty() const { return A.is_empty(); }
};

// Freezes every parameter of `model`, then attaches an adapter to each
// targeted layer of every block. `settings` must be validated.
void add_lora(GPT& model, const LoraKeys& settings);

// Folds every adapter into its layer's weight (W += (alpha / r) B A) and
// removes the adapters: a plain GPT-2 again, for export_hf, as PEFT's
// merge_and_unload gives.
void merge_lora(GPT& model);

}  // namespace summarize
