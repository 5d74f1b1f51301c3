#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <torch/torch.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "tandem/error.h"
#include "tandem/io/checkpoint.h"
#include "../test_support.h"
#include "tandem/io/checkpoint_dir.h"

namespace {

namespace fs = std::filesystem;
using tandem::Checkpoint;
using tandem::CheckpointDir;
using tandem::CheckpointState;
using tandem::NamedTensors;
using tandem::TensorSets;
using tandem::UsageError;

using CheckpointTest = tandem::testing::TempDirTest;

using tandem::testing::usage_error_of;

void expect_same(const NamedTensors& actual, const NamedTensors& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_EQ(actual[i].first, expected[i].first);
    EXPECT_EQ(actual[i].second.scalar_type(), expected[i].second.scalar_type()) << actual[i].first;
    EXPECT_TRUE(torch::equal(actual[i].second, expected[i].second)) << actual[i].first;
  }
}

TensorSets sample_sets() {
  return {
      // Names out of alphabetical order: a set must come back in the order given.
      {"model", {{"z.weight", torch::randn({3, 4})}, {"a.bias", torch::randn({3}).to(torch::kHalf)}}},
      {"optim", {{"step", torch::tensor(int64_t{42})}, {"exp_avg.z.weight", torch::zeros({3, 4}, torch::kBFloat16)}}},
      {"rng", {{"cpu", torch::randint(0, 255, {16}, torch::kByte)}}},
      {"ema", {}},
  };
}

