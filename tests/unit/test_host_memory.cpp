#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "tandem/host_memory.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace {

#if defined(__GLIBC__)
// A 16 MB block, as a step's activations are, comes from the heap rather than
// a mapping of its own, and freeing it leaves the heap as large as it was: the
// next step's block of that size reuses pages already faulted in.
TEST(HostMemory, FreedBlocksStayWithTheProcess) {
  tandem::keep_freed_host_memory();
  const size_t size = 16u << 20;
  const struct mallinfo2 before = mallinfo2();
  char* block = static_cast<char*>(std::malloc(size));
  ASSERT_NE(block, nullptr);
  std::memset(block, 1, size);
  const struct mallinfo2 held = mallinfo2();
  EXPECT_EQ(held.hblkhd, before.hblkhd) << "the block was mapped on its own";
  std::free(block);
  const struct mallinfo2 after = mallinfo2();
  EXPECT_GE(after.arena, held.arena) << "freeing the block gave the heap back";
  EXPECT_GE(after.fordblks, size) << "the freed block is not kept for reuse";
}
#else
TEST(HostMemory, FreedBlocksStayWithTheProcess) { GTEST_SKIP() << "not glibc: the allocator's policy is its own"; }
#endif

}  // namespace
