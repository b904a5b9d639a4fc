#include "tensor/parallel.hpp"

#include <pthread.h>

#include <algorithm>
#include <new>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tensor/env.hpp"
#include "tensor/profile.hpp"

namespace attn {
namespace {

thread_local bool t_inside_worker = false;

int default_threads() {
    if (const char* env = std::getenv("ATTN_NUM_THREADS"))
        return static_cast<int>(parse_env_integer("ATTN_NUM_THREADS", env, 1, 1024, "threads"));
    unsigned hw = std::thread::hardware_concurrency();
    return hw == 0 ? 1 : static_cast<int>(hw);
}

// How long a worker keeps checking for the next job before it sleeps, and the
// caller for the workers to finish before it sleeps. Waking a thread from a
// condition variable goes through the kernel's scheduler and can take as long
// as a small job itself (docs/performance.md): in training, jobs come a few
// µs to a few hundred µs apart (between them the caller does single-threaded
// work), so a spin of 300 µs finds most of them awake. Bounded, so that an idle process stops using the CPU soon.
// (OpenMP runtimes and OpenBLAS spin for as long or longer.) ATTN_SPIN_US sets
// it (0: sleep at once; at most a second, so that the µs → ns product cannot
// overflow). Measured in docs/performance.md. A bad value throws; pool()
// reads it first, on the caller's thread, before any worker spins.
std::chrono::nanoseconds spin_time() {
    static const std::chrono::nanoseconds t = [] {
        const char* env = std::getenv("ATTN_SPIN_US");
        const int64_t us = env && *env ? parse_env_integer("ATTN_SPIN_US", env, 0, 1000000, "microseconds") : 300;
        return std::chrono::nanoseconds(us * 1000);
    }();
    return t;
}

// Spins until done() or spin_time() has passed; true if done(). For the first
// 20 µs it only pauses between checks (the CPU's hint for spin loops): a
// worker must see a job within the ~2 µs that half of a small product takes,
// or the caller will have done it (ThreadPool::run), and yielding the core is
// a system call that can take that long here. After 20 µs each check yields,
// so that on a machine with more runnable threads than cores the thread we
// wait for (or anyone else) can run in our place.
template <class Done>
bool spin_until(Done done) {
    const auto limit = spin_time();
    if (limit.count() == 0) return done();
    constexpr auto pause_only = std::chrono::microseconds(20);
    const auto start = std::chrono::steady_clock::now();
    for (int i = 1;; ++i) {
        if (done()) return true;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ __volatile__("yield");  // ARM's hint for a spin loop
#endif
        if (i % 64 != 0) continue;  // the clock every 64 pauses, ~1 µs
        const auto waited = std::chrono::steady_clock::now() - start;
        if (waited > limit) return false;
        if (waited > pause_only) std::this_thread::yield();
    }
}

// The pool. Between jobs, workers spin briefly (spin_time) and then sleep on a
// condition variable; a job is published by bumping `generation_`. The caller
// runs chunk 0; the other chunks are claimed one at a time, by the workers and
// by the caller once its own is done. So a worker that is slow to start (asleep,
// or sharing the caller's core) never makes the job slower than the caller
// alone: the caller takes its chunk. Which thread runs a chunk does not change
// the chunk's bounds, so results stay the same bits.
//
// Claims go through one 64-bit word, `claim_`: the job's generation (high 32
// bits) and the next unclaimed chunk (low 32). A claim is a compare-and-swap
// that checks both, so a worker that woke for an earlier job can never take a
// chunk of a later one.
class ThreadPool {
public:
    explicit ThreadPool(int threads) { resize(threads); }
    ~ThreadPool() { stop_workers(); }

    int size() const { return static_cast<int>(workers_.size()) + 1; }

    // True when the pool has workers and none of them is asleep on the
    // condition variable: a job published now starts on them at once.
    bool workers_awake() const { return !workers_.empty() && sleeping_.load(std::memory_order_relaxed) == 0; }

