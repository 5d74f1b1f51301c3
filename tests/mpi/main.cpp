#include <gtest/gtest.h>

#include <cstdio>

#include "tandem/dist/world.h"
#include "world_fixture.h"

namespace {

tandem::World* g_world = nullptr;

// Ranks other than 0 stay quiet except for failures, which they must report
// themselves: rank 0 cannot see another rank's assertions.
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: %s\n", rank_, r.file_name() ? r.file_name() : "?", r.line_number(),
                   r.summary());
  }

 private:
  int rank_;
};

}  // namespace

tandem::World& test_world() { return *g_world; }

int main(int argc, char** argv) {
  tandem::World world(argc, argv);
  g_world = &world;
  ::testing::InitGoogleTest(&argc, argv);
  if (world.rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(world.rank()));
  }
  // A failing rank exits non-zero, and mpiexec then fails the whole run.
  return RUN_ALL_TESTS();
}
