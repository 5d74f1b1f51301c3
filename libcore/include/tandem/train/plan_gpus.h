#pragma once
// The devices the plan command plans a run for (`plan --gpus`): GPUs named
// from a table, a size given as a number, or this machine's own.
//
// The table holds what CUDA reports of each card (cudaGetDeviceProperties'
// total memory, as torch.cuda.get_device_properties prints it in public
// logs, with ECC on where the card has it; figures differ by a few MiB
// between drivers; l4, v100-32gb and a100-40gb are estimates, docs/training.md
// says which) and its
// compute capability, which decides what train.precision = "auto" takes
// (bf16 from 8.0, fp16 below). A run's free memory is that total less
// kContextBytes: the CUDA context with its lazily loaded kernels, cuBLAS's
// and cuDNN's workspaces, and NCCL's buffers, which a process holds before
// its first tensor; on a GPU the plan command measures instead
// (cudaMemGetInfo). docs/training.md lists the table.
#include <cstdint>
#include <string>
#include <vector>

namespace tandem {

struct GpuModel {
  std::string name;     // as --gpus names it: "t4"
  std::string product;  // as CUDA names it: "Tesla T4"
  int64_t memory_mib = 0;
  int cc_major = 0, cc_minor = 0;
};

const std::vector<GpuModel>& gpu_models();

inline constexpr int64_t kContextBytes = int64_t{512} << 20;

// The ranks a plan is for: `count` devices alike.
struct PlannedDevices {
  std::string name;  // "2 x t4 (Tesla T4, 15095 MiB)"; "cpu"
  int count = 1;
  bool cuda = true;
  int64_t free_bytes = -1;  // a rank's free memory; -1 unknown
  int cc_major = 0, cc_minor = 0;
};

// `text` as --gpus takes it: NAMExCOUNT (a name of gpu_models(), "t4x2"),
// SIZEGiBxCOUNT or SIZEGBxCOUNT (a card of that memory, "15.0GiBx2";
// compute capability 8.0 assumed), "xCOUNT" may be left out (one). Throws
// UsageError naming `key` and the names known.
PlannedDevices parse_gpus(const std::string& text, const std::string& key);

// This machine's: every visible GPU as the first one is, its free memory
// measured; else (or with `cpu`: dist.device = "cpu") one CPU rank with the
// memory the kernel says is available.
PlannedDevices this_machine(bool cpu);

}  // namespace tandem
