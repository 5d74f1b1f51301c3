#pragma once
// What a run keeps of its own history so that it can be continued where it
// left off: its checkpoint folder and the checkpoint it resumes from, the
// step it starts at and the step it last saved, the best evaluation so far
// (which picks models/best_model.h5) and early stopping's count.
//
// The contract:
// - Made from the run's settings before any work: train.resume is checked
//   against out_dir's checkpoints there (UsageError naming the key).
// - beats() is the one rule of the best model and of early stopping: better
//   by more than a delta in the direction the record is made with
//   (train.best_mode, "auto" resolved to the metric's own).
// - improves(v) records v as the best when it beats the best so far (any v
//   beats none); count(v) counts one evaluation for early stopping and says
//   whether this rank's patience ran out. Whether the run stops is the ranks'
//   joint decision (World::any), handed back through stop_early().
// - write() and restore() are the fields a checkpoint keeps. restore starts
//   the best value and the count over when the checkpoint judged by another
//   metric or direction (best_of()), and trains on after an early stop when
//   this run's patience is not used up.
#include <cstdint>
#include <optional>
#include <string>

#include "tandem/io/checkpoint_dir.h"
#include "tandem/train/train_keys.h"

namespace tandem {

class RunRecord {
 public:
  // `settings` must outlive the record; `direction`, "min" or "max", is
  // which way train.best_metric is better.
  RunRecord(const TrainKeys& settings, std::string direction);

  CheckpointDir& checkpoints() { return checkpoints_; }
  const std::optional<std::string>& resume_from() const { return resume_from_; }
  // The checkpoint to resume from, read: under train.resume = "auto" the
  // newest that reads back whole; none for a fresh run.
  std::optional<Checkpoint> open_resume() const;

  int64_t start_step() const { return start_step_; }
  // The step of the run's newest checkpoint; -1: none yet.
  int64_t saved_at() const { return saved_at_; }
  void saved(int64_t step) { saved_at_ = step; }

  // What the best value and early stopping's count are of: "METRIC MODE".
  std::string best_of() const;
  bool beats(double value, double than, double delta) const;
  double best() const { return best_; }
  bool improves(double value);

  bool count(double value);
  void stop_early(bool stops) { stopped_early_ = stops; }
  bool stopped_early() const { return stopped_early_; }
  double stop_best() const { return stop_best_; }
  int64_t stop_wait() const { return stop_wait_; }

  void write(CheckpointState& state) const;
  void restore(const Checkpoint& ckpt);

 private:
  void restore_best(const Checkpoint& ckpt);

  const TrainKeys& settings_;
  std::string direction_;
  CheckpointDir checkpoints_;
  std::optional<std::string> resume_from_;
  int64_t start_step_ = 0, saved_at_ = -1;
  double best_;
  // Early stopping (train.early_stop_patience): the best value that counted
  // as an improvement, the evaluations since, and whether the run ended so.
  double stop_best_;
  int64_t stop_wait_ = 0;
  bool stopped_early_ = false;
};

}  // namespace tandem
