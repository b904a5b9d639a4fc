#include "course/guard.hpp"

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <new>
#include <stdexcept>

namespace attn::course {

GuardedFloats::GuardedFloats(size_t n, Side side) : n_(n), side_(side) {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t used = (n * sizeof(float) + page_ - 1) / page_ * page_;
    map_bytes_ = used + page_;
    void* map = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) throw std::bad_alloc();
    map_ = static_cast<char*>(map);
    if (side == Side::end) {
        guard_ = map_ + used;
        data_ = reinterpret_cast<float*>(guard_) - n;
    } else {
        guard_ = map_;
        data_ = reinterpret_cast<float*>(map_ + page_);
    }
    if (mprotect(guard_, page_, PROT_NONE) != 0) {
        munmap(map_, map_bytes_);
        throw std::runtime_error("mprotect failed");
    }
}

GuardedFloats::~GuardedFloats() { munmap(map_, map_bytes_); }

bool GuardedFloats::guards(const void* address) const {
    const char* a = static_cast<const char*>(address);
    return a >= guard_ && a < guard_ + page_;
}

std::string GuardedFloats::where(const void* address) const {
    const char* a = static_cast<const char*>(address);
    if (side_ == Side::end) {
        const size_t past = static_cast<size_t>(a - reinterpret_cast<const char*>(data_ + n_)) / sizeof(float);
        return past == 0 ? "just past the end" : std::to_string(past + 1) + " floats past the end";
    }
    const size_t before = static_cast<size_t>(reinterpret_cast<const char*>(data_) - a + 3) / sizeof(float);
    return before <= 1 ? "just before the start" : std::to_string(before) + " floats before the start";
}

namespace {

sigjmp_buf g_jump;
Fault g_fault;

void on_fault(int, siginfo_t* info, void* context) {
    g_fault.happened = true;
    g_fault.address = info->si_addr;
#if defined(__x86_64__) && defined(__linux__)
    // the page fault's error code: bit 1 set for a write
    g_fault.write = (static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#else
    (void)context;
#endif
    siglongjmp(g_jump, 1);
}

}  // namespace

Fault run_catching_faults(const std::function<void()>& f) {
    struct sigaction action {}, old_segv {}, old_bus {};
    action.sa_sigaction = on_fault;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &old_segv);
    sigaction(SIGBUS, &action, &old_bus);
    g_fault = Fault{};
    if (sigsetjmp(g_jump, 1) == 0) f();
    sigaction(SIGSEGV, &old_segv, nullptr);
    sigaction(SIGBUS, &old_bus, nullptr);
    return g_fault;
}

}  // namespace attn::course
