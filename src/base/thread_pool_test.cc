#include "src/base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <vector>

namespace rlprof::base {
namespace {

TEST(ThreadPoolTest, WaitReturnsAfterEverySubmittedTaskRan) {
  ThreadPool pool(3);
  std::atomic<int> sum{0};
  for (int i = 1; i <= 100; ++i) pool.Submit([&sum, i] { sum += i; });
  pool.Wait();
  EXPECT_EQ(sum.load(), 5050);
  EXPECT_EQ(pool.size(), 3u);
}

TEST(ThreadPoolTest, DestructorRunsQueuedTasks) {
  std::atomic<int> ran{0};
  {
    ThreadPool pool(2);
    for (int i = 0; i < 50; ++i) pool.Submit([&ran] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 50);
}

TEST(ThreadPoolTest, ParallelForVisitsEachIndexOnce) {
  std::vector<std::atomic<int>> hits(257);
  ParallelFor(hits.size(), 4, [&](size_t i) { hits[i]++; });
  for (const auto& h : hits) EXPECT_EQ(h.load(), 1);
}

TEST(ThreadPoolTest, ParallelForWithOneJobRunsInOrderOnTheCaller) {
  std::vector<size_t> order;
  ParallelFor(5, 1, [&](size_t i) { order.push_back(i); });
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3, 4}));
}

TEST(ThreadPoolTest, WaitCanBeCalledRepeatedly) {
  ThreadPool pool(2);
  std::atomic<int> n{0};
  pool.Submit([&n] { ++n; });
  pool.Wait();
  pool.Submit([&n] { ++n; });
  pool.Wait();
  EXPECT_EQ(n.load(), 2);
}

}  // namespace
}  // namespace rlprof::base
