#include "tandem/train/adamw.h"

#include <torch/torch.h>

#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <set>
#include <unordered_set>
#include <utility>

#include "tandem/dist/shard.h"
#include "tandem/error.h"
#include "tandem/text/message_text.h"

namespace tandem {
namespace {

std::string describe(const at::Tensor& tensor) {
  std::string shape = "[";
  for (const int64_t size : tensor.sizes()) shape += (shape.size() > 1 ? "," : "") + std::to_string(size);
  return std::string(c10::toString(tensor.scalar_type())) + " " + shape + "]";
}

bool is_step_count(const at::Tensor& tensor) {
  return tensor.dim() == 0 && at::isIntegralType(tensor.scalar_type(), /*includeBool=*/false) &&
         tensor.item<int64_t>() >= 0;
}

}  // namespace

AdamW::AdamW(NamedTensors params, AdamWOptions options, DecayRule decay, const ParamShards* shards)
    : params_(std::move(params)), options_(options), shards_(shards) {
  std::unordered_set<std::string> seen;
  slots_.reserve(params_.size());
  for (const auto& [name, param] : params_) {
    if (!param.defined()) throw std::invalid_argument("AdamW: parameter '" + name + "' is undefined");
    if (!seen.insert(name).second) throw std::invalid_argument("AdamW: parameter '" + name + "' given twice");
    if (!param.is_non_overlapping_and_dense())
      throw std::invalid_argument("AdamW: parameter '" + name + "' is not one dense block of memory");
    // Allocated up front, not at the first step as torch does, so that state()
    // always has the same entries; zeros make the first update identical.
    Slot slot;
    if (shards_) {
      int64_t owned = 0;
      for (const ElementRun& run : shards_->owned(slots_.size())) owned += run.length;
      slot.exp_avg = torch::zeros({owned}, param.options());
    } else {
      slot.exp_avg = torch::zeros_like(param, at::MemoryFormat::Preserve);
    }
    slot.exp_avg_sq = torch::zeros_like(slot.exp_avg);
    slot.decay = decay(name, param);
    slots_.push_back(std::move(slot));
  }
}

// One fused kernel per group (torch.optim.AdamW(fused=True)'s, at::_fused_adamw_)
// reads each parameter, gradient and moment once and writes them once. The
// eight elementwise passes of the unfused update moved about three times the
// bytes, allocated a model-sized temporary every step, and on a CPU that is
// what the step waits for: over a DiT-B/1's 128M parameters on one thread,
// 76 ms against torch::optim::AdamW's 398 ms (tests/bench/bench_adamw, 2-core
// AMD EPYC, nothing else running), and DiT-B/1 training steps 7.8 -> 6.5-7.2 s
// on 2 ranks of a slower machine. The result is the fused
// torch.optim.AdamW's to the bit and the unfused one's to float rounding.
void AdamW::step(double lr) {
  torch::NoGradGuard no_grad;
  // Parameters that step together: the same count after this update (normally
  // all of them), decay, device and dtype (one kernel's lists share the last two).
  using GroupKey = std::tuple<int64_t, bool, at::DeviceType, at::DeviceIndex, at::ScalarType>;
  std::map<GroupKey, std::vector<size_t>> groups;
  for (size_t i = 0; i < params_.size(); ++i) {
    const at::Tensor& param = params_[i].second;
    if (!param.grad().defined() && !(shards_ && shards_->holds_gradients())) continue;
    const at::Device device = param.device();
    groups[{slots_[i].step + 1, slots_[i].decay, device.type(), device.index(), param.scalar_type()}].push_back(i);
  }

  for (const auto& [key, members] : groups) {
    const int64_t step = std::get<0>(key);
    const bool decay = std::get<1>(key);
    std::vector<at::Tensor> lists[4];  // params, grads, exp_avgs, exp_avg_sqs
    for (size_t i : members) {
      slots_[i].step = step;
      add_views(i, lists);
    }
    if (lists[0].empty()) continue;  // sharded: every run of these is another rank's
    // The kernel reads the step count from a float tensor on the parameters'
    // device, one per parameter; they all hold the same count, so one serves.
    const at::Tensor count = at::scalar_tensor(static_cast<double>(step), lists[0].front().options().dtype(at::kFloat));
    const std::vector<at::Tensor> steps(lists[0].size(), count);
    at::_fused_adamw_(lists[0], lists[1], lists[2], lists[3], /*max_exp_avg_sqs=*/{}, steps, lr, options_.beta1,
                      options_.beta2, decay ? options_.weight_decay : 0.0, options_.eps, /*amsgrad=*/false,
                      /*maximize=*/false);
    // The fused kernel leaves version counters alone (torch's own fused
    // AdamW too), so nothing would know the weights changed in place: not
    // autograd's check of saved tensors, not a copy kept until its weight
    // changes (summarize's packed weights for generating during training).
    for (const at::Tensor& param : lists[0]) param.unsafeGetTensorImpl()->bump_version();
  }
  if (shards_) shards_->all_gather();
}

void AdamW::add_views(size_t i, std::vector<at::Tensor> (&lists)[4]) const {
  const at::Tensor& param = params_[i].second;
  const Slot& slot = slots_[i];
  // Under dist.shard = "gradients" the rank's gradient runs are GradSync's
  // reduce-scattered blocks, and the parameter has no .grad.
  const bool held = shards_ && shards_->holds_gradients();
  at::Tensor grad;
  if (!held) {
    // The kernel walks a parameter, its gradient and moments as flat runs of
    // memory, so all must share strides: a gradient laid out otherwise (a
    // contiguous one for a transposed or channels-last weight) is copied
    // into the parameter's layout first.
    const at::Tensor& given = param.grad();
    grad = given.strides() == param.strides() ? given : at::empty_like(param).copy_(given);
  }
  if (!shards_) {
    lists[0].push_back(param);
    lists[1].push_back(grad);
    lists[2].push_back(slot.exp_avg);
    lists[3].push_back(slot.exp_avg_sq);
    return;
  }
  const at::Tensor p = memory_order(param), g = held ? grad : memory_order(grad);
  int64_t at = 0;
  for (const ElementRun& run : shards_->owned(i)) {
    lists[0].push_back(p.narrow(0, run.offset, run.length));
    lists[1].push_back(held ? shards_->gradient(run) : g.narrow(0, run.offset, run.length));
    lists[2].push_back(slot.exp_avg.narrow(0, at, run.length));
    lists[3].push_back(slot.exp_avg_sq.narrow(0, at, run.length));
    at += run.length;
  }
}

void AdamW::zero_grad() {
  for (auto& [name, param] : params_) param.mutable_grad().reset();
  if (shards_)
    for (const at::Tensor& block : shards_->gradients()) block.zero_();
}

NamedTensors AdamW::state() const {
  std::vector<at::Tensor> exp_avgs, exp_avg_sqs;
  for (const Slot& slot : slots_) {
    exp_avgs.push_back(slot.exp_avg);
    exp_avg_sqs.push_back(slot.exp_avg_sq);
  }
  if (shards_) {
    exp_avgs = shards_->gather(exp_avgs);
    exp_avg_sqs = shards_->gather(exp_avg_sqs);
    if (exp_avgs.empty()) return {};
  }
  NamedTensors out;
  out.reserve(3 * params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string& name = params_[i].first;
    const Slot& slot = slots_[i];
    out.emplace_back(name + ".exp_avg", exp_avgs[i]);
    out.emplace_back(name + ".exp_avg_sq", exp_avg_sqs[i]);
    out.emplace_back(name + ".step", torch::tensor(slot.step, torch::kInt64).reshape({}));
  }
  return out;
}

void AdamW::load_state(const NamedTensors& state) { load_state(MemorySource(state)); }

void AdamW::load_state(const TensorSource& state) {
  std::set<std::string> given;
  for (const std::string& name : state.names()) given.insert(name);

  std::vector<std::string> missing, misshapen;
  std::vector<int64_t> steps;  // read once, while checking
  for (const auto& [name, param] : params_) {
    for (const char* field : {".exp_avg", ".exp_avg_sq", ".step"}) {
      const std::string key = name + field;
      if (!given.erase(key)) {
        missing.push_back(key);
        continue;
      }
      const bool is_step = std::string(field) == ".step";
      // Steps are 0-d, read at once; a moment is read only to describe it
      // when its shape is wrong.
      bool fits = false;
      if (is_step) {
        const at::Tensor step = state.read(key);
        fits = is_step_count(step);
        steps.push_back(fits ? step.item<int64_t>() : 0);
      } else {
        fits = state.shape(key) == param.sizes().vec();
      }
      if (!fits) {
        misshapen.push_back(key + ": expected " +
                            (is_step ? std::string("a 0-d integer of 0 or more") : describe(param)) + ", got " +
                            describe(state.read(key)));
      }
    }
  }
  const std::vector<std::string> unexpected(given.begin(), given.end());

  if (!missing.empty() || !unexpected.empty() || !misshapen.empty()) {
    std::string message = "optimizer state does not match the parameters";
    if (!missing.empty()) message += "; " + std::to_string(missing.size()) + " missing: " + first_few(missing);
    if (!unexpected.empty()) {
      message += "; " + std::to_string(unexpected.size()) + " unexpected: " + first_few(unexpected);
    }
    if (!misshapen.empty()) {
      message += "; " + std::to_string(misshapen.size()) + " of another shape or type: " + first_few(misshapen);
    }
    throw UsageError(message);
  }

  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < slots_.size(); ++i) {
    const std::string& name = params_[i].first;
    load_moment(i, slots_[i].exp_avg, state, name + ".exp_avg");
    load_moment(i, slots_[i].exp_avg_sq, state, name + ".exp_avg_sq");
    slots_[i].step = steps[i];
  }
}

