#include "tandem/dist/gather_in_order.h"

#include <torch/torch.h>

#include <stdexcept>

#include "tandem/dist/mpi_comm.h"
#include "tandem/dist/world.h"
#include "tandem/obs/log.h"

namespace tandem {

at::Tensor gather_in_order(World& world, int64_t n, const at::Tensor& mine) {
  const int size = world.size();
  const int64_t slots = (n + size - 1) / size;
  if (mine.dim() < 1 || mine.size(0) != slots)
    throw std::invalid_argument(
        log::cat("gather_in_order: ", mine.dim() < 1 ? 0 : mine.size(0), " rows for a share of ", slots, " slots"));
  auto shape = mine.sizes().vec();
  shape.insert(shape.begin(), size);
  auto all = torch::empty(shape, mine.options());
  MpiComm(world).allgather(mine.contiguous(), all);
  // Rank r's slot i is sample i * W + r: reading [W, slots] column by column
  // gives the dataset's order, and the padding (samples n and up) comes last.
  auto ordered = mine.sizes().vec();
  ordered[0] = size * slots;
  return all.transpose(0, 1).reshape(ordered).narrow(0, 0, n).contiguous();
}

}  // namespace tandem
