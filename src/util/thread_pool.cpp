#include "util/thread_pool.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace grist {
namespace {

thread_local bool in_chunk = false;  // set while this thread runs a chunk: nested loops run serially

// Workers sleep on a condition variable between jobs (the machine's cores are shared: no spinning). A job is
// published with a new generation number; worker w runs chunk w + 1 of it if there is one.
class Pool {
 public:
  ~Pool() { resize(0); }

  void resize(int workers) {
    stop_workers();
    // A new worker starts at the current generation: the jobs before it are over (their f is gone).
    uint64_t now = 0;
    {
      std::lock_guard lock(mutex_);
      now = generation_;
    }
    for (int w = 0; w < workers; ++w) threads_.emplace_back([this, w, now] { work(w, now); });
  }
  int workers() const { return static_cast<int>(threads_.size()); }

  void run(int64_t n, int64_t chunks, ChunkFn f) {
    std::lock_guard one_job(run_mutex_);  // one job at a time: callers on two threads take turns
    std::unique_lock lock(mutex_);
    job_ = Job{n, chunks, &f};
    pending_ = chunks - 1;
    error_ = nullptr;
    ++generation_;
    lock.unlock();
    wake_.notify_all();
    run_chunk(0);
    lock.lock();
    done_.wait(lock, [&] { return pending_ == 0; });
    job_.f = nullptr;
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  struct Job {
    int64_t n = 0, chunks = 0;
    ChunkFn* f = nullptr;
  };

  void run_chunk(int64_t c) {
    in_chunk = true;
    try {
      (*job_.f)(c, job_.n * c / job_.chunks, job_.n * (c + 1) / job_.chunks);
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    in_chunk = false;
  }

  void work(int w, uint64_t seen) {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      const int64_t c = w + 1;
      if (c >= job_.chunks) continue;
      lock.unlock();
      run_chunk(c);
      lock.lock();
      if (--pending_ == 0) done_.notify_one();
    }
  }

  void stop_workers() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
    stopping_ = false;
  }

  std::mutex run_mutex_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> threads_;
  Job job_;
  int64_t pending_ = 0;
  uint64_t generation_ = 0;
  bool stopping_ = false;
  std::exception_ptr error_;
};

int threads_wanted = 1;

Pool& pool() {
  static Pool p;
  return p;
}

}  // namespace

void set_kernel_threads(int n) { threads_wanted = std::clamp(n, 1, kMaxKernelThreads); }
int kernel_threads() { return threads_wanted; }

int64_t chunk_count(int64_t n, int64_t grain) {
  if (threads_wanted <= 1 || in_chunk || n <= 0) return 1;
  return std::clamp<int64_t>(n / std::max<int64_t>(grain, 1), 1, threads_wanted);
}

void detail::run_chunks(int64_t n, int64_t chunks, ChunkFn f) {
  Pool& p = pool();
  if (p.workers() < threads_wanted - 1) p.resize(threads_wanted - 1);
  p.run(n, chunks, f);
}

}  // namespace grist
