#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "tandem/train/blockwise8.h"

namespace {

using tandem::kQuantBlock;

struct RoundTrip {
  at::Tensor codes, absmax, back;
};

RoundTrip round_trip(const at::Tensor& values, bool is_signed) {
  const at::Tensor map = tandem::dynamic_map(is_signed);
  RoundTrip r;
  r.codes = torch::empty({values.numel()}, torch::kUInt8);
  r.absmax = torch::empty({tandem::quant_blocks(values.numel())});
  r.back = torch::empty({values.numel()});
  tandem::quantize_blockwise(values, map, r.codes, r.absmax);
  tandem::dequantize_blockwise(r.codes, r.absmax, map, r.back);
  return r;
}

TEST(Blockwise8, MapsAreBitsandbytesDynamicMaps) {
  for (const bool is_signed : {true, false}) {
    const at::Tensor map = tandem::dynamic_map(is_signed);
    ASSERT_EQ(map.numel(), 256);
    EXPECT_TRUE(torch::all(map.slice(0, 1) > map.slice(0, 0, 255)).item<bool>()) << "ascending, no repeats";
    EXPECT_EQ(map[255].item<float>(), 1.0f);
    EXPECT_EQ((map == 0).sum().item<int64_t>(), 1);
  }
  // create_dynamic_map(signed=True)[0]: -(0.98593 + 1) / 2, no -1; unsigned
  // [1]: the first decade's first midpoint, 1e-6 * (0.1 + 0.55) / 2.
  EXPECT_NEAR(tandem::dynamic_map(true)[0].item<float>(), -0.99296875f, 1e-6);
  EXPECT_NEAR(tandem::dynamic_map(false)[1].item<float>(), 3.25e-7f, 1e-12);
  EXPECT_EQ(tandem::dynamic_map(false)[0].item<float>(), 0.0f);
}

// Each element within half the largest gap of the map times its block's
// absmax; the absmax itself exact; the last, short block on its own scale.
TEST(Blockwise8, RoundTripErrorStaysWithinHalfAGap) {
  torch::manual_seed(3);
  const at::Tensor values = torch::randn({3 * kQuantBlock + 100}) * torch::rand({3 * kQuantBlock + 100}) * 5;
  values.narrow(0, 3 * kQuantBlock, 100).mul_(1e-3);
  for (const bool is_signed : {true, false}) {
    const at::Tensor data = is_signed ? values : values.abs();
    const RoundTrip r = round_trip(data, is_signed);
    const at::Tensor map = tandem::dynamic_map(is_signed);
    const float half_gap = (map.slice(0, 1) - map.slice(0, 0, 255)).max().item<float>() / 2;
    ASSERT_EQ(r.absmax.numel(), 4);
    for (int64_t b = 0; b < 4; ++b) {
      const at::Tensor block = data.narrow(0, b * kQuantBlock, std::min<int64_t>(kQuantBlock, data.numel() - b * kQuantBlock));
      const float absmax = block.abs().max().item<float>();
      EXPECT_EQ(r.absmax[b].item<float>(), absmax) << "block " << b;
      const at::Tensor error = (r.back.narrow(0, b * kQuantBlock, block.numel()) - block).abs().max();
      EXPECT_LE(error.item<float>(), absmax * (half_gap + 1e-6f)) << "block " << b << (is_signed ? " signed" : "");
    }
  }
}

TEST(Blockwise8, ZerosStayZerosAndTheLargestElementIsExact) {
  at::Tensor values = torch::zeros({2 * kQuantBlock});
  values[kQuantBlock + 5] = -7.5f;
  values[kQuantBlock + 6] = 1e-9f;  // under 2.75e-7 of absmax: becomes 0
  const RoundTrip r = round_trip(values, true);
  EXPECT_EQ(r.absmax[0].item<float>(), 0.0f);
  EXPECT_EQ(r.absmax[1].item<float>(), 7.5f);
  EXPECT_TRUE(torch::equal(r.back.narrow(0, 0, kQuantBlock), torch::zeros({kQuantBlock})));
  // -7.5 / 7.5 = -1 lies beyond the most negative code, -0.99297.
  EXPECT_FLOAT_EQ(r.back[kQuantBlock + 5].item<float>(), -0.99296875f * 7.5f);
  EXPECT_EQ(r.back[kQuantBlock + 6].item<float>(), 0.0f);
}

// A value exactly halfway between two codes takes the lower one, as
// bitsandbytes' argmin does.
TEST(Blockwise8, TiesGoToTheLowerCode) {
  const at::Tensor map = tandem::dynamic_map(false);
  const auto code = map.accessor<float, 1>();
  at::Tensor values = torch::zeros({kQuantBlock});
  values[0] = 1.0f;
  std::vector<int64_t> lower;
  for (int64_t k = 1; k < 255 && static_cast<int64_t>(lower.size()) < kQuantBlock - 1; ++k) {
    const float mid = static_cast<float>((static_cast<double>(code[k]) + code[k + 1]) / 2);
    if (mid - code[k] != code[k + 1] - mid) continue;
    values[static_cast<int64_t>(lower.size()) + 1] = mid;
    lower.push_back(k);
  }
  ASSERT_GT(lower.size(), 10u) << "too few exact ties to test";
  const RoundTrip r = round_trip(values, false);
  for (size_t j = 0; j < lower.size(); ++j)
    EXPECT_EQ(r.codes[static_cast<int64_t>(j) + 1].item<uint8_t>(), lower[j]) << "tie after code " << lower[j];
}

// An embedding's moments stay fp32 wherever it sits in the model.
TEST(Blockwise8, FindsTheEmbeddingWeights) {
  torch::nn::Module model;
  model.register_module("wte", torch::nn::Embedding(100, 64));
  model.register_module("fc", torch::nn::Linear(64, 64));
  model.register_module("inner", torch::nn::ModuleList(torch::nn::Embedding(10, 8)));
  EXPECT_EQ(tandem::embedding_weights(model), (std::vector<std::string>{"wte.weight", "inner.0.weight"}));
  torch::nn::Embedding alone(100, 64);
  EXPECT_EQ(tandem::embedding_weights(*alone), std::vector<std::string>{"weight"});
}

// tests/peers/blockwise8_vs_numpy.py's half: WORK/input.f32 quantised with
// both maps, written back for the reference to compare.
TEST(Blockwise8Peer, WritesWhatItMakesOfTheInput) {
  const char* dir = std::getenv("TANDEM_PEER_BLOCKWISE8_DIR");
  if (!dir) GTEST_SKIP() << "run by tests/peers/blockwise8_vs_numpy.py";
  const std::string work = dir;
  std::ifstream in(work + "/input.f32", std::ios::binary | std::ios::ate);
  ASSERT_TRUE(in) << work << "/input.f32";
  const int64_t n = static_cast<int64_t>(in.tellg()) / 4;
  at::Tensor values = torch::empty({n});
  in.seekg(0);
  in.read(static_cast<char*>(values.data_ptr()), n * 4);
  auto write = [&](const std::string& name, const at::Tensor& t) {
    std::ofstream out(work + "/" + name, std::ios::binary);
    out.write(static_cast<const char*>(t.data_ptr()), t.numel() * static_cast<int64_t>(t.element_size()));
  };
  for (const bool is_signed : {true, false}) {
    const std::string name = is_signed ? "signed" : "unsigned";
    const RoundTrip r = round_trip(is_signed ? values : values.abs(), is_signed);
    write("map_" + name + ".f32", tandem::dynamic_map(is_signed));
    write("codes_" + name + ".u8", r.codes);
    write("absmax_" + name + ".f32", r.absmax);
    write("dequantized_" + name + ".f32", r.back);
  }
}

}  // namespace
