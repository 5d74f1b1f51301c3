#include "tandem/dist/mpi_comm.h"

#include <torch/torch.h>

#include <climits>

#include "describe.h"
#include "idle_barrier.h"
#include "mpi_check.h"
#include "tandem/dist/world.h"

namespace tandem {
namespace {

MPI_Datatype mpi_type(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Float:
      return MPI_FLOAT;
    case c10::ScalarType::Double:
      return MPI_DOUBLE;
    case c10::ScalarType::Long:
      return MPI_INT64_T;
    case c10::ScalarType::Int:
      return MPI_INT32_T;
    case c10::ScalarType::Byte:
      return MPI_UINT8_T;
    case c10::ScalarType::Char:
      return MPI_INT8_T;
    default:
      throw std::invalid_argument(std::string("MpiComm: unsupported dtype ") + c10::toString(type));
  }
}

bool is_half(c10::ScalarType type) { return type == c10::ScalarType::Half || type == c10::ScalarType::BFloat16; }

// The tensor MPI works on: `t` itself when it is a CPU tensor of a type MPI
// knows (dense by the contract, so its elements lie in one block, in any
// memory format), else a host copy with the same strides (pinned when it
// comes from a GPU, so the copies run at full PCIe speed), so the copies in
// and out are straight ones.
at::Tensor host_buffer(const at::Tensor& t, bool copy_values) {
  const auto type = is_half(t.scalar_type()) ? c10::ScalarType::Float : t.scalar_type();
  mpi_type(type);
  if (t.is_cpu() && type == t.scalar_type()) return t;
  auto host = at::empty_strided(t.sizes(), t.strides(),
                                t.options().device(c10::kCPU).dtype(type).pinned_memory(t.is_cuda()));
  if (copy_values) host.copy_(t);
  return host;
}

int count_of(const at::Tensor& t) {
  if (t.numel() > INT_MAX)
    throw std::invalid_argument("MpiComm: tensors over 2^31 elements must be split by the caller");
  return static_cast<int>(t.numel());
}

std::function<void()> copy_back(const at::Tensor& target, const at::Tensor& buffer) {
  if (buffer.is_same(target)) return {};
  return [target, buffer]() mutable { target.copy_(buffer); };
}

// A sum over `size` ranks made their mean, when `op` asks for one: integers
// truncate toward zero, as NCCL's backend does.
void average(at::Tensor& sum, ReduceOp op, int size) {
  if (op != ReduceOp::Avg) return;
  if (sum.is_floating_point())
    sum.div_(size);
  else
    sum.div_(size, "trunc");
}

}  // namespace

int MpiComm::rank() const { return world_.rank(); }
int MpiComm::size() const { return world_.size(); }

WorkHandle MpiComm::allreduce_async(const at::Tensor& tensor, ReduceOp op) {
  require_collective_tensor("allreduce", tensor, device_);
  auto buf = host_buffer(tensor, true);
  const int count = count_of(buf);
  const int size = world_.size();
  auto job = [buf, count, op, size]() mutable {
    mpi_check(MPI_Allreduce(MPI_IN_PLACE, buf.data_ptr(), count, mpi_type(buf.scalar_type()),
                            op == ReduceOp::Max ? MPI_MAX : MPI_SUM, MPI_COMM_WORLD),
              "MPI_Allreduce");
    average(buf, op, size);
  };
  return world_.submit(describe("allreduce(" + to_string(op) + ")", tensor), job, copy_back(tensor, buf));
}

WorkHandle MpiComm::broadcast_async(const at::Tensor& tensor, int root) {
  require_collective_tensor("broadcast", tensor, device_);
  auto buf = host_buffer(tensor, true);
  const int count = count_of(buf);
  auto job = [buf, count, root] {
    mpi_check(MPI_Bcast(buf.data_ptr(), count, mpi_type(buf.scalar_type()), root, MPI_COMM_WORLD), "MPI_Bcast");
  };
  return world_.submit(describe("broadcast(root " + std::to_string(root) + ")", tensor), job, copy_back(tensor, buf));
}

WorkHandle MpiComm::allgather_async(const at::Tensor& input, const at::Tensor& output) {
  require_block_pair("allgather", input, output, world_.size(), device_);
  auto in = host_buffer(input, true);
  auto out = host_buffer(output, false);
  const int count = count_of(in);
  auto job = [in, out, count] {
    const auto type = mpi_type(in.scalar_type());
    mpi_check(MPI_Allgather(in.data_ptr(), count, type, out.data_ptr(), count, type, MPI_COMM_WORLD), "MPI_Allgather");
  };
  return world_.submit(describe("allgather", input), job, copy_back(output, out));
}

WorkHandle MpiComm::reduce_scatter_async(const at::Tensor& input, const at::Tensor& output, ReduceOp op) {
  require_block_pair("reduce_scatter", output, input, world_.size(), device_);
  auto in = host_buffer(input, true);
  auto out = host_buffer(output, false);
  const int count = count_of(out);
  const int size = world_.size();
  auto job = [in, out, count, op, size]() mutable {
    mpi_check(MPI_Reduce_scatter_block(in.data_ptr(), out.data_ptr(), count, mpi_type(in.scalar_type()),
                                       op == ReduceOp::Max ? MPI_MAX : MPI_SUM, MPI_COMM_WORLD),
              "MPI_Reduce_scatter_block");
    average(out, op, size);
  };
  return world_.submit(describe("reduce_scatter(" + to_string(op) + ")", input), job, copy_back(output, out));
}

WorkHandle MpiComm::barrier_async() {
  return world_.submit("barrier", [] { idle_barrier(); });
}

}  // namespace tandem
