// Memory a kernel may not read or write past, checked by the hardware: a
// buffer of floats placed against an unreadable page, and a fault in it
// caught and named (course/guard.cpp). The GEMM exercise's grader and its
// probe put A, B and C in such buffers, so a micro-kernel that reads 4 floats
// past the end of B on an edge tile crashes every time, where in a vector it
// would read what happens to follow and pass (AddressSanitizer does not see
// the kernel, which is timed, so it is not instrumented: the Makefile).
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace attn::course {

class GuardedFloats {
public:
    // Where the unreadable page is: right after the last float, or right before the first.
    enum class Side { end, start };
    GuardedFloats(size_t n, Side side);
    ~GuardedFloats();
    GuardedFloats(const GuardedFloats&) = delete;
    GuardedFloats& operator=(const GuardedFloats&) = delete;

    float* data() const { return data_; }
    size_t size() const { return n_; }
    // Whether `address` lies in this buffer's unreadable page.
    bool guards(const void* address) const;
    // Where `address` is, in words: "4 floats past the end", "just before the start".
    std::string where(const void* address) const;

private:
    float* data_ = nullptr;
    size_t n_ = 0;
    char* map_ = nullptr;
    size_t map_bytes_ = 0;
    char* guard_ = nullptr;
    size_t page_ = 0;
    Side side_;
};

// Runs f; a segmentation fault or bus error while it runs is caught (f is
// left where it faulted) and described. Not reentrant.
struct Fault {
    bool happened = false;
    const void* address = nullptr;
    bool write = false;  // known on x86-64 Linux; false (a read) elsewhere
};
Fault run_catching_faults(const std::function<void()>& f);

}  // namespace attn::course
