#include "tandem/dist/dist_keys.h"

#include "tandem/config/config.h"
#include "tandem/config/schema.h"
#include "tandem/error.h"

namespace tandem {

void add_dist_keys(Schema& schema) {
  schema.add("dist.backend", std::string("auto"),
             "who moves tensors between ranks: nccl for GPUs, mpi for CPUs; auto picks",
             {"auto", "mpi", "nccl"});
  schema.add("dist.device", std::string("auto"),
             "where each rank computes: auto = cuda:(local_rank % visible GPUs), else cpu",
             {"auto", "cpu", "cuda"});
  schema.add("dist.timeout_s", 600.0,
             "seconds a collective may take before the job is ended as hung");
}

DistSettings dist_settings(const Config& config) {
  DistSettings s;
  s.backend = config.get_string("dist.backend");
  s.device = config.get_string("dist.device");
  s.timeout_s = config.get_double("dist.timeout_s");
  if (!(s.timeout_s > 0))
    throw UsageError("dist.timeout_s must be a positive number of seconds (" +
                     config.source("dist.timeout_s") + ")");
  return s;
}

}  // namespace tandem
