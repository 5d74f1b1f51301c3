#include "tandem/train/adamw.h"

#include <torch/torch.h>

#include <algorithm>
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

AdamW::AdamW(NamedTensors params, AdamWOptions options, DecayRule decay, const ParamShards* shards,
             const std::vector<at::Tensor>& masters)
    : params_(std::move(params)), options_(options), shards_(shards) {
  // Checked before anything, the same on every rank: a rank refusing alone
  // would leave the others waiting in a collective.
  if (options_.eight_bit && shards_ && shards_->align() % kQuantBlock != 0)
    throw std::invalid_argument("AdamW: 8-bit moments need shards aligned to " + std::to_string(kQuantBlock) +
                                " elements, not " + std::to_string(shards_->align()));
  has_masters_ = std::any_of(masters.begin(), masters.end(), [](const at::Tensor& m) { return m.defined(); });
  if (!masters.empty() && masters.size() != params_.size())
    throw std::invalid_argument("AdamW: " + std::to_string(masters.size()) + " masters for " +
                                std::to_string(params_.size()) + " parameters");
  if (has_masters_ && !(shards_ && shards_->holds_gradients()))
    throw std::invalid_argument("AdamW: fp32 masters need shards that hold the gradients");
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
    const size_t index = slots_.size();
    const at::Tensor master = index < masters.size() ? masters[index] : at::Tensor();
    if (master.defined()) {
      if (master.sizes() != param.sizes() || master.scalar_type() != at::kFloat)
        throw std::invalid_argument("AdamW: the master of '" + name + "' is not an fp32 tensor of its shape");
      const at::Tensor from = memory_order(master);
      std::vector<at::Tensor> runs;
      for (const ElementRun& run : runs_of(index)) runs.push_back(from.narrow(0, run.offset, run.length));
      slot.master = (runs.empty() ? at::empty({0}, master.options()) : at::cat(runs)).to(param.device());
    }
    // The moments of the fp32 values the update writes: the master's, or the
    // parameter's. A half-precision parameter without a master would meet
    // the fp32 gradient blocks in one kernel.
    const at::Tensor& values = master.defined() ? master : param;
    if (shards_ && shards_->holds_gradients() && values.scalar_type() != at::kFloat)
      throw std::invalid_argument("AdamW: parameter '" + name + "' is " +
                                  std::string(c10::toString(values.scalar_type())) +
                                  " without an fp32 master, and the shards' gradients are fp32");
    if (options_.eight_bit && keeps_8bit(name, values, options_.fp32_moments)) {
      if (!signed_map_.defined()) {
        signed_map_ = dynamic_map(true).to(param.device());
        unsigned_map_ = dynamic_map(false).to(param.device());
      }
      // Sharded, the runs end to end: each starts at a block of the tensor
      // (the trainer aligns the shards to kQuantBlock), so their blocks are
      // the whole tensor's.
      int64_t elements = 0, blocks = 0;
      for (const ElementRun& run : runs_of(slots_.size())) {
        elements += run.length;
        blocks += quant_blocks(run.length);
      }
      const auto options = param.options();
      // The codes of 0 and scales of 0: zero moments, as torch starts them.
      const int64_t zero_signed = (signed_map_ == 0).nonzero().item<int64_t>();
      for (QuantizedMoment* q : {&slot.q_avg, &slot.q_avg_sq}) {
        q->is_signed = q == &slot.q_avg;
        q->codes = torch::full({elements}, q->is_signed ? zero_signed : 0, options.dtype(at::kByte));
        q->absmax = torch::zeros({blocks}, options.dtype(at::kFloat));
      }
    } else if (shards_) {
      int64_t owned = 0;
      for (const ElementRun& run : shards_->owned(slots_.size())) owned += run.length;
      slot.exp_avg = torch::zeros({owned}, values.options());
    } else {
      slot.exp_avg = torch::zeros_like(param, at::MemoryFormat::Preserve);
    }
    if (slot.exp_avg.defined()) slot.exp_avg_sq = torch::zeros_like(slot.exp_avg);
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
  // all of them), decay, device and the dtype the update writes (one kernel's
  // lists share the last two).
  using GroupKey = std::tuple<int64_t, bool, at::DeviceType, at::DeviceIndex, at::ScalarType>;
  std::map<GroupKey, std::vector<size_t>> groups;
  for (size_t i = 0; i < params_.size(); ++i) {
    const at::Tensor& param = params_[i].second;
    if (!param.grad().defined() && !(shards_ && shards_->holds_gradients())) continue;
    const at::Device device = param.device();
    const at::ScalarType dtype = slots_[i].master.defined() ? at::kFloat : param.scalar_type();
    groups[{slots_[i].step + 1, slots_[i].decay, device.type(), device.index(), dtype}].push_back(i);
  }

  for (const auto& [key, members] : groups) {
    const int64_t step = std::get<0>(key);
    const bool decay = std::get<1>(key);
    std::vector<at::Tensor> lists[4];  // params, grads, exp_avgs, exp_avg_sqs
    for (size_t i : members) {
      slots_[i].step = step;
      if (slots_[i].quantized()) {
        step_quantized(i, step, lr);
      } else {
        add_views(i, lists);
      }
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
    for (size_t i : members)
      if (!slots_[i].quantized()) write_back(i);
  }
  if (shards_) shards_->all_gather();
}

// The fused kernel over each group of blocks, on fp32 copies of their
// moments. A group starts a multiple of 2048 elements into the tensor, so
// (shard.h's note) it rounds as the whole tensor's update would. Sharded,
// the same over each owned run, whose blocks lie end to end in the slot.
void AdamW::step_quantized(size_t i, int64_t step, double lr) {
  const at::Tensor& param = params_[i].second;
  Slot& slot = slots_[i];
  const bool held = shards_ && shards_->holds_gradients();
  at::Tensor g;
  if (!held) {
    const at::Tensor& given = param.grad();
    g = memory_order(given.strides() == param.strides() ? given : at::empty_like(param).copy_(given));
  }
  const at::Tensor p = updated(i);
  const at::Tensor count = at::scalar_tensor(static_cast<double>(step), p.options().dtype(at::kFloat));
  int64_t done = 0;  // the run's first element in the slot's codes (and master)
  for (const ElementRun& run : runs_of(i)) {
    const at::Tensor grad = held ? shards_->gradient(run) : g.narrow(0, run.offset, run.length);
    const int64_t base = slot.master.defined() ? done : run.offset;  // the run's first element in p
    for (int64_t first = 0; first < run.length; first += kStepElements) {
      const int64_t length = std::min(kStepElements, run.length - first), blocks = quant_blocks(length);
      const int64_t code = done + first, block = done / kQuantBlock + first / kQuantBlock;
      at::Tensor moments[2];
      QuantizedMoment* quantized[2] = {&slot.q_avg, &slot.q_avg_sq};
      for (int k = 0; k < 2; ++k) {
        const QuantizedMoment& q = *quantized[k];
        moments[k] = at::empty({length}, p.options().dtype(at::kFloat));
        dequantize_blockwise(q.codes.narrow(0, code, length), q.absmax.narrow(0, block, blocks), map_of(q), moments[k]);
      }
      at::_fused_adamw_({p.narrow(0, base + first, length)}, {grad.narrow(0, first, length)}, {moments[0]},
                        {moments[1]}, /*max_exp_avg_sqs=*/{}, {count}, lr, options_.beta1, options_.beta2,
                        slot.decay ? options_.weight_decay : 0.0, options_.eps, /*amsgrad=*/false, /*maximize=*/false);
      for (int k = 0; k < 2; ++k) {
        const QuantizedMoment& q = *quantized[k];
        quantize_blockwise(moments[k], map_of(q), q.codes.narrow(0, code, length), q.absmax.narrow(0, block, blocks));
      }
    }
    done += run.length;
  }
  if (slot.master.defined()) {
    write_back(i);
  } else {
    param.unsafeGetTensorImpl()->bump_version();
  }
}

int64_t AdamW::state_bytes() const {
  int64_t bytes = 0;
  for (const Slot& slot : slots_)
    for (const at::Tensor* t : {&slot.master, &slot.exp_avg, &slot.exp_avg_sq, &slot.q_avg.codes, &slot.q_avg.absmax,
                                &slot.q_avg_sq.codes, &slot.q_avg_sq.absmax})
      if (t->defined()) bytes += static_cast<int64_t>(t->nbytes());
  return bytes;
}

at::Tensor AdamW::updated(size_t i) const {
  const Slot& slot = slots_[i];
  return slot.master.defined() ? slot.master : memory_order(params_[i].second);
}

void AdamW::write_back(size_t i, bool average) const {
  const Slot& slot = slots_[i];
  if (!slot.master.defined()) return;
  const at::Tensor& from = average ? slot.average : slot.master;
  const at::Tensor& param = params_[i].second;
  const at::Tensor p = memory_order(param);
  int64_t at = 0;
  for (const ElementRun& run : runs_of(i)) {
    p.narrow(0, run.offset, run.length).copy_(from.narrow(0, at, run.length));
    at += run.length;
  }
  param.unsafeGetTensorImpl()->bump_version();
}

std::vector<at::Tensor> AdamW::masters(bool average) const {
  if (!has_masters_ || (average && !has_average_)) return {};
  std::vector<at::Tensor> local;
  for (const Slot& slot : slots_) local.push_back(average ? slot.average : slot.master);
  return shards_->gather(local);
}

void AdamW::load_masters(const TensorSource& weights, bool average) {
  if (average && !has_average_) throw std::logic_error("AdamW::load_masters: no average started");
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    if (slot.master.defined())
      load_moment(i, average ? slot.average : slot.master, weights, params_[i].first, false, false);
  }
}

