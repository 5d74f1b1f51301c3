#include "tandem/dist/shard.h"

#include <torch/torch.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>

#include "tandem/dist/communicator.h"

namespace tandem {

Shard shard_of(const std::vector<int64_t>& numels, int world, int rank, int64_t align) {
  if (world < 1 || rank < 0 || rank >= world || align < 1)
    throw std::invalid_argument("shard_of: world " + std::to_string(world) + ", rank " + std::to_string(rank) +
                                ", align " + std::to_string(align) + " (want world >= 1, 0 <= rank < world, align >= 1)");
  Shard shard;
  int64_t end = 0;  // of the last tensor in the flat
  for (int64_t n : numels) {
    if (n < 0) throw std::invalid_argument("shard_of: a tensor of " + std::to_string(n) + " elements");
    const int64_t start = (end + align - 1) / align * align;
    shard.starts.push_back(start);
    end = start + n;
  }
  const int64_t unit = align * world;
  shard.block = (end + unit - 1) / unit * align;
  shard.padded = shard.block * world;
  const int64_t first = shard.block * rank, last = first + shard.block;
  for (size_t i = 0; i < numels.size(); ++i) {
    const int64_t start = shard.starts[i];
    const int64_t from = std::max(start, first), to = std::min(start + numels[i], last);
    if (from < to) shard.pieces.push_back({i, from - start, from - first, to - from});
  }
  return shard;
}

std::vector<std::vector<size_t>> group_params(const NamedTensors& params, double bucket_mb) {
  const double cap_bytes = bucket_mb * 1024 * 1024;
  std::vector<std::vector<size_t>> groups;
  double bytes = 0;
  const at::Tensor* previous = nullptr;
  for (size_t k = params.size(); k-- > 0;) {
    const at::Tensor& p = params[k].second;
    if (!p.requires_grad()) continue;
    if (groups.empty() || bytes >= cap_bytes || p.scalar_type() != previous->scalar_type() ||
        p.device() != previous->device()) {
      groups.emplace_back();
      bytes = 0;
    }
    groups.back().push_back(k);
    bytes += static_cast<double>(p.numel() * p.element_size());
    previous = &p;
  }
  return groups;
}

at::Tensor memory_order(const at::Tensor& dense) {
  if (!dense.is_non_overlapping_and_dense())
    throw std::logic_error("memory_order: the tensor is not one dense block of memory");
  return dense.as_strided({dense.numel()}, {1});
}

ParamShards::ParamShards(Communicator& comm, const NamedTensors& params, double bucket_mb, bool gradients,
                         int64_t align)
    : comm_(comm), align_(align), params_(params), owned_(params.size()) {
  if (align < 1 || align % kAlign != 0)
    throw std::invalid_argument("ParamShards: alignment " + std::to_string(align) + " is not a multiple of " +
                                std::to_string(kAlign));
  for (auto& indices : group_params(params, bucket_mb)) {
    ShardGroup group;
    std::vector<int64_t> numels;
    for (size_t i : indices) numels.push_back(params[i].second.numel());
    group.shard = shard_of(numels, comm.size(), comm.rank(), align);
    group.params = std::move(indices);
    for (const ShardPiece& piece : group.shard.pieces) {
      auto& runs = owned_[group.params[piece.tensor]];
      int64_t before = 0;
      for (const ElementRun& run : runs) before += run.length;
      group.local_at.push_back(before);
      runs.push_back({piece.offset, piece.length, groups_.size(), piece.at});
    }
    if (gradients)
      gradients_.push_back(
          torch::zeros({group.shard.block}, params[group.params.front()].second.options().dtype(at::kFloat)));
    groups_.push_back(std::move(group));
  }
}

int64_t ParamShards::owned_elements() const {
  int64_t n = 0;
  for (const auto& runs : owned_)
    for (const ElementRun& run : runs) n += run.length;
  return n;
}

void ParamShards::take_gradients() const {
  if (!holds_gradients()) throw std::logic_error("ParamShards::take_gradients: the shards hold no gradients");
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    const at::Tensor& param = params_[i].second;
    const at::Tensor grad = param.grad();
    if (grad.defined()) {
      // In the parameter's memory order, as its runs count elements.
      const at::Tensor laid_out = grad.strides() == param.strides() ? grad : at::empty_like(param).copy_(grad);
      const at::Tensor flat = memory_order(laid_out);
      for (const ElementRun& run : owned_[i]) gradient(run).add_(flat.narrow(0, run.offset, run.length));
    }
    param.mutable_grad().reset();
  }
}

