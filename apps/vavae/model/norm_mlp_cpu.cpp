// Compiled with OpenMP and without the precompiled header (apps/CMakeLists.txt):
// at::parallel_for has threads only where _OPENMP is defined.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/norm_mlp.h"

namespace vavae {

namespace {

// Rows a thread takes at least: a row is one weight's length of floats.
constexpr int64_t kLeastNormRows = 64;

// sum of a[i] * b[i] with four running sums, so that the compiler may keep
// them in one vector register without reordering a single sum.
float dot(const float* a, const float* b, int64_t n) {
  float s[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int k = 0; k < 4; ++k) s[k] += a[i + k] * b[i + k];
  for (; i < n; ++i) s[0] += a[i] * b[i];
  return (s[0] + s[1]) + (s[2] + s[3]);
}

struct RmsNormFunction : torch::autograd::Function<RmsNormFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                            double eps) {
    const at::Tensor x = input.contiguous();
    const at::Tensor w = weight.contiguous();
    const int64_t dim = w.numel(), rows = x.numel() / dim;
    at::Tensor y = at::empty_like(x);
    at::Tensor rstd = at::empty({rows}, x.options());
    const float* px = x.data_ptr<float>();
    const float* pw = w.data_ptr<float>();
    float* py = y.data_ptr<float>();
    float* ps = rstd.data_ptr<float>();
    at::parallel_for(0, rows, kLeastNormRows, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* xr = px + r * dim;
        float* yr = py + r * dim;
        const float s = 1.0f / std::sqrt(dot(xr, xr, dim) / static_cast<float>(dim) + static_cast<float>(eps));
        ps[r] = s;
        for (int64_t c = 0; c < dim; ++c) yr[c] = xr[c] * s * pw[c];
      }
    });
    ctx->save_for_backward({x, w, rstd});
    return y;
  }

  // With s = rstd and g the incoming gradient, per row:
  //   dx = s * g * w - x * s^3 * sum(g * w * x) / dim,   dweight = sum over rows of g * x * s.
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &w = saved[1], &rstd = saved[2];
    const at::Tensor g = grads[0].contiguous();
    const int64_t dim = w.numel(), rows = x.numel() / dim;
    at::Tensor dx = at::empty_like(x);
    // The weight's gradient sums over all rows: each block of rows adds into
    // its own row of partial sums, added up after.
    const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), rows / kLeastNormRows));
    at::Tensor partial = at::zeros({blocks, dim}, x.options());
    const float *px = x.data_ptr<float>(), *pw = w.data_ptr<float>();
    const float *pg = g.data_ptr<float>(), *ps = rstd.data_ptr<float>();
    float* pdx = dx.data_ptr<float>();
    float* pp = partial.data_ptr<float>();
    at::parallel_for(0, blocks, 1, [&](int64_t first, int64_t last) {
      std::vector<float> gw(dim);
      for (int64_t b = first; b < last; ++b) {
        float* dw = pp + b * dim;
        for (int64_t r = rows * b / blocks; r < rows * (b + 1) / blocks; ++r) {
          const float *xr = px + r * dim, *gr = pg + r * dim;
          float* dxr = pdx + r * dim;
          const float s = ps[r];
          for (int64_t c = 0; c < dim; ++c) {
            gw[c] = gr[c] * pw[c];
            dw[c] += gr[c] * xr[c] * s;
          }
          const float k = s * s * s * dot(gw.data(), xr, dim) / static_cast<float>(dim);
          for (int64_t c = 0; c < dim; ++c) dxr[c] = s * gw[c] - k * xr[c];
        }
      }
    });
    return {dx.view(grads[0].sizes()), partial.sum(0).view(w.sizes()), at::Tensor()};
  }
};

}  // namespace

at::Tensor rms_norm_cpu(const at::Tensor& x, const at::Tensor& weight, double eps) {
  return RmsNormFunction::apply(x, weight, eps);
}

namespace {

// Rows a thread takes at least: a row is the hidden width of floats.
constexpr int64_t kLeastGateRows = 64;

struct SwigluGateFunction : torch::autograd::Function<SwigluGateFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input) {
    const at::Tensor h = input.contiguous();
    const int64_t hidden = h.size(-1) / 2, rows = h.numel() / (2 * hidden);
    // sigmoid(a), kept for backward: silu(a) = a * sigmoid(a).
    const at::Tensor sig = at::sigmoid(h.narrow(-1, 0, hidden)).contiguous();
    std::vector<int64_t> sizes = h.sizes().vec();
    sizes.back() = hidden;
    at::Tensor out = at::empty(sizes, h.options());
    const float* ph = h.data_ptr<float>();
    const float* ps = sig.data_ptr<float>();
    float* po = out.data_ptr<float>();
    at::parallel_for(0, rows, kLeastGateRows, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float *a = ph + r * 2 * hidden, *b = a + hidden, *s = ps + r * hidden;
        float* o = po + r * hidden;
        for (int64_t c = 0; c < hidden; ++c) o[c] = a[c] * s[c] * b[c];
      }
    });
    ctx->save_for_backward({h, sig});
    return out;
  }

  // With s = sigmoid(a): d silu(a) / da = s * (1 + a * (1 - s)), so
  //   da = g * b * s * (1 + a * (1 - s)),   db = g * a * s.
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &h = saved[0], &sig = saved[1];
    const at::Tensor g = grads[0].contiguous();
    const int64_t hidden = h.size(-1) / 2, rows = h.numel() / (2 * hidden);
    at::Tensor dh = at::empty_like(h);
    const float *ph = h.data_ptr<float>(), *ps = sig.data_ptr<float>(), *pg = g.data_ptr<float>();
    float* pd = dh.data_ptr<float>();
    at::parallel_for(0, rows, kLeastGateRows, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float *a = ph + r * 2 * hidden, *b = a + hidden, *s = ps + r * hidden, *gr = pg + r * hidden;
        float *da = pd + r * 2 * hidden, *db = da + hidden;
        for (int64_t c = 0; c < hidden; ++c) {
          da[c] = gr[c] * b[c] * s[c] * (1.0f + a[c] * (1.0f - s[c]));
          db[c] = gr[c] * a[c] * s[c];
        }
      }
    });
    return {dh};
  }
};

}  // namespace

at::Tensor swiglu_gate_cpu(const at::Tensor& h) { return SwigluGateFunction::apply(h); }

}  // namespace vavae
