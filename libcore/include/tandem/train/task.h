#pragma once
// What an app tells the shared training loop: its model, its data, its loss
// and its metrics. Everything else (ranks, precision, accumulation, schedules,
// checkpoints, resume, preemption, logging) is the Trainer's.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tandem/data/loader.h"
#include "tandem/data/micro_batch.h"
#include "tandem/train/activations.h"

namespace torch::nn {
class Module;
}

namespace tandem {

// Per-sample results of evaluation: every tensor has one row per sample.
using EvalRows = std::map<std::string, at::Tensor>;
using Metrics = std::map<std::string, double>;

class Task;
struct EvalContext;

// A loss as the trainer takes it: a sum over the batch's valid samples and
// the weight that sum is over (summarize: summary tokens; carotid: the class
// weights of its samples; vavae: samples). A step minimises the sums of all
// its micro-batches on all ranks over their weights summed: the mean over the
// whole global batch, the same objective however micro_batch, accumulation
// and world size split it. A mean computed within each micro-batch and then
// averaged would weigh a token of a micro-batch of short summaries more than
// one of long summaries (HF transformers #34191).
//
// Both are scalars on the model's device; `sum` is differentiable, float32
// or wider, and `weight` is not. A term that is not a mean over samples
// (vavae's VF distance matrix over pairs of a micro-batch) enters as its
// value times the micro-batch's weight, so it is averaged over micro-batches
// in proportion to their weight, and its meaning still depends on the split.
struct Loss {
  at::Tensor sum;
  at::Tensor weight;

  // Of a mean over `count` samples of equal weight (count > 0).
  static Loss of_mean(const at::Tensor& mean, int64_t count);
  // sum / weight; 0 where the weight is 0 (a batch of padding only).
  at::Tensor mean() const;
};

// The batch of a micro-batch's samples as the training loop and evaluation
// give it to loss() and eval_rows(), on the host: make_batch's tensors (or
// make_packed_batch's, when the micro-batch is packed), "valid" (one flag
// per sample, or per packed sequence: 0 marks padding) and complete_batch's
// additions.
Batch make_loop_batch(Task& task, const MicroBatch& micro_batch, bool train, uint64_t seed);

class Task {
 public:
  virtual ~Task() = default;

  // A freshly initialised model on the CPU. Every rank builds it from the same
  // seed, and rank 0's weights are broadcast anyway.
  virtual std::shared_ptr<torch::nn::Module> build_model() = 0;
  virtual int64_t train_size() const = 0;
  virtual int64_t eval_size() const { return 0; }

  // Host tensors for these samples. Runs on a loader thread while the model
  // trains or evaluates, training's and evaluation's possibly at once (the
  // training loader makes batches ahead while an evaluation runs): it must
  // only read the task's data, must not touch the model or LibTorch's
  // global generator, and
  // takes any randomness (augmentation) from `seed`, which depends on the run's
  // seed and the epoch only, so a sample is augmented alike on any world size.
  virtual Batch make_batch(const std::vector<int64_t>& indices, bool train, uint64_t seed) = 0;
  // Tokens a packed sequence holds when training packs samples end to end
  // (SamplerOptions::pack_tokens; summarize under data.batching = "packed"):
  // each sample must then be at most this long (group_lengths(true)). 0 (the
  // default): no packing.
  virtual int64_t pack_tokens() const { return 0; }
  // Under packing, make_batch's counterpart: one row per packed sequence,
  // micro_batch.sequence saying which samples lie in which, in order, and
  // every sample computing what it would alone. The loop adds "valid" per
  // sequence. The default throws std::logic_error.
  virtual Batch make_packed_batch(const MicroBatch& micro_batch, bool train, uint64_t seed);

  // What the loss needs that follows from make_batch's tensors and
  // batch["valid"] together, added on the host before the batch goes to the
  // device: above all the indices a boolean mask would otherwise give on the
  // device (a nonzero, which makes the host wait for the device). Runs where
  // make_batch does (make_loop_batch). The default adds nothing.
  virtual void complete_batch(Batch& batch) const { (void)batch; }

  // The loss of the batch's valid samples as a sum and its weight (see
  // Loss). The trainer adds batch["valid"] (bool, one per sample; false marks
  // padding) and runs this under autocast.
  virtual Loss loss(torch::nn::Module& model, const Batch& batch) = 0;

