// A small regression task on the shared training loop, for tests of the loop
// itself: world-size invariance, exact resume, preemption, bad input, the
// memory plan. Its toy.* keys inject the events those tests need (a signal at
// a given forward pass, non-finite losses from a given one, running out of
// memory in forward or backward) and the activation estimate a plan uses.
#include <torch/torch.h>

#include <csignal>
#include <cstdio>
#include <iostream>

#include "tandem/config/command_line.h"
#include "tandem/dist/dist_keys.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/program.h"
#include "tandem/train/task.h"
#include "tandem/train/train_keys.h"
#include "tandem/train/trainer.h"

namespace {

// What a caching allocator throws when a device is full: c10::OutOfMemoryError.
[[noreturn]] void out_of_memory(const char* where) {
  TORCH_CHECK_WITH(OutOfMemoryError, false, "injected: out of memory in ", where, " (toy.oom_*)");
}

// The identity, whose backward runs out of memory: fc2's gradients exist by
// then, and with small buckets their all-reduce is under way.
struct FailInBackward : torch::autograd::Function<FailInBackward> {
  static torch::Tensor forward(torch::autograd::AutogradContext*, const torch::Tensor& x) { return x.clone(); }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext*, torch::autograd::variable_list) {
    out_of_memory("backward");
  }
};

struct Net : torch::nn::Module {
  Net(int64_t hidden, double dropout, bool batch_norm) {
    fc1 = register_module("fc1", torch::nn::Linear(8, hidden));
    if (batch_norm) bn = register_module("bn", torch::nn::BatchNorm1d(hidden));
    drop = register_module("drop", torch::nn::Dropout(dropout));
    fc2 = register_module("fc2", torch::nn::Linear(hidden, 2));
  }
  torch::Tensor forward(const torch::Tensor& x, bool fail_in_backward = false) {
    auto h = fc1(x);
    if (bn) h = bn(h);
    if (fail_in_backward) h = FailInBackward::apply(h);
    return fc2(drop(torch::tanh(h)));
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  torch::nn::BatchNorm1d bn{nullptr};
  torch::nn::Dropout drop{nullptr};
};

// y = A x with a fixed A, x_i a deterministic function of i: nothing random.
torch::Tensor inputs(const std::vector<int64_t>& idx) {
  auto i = torch::tensor(idx, torch::kLong).to(torch::kFloat).unsqueeze(1);
  auto j = torch::arange(8, torch::kFloat).unsqueeze(0);
  return torch::sin((i * 7 + j) * 0.37);
}

class ToyTask : public tandem::Task {
 public:
  ToyTask(const tandem::Config& c, int rank)
      : samples_(c.get_int("toy.samples")),
        hidden_(c.get_int("toy.hidden")),
        dropout_(c.get_double("toy.dropout")),
        batch_norm_(c.get_bool("toy.batch_norm")),
        signal_at_(c.get_int("toy.signal_at_call")),
        signal_rank_(c.get_int("toy.signal_rank")),
        nan_from_(c.get_int("toy.nan_from_call")),
        oom_from_(c.get_int("toy.oom_from_call")),
        oom_rank_(c.get_int("toy.oom_rank")),
        oom_above_(c.get_int("toy.oom_above")),
        oom_in_(c.get_string("toy.oom_in")),
        activation_mb_(c.get_double("toy.activation_mb")),
        loss_gain_(c.get_double("toy.loss_gain")),
        rank_(rank) {}

  std::shared_ptr<torch::nn::Module> build_model() override {
    return std::make_shared<Net>(hidden_, dropout_, batch_norm_);
  }
  int64_t train_size() const override { return samples_; }
  tandem::Activations activation_bytes(const tandem::ActivationQuery& q) const override {
    if (activation_mb_ < 0) return {};
    return {static_cast<int64_t>(activation_mb_ * 1048576.0) * q.micro_batch, 0};
  }
  int64_t eval_size() const override { return samples_ / 4; }

  tandem::Batch make_batch(const std::vector<int64_t>& indices, bool train, uint64_t) override {
    std::vector<int64_t> idx = indices;
    if (!train)
      for (auto& i : idx) i += samples_;  // the eval set follows the training set
    auto x = inputs(idx);
    auto a = torch::arange(16, torch::kFloat).reshape({2, 8}) / 16.0 - 0.4;
    return {{"x", x}, {"y", x.matmul(a.t())}};
  }

