// tensor/allocator.hpp: size classes, reuse of freed blocks, the bound on
// what is cached, and many threads allocating and freeing at once.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "tensor/allocator.hpp"
#include "tensor/tensor.hpp"
#include "tests/helpers.hpp"

using namespace attn;

TEST_CASE("allocator: size classes are 64-byte multiples within 12.5% of the request") {
    CHECK(storage_size_class(0) == 64);
    CHECK(storage_size_class(1) == 64);
    CHECK(storage_size_class(64) == 64);
    CHECK(storage_size_class(65) == 128);
    CHECK(storage_size_class(4096) == 4096);
    CHECK(storage_size_class(4097) == 4608);
    for (size_t bytes = 1; bytes < (size_t{1} << 26); bytes = bytes * 3 / 2 + 7) {
        const size_t c = storage_size_class(bytes);
        CHECK(c % 64 == 0);
        CHECK(c >= bytes);
        CHECK(static_cast<double>(c) <= static_cast<double>(bytes) * 1.125 + 64);
        CHECK(storage_size_class(c) == c);  // a class is its own class
    }
}

TEST_CASE("allocator: a freed block is reused by the next request of its class") {
    if (!storage_cache_enabled()) return;  // ATTN_NO_CACHE=1
    void* a = storage_allocate(100000);
    CHECK(reinterpret_cast<uintptr_t>(a) % 64 == 0);
    std::memset(a, 1, 100000);  // the whole request is usable
    storage_release(a, 100000);
    const AllocatorStats before = allocator_stats();
    void* b = storage_allocate(100100);  // the same class (≤ 12.5% larger)
    CHECK(b == a);
    CHECK(allocator_stats().hits == before.hits + 1);
    storage_release(b, 100100);
}

TEST_CASE("allocator: tensors go through it, and empty_storage_cache frees everything cached") {
    if (!storage_cache_enabled()) return;
    { Tensor t = Tensor::zeros(Shape{1000, 100}); }
    CHECK(allocator_stats().cached_bytes >= 400000);
    empty_storage_cache();
    CHECK(allocator_stats().cached_bytes == 0);
    const AllocatorStats before = allocator_stats();
    { Tensor t = Tensor::zeros(Shape{1000, 100}); }
    { Tensor t = Tensor::zeros(Shape{1000, 100}); }
    const AllocatorStats after = allocator_stats();
    CHECK(after.misses == before.misses + 1);
    CHECK(after.hits == before.hits + 1);
}

// The bound: live + cached ≤ the largest live set so far + the limit.
bool within_bound() {
    const AllocatorStats s = allocator_stats();
    return s.live_bytes + s.cached_bytes <= s.largest_live_bytes + static_cast<int64_t>(storage_cache_limit());
}

TEST_CASE("allocator: blocks beyond the limit are kept after a larger live set, and reused") {
    if (!storage_cache_enabled()) return;
    empty_storage_cache();
    // Four blocks of half the limit each, live at once: twice the limit. (Never
    // written, so their pages are never faulted in.)
    const size_t block = storage_cache_limit() / 2 + 64, size = storage_size_class(block);
    std::vector<void*> blocks;
    for (int i = 0; i < 4; ++i) blocks.push_back(storage_allocate(block));
    CHECK(allocator_stats().largest_live_bytes >= static_cast<int64_t>(4 * size));
    for (void* p : blocks) storage_release(p, block);
    CHECK(allocator_stats().cached_bytes == static_cast<int64_t>(4 * size));  // all four kept
    CHECK(within_bound());
    // The same four requests again (a second training step): four hits, the same blocks.
    const AllocatorStats before = allocator_stats();
    std::vector<void*> again;
    for (int i = 0; i < 4; ++i) again.push_back(storage_allocate(block));
    CHECK(allocator_stats().hits == before.hits + 4);
    CHECK(allocator_stats().misses == before.misses);
    for (void* p : again) CHECK(std::find(blocks.begin(), blocks.end(), p) != blocks.end());
    for (void* p : again) storage_release(p, block);
    empty_storage_cache();
}

TEST_CASE("allocator: when sizes change, the cache gives back old blocks instead of growing the footprint") {
    if (!storage_cache_enabled()) return;
    empty_storage_cache();
    const size_t old_block = storage_cache_limit() / 2 + 64, new_block = old_block * 5 / 4 + 4096;
    REQUIRE(storage_size_class(new_block) != storage_size_class(old_block));
    std::vector<void*> blocks;
    for (int i = 0; i < 4; ++i) blocks.push_back(storage_allocate(old_block));
    for (void* p : blocks) storage_release(p, old_block);
    const int64_t largest = allocator_stats().largest_live_bytes;
    // Now only the new size is asked for: every request misses, and each one
    // frees old blocks so that live + cached stays within the largest live
    // set + the limit, though the live set itself grows past the old peak.
    blocks.clear();
    for (int i = 0; i < 4; ++i) {
        blocks.push_back(storage_allocate(new_block));
        CHECK(within_bound());
    }
    CHECK(allocator_stats().largest_live_bytes > largest);
    CHECK(allocator_stats().cached_bytes < static_cast<int64_t>(4 * storage_size_class(old_block)));  // some went back
    for (void* p : blocks) {
        storage_release(p, new_block);
        CHECK(within_bound());
    }
    empty_storage_cache();
}

