#pragma once
// Every collective, every dtype, message sizes from one element to max_mb,
// checked against values known in advance on every rank.
#include <ATen/core/Tensor.h>

#include <cstdint>

#include "tandem/dist/communicator.h"

namespace tandem {
class World;
struct Placement;
}  // namespace tandem

namespace envcheck {

// Whether `got` is `want` as an allreduce of `op` over `ranks` can deliver it:
// exactly, but for floating-point sums and averages (see selftest.cpp).
bool reduced_as_expected(const at::Tensor& got, const at::Tensor& want, tandem::ReduceOp op, int ranks);

// Returns the number of failed checks summed over all ranks (0: all passed).
int run_selftest(tandem::World& world, tandem::Communicator& comm, const tandem::Placement& placement, int64_t max_mb);

}  // namespace envcheck
