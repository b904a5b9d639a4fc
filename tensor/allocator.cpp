#include "tensor/allocator.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

// Under AddressSanitizer a cached block is poisoned while it waits in a free
// list, so a tensor read or written after its storage was freed is still
// reported; and a block in use is poisoned past the bytes asked for (its
// size class rounds up), so a read or write past a tensor's last value is
// reported too, not read from the block's slack (the macros do nothing in
// other builds).
#if defined(__has_include)
#if __has_include(<sanitizer/asan_interface.h>)
#include <sanitizer/asan_interface.h>
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define ATTN_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ATTN_UNDER_ASAN 1
#endif
#endif
#ifndef ASAN_POISON_MEMORY_REGION
#define ASAN_POISON_MEMORY_REGION(addr, size) ((void)(addr), (void)(size))
#define ASAN_UNPOISON_MEMORY_REGION(addr, size) ((void)(addr), (void)(size))
#endif

namespace attn {
namespace {

struct Cache {
    std::mutex mutex;
    std::map<size_t, std::vector<void*>> free_lists;  // size class → free blocks
    size_t cached_bytes = 0;
    int64_t hits = 0, misses = 0;
    int64_t live = 0, peak_live = 0;  // peak_live can be reset (reset_peak_live_bytes)
    size_t largest_live = 0;          // the most bytes ever live at once, never reset
    void count_out(size_t size) {
        live += static_cast<int64_t>(size);
        peak_live = std::max(peak_live, live);
        largest_live = std::max(largest_live, static_cast<size_t>(live));
    }
    // How much may be cached now: the limit, plus what the program has
    // already needed at once beyond what it holds now. So live + cached never
    // exceeds the largest live set + the limit.
    size_t bound() const { return storage_cache_limit() + (largest_live - static_cast<size_t>(live)); }
    // Frees every cached block.
    void release_cached() {
        for (auto& [size, blocks] : free_lists)
            for (void* p : blocks) {
                ASAN_UNPOISON_MEMORY_REGION(p, size);
                std::free(p);
            }
        free_lists.clear();
        cached_bytes = 0;
    }
    // Frees cached blocks, largest first, until the cache is within bound().
    void evict() {
        while (cached_bytes > bound() && !free_lists.empty()) {
            auto last = std::prev(free_lists.end());
            auto& [size, blocks] = *last;
            while (!blocks.empty() && cached_bytes > bound()) {
                ASAN_UNPOISON_MEMORY_REGION(blocks.back(), size);
                std::free(blocks.back());
                blocks.pop_back();
                cached_bytes -= size;
            }
            if (blocks.empty()) free_lists.erase(last);
        }
    }
};

// Never destroyed: tensors in static objects may be freed after main returns.
Cache& cache() {
    static Cache* c = new Cache;
    return *c;
}

size_t physical_memory_bytes() {
    static const size_t bytes = [] {
        const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        // Unknown: no limit of our own (the C library still decides).
        return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : SIZE_MAX;
    }();
    return bytes;
}

bool env_flag(const char* name) {
    const char* v = std::getenv(name);
    return v && *v && *v != '0';
}

void* fresh_block(size_t bytes) {
    void* p = std::aligned_alloc(64, bytes);
    if (!p) throw std::bad_alloc();
    return p;
}

std::atomic<size_t> memory_limit{0};  // 0: the machine's memory (set_storage_memory_limit)

}  // namespace

bool storage_cache_enabled() {
    static const bool enabled = !env_flag("ATTN_NO_CACHE");
    return enabled;
}

size_t storage_cache_limit() {
    static const size_t limit = [] {
        const char* v = std::getenv("ATTN_CACHE_MB");
        return (v && *v ? static_cast<size_t>(std::strtoull(v, nullptr, 10)) : size_t{256}) << 20;
    }();
    return limit;
}

size_t storage_size_class(size_t bytes) {
    if (bytes <= 4096) return bytes == 0 ? 64 : (bytes + 63) / 64 * 64;
    // 8 classes per power of two: round up to a multiple of 2^(⌊log2 bytes⌋ − 3)
    const size_t step = std::bit_floor(bytes) / 8;
    return (bytes + step - 1) / step * step;
}

namespace {

// The block as a tensor of `bytes` uses it: the rest of its size class out
// of bounds. Under AddressSanitizer its bytes are also set to all ones, a NaN
// in every float and double, so that a value a tensor's code never wrote
// reads as NaN, never as what the block held before (which, reused from the
// same computation a moment ago, may be the right value by luck).
void* handed_out(void* p, size_t bytes, size_t size) {
    ASAN_UNPOISON_MEMORY_REGION(p, bytes);
    ASAN_POISON_MEMORY_REGION(static_cast<char*>(p) + bytes, size - bytes);
#ifdef ATTN_UNDER_ASAN
    std::memset(p, 0xff, bytes);
#endif
    return p;
}

}  // namespace

void* storage_allocate(size_t bytes) {
    const size_t size = storage_size_class(bytes);
    Cache& c = cache();
    {
        std::lock_guard<std::mutex> lock(c.mutex);
        auto it = c.free_lists.find(size);
        if (it != c.free_lists.end() && !it->second.empty()) {
            c.count_out(size);
            void* p = it->second.back();
            it->second.pop_back();
            c.cached_bytes -= size;
            ++c.hits;
            return handed_out(p, bytes, size);
        }
        ++c.misses;
        // All the program's tensors together (this one, and what is cached,
        // included) must fit in the machine's memory. Sizes from a mistyped
        // flag or a corrupt file can each be modest and still add up to more:
        // refused here, with the sizes, before the C library is asked (its
        // answer would be a bare std::bad_alloc, under AddressSanitizer an
        // abort, or, since Linux hands out memory it does not have, the
        // out-of-memory killer once the tensors are filled in). A refused
        // request is not counted: the peaks stay what the program really held.
        const size_t limit = storage_memory_limit(), live = static_cast<size_t>(c.live);
        if (size > limit || live > limit - size || c.cached_bytes > limit - size - live) c.release_cached();
        if (size > limit || live > limit - size)
            throw std::length_error("tensor storage: " + std::to_string(size) + " bytes asked for, with " +
                                    std::to_string(live) + " already in use: more than this machine's memory (" +
                                    std::to_string(limit) + " bytes)");
        c.count_out(size);
        // A new block: the program may now hold more than it ever did, and
        // what is cached must not add to that.
        c.evict();
    }
    try {
        return handed_out(fresh_block(size), bytes, size);
    } catch (...) {
        std::lock_guard<std::mutex> lock(c.mutex);
        c.live -= static_cast<int64_t>(size);
        throw;
    }
}

void storage_release(void* p, size_t bytes) {
    if (!p) return;
    const size_t size = storage_size_class(bytes);
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    c.live -= static_cast<int64_t>(size);
    if (storage_cache_enabled()) {
        if (c.cached_bytes + size <= c.bound()) {
            ASAN_POISON_MEMORY_REGION(p, size);
            c.free_lists[size].push_back(p);
            c.cached_bytes += size;
            return;
        }
    }
    ASAN_UNPOISON_MEMORY_REGION(p, size);
    std::free(p);
}

AllocatorStats allocator_stats() {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    return {c.hits, c.misses, static_cast<int64_t>(c.cached_bytes), c.live, c.peak_live,
            static_cast<int64_t>(c.largest_live)};
}

void reset_peak_live_bytes() {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    c.peak_live = c.live;
}

void empty_storage_cache() {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    c.release_cached();
}

size_t storage_memory_limit() {
    const size_t set = memory_limit.load();
    return set ? set : physical_memory_bytes();
}

size_t set_storage_memory_limit(size_t bytes) {
    const size_t before = memory_limit.exchange(bytes);
    return before ? before : physical_memory_bytes();
}

}  // namespace attn
