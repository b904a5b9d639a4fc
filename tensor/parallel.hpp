// The thread pool: a fixed set of worker threads, created once, that run the
// pieces of a parallel_for. No thread is ever created per call.
//
// Size: set_num_threads(n), or the environment variable ATTN_NUM_THREADS, or by
// default the number of cores. num_threads() counts the calling thread, so
// num_threads() == 1 means everything runs on the caller.
//
// Determinism: parallel_for splits [begin, end) into the same contiguous chunks
// for the same range, grain and thread count, so a reduction that combines
// per-chunk results in chunk order gives the same bits run after run. Which
// thread runs a chunk is not fixed (the caller takes any chunk no worker has
// started), so a chunk must not depend on the thread it runs on.
//
// Between jobs the workers spin for a while (ATTN_SPIN_US, default 300 µs)
// before they sleep: a job that finds them spinning starts in under a
// microsecond, one that must wake them pays the scheduler's wake-up, tens of
// microseconds on a busy machine (docs/performance.md).
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

namespace attn {

int num_threads();
void set_num_threads(int n);

// True when every pool worker is awake (running a job or spinning for the
// next one, see ATTN_SPIN_US in parallel.cpp), so that work handed to the pool
// now starts without the cost of waking a sleeping thread. A hint, not a
// promise: a worker may fall asleep right after the answer.
bool pool_workers_awake();

// Wakes sleeping pool workers without giving them work: they spin for the
// next job (ATTN_SPIN_US) and then sleep again. For a caller that will soon
// have work worth splitting only if it can start at once.
void pool_rouse_workers();

// How much element-sized work is worth a parallel chunk: a range of less than
// two chunks' worth runs on the calling thread. The tensor ops, autograd's
// pointwise() and the convolution walks all size their chunks by it.
inline constexpr int64_t kParallelGrain = 16384;

// The grain, in items, for a range of items of `work_per_item` elements each.
inline int64_t parallel_grain(int64_t work_per_item) {
    return work_per_item >= kParallelGrain ? 1 : kParallelGrain / (work_per_item > 0 ? work_per_item : 1);
}

// A non-owning reference to a callable `void(int64_t begin, int64_t end)`.
// Unlike std::function it never allocates, which matters on hot paths.
class RangeFn {
public:
    template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, RangeFn>>>
    RangeFn(F&& f)  // NOLINT: implicit on purpose, so lambdas pass straight in
        : object_(const_cast<void*>(static_cast<const void*>(&f))),
          call_([](void* o, int64_t b, int64_t e) { (*static_cast<std::remove_reference_t<F>*>(o))(b, e); }) {}
    void operator()(int64_t b, int64_t e) const { call_(object_, b, e); }

private:
    void* object_;
    void (*call_)(void*, int64_t, int64_t);
};

// Runs fn(chunk_begin, chunk_end) over [begin, end) split into at most
// num_threads() contiguous chunks of at least `grain` elements each. Ranges
// smaller than 2*grain, and calls made from inside a worker, run on the calling
// thread. Returns when every chunk is done. An exception thrown by a chunk is
// rethrown on the caller.
void parallel_for(int64_t begin, int64_t end, int64_t grain, RangeFn fn);

// How many chunks parallel_for(begin, end, grain, ...) would use; lets a caller
// size per-chunk scratch space.
int parallel_chunks(int64_t begin, int64_t end, int64_t grain);

}  // namespace attn
