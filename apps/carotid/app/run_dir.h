#pragma once
// Where a training run writes: a new train_YYYYMMDD_HHMMSS folder under
// train.out_dir for each run, as the users' scripts did, except when the run
// continues one: cmd.run_dir names it, or the job is a Slurm job requeued
// after preemption, which finds the folder its first start created.
#include <string>

namespace tandem {
class Config;
class World;
}  // namespace tandem

namespace carotid {

// Collective; every rank gets the same path. Nothing is created yet, so a
// run stopped by bad input leaves no empty folder behind. `prefix` names new
// folders: train_..., or cv_... for a cross-validation.
std::string choose_run_dir(tandem::World& world, const tandem::Config& config, const std::string& prefix = "train");

// What choose_run_dir gives: cmd.run_dir; else, under Slurm, the folder the
// job's marker names, when it exists; else a new name.
std::string pick_run_dir(const tandem::Config& config, const std::string& prefix = "train");

// Rank 0, once the input is checked: creates the folder and, under Slurm, the
// marker .slurm-job-<SLURM_JOB_ID> beside it (in the train.out_dir it was
// picked in) that names it.
void create_run_dir(const tandem::Config& config, const std::string& dir);

}  // namespace carotid
