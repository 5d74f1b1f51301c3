#include "tandem/data/micro_batch.h"

#include <numeric>

namespace tandem {

int64_t MicroBatch::num_valid() const { return std::accumulate(valid.begin(), valid.end(), int64_t{0}); }

}  // namespace tandem
