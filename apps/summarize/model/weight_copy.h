#pragma once
// A tensor made from a weight for faster inference (a transposed copy, a
// packed layout), kept between decoding steps and made again once the weight
// changes: in place (an optimizer step, a load: its version moves) or by
// replacement (other storage; the old one is held, so that a new one cannot
// take its address). The model's copies live while it is in evaluation mode:
// training changes the weights every step, so a copy kept through it would
// only hold memory (GPT-2's matrices once more) until the next evaluation.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <utility>

namespace summarize {

class WeightCopy {
 public:
  // The copy of `weight`, made by make(weight) when there is none yet or the
  // weight has changed since. An undefined result is kept too (make found
  // nothing to do) until the weight changes.
  template <class Make>
  const at::Tensor& get(const at::Tensor& weight, Make&& make) {
    const bool stale = !made_ || !weight.storage().is_alias_of(source_) || weight.storage_offset() != offset_ ||
                       weight._version() != version_;
    if (stale) {
      copy_ = std::forward<Make>(make)(weight);
      source_ = weight.storage();
      offset_ = weight.storage_offset();
      version_ = weight._version();
      made_ = true;
    }
    return copy_;
  }
  // Drops the copy and what it was made from.
  void clear() { *this = WeightCopy(); }

 private:
  at::Tensor copy_;
  c10::Storage source_;
  int64_t offset_ = 0, version_ = 0;
  bool made_ = false;
};

}  // namespace summarize
