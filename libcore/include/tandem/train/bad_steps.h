#pragma once
// When a run of skipped steps means the run is dead. A step whose gradients
// are not finite is skipped. Under fp16 that is routine: the loss scaler
// halves its scale and the next step usually fits, so such skips are not
// counted. Three kinds of skip cannot cure themselves, and are counted:
// - any skip without a loss scaler (fp32, bf16): nothing changes between
//   steps that would make the next one finite;
// - a non-finite loss: the forward pass overflowed before any scaling, so a
//   smaller scale changes nothing;
// - a skip with the scale below kMinLossScale: GradScaler's users treat a
//   scale that low as a dead run, and halving on would reach 0 after about
//   1,100 skips and train on zero gradients.
// train.max_bad_steps such skips in a row end the run with a message that
// names the step, the scale and the ways out.
#include <cstdint>
#include <string>

namespace tandem {

class LossScaler;

inline constexpr double kMinLossScale = 1.0 / 1024;  // 2^-10

class BadSteps {
 public:
  // `max_in_row`: train.max_bad_steps; `key`: its full name, for messages.
  BadSteps(int64_t max_in_row, std::string key) : max_in_row_(max_in_row), key_(std::move(key)) {}

  // After step `step` (0-based), with the step's reduced loss and the scaler
  // already updated for it. Throws std::runtime_error once the counted skips
  // in a row reach the limit; `checkpoint_dir` is named as untouched.
  void after_step(int64_t step, bool applied, double loss, const LossScaler& scaler,
                  const std::string& checkpoint_dir);
  int64_t in_row() const { return in_row_; }

 private:
  int64_t max_in_row_;
  std::string key_;
  int64_t in_row_ = 0;
};

}  // namespace tandem
