#include "tandem/dist/grad_sync.h"

#include <torch/torch.h>

#include <chrono>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "tandem/dist/communicator.h"
#include "tandem/dist/shard.h"

#if TANDEM_TORCH_HAS_CUDA
#include <ATen/cuda/CUDAEvent.h>
#endif

namespace tandem {

struct GradSync::Impl {
  struct Slot {
    std::string name;
    at::Tensor param;
    int64_t bucket = 0;
    int64_t offset = 0;
    unsigned hook = 0;
    torch::autograd::PostAccumulateGradHook* post = nullptr;  // sharded: the hook GradSync installed
    bool ready = false;
    // Sharded: the gradient is in the bucket's flat and .grad dropped; a
    // ready slot not yet filled keeps it in .grad until its bucket comes
    // near enough to launching.
    bool filled = false;
  };
  struct Bucket {
    at::Tensor flat;
    std::vector<size_t> slots;
    size_t pending = 0;
    WorkHandle work;
    // Sharded: the flat's elements (it exists only from its first gradient
    // until its reduce-scatter is drained), the rank's block of the
    // reduction, and the gradient block it is added to (ParamShards').
    int64_t numel = 0;
    at::Tensor part, block;
  };

  Communicator& comm;
  bool overlap;
  const ParamShards* shards;
  bool syncing = false;
  std::vector<Slot> slots;
  std::vector<Bucket> buckets;
  std::deque<size_t> in_flight;
  size_t next_launch = 0;
  std::mutex mu;
  double host_wait_ms = 0;
#if TANDEM_TORCH_HAS_CUDA
  // Recorded on the compute stream around finish()'s waits, with timing on.
  std::optional<at::cuda::CUDAEvent> wait_start, wait_end;
#endif

  Impl(Communicator& c, bool o, const ParamShards* sh) : comm(c), overlap(o), shards(sh) {}

  // The slot holds the gradient in the parameter's own memory order (a
  // channels-last convolution weight's too), so filling it from autograd's
  // gradient and copying it back are straight copies rather than transposes.
  // Every rank lays its parameters out alike, so the same bytes meet in the
  // all-reduce.
  at::Tensor view(const Slot& s) {
    auto& b = buckets[s.bucket];
    // Zeros: the padding and the gaps between tensors are reduced too, and
    // the gradient's norm reads them.
    if (!b.flat.defined()) b.flat = torch::zeros({b.numel}, b.block.options());
    const at::Tensor run = b.flat.narrow(0, s.offset, s.param.numel());
    return s.param.is_non_overlapping_and_dense() ? run.as_strided(s.param.sizes(), s.param.strides())
                                                  : run.view(s.param.sizes());
  }

  // Fills the slot with the parameter's full accumulated gradient: what
  // earlier micro-steps left in .grad plus this backward's contribution, which
  // autograd adds to .grad only after the hook returns.
  void fill(Slot& s, const at::Tensor* incoming) {
    auto v = view(s);
    const auto& acc = s.param.grad();
    if (incoming && acc.defined())
      v.copy_(acc + *incoming);
    else if (incoming)
      v.copy_(*incoming);
    else if (acc.defined())
      v.copy_(acc);
    else
      v.zero_();
    s.ready = true;
  }

  // Sharded: moves the slot's gradient (or zeros) from .grad into its
  // bucket's flat, which this may allocate.
  void move_in(Slot& s) {
    fill(s, nullptr);
    s.param.mutable_grad().reset();
    s.filled = true;
  }
  // Sharded: the buckets gradients are moved into as they come, the next
  // kBucketsFilling to launch.
  bool in_window(int64_t bucket) const {
    return bucket < static_cast<int64_t>(next_launch) + GradSync::kBucketsFilling;
  }

  // A bucket counts as launched once its collective is under way: one whose
  // launch threw is launched again by finish() or abandon(), not waited for.
  // Sharded, more than `in_flight_limit` reduce-scatters under way wait for
  // the oldest to be drained (`keep`: into the gradient blocks).
  void launch_ready(bool keep = true, size_t in_flight_limit = GradSync::kBucketsInFlight) {
    while (next_launch < buckets.size() && buckets[next_launch].pending == 0) {
      auto& b = buckets[next_launch];
      if (!shards) {
        b.work = comm.allreduce_async(b.flat, ReduceOp::Avg);
        ++next_launch;
        continue;
      }
      for (size_t k : b.slots)
        if (!slots[k].filled) move_in(slots[k]);
      b.part = torch::empty({b.block.numel()}, b.block.options());
      b.work = comm.reduce_scatter_async(b.flat, b.part, ReduceOp::Avg);
      in_flight.push_back(next_launch++);
      while (in_flight.size() > in_flight_limit) drain(keep);
      // The window moved on: gradients that came early leave .grad.
      for (size_t i = next_launch; i < buckets.size() && in_window(static_cast<int64_t>(i)); ++i)
        for (size_t k : buckets[i].slots)
          if (slots[k].ready && !slots[k].filled) move_in(slots[k]);
    }
  }

