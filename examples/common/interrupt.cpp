#include "examples/common/interrupt.hpp"

#include <unistd.h>

#include <utility>

namespace attn {

namespace {

// A signal handler may only touch a volatile sig_atomic_t and call
// async-signal-safe functions (write, _exit).
volatile std::sig_atomic_t interrupts = 0;

extern "C" void on_interrupt(int) {
    if (interrupts >= 1) _exit(130);
    interrupts = 1;
    const char message[] = "\ninterrupted: finishing this step, then saving (Ctrl-C again to exit at once)\n";
    const ssize_t ignored = write(STDERR_FILENO, message, sizeof message - 1);
    (void)ignored;
}

}  // namespace

InterruptScope::InterruptScope() {
    interrupts = 0;
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    for (auto [signal, old] : {std::pair{SIGINT, &old_int_}, std::pair{SIGTERM, &old_term_}}) {
        sigaction(signal, nullptr, old);
        if (old->sa_handler != SIG_IGN) sigaction(signal, &action, nullptr);
    }
}

InterruptScope::~InterruptScope() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
}

bool InterruptScope::requested() const { return interrupts != 0; }

}  // namespace attn
