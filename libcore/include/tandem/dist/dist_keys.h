#pragma once
// The dist.* keys every program shares, and reading them back.
#include <string>

namespace tandem {

class Schema;
class Config;

struct DistSettings {
  std::string backend;  // auto | mpi | nccl
  std::string device;   // auto | cpu | cuda
  double timeout_s = 600;
  double bucket_mb = 25;  // gradient buckets all-reduced during backward
  std::string shard = "none";   // none | optimizer | gradients: ZeRO-1 and ZeRO-2
  bool tf32 = true;             // fp32 matmuls and convolutions on TF32 tensor cores (sm_80+)
  bool deterministic = false;   // cuDNN's deterministic algorithms, none timed
  bool inference_fp32 = false;  // inference commands in fp32, not train.precision
};

void add_dist_keys(Schema& schema);
DistSettings dist_settings(const Config& config);

}  // namespace tandem
