#pragma once
// Collectives through MPI. CPU tensors are reduced where they lie; CUDA
// tensors and 16-bit floats (which MPI has no type for) go through a host
// staging copy, reduced in float32 so halves lose nothing in the sum. The
// tensors it takes are those of the contract in communicator.h.
#include "tandem/dist/communicator.h"

namespace tandem {

class MpiComm : public Communicator {
 public:
  // `device`: where the tensors it is given live (a GPU rank on the MPI
  // backend gives its GPU tensors).
  explicit MpiComm(World& world, c10::Device device = c10::Device(c10::kCPU)) : world_(world), device_(device) {}
  std::string backend() const override { return "mpi"; }
  c10::Device device() const override { return device_; }
  int rank() const override;
  int size() const override;

  WorkHandle allreduce_async(const at::Tensor& tensor, ReduceOp op) override;
  WorkHandle broadcast_async(const at::Tensor& tensor, int root) override;
  WorkHandle allgather_async(const at::Tensor& input, const at::Tensor& output) override;
  WorkHandle reduce_scatter_async(const at::Tensor& input, const at::Tensor& output, ReduceOp op) override;
  WorkHandle barrier_async() override;

 private:
  World& world_;
  c10::Device device_;
};

}  // namespace tandem