    // Wakes the sleeping workers without a job, to spin for the next one.
    // Only the first call after a worker went to sleep pays for the wake-up
    // (a system call); later ones see `rousing_`, which a worker clears each
    // time it goes to sleep.
    void rouse() {
        if (sleeping_.load(std::memory_order_relaxed) == 0 || rousing_.exchange(true)) return;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            ++rouse_;
        }
        wake_.notify_all();
    }

    void resize(int threads) {
        std::lock_guard<std::mutex> job_lock(job_mutex_);
        stop_workers();
        stopping_ = false;
        // A new worker starts at the current generation, so it waits for the next
        // job rather than re-running the last one.
        for (int i = 0; i < threads - 1; ++i)
            workers_.emplace_back([this, g = generation_.load()] { worker_loop(g); });
    }

    void run(int chunks, int64_t begin, int64_t end, RangeFn fn) {
        // One job at a time: a second caller thread runs its work itself.
        std::unique_lock<std::mutex> job_lock(job_mutex_, std::try_to_lock);
        if (!job_lock.owns_lock()) {
            fn(begin, end);
            return;
        }
        uint32_t job = 0;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            job_fn_ = &fn;
            job_begin_ = begin;
            job_end_ = end;
            job_chunks_ = chunks;
            pending_ = chunks - 1;
            error_ = nullptr;
            job = static_cast<uint32_t>(++generation_);
            claim_.store(uint64_t(job) << 32 | 1, std::memory_order_release);  // chunk 0 is the caller's
        }
        wake_.notify_all();
        run_chunk(0);
        for (int chunk; claim(job, chunks, chunk);) {  // the chunks no worker has started
            run_chunk(chunk);
            pending_.fetch_sub(1, std::memory_order_acq_rel);
        }
        spin_until([this] { return pending_.load(std::memory_order_acquire) == 0; });
        std::unique_lock<std::mutex> lock(mutex_);
        done_.wait(lock, [this] { return pending_.load() == 0; });
        job_fn_ = nullptr;
        if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    }

    // fork() copies only the thread that calls it: in the child the workers
    // do not exist, and joining them (set_num_threads, or the destructor when
    // the child calls exit()) would wait forever. So the pool's lock is held
    // across fork() (no worker is inside it then), and the child forgets its
    // workers without joining them (a joinable std::thread must not be
    // destroyed: their handles are moved to a list that is never destroyed,
    // reachable from a static pointer, so that LeakSanitizer does not count
    // them as leaked when the child exits) and gets fresh condition
    // variables (the old ones may count waiters that are not there): it runs
    // on one thread, and may start workers of its own. Registered with
    // pthread_atfork when the pool is made.
    void before_fork() { mutex_.lock(); }
    void after_fork_in_parent() { mutex_.unlock(); }
    void after_fork_in_child() {
        static std::vector<std::thread>* const forgotten = new std::vector<std::thread>;
        for (std::thread& w : workers_) forgotten->push_back(std::move(w));
        workers_.clear();
        new (&wake_) std::condition_variable;
        new (&done_) std::condition_variable;
        sleeping_ = 0;
        rousing_ = false;
        mutex_.unlock();
    }

private:
    // Takes the next chunk of job `job` (of `chunks` chunks) into `chunk`;
    // false when they are all taken or the job is no longer the current one.
    bool claim(uint32_t job, int chunks, int& chunk) {
        uint64_t state = claim_.load(std::memory_order_acquire);
        for (;;) {
            const int next = static_cast<int>(state & 0xffffffffu);
            if (static_cast<uint32_t>(state >> 32) != job || next >= chunks) return false;
            if (claim_.compare_exchange_weak(state, state + 1, std::memory_order_acq_rel)) {
                chunk = next;
                return true;
            }
        }
    }

    void run_chunk(int index) {
        const int64_t n = job_end_ - job_begin_;
        const int64_t b = job_begin_ + n * index / job_chunks_;
        const int64_t e = job_begin_ + n * (index + 1) / job_chunks_;
        const bool was_inside = t_inside_worker;
        t_inside_worker = true;
        try {
            (*job_fn_)(b, e);
        } catch (...) {
            std::lock_guard<std::mutex> lock(mutex_);
            if (!error_) error_ = std::current_exception();
        }
        t_inside_worker = was_inside;
    }

