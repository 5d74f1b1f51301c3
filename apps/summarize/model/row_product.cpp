// Compiled with OpenMP and without the precompiled header (apps/CMakeLists.txt):
// at::parallel_for is a header template whose threads exist only where
// _OPENMP is defined; elsewhere it runs the whole range on the caller.
#include "model/row_product.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>

namespace summarize {
namespace {

// Columns a thread takes at least: under this, a slice's call costs more than
// the memory it reads.
constexpr int64_t kLeastColumns = 256;

}  // namespace

at::Tensor row_product(const at::Tensor& row, const at::Tensor& m, const at::Tensor& bias) {
  const int64_t n = m.size(1);
  at::Tensor y = at::empty({1, n}, row.options());
  at::parallel_for(0, n, kLeastColumns, [&](int64_t begin, int64_t end) {
    // Grad mode is per thread and on in a pool thread; out= products refuse
    // operands that require grad, as a Linear's weight does.
    const c10::AutoGradMode no_grad(false);
    at::Tensor out = y.narrow(1, begin, end - begin);
    const at::Tensor slice = m.narrow(1, begin, end - begin);
    if (bias.defined())
      at::addmm_out(out, bias.narrow(0, begin, end - begin).unsqueeze(0), row, slice);
    else
      at::mm_out(out, row, slice);
  });
  return y;
}

}  // namespace summarize
