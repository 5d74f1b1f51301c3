#pragma once
// How a tandem process takes host memory from the system.

namespace tandem {

// glibc hands each block over 128 KB to the system as a fresh mapping when it
// is freed (or trims the top of its heap) and maps it again, zeroed page by
// page, at the next request: a training step that allocates and frees the same
// activations every time pays one page fault per 4 KB, every step (5-10% of a
// CPU step of the tiny DiT; 10% of GPT-2 124M's on 2 ranks, whose embedding
// gradient alone is 154 MB). After this call, every block comes from the heap
// and freed memory stays with the process for the next step: resident memory
// stays at its high-water mark instead of shrinking between steps.
// Nothing on other C libraries. run_program calls it first.
void keep_freed_host_memory();

}  // namespace tandem
