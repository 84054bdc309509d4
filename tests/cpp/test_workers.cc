// The compile workers' run_jobs (core/workers.h) on their own: every job runs once, on as many
// threads as the worker count allows, with the caller's compile target; the first error by
// index is the one rethrown after every job ran; jobs of jobs finish. The suite runs threads,
// so the ThreadSanitizer build runs it (its name ends in Concurrent).

#include <gtest/gtest.h>
#include <triton_embed/error.h>
#include <triton_embed/runtime.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/target.h"
#include "core/workers.h"

namespace d = triton_embed::detail;

namespace {

class WorkersConcurrent : public ::testing::Test {
 protected:
  void TearDown() override { triton_embed::set_compile_workers(0); }
};

TEST_F(WorkersConcurrent, EveryJobOnceOnTheWorkers) {
  for (const size_t workers : {size_t{1}, size_t{2}, size_t{4}}) {
    SCOPED_TRACE(workers);
    triton_embed::set_compile_workers(workers);
    constexpr size_t kJobs = 64;
    std::vector<std::atomic<int>> runs(kJobs);
    std::mutex mu;
    std::set<std::thread::id> threads;
    std::atomic<int> running{0}, most{0};
    d::run_jobs(kJobs, [&](size_t i) {
      const int now = running.fetch_add(1) + 1;
      int seen = most.load();
      while (now > seen && !most.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      runs[i].fetch_add(1);
      {
        std::lock_guard<std::mutex> lock(mu);
        threads.insert(std::this_thread::get_id());
      }
      running.fetch_sub(1);
    });
    for (size_t i = 0; i < kJobs; ++i) EXPECT_EQ(runs[i].load(), 1) << i;
    EXPECT_LE(static_cast<size_t>(most.load()), workers);
    EXPECT_LE(threads.size(), workers);
    if (workers == 1) EXPECT_EQ(*threads.begin(), std::this_thread::get_id());
  }
}

TEST_F(WorkersConcurrent, TheFirstErrorByIndexAfterEveryJob) {
  triton_embed::set_compile_workers(3);
  std::atomic<int> ran{0};
  try {
    d::run_jobs(20, [&](size_t i) {
      ran.fetch_add(1);
      if (i == 17) throw std::runtime_error("job 17");
      if (i == 5) throw triton_embed::CompileError("job 5");
      if (i == 9) throw std::runtime_error("job 9");
    });
    FAIL() << "expected the error of job 5";
  } catch (const triton_embed::CompileError& e) {
    EXPECT_STREQ(e.what(), "job 5");
  }
  EXPECT_EQ(ran.load(), 20);
}

TEST_F(WorkersConcurrent, JobsOfJobsAndTheCallersTarget) {
  triton_embed::set_compile_workers(2);
  const uint32_t target = d::target_code(80, 32);
  d::JobTarget caller(target);
  std::atomic<int> inner{0};
  std::atomic<int> wrong_target{0};
  d::run_jobs(4, [&](size_t) {
    if (d::current_target_code() != target) wrong_target.fetch_add(1);
    d::run_jobs(8, [&](size_t) {
      if (d::current_target_code() != target) wrong_target.fetch_add(1);
      inner.fetch_add(1);
    });
  });
  EXPECT_EQ(inner.load(), 32);
  EXPECT_EQ(wrong_target.load(), 0);
}

}  // namespace