void AdamW::start_average() {
  torch::NoGradGuard no_grad;
  for (Slot& slot : slots_)
    if (slot.master.defined()) slot.average = slot.master.clone();
  has_average_ = has_masters_;
}

void AdamW::update_average(double decay) {
  if (!(decay >= 0.0 && decay <= 1.0))
    throw std::invalid_argument("AdamW::update_average: decay must be in [0, 1], got " + std::to_string(decay));
  torch::NoGradGuard no_grad;
  // As Ema::update: average += (1 - decay) (master - average), one lerp.
  std::vector<at::Tensor> averages, masters;
  for (const Slot& slot : slots_) {
    if (!slot.average.defined()) continue;
    averages.push_back(slot.average);
    masters.push_back(slot.master);
  }
  if (!averages.empty()) at::_foreach_lerp_(averages, masters, 1.0 - decay);
}

void AdamW::write_masters(bool average) const {
  if (!has_masters_) return;
  if (average && !has_average_) throw std::logic_error("AdamW::write_masters: no average started");
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < slots_.size(); ++i) write_back(i, average);
  shards_->all_gather();
}

std::vector<ElementRun> AdamW::runs_of(size_t i) const {
  if (shards_) return shards_->owned(i);
  return {{0, params_[i].second.numel(), 0, 0}};
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
    lists[0].push_back(slot.master.defined() ? slot.master.narrow(0, at, run.length)
                                             : p.narrow(0, run.offset, run.length));
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
  // exp_avg and exp_avg_sq: fp32 moments, 8-bit codes, their scales (each
  // undefined where the slot keeps the other form).
  std::vector<at::Tensor> moments[2], codes[2], scales[2];
  for (const Slot& slot : slots_) {
    int k = 0;
    for (const auto& [moment, q] : {std::pair{&slot.exp_avg, &slot.q_avg}, std::pair{&slot.exp_avg_sq, &slot.q_avg_sq}}) {
      moments[k].push_back(*moment);
      codes[k].push_back(q->codes);
      scales[k].push_back(q->absmax);
      ++k;
    }
  }
  if (shards_) {
    for (int k = 0; k < 2; ++k) {
      moments[k] = shards_->gather(moments[k]);
      if (!options_.eight_bit) continue;
      codes[k] = shards_->gather(codes[k]);
      scales[k] = shards_->gather_blocks(scales[k], kQuantBlock);
    }
    if (moments[0].empty()) return {};
    // Gathered codes come shaped as their parameters: the state keeps them
    // flat, in memory order.
    for (auto& list : codes)
      for (at::Tensor& c : list)
        if (c.defined()) c = memory_order(c);
  }
  NamedTensors out;
  out.reserve(5 * params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string& name = params_[i].first;
    const char* keys[2] = {".exp_avg", ".exp_avg_sq"};
    for (int k = 0; k < 2; ++k) {
      if (slots_[i].quantized()) {
        out.emplace_back(name + keys[k] + ".codes", codes[k][i]);
        out.emplace_back(name + keys[k] + ".absmax", scales[k][i]);
      } else {
        out.emplace_back(name + keys[k], moments[k][i]);
      }
    }
    out.emplace_back(name + ".step", torch::tensor(slots_[i].step, torch::kInt64).reshape({}));
  }
  return out;
}

