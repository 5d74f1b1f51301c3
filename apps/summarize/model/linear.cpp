#include "model/linear.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <vector>

#include "model/row_product.h"
#include "tandem/compat.h"

namespace summarize {
namespace {

// The rows oneDNN lays a weight out for: batched decoding's usual count. The
// layout serves any count (GPT-2's layers at 2 rows: 32.8 ms packed for 8,
// 29.9 packed for 2, 35.0 as W x^T; at 32 rows: 73.9, 76.0, 80.2).
constexpr int64_t kPackedRows = 8;

}  // namespace

at::Tensor linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, WeightCopy* packed) {
  const int64_t in = weight.size(1);
  const int64_t rows = x.numel() / in;
  if (c10::GradMode::is_enabled() || !x.device().is_cpu() || rows < 1 || rows > kFewRows ||
      x.scalar_type() != at::kFloat || weight.scalar_type() != at::kFloat)
    return at::linear(x, weight, bias);
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = weight.size(0);
  if (rows == 1) return row_product(x.reshape({1, in}), weight.t(), bias).view(shape);
  if (packed != nullptr) {
    const at::Tensor& p =
        packed->get(weight, [](const at::Tensor& w) { return tandem::compat::pack_linear_weight(w, kPackedRows); });
    if (p.defined()) return tandem::compat::packed_linear(x, p, bias);
  }
  const at::Tensor columns = x.reshape({rows, in}).t();
  const at::Tensor y = bias.defined() ? at::addmm(bias.unsqueeze(1), weight, columns) : at::mm(weight, columns);
  return y.t().view(shape);
}

}  // namespace summarize
