// Ctrl-C for the training loop (examples/common/training_loop.cpp): while an
// InterruptScope lives, the first SIGINT or SIGTERM only raises a flag that
// the loop reads after each step (it finishes the step, saves, and stops); the
// second ends the process at once, with status 130.
#pragma once

#include <csignal>

namespace attn {

// Installs the handler for its lifetime and puts back what was there. A
// signal the process was started to ignore (a background job of a script,
// nohup) stays ignored, as every Unix program leaves it.
class InterruptScope {
public:
    InterruptScope();
    ~InterruptScope();
    InterruptScope(const InterruptScope&) = delete;
    InterruptScope& operator=(const InterruptScope&) = delete;
    // A first SIGINT or SIGTERM came since the scope began.
    bool requested() const;

private:
    struct sigaction old_int_ {}, old_term_ {};
};

}  // namespace attn
