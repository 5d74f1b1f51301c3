#include "tandem/nn/recompute.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/torch.h>

#if TANDEM_TORCH_HAS_CUDA
#include <ATen/cuda/CUDAGeneratorImpl.h>
#endif

#include <mutex>
#include <optional>
#include <vector>

#include "tandem/compat.h"
#include "tandem/train/autocast_guard.h"

namespace tandem::nn {
namespace {

thread_local bool recompute_on = false;

// The default generators' states: the CPU's, and the CUDA device's where the
// block runs on one. Dropout draws from them.
struct RandomState {
  at::Tensor cpu, cuda;
  c10::DeviceIndex device = -1;

  static at::Generator cuda_generator(c10::DeviceIndex device) {
#if TANDEM_TORCH_HAS_CUDA
    return at::cuda::detail::getDefaultCUDAGenerator(device);
#else
    (void)device;
    throw std::logic_error("recompute: a CUDA tensor in a build without CUDA");
#endif
  }

  static RandomState now(const at::Device& device) {
    RandomState s;
    at::Generator cpu = at::detail::getDefaultCPUGenerator();
    {
      std::lock_guard<std::mutex> lock(cpu.mutex());
      s.cpu = cpu.get_state();
    }
    if (device.is_cuda()) {
      s.device = device.index();
      at::Generator gpu = cuda_generator(s.device);
      std::lock_guard<std::mutex> lock(gpu.mutex());
      s.cuda = gpu.get_state();
    }
    return s;
  }

  void set() const {
    at::Generator cpu_gen = at::detail::getDefaultCPUGenerator();
    {
      std::lock_guard<std::mutex> lock(cpu_gen.mutex());
      cpu_gen.set_state(cpu);
    }
    if (cuda.defined()) {
      at::Generator gpu = cuda_generator(device);
      std::lock_guard<std::mutex> lock(gpu.mutex());
      gpu.set_state(cuda);
    }
  }
};

// The generators as they are, put back on leaving.
class RandomKept {
 public:
  explicit RandomKept(const at::Device& device) : state_(RandomState::now(device)) {}
  ~RandomKept() { state_.set(); }
  RandomKept(const RandomKept&) = delete;
  RandomKept& operator=(const RandomKept&) = delete;

 private:
  RandomState state_;
};

// What backward needs besides the inputs, kept alive by the autograd graph.
struct Recipe : torch::CustomClassHolder {
  BlockForward forward;
  torch::nn::Module* block = nullptr;
  RandomState random;
  compat::AutocastState autocast;
  bool cuda = false;
  // A custom Function's inputs must be defined: an absent second input goes
  // through as an empty tensor and reaches `forward` undefined again.
  bool has_b = true;
};

// The block's buffers as they are, put back on leaving.
class BuffersKept {
 public:
  explicit BuffersKept(torch::nn::Module& block) {
    torch::NoGradGuard no_grad;
    for (auto& b : block.buffers()) {
      buffers_.push_back(b);
      copies_.push_back(b.clone());
    }
  }
  ~BuffersKept() {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < buffers_.size(); ++i) buffers_[i].copy_(copies_[i]);
  }
  BuffersKept(const BuffersKept&) = delete;
  BuffersKept& operator=(const BuffersKept&) = delete;

 private:
  std::vector<at::Tensor> buffers_, copies_;
};

// An input of the second run. Its gradient is taken by a hook on an alias,
// as the sum of what the block's uses of it give, in the order and layout
// the graph without recomputation sums them; a leaf's .grad could come in
// another layout (AccumulateGrad's), which changes the rounding of the
// reductions upstream.
struct Input {
  at::Tensor leaf, in, grad;
  Input(const at::Tensor& saved, bool wants_grad) : leaf(saved.detach().requires_grad_(wants_grad)) {
    if (!wants_grad) {
      in = leaf;
      return;
    }
    in = leaf.view_as(leaf);
    in.register_hook([this](const at::Tensor& g) { grad = g; });
  }
  Input(const Input&) = delete;
  Input& operator=(const Input&) = delete;
};

struct Recompute : torch::autograd::Function<Recompute> {
  // The block runs with autograd on, as it will in backward: some layers
  // take another kernel without it (an inference path), and the two runs
  // must compute alike. Its graph, and with it every activation, goes with
  // the detach, as soon as the block has returned.
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& a, const at::Tensor& b,
                            c10::intrusive_ptr<Recipe> recipe) {
    ctx->save_for_backward({a, b});
    ctx->saved_data["recipe"] = c10::IValue::make_capsule(recipe);
    ctx->saved_data["a_grad"] = a.requires_grad();
    ctx->saved_data["b_grad"] = b.requires_grad();
    torch::AutoGradMode grad_on(true);
    return recipe->forward(a, recipe->has_b ? b : at::Tensor()).detach();
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto recipe = c10::static_intrusive_pointer_cast<Recipe>(ctx->saved_data["recipe"].toCapsule());
    // torch.utils.checkpoint's rule: the inner backward accumulates into the
    // parameters' .grad, which autograd::grad(inputs) must not do.
    TORCH_CHECK(torch::autograd::Engine::get_default_engine().is_checkpoint_valid(),
                "recompute: a recomputed block is not differentiable with autograd::grad(inputs); use backward()");
    torch::AutoGradMode grad_on(true);  // backward runs without; the second run and its inputs need it
    const auto saved = ctx->get_saved_variables();
    Input a(saved[0], ctx->saved_data["a_grad"].toBool());
    Input b(saved[1], recipe->has_b && ctx->saved_data["b_grad"].toBool());
    // Put back only after the inner backward, which may read them (batch
    // norm saves its running statistics).
    BuffersKept buffers(*recipe->block);
    at::Tensor out;
    {
      // This thread's generators go on from where they were once the block
      // has drawn what it drew the first time.
      const RandomKept here(a.in.device());
      recipe->random.set();
      AutocastGuard autocast(recipe->cuda, recipe->autocast);
      out = recipe->forward(a.in, recipe->has_b ? b.in : at::Tensor());
    }
    torch::autograd::backward({out}, {grads[0]});
    return {a.grad, b.grad, at::Tensor()};
  }
};

}  // namespace

at::Tensor recomputed(torch::nn::Module& block, const BlockForward& forward, const at::Tensor& a, const at::Tensor& b) {
  const bool wanted = a.requires_grad() || (b.defined() && b.requires_grad());
  if (!recompute_on || !torch::GradMode::is_enabled() || !wanted) return forward(a, b);
  auto recipe = c10::make_intrusive<Recipe>();
  recipe->forward = forward;
  recipe->block = &block;
  recipe->random = RandomState::now(a.device());
  recipe->cuda = a.is_cuda();
  recipe->autocast = compat::autocast_state(recipe->cuda);
  recipe->has_b = b.defined();
  return Recompute::apply(a, b.defined() ? b : at::empty({0}, a.options()), recipe);
}

RecomputeScope::RecomputeScope(bool on) : previous_(recompute_on) { recompute_on = on; }
RecomputeScope::~RecomputeScope() { recompute_on = previous_; }

}  // namespace tandem::nn
