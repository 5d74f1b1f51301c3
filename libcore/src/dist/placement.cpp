#include "tandem/dist/placement.h"

#include <torch/torch.h>

#include <cstdlib>

#include "tandem/dist/cuda_info.h"
#include "tandem/dist/dist_keys.h"
#include "tandem/dist/mpi_comm.h"
#include "tandem/dist/world.h"
#include "tandem/error.h"
#include "tandem/obs/gpu_monitor.h"
#include "tandem/obs/log.h"

#if TANDEM_HAVE_NCCL
#include "tandem/dist/nccl_comm.h"
#endif

namespace tandem {

Placement choose_placement(int local_rank, int visible_gpus, const std::string& device, const std::string& backend,
                           bool nccl_built) {
  if (device != "auto" && device != "cpu" && device != "cuda")
    throw UsageError("dist.device must be \"auto\", \"cpu\" or \"cuda\", got \"" + device + "\"");
  if (backend != "auto" && backend != "mpi" && backend != "nccl")
    throw UsageError("dist.backend must be \"auto\", \"mpi\" or \"nccl\", got \"" + backend + "\"");

  Placement p;
  const bool use_gpu = device != "cpu" && visible_gpus > 0;
  if (device == "cuda" && visible_gpus == 0)
    throw UsageError(
        "dist.device = \"cuda\" but no GPU is visible to this rank (check "
        "CUDA_VISIBLE_DEVICES and that LibTorch was built with CUDA), or set "
        "dist.device = \"auto\" to run on the CPU");
  if (backend == "nccl") {
    if (!nccl_built)
      throw UsageError(
          "dist.backend = \"nccl\" but this build has no NCCL backend (configure "
          "with the CUDA toolkit and NCCL present), or set dist.backend = \"auto\"");
    if (!use_gpu)
      throw UsageError(
          "dist.backend = \"nccl\" needs a GPU per rank, but this rank computes on "
          "the CPU; set dist.backend = \"mpi\" or make a GPU visible");
  }
  if (!use_gpu) return p;

  p.cuda = true;
  p.device_index = local_rank % visible_gpus;
  p.backend = backend == "auto" ? (nccl_built ? "nccl" : "mpi") : backend;
  return p;
}

std::string gpus_unseen(int torch_gpus, int driver_gpus, const char* visible_env, const std::string& driver_cuda,
                        const std::string& runtime_cuda) {
  if (torch_gpus > 0 || driver_gpus == 0) return "";
  if (visible_env) {
    const std::string visible = visible_env;
    if (visible.empty() || visible.rfind("-1", 0) == 0 || visible == "NoDevFiles") return "";
  }
  return log::cat("the NVIDIA driver sees ", driver_gpus, " GPU(s)",
                  visible_env ? std::string(" (CUDA_VISIBLE_DEVICES=") + visible_env + ")" : std::string(),
                  " but LibTorch sees none: its CUDA runtime is ", runtime_cuda,
                  " and the driver supports CUDA up to ", driver_cuda,
                  ". A driver older than the runtime cannot run it (PyPI's CUDA 13 torch needs an R580 driver or "
                  "newer): update the driver, or use a torch built for the driver's CUDA (TANDEM_PYTHON), or set "
                  "dist.device = \"cpu\" to train on the CPU on purpose");
}

std::string shared_gpu(const std::vector<std::string>& gpus) {
  for (size_t a = 0; a < gpus.size(); ++a)
    for (size_t b = a + 1; b < gpus.size(); ++b)
      if (gpus[a] == gpus[b])
        return log::cat("ranks ", a, " and ", b, " would share ", gpus[a], ": NCCL needs one GPU per rank");
  return "";
}

Placement place_rank(const World& world, const std::string& device, const std::string& backend) {
  const int visible = static_cast<int>(torch::cuda::device_count());
  if (device != "cpu" && cuda_built()) {
    const std::string why = gpus_unseen(visible, visible == 0 ? driver_gpu_count() : 0,
                                        std::getenv("CUDA_VISIBLE_DEVICES"), cuda_driver_version(),
                                        cuda_runtime_version());
    if (!why.empty()) throw UsageError(why);
  }
  Placement p = choose_placement(world.local_rank(), visible, device, backend, TANDEM_HAVE_NCCL != 0);
  // Before anything allocates: LibTorch, NCCL and cudart calls that name no
  // device all use the thread's current one.
  if (p.cuda) select_gpu(p.device_index);
  return p;
}

#if TANDEM_HAVE_NCCL
namespace {

// Two ranks whose CUDA_VISIBLE_DEVICES lead to the same physical GPU on one
// host: compared by PCI bus id, since ordinals differ between masked views.
// Every rank sees the whole table, so all of them stop with the same message.
void refuse_shared_gpus(World& world, const Placement& placement) {
  constexpr size_t kLen = 128;
  std::string mine = world.host() + " GPU " + gpu_bus_id(placement.device_index);
  mine.resize(kLen, '\0');
  std::string all(kLen * world.size(), '\0');
  world.allgather_bytes(mine.data(), kLen, all.data());
  std::vector<std::string> gpus;
  for (int r = 0; r < world.size(); ++r) gpus.emplace_back(all.c_str() + r * kLen);
  const std::string why = shared_gpu(gpus);
  if (why.empty()) return;
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  throw UsageError(log::cat(why, ". ", world.local_size(), " ranks run on ", world.host(),
                            " with CUDA_VISIBLE_DEVICES=", visible ? visible : "(unset)",
                            ". Start at most one rank per visible GPU (mpirun -np, srun --ntasks-per-node), make "
                            "more GPUs visible, or set dist.backend = \"mpi\""));
}

}  // namespace
#endif

std::unique_ptr<Communicator> make_communicator(World& world, const Placement& placement) {
#if TANDEM_HAVE_NCCL
  if (placement.backend == "nccl") {
    refuse_shared_gpus(world, placement);
    return std::make_unique<NcclComm>(world, placement.device_index);
  }
#endif
  return std::make_unique<MpiComm>(world, c10::Device(placement.torch_device()));
}

c10::Device rank_device(const World& world, const Config& config) {
  const DistKeys dist = dist_settings(config);
  return c10::Device(place_rank(world, dist.device, dist.backend).torch_device());
}

}  // namespace tandem
