#include "tandem/train/evaluate.h"

#include <torch/torch.h>

#include <optional>
#include <vector>

#include "tandem/data/eval_shard.h"
#include "tandem/data/longest_first.h"
#include "tandem/data/loader.h"
#include "tandem/dist/gather_in_order.h"
#include "tandem/dist/world.h"
#include "tandem/obs/log.h"
#include "tandem/obs/tensor_memory.h"
#include "tandem/train/autocast_guard.h"

namespace tandem {

namespace {

// This rank's shard of the evaluation set, by length when the task gives
// lengths: slot order[k] of the shard is evaluated k-th (order empty: as
// the shard comes).
EvalShard ordered_shard(Task& task, const World& world, std::vector<int64_t>& order) {
  EvalShard shard = eval_shard(task.eval_size(), world.size(), world.rank());
  const auto lengths = task.group_lengths(/*train=*/false);
  if (!lengths) return shard;
  order = longest_first(static_cast<int64_t>(shard.indices.size()),
                        [&](int64_t k) { return (*lengths)[shard.indices[k]]; });
  const EvalShard in_order = shard;
  for (size_t k = 0; k < order.size(); ++k) {
    shard.indices[k] = in_order.indices[order[k]];
    shard.valid[k] = in_order.valid[order[k]];
  }
  return shard;
}

// One pass over this rank's shard in micro-batches of `micro_batch`; nullopt
// when any rank ran out of memory in it.
std::optional<EvalRows> try_eval_rows(Task& task, torch::nn::Module& model, const EvalContext& ctx,
                                      int64_t micro_batch) {
  World& world = *ctx.world;
  std::vector<int64_t> order;
  const EvalShard shard = ordered_shard(task, world, order);

  // As in training: batches made and pinned on a thread, each copied to the
  // GPU on a stream of its own while the one before computes (DeviceFeed),
  // so the GPU never waits for a decode or a copy in. The rows stay on the
  // device until the last batch: one copy to the host, then one gather.
  const std::vector<MicroBatch> mbs = shard.micro_batches(micro_batch);
  Loader loader(pinned_for(
                    [&](int64_t i) {
                      const MicroBatch& mb = mbs[static_cast<size_t>(i)];
                      return make_loop_batch(task, mb, false, ctx.seed);
                    },
                    ctx.device),
                0, static_cast<int64_t>(mbs.size()), /*depth=*/2);
  DeviceFeed feed(loader, ctx.device);
  std::map<std::string, std::vector<at::Tensor>> pieces;
  const bool was_training = model.is_training();
  model.eval();
  bool out_of_memory = false;
  try {
    torch::NoGradGuard no_grad;
    for (const MicroBatch& mb : mbs) {
      const Batch batch = feed.next().device;
      EvalRows rows;
      {
        AutocastGuard autocast(ctx.precision, ctx.device.is_cuda());
        rows = task.eval_rows(model, batch);
      }
      for (auto& [key, t] : rows) {
        if (t.size(0) != static_cast<int64_t>(mb.indices.size()))
          throw std::logic_error("eval_rows: '" + key + "' has " + std::to_string(t.size(0)) + " rows for a batch of " +
                                 std::to_string(mb.indices.size()));
        pieces[key].push_back(t.detach());
      }
    }
  } catch (const c10::Error& e) {
    if (!is_out_of_memory(e)) throw;
    log::warn("evaluation ran out of memory at micro-batch ", micro_batch, ": ", e.what_without_backtrace());
    out_of_memory = true;
  }
  model.train(was_training);
  if (world.any(out_of_memory)) {
    pieces.clear();
    release_cached_memory(ctx.device);
    return std::nullopt;
  }

  EvalRows gathered;
  for (auto& [key, list] : pieces) {
    at::Tensor mine = torch::cat(list).cpu();
    // Sorted by length: each row back to its slot.
    if (!order.empty()) mine = torch::empty_like(mine).index_copy_(0, torch::tensor(order, torch::kLong), mine);
    gathered[key] = gather_in_order(world, task.eval_size(), mine);
  }
  return gathered;
}

}  // namespace

EvalRows gather_eval_rows(Task& task, torch::nn::Module& model, const EvalContext& ctx) {
  if (task.eval_size() == 0) return {};
  for (int64_t micro_batch = ctx.micro_batch;; micro_batch = std::max<int64_t>(micro_batch / 2, 1)) {
    std::optional<EvalRows> rows = try_eval_rows(task, model, ctx, micro_batch);
    if (rows) {
      if (ctx.backed_off_to && micro_batch != ctx.micro_batch) *ctx.backed_off_to = micro_batch;
      return std::move(*rows);
    }
    if (micro_batch == 1)
      throw std::runtime_error(
          "evaluation ran out of memory at micro-batch 1: it needs a device with more memory, "
          "or a smaller model or input");
    if (ctx.world->rank() == 0)
      log::warn("evaluation ran out of memory at micro-batch ", micro_batch, " on a rank: evaluating again at ",
                std::max<int64_t>(micro_batch / 2, 1));
  }
}

Metrics evaluate(Task& task, torch::nn::Module& model, const EvalContext& ctx) {
  if (task.eval_size() == 0) return {};
  Metrics out;
  for (const auto& [k, v] : task.eval_metrics(gather_eval_rows(task, model, ctx))) out[kEvalPrefix + k] = v;
  for (const auto& [k, v] : task.collective_metrics(model, ctx))
    if (!out.emplace(kEvalPrefix + k, v).second)
      throw std::logic_error("the task's collective_metrics and eval_metrics both give '" + k + "'");
  return out;
}

}  // namespace tandem
