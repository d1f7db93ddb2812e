// util/thread_pool.h: parallel_for covers its range once, in at most the asked-for chunks, runs nested loops
// serially, and hands a chunk's exception to the caller.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "util/thread_pool.h"

namespace grist {
namespace {

struct ThreadsFor {
  explicit ThreadsFor(int n) { set_kernel_threads(n); }
  ~ThreadsFor() { set_kernel_threads(1); }
};

TEST(ThreadPool, EveryIndexOnceInContiguousNumberedChunks) {
  ThreadsFor threads(3);
  for (int64_t n : {1, 2, 5, 100, 1001}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    std::vector<std::atomic<int>> chunk_used(3);
    parallel_for(n, 1, [&](int64_t chunk, int64_t b, int64_t e) {
      ASSERT_LT(chunk, 3);
      ASSERT_LE(b, e);
      chunk_used[static_cast<size_t>(chunk)]++;
      for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
    });
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[static_cast<size_t>(i)], 1) << "n " << n << " index " << i;
    const int64_t chunks = std::min<int64_t>(n, 3);
    for (int64_t c = 0; c < 3; ++c) EXPECT_EQ(chunk_used[static_cast<size_t>(c)], c < chunks ? 1 : 0) << n;
  }
}

TEST(ThreadPool, GrainAndOneThreadKeepTheWholeRangeInOneChunk) {
  EXPECT_EQ(chunk_count(1000, 1), 1);  // one thread, the default
  ThreadsFor threads(2);
  EXPECT_EQ(chunk_count(1000, 1), 2);
  EXPECT_EQ(chunk_count(1000, 600), 1);
  EXPECT_EQ(chunk_count(0, 1), 1);
  int calls = 0;
  parallel_for(10, 100, [&](int64_t chunk, int64_t b, int64_t e) {
    ++calls;
    EXPECT_EQ(chunk, 0);
    EXPECT_EQ(b, 0);
    EXPECT_EQ(e, 10);
  });
  EXPECT_EQ(calls, 1);
}

TEST(ThreadPool, NestedLoopsRunInTheirCallersChunk) {
  ThreadsFor threads(2);
  std::atomic<int> inner_chunks{0};
  parallel_for(2, 1, [&](int64_t, int64_t, int64_t) {
    EXPECT_EQ(chunk_count(1000, 1), 1);
    parallel_for(1000, 1, [&](int64_t, int64_t b, int64_t e) {
      inner_chunks++;
      EXPECT_EQ(e - b, 1000);
    });
  });
  EXPECT_EQ(inner_chunks, 2);
}

TEST(ThreadPool, AChunksExceptionReachesTheCallerAfterEveryChunkEnds) {
  ThreadsFor threads(2);
  std::atomic<int> finished{0};
  EXPECT_THROW(parallel_for(2, 1,
                            [&](int64_t chunk, int64_t, int64_t) {
                              if (chunk == 1) throw std::runtime_error("chunk 1");
                              finished++;
                            }),
               std::runtime_error);
  EXPECT_EQ(finished, 1);
  // The pool still works afterwards.
  std::atomic<int> sum{0};
  parallel_for(4, 1, [&](int64_t, int64_t b, int64_t e) { sum += static_cast<int>(e - b); });
  EXPECT_EQ(sum, 4);
}

// Workers started when the pool grows after a job must wait for the next job, not run the finished one (whose
// function is gone): a crash or a hang before the fix.
TEST(ThreadPool, GrowingThePoolAfterAJobRunsEveryIndexOnce) {
  for (int threads : {2, 4, 8}) {
    ThreadsFor t(threads);
    std::vector<std::atomic<int>> hits(64);
    parallel_for(64, 1, [&](int64_t, int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
    });
    for (size_t i = 0; i < hits.size(); ++i) EXPECT_EQ(hits[i], 1) << threads << " threads, index " << i;
  }
}

TEST(ThreadPool, ThreadCountIsClamped) {
  set_kernel_threads(0);
  EXPECT_EQ(kernel_threads(), 1);
  set_kernel_threads(1000);
  EXPECT_EQ(kernel_threads(), kMaxKernelThreads);
  set_kernel_threads(1);
}

}  // namespace
}  // namespace grist
