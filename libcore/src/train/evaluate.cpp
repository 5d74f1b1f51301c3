#include "tandem/train/evaluate.h"

#include <torch/torch.h>

#include <vector>

#include "tandem/data/eval_shard.h"
#include "tandem/data/longest_first.h"
#include "tandem/data/loader.h"
#include "tandem/dist/gather_in_order.h"
#include "tandem/dist/world.h"
#include "tandem/train/autocast_guard.h"

namespace tandem {

EvalRows gather_eval_rows(Task& task, torch::nn::Module& model, const EvalContext& ctx) {
  const int64_t n = task.eval_size();
  if (n == 0) return {};
  World& world = *ctx.world;
  const int size = world.size();
  auto shard = eval_shard(n, size, world.rank());
  // By length: slot order[k] of the shard is evaluated k-th.
  std::vector<int64_t> order;
  if (const auto lengths = task.group_lengths(/*train=*/false)) {
    order = longest_first(static_cast<int64_t>(shard.indices.size()),
                          [&](int64_t k) { return (*lengths)[shard.indices[k]]; });
    const EvalShard in_order = shard;
    for (size_t k = 0; k < order.size(); ++k) {
      shard.indices[k] = in_order.indices[order[k]];
      shard.valid[k] = in_order.valid[order[k]];
    }
  }

  // As in training: batches made and pinned on a thread, each copied to the
  // GPU on a stream of its own while the one before computes (DeviceFeed),
  // so the GPU never waits for a decode or a copy in. The rows stay on the
  // device until the last batch: one copy to the host, then one gather.
  const std::vector<MicroBatch> mbs = shard.micro_batches(ctx.micro_batch);
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
  {
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
  }
  model.train(was_training);

  EvalRows gathered;
  for (auto& [key, list] : pieces) {
    at::Tensor mine = torch::cat(list).cpu();
    // Sorted by length: each row back to its slot.
    if (!order.empty()) mine = torch::empty_like(mine).index_copy_(0, torch::tensor(order, torch::kLong), mine);
    gathered[key] = gather_in_order(world, n, mine);
  }
  return gathered;
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
