#include "tandem/host_memory.h"

#include <climits>  // also defines __GLIBC__ on glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace tandem {

void keep_freed_host_memory() {
#if defined(__GLIBC__)
  // No mappings at all, rather than a higher threshold: glibc takes none above
  // 32 MB, and GPT-2's 154 MB embedding gradient was mapped and faulted in
  // again every step. A block too large for a thread's arena then comes
  // from the main heap (glibc retries there).
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
}

}  // namespace tandem