int64_t AdamW::load_state(const NamedTensors& state) { return load_state(MemorySource(state)); }

bool AdamW::check_entry(size_t i, const TensorSource& state, std::set<std::string>& given,
                        std::vector<std::string>& missing, std::vector<std::string>& misshapen) const {
  const auto& [name, param] = params_[i];
  // The 8-bit form when its first entry is there, else the fp32 form.
  const bool stored_quantized = given.count(name + ".exp_avg.codes") > 0;
  std::vector<std::pair<std::string, std::string>> expected;  // key, what it must be
  const std::string codes = "Byte [" + std::to_string(param.numel()) + "]";
  const std::string scales = "Float [" + std::to_string(quant_blocks(param.numel())) + "]";
  for (const char* moment : {".exp_avg", ".exp_avg_sq"}) {
    if (stored_quantized) {
      expected.emplace_back(name + moment + ".codes", codes);
      expected.emplace_back(name + moment + ".absmax", scales);
    } else {
      expected.emplace_back(name + moment, describe(param));
    }
  }
  for (const auto& [key, want] : expected) {
    if (!given.erase(key)) {
      missing.push_back(key);
      continue;
    }
    const std::vector<int64_t> shape = state.shape(key);
    const bool codes_key = key.ends_with(".codes");
    bool fits = !stored_quantized ? shape == param.sizes().vec()
                : codes_key       ? shape == std::vector<int64_t>{param.numel()}
                                  : shape == std::vector<int64_t>{quant_blocks(param.numel())};
    // The 8-bit form is copied as stored, so its type must be the one
    // written: codes of another type would be converted, not decoded. No
    // rows read tell it.
    if (fits && stored_quantized)
      fits = state.read_rows(key, 0, 0).scalar_type() == (codes_key ? at::kByte : at::kFloat);
    if (!fits) misshapen.push_back(key + ": expected " + want + ", got " + describe(state.read(key)));
  }
  return stored_quantized;
}

