#include "tandem/dist/nccl_comm.h"

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <torch/torch.h>

#include <atomic>
#include <future>
#include <mutex>
#include <stdexcept>

#include "describe.h"
#include "future_work.h"
#include "tandem/dist/world.h"

#if TANDEM_TORCH_HAS_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

namespace tandem {
namespace {

void cuda_check(cudaError_t rc, const char* call) {
  if (rc != cudaSuccess) throw std::runtime_error(std::string(call) + " failed: " + cudaGetErrorString(rc));
}

void nccl_check(ncclResult_t rc, const char* call) {
  if (rc != ncclSuccess) throw std::runtime_error(std::string(call) + " failed: " + ncclGetErrorString(rc));
}

// The stream LibTorch computes on for `device`. A CPU-only LibTorch never
// launches work, so the legacy default stream is the only one to order after.
cudaStream_t compute_stream(int device) {
#if TANDEM_TORCH_HAS_CUDA
  return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
#else
  (void)device;
  return nullptr;
#endif
}

ncclDataType_t nccl_type(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Float:
      return ncclFloat32;
    case c10::ScalarType::Double:
      return ncclFloat64;
    case c10::ScalarType::Half:
      return ncclFloat16;
    case c10::ScalarType::BFloat16:
      return ncclBfloat16;
    case c10::ScalarType::Long:
      return ncclInt64;
    case c10::ScalarType::Int:
      return ncclInt32;
    case c10::ScalarType::Byte:
      return ncclUint8;
    case c10::ScalarType::Char:
      return ncclInt8;
    default:
      throw std::invalid_argument(std::string("NcclComm: unsupported dtype ") + c10::toString(type));
  }
}

// NCCL's own words on a communicator's error: the code's name, and the last
// error's text when NCCL kept one.
std::string nccl_error_text(ncclResult_t rc, ncclComm_t comm) {
  std::string text = ncclGetErrorString(rc);
  const char* last = comm ? ncclGetLastError(comm) : nullptr;
  if (last && *last) text += std::string(" (") + last + ")";
  return text;
}

// What a communicator's works share with it: the handle, whether any work
// failed (the teardown then aborts), and whether it has ended, so that the
// watchdog's abort and the destructor end it once between them.
struct CommHandle {
  ncclComm_t comm = nullptr;
  std::atomic<bool> failed{false};
  // Held while the communicator is used from the watchdog's side (polled,
  // aborted) and while it ends: a poll never reads a freed communicator, and
  // a destructor that comes while the watchdog aborts waits for the abort.
  std::mutex mu;
  bool ended = false;
  void end(Teardown how) {
    std::lock_guard<std::mutex> lock(mu);
    if (!comm || ended) return;
    ended = true;
    if (how == Teardown::Abort)
      ncclCommAbort(comm);
    else
      ncclCommDestroy(comm);
  }
  // NCCL's error for the communicator, or "" while there is none (or it has ended).
  std::string async_error() {
    std::lock_guard<std::mutex> lock(mu);
    if (ended) return "";
    ncclResult_t async = ncclSuccess;
    if (ncclCommGetAsyncError(comm, &async) != ncclSuccess || async == ncclSuccess || async == ncclInProgress)
      return "";
    return "NCCL: " + nccl_error_text(async, comm);
  }
};

class NcclWork : public Work {
 public:
  NcclWork(std::string what, int device, std::shared_ptr<CommHandle> handle, std::vector<at::Tensor> keep,
           std::function<void()> then, bool host_blocking)
      : Work(std::move(what)),
        device_(device),
        handle_(std::move(handle)),
        keep_(std::move(keep)),
        then_(std::move(then)),
        host_blocking_(host_blocking) {
    launched_ = false;
    cuda_check(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreate");
  }
  // The last reference may go on the watchdog thread, whose current device
  // would otherwise be 0.
  ~NcclWork() override {
    cudaSetDevice(device_);
    cudaEventDestroy(event_);
  }

  cudaEvent_t event() const { return event_; }
  // After the launch and the event's record: until then the event has
  // nothing to say (an unrecorded event reads as done).
  void mark_launched() { launched_ = true; }
  // The launch failed and threw: nothing is in flight to watch.
  void mark_failed() {
    handle_->failed = true;
    launch_failed_ = true;
  }

  void finish() override {
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    if (host_blocking_)
      cuda_check(cudaEventSynchronize(event_), "cudaEventSynchronize");
    else
      cuda_check(cudaStreamWaitEvent(compute_stream(device_), event_, 0), "cudaStreamWaitEvent");
    if (then_) {
      then_();
      then_ = nullptr;
    }
    // From here the compute stream is ordered after the collective, so the
    // caching allocator may reuse the memory: the extra reference can go.
    keep_.clear();
  }
  // Polled by the watchdog. Not ready is the only answer that may still
  // become done; any other CUDA error, or an error NCCL reports for the
  // communicator (a peer's network fault, a failed proxy), is kept for
  // failure(), as PyTorch's ProcessGroupNCCL watchdog does.
  bool done() override {
    if (launch_failed_) return true;
    if (!launched_) return false;
    cudaSetDevice(device_);
    const cudaError_t rc = cudaEventQuery(event_);
    if (rc == cudaSuccess) return true;
    std::lock_guard<std::mutex> lock(mu_);
    if (rc != cudaErrorNotReady) {
      cudaGetLastError();  // a sticky error stays; a transient one must not resurface elsewhere
      failure_ = std::string("cudaEventQuery: ") + cudaGetErrorString(rc);
    } else {
      failure_ = handle_->async_error();
    }
    if (!failure_.empty()) handle_->failed = true;
    return false;
  }
  std::string failure() override {
    std::lock_guard<std::mutex> lock(mu_);
    return failure_;
  }
  // Unblocks kernels and host threads waiting on the communicator; it cannot
  // be used afterwards, and the job ends right after.
  void abort() override {
    handle_->failed = true;
    handle_->end(Teardown::Abort);
  }

 private:
  int device_;
  std::shared_ptr<CommHandle> handle_;
  std::atomic<bool> launch_failed_{false};
  std::mutex mu_;
  std::string failure_;
  std::vector<at::Tensor> keep_;
  std::function<void()> then_;
  bool host_blocking_;
  cudaEvent_t event_{};
};

}  // namespace

struct NcclComm::State {
  int device = 0;
  int rank = 0;
  int size = 1;
  std::shared_ptr<CommHandle> handle = std::make_shared<CommHandle>();
  cudaStream_t stream = nullptr;
  void* scratch = nullptr;  // one float for barriers: NCCL has no barrier of its own
  Watchdog* watchdog = nullptr;

