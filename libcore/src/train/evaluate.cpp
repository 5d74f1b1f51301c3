#include "tandem/train/evaluate.h"

#include <torch/torch.h>

#include "tandem/data/eval_shard.h"
#include "tandem/dist/gather_in_order.h"
#include "tandem/dist/world.h"
#include "tandem/train/autocast_guard.h"

namespace tandem {

EvalRows gather_eval_rows(Task& task, torch::nn::Module& model, const EvalContext& ctx) {
  const int64_t n = task.eval_size();
  if (n == 0) return {};
  World& world = *ctx.world;
  const int size = world.size();
  const auto shard = eval_shard(n, size, world.rank());

  std::map<std::string, std::vector<at::Tensor>> pieces;
  const bool was_training = model.is_training();
  model.eval();
  {
    torch::NoGradGuard no_grad;
    for (const auto& mb : shard.micro_batches(ctx.micro_batch)) {
      auto batch = to_device(make_loop_batch(task, mb.indices, mb.valid, false, ctx.seed), ctx.device);
      EvalRows rows;
      {
        AutocastGuard autocast(ctx.precision, ctx.device.is_cuda());
        rows = task.eval_rows(model, batch);
      }
      for (auto& [key, t] : rows) {
        if (t.size(0) != static_cast<int64_t>(mb.indices.size()))
          throw std::logic_error("eval_rows: '" + key + "' has " + std::to_string(t.size(0)) + " rows for a batch of " +
                                 std::to_string(mb.indices.size()));
        pieces[key].push_back(t.detach().cpu());
      }
    }
  }
  model.train(was_training);

  EvalRows gathered;
  for (auto& [key, list] : pieces) gathered[key] = gather_in_order(world, n, torch::cat(list));
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
