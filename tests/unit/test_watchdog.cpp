#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "tandem/dist/watchdog.h"

namespace {

// A collective that never completes, as when a peer rank has died.
class StuckWork : public tandem::Work {
 public:
  StuckWork() : Work("allreduce(sum) f32[8]") {}
  void wait() override {}
  bool done() override { return finished; }
  std::atomic<bool> finished{false};
};

TEST(Watchdog, FiresForAStuckCollectiveNamingItAndTheWait) {
  std::atomic<int> fired{0};
  std::string what;
  double waited = 0;
  tandem::Watchdog dog(0, 0.2, [&](const tandem::Work& w, double s) {
    what = w.what();
    waited = s;
    ++fired;
  });
  dog.watch(std::make_shared<StuckWork>());
  for (int i = 0; i < 100 && fired == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(fired, 1);
  EXPECT_EQ(what, "allreduce(sum) f32[8]");
  EXPECT_GE(waited, 0.2);
  EXPECT_LT(waited, 1.5);
}

TEST(Watchdog, StaysQuietForWorkThatFinishesInTime) {
  std::atomic<int> fired{0};
  tandem::Watchdog dog(0, 0.3, [&](const tandem::Work&, double) { ++fired; });
  auto work = std::make_shared<StuckWork>();
  dog.watch(work);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  work->finished = true;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(fired, 0);
}

}  // namespace
