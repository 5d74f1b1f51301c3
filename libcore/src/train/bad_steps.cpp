#include "tandem/train/bad_steps.h"

#include <cmath>
#include <stdexcept>

#include "tandem/obs/log.h"
#include "tandem/text/message_text.h"
#include "tandem/train/loss_scaler.h"

namespace tandem {

void BadSteps::after_step(int64_t step, bool applied, double loss, const LossScaler& scaler,
                          const std::string& checkpoint_dir) {
  if (applied) {
    in_row_ = 0;
    return;
  }
  const bool loss_finite = std::isfinite(loss);
  const bool counted = !scaler.enabled() || !loss_finite || scaler.scale() < kMinLossScale;
  const std::string scale = scaler.enabled() ? " (loss scale now " + number_text(scaler.scale()) + ")" : "";
  log::warn("step ", step + 1, loss_finite ? ": non-finite gradients" : ": non-finite loss", ", update skipped", scale);
  if (!counted) return;
  if (++in_row_ < max_in_row_) return;
  std::string why = "step " + std::to_string(step + 1) + ": loss or gradients not finite for " +
                    std::to_string(in_row_) + " steps in a row (" + key_ + "); stopping. The last good checkpoint in " +
                    checkpoint_dir + " is untouched";
  if (scaler.enabled())
    why += ". Under fp16 the loss scale is " + number_text(scaler.scale()) +
           (loss_finite ? " (below 2^-10: the gradients overflow at any scale)" : " and the loss itself overflows") +
           "; train.precision = \"bf16\" (GPUs of compute capability 8.0 or more) or \"fp32\" has the range "
           "fp16 lacks";
  throw std::runtime_error(why);
}

}  // namespace tandem
