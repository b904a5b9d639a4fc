// nn/optim: Adam's and SGD's first steps against their formulas computed by
// hand (in double), skipping parameters without a gradient, the state round
// trip, load_state_dict's errors, and clip_grad_norm_. PyTorch's own values
// for SGD, Adam and AdamW are checked in test_nn_reference.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "autograd/ops.hpp"
#include "nn/optim.hpp"
#include "nn/optim_kernels.hpp"
#include "tensor/fast_math.hpp"
#include "tensor/ops.hpp"

using namespace attn;

namespace {

// Gives p the gradient g (through a backward pass, as training does).
void set_grad(Var& p, const Tensor& g) {
    p.zero_grad();
    sum(p * Var(g)).backward();
}

bool bitwise_equal(const Tensor& a, const Tensor& b) { return allclose(a, b, 0, 0); }

}  // namespace

TEST_CASE("Adam: three steps equal the formula computed by hand, with L2 weight decay") {
    Generator gen(1);
    const Tensor p0 = Tensor::normal({3, 4}, 0, 1, gen);
    std::vector<Tensor> grads;
    for (int k = 0; k < 3; ++k) grads.push_back(Tensor::normal({3, 4}, 0, 1, gen));
    const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.1;

    Var p(p0.clone(), true);
    Adam opt({p}, AdamOptions{.lr = lr, .beta1 = b1, .beta2 = b2, .eps = eps, .weight_decay = wd});
    const std::vector<real> start = p0.to_vector();
    std::vector<double> want(start.begin(), start.end()), m(12, 0), v(12, 0);
    for (int t = 1; t <= 3; ++t) {
        set_grad(p, grads[t - 1]);
        opt.step();
        for (size_t i = 0; i < 12; ++i) {
            const double d = grads[t - 1][static_cast<int64_t>(i)] + wd * want[i];
            m[i] = b1 * m[i] + (1 - b1) * d;
            v[i] = b2 * v[i] + (1 - b2) * d * d;
            const double m_hat = m[i] / (1 - std::pow(b1, t)), v_hat = v[i] / (1 - std::pow(b2, t));
            want[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
            CHECK(p.value()[static_cast<int64_t>(i)] == doctest::Approx(want[i]).epsilon(1e-6));
        }
        CHECK(opt.steps(0) == t);
    }
}

// AMSGrad divides by the largest v so far. With β₂ = 0.5 and a gradient that
// shrinks (4, 1, 0.25), v falls at once: v = 8, 4.5, 2.28125 while v̂ stays 8,
// so steps 2 and 3 differ from plain Adam's by a factor √(v̂/v) of 1.3–1.9.
TEST_CASE("Adam: AMSGrad keeps the largest v so far (v̂ = max(v̂, v)), by hand") {
    const double lr = 0.1, b1 = 0.9, b2 = 0.5, eps = 1e-8;
    Var p(Tensor::from({1}), true);
    Adam opt({p}, AdamOptions{.lr = lr, .beta1 = b1, .beta2 = b2, .eps = eps, .amsgrad = true});
    double want = 1, m = 0, v = 0, vmax = 0;
    for (int t = 1; t <= 3; ++t) {
        const double g = 4 / std::pow(4.0, t - 1);
        set_grad(p, Tensor::from({static_cast<real>(g)}));
        opt.step();
        m = b1 * m + (1 - b1) * g;
        v = b2 * v + (1 - b2) * g * g;
        vmax = std::max(vmax, v);
        want -= lr * (m / (1 - std::pow(b1, t))) / (std::sqrt(vmax / (1 - std::pow(b2, t))) + eps);
        CHECK(p.value()[0] == doctest::Approx(want).epsilon(1e-6));
    }
    CHECK(v < vmax / 3);  // the case tells v̂ from v
}

TEST_CASE("Adam: the first step moves every weight by lr·g/(|g| + ε) (about lr against the gradient)") {
    Var p(Tensor::from({1, -2, 3, 0.5}), true);
    const Tensor g = Tensor::from({0.3f, -4, 1e-3f, 0});
    Adam opt({p}, AdamOptions{.lr = 0.1});
    set_grad(p, g);
    opt.step();
    const std::vector<double> start{1, -2, 3, 0.5};
    for (int64_t i = 0; i < 4; ++i)
        CHECK(p.value()[i] == doctest::Approx(start[static_cast<size_t>(i)] -
                                              0.1 * g[i] / (std::fabs(g[i]) + 1e-8)).epsilon(1e-6));
}

TEST_CASE("AdamW: the decay is decoupled, p·(1 − lr·λ) before the Adam step") {
    Var p(Tensor::from({2, -1}), true), q(Tensor::from({2, -1}), true);
    AdamW decoupled({p}, AdamOptions{.lr = 0.1, .weight_decay = 0.5});
    Adam plain({q}, AdamOptions{.lr = 0.1});
    set_grad(p, Tensor::from({1, 1}));
    set_grad(q, Tensor::from({1, 1}));
    decoupled.step();
    plain.step();
    // The Adam part is identical; the decay scales the starting point by 0.95.
    CHECK(p.value()[0] == doctest::Approx(2 * 0.95 + (q.value()[0] - 2)));
    CHECK(p.value()[1] == doctest::Approx(-1 * 0.95 + (q.value()[1] + 1)));
    CHECK(AdamW({p}).options().weight_decay == doctest::Approx(0.01));  // PyTorch's default
    CHECK(decoupled.type() == "AdamW");
}

TEST_CASE("SGD: momentum and Nesterov by hand") {
    const Tensor g1 = Tensor::from({1, -2}), g2 = Tensor::from({0.5, 3});
    const double lr = 0.1, mu = 0.9;
    for (bool nesterov : {false, true}) {
        Var p(Tensor::from({1, 1}), true);
        SGD opt({p}, SGDOptions{.lr = lr, .momentum = mu, .nesterov = nesterov});
        set_grad(p, g1);
        opt.step();
        set_grad(p, g2);
        opt.step();
        for (int64_t i = 0; i < 2; ++i) {
            const double b1 = g1[i], b2 = mu * b1 + g2[i];  // the buffer starts as the first gradient
            const double d1 = nesterov ? g1[i] + mu * b1 : b1, d2 = nesterov ? g2[i] + mu * b2 : b2;
            CHECK(p.value()[i] == doctest::Approx(1 - lr * d1 - lr * d2).epsilon(1e-6));
        }
    }
    CHECK_THROWS_WITH_AS(SGD({Var(Tensor::zeros({1}), true)}, SGDOptions{.nesterov = true}),
                         "SGD: Nesterov momentum requires a momentum > 0 and zero dampening", std::invalid_argument);
}

TEST_CASE("Optimizer: parameters without a gradient are skipped; lr; zero_grad; describe") {
    Var a(Tensor::ones({2}), true), b(Tensor::ones({2}), true);
    SGD opt({a, b}, SGDOptions{.lr = 0.5, .momentum = 0.9});
    CHECK(opt.parameters()[1].first == "1");  // plain Vars are named by position
    set_grad(a, Tensor::ones({2}));
    opt.step();
    CHECK(a.value()[0] == doctest::Approx(0.5));
    CHECK(b.value()[0] == 1);  // no gradient: untouched, no step counted
    CHECK(opt.steps(0) == 1);
    CHECK(opt.steps(1) == 0);
    CHECK(opt.state_dict().tensors.size() == 1);

    opt.set_lr(0.25);
    CHECK(opt.lr() == 0.25);
    CHECK_THROWS_AS(opt.set_lr(-1), std::invalid_argument);
    opt.zero_grad();
    CHECK(a.grad()[0] == 0);
    CHECK(opt.describe() == "SGD(lr=0.25, momentum=0.9, dampening=0, weight_decay=0, nesterov=false)");
    CHECK(Adam({a}).describe() == "Adam(lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=0, amsgrad=false)");
    CHECK_THROWS_WITH_AS(Adam(NamedParameters{{"w", a}, {"w", b}}), "Optimizer: parameter name \"w\" appears twice",
                         std::invalid_argument);
    SGD tied(NamedParameters{{"encoder.w", a}, {"decoder.w", a}}, SGDOptions{.lr = 1});
    CHECK(tied.parameters().size() == 1);  // tied weights: updated once, under the first name
    CHECK(tied.parameters()[0].first == "encoder.w");
}

TEST_CASE("Optimizer: state_dict → load_state_dict continues bit for bit") {
    Generator gen(2);
    const Tensor p0 = Tensor::normal({2, 3}, 0, 1, gen);
    std::vector<Tensor> grads;
    for (int k = 0; k < 4; ++k) grads.push_back(Tensor::normal({2, 3}, 0, 1, gen));
    Var p(p0.clone(), true);
    Adam opt(NamedParameters{{"w", p}}, AdamOptions{.lr = 0.05, .amsgrad = true});
    for (int k = 0; k < 2; ++k) set_grad(p, grads[k]), opt.step();

    const OptimizerState state = opt.state_dict();
    CHECK(state.type == "Adam");
    CHECK(state.steps == std::vector<std::pair<std::string, int64_t>>{{"w", 2}});
    REQUIRE(state.tensors.size() == 3);
    CHECK(state.tensors[0].first == "w.exp_avg");
    CHECK(state.tensors[2].first == "w.max_exp_avg_sq");

    Var q(p.value().clone(), true);
    Adam resumed(NamedParameters{{"w", q}}, AdamOptions{.lr = 1, .amsgrad = true});
    resumed.load_state_dict(state);
    CHECK(resumed.lr() == 0.05);
    for (int k = 2; k < 4; ++k) {
        set_grad(p, grads[k]), opt.step();
        set_grad(q, grads[k]), resumed.step();
        CHECK(bitwise_equal(p.value(), q.value()));
    }
}

TEST_CASE("Optimizer: load_state_dict names what does not fit, and changes nothing") {
    Var w(Tensor::zeros({2, 2}), true);
    Adam opt(NamedParameters{{"w", w}});
    set_grad(w, Tensor::ones({2, 2}));
    opt.step();
    const OptimizerState good = opt.state_dict();
    const std::string op = "Adam.load_state_dict: ";

    OptimizerState wrong_type = good;
    wrong_type.type = "SGD";
    CHECK_THROWS_WITH_AS(opt.load_state_dict(wrong_type), (op + "the state is of a SGD optimiser, not Adam").c_str(),
                         std::invalid_argument);
    OptimizerState unknown = good;
    unknown.steps.emplace_back("fc.nope", 1);
    CHECK_THROWS_WITH_AS(opt.load_state_dict(unknown), (op + "state for unknown parameter \"fc.nope\"").c_str(),
                         std::invalid_argument);
    OptimizerState misshaped = good;
    misshaped.tensors[0].second = Tensor::zeros({3});
    CHECK_THROWS_WITH_AS(opt.load_state_dict(misshaped),
                         (op + "\"w.exp_avg\" has shape 3 but the parameter has shape 2×2").c_str(),
                         std::invalid_argument);
    OptimizerState missing = good;
    missing.tensors.pop_back();
    CHECK_THROWS_WITH_AS(opt.load_state_dict(missing), (op + "missing tensor \"w.exp_avg_sq\"").c_str(),
                         std::invalid_argument);
    OptimizerState extra = good;
    extra.tensors.emplace_back("w.momentum_buffer", Tensor::zeros({2, 2}));
    CHECK_THROWS_WITH_AS(opt.load_state_dict(extra),
                         (op + "unexpected tensor \"w.momentum_buffer\": not <parameter>.<slot> for a parameter and "
                               "slot of this optimiser")
                             .c_str(),
                         std::invalid_argument);
    CHECK(bitwise_equal(opt.state_dict().tensors[0].second, good.tensors[0].second));
    CHECK(opt.steps(0) == 1);
}

TEST_CASE("Optimizer: weight averaging (--ema) by hand; swap_average twice is nothing; the average in the state") {
    // SGD with lr 0.5 and the gradient 1 everywhere: the weights walk down by
    // 0.5 a step, and the average trails them with decay 0.9.
    Var p(Tensor::from({1, -2}, {2}), true);
    SGD opt({p}, SGDOptions{.lr = 0.5});
    opt.set_average(0.9);
    const std::vector<std::vector<double>> weights = {{0.5, -2.5}, {0, -3}, {-0.5, -3.5}};
    // average = p after the first step, then 0.9·average + 0.1·p
    const std::vector<std::vector<double>> averages = {{0.5, -2.5}, {0.45, -2.55}, {0.355, -2.645}};
    for (size_t k = 0; k < 3; ++k) {
        set_grad(p, Tensor::ones({2}));
        opt.step();
        const OptimizerState state = opt.state_dict();
        REQUIRE(state.tensors.size() == 1);
        CHECK(state.tensors[0].first == "0.average");
        for (int64_t i = 0; i < 2; ++i) {
            CHECK(p.value()[i] == doctest::Approx(weights[k][static_cast<size_t>(i)]).epsilon(1e-6));
            CHECK(state.tensors[0].second[i] == doctest::Approx(averages[k][static_cast<size_t>(i)]).epsilon(1e-6));
        }
    }
    opt.swap_average();  // the model now holds the average, the state the weights
    CHECK(p.value()[0] == doctest::Approx(0.355).epsilon(1e-6));
    CHECK(opt.state_dict().tensors[0].second[0] == doctest::Approx(-0.5).epsilon(1e-6));
    opt.swap_average();
    CHECK(p.value()[0] == doctest::Approx(-0.5).epsilon(1e-6));

    // Adam's own slots first, the average last; a resumed optimiser goes on bit for bit.
    Var w(Tensor::from({0.3, -0.7, 1.1}, {3}), true);
    Adam adam(NamedParameters{{"w", w}}, AdamOptions{.lr = 0.1});
    adam.set_average(0.5);
    for (int k = 0; k < 2; ++k) set_grad(w, Tensor::from({1, -2, 0.5}, {3})), adam.step();
    const OptimizerState saved = adam.state_dict();
    REQUIRE(saved.tensors.size() == 3);
    CHECK(saved.tensors[2].first == "w.average");
    Var v(w.value().clone(), true);
    Adam resumed(NamedParameters{{"w", v}}, AdamOptions{.lr = 0.1});
    resumed.set_average(0.5);
    resumed.load_state_dict(saved);
    for (int k = 0; k < 2; ++k) {
        set_grad(w, Tensor::from({0.2, 1, -1}, {3})), adam.step();
        set_grad(v, Tensor::from({0.2, 1, -1}, {3})), resumed.step();
    }
    CHECK(bitwise_equal(adam.state_dict().tensors[2].second, resumed.state_dict().tensors[2].second));
    adam.swap_average(), resumed.swap_average();
    CHECK(bitwise_equal(w.value(), v.value()));

    // The setting: refused outside [0, 1), and once a step is taken it stays.
    Var u(Tensor::ones({3}), true);
    Adam plain(NamedParameters{{"w", u}});
    CHECK_THROWS_WITH_AS(plain.set_average(1), "Optimizer: weight-average decay 1 is not in [0, 1)", std::invalid_argument);
    CHECK_THROWS_AS(plain.set_average(-0.1), std::invalid_argument);
    plain.swap_average();  // without averaging: nothing
    CHECK(u.value()[0] == 1);
    set_grad(u, Tensor::ones({3}));
    plain.step();
    CHECK_THROWS_WITH_AS(plain.set_average(0.9),
                         "Optimizer: weight averaging turned on or off after the first step", std::logic_error);
    // A checkpoint with an average, into an optimiser without: the error says why.
    CHECK_THROWS_WITH_AS(plain.load_state_dict(saved),
                         "Adam.load_state_dict: \"w.average\" is a weight average: the run averaged its weights "
                         "(--ema, set_average) and this optimiser does not; give it the same decay",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(resumed.load_state_dict(plain.state_dict()),
                         "Adam.load_state_dict: missing tensor \"w.average\" (the checkpoint has no weight average: "
                         "the run was trained without --ema)",
                         std::invalid_argument);
}

TEST_CASE("clip_grad_norm_: returns the total norm, scales only above max_norm") {
    Var a(Tensor::zeros({1}), true), b(Tensor::zeros({1}), true);
    set_grad(a, Tensor::from({3}));
    set_grad(b, Tensor::from({4}));
    CHECK(clip_grad_norm_({a, b}, 10) == doctest::Approx(5));  // ‖(3, 4)‖ = 5 < 10: unchanged
    CHECK(a.grad()[0] == 3);
    CHECK(clip_grad_norm_({a, b}, 1) == doctest::Approx(5));
    CHECK(a.grad()[0] == doctest::Approx(3 / (5 + 1e-6)));
    CHECK(b.grad()[0] == doctest::Approx(4 / (5 + 1e-6)));
    CHECK(clip_grad_norm_({a, b}, 100, 1) == doctest::Approx(7 / (5 + 1e-6)));  // the 1-norm
    CHECK(clip_grad_norm_({Var(Tensor::zeros({1}), true)}, 1) == 0);               // no gradients at all
}

// A NaN max_norm used to skip the clipping (coef < 1 was false), a negative
// one to flip the gradients' signs; both are refused, the gradients untouched.
TEST_CASE("clip_grad_norm_: a NaN or negative max_norm is refused, naming the function and the value") {
    Var a(Tensor::zeros({1}), true);
    set_grad(a, Tensor::from({3}));
    CHECK_THROWS_WITH_AS(clip_grad_norm_({a}, std::nan("")), "clip_grad_norm_: max_norm nan must be >= 0 (not NaN)",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(clip_grad_norm_({a}, -1), "clip_grad_norm_: max_norm -1 must be >= 0 (not NaN)",
                         std::invalid_argument);
    CHECK(a.grad()[0] == 3);
    CHECK(clip_grad_norm_({a}, 0) == 3);  // 0 is allowed: every gradient becomes 0
    CHECK(a.grad()[0] == 0);
}

// eps = 0 with a zero gradient made Adam's update 0/0 = NaN silently.
// PyTorch refuses betas outside [0, 1) and negative lr, eps, weight decay;
// eps must also be > 0 here.
TEST_CASE("Adam, AdamW, SGD: arguments are checked where they enter, naming the optimiser, argument and rule") {
    const Var p(Tensor::zeros({2}), true);
    using E = std::invalid_argument;
    CHECK_THROWS_WITH_AS(Adam({p}, AdamOptions{.eps = 0}), "Adam: eps 0 must be finite and > 0", E);
    CHECK_THROWS_WITH_AS(AdamW({p}, AdamOptions{.eps = 0}), "AdamW: eps 0 must be finite and > 0", E);
    CHECK_THROWS_WITH_AS(Adam({p}, AdamOptions{.eps = -1e-8}), "Adam: eps -1e-08 must be finite and > 0", E);
    CHECK_THROWS_WITH_AS(Adam({p}, AdamOptions{.beta1 = 1}), "Adam: beta1 1 must be in [0, 1)", E);
    CHECK_THROWS_WITH_AS(Adam({p}, AdamOptions{.beta2 = -0.5}), "Adam: beta2 -0.5 must be in [0, 1)", E);
    CHECK_THROWS_WITH_AS(AdamW({p}, AdamOptions{.beta2 = std::nan("")}), "AdamW: beta2 nan must be in [0, 1)", E);
    CHECK_THROWS_WITH_AS(Adam({p}, AdamOptions{.weight_decay = -0.1}),
                         "Adam: weight_decay -0.1 must be finite and >= 0", E);
    CHECK_THROWS_WITH_AS(AdamW({p}, AdamOptions{.lr = -1}), "AdamW: lr -1 must be finite and >= 0", E);
    CHECK_THROWS_WITH_AS(SGD({p}, SGDOptions{.lr = std::nan("")}), "SGD: lr nan must be finite and >= 0", E);
    // The smallest eps allowed keeps a zero gradient's update finite: 0 / (0 + eps) = 0.
    Var q(Tensor::ones({2}), true);
    set_grad(q, Tensor::zeros({2}));
    Adam opt({q}, AdamOptions{.eps = 1e-30});
    opt.step();
    CHECK(q.value()[0] == 1);
    CHECK(q.value()[1] == 1);
}

// The optimiser changes the parameters in place: after backward that is the
// training loop and must pass; between a forward and its backward it would
// make the gradient wrong, and backward() refuses it (autograd/variable.hpp).
TEST_CASE("SGD: a step after backward is allowed; a step between forward and backward is refused at backward") {
    Var w(Tensor::from({1, 2}), true);
    const Var x(Tensor::from({3, 4}));
    SGD opt({w}, SGDOptions{.lr = 0.5});
    for (int t = 0; t < 2; ++t) {
        opt.zero_grad();
        Var loss = sum(w * x);
        loss.backward();
        opt.step();
    }
    CHECK(w.value()[0] == -2);  // 1 − 2·0.5·3: ∂L/∂w = x at both steps
    CHECK(w.value()[1] == -2);  // 2 − 2·0.5·4
    opt.zero_grad();
    Var loss = sum(w * x);
    opt.step();
    CHECK_THROWS_WITH_AS(loss.backward(),
                         doctest::Contains("mul's input 0 was changed in place after the forward (version"),
                         std::logic_error);
}

// a·b rounded to float on its own: the volatile keeps the compiler from
// fusing it with the add that follows.
static float rounded_product(float a, float b) {
    volatile float product = a * b;
    return product;
}

TEST_CASE("Adam: fast (threads, AVX2) agrees with the default plain loop, which is the formula to the bit") {
    // 200,003 values: over the pool's split (65,536 a piece) with a tail.
    Generator gen(8);
    const int64_t n = 200003;
    const Tensor p0 = Tensor::normal({n}, 0, 1, gen);
    std::vector<Tensor> grads;
    for (int k = 0; k < 3; ++k) grads.push_back(Tensor::normal({n}, 0, 1, gen));
    Var plain(p0.clone(), true), fast(p0.clone(), true);
    Adam a({plain}, AdamOptions{.lr = 0.01, .weight_decay = 0.1});
    Adam b({fast}, AdamOptions{.lr = 0.01, .weight_decay = 0.1, .fast = true});
    CHECK_FALSE(AdamOptions{}.fast);  // readable by default
    // The default's first step written out in float, as Adam::update's loop: the same bits.
    // (m and v start at 0: m = (1 − β₁)·d, v = (1 − β₂)·d², in float as the loop has them)
    const float step = static_cast<float>(0.01 / (1 - 0.9)), bias2 = static_cast<float>(std::sqrt(1 - 0.999)),
                eps = 1e-8f, l2 = 0.1f;
    // d = g + λ·p is a multiply and an add, which compilers for aarch64 fuse
    // into one FMA (one rounding, not two): either is the formula, nothing else is.
    const auto first_step = [&](int64_t i, bool fused) {
        const float d = fused ? std::fma(l2, p0[i], grads[0][i]) : grads[0][i] + rounded_product(l2, p0[i]);
        const float m = 0.1f * d, v = 0.001f * d * d;
        return p0[i] - step * m / (std::sqrt(v) / bias2 + eps);
    };
    for (int t = 0; t < 3; ++t) {
        set_grad(plain, grads[t]);
        set_grad(fast, grads[t]);
        a.step();
        b.step();
        if (t == 0) {
            int64_t differ = 0;
            for (int64_t i = 0; i < n; ++i)
                differ += plain.value()[i] != first_step(i, false) && plain.value()[i] != first_step(i, true);
            CHECK(differ == 0);
        }
    }
    int64_t far = 0;
    for (int64_t i = 0; i < n; ++i)
        far += std::abs(plain.value()[i] - fast.value()[i]) > 1e-6f * (1 + std::abs(plain.value()[i]));
    CHECK(far == 0);
}

#if defined(__x86_64__)  // nn/optim_avx2.cpp is built for x86-64 only
TEST_CASE("optim: Adam's AVX2 loop agrees with the one-value-at-a-time loop") {
    if (!fast_math_avx2_available()) return;
    const optim_internal::AdamStep c{0.9f, 0.999f, 0.1f, 0.001f, 1e-3f / 0.1f, std::sqrt(0.001f), 1e-8f, 0.01f, 1.0f};
    Generator gen(3);
    const int64_t n = 1003;  // a tail of 3 after the blocks of 8
    std::vector<float> p(n), g(n), m(n), v(n);
    for (int64_t i = 0; i < n; ++i) {
        const auto k = static_cast<size_t>(i);
        p[k] = static_cast<float>(gen.normal()), g[k] = static_cast<float>(gen.normal());
        m[k] = static_cast<float>(gen.normal() * 0.1), v[k] = static_cast<float>(gen.uniform() * 0.01);
    }
    std::vector<float> p2 = p, m2 = m, v2 = v;
    optim_internal::adam_avx2(p.data(), g.data(), m.data(), v.data(), n, c);
    for (size_t k = 0; k < p2.size(); ++k) optim_internal::adam_one(p2[k], g[k], m2[k], v2[k], c);
    // (the compiler may fuse a multiply and an add into one FMA: the last bit may differ)
    for (size_t k = 0; k < p2.size(); ++k) {
        CHECK(p[k] == doctest::Approx(p2[k]).epsilon(1e-6));
        CHECK(m[k] == doctest::Approx(m2[k]).epsilon(1e-6));
        CHECK(v[k] == doctest::Approx(v2[k]).epsilon(1e-6));
    }
}
#endif
