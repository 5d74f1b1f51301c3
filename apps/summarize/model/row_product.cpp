// Compiled with OpenMP and without the precompiled header (apps/CMakeLists.txt):
// at::parallel_for is a header template whose threads exist only where
// _OPENMP is defined; elsewhere it runs the whole range on the caller.
#include "model/row_product.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace summarize {
namespace {

// Columns a thread takes at least: under this, a slice's call costs more than
// the memory it reads.
constexpr int64_t kLeastColumns = 256;

// A Linear weight's rows are the product's columns, each a dot product with
// the row. MKL runs that on AMD CPUs with its generic kernel
// (`mkl_blas_def_xsgemv`), and decoding one row is a read of every weight, so
// the loop below streams each row of the weight in order through 8-wide
// FMAs instead. Measured by tests/bench/bench_row_product on 2 threads of a
// 2-core AMD EPYC, against MKL over a row-major copy of W^T, MKL's faster
// layout: GPT-2's layers 1.9-2.5x as fast (c_attn, 2304 x 768: 0.081 ms
// against 0.156), its head (50257 x 768) about even (4.1-5.5 ms against
// 4.2-4.9) without the copy's 154 MB, the tiny preset's head 1.05-1.18x.
// Four rows at a time, interleaved, were slower on the heads (6.0 ms, 1.03).
// Built for AVX2 and FMA in these two functions alone, taken where the CPU
// has them.
#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) float sum8(__m256 v) {
  const __m128 four = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 two = _mm_add_ps(four, _mm_movehl_ps(four, four));
  return _mm_cvtss_f32(_mm_add_ss(two, _mm_shuffle_ps(two, two, 1)));
}

// y[j] = x . w[j] (+ bias[j]) for j in [begin, end); w is [n, k] row-major,
// read in order, one row at a time through four running sums.
__attribute__((target("avx2,fma"))) void dot_rows(const float* x, const float* w, int64_t k, const float* bias,
                                                  float* y, int64_t begin, int64_t end) {
  for (int64_t j = begin; j < end; ++j) {
    const float* r = w + j * k;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= k; i += 32) {
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(r + i), _mm256_loadu_ps(x + i), a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(r + i + 8), _mm256_loadu_ps(x + i + 8), a1);
      a2 = _mm256_fmadd_ps(_mm256_loadu_ps(r + i + 16), _mm256_loadu_ps(x + i + 16), a2);
      a3 = _mm256_fmadd_ps(_mm256_loadu_ps(r + i + 24), _mm256_loadu_ps(x + i + 24), a3);
    }
    for (; i + 8 <= k; i += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(r + i), _mm256_loadu_ps(x + i), a0);
    float s = sum8(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < k; ++i) s += r[i] * x[i];
    y[j] = s + (bias != nullptr ? bias[j] : 0.0f);
  }
}

// m is a transposed view of a contiguous float [n, k] weight, as linear and
// the head pass it, and this CPU runs the loop above.
bool dot_rows_fit(const at::Tensor& row, const at::Tensor& m, const at::Tensor& bias) {
  const int64_t k = m.size(0);
  return row_product_reads_weights_as_stored() && m.scalar_type() == at::kFloat &&
         row.scalar_type() == at::kFloat && m.stride(0) == 1 && (m.stride(1) == k || m.size(1) == 1) &&
         row.is_contiguous() && (!bias.defined() || (bias.scalar_type() == at::kFloat && bias.is_contiguous()));
}
#endif

}  // namespace

bool row_product_reads_weights_as_stored() {
#if defined(__x86_64__)
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
#else
  return false;
#endif
}

at::Tensor row_product(const at::Tensor& row, const at::Tensor& m, const at::Tensor& bias) {
  const int64_t n = m.size(1);
  at::Tensor y = at::empty({1, n}, row.options());
#if defined(__x86_64__)
  if (dot_rows_fit(row, m, bias)) {
    const float* x = row.data_ptr<float>();
    const float* w = m.data_ptr<float>();
    const float* b = bias.defined() ? bias.data_ptr<float>() : nullptr;
    float* out = y.data_ptr<float>();
    const int64_t k = m.size(0);
    at::parallel_for(0, n, kLeastColumns, [&](int64_t begin, int64_t end) { dot_rows(x, w, k, b, out, begin, end); });
    return y;
  }
#endif
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
