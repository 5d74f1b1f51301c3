#pragma once
// The dist.* keys every program shares, each declared once
// (tandem/config/settings.h), and reading them back.
#include <string>

#include "tandem/config/settings.h"

namespace tandem {

struct DistKeys {
  std::string backend = "auto";  // auto | mpi | nccl
  std::string device = "auto";   // auto | cpu | cuda
  double timeout_s = 600;
  double setup_timeout_s = 3600;  // one rank's set-up work the others wait for
  double bucket_mb = 25;        // gradient buckets all-reduced during backward
  std::string shard = "none";   // none | optimizer | gradients: ZeRO-1 and ZeRO-2
  bool tf32 = true;             // fp32 matmuls and convolutions on TF32 tensor cores (sm_80+)
  bool deterministic = false;   // cuDNN's deterministic algorithms, none timed
  bool inference_fp32 = false;  // inference commands in fp32, not train.precision

  template <class Self, class Visit>
  static void each_key(Self& k, Visit&& visit) {
    visit("dist.backend", k.backend,
          "who moves tensors between ranks: nccl for GPUs, mpi for CPUs; auto picks nccl when the rank has a GPU "
          "and the build has NCCL",
          one_of({"auto", "mpi", "nccl"}));
    visit("dist.device", k.device,
          "where each rank computes: auto = cuda:(local_rank % visible GPUs), else cpu; cpu forces the CPU, cuda "
          "requires a GPU",
          one_of({"auto", "cpu", "cuda"}));
    visit("dist.timeout_s", k.timeout_s,
          "seconds a collective, or the wait for the other ranks in MPI_Finalize, may take before the job is ended "
          "as hung, with a message naming the operation and the rank (exit 3); applies in every command from the "
          "moment the job file is read",
          above(0));
    visit("dist.setup_timeout_s", k.setup_timeout_s,
          "seconds the other ranks wait while one rank does set-up work alone (tokenizing a corpus, merging "
          "latents, writing a report) before the job is ended as hung (exit 3); the log says what they wait for",
          above(0));
    visit("dist.bucket_mb", k.bucket_mb, "size of the gradient buckets all-reduced during backward, MiB", above(0));
    visit("dist.shard", k.shard,
          "what is split over the ranks instead of kept whole on each: \"optimizer\" (ZeRO-1) keeps AdamW's two "
          "moments of a 1/N slice of the parameters on each of N ranks, updates that slice and gathers the "
          "others', bitwise as \"none\" does; \"gradients\" (ZeRO-2) also reduce-scatters each gradient "
          "bucket, so a rank keeps 1/N of the gradients; checkpoints stay whole and resume under any setting "
          "and world size",
          one_of({"none", "optimizer", "gradients"}));
    visit("dist.tf32", k.tf32,
          "on GPUs of compute capability 8.0 or more, fp32 matmuls and convolutions use TF32 tensor cores "
          "(torch.backends.cuda.matmul.allow_tf32 and cudnn.allow_tf32), about 8x faster with a 10-bit "
          "mantissa in the products; false: full fp32. No effect on the CPU",
          any());
    visit("dist.deterministic", k.deterministic,
          "cuDNN uses its deterministic convolution algorithms (cudnn.deterministic) instead of timing them "
          "on the first batch of each shape and keeping the fastest (cudnn.benchmark, which carotid and vavae "
          "use, their images being of one size). No effect on the CPU",
          any());
    visit("dist.inference_fp32", k.inference_fp32,
          "generate, eval, predict, test reports and sample compute in fp32 instead of the precision the model "
          "was trained in (which a train.precision other than auto overrides; autocast in fp16 or bf16 on a "
          "GPU). No effect on the CPU, where that is fp32",
          any());
  }
};

inline void add_dist_keys(Schema& schema) { declare_keys<DistKeys>(schema); }
// The dist.* keys, each checked (UsageError naming the key).
inline DistKeys dist_settings(const Config& config) { return read_keys<DistKeys>(config); }

}  // namespace tandem
