// A world of one that its launcher started as several tasks (srun with an
// MPI lacking PMIx support) is refused before any work, naming the variable.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tandem/dist/world.h"

namespace {

std::string verdict(int mpi_size, const std::map<std::string, std::string>& env) {
  return tandem::launcher_disagrees(mpi_size, [&](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(LauncherCheck, RefusesOneRankWhenTheLauncherStartedSeveral) {
  for (const char* name : {"SLURM_STEP_NUM_TASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    const std::string why = verdict(1, {{name, "4"}});
    EXPECT_NE(why.find(std::string(name) + "=4"), std::string::npos) << why;
    EXPECT_NE(why.find("MPI sees a world of 1"), std::string::npos) << why;
    EXPECT_NE(why.find("srun --mpi=pmix"), std::string::npos) << why;
  }
}

TEST(LauncherCheck, AcceptsWhatAgrees) {
  EXPECT_EQ(verdict(1, {}), "");                               // started alone
  EXPECT_EQ(verdict(1, {{"SLURM_STEP_NUM_TASKS", "1"}}), "");  // one srun task
  EXPECT_EQ(verdict(4, {{"SLURM_STEP_NUM_TASKS", "4"}}), "");  // srun with PMIx
  EXPECT_EQ(verdict(2, {{"OMPI_COMM_WORLD_SIZE", "2"}}), "");  // mpirun -np 2
  // A batch script's job-wide count says nothing about this program.
  EXPECT_EQ(verdict(1, {{"SLURM_NTASKS", "8"}}), "");
  // mpirun -np 1 inside a 2-node allocation: Slurm counted mpirun's daemons.
  EXPECT_EQ(verdict(1, {{"OMPI_COMM_WORLD_SIZE", "1"}, {"SLURM_STEP_NUM_TASKS", "2"}}), "");
}

}  // namespace
