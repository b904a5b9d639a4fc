// Stops a training run the moment it stops producing numbers.
//
// A learning rate that is too large (or a checkpoint that was already
// broken) makes the loss inf or NaN; Adam then writes NaN into every weight,
// and a trainer that carries on exits 0 after saving all-NaN checkpoints.
// The trainers call check() after backward and before the optimiser's step,
// so a bad step never reaches the weights and the last checkpoint on disk is
// the last good one:
//
//     loss.backward();
//     const double norm = clip_grad_norm_(model.parameters(), clip);
//     guard.check(state.step, loss.item(), norm);  // throws on inf / NaN
//     optimizer.step();
#pragma once

#include <cstdint>

namespace attn {

class FiniteGuard {
public:
    // Throws std::runtime_error naming the step, what went wrong, and the last
    // finite loss with its step: "step 12: the loss is nan (the last finite
    // loss was 2.3126 at step 11); training stopped before this update, and
    // the checkpoints already saved are kept".
    void check(int64_t step, double loss, double gradient_norm);

    int64_t last_good_step() const { return last_step_; }
    double last_good_loss() const { return last_loss_; }

private:
    int64_t last_step_ = -1;
    double last_loss_ = 0;
};

}  // namespace attn