// Flips one bit of the first float `value` stored in `file` (a tensor's bytes).
void flip_a_bit_of(const std::string& file, float value) {
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const size_t at = bytes.find(std::string(reinterpret_cast<const char*>(&value), sizeof value));
  ASSERT_NE(at, std::string::npos) << value << " not in " << file;
  bytes[at + 1] ^= 0x04;
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

TEST_F(CheckpointTest, RoundTripsSetsAndState) {
  const TensorSets sets = sample_sets();
  const CheckpointState state = {
      {"step", int64_t{100}}, {"loss_scale", 65536.0}, {"config", std::string("[train]\nlr = 0.1\n")}};
  tandem::save_checkpoint(path("ckpt.h5"), sets, state);

  const Checkpoint loaded = tandem::load_checkpoint(path("ckpt.h5"));
  EXPECT_EQ(loaded.path, path("ckpt.h5"));
  ASSERT_EQ(loaded.sets.size(), sets.size());
  for (const auto& [name, tensors] : sets) {
    SCOPED_TRACE(name);
    expect_same(loaded.set(name), tensors);
  }
  EXPECT_EQ(loaded.state, state);
  EXPECT_EQ(loaded.get_int("step"), 100);
  EXPECT_EQ(loaded.get_double("loss_scale"), 65536.0);
  EXPECT_EQ(loaded.get_double("step"), 100.0);
  EXPECT_EQ(loaded.get_string("config"), "[train]\nlr = 0.1\n");
  EXPECT_NE(usage_error_of([&] { loaded.set("teacher"); }).find(path("ckpt.h5") + ": no tensor set 'teacher'"),
            std::string::npos);
  EXPECT_NE(usage_error_of([&] { loaded.get_int("epoch"); }).find("'epoch'"), std::string::npos);
  EXPECT_NE(usage_error_of([&] { loaded.get_int("config"); }).find("'config' is not an int64"), std::string::npos);
  EXPECT_EQ(fs::directory_iterator(dir_)->path().filename(), "ckpt.h5");  // no temporary left behind
}

TEST_F(CheckpointTest, MissingCheckpointIsAUsageError) {
  EXPECT_NE(usage_error_of([&] { tandem::load_checkpoint(path("nope.h5")); }).find(path("nope.h5")), std::string::npos);
}

// Found by fuzz_h5: a copy cut short opened as a fault of the machine (exit 1).
// It is the user's file at fault, as a missing one is: exit 2, naming it.
TEST_F(CheckpointTest, TruncatedCheckpointIsAUsageErrorNamingTheFile) {
  tandem::save_checkpoint(path("ckpt.h5"), {{"model", {{"w", torch::ones({64, 64})}}}}, {{"step", int64_t{3}}});
  fs::resize_file(path("ckpt.h5"), fs::file_size(path("ckpt.h5")) / 2);
  const std::string message = usage_error_of([&] { tandem::load_checkpoint(path("ckpt.h5")); });
  EXPECT_NE(message.find(path("ckpt.h5") + ": cannot open as HDF5 (damaged or truncated?)"), std::string::npos)
      << message;
}

// Every tensor carries a checksum (HDF5's Fletcher-32 filter): a flipped bit in
// a weight is an error naming the file and the tensor, not a different model.
TEST_F(CheckpointTest, FlippedBitInATensorIsAUsageErrorNamingTheTensor) {
  tandem::save_checkpoint(path("ckpt.h5"), {{"model", {{"fc.weight", torch::full({16, 16}, 1234.5f)}}}},
                          {{"step", int64_t{3}}});
  flip_a_bit_of(path("ckpt.h5"), 1234.5f);
  const std::string message = usage_error_of([&] { tandem::load_checkpoint(path("ckpt.h5")); });
  EXPECT_NE(message.find(path("ckpt.h5") + ": dataset 'model/fc.weight': "), std::string::npos) << message;
  EXPECT_NE(message.find("Fletcher32 checksum"), std::string::npos) << message;
}

TEST_F(CheckpointTest, RejectsNamesWithSlashesAndLeavesNoFile) {
  EXPECT_THROW(tandem::save_checkpoint(path("ckpt.h5"), {{"model", {{"h/0", torch::zeros({1})}}}}, {}),
               std::invalid_argument);
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(CheckpointTest, RestoresIntoModuleParameters) {
  torch::manual_seed(1);
  torch::nn::Linear saved(4, 3);
  tandem::save_checkpoint(path("ckpt.h5"), {{"model", tandem::named_tensors(saved->named_parameters())}}, {});

  torch::nn::Linear fresh(4, 3);
  ASSERT_FALSE(torch::equal(fresh->weight, saved->weight));
  tandem::restore(tandem::load_checkpoint(path("ckpt.h5")), "model", tandem::named_tensors(fresh->named_parameters()));
  EXPECT_TRUE(torch::equal(fresh->weight, saved->weight));
  EXPECT_TRUE(torch::equal(fresh->bias, saved->bias));
  EXPECT_TRUE(fresh->weight.requires_grad());
}

TEST_F(CheckpointTest, MismatchListsDifferencesAndChangesNothing) {
  torch::nn::Linear saved(4, 3);
  NamedTensors params = tandem::named_tensors(saved->named_parameters());
  for (int i = 0; i < 7; ++i) params.emplace_back("extra." + std::to_string(i), torch::zeros({1}));
  tandem::save_checkpoint(path("ckpt.h5"), {{"model", params}}, {});
  const Checkpoint checkpoint = tandem::load_checkpoint(path("ckpt.h5"));

  torch::nn::Linear model(4, 4);
  NamedTensors targets = tandem::named_tensors(model->named_parameters());
  targets.emplace_back("scale", torch::ones({4}));
  std::vector<torch::Tensor> before;
  for (const auto& [name, tensor] : targets) before.push_back(tensor.clone());

  const std::string message = usage_error_of([&] { tandem::restore(checkpoint, "model", targets); });
  for (const std::string& part :
       {path("ckpt.h5"), std::string("'model'"), std::string("1 missing from the checkpoint: scale"),
        std::string("7 in the checkpoint only: extra.0, extra.1"), std::string("(2 more)"),
        std::string("2 of another shape"), std::string("weight: checkpoint [3,4] vs model [4,4]"),
        std::string("bias: checkpoint [3] vs model [4]")}) {
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
  }
  for (size_t i = 0; i < targets.size(); ++i)
    EXPECT_TRUE(torch::equal(targets[i].second, before[i])) << targets[i].first;
}

// Tensors another reader takes (the sharded masters' averages) are checked
// as the targets are, and copied by nobody here.
TEST_F(CheckpointTest, TensorsReadElsewhereAreCheckedNotCopied) {
  tandem::save_checkpoint(path("ckpt.h5"),
                          {{"ema", {{"own", torch::ones({2})}, {"theirs", torch::ones({3, 4})}}}}, {});
  const Checkpoint checkpoint = tandem::load_checkpoint(path("ckpt.h5"));
  const at::Tensor own = torch::zeros({2}), theirs = torch::zeros({3, 4});
  tandem::restore(checkpoint, "ema", {{"own", own}}, {{"theirs", theirs}});
  EXPECT_TRUE(torch::equal(own, torch::ones({2})));
  EXPECT_TRUE(torch::equal(theirs, torch::zeros({3, 4}))) << "a tensor read elsewhere was copied";
  EXPECT_NE(usage_error_of([&] { tandem::restore(checkpoint, "ema", {{"own", own}}); })
                .find("1 in the checkpoint only: theirs"),
            std::string::npos);
  const std::string reshaped =
      usage_error_of([&] { tandem::restore(checkpoint, "ema", {{"own", own}}, {{"theirs", torch::zeros({4, 3})}}); });
  EXPECT_NE(reshaped.find("theirs: checkpoint [3,4] vs ema [4,3]"), std::string::npos) << reshaped;
  const std::string missing =
      usage_error_of([&] { tandem::restore(checkpoint, "ema", {{"own", own}, {"theirs", theirs}}, {{"more", own}}); });
  EXPECT_NE(missing.find("1 missing from the checkpoint: more"), std::string::npos) << missing;
}

TEST_F(CheckpointTest, DirectoryKeepsTheNewestAndFindsTheLatest) {
  CheckpointDir checkpoints(path("run/checkpoints"), 2);
  EXPECT_FALSE(checkpoints.latest().has_value());
  EXPECT_TRUE(checkpoints.list().empty());
  for (int64_t step : {100, 1000, 200, 300})
    checkpoints.save(step, {{"model", {{"w", torch::full({1}, double(step))}}}}, {{"step", step}});
  EXPECT_EQ(checkpoints.path_for(100), path("run/checkpoints/step-00000100.h5"));
  EXPECT_EQ(checkpoints.list(), (std::vector<std::string>{checkpoints.path_for(300), checkpoints.path_for(1000)}));
  ASSERT_TRUE(checkpoints.latest().has_value());
  EXPECT_EQ(*checkpoints.latest(), checkpoints.path_for(1000));
  EXPECT_EQ(tandem::load_checkpoint(*checkpoints.latest()).get_int("step"), 1000);

  CheckpointDir keep_all(path("all"), 0);
  for (int64_t step : {1, 2, 3}) keep_all.save(step, {}, {});
  EXPECT_EQ(keep_all.list().size(), 3u);
}

TEST_F(CheckpointTest, LoadLatestPassesOverDamagedCheckpoints) {
  CheckpointDir checkpoints(path("checkpoints"), 0);
  const auto passed = [](std::vector<std::string>* out) {
    return [out](const std::string& file, const std::string& why) { out->push_back(file + " | " + why); };
  };
  std::vector<std::string> passed_over;
  EXPECT_FALSE(checkpoints.load_latest(passed(&passed_over)).has_value());
  for (int64_t step : {1, 2, 3})
    checkpoints.save(step, {{"model", {{"w", torch::full({64}, 1000.0f + step)}}}}, {{"step", step}});
  flip_a_bit_of(checkpoints.path_for(3), 1003.0f);
  fs::resize_file(checkpoints.path_for(2), fs::file_size(checkpoints.path_for(2)) / 2);

  const std::optional<Checkpoint> latest = checkpoints.load_latest(passed(&passed_over));
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->get_int("step"), 1);
  ASSERT_EQ(passed_over.size(), 2u);
  EXPECT_EQ(passed_over[0].rfind(checkpoints.path_for(3) + " | ", 0), 0u) << passed_over[0];
  EXPECT_NE(passed_over[0].find("Fletcher32 checksum"), std::string::npos) << passed_over[0];
  EXPECT_EQ(passed_over[1].rfind(checkpoints.path_for(2) + " | ", 0), 0u) << passed_over[1];

  flip_a_bit_of(checkpoints.path_for(1), 1001.0f);
  passed_over.clear();
  const std::string message = usage_error_of([&] { checkpoints.load_latest(passed(&passed_over)); });
  EXPECT_EQ(message.rfind("none of the 3 checkpoints in " + path("checkpoints") + " reads back whole; the newest: " +
                              checkpoints.path_for(3),
                          0),
            0u)
      << message;
  EXPECT_EQ(passed_over.size(), 3u);
}

// Crashes a real save part-way: a child process saves with its file-size limit
// (RLIMIT_FSIZE) below the checkpoint's size, so the kernel kills it with
// SIGXFSZ inside HDF5's write of the temporary file, the way a node failure or
// OOM kill would interrupt it. Whatever save() does, the child runs no further.
void crash_while_saving(const std::function<void()>& save) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The parent's OpenMP team does not survive fork(), and LibTorch's next
    // parallel region in the child would wait for it forever: one thread here.
    at::set_num_threads(1);
    const rlimit no_core{0, 0}, small_files{256 << 10, 256 << 10};
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::setrlimit(RLIMIT_FSIZE, &small_files);
    save();
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the save finished instead of crashing";
  ASSERT_EQ(WTERMSIG(status), SIGXFSZ);
}

