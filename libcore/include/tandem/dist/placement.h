#pragma once
// Which device a rank computes on and which backend moves its gradients.
#include <c10/core/Device.h>

#include <memory>
#include <string>
#include <vector>

namespace tandem {

class World;
class Communicator;
class Config;

struct Placement {
  bool cuda = false;
  int device_index = -1;        // CUDA ordinal among the visible devices
  std::string backend = "mpi";  // "mpi" or "nccl"
  std::string torch_device() const { return cuda ? "cuda:" + std::to_string(device_index) : "cpu"; }
};

// The rule, without side effects: `device` is dist.device ("auto", "cpu",
// "cuda") and `backend` dist.backend ("auto", "mpi", "nccl"); `visible_gpus`
// counts what CUDA_VISIBLE_DEVICES lets this rank see. Throws UsageError for
// combinations that cannot work, saying what to change.
Placement choose_placement(int local_rank, int visible_gpus, const std::string& device, const std::string& backend,
                           bool nccl_built);

// Why LibTorch's count of GPUs cannot be believed, or "" when it can: the
// driver sees `driver_gpus` GPUs that CUDA_VISIBLE_DEVICES (`visible_env`,
// nullptr when unset) does not hide, yet LibTorch sees none. That is what a
// driver too old for LibTorch's CUDA runtime looks like (PyPI's torch 2.15 is
// a CUDA 13 build and needs an R580 driver): torch::cuda::device_count() is
// then 0 with only a warning, and dist.device = "auto" would train on the CPU
// while the launcher has logged one rank per GPU. An empty or "-1"
// CUDA_VISIBLE_DEVICES hides the GPUs on purpose.
std::string gpus_unseen(int torch_gpus, int driver_gpus, const char* visible_env, const std::string& driver_cuda,
                        const std::string& runtime_cuda);

// Why two ranks would share one GPU, or "" when none do: `gpus` holds each
// rank's "host GPU bus-id" (every rank's, in rank order).
std::string shared_gpu(const std::vector<std::string>& gpus);

// Applies the rule for this rank, using LibTorch's view of the GPUs; a GPU
// the driver sees and LibTorch does not stops the run (gpus_unseen) unless
// `device` is "cpu".
Placement place_rank(const World& world, const std::string& device, const std::string& backend);

// The device a job's dist.* keys put this rank on, for commands that run a
// model without training it (evaluate, predict, generate, extract).
c10::Device rank_device(const World& world, const Config& config);

// The communicator for a placement. For NCCL it first checks that no two ranks
// on a node landed on one GPU (NCCL cannot run two ranks on a device), which
// depends on every rank's view of CUDA_VISIBLE_DEVICES, so it is collective.
std::unique_ptr<Communicator> make_communicator(World& world, const Placement& placement);

}  // namespace tandem
