#include "tensor/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace attn {
namespace {

thread_local bool t_inside_worker = false;

int default_threads() {
    if (const char* env = std::getenv("ATTN_NUM_THREADS")) {
        char* end = nullptr;
        long n = std::strtol(env, &end, 10);
        if (end != env && *end == '\0' && n >= 1 && n <= 1024) return static_cast<int>(n);
        throw std::invalid_argument(std::string("ATTN_NUM_THREADS=") + env +
                                    ": expected a whole number of threads between 1 and 1024");
    }
    unsigned hw = std::thread::hardware_concurrency();
    return hw == 0 ? 1 : static_cast<int>(hw);
}

// The pool. Workers sleep on a condition variable between jobs; a job is
// published by bumping `generation_`, and each worker runs chunk (its index+1)
// while the caller runs chunk 0.
class ThreadPool {
public:
    explicit ThreadPool(int threads) { resize(threads); }
    ~ThreadPool() { stop_workers(); }

    int size() const { return static_cast<int>(workers_.size()) + 1; }

    void resize(int threads) {
        std::lock_guard<std::mutex> job_lock(job_mutex_);
        stop_workers();
        stopping_ = false;
        // A new worker starts at the current generation, so it waits for the next
        // job rather than re-running the last one.
        for (int i = 0; i < threads - 1; ++i)
            workers_.emplace_back([this, i, g = generation_] { worker_loop(i + 1, g); });
    }

    void run(int chunks, int64_t begin, int64_t end, RangeFn fn) {
        // One job at a time: a second caller thread runs its work itself.
        std::unique_lock<std::mutex> job_lock(job_mutex_, std::try_to_lock);
        if (!job_lock.owns_lock()) {
            fn(begin, end);
            return;
        }
        {
            std::lock_guard<std::mutex> lock(mutex_);
            job_fn_ = &fn;
            job_begin_ = begin;
            job_end_ = end;
            job_chunks_ = chunks;
            pending_ = chunks - 1;
            error_ = nullptr;
            ++generation_;
        }
        wake_.notify_all();
        run_chunk(0);
        std::unique_lock<std::mutex> lock(mutex_);
        done_.wait(lock, [this] { return pending_ == 0; });
        job_fn_ = nullptr;
        if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    }

private:
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

    void worker_loop(int index, uint64_t seen) {
        for (;;) {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
            if (stopping_) return;
            seen = generation_;
            if (index >= job_chunks_) continue;  // this job has fewer chunks than workers
            lock.unlock();
            run_chunk(index);
            lock.lock();
            if (--pending_ == 0) done_.notify_one();
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
    uint64_t generation_ = 0;
    bool stopping_ = false;
    RangeFn* job_fn_ = nullptr;
    int64_t job_begin_ = 0, job_end_ = 0;
    int job_chunks_ = 0, pending_ = 0;
    std::exception_ptr error_;
};


ThreadPool& pool() {
    static ThreadPool instance(default_threads());
    return instance;
}

}  // namespace

int num_threads() { return pool().size(); }

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
    if (chunks == 1) {
        fn(begin, end);
        return;
    }
    pool().run(chunks, begin, end, fn);
}

}  // namespace attn