TensorSets big_sets(double value) { return {{"model", {{"w", torch::full({1 << 20}, value)}}}}; }  // 4 MiB

TEST_F(CheckpointTest, CrashDuringSaveLeavesThePreviousCheckpoint) {
  CheckpointDir checkpoints(path("checkpoints"), 3);
  checkpoints.save(100, big_sets(1.0), {{"step", int64_t{100}}});
  crash_while_saving([&] { checkpoints.save(200, big_sets(2.0), {{"step", int64_t{200}}}); });

  size_t partial_files = 0;
  for (const auto& entry : fs::directory_iterator(path("checkpoints"))) {
    partial_files += entry.path().filename().string().rfind(".step-00000200.h5.tmp-", 0) == 0;
  }
  EXPECT_EQ(partial_files, 1u) << "the crash should have left a partial temporary file";
  EXPECT_EQ(checkpoints.list(), std::vector<std::string>{checkpoints.path_for(100)});
  ASSERT_EQ(checkpoints.latest(), checkpoints.path_for(100));
  const Checkpoint previous = tandem::load_checkpoint(*checkpoints.latest());
  EXPECT_EQ(previous.get_int("step"), 100);
  EXPECT_TRUE(torch::equal(previous.set("model")[0].second, big_sets(1.0)["model"][0].second));

  checkpoints.save(300, {}, {});  // the next save clears the crash's leftovers
  EXPECT_EQ(std::distance(fs::directory_iterator(path("checkpoints")), fs::directory_iterator()), 2);
}