    void worker_loop(uint64_t seen) {
        for (;;) {
            spin_until([&] { return stopping_.load(std::memory_order_acquire) ||
                                    generation_.load(std::memory_order_acquire) != seen; });
            std::unique_lock<std::mutex> lock(mutex_);
            if (!stopping_.load() && generation_.load() == seen) {
                const uint64_t roused = rouse_.load();
                rousing_.store(false);  // a rouse() sent before now found us awake: the next one must wake us
                sleeping_.fetch_add(1, std::memory_order_relaxed);
                wake_.wait(lock, [&] {
                    return stopping_.load() || generation_.load() != seen || rouse_.load() != roused;
                });
                sleeping_.fetch_sub(1, std::memory_order_relaxed);
            }
            if (stopping_) return;
            if (generation_.load() == seen) continue;  // roused without a job: spin again
            seen = generation_.load();
            const int chunks = job_chunks_;
            lock.unlock();
            for (int chunk; claim(static_cast<uint32_t>(seen), chunks, chunk);) {
                run_chunk(chunk);
                std::lock_guard<std::mutex> done_lock(mutex_);  // the caller may be waiting on done_
                if (--pending_ == 0) done_.notify_one();
            }
        }
    }

    void stop_workers() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        for (auto& t : workers_) t.join();
        workers_.clear();
    }

    std::vector<std::thread> workers_;
    std::mutex job_mutex_;  // held by the caller for the whole of one job
    std::mutex mutex_;      // guards the fields below
    std::condition_variable wake_, done_;
    // Written under mutex_; atomic because the spinning threads read them without it.
    std::atomic<uint64_t> generation_{0};
    std::atomic<bool> stopping_{false};
    std::atomic<int> pending_{0};
    std::atomic<int> sleeping_{0};  // workers waiting on wake_
    std::atomic<uint64_t> rouse_{0};  // bumped to wake them without a job
    std::atomic<bool> rousing_{false};  // a rouse() is under way
    std::atomic<uint64_t> claim_{0};    // the current job's generation and next chunk (above)
    RangeFn* job_fn_ = nullptr;
    int64_t job_begin_ = 0, job_end_ = 0;
    int job_chunks_ = 0;
    std::exception_ptr error_;
};


ThreadPool& pool() {
    // The settings are read here, on the caller's thread, so that a bad value
    // throws to the caller and never inside a worker (where it would terminate).
    static ThreadPool instance([] {
        spin_time();
        return default_threads();
    }());
    static const bool fork_safe = [] {
        pthread_atfork([] { pool().before_fork(); }, [] { pool().after_fork_in_parent(); },
                       [] { pool().after_fork_in_child(); });
        return true;
    }();
    (void)fork_safe;
    return instance;
}

}  // namespace

int num_threads() { return pool().size(); }

bool pool_workers_awake() { return pool().workers_awake(); }

void pool_rouse_workers() { pool().rouse(); }

void set_num_threads(int n) {
    if (n < 1 || n > 1024)
        throw std::invalid_argument("set_num_threads: " + std::to_string(n) +
                                    " threads requested; expected 1 to 1024");
    if (pool().size() != n) pool().resize(n);
}

int parallel_chunks(int64_t begin, int64_t end, int64_t grain) {
    const int64_t n = end - begin;
    if (n <= 0) return 0;
    if (t_inside_worker) return 1;
    grain = std::max<int64_t>(grain, 1);
    const int64_t by_grain = n / grain;
    return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(by_grain, num_threads())));
}

void parallel_for(int64_t begin, int64_t end, int64_t grain, RangeFn fn) {
    const int chunks = parallel_chunks(begin, end, grain);
    if (chunks == 0) return;
    const ProfilePause pause;  // the chunks' work counts in the caller's scope
    if (chunks == 1) {
        fn(begin, end);
        return;
    }
    pool().run(chunks, begin, end, fn);
}

}  // namespace attn