  // Sharded: waits for the oldest bucket in flight and adds its part to the
  // gradient block (`keep`; a dropped step keeps nothing). Dropping the work
  // frees its flat and part, which it holds until then.
  void drain(bool keep) {
    auto& b = buckets[in_flight.front()];
    in_flight.pop_front();
    b.work->wait();
    if (keep) b.block.add_(b.part);
    b.work.reset();
    b.flat.reset();
    b.part.reset();
  }

  void reset(bool sync) {
    syncing = sync;
    next_launch = 0;
    for (auto& s : slots) s.ready = s.filled = false;
    for (auto& b : buckets) {
      b.pending = b.slots.size();
      b.work.reset();
    }
  }

  // Unsharded, before autograd accumulates `grad` into .grad; sharded
  // (`grad` null), after: .grad is then moved into its bucket and dropped,
  // unless the bucket is further from launching than the window, so that
  // no more than the window's and the travelling buckets' flats exist.
  void on_grad(size_t index, const at::Tensor* grad) {
    std::lock_guard<std::mutex> lock(mu);
    if (!syncing) return;
    auto& s = slots[index];
    if (s.ready)
      throw std::logic_error("GradSync: parameter " + s.name + " received two gradients in one backward pass");
    if (!shards)
      fill(s, grad);
    else if (in_window(s.bucket))
      move_in(s);
    else
      s.ready = true;
    if (--buckets[s.bucket].pending == 0 && overlap) launch_ready();
  }

  // Parameters that got no gradient still take part, so that every rank
  // reduces the same buckets: they bring zeros (or earlier micro-steps'
  // grads). Sharded, their flats are made only as each bucket launches.
  void ready_the_rest(bool zeros) {
    for (auto& b : buckets) {
      for (size_t k : b.slots) {
        if (slots[k].ready) continue;
        if (!shards && zeros)
          view(slots[k]).zero_();
        else if (!shards)
          fill(slots[k], nullptr);
        slots[k].ready = true;
        --b.pending;
      }
    }
  }

  // Every launched bucket done: drained into the gradient blocks when
  // sharded (`keep`), else waited for.
  void wait_all(bool keep) {
    if (shards) {
      while (!in_flight.empty()) drain(keep);
      return;
    }
    for (auto& b : buckets) b.work->wait();
  }
};

namespace {

// Autograd's hook after a parameter's gradient is accumulated into .grad
// (Tensor.register_post_accumulate_grad_hook in Python).
struct AfterAccumulate : torch::autograd::PostAccumulateGradHook {
  explicit AfterAccumulate(std::function<void()> f) : fn(std::move(f)) {}
  void operator()(const torch::autograd::Variable&) override { fn(); }
  std::function<void()> fn;
};

}  // namespace

GradSync::GradSync(Communicator& comm, const NamedTensors& params, double bucket_mb, bool overlap,
                   const ParamShards* shards)
    : impl_(std::make_unique<Impl>(comm, overlap, shards)) {
  auto& im = *impl_;
  if (shards && !shards->holds_gradients())
    throw std::logic_error("GradSync: sharding gradients over ParamShards that hold none");
  // Sharded, the buckets are the shard's groups, laid out as it lays them.
  const auto groups = shards ? std::vector<std::vector<size_t>>() : group_params(params, bucket_mb);
  const size_t count = shards ? shards->groups().size() : groups.size();
  for (size_t g = 0; g < count; ++g) {
    const auto& members = shards ? shards->groups()[g].params : groups[g];
    im.buckets.push_back({});
    auto& b = im.buckets.back();
    int64_t offset = 0;
    for (size_t j = 0; j < members.size(); ++j) {
      Impl::Slot s;
      s.name = params.at(members[j]).first;
      s.param = params[members[j]].second;
      s.bucket = static_cast<int64_t>(g);
      s.offset = shards ? shards->groups()[g].shard.starts[j] : offset;
      offset += s.param.numel();
      b.slots.push_back(im.slots.size());
      im.slots.push_back(s);
    }
    if (shards) {
      b.numel = shards->groups()[g].shard.padded;
      b.block = shards->gradients()[g];
    } else {
      b.flat = torch::zeros({offset}, params[members.front()].second.options());
    }
  }
  for (size_t i = 0; i < im.slots.size(); ++i) {
    Impl* raw = impl_.get();
    auto& s = im.slots[i];
    if (!shards) {
      s.hook = s.param.register_hook([raw, i](const at::Tensor& grad) { raw->on_grad(i, &grad); });
      continue;
    }
    // A tensor has one such hook (Python's register_post_accumulate_grad_hook
    // uses it too): taking one that is set would silently disable its owner.
    if (torch::autograd::impl::post_acc_grad_hooks(s.param))
      throw std::logic_error("GradSync: parameter " + s.name + " already has a post-accumulate-grad hook");
    auto hook = std::make_unique<AfterAccumulate>([raw, i] { raw->on_grad(i, nullptr); });
    s.post = hook.get();
    torch::autograd::impl::set_post_acc_grad_hooks(s.param, std::move(hook));
  }
}

GradSync::~GradSync() {
  for (auto& s : impl_->slots) {
    if (!impl_->shards) {
      s.param.remove_hook(s.hook);
      continue;
    }
    auto& hook = torch::autograd::impl::post_acc_grad_hooks(s.param);
    if (hook.get() == s.post) hook.reset();
  }
}

void GradSync::prepare(bool sync) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->reset(sync);
}

