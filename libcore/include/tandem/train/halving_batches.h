#pragma once
// Work over many items in batches that halve when the device runs out of
// memory, for work whose items do not depend on how they are batched and
// that no other rank waits on batch by batch (summarize's generation: each
// rank generates its share, then all gather once). Evaluation's rows,
// which every rank runs in step, back off together instead
// (evaluate.h: gather_eval_rows).
//
// Items [0, count) run in consecutive batches of at most `batch`. A batch
// that runs out of device memory (is_out_of_memory) leaves nothing done:
// the caching allocator's free blocks go back to the device and it runs
// again at half the size, down to 1, and every later batch runs at that
// size too. Running out at 1 throws the error. Returns the size it ended
// at, for the caller's next pass.
#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <string>

namespace tandem {

using RunBatch = std::function<void(int64_t begin, int64_t end)>;

int64_t run_in_halving_batches(int64_t count, int64_t batch, const c10::Device& device, const std::string& what,
                               const RunBatch& run);

}  // namespace tandem