  // Evaluation, per sample, padding included (the trainer drops it). Rows
  // stay where the model computed them: evaluation copies them to the host
  // once, after its last batch, so a GPU never waits for the host between
  // batches (gather_eval_rows). The default shares the batch's loss sum and weight out equally among its
  // valid samples, as rows "loss_sum" and "loss_weight".
  virtual EvalRows eval_rows(torch::nn::Module& model, const Batch& batch);
  // Metrics from every rank's rows, in dataset order, padding removed. The
  // default is {"loss": the rows' loss sums over their weights}: the
  // evaluation set's loss, weighted as in training, however it is batched;
  // or, for an eval_rows that gives each sample its own "loss" (samples of
  // equal weight), their mean.
  virtual Metrics eval_metrics(const EvalRows& rows);
  // Metrics that are no function of per-sample rows of one forward pass
  // (summarize: the ROUGE of summaries generated token by token), computed
  // by the task itself at every evaluation, after eval_metrics, with the
  // judged weights in `model`. Every rank calls it together, so it may use
  // collectives on ctx.world, and it must give every rank the same values:
  // they decide the best model and early stopping. Not under autocast or
  // NoGradGuard: the task sets up what it runs. The default gives none.
  virtual Metrics collective_metrics(torch::nn::Module& model, const EvalContext& ctx);
  // The names eval_metrics and collective_metrics give, known before
  // training, so that a misspelt train.best_metric stops the run at the door
  // rather than at the first evaluation; the Trainer holds every evaluation
  // to them. The default is the default eval_metrics' {"loss"}: a task
  // overriding either overrides this.
  virtual std::vector<std::string> metric_names() const;
  // Which way a metric of metric_names() is better: "max" (larger), "min"
  // (smaller), or "" where the task does not say (a count). A
  // train.best_mode against it stops the run at the door, since it would
  // keep the worst model and stop while the metric still improves. The
  // default says "min" for "loss" alone.
  virtual std::string metric_mode(const std::string& name) const;

  // Tokens in a batch's valid samples (its host tensors, before the copy to
  // the device), for tokens_per_s; 0 when the task does not count tokens.
  virtual int64_t tokens_in(const Batch& batch) const { return 0; }
  // Token positions the forward pass computes for a batch, padding and
  // padding samples included (summarize: rows x the longest row), for
  // tokens_computed and pad_fraction; 0 when the task does not count tokens.
  virtual int64_t tokens_computed_in(const Batch& batch) const { return 0; }
  // Training FLOPs (forward + backward) of the work a batch's valid samples
  // need, not of padding, for flops_per_s and MFU; 0 if unknown. Host tensors.
  virtual double flops_in(const Batch& batch) const { return 0; }
  // What the backward of one micro-batch holds at its start and at its end
  // (activations.h, memory_plan.h), for the largest inputs the task makes (its
  // longest sequence, its image size); {-1, 0} when the task cannot say.
  virtual Activations activation_bytes(const ActivationQuery& query) const { return {}; }
  // The training (`train`) or evaluation samples' lengths when batches are
  // to be made by length: training cuts each global batch into micro-batches
  // by length (SamplerOptions::lengths: the same step, less padding),
  // evaluation batches each rank's share longest first (the same rows, back
  // in dataset order). Null (the default): batches as the samples come.
  virtual std::shared_ptr<const std::vector<int64_t>> group_lengths(bool train) const { return nullptr; }
  // What happens to the epoch's last, partial global batch: dropped (true), or
  // filled up with samples marked invalid in batch["valid"], identically on
  // every rank, for tasks whose loss honours that mask.
  virtual bool drop_last() const { return true; }
  // Whether every batch has the same shapes (images of one size), so that on
  // a GPU cuDNN may time its algorithms once and keep the fastest
  // (set_gpu_math).
  virtual bool fixed_shapes() const { return false; }
  // Weight decay for a parameter: matrices yes, biases and norms no.
  virtual bool decays(const std::string& name, const at::Tensor& param) const;
  // Where the model's frozen parameters (requires_grad false) come from, for
  // a task that rebuilds them in build_model rather than have checkpoints
  // carry them: summarize's LoRA names its base by the checksum of the
  // base's weights file (io/file_checksum.h). When it is not empty:
  // - checkpoints and model files hold the trained state alone (checkpoint.h:
  //   trained_state) and this string as their state "frozen_base", and a
  //   resume from a file that records another, or none, stops with a
  //   UsageError before any step;
  // - the frozen matrices (every frozen parameter of two or more dimensions)
  //   are kept in the run's compute precision when that is fp16 or bf16:
  //   nothing updates them, and autocast would make a half copy of each for
  //   every product anyway. Norms and biases stay fp32.
  // Called once, after build_model. Empty (the default): every parameter is
  // checkpointed, in fp32.
  virtual std::string frozen_base() const { return ""; }
  // Under train.master_weights = "sharded" the trained matrices work in the
  // compute precision (precision.h, works_in_half), but the embeddings and
  // those named here: the weights of layers the model runs with autocast off
  // (AutocastOff), whose fp32 inputs must meet fp32 weights. The default
  // names none.
  virtual std::vector<std::string> fp32_weights(torch::nn::Module& model) const {
    (void)model;
    return {};
  }
};

}  // namespace tandem