TEST_F(CheckpointTest, CrashWhileOverwritingKeepsTheOldFile) {
  tandem::save_checkpoint(path("best.h5"), big_sets(1.0), {{"metric", 0.5}});
  crash_while_saving([&] { tandem::save_checkpoint(path("best.h5"), big_sets(2.0), {{"metric", 0.7}}); });
  const Checkpoint best = tandem::load_checkpoint(path("best.h5"));
  EXPECT_EQ(best.get_double("metric"), 0.5);
  EXPECT_TRUE(torch::equal(best.set("model")[0].second, big_sets(1.0)["model"][0].second));
}

// The file must make sense to Python users: groups per set, float16 as numpy
// float16, bfloat16 as uint16 bits labelled by the `dtype` attribute, state as
// plain int/float/str attributes.
TEST_F(CheckpointTest, OpensInH5py) {
  if (std::system("/usr/bin/python3 -c 'import h5py' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "h5py is not importable by /usr/bin/python3 (Debian: apt-get install python3-h5py)";
  }
  tandem::save_checkpoint(path("ckpt.h5"),
                          {{"model",
                            {{"wte.weight", torch::tensor({{1.5, -2.0}, {0.25, 3.0}}).to(torch::kHalf)},
                             {"ln.bias", torch::tensor({1.0, 2.0}).to(torch::kBFloat16)}}}},
                          {{"step", int64_t{7}}, {"lr", 0.001}, {"config", std::string("[model]\nn_layer = 2\n")}});
  const std::string script =
      "import sys, h5py, numpy as np\n"
      "def text(v): return v.decode() if isinstance(v, bytes) else v  # fixed-length strings read as bytes\n"
      "f = h5py.File(sys.argv[1], 'r')\n"
      "w = f['model']['wte.weight']\n"
      "assert w.dtype == np.float16, w.dtype\n"
      "assert w.shape == (2, 2) and w[1, 0] == 0.25 and w[0, 1] == -2.0, w[()]\n"
      "b = f['model/ln.bias']\n"
      "assert b.dtype == np.uint16 and text(b.attrs['dtype']) == 'bfloat16', (b.dtype, b.attrs['dtype'])\n"
      "assert (b[()].astype(np.uint32) << 16).view(np.float32).tolist() == [1.0, 2.0]\n"
      "assert f.attrs['step'] == 7 and f.attrs['lr'] == 0.001, dict(f.attrs)\n"
      "assert text(f.attrs['config']) == '[model]\\nn_layer = 2\\n', f.attrs['config']\n"
      "print('ok')\n";
  std::ofstream(path("check.py")) << script;
  const std::string command = "/usr/bin/python3 " + path("check.py") + " " + path("ckpt.h5") + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe.get()) != nullptr) output += buffer;
  EXPECT_EQ(output, "ok\n");
}

}  // namespace

