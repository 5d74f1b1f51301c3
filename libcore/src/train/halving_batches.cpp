#include "tandem/train/halving_batches.h"

#include <algorithm>

#include "tandem/obs/log.h"
#include "tandem/obs/tensor_memory.h"

namespace tandem {

int64_t run_in_halving_batches(int64_t count, int64_t batch, const c10::Device& device, const std::string& what,
                               const RunBatch& run) {
  batch = std::max<int64_t>(batch, 1);
  for (int64_t begin = 0; begin < count;) {
    const int64_t end = std::min(count, begin + batch);
    try {
      run(begin, end);
      begin = end;
    } catch (const c10::Error& e) {
      if (!is_out_of_memory(e) || batch == 1) throw;
      release_cached_memory(device);
      log::warn(what, " ran out of memory at ", batch, " at a time: going on at ", batch / 2, " (",
                e.what_without_backtrace(), ")");
      batch /= 2;
    }
  }
  return batch;
}

}  // namespace tandem
