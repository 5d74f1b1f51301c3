#include <gtest/gtest.h>
#include <torch/torch.h>

#include <stdexcept>
#include <string>

#include "tandem/train/ema.h"

namespace {

// A parameter and a buffer, each filled with one value, so that every update
// can be followed by hand.
struct Toy : torch::nn::Module {
  Toy() {
    weight = register_parameter("weight", torch::full({2, 2}, 1.0));
    table = register_buffer("table", torch::full({3}, 5.0));
  }
  void set(double w, double t) {
    torch::NoGradGuard no_grad;
    weight.fill_(w);
    table.fill_(t);
  }
  at::Tensor weight, table;
};

struct Other : torch::nn::Module {
  Other() {
    bias = register_parameter("bias", torch::zeros({2, 2}));
    table = register_buffer("table", torch::zeros({3}));
  }
  at::Tensor bias, table;
};

void expect_filled(const at::Tensor& tensor, double value) {
  EXPECT_TRUE(torch::allclose(tensor, torch::full_like(tensor, value), 0.0, 1e-6)) << tensor;
}

TEST(TrainEma, NamesParametersThenBuffers) {
  Toy toy;
  const tandem::Ema ema(toy);
  ASSERT_EQ(ema.named_tensors().size(), 2u);
  EXPECT_EQ(ema.named_tensors()[0].first, "weight");
  EXPECT_EQ(ema.named_tensors()[1].first, "table");
  expect_filled(ema.named_tensors()[0].second, 1.0);
  // A copy, not the module's own tensor.
  toy.set(7.0, 7.0);
  expect_filled(ema.named_tensors()[0].second, 1.0);
  EXPECT_FALSE(ema.named_tensors()[0].second.requires_grad());
}

TEST(TrainEma, UpdateSequenceByHand) {
  Toy toy;
  tandem::Ema ema(toy);
  toy.set(3.0, 6.0);
  ema.update(toy, 0.9);  // 0.9 * 1 + 0.1 * 3
  expect_filled(ema.named_tensors()[0].second, 1.2);
  expect_filled(ema.named_tensors()[1].second, 6.0);  // buffers copied
  toy.set(-1.0, 2.0);
  ema.update(toy, 0.5);  // 0.5 * 1.2 + 0.5 * -1
  expect_filled(ema.named_tensors()[0].second, 0.1);
  expect_filled(ema.named_tensors()[1].second, 2.0);
  ema.update(toy, 1.0);  // decay 1 keeps the average
  expect_filled(ema.named_tensors()[0].second, 0.1);
  ema.update(toy, 0.0);  // decay 0 takes the parameter
  expect_filled(ema.named_tensors()[0].second, -1.0);
}

TEST(TrainEma, CopyToOverwritesTheModule) {
  Toy toy;
  tandem::Ema ema(toy);
  toy.set(3.0, 4.0);
  ema.update(toy, 0.75);  // 0.75 + 0.75
  Toy fresh;
  fresh.set(0.0, 0.0);
  ema.copy_to(fresh);
  expect_filled(fresh.weight, 1.5);
  expect_filled(fresh.table, 4.0);
  EXPECT_TRUE(fresh.weight.requires_grad());
}

TEST(TrainEma, RejectsAnotherModuleAndBadDecay) {
  Toy toy;
  tandem::Ema ema(toy);
  Other other;
  EXPECT_THROW(ema.update(other, 0.9), std::invalid_argument);
  EXPECT_THROW(ema.copy_to(other), std::invalid_argument);
  EXPECT_THROW(ema.update(toy, 1.5), std::invalid_argument);
  EXPECT_THROW(ema.update(toy, -0.1), std::invalid_argument);
}

}  // namespace
