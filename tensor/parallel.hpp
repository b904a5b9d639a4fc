// The thread pool: a fixed set of worker threads, created once, that run the
// pieces of a parallel_for. No thread is ever created per call.
//
// Size: set_num_threads(n), or the environment variable ATTN_NUM_THREADS, or by
// default the number of cores. num_threads() counts the calling thread, so
// num_threads() == 1 means everything runs on the caller.
//
// Determinism: parallel_for splits [begin, end) into the same contiguous chunks
// for the same range, grain and thread count, so a reduction that combines
// per-chunk results in chunk order gives the same bits run after run.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

namespace attn {

int num_threads();
void set_num_threads(int n);

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
