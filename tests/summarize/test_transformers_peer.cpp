// The C++ half of tests/peers/gpt2_vs_transformers.py, which runs these with
// TANDEM_PEER_GPT2_DIR set after writing there a randomly initialised
// transformers GPT2LMHeadModel (save_pretrained: hf/) and its logits on fixed
// ids (reference.safetensors). Without the variable they skip.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <map>
#include <string>

#include "model/gpt2.h"
#include "model/gpt2_hf.h"
#include "tandem/io/safetensors.h"

namespace {

class TransformersPeer : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* dir = std::getenv("TANDEM_PEER_GPT2_DIR");
    if (!dir) GTEST_SKIP() << "run by tests/peers/gpt2_vs_transformers.py (ctest -L peers)";
    dir_ = dir;
    for (auto& [name, tensor] : tandem::read_safetensors(dir_ + "/reference.safetensors")) reference_[name] = tensor;
  }
  std::string dir_;
  std::map<std::string, at::Tensor> reference_;
};

TEST_F(TransformersPeer, ImportedModelGivesTheirLogits) {
  summarize::GPT model = summarize::load_hf(dir_ + "/hf");
  model->eval();
  torch::NoGradGuard no_grad;
  const at::Tensor logits = model(reference_.at("input_ids"));
  const at::Tensor& want = reference_.at("logits");
  ASSERT_EQ(logits.sizes(), want.sizes());
  const double diff = (logits - want).abs().max().item<double>();
  EXPECT_LT(diff, 1e-4) << "largest logit difference against transformers";
}

// Exports what it imported, with its own logits beside it, for the Python side
// to load with GPT2LMHeadModel.from_pretrained and compare.
TEST_F(TransformersPeer, ExportsForTransformers) {
  summarize::GPT model = summarize::load_hf(dir_ + "/hf");
  model->eval();
  torch::NoGradGuard no_grad;
  summarize::export_hf(model, dir_ + "/exported");
  tandem::write_safetensors(dir_ + "/tandem_logits.safetensors", {{"logits", model(reference_.at("input_ids"))}});
}

}  // namespace
