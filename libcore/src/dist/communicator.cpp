#include "tandem/dist/communicator.h"

#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>

#include <exception>
#include <sstream>
#include <stdexcept>

#include "describe.h"

namespace tandem {
namespace {

bool reducible(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Float:
    case c10::ScalarType::Double:
    case c10::ScalarType::Half:
    case c10::ScalarType::BFloat16:
    case c10::ScalarType::Long:
    case c10::ScalarType::Int:
    case c10::ScalarType::Byte:
    case c10::ScalarType::Char:
      return true;
    default:
      return false;
  }
}

std::string shape_and_strides(const at::Tensor& t) {
  std::ostringstream out;
  out << dtype_name(t.scalar_type()) << t.sizes() << " with strides " << t.strides();
  return out.str();
}

[[noreturn]] void refuse(const std::string& op, const at::Tensor& t, const std::string& why) {
  throw std::invalid_argument(op + ": " + (t.defined() ? shape_and_strides(t) + " " : std::string()) + why);
}

}  // namespace

std::string to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Avg:
      return "avg";
    case ReduceOp::Max:
      return "max";
  }
  return "?";
}

void require_collective_tensor(const std::string& op, const at::Tensor& t, c10::Device device) {
  if (!t.defined()) refuse(op, t, "needs a defined tensor");
  if (t.layout() != c10::kStrided) refuse(op, t, "is not a dense (strided) tensor");
  if (!t.is_contiguous(t.suggest_memory_format()))
    refuse(op, t,
           "is not dense in its memory format (contiguous, or channels-last for 4-D and 5-D): a "
           "collective moves one block of memory, so pass .contiguous() and copy the result back");
  if (t.device() != device)
    refuse(op, t, "is on " + t.device().str() + ", but this communicator works on " + device.str());
  if (!reducible(t.scalar_type()))
    refuse(op, t, "has a type collectives do not take (f32, f64, f16, bf16, i64, i32, u8, i8)");
}

void require_block_pair(const std::string& op, const at::Tensor& part, const at::Tensor& whole, int size,
                        c10::Device device) {
  // allgather gathers parts into the whole; reduce_scatter scatters the whole.
  const bool gathers = op == "allgather";
  const at::Tensor& input = gathers ? part : whole;
  const at::Tensor& output = gathers ? whole : part;
  require_collective_tensor(op + " (input)", input, device);
  require_collective_tensor(op + " (output)", output, device);
  if (whole.numel() != part.numel() * size || whole.scalar_type() != part.scalar_type())
    refuse(op + (gathers ? " (output)" : " (input)"), whole,
           "must hold " + std::to_string(size) + " (world size) x " + std::to_string(part.numel()) + " elements of the " +
               (gathers ? "input" : "output") + "'s type " + dtype_name(part.scalar_type()));
  if (at::get_overlap_status(input, output) != at::MemOverlapStatus::No)
    refuse(op + " (output)", output, "shares memory with the input; give it a buffer of its own");
}

Teardown teardown_for(bool any_work_failed) {
  return any_work_failed || std::uncaught_exceptions() > 0 ? Teardown::Abort : Teardown::Destroy;
}

}  // namespace tandem
