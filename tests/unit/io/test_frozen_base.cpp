// What a run on a frozen base (Task::frozen_base, summarize's LoRA) relies on
// from libcore: the base's file named by its checksum, files and the EMA
// holding the trained state alone, a file refused on another base, and the
// frozen matrices kept in the compute precision.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <string>

#include "tandem/error.h"
#include "tandem/io/checkpoint.h"
#include "tandem/io/file_checksum.h"
#include "tandem/train/ema.h"
#include "tandem/train/precision.h"
#include "../test_support.h"

namespace {

using FrozenBaseTest = tandem::testing::TempDirTest;

// A frozen matrix and norm, a trained matrix, and a buffer.
struct Adapted : torch::nn::Module {
  Adapted() {
    base = register_parameter("base", torch::full({3, 2}, 1.0), /*requires_grad=*/false);
    norm = register_parameter("norm", torch::ones({2}), /*requires_grad=*/false);
    adapter = register_parameter("adapter", torch::full({2, 2}, 0.5));
    table = register_buffer("table", torch::arange(3.0));
  }
  at::Tensor base, norm, adapter, table;
};

// CRC-64/XZ's published check value is that of "123456789".
TEST_F(FrozenBaseTest, Crc64IsXzsAndNamesAnUnreadableFile) {
  std::ofstream(path("check")) << "123456789";
  std::ofstream(path("empty")).close();
  EXPECT_EQ(tandem::file_crc64(path("check")), "crc64:995dc9bbdf1939fa");
  EXPECT_EQ(tandem::file_crc64(path("empty")), "crc64:0000000000000000");
  const std::string message =
      tandem::testing::message_of<tandem::UsageError>([&] { tandem::file_crc64(path("nowhere")); });
  EXPECT_EQ(message.rfind(path("nowhere") + ": cannot open", 0), 0u) << message;
}

TEST(FrozenBase, TrainedStateLeavesTheFrozenParametersOut) {
  Adapted m;
  std::vector<std::string> names;
  for (const auto& [name, tensor] : tandem::trained_state(m)) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"adapter", "table"}));
}

TEST(FrozenBase, EmaAveragesTheTrainedParametersAlone) {
  Adapted m;
  tandem::Ema ema(m);
  ASSERT_EQ(ema.named_tensors().size(), 2u);
  {
    torch::NoGradGuard no_grad;
    m.adapter.fill_(1.5);
    m.table.fill_(7.0);
  }
  ema.update(m, 0.5);
  EXPECT_TRUE(torch::equal(ema.named_tensors()[0].second, torch::full({2, 2}, 1.0)));  // 0.5 0.5 + 0.5 1.5
  EXPECT_TRUE(torch::equal(ema.named_tensors()[1].second, torch::full({3}, 7.0)));     // copied
}

TEST(FrozenBase, FilesContinueOnlyOnTheirBase) {
  tandem::Checkpoint adapters, whole;
  adapters.path = "run/step-2.h5";
  adapters.state["frozen_base"] = std::string("crc64:00000000000000aa");
  whole.path = "run/final.h5";
  const auto message = [](const tandem::Checkpoint& c, const std::string& base) {
    return tandem::testing::message_of<tandem::UsageError>([&] { tandem::require_frozen_base(c, base); });
  };
  EXPECT_NO_THROW(tandem::require_frozen_base(adapters, "crc64:00000000000000aa"));
  EXPECT_NO_THROW(tandem::require_frozen_base(whole, ""));
  EXPECT_EQ(message(adapters, "crc64:00000000000000bb"),
            "run/step-2.h5: was trained on the frozen base crc64:00000000000000aa, and this run's is "
            "crc64:00000000000000bb: give it the base it was trained on");
  EXPECT_EQ(message(adapters, ""),
            "run/step-2.h5: holds what was trained on a frozen base (crc64:00000000000000aa), not a whole model: "
            "use it with the settings it was written with");
  EXPECT_EQ(message(whole, "crc64:00000000000000bb"),
            "run/final.h5: holds a whole model, not one trained on a frozen base (crc64:00000000000000bb): use it "
            "with the settings it was written with");
}

TEST(FrozenBase, FrozenMatricesTakeTheComputePrecisionNormsAndTrainedStayFp32) {
  Adapted m;
  tandem::keep_frozen_in(m, tandem::Precision::FP32);
  EXPECT_EQ(m.base.scalar_type(), at::kFloat);
  tandem::keep_frozen_in(m, tandem::Precision::BF16);
  EXPECT_EQ(m.named_parameters()["base"].scalar_type(), at::kBFloat16);
  EXPECT_TRUE(torch::equal(m.named_parameters()["base"], torch::full({3, 2}, 1.0, at::kBFloat16)));
  EXPECT_FALSE(m.named_parameters()["base"].requires_grad());
  EXPECT_EQ(m.named_parameters()["norm"].scalar_type(), at::kFloat);
  EXPECT_EQ(m.named_parameters()["adapter"].scalar_type(), at::kFloat);
  tandem::keep_frozen_in(m, tandem::Precision::FP16);
  EXPECT_EQ(m.named_parameters()["base"].scalar_type(), at::kHalf);
}

}  // namespace