namespace {

// What a resume opens: the state at once, each tensor (or a run of its rows)
// when asked, the same values load_checkpoint reads, and the same refusals.
TEST_F(CheckpointTest, AnOpenedCheckpointReadsItsTensorsWhenAsked) {
  const auto w = torch::arange(12, torch::kFloat).reshape({4, 3});
  tandem::save_checkpoint(path("c.h5"), {{"model", {{"w", w}, {"b", torch::ones({3})}}}}, {{"step", int64_t{7}}});
  const Checkpoint opened = tandem::open_checkpoint(path("c.h5"));
  EXPECT_EQ(opened.get_int("step"), 7);
  EXPECT_TRUE(opened.sets.empty());
  EXPECT_TRUE(opened.has_set("model"));
  EXPECT_FALSE(opened.has_set("ema"));
  const auto model = opened.source("model");
  EXPECT_EQ(model->names(), (std::vector<std::string>{"w", "b"}));
  EXPECT_EQ(model->shape("w"), (std::vector<int64_t>{4, 3}));
  EXPECT_TRUE(torch::equal(model->read("w"), w));
  EXPECT_TRUE(torch::equal(model->read_rows("w", 1, 3), w.narrow(0, 1, 2)));

  auto w2 = torch::zeros({4, 3}), b2 = torch::zeros({3});
  tandem::restore(opened, "model", {{"w", w2}, {"b", b2}});
  EXPECT_TRUE(torch::equal(w2, w));
  auto wrong = torch::zeros({3, 4});
  const std::string why = tandem::testing::message_of<tandem::UsageError>(
      [&] { tandem::restore(opened, "model", {{"w", wrong}, {"b", b2}}); });
  EXPECT_NE(why.find("1 of another shape: w: checkpoint [4,3] vs model [3,4]"), std::string::npos) << why;
  EXPECT_TRUE(torch::equal(wrong, torch::zeros({3, 4}))) << "nothing is copied on a refusal";
  EXPECT_EQ(tandem::testing::message_of<tandem::UsageError>([&] { opened.source("ema"); }),
            path("c.h5") + ": no tensor set 'ema' in the checkpoint");
}

}  // namespace
