#pragma once
// Collectives through NCCL on CUDA tensors. Written on the CUDA runtime and
// NCCL alone (raw pointers and streams), so it builds wherever the toolkit is,
// whatever LibTorch is linked. Work runs on a stream of its own, ordered after
// the caller's compute stream by an event, so backward keeps computing while
// gradients travel; wait() orders the compute stream after the result. The
// tensors it takes are those of the contract in communicator.h; its
// destructor aborts rather than waits after a failure or while an exception
// unwinds (teardown_for).
#include <memory>
#include <string>

#include "tandem/dist/communicator.h"

namespace tandem {

class NcclComm : public Communicator {
 public:
  // Collective: rank 0 makes the NCCL id, MPI broadcasts it, every rank joins.
  NcclComm(World& world, int device_index);
  ~NcclComm() override;
  std::string backend() const override { return "nccl"; }
  int rank() const override;
  int size() const override;
  c10::Device device() const override;

  WorkHandle allreduce_async(const at::Tensor& tensor, ReduceOp op) override;
  WorkHandle broadcast_async(const at::Tensor& tensor, int root) override;
  WorkHandle allgather_async(const at::Tensor& input, const at::Tensor& output) override;
  WorkHandle reduce_scatter_async(const at::Tensor& input, const at::Tensor& output, ReduceOp op) override;
  WorkHandle barrier_async() override;

  struct State;

 private:
  World& world_;
  std::unique_ptr<State> s_;
};

}  // namespace tandem
