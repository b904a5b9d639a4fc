// nn/schedule: each schedule against values worked out by hand from
// PyTorch's formulas (torch.optim.lr_scheduler).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numbers>

#include "nn/schedule.hpp"

using namespace attn;

TEST_CASE("schedule: constant") {
    const ConstantSchedule s(0.1);
    CHECK(s.lr(0) == 0.1);
    CHECK(s.lr(123456) == 0.1);
    CHECK(s.str() == "constant(base_lr=0.1)");
}

TEST_CASE("schedule: step decay is StepLR, base_lr · gamma^floor(t / step_size)") {
    const StepDecay s(0.1, 3, 0.5);
    // t:   0    1    2    3     4     5     6      9
    // lr:  0.1  0.1  0.1  0.05  0.05  0.05  0.025  0.0125
    for (int t : {0, 1, 2}) CHECK(s.lr(t) == doctest::Approx(0.1));
    for (int t : {3, 4, 5}) CHECK(s.lr(t) == doctest::Approx(0.05));
    CHECK(s.lr(6) == doctest::Approx(0.025));
    CHECK(s.lr(9) == doctest::Approx(0.0125));
    CHECK(StepDecay(1.0, 30).lr(65) == doctest::Approx(0.01));  // PyTorch's default gamma 0.1
    CHECK(s.str() == "step(base_lr=0.1, step_size=3, gamma=0.5)");
}

TEST_CASE("schedule: cosine annealing is CosineAnnealingLR's closed form") {
    const CosineAnnealing s(1.0, 10);
    CHECK(s.lr(0) == doctest::Approx(1.0));
    // (1 + cos(π/5)) / 2 = (1 + 0.80901699) / 2
    CHECK(s.lr(2) == doctest::Approx(0.904508497));
    CHECK(s.lr(5) == doctest::Approx(0.5));
    // (1 + cos(4π/5)) / 2 = (1 − 0.80901699) / 2
    CHECK(s.lr(8) == doctest::Approx(0.095491503));
    CHECK(s.lr(10) == doctest::Approx(0.0).epsilon(1e-12));
    // Past T_max the closed form rises again, with period 2·T_max.
    CHECK(s.lr(15) == doctest::Approx(0.5));
    CHECK(s.lr(20) == doctest::Approx(1.0));

    // eta_min = 0.1, base 0.5, T_max = 4: 0.1 + 0.4 · (1 + cos(π t / 4)) / 2
    const CosineAnnealing m(0.5, 4, 0.1);
    CHECK(m.lr(1) == doctest::Approx(0.1 + 0.4 * (1 + std::sqrt(0.5)) / 2));
    CHECK(m.lr(2) == doctest::Approx(0.3));
    CHECK(m.lr(4) == doctest::Approx(0.1));
    CHECK(m.str() == "cosine(base_lr=0.5, t_max=4, eta_min=0.1)");
}

TEST_CASE("schedule: linear warm-up is SequentialLR(LinearLR, then the next schedule)") {
    // W = 5, s = 0.2, then cosine from 1.0 over 10 steps.
    const LinearWarmup s(5, 0.2, std::make_shared<CosineAnnealing>(1.0, 10));
    // t < 5: 1.0 · (0.2 + 0.8 · t / 5)
    CHECK(s.lr(0) == doctest::Approx(0.2));
    CHECK(s.lr(1) == doctest::Approx(0.36));
    CHECK(s.lr(4) == doctest::Approx(0.84));
    // t >= 5: the cosine restarted at 0.
    CHECK(s.lr(5) == doctest::Approx(1.0));
    CHECK(s.lr(10) == doctest::Approx(0.5));
    CHECK(s.lr(15) == doctest::Approx(0.0).epsilon(1e-12));
    CHECK(s.str() == "warmup(steps=5, start_factor=0.2) then cosine(base_lr=1, t_max=10, eta_min=0)");

    // Warm-up into a step decay; no warm-up at all is the schedule itself.
    const LinearWarmup w(2, 0.5, std::make_shared<StepDecay>(0.1, 2, 0.1));
    CHECK(w.lr(0) == doctest::Approx(0.05));
    CHECK(w.lr(1) == doctest::Approx(0.075));
    CHECK(w.lr(2) == doctest::Approx(0.1));
    CHECK(w.lr(4) == doctest::Approx(0.01));
    const LinearWarmup none(0, 1.0, std::make_shared<ConstantSchedule>(0.3));
    CHECK(none.lr(0) == 0.3);
}

TEST_CASE("schedule: noam is Vaswani et al.'s d^-0.5 · min(s^-0.5, s · W^-1.5), given by its peak") {
    // The paper's base model: d_model 512, W = 4000; the peak (512 · 4000)^-0.5 at s = W.
    const double d = 512, W = 4000, peak = 1 / std::sqrt(d * W);
    const InverseSqrtWarmup s(peak, 4000);
    auto vaswani = [&](double step) { return std::pow(d, -0.5) * std::min(std::pow(step, -0.5), step * std::pow(W, -1.5)); };
    for (int64_t t : {0, 1, 999, 3998, 3999, 4000, 15999, 99999})
        CHECK(s.lr(t) == doctest::Approx(vaswani(static_cast<double>(t + 1))).epsilon(1e-12));
    // Small numbers by hand: peak 1, W = 4: s/4 up to s = 4, then 2/√s.
    const InverseSqrtWarmup small(1.0, 4);
    CHECK(small.lr(0) == 0.25);
    CHECK(small.lr(1) == 0.5);
    CHECK(small.lr(3) == 1.0);
    CHECK(small.lr(15) == 0.5);
    CHECK(small.lr(63) == 0.25);
    CHECK(small.str() == "noam(peak_lr=1, warmup_steps=4)");
    CHECK_THROWS_WITH(InverseSqrtWarmup(1.0, 0), "InverseSqrtWarmup: warmup_steps must be >= 1, got 0");
}

TEST_CASE("schedule: invalid arguments are rejected by name") {
    CHECK_THROWS_WITH_AS(ConstantSchedule(0.1).lr(-1), "ConstantSchedule: step -1 is negative",
                         std::invalid_argument);
    CHECK_THROWS_WITH(ConstantSchedule(-1), doctest::Contains("ConstantSchedule: base_lr must be a finite number"));
    CHECK_THROWS_WITH(ConstantSchedule(NAN), doctest::Contains("base_lr must be a finite number >= 0, got nan"));
    CHECK_THROWS_WITH(StepDecay(0.1, 0), "StepDecay: step_size must be >= 1, got 0");
    CHECK_THROWS_WITH(CosineAnnealing(0.1, 0), "CosineAnnealing: t_max must be >= 1, got 0");
    CHECK_THROWS_WITH(CosineAnnealing(0.1, 5).lr(-3), "CosineAnnealing: step -3 is negative");
    const auto after = std::make_shared<ConstantSchedule>(0.1);
    CHECK_THROWS_WITH(LinearWarmup(-1, 0.5, after), "LinearWarmup: warmup_steps must be >= 0, got -1");
    CHECK_THROWS_WITH(LinearWarmup(5, 0.0, after), doctest::Contains("start_factor must be in (0, 1]"));
    CHECK_THROWS_WITH(LinearWarmup(5, 1.5, after), doctest::Contains("start_factor must be in (0, 1]"));
    CHECK_THROWS_WITH(LinearWarmup(5, 0.5, nullptr), "LinearWarmup: the schedule after the warm-up is null");
}
