#include "tandem/dist/nccl_comm.h"

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <torch/torch.h>

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

void require_cuda(const at::Tensor& t, int device, const char* op) {
  if (!t.is_cuda() || t.get_device() != device || !t.is_contiguous())
    throw std::invalid_argument(std::string("NcclComm ") + op +
                                ": needs a contiguous tensor on cuda:" + std::to_string(device));
}

// NCCL's own words on a communicator's error: the code's name, and the last
// error's text when NCCL kept one.
std::string nccl_error_text(ncclResult_t rc, ncclComm_t comm) {
  std::string text = ncclGetErrorString(rc);
  const char* last = comm ? ncclGetLastError(comm) : nullptr;
  if (last && *last) text += std::string(" (") + last + ")";
  return text;
}

class NcclWork : public Work {
 public:
  NcclWork(std::string what, int device, ncclComm_t comm, std::vector<at::Tensor> keep, std::function<void()> then,
           bool host_blocking)
      : Work(std::move(what)),
        device_(device),
        comm_(comm),
        keep_(std::move(keep)),
        then_(std::move(then)),
        host_blocking_(host_blocking) {
    cuda_check(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreate");
  }
  // The last reference may go on the watchdog thread, whose current device
  // would otherwise be 0.
  ~NcclWork() override {
    cudaSetDevice(device_);
    cudaEventDestroy(event_);
  }

  cudaEvent_t event() const { return event_; }

  void wait() override {
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
    cudaSetDevice(device_);
    const cudaError_t rc = cudaEventQuery(event_);
    if (rc == cudaSuccess) return true;
    std::lock_guard<std::mutex> lock(mu_);
    if (rc != cudaErrorNotReady) {
      cudaGetLastError();  // a sticky error stays; a transient one must not resurface elsewhere
      failure_ = std::string("cudaEventQuery: ") + cudaGetErrorString(rc);
    } else {
      ncclResult_t async = ncclSuccess;
      if (ncclCommGetAsyncError(comm_, &async) == ncclSuccess && async != ncclSuccess && async != ncclInProgress)
        failure_ = "NCCL: " + nccl_error_text(async, comm_);
    }
    return false;
  }
  std::string failure() override {
    std::lock_guard<std::mutex> lock(mu_);
    return failure_;
  }
  // Unblocks kernels and host threads waiting on the communicator; it cannot
  // be used afterwards, and the job ends right after.
  void abort() override { ncclCommAbort(comm_); }

 private:
  int device_;
  ncclComm_t comm_;
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
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  void* scratch = nullptr;  // one float for barriers: NCCL has no barrier of its own

  // Enqueue `launch` on the NCCL stream after everything already queued on
  // the compute stream.
  std::shared_ptr<NcclWork> enqueue(std::string what, std::vector<at::Tensor> keep,
                                    const std::function<ncclResult_t()>& launch, std::function<void()> then = {},
                                    bool host_blocking = false) {
    cuda_check(cudaSetDevice(device), "cudaSetDevice");
    cudaEvent_t ready;
    cuda_check(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), "cudaEventCreate");
    cuda_check(cudaEventRecord(ready, compute_stream(device)), "cudaEventRecord");
    cuda_check(cudaStreamWaitEvent(stream, ready, 0), "cudaStreamWaitEvent");
    cudaEventDestroy(ready);
    auto work =
        std::make_shared<NcclWork>(std::move(what), device, comm, std::move(keep), std::move(then), host_blocking);
    const ncclResult_t rc = launch();
    if (rc != ncclSuccess) throw std::runtime_error(work->what() + ": " + nccl_error_text(rc, comm));
    cuda_check(cudaEventRecord(work->event(), stream), "cudaEventRecord");
    return work;
  }
};

NcclComm::NcclComm(World& world, int device_index) : world_(world), s_(std::make_unique<State>()) {
  s_->device = device_index;
  s_->rank = world.rank();
  s_->size = world.size();
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
    nccl_check(ncclCommInitRank(&s->comm, s->size, id, s->rank), "ncclCommInitRank");
  });
  auto work = std::make_shared<FutureWork>("ncclCommInitRank", std::move(init));
  world.watchdog().watch(work);
  work->wait();
}

NcclComm::~NcclComm() {
  cudaSetDevice(s_->device);
  if (s_->comm) ncclCommDestroy(s_->comm);
  if (s_->stream) cudaStreamDestroy(s_->stream);
  if (s_->scratch) cudaFree(s_->scratch);
}

int NcclComm::rank() const { return s_->rank; }
int NcclComm::size() const { return s_->size; }

WorkHandle NcclComm::allreduce_async(const at::Tensor& tensor, ReduceOp op) {
  require_cuda(tensor, s_->device, "allreduce");
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
      [=] { return ncclAllReduce(ptr, ptr, count, type, nop, s->comm, s->stream); }, then);
  world_.watchdog().watch(work);
  return work;
}

WorkHandle NcclComm::broadcast_async(const at::Tensor& tensor, int root) {
  require_cuda(tensor, s_->device, "broadcast");
  const auto type = nccl_type(tensor.scalar_type());
  State* s = s_.get();
  void* ptr = tensor.data_ptr();
  const size_t count = tensor.numel();
  auto work = s->enqueue(describe("broadcast(root " + std::to_string(root) + ")", tensor), {tensor},
                         [=] { return ncclBroadcast(ptr, ptr, count, type, root, s->comm, s->stream); });
  world_.watchdog().watch(work);
  return work;
}

WorkHandle NcclComm::allgather_async(const at::Tensor& input, const at::Tensor& output) {
  require_cuda(input, s_->device, "allgather");
  require_cuda(output, s_->device, "allgather");
  if (output.numel() != input.numel() * s_->size || output.scalar_type() != input.scalar_type())
    throw std::invalid_argument(
        "allgather: output must hold world size x input elements of the "
        "input's dtype");
  const auto type = nccl_type(input.scalar_type());
  State* s = s_.get();
  const void* in = input.data_ptr();
  void* out = output.data_ptr();
  const size_t count = input.numel();
  auto work = s->enqueue(describe("allgather", input), {input, output},
                         [=] { return ncclAllGather(in, out, count, type, s->comm, s->stream); });
  world_.watchdog().watch(work);
  return work;
}

WorkHandle NcclComm::barrier_async() {
  State* s = s_.get();
  auto work = s->enqueue(
      "barrier", {}, [s] { return ncclAllReduce(s->scratch, s->scratch, 1, ncclFloat32, ncclSum, s->comm, s->stream); },
      {}, /*host_blocking=*/true);
  world_.watchdog().watch(work);
  return work;
}

}  // namespace tandem