// A tensor at a time. Sharded, the runs of the whole moment are taken in the
// parameter's memory order: for a parameter laid out row-major (all but
// channels-last convolution weights) that is the stored order, and only the
// rows a run spans are read; otherwise the whole moment is read, laid out
// as the parameter is, once.
void AdamW::load_moment(size_t i, at::Tensor& moment, const TensorSource& state, const std::string& key) const {
  if (!shards_) {
    moment.copy_(state.read(key));
    return;
  }
  const at::Tensor& param = params_[i].second;
  const bool by_rows = param.dim() > 0 && param.numel() > 0 && param.is_contiguous();
  const int64_t row = by_rows ? param.numel() / param.size(0) : 0;
  at::Tensor laid_out;
  int64_t at = 0;
  for (const ElementRun& run : shards_->owned(i)) {
    at::Tensor part;
    if (by_rows) {
      const int64_t first = run.offset / row, end = (run.offset + run.length + row - 1) / row;
      part = state.read_rows(key, first, end).reshape({-1}).narrow(0, run.offset - first * row, run.length);
    } else {
      if (!laid_out.defined()) laid_out = memory_order(at::empty_like(param).copy_(state.read(key)));
      part = laid_out.narrow(0, run.offset, run.length);
    }
    moment.narrow(0, at, run.length).copy_(part);
    at += run.length;
  }
}

}  // namespace tandem
