#pragma once
// Collectives over all ranks, on tensors, whatever moves the bytes (MPI for
// CPU tensors, NCCL for CUDA ones). Every rank must issue the same collectives
// in the same order, as with torch.distributed.
//
// The contract: what every backend accepts, and refuses, alike. A CPU run
// that breaks it stops as the GPU run would, with the same message, instead
// of passing on the MPI backend (which could quietly stage any tensor through
// a copy) and crashing on the first GPU. Checked by require_collective_tensor
// and require_block_pair, which each backend calls before it touches a
// tensor:
// - Dense: a strided tensor contiguous in its own suggested memory format
//   (row-major, or channels-last for 4-D and 5-D tensors such as carotid's
//   convolution weights), as PyTorch's ProcessGroupNCCL check_gpu_single_tensor
//   has it. Its numel() elements then lie in one block from data_ptr(), which
//   is what NCCL reads and writes. A strided view (a transpose, a slice with
//   a step) is refused: call .contiguous() and copy the result back.
// - On the communicator's device(): cuda:N for NCCL, the CPU or the rank's GPU
//   for MPI (which stages a GPU tensor through pinned host memory).
// - Of a type both backends reduce: f32, f64, f16, bf16, i64, i32, u8, i8.
// - The same dtype, numel and memory format on every rank. No rank can check
//   that alone without a collective of its own; breaking it reduces the
//   elements of one rank with other elements of another (or, for sizes, makes
//   MPI fail or NCCL hang), so it is the caller's to keep.
// - allgather and reduce_scatter: the whole (allgather's output,
//   reduce_scatter's input) holds size() x the part's elements, of its
//   dtype, on the same device, dense, and shares no memory with the part.
#include <c10/core/Device.h>

#include <memory>
#include <string>

#include "tandem/dist/work.h"

namespace at {
class Tensor;
}

namespace tandem {

class World;

enum class ReduceOp { Sum, Avg, Max };

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual std::string backend() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Where the tensors it is given must live.
  virtual c10::Device device() const = 0;

  // In place on `tensor`. Avg of integer tensors truncates toward zero.
  virtual WorkHandle allreduce_async(const at::Tensor& tensor, ReduceOp op) = 0;
  // In place: every rank ends with root's values.
  virtual WorkHandle broadcast_async(const at::Tensor& tensor, int root) = 0;
  // `output` holds size() blocks of the input's elements in the input's
  // memory order, rank r's at block r.
  virtual WorkHandle allgather_async(const at::Tensor& input, const at::Tensor& output) = 0;
  // `output` gets block rank() of `input` (size() blocks of the output's
  // elements, in memory order) reduced over the ranks: each rank ends with
  // its own share of an allreduce, for a size()-th of the traffic
  // (ZeRO's sharded gradients). Avg of integer tensors truncates.
  virtual WorkHandle reduce_scatter_async(const at::Tensor& input, const at::Tensor& output, ReduceOp op) = 0;
  virtual WorkHandle barrier_async() = 0;

  void allreduce(const at::Tensor& tensor, ReduceOp op) { allreduce_async(tensor, op)->wait(); }
  void broadcast(const at::Tensor& tensor, int root) { broadcast_async(tensor, root)->wait(); }
  void allgather(const at::Tensor& input, const at::Tensor& output) { allgather_async(input, output)->wait(); }
  void reduce_scatter(const at::Tensor& input, const at::Tensor& output, ReduceOp op) {
    reduce_scatter_async(input, output, op)->wait();
  }
  void barrier() { barrier_async()->wait(); }
};

std::string to_string(ReduceOp op);

// Throws std::invalid_argument naming `op`, the tensor's type, shape and
// strides, and what was expected, when `t` breaks the contract above.
void require_collective_tensor(const std::string& op, const at::Tensor& t, c10::Device device);
// The same for both of allgather's or reduce_scatter's tensors (`op`), and
// their sizes and overlap: `whole` holds `size` blocks of `part`'s elements.
void require_block_pair(const std::string& op, const at::Tensor& part, const at::Tensor& whole, int size,
                        c10::Device device);

// How a communicator's destructor ends it. Destroy waits until the work of
// every rank is done (ncclCommDestroy); Abort cancels what is in flight and
// returns (ncclCommAbort). One torn down while an exception unwinds, or after
// any of its works failed, must abort: the peers it would wait for may be
// waiting for this rank, and the error that is unwinding would never reach
// the user. PyTorch's ~ProcessGroupNCCL aborts likewise.
enum class Teardown { Destroy, Abort };
Teardown teardown_for(bool any_work_failed);

}  // namespace tandem