  // Enqueue `launch` on the NCCL stream after everything already queued on
  // the compute stream. The work is watched before it is launched: with
  // NCCL's lazy connection set-up the first collective between two ranks can
  // block the host inside the launch itself, waiting for a peer.
  std::shared_ptr<NcclWork> enqueue(std::string what, std::vector<at::Tensor> keep,
                                    const std::function<ncclResult_t()>& launch, std::function<void()> then = {},
                                    bool host_blocking = false) {
    cuda_check(cudaSetDevice(device), "cudaSetDevice");
    auto work = std::make_shared<NcclWork>(std::move(what), device, handle, std::move(keep), std::move(then),
                                           host_blocking);
    watchdog->watch(work);
    try {
      cudaEvent_t ready;
      cuda_check(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), "cudaEventCreate");
      cuda_check(cudaEventRecord(ready, compute_stream(device)), "cudaEventRecord");
      cuda_check(cudaStreamWaitEvent(stream, ready, 0), "cudaStreamWaitEvent");
      cudaEventDestroy(ready);
      const ncclResult_t rc = launch();
      if (rc != ncclSuccess) throw std::runtime_error(work->what() + ": " + nccl_error_text(rc, handle->comm));
      cuda_check(cudaEventRecord(work->event(), stream), "cudaEventRecord");
    } catch (...) {
      work->mark_failed();
      throw;
    }
    work->mark_launched();
    return work;
  }
};

