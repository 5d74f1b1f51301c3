#include "tandem/train/schedule.h"

#include <cmath>

#include "tandem/error.h"
#include "tandem/text/message_text.h"

namespace tandem {

double Schedule::at(int64_t step) const {
  if (step < warmup_steps) return lr * static_cast<double>(step + 1) / static_cast<double>(warmup_steps + 1);
  if (kind == "constant") return lr;
  if (step >= total_steps) return min_lr;
  const double ratio = static_cast<double>(step - warmup_steps) / static_cast<double>(total_steps - warmup_steps);
  const double pi = std::acos(-1.0);
  const double coeff = kind == "cosine" ? 0.5 * (1.0 + std::cos(pi * ratio)) : 1.0 - ratio;
  return min_lr + coeff * (lr - min_lr);
}

void Schedule::validate(const KeyNames& key) const {
  if (kind != "constant" && kind != "cosine" && kind != "linear") {
    throw UsageError(key("schedule") + " must be one of constant|cosine|linear, got \"" + kind + "\"");
  }
  if (!(lr > 0.0) || !std::isfinite(lr))
    throw UsageError(key("lr") + " must be a positive number, got " + number_text(lr));
  if (kind != "constant") {
    if (!(min_lr >= 0.0) || !std::isfinite(min_lr)) {
      throw UsageError(key("min_lr") + " must be 0 or more, got " + number_text(min_lr));
    }
    if (min_lr > lr) {
      throw UsageError(key("min_lr") + " (" + number_text(min_lr) + ") must not exceed " + key("lr") + " (" +
                       number_text(lr) + ") for a " + kind + " schedule");
    }
  }
  if (warmup_steps < 0) {
    throw UsageError(key("warmup_steps") + " must be 0 or more, got " + std::to_string(warmup_steps));
  }
  if (warmup_steps >= total_steps) {
    throw UsageError(key("warmup_steps") + " (" + std::to_string(warmup_steps) +
                     ") must be less than the run's total steps (" + std::to_string(total_steps) + ")");
  }
}

}  // namespace tandem
