// Compiled with OpenMP and without the precompiled header (apps/CMakeLists.txt):
// at::parallel_for has threads only where _OPENMP is defined.
#include "model/swiglu_cpu.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <vector>

namespace vavae {
namespace {

// Rows a thread takes at least: a row is the hidden width of floats.
constexpr int64_t kLeastRows = 64;

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
    at::parallel_for(0, rows, kLeastRows, [&](int64_t begin, int64_t end) {
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
    at::parallel_for(0, rows, kLeastRows, [&](int64_t begin, int64_t end) {
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