NcclComm::NcclComm(World& world, int device_index) : world_(world), s_(std::make_unique<State>()) {
  s_->device = device_index;
  s_->rank = world.rank();
  s_->size = world.size();
  s_->watchdog = &world.watchdog();
  ncclUniqueId id{};
  if (world.rank() == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  world.broadcast_bytes(&id, sizeof id, 0);

  cuda_check(cudaSetDevice(device_index), "cudaSetDevice");
  cuda_check(cudaStreamCreateWithFlags(&s_->stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cuda_check(cudaMalloc(&s_->scratch, sizeof(float)), "cudaMalloc");

  // ncclCommInitRank blocks until every rank joins; run it where the watchdog
  // can see it, so a rank that never arrives ends the job instead of hanging it.
  State* s = s_.get();
  auto init = std::async(std::launch::async, [s, id] {
    cuda_check(cudaSetDevice(s->device), "cudaSetDevice");
    nccl_check(ncclCommInitRank(&s->handle->comm, s->size, id, s->rank), "ncclCommInitRank");
  });
  auto work = std::make_shared<FutureWork>("ncclCommInitRank", std::move(init));
  world.watchdog().watch(work);
  work->wait();
}

// The communicator's end runs watched, held to dist.timeout_s as a
// collective is: a clean exit's ncclCommDestroy waits for every rank's work
// on it, and a peer stopped after its last collective would hold this rank
// there for good; ncclCommAbort can block on a broken node too. Past the
// limit the watchdog reports and ends the job (its abort of this work does
// nothing: the end itself is what is stuck).
NcclComm::~NcclComm() {
  cudaSetDevice(s_->device);
  const Teardown how = teardown_for(s_->handle->failed);
  std::shared_future<void> ended;
  try {
    ended = std::async(std::launch::async, [handle = s_->handle, device = s_->device, how] {
              cudaSetDevice(device);
              handle->end(how);
            }).share();
    s_->watchdog->watch(
        std::make_shared<FutureWork>(how == Teardown::Abort ? "ncclCommAbort" : "ncclCommDestroy", ended));
  } catch (...) {
    // The watchdog has fired and is ending the job (JobEnding), or no thread
    // could be started: the end runs unwatched, here or on its thread.
  }
  if (ended.valid())
    ended.wait();
  else
    s_->handle->end(how);
  if (s_->stream) cudaStreamDestroy(s_->stream);
  if (s_->scratch) cudaFree(s_->scratch);
}

int NcclComm::rank() const { return s_->rank; }
int NcclComm::size() const { return s_->size; }
c10::Device NcclComm::device() const { return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(s_->device)); }

WorkHandle NcclComm::allreduce_async(const at::Tensor& tensor, ReduceOp op) {
  require_collective_tensor("allreduce", tensor, device());
  const auto type = nccl_type(tensor.scalar_type());
  // ncclAvg divides in the reduction type; for integers we want truncation
  // that matches the MPI backend, so sum and divide on the compute stream.
  const bool int_avg = op == ReduceOp::Avg && !tensor.is_floating_point();
  const ncclRedOp_t nop = op == ReduceOp::Max ? ncclMax : op == ReduceOp::Sum || int_avg ? ncclSum : ncclAvg;
  State* s = s_.get();
  void* ptr = tensor.data_ptr();
  const size_t count = tensor.numel();
  std::function<void()> then;
  if (int_avg) then = [tensor, s]() mutable { tensor.div_(s->size, "trunc"); };
  auto work = s->enqueue(
      describe("allreduce(" + to_string(op) + ")", tensor), {tensor},
      [=] { return ncclAllReduce(ptr, ptr, count, type, nop, s->handle->comm, s->stream); }, then);
  return work;
}

WorkHandle NcclComm::broadcast_async(const at::Tensor& tensor, int root) {
  require_collective_tensor("broadcast", tensor, device());
  const auto type = nccl_type(tensor.scalar_type());
  State* s = s_.get();
  void* ptr = tensor.data_ptr();
  const size_t count = tensor.numel();
  auto work = s->enqueue(describe("broadcast(root " + std::to_string(root) + ")", tensor), {tensor},
                         [=] { return ncclBroadcast(ptr, ptr, count, type, root, s->handle->comm, s->stream); });
  return work;
}

WorkHandle NcclComm::allgather_async(const at::Tensor& input, const at::Tensor& output) {
  require_block_pair("allgather", input, output, s_->size, device());
  const auto type = nccl_type(input.scalar_type());
  State* s = s_.get();
  const void* in = input.data_ptr();
  void* out = output.data_ptr();
  const size_t count = input.numel();
  auto work = s->enqueue(describe("allgather", input), {input, output},
                         [=] { return ncclAllGather(in, out, count, type, s->handle->comm, s->stream); });
  return work;
}

WorkHandle NcclComm::reduce_scatter_async(const at::Tensor& input, const at::Tensor& output, ReduceOp op) {
  require_block_pair("reduce_scatter", output, input, s_->size, device());
  const auto type = nccl_type(input.scalar_type());
  const bool int_avg = op == ReduceOp::Avg && !input.is_floating_point();  // truncates, as allreduce's
  const ncclRedOp_t nop = op == ReduceOp::Max ? ncclMax : op == ReduceOp::Sum || int_avg ? ncclSum : ncclAvg;
  State* s = s_.get();
  const void* in = input.data_ptr();
  void* out = output.data_ptr();
  const size_t count = output.numel();
  std::function<void()> then;
  if (int_avg) then = [output, s]() mutable { output.div_(s->size, "trunc"); };
  return s->enqueue(
      describe("reduce_scatter(" + to_string(op) + ")", input), {input, output},
      [=] { return ncclReduceScatter(in, out, count, type, nop, s->handle->comm, s->stream); }, then);
}

WorkHandle NcclComm::barrier_async() {
  State* s = s_.get();
  auto work = s->enqueue(
      "barrier", {}, [s] { return ncclAllReduce(s->scratch, s->scratch, 1, ncclFloat32, ncclSum, s->handle->comm, s->stream); },
      {}, /*host_blocking=*/true);
  return work;
}

}  // namespace tandem
