#pragma once
// SIGUSR1 (Slurm's warning before the time limit, `scancel --signal=USR1`) and
// SIGTERM (preemption, `kill`) ask the run to stop at the next step boundary,
// after a checkpoint, rather than die mid-step. The handler only sets a flag;
// the trainer polls it and all ranks agree before anyone stops.
namespace tandem {

// Installs the handlers (idempotent).
void install_preemption_handlers();
bool preemption_requested();
// The signal that asked, for the log (0 if none).
int preemption_signal();

}  // namespace tandem
