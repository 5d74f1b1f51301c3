#include "tandem/dist/dist_keys.h"

#include <cmath>

#include "tandem/config/config.h"
#include "tandem/config/schema.h"
#include "tandem/error.h"

namespace tandem {

void add_dist_keys(Schema& schema) {
  schema.add("dist.backend", std::string("auto"),
             "who moves tensors between ranks: nccl for GPUs, mpi for CPUs; auto picks", {"auto", "mpi", "nccl"});
  schema.add("dist.device", std::string("auto"),
             "where each rank computes: auto = cuda:(local_rank % visible GPUs), else cpu", {"auto", "cpu", "cuda"});
  schema.add("dist.timeout_s", 600.0,
             "seconds a collective, or the wait for the other ranks in MPI_Finalize, may take before the job is ended "
             "as hung");
  schema.add("dist.bucket_mb", 25.0, "size of the gradient buckets all-reduced during backward, MiB");
  schema.add("dist.shard", std::string("none"),
             "what is split over the ranks instead of kept whole on each: \"optimizer\" (ZeRO-1) keeps AdamW's two "
             "moments of a 1/N slice of the parameters on each of N ranks, updates that slice and gathers the "
             "others', bitwise as \"none\" does; \"gradients\" (ZeRO-2) also reduce-scatters each gradient "
             "bucket, so a rank keeps 1/N of the gradients; checkpoints stay whole and resume under any setting "
             "and world size",
             {"none", "optimizer", "gradients"});
  schema.add("dist.tf32", true,
             "on GPUs of compute capability 8.0 or more, fp32 matmuls and convolutions use TF32 tensor cores "
             "(torch.backends.cuda.matmul.allow_tf32 and cudnn.allow_tf32), about 8x faster with a 10-bit "
             "mantissa in the products; false: full fp32. No effect on the CPU");
  schema.add("dist.deterministic", false,
             "cuDNN uses its deterministic convolution algorithms (cudnn.deterministic) instead of timing them "
             "on the first batch of each shape and keeping the fastest (cudnn.benchmark, which carotid and vavae "
             "use, their images being of one size). No effect on the CPU");
  schema.add("dist.inference_fp32", false,
             "generate, eval, predict, test reports and sample compute in fp32 instead of the run's "
             "train.precision (autocast in fp16 or bf16 on a GPU). No effect on the CPU, where that is fp32");
}

DistSettings dist_settings(const Config& config) {
  DistSettings s;
  s.backend = config.get_string("dist.backend");
  s.device = config.get_string("dist.device");
  s.timeout_s = config.get_double("dist.timeout_s");
  if (!(s.timeout_s > 0))
    throw UsageError("dist.timeout_s must be a positive number of seconds (" + config.source("dist.timeout_s") + ")");
  s.bucket_mb = config.get_double("dist.bucket_mb");
  s.shard = config.get_string("dist.shard");
  s.tf32 = config.get_bool("dist.tf32");
  s.deterministic = config.get_bool("dist.deterministic");
  s.inference_fp32 = config.get_bool("dist.inference_fp32");
  if (!(s.bucket_mb > 0) || !std::isfinite(s.bucket_mb))
    throw UsageError("dist.bucket_mb must be a positive number of MiB (" + config.source("dist.bucket_mb") + ")");
  return s;
}

}  // namespace tandem
