#pragma once
// Collectives through MPI. CPU tensors are reduced where they lie; CUDA
// tensors and 16-bit floats (which MPI has no type for) go through a host
// staging copy, reduced in float32 so halves lose nothing in the sum.
#include "tandem/dist/communicator.h"

namespace tandem {

class MpiComm : public Communicator {
 public:
  explicit MpiComm(World& world) : world_(world) {}
  std::string backend() const override { return "mpi"; }
  int rank() const override;
  int size() const override;

  WorkHandle allreduce_async(const at::Tensor& tensor, ReduceOp op) override;
  WorkHandle broadcast_async(const at::Tensor& tensor, int root) override;
  WorkHandle allgather_async(const at::Tensor& input, const at::Tensor& output) override;
  WorkHandle barrier_async() override;

 private:
  World& world_;
};

}  // namespace tandem