  tandem::Loss loss(torch::nn::Module& model, const tandem::Batch& b) override {
    if (model.is_training()) {
      ++calls_;
      if (calls_ == signal_at_ && (signal_rank_ < 0 || signal_rank_ == rank_)) std::raise(SIGUSR1);
    }
    auto& net = static_cast<Net&>(model);
    const bool oom = model.is_training() && oom_in_ != "eval" && oom_from_ > 0 && calls_ >= oom_from_ &&
                     (oom_rank_ < 0 || oom_rank_ == rank_) && b.at("x").size(0) > oom_above_;
    if (oom && oom_in_ == "forward") out_of_memory("forward");
    if (!model.is_training() && oom_in_ == "eval" && oom_from_ > 0 && (oom_rank_ < 0 || oom_rank_ == rank_) &&
        b.at("x").size(0) > oom_above_)
      out_of_memory("evaluation");
    auto err = (net.forward(b.at("x"), oom) - b.at("y")).pow(2).mean(1);
    auto valid = b.at("valid").to(err.dtype());
    auto l = (err * valid).sum() * loss_gain_;
    if (model.is_training() && nan_from_ > 0 && calls_ >= nan_from_) l = l * std::nan("");
    return {l, valid.sum()};
  }

 private:
  int64_t samples_, hidden_;
  double dropout_;
  bool batch_norm_;
  int64_t signal_at_, signal_rank_, nan_from_, oom_from_, oom_rank_, oom_above_;
  std::string oom_in_;
  double activation_mb_, loss_gain_;
  int rank_;
  int64_t calls_ = 0;
};

int run(tandem::World& world, int argc, char** argv) {
  tandem::Schema schema;
  tandem::add_dist_keys(schema);
  tandem::TrainKeys d;
  d.out_dir = "runs/toy";
  d.micro_batch.value = 4;
  d.lr = 1e-2;
  d.weight_decay = 0.01;
  tandem::add_train_keys(schema, d);
  schema.add("toy.samples", int64_t{128}, "training samples (the eval set has a quarter as many)");
  schema.add("toy.hidden", int64_t{32}, "hidden width");
  schema.add("toy.dropout", 0.1, "dropout, so resume must restore random streams");
  schema.add("toy.batch_norm", false, "a BatchNorm1d after fc1, for the EMA's batch-norm statistics");
  schema.add("toy.signal_at_call", int64_t{-1}, "raise SIGUSR1 at this training forward pass");
  schema.add("toy.signal_rank", int64_t{-1}, "the rank that raises it; -1: every rank");
  schema.add("toy.nan_from_call", int64_t{-1}, "losses are NaN from this forward pass on");
  schema.add("toy.oom_from_call", int64_t{-1},
             "from this training forward pass on, micro-batches of more than toy.oom_above samples run out of memory "
             "(toy.oom_in = \"eval\": any value above 0)");
  schema.add("toy.oom_rank", int64_t{-1}, "the rank that runs out of memory; -1: every rank");
  schema.add("toy.oom_above", int64_t{0}, "micro-batches of at most this many samples fit");
  schema.add("toy.oom_in", std::string("forward"),
             "where memory runs out: a training forward or backward pass, or evaluation (its batches of more than "
             "toy.oom_above samples, from the first)",
             {"forward", "backward", "eval"});
  schema.add("toy.activation_mb", -1.0, "the memory plan's activations per sample, MB; < 0: no estimate");
  schema.add("toy.loss_gain", 1.0,
             "the loss is multiplied by this: large, fp16 gradients overflow at the initial loss scale until the "
             "scaler has lowered it (Adam's steps hardly change)");
  auto cli = tandem::parse_command_line(argc, argv, schema, "toy training job for tests");
  if (cli.help) return 0;
  ToyTask task(cli.config, world.rank());
  tandem::Trainer trainer(world, cli.config, task, tandem::train_settings(cli.config));
  return trainer.run();
}

}  // namespace

int main(int argc, char** argv) { return tandem::run_program(argc, argv, run); }
