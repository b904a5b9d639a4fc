#include "nn/optim.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <type_traits>

#include "nn/optim_kernels.hpp"
#include "tensor/fast_math.hpp"
#include "tensor/parallel.hpp"
#include "tensor/profile.hpp"

namespace attn {

namespace {

std::string num(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", x);
    return buf;
}

void check_hyper(const char* op, const char* what, double value, double lo, double hi) {
    if (!(value >= lo && value <= hi))
        throw std::invalid_argument(std::string(op) + ": " + what + " " + num(value) + " is not in [" + num(lo) +
                                    ", " + num(hi) + "]");
}

// A rule a bound cannot print well (a half-open interval, "> 0"): the
// message states the rule in words. NaN fails every rule.
void check_rule(const char* op, const char* what, double value, bool ok, const char* rule) {
    if (!ok) throw std::invalid_argument(std::string(op) + ": " + what + " " + num(value) + " " + rule);
}

// The learning rate, checked where an optimiser is built so that the error
// names it (the base class cannot: type() is not callable in its constructor).
double checked_lr(const char* op, double lr) {
    check_rule(op, "lr", lr, lr >= 0 && std::isfinite(lr), "must be finite and >= 0");
    return lr;
}

}  // namespace

ParameterList::ParameterList(const std::vector<Var>& params) {
    for (size_t i = 0; i < params.size(); ++i) named.emplace_back(std::to_string(i), params[i]);
}

// ---- Optimizer ------------------------------------------------------------------------

// A variable listed twice (tied weights registered in two places) is kept
// once, under its first name, so that a step updates it once.
Optimizer::Optimizer(ParameterList params, double lr) {
    set_lr(lr);
    std::set<std::string> names;
    std::set<const Node*> seen;
    for (auto& [name, v] : params.named) {
        if (!v.defined()) throw std::invalid_argument("Optimizer: parameter \"" + name + "\" is undefined");
        if (!names.insert(name).second)
            throw std::invalid_argument("Optimizer: parameter name \"" + name + "\" appears twice");
        if (seen.insert(v.node()).second) params_.emplace_back(std::move(name), std::move(v));
    }
    state_.resize(params_.size());
}

void Optimizer::set_lr(double lr) {
    if (!(lr >= 0 && std::isfinite(lr)))
        throw std::invalid_argument("Optimizer: learning rate " + num(lr) + " must be finite and >= 0");
    lr_ = lr;
}

void Optimizer::step() {
    const ProfileScope scope("optimizer step");
    NoGradGuard no_grad;
    // With averaging, the average follows the optimiser's own slots.
    const size_t at = average_ > 0 ? slot_names().size() : 0;
    const real keep = static_cast<real>(average_), take = static_cast<real>(1 - average_);
    for (size_t i = 0; i < params_.size(); ++i) {
        Var& v = params_[i].second;
        const Tensor g = v.grad();
        if (!g.defined()) continue;
        if (g.shape() != v.shape())
            throw std::logic_error(type() + ".step: gradient " + g.shape().str() + " of \"" + params_[i].first +
                                   "\" does not match its shape " + v.shape().str());
        ParamState& s = state_[i];
        ++s.step;
        update(v.value(), g, s);
        if (average_ > 0) {
            if (s.slots.size() == at) {
                s.slots.push_back(v.value().clone());
            } else {
                real* a = s.slots[at].data();
                const real* w = v.value().data();
                // n once, before the loop: a store through `a` might change the shape
                // for all the compiler knows, so `j < v.numel()` was recounted at every
                // element and the loop stayed scalar (docs/performance.md, session 48).
                for (int64_t j = 0, n = v.numel(); j < n; ++j) a[j] = keep * a[j] + take * w[j];
            }
        }
    }
}

void Optimizer::set_average(double decay) {
    if (!(decay >= 0 && decay < 1))
        throw std::invalid_argument("Optimizer: weight-average decay " + num(decay) + " is not in [0, 1)");
    if ((decay > 0) != (average_ > 0))
        for (const ParamState& s : state_)
            if (s.step > 0)
                throw std::logic_error("Optimizer: weight averaging turned on or off after the first step");
    average_ = decay;
}

void Optimizer::swap_average() {
    if (average_ == 0) return;
    const size_t at = slot_names().size();
    for (size_t i = 0; i < params_.size(); ++i) {
        if (state_[i].slots.size() <= at) continue;  // not updated yet: no average
        Tensor& w = params_[i].second.value();
        const Tensor mine = w.clone();
        w.copy_(state_[i].slots[at]);
        state_[i].slots[at].copy_(mine);
    }
}

std::vector<std::string> Optimizer::all_slot_names() const {
    std::vector<std::string> names = slot_names();
    if (average_ > 0) names.push_back("average");
    return names;
}

void Optimizer::zero_grad() {
    for (auto& [_, v] : params_) v.zero_grad();
}

OptimizerState Optimizer::state_dict() const {
    OptimizerState out{type(), lr_, {}, {}};
    const std::vector<std::string> slots = all_slot_names();
    for (size_t i = 0; i < params_.size(); ++i) {
        const ParamState& s = state_[i];
        if (s.step == 0) continue;
        out.steps.emplace_back(params_[i].first, s.step);
        for (size_t k = 0; k < s.slots.size(); ++k)
            out.tensors.emplace_back(params_[i].first + "." + slots[k], s.slots[k].clone());
    }
    return out;
}

void Optimizer::load_state_dict(const OptimizerState& state) {
    const std::string op = type() + ".load_state_dict: ";
    if (state.type != type())
        throw std::invalid_argument(op + "the state is of a " + state.type + " optimiser, not " + type());
    std::map<std::string, size_t> index;
    for (size_t i = 0; i < params_.size(); ++i) index.emplace(params_[i].first, i);

    // Check everything first: a state that does not fit changes nothing.
    std::vector<ParamState> fresh(params_.size());
    for (const auto& [name, step] : state.steps) {
        auto it = index.find(name);
        if (it == index.end())
            throw std::invalid_argument(op + "state for unknown parameter \"" + name + "\"");
        if (step <= 0)
            throw std::invalid_argument(op + "parameter \"" + name + "\" has step count " + std::to_string(step) +
                                        " (must be positive)");
        fresh[it->second].step = step;
    }
    const std::vector<std::string> slots = all_slot_names();
    std::map<std::pair<size_t, size_t>, const Tensor*> found;  // (parameter, slot) → tensor
    for (const auto& [key, t] : state.tensors) {
        bool matched = false;
        for (size_t k = 0; k < slots.size() && !matched; ++k) {
            const std::string suffix = "." + slots[k];
            if (key.size() <= suffix.size() || key.compare(key.size() - suffix.size(), suffix.size(), suffix) != 0)
                continue;
            auto it = index.find(key.substr(0, key.size() - suffix.size()));
            if (it == index.end()) continue;
            const size_t i = it->second;
            if (fresh[i].step == 0)
                throw std::invalid_argument(op + "\"" + key + "\" belongs to parameter \"" + it->first +
                                            "\", which has no step count");
            if (t.shape() != params_[i].second.shape())
                throw std::invalid_argument(op + "\"" + key + "\" has shape " + t.shape().str() +
                                            " but the parameter has shape " + params_[i].second.shape().str());
            // A state no run can reach: it would turn the next step's update
            // into NaN (a negative second moment under the square root).
            const bool second_moment = slots[k].find("sq") != std::string::npos;
            for (int64_t j = 0; j < t.numel(); ++j)
                if (!std::isfinite(t[j]) || (second_moment && t[j] < 0))
                    throw std::invalid_argument(op + "\"" + key + "\" holds " + num(t[j]) + " at flat index " +
                                                std::to_string(j) +
                                                (second_moment ? " (a second moment must be finite and ≥ 0)"
                                                               : " (must be finite)"));
            found[{i, k}] = &t;
            matched = true;
        }
        const std::string average = ".average";
        if (!matched && key.size() > average.size() && key.compare(key.size() - average.size(), average.size(), average) == 0)
            throw std::invalid_argument(op + "\"" + key + "\" is a weight average: the run averaged its weights "
                                        "(--ema, set_average) and this optimiser does not; give it the same decay");
        if (!matched)
            throw std::invalid_argument(op + "unexpected tensor \"" + key +
                                        "\": not <parameter>.<slot> for a parameter and slot of this optimiser");
    }
    for (size_t i = 0; i < params_.size(); ++i) {
        if (fresh[i].step == 0) continue;
        for (size_t k = 0; k < slots.size(); ++k) {
            auto it = found.find({i, k});
            if (it == found.end())
                throw std::invalid_argument(op + "missing tensor \"" + params_[i].first + "." + slots[k] + "\"" +
                                            (slots[k] == "average" ? " (the checkpoint has no weight average: the run "
                                                                     "was trained without --ema)"
                                                                   : ""));
            fresh[i].slots.push_back(it->second->clone());
        }
    }
    set_lr(state.lr);
    state_ = std::move(fresh);
}

// ---- SGD ---------------------------------------------------------------------------------

SGD::SGD(ParameterList params, SGDOptions options)
    : Optimizer(std::move(params), checked_lr("SGD", options.lr)), options_(options) {
    check_hyper("SGD", "momentum", options.momentum, 0, std::numeric_limits<double>::max());
    check_hyper("SGD", "dampening", options.dampening, 0, 1);
    check_hyper("SGD", "weight_decay", options.weight_decay, 0, std::numeric_limits<double>::max());
    if (options.nesterov && (options.momentum <= 0 || options.dampening != 0))
        throw std::invalid_argument("SGD: Nesterov momentum requires a momentum > 0 and zero dampening");
}

std::vector<std::string> SGD::slot_names() const {
    if (options_.momentum == 0) return {};
    return {"momentum_buffer"};
}

std::string SGD::describe() const {
    return "SGD(lr=" + num(lr()) + ", momentum=" + num(options_.momentum) + ", dampening=" +
           num(options_.dampening) + ", weight_decay=" + num(options_.weight_decay) +
           ", nesterov=" + (options_.nesterov ? "true" : "false") + ")";
}

void SGD::update(Tensor& p, const Tensor& g, ParamState& state) {
    const real lr = static_cast<real>(this->lr()), decay = static_cast<real>(options_.weight_decay);
    const real mu = static_cast<real>(options_.momentum), keep = static_cast<real>(1 - options_.dampening);
    const bool nesterov = options_.nesterov;
    real* pp = p.data();
    const real* pg = g.data();
    const int64_t n = p.numel();
    if (mu == 0) {
        for (int64_t i = 0; i < n; ++i) pp[i] -= lr * (pg[i] + decay * pp[i]);
        return;
    }
    const bool first = state.slots.empty();
    if (first) state.slots.push_back(Tensor::empty(p.shape()));
    real* buf = state.slots[0].data();
    for (int64_t i = 0; i < n; ++i) {
        real d = pg[i] + decay * pp[i];
        buf[i] = first ? d : mu * buf[i] + keep * d;
        d = nesterov ? d + mu * buf[i] : buf[i];
        pp[i] -= lr * d;
    }
}

// ---- Adam and AdamW ---------------------------------------------------------------------------

Adam::Adam(ParameterList params, AdamOptions options) : Adam(std::move(params), options, false) {}

Adam::Adam(ParameterList params, AdamOptions options, bool decoupled_weight_decay)
    : Optimizer(std::move(params), checked_lr(decoupled_weight_decay ? "AdamW" : "Adam", options.lr)),
      options_(options),
      decoupled_(decoupled_weight_decay) {
    const char* op = decoupled_weight_decay ? "AdamW" : "Adam";
    // PyTorch refuses betas outside [0, 1) and a negative eps or weight
    // decay. It accepts eps = 0, but then a parameter whose gradient is zero
    // gets m / (√v̂ + ε) = 0/0: NaN, silently. So ε must be > 0 here.
    check_rule(op, "beta1", options.beta1, options.beta1 >= 0 && options.beta1 < 1, "must be in [0, 1)");
    check_rule(op, "beta2", options.beta2, options.beta2 >= 0 && options.beta2 < 1, "must be in [0, 1)");
    check_rule(op, "eps", options.eps, options.eps > 0 && std::isfinite(options.eps), "must be finite and > 0");
    check_rule(op, "weight_decay", options.weight_decay,
               options.weight_decay >= 0 && std::isfinite(options.weight_decay), "must be finite and >= 0");
}

AdamW::AdamW(ParameterList params, AdamOptions options) : Adam(std::move(params), options, true) {}

std::vector<std::string> Adam::slot_names() const {
    if (options_.amsgrad) return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
    return {"exp_avg", "exp_avg_sq"};
}

std::string Adam::describe() const {
    return type() + "(lr=" + num(lr()) + ", betas=(" + num(options_.beta1) + ", " + num(options_.beta2) +
           "), eps=" + num(options_.eps) + ", weight_decay=" + num(options_.weight_decay) +
           ", amsgrad=" + (options_.amsgrad ? "true" : "false") + ")";
}

namespace {

// Adam without AMSGrad over n values, split over the pool, 8 at a time where
// the CPU has AVX2: for float tensors (returns false for double, whose loop
// stays the one in Adam::update).
template <class R>
bool adam_kernel(R* pp, const R* pg, R* m, R* v, int64_t n, const optim_internal::AdamStep& c) {
    if constexpr (!std::is_same_v<R, float>) {
        return false;
    } else {
#if defined(__x86_64__)  // nn/optim_avx2.cpp is compiled for x86-64 only
        const bool avx2 = fast_math_avx2_available();
#endif
        parallel_for(0, n, int64_t{1} << 16, [&](int64_t b, int64_t e) {
#if defined(__x86_64__)
            if (avx2) return optim_internal::adam_avx2(pp + b, pg + b, m + b, v + b, e - b, c);
#endif
            for (int64_t i = b; i < e; ++i) optim_internal::adam_one(pp[i], pg[i], m[i], v[i], c);
        });
        return true;
    }
}

}  // namespace

void Adam::update(Tensor& p, const Tensor& g, ParamState& state) {
    if (state.slots.empty())
        for (size_t k = 0; k < slot_names().size(); ++k) state.slots.push_back(Tensor::zeros(p.shape()));
    const double t = static_cast<double>(state.step);
    const double b1 = options_.beta1, b2 = options_.beta2;
    // The scalars in double, as PyTorch computes them in Python; the loop in `real`.
    const real beta1 = static_cast<real>(b1), beta2 = static_cast<real>(b2);
    const real one_minus_beta1 = static_cast<real>(1 - b1), one_minus_beta2 = static_cast<real>(1 - b2);
    const real step_size = static_cast<real>(lr() / (1 - std::pow(b1, t)));
    const real bias2_sqrt = static_cast<real>(std::sqrt(1 - std::pow(b2, t)));
    const real eps = static_cast<real>(options_.eps);
    const real l2 = decoupled_ ? 0 : static_cast<real>(options_.weight_decay);
    const real shrink = decoupled_ ? static_cast<real>(1 - lr() * options_.weight_decay) : 1;
    real* pp = p.data();
    const real* pg = g.data();
    real* m = state.slots[0].data();
    real* v = state.slots[1].data();
    real* vmax = options_.amsgrad ? state.slots[2].data() : nullptr;
    if (!vmax && options_.fast) {  // float without AMSGrad: one kernel, optim_kernels.hpp
        const auto f = [](real x) { return static_cast<float>(x); };
        const optim_internal::AdamStep c{f(beta1), f(beta2), f(one_minus_beta1), f(one_minus_beta2), f(step_size),
                                         f(bias2_sqrt), f(eps), f(l2), f(shrink)};
        if (adam_kernel(pp, pg, m, v, p.numel(), c)) return;
    }
    for (int64_t i = 0, n = p.numel(); i < n; ++i) {
        pp[i] *= shrink;
        const real d = pg[i] + l2 * pp[i];
        m[i] = m[i] * beta1 + one_minus_beta1 * d;
        v[i] = v[i] * beta2 + one_minus_beta2 * d * d;
        real second = v[i];
        if (vmax) second = vmax[i] = std::max(vmax[i], v[i]);
        pp[i] -= step_size * m[i] / (std::sqrt(second) / bias2_sqrt + eps);
    }
}

// ---- clip_grad_norm_ ------------------------------------------------------------------------------

double clip_grad_norm_(const std::vector<Var>& params, double max_norm, double norm_type) {
    const ProfileScope scope("clip_grad_norm");
    if (!(norm_type > 0))
        throw std::invalid_argument("clip_grad_norm_: norm_type " + num(norm_type) + " must be positive");
    // A NaN max_norm would skip the clipping silently (coef < 1 is false), a
    // negative one would flip every gradient's sign.
    if (!(max_norm >= 0))
        throw std::invalid_argument("clip_grad_norm_: max_norm " + num(max_norm) + " must be >= 0 (not NaN)");
    const bool inf = std::isinf(norm_type);
    double acc = 0;  // Σ |g|^p, or max |g| for p = ∞
    for (const Var& v : params) {
        const Tensor g = v.grad();
        if (!g.defined()) continue;
        const real* pg = g.data();
        const int64_t n = g.numel();
        if (norm_type == 2) {  // the usual case: Σ g², four running sums (the adds' latency, not one chain)
            double s[4] = {0, 0, 0, 0};
            int64_t i = 0;
            for (; i + 4 <= n; i += 4)
                for (int u = 0; u < 4; ++u) s[u] += static_cast<double>(pg[i + u]) * static_cast<double>(pg[i + u]);
            for (; i < n; ++i) s[0] += static_cast<double>(pg[i]) * static_cast<double>(pg[i]);
            acc += (s[0] + s[1]) + (s[2] + s[3]);
            continue;
        }
        for (int64_t i = 0; i < n; ++i) {
            const double a = std::fabs(static_cast<double>(pg[i]));
            if (inf)
                acc = std::max(acc, a);
            else
                acc += std::pow(a, norm_type);
        }
    }
    const double total = inf ? acc : (norm_type == 2 ? std::sqrt(acc) : std::pow(acc, 1 / norm_type));
    const double coef = max_norm / (total + 1e-6);
    if (coef < 1) {
        const real c = static_cast<real>(coef);
        for (const Var& v : params) {
            Tensor g = v.grad();
            if (!g.defined()) continue;
            real* pg = g.data();
            for (int64_t i = 0, n = g.numel(); i < n; ++i) pg[i] *= c;
        }
    }
    return total;
}

}  // namespace attn
