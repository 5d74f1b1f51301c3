#pragma once
// What a program's exit status says, and the error that carries bad user input
// out of the program before any work is done.
#include <stdexcept>
#include <string>

namespace tandem {

// Exit statuses every tandem program uses; Slurm scripts and tests rely on them.
enum ExitStatus : int {
  kExitOk = 0,
  kExitFailure = 1,   // a fault while working (I/O, numerics, a dead rank)
  kExitUsage = 2,     // bad input from the user: config, flags, files
  kExitWatchdog = 3,  // a collective ran past dist.timeout_s (another rank died or hung)
  // Stopped by SIGUSR1/SIGTERM after saving a checkpoint: run again (same
  // command, train.resume = "auto") to continue. 75 is EX_TEMPFAIL, "try again".
  kExitRequeue = 75,
};

// Thrown for anything the user gave us that is wrong. The message must name the
// file, key or row and say what was expected; main() turns it into exit 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Thrown by every communicator call (a launch, a wait) once the watchdog has
// fired: the collective it timed out on, or one it aborted, may have left a
// partial result in a tensor, and nothing computed from it may reach an
// optimizer step, a checkpoint or a model file. PyTorch's ProcessGroupNCCL
// likewise refuses collectives on an aborted communicator. main() turns it
// into exit 3, the watchdog's status, while the watchdog ends the job.
struct JobEnding : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace tandem