int64_t AdamW::load_state(const TensorSource& state) {
  std::set<std::string> given;
  for (const std::string& name : state.names()) given.insert(name);

  std::vector<std::string> missing, misshapen;
  std::vector<int64_t> steps;  // read once, while checking
  std::vector<bool> stored_quantized;
  for (size_t i = 0; i < params_.size(); ++i) {
    stored_quantized.push_back(check_entry(i, state, given, missing, misshapen));
    const std::string key = params_[i].first + ".step";
    if (!given.erase(key)) {
      missing.push_back(key);
      steps.push_back(0);
      continue;
    }
    const at::Tensor step = state.read(key);
    const bool fits = is_step_count(step);
    steps.push_back(fits ? step.item<int64_t>() : 0);
    if (!fits) misshapen.push_back(key + ": expected a 0-d integer of 0 or more, got " + describe(step));
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
  int64_t converted = 0;
  for (size_t i = 0; i < slots_.size(); ++i) {
    const std::string& name = params_[i].first;
    Slot& slot = slots_[i];
    if (slot.quantized()) {
      load_quantized(i, slot.q_avg, state, name + ".exp_avg", stored_quantized[i]);
      load_quantized(i, slot.q_avg_sq, state, name + ".exp_avg_sq", stored_quantized[i]);
    } else {
      load_moment(i, slot.exp_avg, state, name + ".exp_avg", stored_quantized[i], true);
      load_moment(i, slot.exp_avg_sq, state, name + ".exp_avg_sq", stored_quantized[i], false);
    }
    converted += slot.quantized() != stored_quantized[i];
    slot.step = steps[i];
  }
  return converted;
}

// The 8-bit form copied as it is (sharded, the rows of each run and of its
// blocks' scales); the fp32 form read as load_moment reads it and quantised
// a group of blocks at a time, as step() does.
void AdamW::load_quantized(size_t i, QuantizedMoment& moment, const TensorSource& state, const std::string& key,
                           bool stored_quantized) const {
  const at::Tensor& param = params_[i].second;
  at::Tensor values;  // the fp32 form's runs end to end, in memory order
  if (!stored_quantized && shards_) {
    values = at::empty({moment.codes.numel()}, param.options().dtype(at::kFloat));
    load_moment(i, values, state, key, false, moment.is_signed);
  } else if (!stored_quantized) {
    values = memory_order(at::empty_like(param, param.options().dtype(at::kFloat)).copy_(state.read(key)));
  }
  int64_t done = 0;
  for (const ElementRun& run : runs_of(i)) {
    const int64_t block = run.offset / kQuantBlock, blocks = quant_blocks(run.length);
    at::Tensor codes = moment.codes.narrow(0, done, run.length);
    at::Tensor absmax = moment.absmax.narrow(0, done / kQuantBlock, blocks);
    if (stored_quantized) {
      codes.copy_(state.read_rows(key + ".codes", run.offset, run.offset + run.length));
      absmax.copy_(state.read_rows(key + ".absmax", block, block + blocks));
    } else {
      for (int64_t first = 0; first < run.length; first += kStepElements) {
        const int64_t length = std::min(kStepElements, run.length - first);
        quantize_blockwise(values.narrow(0, done + first, length), map_of(moment), codes.narrow(0, first, length),
                           absmax.narrow(0, first / kQuantBlock, quant_blocks(length)));
      }
    }
    done += run.length;
  }
}

// A tensor at a time. Sharded, the runs of the whole moment are taken in the
// parameter's memory order: for a parameter laid out row-major (all but
// channels-last convolution weights) that is the stored order, and only the
// rows a run spans are read; otherwise the whole moment is read, laid out
// as the parameter is, once.
// Stored in 8 bits, the moment is dequantised whole (in memory order) and
// the runs taken from it.
void AdamW::load_moment(size_t i, at::Tensor& moment, const TensorSource& state, const std::string& key,
                        bool stored_quantized, bool is_signed) const {
  const at::Tensor& param = params_[i].second;
  if (stored_quantized) {
    // On the host, where the map is: a state given in memory may be on a GPU.
    const at::Tensor codes = state.read(key + ".codes").reshape({-1}).to(at::kCPU);
    const at::Tensor values = at::empty({codes.numel()}, at::kFloat);
    dequantize_blockwise(codes, state.read(key + ".absmax").reshape({-1}).to(at::kCPU, at::kFloat),
                         dynamic_map(is_signed), values);
    if (!shards_) {
      memory_order(moment).copy_(values);
      return;
    }
    int64_t at = 0;
    for (const ElementRun& run : shards_->owned(i)) {
      moment.narrow(0, at, run.length).copy_(values.narrow(0, run.offset, run.length));
      at += run.length;
    }
    return;
  }
  if (!shards_) {
    moment.copy_(state.read(key));
    return;
  }
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
      if (!laid_out.defined())
        laid_out =
            memory_order(at::empty_like(param, param.options().dtype(moment.scalar_type())).copy_(state.read(key)));
      part = laid_out.narrow(0, run.offset, run.length);
    }
    moment.narrow(0, at, run.length).copy_(part);
    at += run.length;
  }
}

}  // namespace tandem
