#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "tandem/host_memory.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace {

#if defined(__GLIBC__)
// Blocks of 16 MB, as a step's activations are, and of 160 MB, as GPT-2's
// embedding gradient is, come from the heap rather than mappings of their
// own, and freeing one leaves the heap as large as it was: the next step's
// block of that size reuses pages already faulted in.
class HostMemory : public testing::TestWithParam<size_t> {};

TEST_P(HostMemory, FreedBlocksStayWithTheProcess) {
  tandem::keep_freed_host_memory();
  const size_t size = GetParam() << 20;
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

INSTANTIATE_TEST_SUITE_P(Megabytes, HostMemory, testing::Values(16, 160));
#else
TEST(HostMemory, FreedBlocksStayWithTheProcess) { GTEST_SKIP() << "not glibc: the allocator's policy is its own"; }
#endif

}  // namespace
