#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tensor/parallel.hpp"
#include "tensor/random.hpp"
#include "tensor/shape.hpp"
#include "tensor/tensor.hpp"

using namespace attn;

TEST_CASE("shape: numel, str and strides") {
    Shape s{2, 3, 4};
    CHECK(s.rank() == 3);
    CHECK(s.numel() == 24);
    CHECK(s.str() == "2×3×4");
    CHECK(s.stride(0) == 12);
    CHECK(s.stride(2) == 1);
    CHECK(Shape{}.str() == "scalar");
    CHECK(Shape{}.numel() == 1);
    CHECK(s.normalize_axis(-1, "t") == 2);
    CHECK_THROWS_WITH_AS(s.normalize_axis(3, "sum"), "sum: axis 3 is out of range for shape 2×3×4",
                         std::out_of_range);
}

// docclass --embedding 2^62 once crashed: 2^40 × 2^40 wrapped around to
// numel() == 0, and the code ran off the empty storage it then made.
TEST_CASE("shape: numel refuses a count that wraps around; an axis of 0 still gives 0") {
    const int64_t big = int64_t{1} << 40;
    CHECK(Shape{int64_t{1} << 31, int64_t{1} << 31}.numel() == int64_t{1} << 62);
    CHECK(Shape{3, int64_t{1} << 61}.numel() == 3 * (int64_t{1} << 61));
    CHECK_THROWS_WITH_AS(Shape({big, big}).numel(), "Shape 1099511627776×1099511627776 has more elements than an int64_t counts",
                         std::length_error);
    CHECK_THROWS_AS(Shape({int64_t{1} << 31, int64_t{1} << 31, 4}).numel(), std::length_error);
    CHECK_THROWS_AS(Shape({4, int64_t{1} << 62}).numel(), std::length_error);
    CHECK(Shape{big, big, 0}.numel() == 0);
    CHECK(Shape{0, big, big}.numel() == 0);
    CHECK_THROWS_AS(Tensor::zeros(Shape{big, big}), std::length_error);
}

TEST_CASE("shape: NumPy broadcasting") {
    CHECK(broadcast_shapes(Shape{2, 3}, Shape{3}, "add") == Shape{2, 3});
    CHECK(broadcast_shapes(Shape{4, 1, 3}, Shape{5, 1}, "add") == Shape{4, 5, 3});
    CHECK(broadcast_shapes(Shape{}, Shape{2, 2}, "add") == Shape{2, 2});
    CHECK(broadcast_shapes(Shape{1}, Shape{0}, "add") == Shape{0});
    CHECK_THROWS_WITH_AS(broadcast_shapes(Shape{2, 3}, Shape{4, 3}, "add"),
                         "add: shapes 2×3 and 4×3 do not broadcast (axis 0: 2 vs 4)", std::invalid_argument);
}

TEST_CASE("generator: same seed, same stream; uniform and normal moments") {
    Generator a(42), b(42), c(43);
    for (int i = 0; i < 10; ++i) CHECK(a.next_u64() == b.next_u64());
    CHECK(Generator(42).next_u64() != c.next_u64());
    Generator g(7);
    const int n = 200000;
    double s = 0, s2 = 0, m = 0;
    for (int i = 0; i < n; ++i) {
        double x = g.normal();
        s += x;
        s2 += x * x;
        m += g.uniform();
    }
    // Standard errors: mean 1/sqrt(n) ≈ 0.0022; 6 sigma bounds.
    CHECK(std::abs(s / n) < 0.014);
    CHECK(std::abs(s2 / n - 1) < 0.02);
    CHECK(std::abs(m / n - 0.5) < 0.004);
    for (int i = 0; i < 1000; ++i) CHECK(g.randint(7) < 7);
}

// Polls `condition` for up to 5 s (the workers' spin is 300 µs; the margin is
// for a loaded machine); true if it held.
template <class Condition>
bool eventually(Condition condition) {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!condition())
        if (std::chrono::steady_clock::now() > limit) return false;
        else std::this_thread::sleep_for(std::chrono::microseconds(100));
    return true;
}

TEST_CASE("thread pool: every chunk runs exactly once, job after job, with a second caller thread beside") {
    // The chunks of a job are claimed by whichever thread comes first (the
    // caller takes those no worker has started): none may be lost or run twice.
    const int saved = num_threads();
    for (int threads : {2, 3}) {
        set_num_threads(threads);
        auto jobs = [](int count, bool& ok) {
            for (int it = 0; it < count; ++it) {
                const int n = 1 + it % 37;
                std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
                parallel_for(0, n, 1, [&](int64_t b, int64_t e) {
                    for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
                });
                for (const auto& h : hits) ok = ok && h == 1;
                if (it % 50 == 0) pool_rouse_workers();
                if (it % 400 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // let them sleep
            }
        };
        bool ok_here = true, ok_there = true;
        std::thread other([&] { jobs(500, ok_there); });  // runs its jobs inline while ours hold the pool
        jobs(2000, ok_here);
        other.join();
        CHECK(ok_here);
        CHECK(ok_there);
    }
    set_num_threads(saved);
}

TEST_CASE("thread pool: idle workers fall asleep after their spin; pool_rouse_workers wakes them without a job") {
    const int saved = num_threads();
    set_num_threads(1);
    CHECK_FALSE(pool_workers_awake());  // no workers at all
    pool_rouse_workers();               // nothing to do, nothing breaks
    set_num_threads(2);
    std::atomic<int> ran{0};
    parallel_for(0, 2, 1, [&](int64_t, int64_t) { ++ran; });
    CHECK(ran == 2);
    CHECK(eventually([] { return !pool_workers_awake(); }));
    // Roused again at each poll: a poller that is descheduled (a loaded
    // machine, an emulator) could otherwise miss their whole spin.
    const auto rouse_and_look = [] {
        pool_rouse_workers();
        return pool_workers_awake();
    };
    CHECK(eventually(rouse_and_look));
    CHECK(eventually([] { return !pool_workers_awake(); }));  // and they sleep again
    CHECK(eventually(rouse_and_look));                         // as often as asked
    CHECK(eventually([] { return !pool_workers_awake(); }));
    // Roused workers still run the next job.
    pool_rouse_workers();
    std::vector<int> hits(100, 0);
    parallel_for(0, 100, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
    });
    for (int h : hits) REQUIRE(h == 1);
    set_num_threads(saved);
}

TEST_CASE("thread pool: parallel_for covers the range once, deterministic chunks") {
    const int saved = num_threads();
    for (int threads : {1, 2, 3}) {
        set_num_threads(threads);
        std::vector<int> hits(1000, 0);
        parallel_for(0, 1000, 10, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
        });
        for (int h : hits) REQUIRE(h == 1);
        CHECK(parallel_chunks(0, 1000, 10) == threads);
        CHECK(parallel_chunks(0, 15, 10) == 1);  // small work stays on the caller
    }
    set_num_threads(2);
    CHECK_THROWS_WITH(parallel_for(0, 100, 1, [](int64_t b, int64_t) {
                          if (b > 0) throw std::runtime_error("boom");
                      }),
                      "boom");
    CHECK_THROWS_AS(set_num_threads(0), std::invalid_argument);
    set_num_threads(saved);
}
