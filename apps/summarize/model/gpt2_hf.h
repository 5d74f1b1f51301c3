#pragma once
// GPT-2 weights to and from Hugging Face directories (config.json and
// model.safetensors): start from openai-community/gpt2, hand a fine-tuned
// model back to transformers. HF's GPT-2 stores its projections as Conv1D,
// weights [in, out]; ours are Linear, [out, in]: they are transposed on the way.
#include <string>

#include "model/gpt2.h"

namespace summarize {

// The architecture in DIR/config.json (n_layer, n_head, n_embd, n_positions
// or n_ctx, vocab_size, layer_norm_epsilon), with bias on and dropout 0 (set
// it before building the model to fine-tune with dropout). Throws UsageError
// naming the file when it is missing or bad, or describes a GPT-2 this model
// cannot hold (another model_type or activation, n_inner other than 4 n_embd,
// an untied output head, attention scaled otherwise).
GPTConfig read_hf_config(const std::string& dir);

// Copies DIR/model.safetensors into the model: HF's names, with or without the
// "transformer." prefix; the attention-mask buffers (attn.bias,
// attn.masked_bias) and lm_head.weight (the tied copy of wte) are skipped.
// Names and shapes are checked first: on any difference nothing is copied and
// a UsageError names the file and lists the missing, unexpected and reshaped
// tensors.
void load_hf_weights(GPT& model, const std::string& dir);

// read_hf_config, then the model with its weights from load_hf_weights.
GPT load_hf(const std::string& dir);

// Writes DIR/config.json and DIR/model.safetensors (float32, HF's names and
// layouts, metadata {"format": "pt"}) as GPT2LMHeadModel.save_pretrained
// would, so that transformers' from_pretrained(DIR) loads the model; creates
// DIR. A model without biases gets zero biases, which HF's GPT-2 always has.
// bos and eos are <|endoftext|> (50256); the tokenizer files are not written.
void export_hf(const GPT& model, const std::string& dir);

// The adapters of a LoRA model (model/lora.h) in PEFT's layout, what
// peft.PeftModel.from_pretrained(base, DIR) loads onto the base model:
// DIR/adapter_config.json (a LoraConfig for CAUSAL_LM: r, lora_alpha,
// lora_dropout, target_modules, fan_in_fan_out true since HF's GPT-2 layers
// are Conv1D, and the base's folder) and DIR/adapter_model.safetensors
// (float32, "base_model.model." and our names, which are PEFT's). Creates DIR.
void export_peft_adapter(const GPT& model, const LoraKeys& settings, const std::string& base_dir,
                         const std::string& dir);

}  // namespace summarize
