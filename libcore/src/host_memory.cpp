#include "tandem/host_memory.h"

#include <climits>  // also defines __GLIBC__ on glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace tandem {

void keep_freed_host_memory() {
#if defined(__GLIBC__)
  // 32 MB is the largest threshold glibc accepts on 64-bit (HEAP_MAX_SIZE / 2);
  // a fixed one also turns off its adjusting the threshold to freed sizes.
  mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
}

}  // namespace tandem
