#pragma once
// A run's checkpoint directory: dir/step-00000100.h5 and so on, pruned to the
// newest few, with the latest found again on resume.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tandem/io/checkpoint.h"

namespace tandem {

class CheckpointDir {
 public:
  // keep_last <= 0 keeps every checkpoint.
  CheckpointDir(std::string dir, int keep_last);

  const std::string& dir() const { return dir_; }
  std::string path_for(int64_t step) const;

  // Saves the step's checkpoint (creating the directory), then deletes the
  // oldest ones beyond keep_last and temporary files left by crashed saves.
  // Returns the path written.
  std::string save(int64_t step, const TensorSets& sets, const CheckpointState& state);

  // Complete checkpoints only (temporary files are never listed), by step.
  std::vector<std::string> list() const;
  std::optional<std::string> latest() const;

  // The newest checkpoint that reads back whole (every tensor's checksum
  // holds), or none if there are none. One that does not (a flipped bit, a
  // copy cut short) is passed over, and `passed_over` hears its path and
  // why: a damaged file costs one checkpoint interval, not the run. Throws
  // the newest one's UsageError when none reads back. Opened
  // (open_checkpoint): the walk that checks it reads it in another process,
  // and the sets stay in the file until the caller reads them.
  std::optional<Checkpoint> load_latest(
      const std::function<void(const std::string& path, const std::string& why)>& passed_over) const;

 private:
  std::string dir_;
  int keep_last_;
};

}  // namespace tandem
