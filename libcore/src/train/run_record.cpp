#include "tandem/train/run_record.h"

#include <cmath>
#include <filesystem>

#include "tandem/error.h"
#include "tandem/obs/log.h"

namespace tandem {

namespace fs = std::filesystem;

RunRecord::RunRecord(const TrainKeys& settings, std::string direction)
    : settings_(settings),
      direction_(std::move(direction)),
      checkpoints_((fs::path(settings.out_dir) / "checkpoints").string(), static_cast<int>(settings.keep_last)),
      best_(std::nan("")),
      stop_best_(std::nan("")) {
  if (settings.resume == "auto") {
    resume_from_ = checkpoints_.latest();
  } else if (settings.resume == "none") {
    if (auto latest = checkpoints_.latest())
      throw UsageError("train.out_dir '" + settings.out_dir + "' already holds checkpoints (latest " + *latest +
                       "): set train.resume = \"auto\" to continue that run, or choose another train.out_dir");
  } else {
    if (!fs::is_regular_file(settings.resume))
      throw UsageError("train.resume: checkpoint '" + settings.resume + "' not found");
    resume_from_ = settings.resume;
  }
}

std::optional<Checkpoint> RunRecord::open_resume() const {
  if (!resume_from_) return std::nullopt;
  if (settings_.resume != "auto") return open_checkpoint(*resume_from_);
  return checkpoints_.load_latest([](const std::string& path, const std::string& why) {
    log::warn("passing over ", path, ", which does not read back whole: ", why);
  });
}

std::string RunRecord::best_of() const { return settings_.best_metric + " " + direction_; }

bool RunRecord::beats(double value, double than, double delta) const {
  return direction_ == "max" ? value > than + delta : value < than - delta;
}

bool RunRecord::improves(double value) {
  if (!std::isnan(best_) && !beats(value, best_, 0.0)) return false;
  best_ = value;
  return true;
}

// Early stopping as Lightning's EarlyStopping: an evaluation improves only
// by beating the best so far by more than min_delta; `patience` evaluations
// in a row without that end the run.
bool RunRecord::count(double value) {
  const bool improved =
      std::isnan(stop_best_) ? !std::isnan(value) : beats(value, stop_best_, settings_.early_stop_min_delta);
  if (improved) {
    stop_best_ = value;
    stop_wait_ = 0;
  } else {
    ++stop_wait_;
  }
  return stop_wait_ >= settings_.early_stop_patience;
}

void RunRecord::write(CheckpointState& state) const {
  state["best_value"] = best_;
  state["best_of"] = best_of();
  state["early_stop_best"] = stop_best_;
  state["early_stop_wait"] = stop_wait_;
  state["stopped_early"] = int64_t{stopped_early_};
}

void RunRecord::restore(const Checkpoint& ckpt) {
  start_step_ = ckpt.get_int("step");
  saved_at_ = start_step_;
  restore_best(ckpt);
}

// A value of another metric (a loss of 2.3 against ROUGE's 0.3) would pick
// the wrong best model and stop the run at once. Checkpoints from before
// "best_of" are taken as of this run's.
void RunRecord::restore_best(const Checkpoint& ckpt) {
  if (ckpt.state.count("best_of") && ckpt.get_string("best_of") != best_of()) {
    log::info(ckpt.get_string("best_of"), " was the run's best metric and direction, now ", best_of(),
              ": the best model and early stopping start over");
    return;
  }
  best_ = ckpt.get_double("best_value");
  if (!ckpt.state.count("early_stop_wait")) return;
  stop_best_ = ckpt.get_double("early_stop_best");
  stop_wait_ = ckpt.get_int("early_stop_wait");
  stopped_early_ = ckpt.get_int("stopped_early") != 0;
  // The stop follows from the patience, which is this run's to set, as
  // every other setting a resume changes: with patience left (or none
  // asked for), a run that stopped early trains on.
  const int64_t patience = settings_.early_stop_patience;
  if (stopped_early_ && (patience == 0 || stop_wait_ < patience)) {
    stopped_early_ = false;
    log::info("the run stopped early at step ", ckpt.get_int("step"), " after ", stop_wait_,
              " evaluations without improvement; with ", settings_.key("early_stop_patience"), " = ", patience,
              " it trains on");
  }
}

}  // namespace tandem
