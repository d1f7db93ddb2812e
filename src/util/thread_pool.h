// Worker threads that the heavy kernels (convolution GEMMs, depthwise planes) split their work over, so that a
// large model's forward can use more than one core; one thread (the default, and what a hunt's small graphs want)
// runs everything on the calling thread, exactly as before.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace grist {

// At most this many (the kernels keep per-chunk scratch for each).
constexpr int kMaxKernelThreads = 16;

// How many threads the kernels use, the caller's included (clamped to [1, kMaxKernelThreads]). Set it between
// passes, not while a kernel runs. Workers are started the first time more than one is asked for.
void set_kernel_threads(int n);
int kernel_threads();

// A non-owning reference to a callable f(chunk, begin, end): parallel_for must not allocate in the kernels' hot
// loops.
class ChunkFn {
 public:
  template <class F>
  explicit ChunkFn(F& f)
      : object_(&f), call_([](void* o, int64_t c, int64_t b, int64_t e) { (*static_cast<F*>(o))(c, b, e); }) {}
  void operator()(int64_t chunk, int64_t begin, int64_t end) const { call_(object_, chunk, begin, end); }

 private:
  void* object_;
  void (*call_)(void*, int64_t, int64_t, int64_t);
};

namespace detail {
void run_chunks(int64_t n, int64_t chunks, ChunkFn f);
}

// How many chunks parallel_for splits n items into: at most kernel_threads(), each at least `grain` items. 1 when
// called from inside a chunk (no nested splitting).
int64_t chunk_count(int64_t n, int64_t grain);

// Calls f(chunk, begin, end) on contiguous chunks covering [0, n), chunk_count(n, grain) of them numbered from 0
// (for per-chunk scratch), the caller running chunk 0; returns when all are done. An exception thrown by a chunk
// is rethrown here (the first one, after every chunk ends).
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
  const int64_t chunks = chunk_count(n, grain);
  if (chunks <= 1) {
    if (n > 0) f(int64_t{0}, int64_t{0}, n);
    return;
  }
  std::remove_reference_t<F>& ref = f;
  detail::run_chunks(n, chunks, ChunkFn(ref));
}

// Kernels split their work into chunks of at least this many multiply-adds: below it, waking a worker costs about
// as much as the chunk saves, so small layers and a hunt's small graphs stay on one thread.
inline constexpr int64_t kMinChunkWork = int64_t{1} << 19;

// The grain (items per chunk) for parallel_for over items costing `work_per_item` multiply-adds each.
inline int64_t grain_for(int64_t work_per_item) {
  return std::max<int64_t>(1, kMinChunkWork / std::max<int64_t>(work_per_item, 1));
}

}  // namespace grist
