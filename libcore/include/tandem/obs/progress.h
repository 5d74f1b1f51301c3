#pragma once
// A progress line with rate and ETA. On a terminal it is redrawn in place; in
// a log file (Slurm, nohup, Kaggle) it becomes a plain line every few seconds,
// since carriage returns make such files unreadable.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>

namespace tandem {

class Progress {
 public:
  using Clock = std::function<double()>;  // seconds; injectable for tests

  Progress(std::string label, int64_t total, std::ostream& out, bool redraw, double plain_every_s = 30.0,
           Clock clock = {});
  // `done` units of `total` finished; `extra` is appended (e.g. "loss 2.31").
  void update(int64_t done, const std::string& extra = "");
  // Prints the last state once more (final line) and ends a redrawn line.
  void finish();

  // "45s", "3m05s", "2h07m".
  static std::string duration(double seconds);

 private:
  std::string line(int64_t done, const std::string& extra) const;
  std::string label_;
  int64_t total_;
  std::ostream& out_;
  bool redraw_;
  double every_s_;
  Clock clock_;
  double start_, last_print_ = -1e300;
  int64_t done_ = 0;
  std::string extra_;
  size_t last_width_ = 0;
};

// Whether stderr, where progress is shown, is a terminal: whether a Progress
// line may be redrawn.
bool stderr_is_terminal();
// Whether a progress line should be redrawn in place: on a terminal, and not
// under mpirun or srun, which hand ranks a pseudo-terminal even when the job's
// output goes to a file, where carriage returns would garble it.
bool console_redraws();

}  // namespace tandem
