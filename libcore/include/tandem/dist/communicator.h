#pragma once
// Collectives over all ranks, on tensors, whatever moves the bytes (MPI for
// CPU tensors, NCCL for CUDA ones). Every rank must issue the same collectives
// in the same order, as with torch.distributed.
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

  // In place on `tensor`. Avg of integer tensors truncates toward zero.
  virtual WorkHandle allreduce_async(const at::Tensor& tensor, ReduceOp op) = 0;
  // In place: every rank ends with root's values.
  virtual WorkHandle broadcast_async(const at::Tensor& tensor, int root) = 0;
  // `output` holds size() blocks shaped like `input`, rank r's at block r.
  virtual WorkHandle allgather_async(const at::Tensor& input, const at::Tensor& output) = 0;
  virtual WorkHandle barrier_async() = 0;

  void allreduce(const at::Tensor& tensor, ReduceOp op) { allreduce_async(tensor, op)->wait(); }
  void broadcast(const at::Tensor& tensor, int root) { broadcast_async(tensor, root)->wait(); }
  void allgather(const at::Tensor& input, const at::Tensor& output) { allgather_async(input, output)->wait(); }
  void barrier() { barrier_async()->wait(); }
};

std::string to_string(ReduceOp op);

}  // namespace tandem
