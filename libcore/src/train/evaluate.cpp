#include "tandem/train/evaluate.h"

#include <torch/torch.h>

#include "tandem/data/eval_shard.h"
#include "tandem/dist/mpi_comm.h"
#include "tandem/dist/world.h"
#include "tandem/train/autocast_guard.h"

namespace tandem {

Metrics evaluate(Task& task, torch::nn::Module& model, const EvalContext& ctx) {
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
      auto batch = task.make_batch(mb.indices, false, ctx.seed);
      batch["valid"] = valid_mask(mb.valid);
      batch = to_device(batch, ctx.device);
      EvalRows rows;
      {
        AutocastGuard autocast(ctx.precision, ctx.device.is_cuda());
        rows = task.eval_rows(model, batch);
      }
      for (auto& [key, t] : rows) {
        if (t.size(0) != static_cast<int64_t>(mb.indices.size()))
          throw std::logic_error("eval_rows: '" + key + "' has " + std::to_string(t.size(0)) +
                                 " rows for a batch of " + std::to_string(mb.indices.size()));
        pieces[key].push_back(t.detach().cpu());
      }
    }
  }
  model.train(was_training);

  // Rank r holds samples r, r + W, ...: gathering [W, L] and reading it
  // column-major restores the dataset's order, padding last.
  MpiComm host(world);
  const int64_t len = static_cast<int64_t>(shard.indices.size());
  auto valid = valid_mask(shard.valid).to(torch::kByte);
  auto all_valid = torch::empty({size, len}, valid.options());
  host.allgather(valid, all_valid);
  auto keep = all_valid.t().reshape({-1}).to(torch::kBool);

  EvalRows gathered;
  for (auto& [key, list] : pieces) {
    auto mine = torch::cat(list).contiguous();
    auto shape = mine.sizes().vec();
    shape.insert(shape.begin(), size);
    auto all = torch::empty(shape, mine.options());
    host.allgather(mine, all);
    auto ordered = all.transpose(0, 1).reshape({size * len, -1});
    auto rows = ordered.index({keep});
    shape.erase(shape.begin(), shape.begin() + 2);
    shape.insert(shape.begin(), rows.size(0));
    gathered[key] = rows.reshape(shape);
  }
  Metrics out;
  for (const auto& [k, v] : task.eval_metrics(gathered)) out["eval_" + k] = v;
  return out;
}

}  // namespace tandem
