#pragma once
// How collectives are named in watchdog messages and logs: "allreduce(sum) f32[1024]".
#include <ATen/core/Tensor.h>

#include <string>

namespace tandem {

inline std::string dtype_name(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Float:
      return "f32";
    case c10::ScalarType::Double:
      return "f64";
    case c10::ScalarType::Half:
      return "f16";
    case c10::ScalarType::BFloat16:
      return "bf16";
    case c10::ScalarType::Long:
      return "i64";
    case c10::ScalarType::Int:
      return "i32";
    case c10::ScalarType::Byte:
      return "u8";
    case c10::ScalarType::Char:
      return "i8";
    default:
      return c10::toString(type);
  }
}

inline std::string describe(const std::string& op, const at::Tensor& t) {
  return op + " " + dtype_name(t.scalar_type()) + "[" + std::to_string(t.numel()) + "]";
}

}  // namespace tandem