TEST_CASE("allocator: four threads allocating and freeing at once") {
    std::vector<std::thread> threads;
    std::vector<int> bad(4, 0);
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([t, &bad] {
            for (int i = 0; i < 2000; ++i) {
                const size_t bytes = static_cast<size_t>(64 + (i * 37 + t * 1000) % 20000);
                auto* p = static_cast<unsigned char*>(storage_allocate(bytes));
                std::memset(p, t + 1, bytes);
                for (size_t k = 0; k < bytes; k += 97)
                    if (p[k] != t + 1) ++bad[static_cast<size_t>(t)];
                storage_release(p, bytes);
            }
        });
    for (auto& th : threads) th.join();
    for (int b : bad) CHECK(b == 0);
}

TEST_CASE("allocator: more than the machine's memory is refused with the size asked for, before the C library is asked") {
    // 2^50 bytes (a petabyte): no machine this runs on has it, and under
    // AddressSanitizer the C library's refusal would abort the test.
    const int64_t largest = allocator_stats().largest_live_bytes;
    CHECK_THROWS_WITH_AS(storage_allocate(size_t{1} << 50),
                         doctest::Contains("tensor storage: 1125899906842624 bytes asked for, with "),
                         std::length_error);
    // Through a tensor: 2^20 × 2^20 floats, 4 TiB.
    CHECK_THROWS_AS(Tensor::empty(Shape{int64_t{1} << 20, int64_t{1} << 20}), std::length_error);
    CHECK(allocator_stats().largest_live_bytes == largest);  // a refused request is no peak
    // The cache's accounting is unchanged: a small block still comes and goes.
    void* p = storage_allocate(128);
    CHECK(p != nullptr);
    storage_release(p, 128);
}

TEST_CASE("allocator: tensors each within the machine's memory but together beyond it are refused, naming the sizes") {
    // Sizes that add up: the limit is what is in use now + 1 MiB, and two
    // blocks of 640 KiB (each a size class of its own: 655360 bytes) fit one
    // at a time but not together.
    empty_storage_cache();
    const size_t in_use = static_cast<size_t>(allocator_stats().live_bytes);
    const attn::testing::MemoryLimit limit(in_use + (size_t{1} << 20));
    const size_t block = 640 << 10;
    void* a = storage_allocate(block);
    const int64_t largest_before = allocator_stats().largest_live_bytes, peak_before = allocator_stats().peak_live_bytes;
    CHECK_THROWS_WITH_AS(storage_allocate(block),
                         ("tensor storage: 655360 bytes asked for, with " + std::to_string(in_use + block) +
                          " already in use: more than this machine's memory (" + std::to_string(in_use + (1 << 20)) +
                          " bytes)")
                             .c_str(),
                         std::length_error);
    // The refused request is not counted: not as in use, nor in the peaks
    // (which bound the cache: a peak of a request never made would let the
    // cache keep everything).
    CHECK(allocator_stats().live_bytes == static_cast<int64_t>(in_use + block));
    CHECK(allocator_stats().largest_live_bytes == largest_before);
    CHECK(allocator_stats().peak_live_bytes == peak_before);
    storage_release(a, block);

    // What is cached counts too, and is given back to make room: with a's
    // block in the cache, a block of another size class (768 KiB) fits only
    // once the cache is emptied, and it is.
    const size_t other = 768 << 10;
    if (storage_cache_enabled()) CHECK(allocator_stats().cached_bytes >= static_cast<int64_t>(block));
    void* b = storage_allocate(other);
    CHECK(b != nullptr);
    CHECK(allocator_stats().cached_bytes == 0);
    storage_release(b, other);

    // Through tensors, as a model is built: the third 256×256 float matrix
    // (256 KiB each) passes a limit of 640 KiB beyond what was in use.
    empty_storage_cache();
    const size_t now = static_cast<size_t>(allocator_stats().live_bytes);
    set_storage_memory_limit(now + (640 << 10));
    const Tensor w1 = Tensor::zeros(Shape{256, 256}), w2 = Tensor::zeros(Shape{256, 256});
    CHECK_THROWS_AS(Tensor::zeros(Shape{256, 256}), std::length_error);
}