void GradSync::abandon() {
  auto& im = *impl_;
  {
    std::lock_guard<std::mutex> lock(im.mu);
    if (!im.syncing) im.reset(true);
    torch::NoGradGuard no_grad;
    im.ready_the_rest(/*zeros=*/true);
    // Sharded, one bucket's flat at a time: this rank just ran out of memory.
    im.launch_ready(/*keep=*/false, /*in_flight_limit=*/0);
    im.syncing = false;
  }
  im.wait_all(false);
}

void GradSync::finish() {
  auto& im = *impl_;
  {
    std::lock_guard<std::mutex> lock(im.mu);
    if (!im.syncing) throw std::logic_error("GradSync::finish() after prepare(false)");
    im.ready_the_rest(/*zeros=*/false);
    im.launch_ready();
    im.syncing = false;
  }
  const auto t0 = std::chrono::steady_clock::now();
#if TANDEM_TORCH_HAS_CUDA
  const bool cuda = !im.slots.empty() && im.slots.front().param.is_cuda();
  if (cuda) {
    im.wait_start.emplace(cudaEventDefault);
    im.wait_end.emplace(cudaEventDefault);
    im.wait_start->record();
  }
#endif
  im.wait_all(true);
#if TANDEM_TORCH_HAS_CUDA
  if (cuda) im.wait_end->record();
#endif
  im.host_wait_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (im.shards) return;
  torch::NoGradGuard no_grad;
  for (auto& s : im.slots) {
    auto v = im.view(s);
    if (s.param.grad().defined())
      s.param.mutable_grad().copy_(v);
    else
      s.param.mutable_grad() = v.clone();
  }
}

double GradSync::last_wait_ms() const {
#if TANDEM_TORCH_HAS_CUDA
  if (impl_->wait_end) {
    impl_->wait_end->synchronize();
    return impl_->wait_start->elapsed_time(*impl_->wait_end);
  }
#endif
  return impl_->host_wait_ms;
}

int64_t GradSync::num_buckets() const { return static_cast<int64_t>(impl_->buckets.size()); }

std::vector<int64_t> GradSync::bucket_sizes() const {
  std::vector<int64_t> out;
  for (const auto& b : impl_->buckets) out.push_back(impl_->shards ? b.numel : b.flat.numel());
  return out;
}

void broadcast_from_rank0(Communicator& comm, const std::vector<at::Tensor>& tensors) {
  if (comm.size() == 1) return;
  std::vector<WorkHandle> works;
  torch::NoGradGuard no_grad;
  for (const auto& t : tensors) works.push_back(comm.broadcast_async(t, 0));
  for (auto& w : works) w->wait();
}

}  // namespace tandem