at::Tensor ParamShards::block_of(const ShardGroup& group, const std::vector<at::Tensor>* local, int64_t per) const {
  at::TensorOptions options = params_[group.params.front()].second.options();
  if (local) {
    const auto wanted = std::find_if(group.params.begin(), group.params.end(),
                                     [local](size_t i) { return (*local)[i].defined(); });
    if (wanted == group.params.end()) return {};
    options = (*local)[*wanted].options();
  }
  // Zeros, not garbage, in the padding: it travels too.
  at::Tensor block = torch::zeros({group.shard.block / per}, options);
  for (size_t k = 0; k < group.shard.pieces.size(); ++k) {
    const ShardPiece& piece = group.shard.pieces[k];
    const size_t i = group.params[piece.tensor];
    if (local && !(*local)[i].defined()) continue;
    // A piece starts at a multiple of `per` and, but at its tensor's end,
    // spans whole multiples of it.
    const int64_t length = (piece.length + per - 1) / per;
    const at::Tensor source = local ? (*local)[i].narrow(0, group.local_at[k] / per, length)
                                    : memory_order(params_[i].second).narrow(0, piece.offset, piece.length);
    block.narrow(0, piece.at / per, length).copy_(source);
  }
  return block;
}

void ParamShards::all_gather() const {
  // One rank's runs are the whole parameters, which it has just written.
  if (comm_.size() == 1) return;
  torch::NoGradGuard no_grad;
  struct InFlight {
    const ShardGroup* group;
    at::Tensor flat;
    WorkHandle work;
  };
  auto copy_out = [this](InFlight& f) {
    f.work->wait();
    for (size_t j = 0; j < f.group->params.size(); ++j) {
      const at::Tensor& param = params_[f.group->params[j]].second;
      memory_order(param).copy_(f.flat.narrow(0, f.group->shard.starts[j], param.numel()));
      param.unsafeGetTensorImpl()->bump_version();
    }
  };
  std::optional<InFlight> behind;
  for (const ShardGroup& group : groups_) {
    InFlight ahead{&group, torch::empty({group.shard.padded}, params_[group.params.front()].second.options()), {}};
    ahead.work = comm_.allgather_async(block_of(group, nullptr), ahead.flat);
    if (behind) copy_out(*behind);
    behind = std::move(ahead);
  }
  if (behind) copy_out(*behind);
}

std::vector<at::Tensor> ParamShards::gather(const std::vector<at::Tensor>& local) const { return gather_per(local, 1); }

std::vector<at::Tensor> ParamShards::gather_blocks(const std::vector<at::Tensor>& local, int64_t block) const {
  if (block < 1 || align_ % block != 0)
    throw std::logic_error("ParamShards::gather_blocks: blocks of " + std::to_string(block) +
                           " do not divide the alignment " + std::to_string(align_));
  return gather_per(local, block);
}

std::vector<at::Tensor> ParamShards::gather_per(const std::vector<at::Tensor>& local, int64_t per) const {
  if (local.size() != params_.size())
    throw std::logic_error("ParamShards::gather: " + std::to_string(local.size()) + " tensors for " +
                           std::to_string(params_.size()) + " parameters");
  torch::NoGradGuard no_grad;
  const bool keep = comm_.rank() == 0;
  std::vector<at::Tensor> whole(keep ? params_.size() : 0);
  for (const ShardGroup& group : groups_) {
    const at::Tensor block = block_of(group, &local, per);
    if (!block.defined()) continue;  // on every rank alike
    at::Tensor flat = torch::empty({group.shard.padded / per}, block.options());
    comm_.allgather(block, flat);
    if (!keep) continue;
    for (size_t j = 0; j < group.params.size(); ++j) {
      const size_t i = group.params[j];
      if (!local[i].defined()) continue;
      const at::Tensor& param = params_[i].second;
      if (per > 1) {
        const int64_t count = (param.numel() + per - 1) / per;
        whole[i] = at::empty({count}, block.options().device(at::kCPU))
                       .copy_(flat.narrow(0, group.shard.starts[j] / per, count));
        continue;
      }
      at::Tensor out = at::empty_strided(param.sizes(), param.strides(), block.options().device(at::kCPU));
      memory_order(out).copy_(flat.narrow(0, group.shard.starts[j], param.numel()));
      whole[i] = out;
    }
  }
  return whole;
}

}  // namespace tandem
