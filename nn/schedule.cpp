#include "nn/schedule.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>
#include <stdexcept>

namespace attn {

namespace {

void check_step(int64_t t, const char* schedule) {
    if (t < 0) throw std::invalid_argument(std::string(schedule) + ": step " + std::to_string(t) + " is negative");
}

void check_base_lr(double base_lr, const char* schedule) {
    if (!std::isfinite(base_lr) || base_lr < 0) {
        std::ostringstream os;
        os << schedule << ": base_lr must be a finite number >= 0, got " << base_lr;
        throw std::invalid_argument(os.str());
    }
}

}  // namespace

// ---- constant ----------------------------------------------------------------

ConstantSchedule::ConstantSchedule(double base_lr) : base_lr_(base_lr) { check_base_lr(base_lr, "ConstantSchedule"); }

double ConstantSchedule::lr(int64_t t) const {
    check_step(t, "ConstantSchedule");
    return base_lr_;
}

std::string ConstantSchedule::str() const {
    std::ostringstream os;
    os << "constant(base_lr=" << base_lr_ << ")";
    return os.str();
}

// ---- step decay --------------------------------------------------------------

StepDecay::StepDecay(double base_lr, int64_t step_size, double gamma)
    : base_lr_(base_lr), step_size_(step_size), gamma_(gamma) {
    check_base_lr(base_lr, "StepDecay");
    if (step_size < 1)
        throw std::invalid_argument("StepDecay: step_size must be >= 1, got " + std::to_string(step_size));
    if (!std::isfinite(gamma) || gamma < 0) throw std::invalid_argument("StepDecay: gamma must be finite and >= 0");
}

// lr(t) = base_lr · gamma^⌊t / step_size⌋
double StepDecay::lr(int64_t t) const {
    check_step(t, "StepDecay");
    return base_lr_ * std::pow(gamma_, static_cast<double>(t / step_size_));
}

std::string StepDecay::str() const {
    std::ostringstream os;
    os << "step(base_lr=" << base_lr_ << ", step_size=" << step_size_ << ", gamma=" << gamma_ << ")";
    return os.str();
}

// ---- cosine annealing ----------------------------------------------------------

CosineAnnealing::CosineAnnealing(double base_lr, int64_t t_max, double eta_min)
    : base_lr_(base_lr), t_max_(t_max), eta_min_(eta_min) {
    check_base_lr(base_lr, "CosineAnnealing");
    if (t_max < 1) throw std::invalid_argument("CosineAnnealing: t_max must be >= 1, got " + std::to_string(t_max));
    if (!std::isfinite(eta_min) || eta_min < 0)
        throw std::invalid_argument("CosineAnnealing: eta_min must be finite and >= 0");
}

// lr(t) = eta_min + (base_lr − eta_min) · (1 + cos(π t / T_max)) / 2
double CosineAnnealing::lr(int64_t t) const {
    check_step(t, "CosineAnnealing");
    const double phase = std::numbers::pi * static_cast<double>(t) / static_cast<double>(t_max_);
    return eta_min_ + (base_lr_ - eta_min_) * (1 + std::cos(phase)) / 2;
}

std::string CosineAnnealing::str() const {
    std::ostringstream os;
    os << "cosine(base_lr=" << base_lr_ << ", t_max=" << t_max_ << ", eta_min=" << eta_min_ << ")";
    return os.str();
}

// ---- linear warm-up ------------------------------------------------------------

LinearWarmup::LinearWarmup(int64_t warmup_steps, double start_factor, std::shared_ptr<const LrSchedule> after)
    : warmup_steps_(warmup_steps), start_factor_(start_factor), after_(std::move(after)) {
    if (warmup_steps < 0)
        throw std::invalid_argument("LinearWarmup: warmup_steps must be >= 0, got " + std::to_string(warmup_steps));
    if (!(start_factor > 0 && start_factor <= 1))
        throw std::invalid_argument("LinearWarmup: start_factor must be in (0, 1], got " + std::to_string(start_factor));
    if (!after_) throw std::invalid_argument("LinearWarmup: the schedule after the warm-up is null");
}

// lr(t) = after.lr(0) · (s + (1 − s) · t / W)  for t < W,  else after.lr(t − W)
double LinearWarmup::lr(int64_t t) const {
    check_step(t, "LinearWarmup");
    if (t >= warmup_steps_) return after_->lr(t - warmup_steps_);
    const double fraction = static_cast<double>(t) / static_cast<double>(warmup_steps_);
    return after_->lr(0) * (start_factor_ + (1 - start_factor_) * fraction);
}

std::string LinearWarmup::str() const {
    std::ostringstream os;
    os << "warmup(steps=" << warmup_steps_ << ", start_factor=" << start_factor_ << ") then " << after_->str();
    return os.str();
}

// ---- inverse square root with warm-up (Vaswani et al. 2017) --------------------------

InverseSqrtWarmup::InverseSqrtWarmup(double peak_lr, int64_t warmup_steps)
    : peak_lr_(peak_lr), warmup_steps_(warmup_steps) {
    check_base_lr(peak_lr, "InverseSqrtWarmup");
    if (warmup_steps < 1)
        throw std::invalid_argument("InverseSqrtWarmup: warmup_steps must be >= 1, got " + std::to_string(warmup_steps));
}

// lr(t) = peak_lr · min(s / W, √(W / s)),  s = t + 1
double InverseSqrtWarmup::lr(int64_t t) const {
    check_step(t, "InverseSqrtWarmup");
    const double s = static_cast<double>(t + 1), W = static_cast<double>(warmup_steps_);
    return peak_lr_ * std::min(s / W, std::sqrt(W / s));
}

std::string InverseSqrtWarmup::str() const {
    std::ostringstream os;
    os << "noam(peak_lr=" << peak_lr_ << ", warmup_steps=" << warmup_steps_ << ")";
    return os.str();
}

}  // namespace attn
