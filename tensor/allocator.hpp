// The caching allocator behind tensor storage.
//
// Why: a training step allocates thousands of tensors and frees them again,
// the same sizes every step. Through malloc alone, each large block comes
// fresh from the kernel (glibc maps blocks above 128 KiB to their own pages
// and unmaps them on free; it trims its heap too), and every 4 KiB page of it
// is faulted in again, a trap into the kernel per page, slowest on virtual
// machines (docs/performance.md). So freed blocks are kept
// here, in free lists by size class, and the next request of that class reuses
// one: after the first step, a step costs no page faults at all.
//
// Size classes: a request is rounded up to a multiple of 64 bytes up to 4 KiB,
// above that to one of 8 steps per power of two (…, 4096, 4608, 5120, …), so a
// block wastes under 12.5%. Requests of a class share one free list.
//
// Bounded by what the program has already needed: live + cached never
// exceeds the largest live set so far (the most bytes ever live at once) +
// storage_cache_limit(). So blocks freed after a step's peak are all kept,
// however large (W6's naive attention at L = 1024 frees 512 MiB score
// matrices, which would otherwise be faulted in again every step), and the
// next step reuses them, yet caching never makes the process
// hold more than its peak + the limit. When a request misses the cache and
// the sum would pass that bound, cached blocks are freed, largest first, until
// it holds again: a program whose sizes change does not keep its old blocks on
// top of its new ones. (Why the limit on top of the peak: each size class
// keeps as many blocks as it ever had live at once, and different classes
// peak at different moments, so a step's blocks add up to a little more than
// its peak; W6 at L = 1024: 3,424 MiB of blocks, peak 3,360.) The limit is
// 256 MiB by default; ATTN_CACHE_MB sets it. Thread-safe (one mutex: tensors
// are created and freed by the thread that runs the graph, so it is
// uncontended).
//
// ATTN_NO_CACHE=1 turns caching off (every block to and from malloc), to
// measure what it buys or to let a memory checker see each block's lifetime.
// Under AddressSanitizer cached blocks are poisoned, so a use after free is
// reported with the cache on too.
#pragma once

#include <cstddef>
#include <cstdint>

namespace attn {

// `bytes` (a multiple of 64) aligned to 64 bytes. Throws std::length_error,
// with the sizes, when the program's storage would then pass
// storage_memory_limit(), and std::bad_alloc when the C library has none to
// give.
void* storage_allocate(size_t bytes);
// Gives back a block of storage_allocate(bytes), same `bytes`.
void storage_release(void* p, size_t bytes);

// The size class of a request: the bytes a block for it really has.
size_t storage_size_class(size_t bytes);

// The most bytes of storage the program may hold at once, in use and cached
// together: the machine's memory, unless set. A request past it is refused
// (a std::length_error naming the sizes) before any memory is taken, so a
// model whose sizes add up to more than the machine has fails with a message
// instead of being killed when its tensors are filled in.
size_t storage_memory_limit();
// Sets that limit (0: the machine's memory again); returns the one before.
// For tests, and for a user who wants a run bounded below the machine.
size_t set_storage_memory_limit(size_t bytes);

struct AllocatorStats {
    int64_t hits = 0;          // requests served from a free list
    int64_t misses = 0;        // requests that went to malloc
    int64_t cached_bytes = 0;  // bytes now in the free lists
    int64_t live_bytes = 0;    // bytes handed out and not yet given back
    int64_t peak_live_bytes = 0;     // since reset_peak_live_bytes()
    int64_t largest_live_bytes = 0;  // ever: what bounds the cache
};
AllocatorStats allocator_stats();
// Starts peak_live_bytes again from the live bytes of now.
void reset_peak_live_bytes();
// Frees every cached block (back to malloc).
void empty_storage_cache();
bool storage_cache_enabled();
size_t storage_cache_limit();

}  // namespace attn
