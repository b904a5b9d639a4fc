// The grader's checks for the tensor layer's plain loops and the layers'
// formulas (course/checks.hpp). Every expected value here is worked out by
// hand in a comment, computed by a loop written out in this file, or the
// library's separate implementation of the same function.
#include "course/checks.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "autograd/gradcheck.hpp"
#include "attention/alignments.hpp"
#include "autograd/ops.hpp"
#include "nn/layernorm.hpp"
#include "nn/optim.hpp"
#include "nn/rnn_cell.hpp"
#include "tensor/ops.hpp"
#include "tensor/random.hpp"
#include "tensor/reference.hpp"

namespace attn::course {

std::string num(double x) {
    std::ostringstream os;
    os << std::setprecision(6) << x;
    return os.str();
}

std::string expected_got(double want, double got) {
    // six digits, or as many more as it takes to show the two differ
    for (int digits = 6; digits <= 17; ++digits) {
        std::ostringstream w, g;
        w << std::setprecision(digits) << want;
        g << std::setprecision(digits) << got;
        if (w.str() != g.str() || digits == 17) return "expected " + w.str() + ", got " + g.str();
    }
    return "";
}

std::string differs(const Tensor& got, const Shape& shape, const std::vector<double>& want, double tolerance) {
    if (!got.defined()) return "nothing was returned (an undefined tensor)";
    if (got.shape() != shape) return "the shape is " + got.shape().str() + ", expected " + shape.str();
    int64_t wrong = 0, first = -1;
    for (int64_t i = 0; i < got.numel(); ++i)
        if (!(std::fabs(got[i] - want[static_cast<size_t>(i)]) <= tolerance * (1 + std::fabs(want[static_cast<size_t>(i)])))) {
            if (first < 0) first = i;
            ++wrong;
        }
    if (wrong == 0) return "";
    return std::to_string(wrong) + " of " + std::to_string(got.numel()) + " elements wrong; first at flat index " +
           std::to_string(first) + ": " + expected_got(want[static_cast<size_t>(first)], got[first]);
}

// The same against a tensor the library computed another way.
static std::string differs(const Tensor& got, const Tensor& want, double tolerance) {
    return differs(got, want.shape(), std::vector<double>(want.data(), want.data() + want.numel()), tolerance);
}

namespace {

std::vector<double> values(const Tensor& t) {
    if (!t.defined()) return {};
    return std::vector<double>(t.data(), t.data() + t.numel());
}

// What threw, as a check's finding.
template <class F>
std::string caught(F&& f) {
    try {
        return f();
    } catch (const std::exception& e) {
        return what_threw(e);
    }
}

// "" when f refuses its arguments (std::invalid_argument, std::out_of_range:
// a std::logic_error, as the library's checks throw), else what happened. A
// stub's "not implemented" is a std::logic_error too, and is not a refusal.
template <class F>
std::string refuses(F&& f) {
    try {
        f();
    } catch (const std::logic_error& e) {
        return std::string(e.what()).rfind("not implemented", 0) == 0 ? what_threw(e) : "";
    } catch (const std::exception& e) {
        return std::string("it threw an error that is not a refusal of the arguments: ") + e.what();
    }
    return "it returned a result instead of refusing";
}

std::string gradients(const std::string& name, FunctionRef<Var(const std::vector<Var>&)> f,
                      const std::vector<Tensor>& inputs) {
    GradcheckOptions every;
    every.every_element = true;
    const GradcheckResult g = gradcheck(name, f, inputs, every);
    return g.ok ? "" : g.message;
}

real plus(real x, real y) { return x + y; }
real minus(real x, real y) { return x - y; }
real times(real x, real y) { return x * y; }

// ---- broadcast: reference::binary ------------------------------------------------------------------
std::vector<Check> broadcast_checks(uint64_t seed) {
    std::vector<Check> checks;
    // [[1 2 3] [4 5 6]] + [10 20 30]: the vector added to each row.
    auto row = [] { return reference::binary(Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3}), Tensor::from({10, 20, 30}, {3}), plus); };
    checks.push_back({"2×3 + 3 by hand: [[11 22 33] [14 25 36]]",
                      [=] { return caught([&] { return differs(row(), Shape{2, 3}, {11, 22, 33, 14, 25, 36}, 0); }); },
                      [=] { return values(row()); }});
    // [[1] [2] [3]] − [10 20]: a column against a row, 3×2, order kept (x − y).
    auto outer = [] { return reference::binary(Tensor::from({1, 2, 3}, {3, 1}), Tensor::from({10, 20}, {2}), minus); };
    checks.push_back({"3×1 − 2 by hand: [[−9 −19] [−8 −18] [−7 −17]] (f(a, b), in that order)",
                      [=] { return caught([&] { return differs(outer(), Shape{3, 2}, {-9, -19, -8, -18, -7, -17}, 0); }); },
                      [=] { return values(outer()); }});
    // 5 · [[1 2] [3 4]]: a scalar (rank 0) on the left.
    auto scalar = [] { return reference::binary(Tensor::scalar(5), Tensor::from({1, 2, 3, 4}, {2, 2}), times); };
    checks.push_back({"scalar · 2×2 by hand: [[5 10] [15 20]]",
                      [=] { return caught([&] { return differs(scalar(), Shape{2, 2}, {5, 10, 15, 20}, 0); }); },
                      [=] { return values(scalar()); }});
    // Random values against the library's own broadcasting (tensor/ops_elementwise.cpp).
    struct Pair {
        Shape a, b;
        real (*f)(real, real);
        Tensor (*library)(const Tensor&, const Tensor&);
        const char* what;
    };
    const std::vector<Pair> pairs = {
        {{4, 1, 3}, {2, 1}, minus, sub, "4×1×3 − 2×1: both broadcast, ranks differ (4×2×3)"},
        {{2, 1, 4}, {3, 1}, times, mul, "2×1×4 · 3×1 (2×3×4)"},
        {{1, 3, 1}, {2, 1, 5}, plus, add, "1×3×1 + 2×1×5 (2×3×5)"},
        {{2, 3, 4}, {2, 3, 4}, minus, sub, "2×3×4 − 2×3×4, no broadcasting"},
    };
    for (size_t k = 0; k < pairs.size(); ++k) {
        const Pair p = pairs[k];
        auto inputs = [p, seed, k] {
            Generator gen(seed + k);
            return std::pair<Tensor, Tensor>{Tensor::normal(p.a, 0, 1, gen), Tensor::normal(p.b, 0, 1, gen)};
        };
        checks.push_back({std::string(p.what) + ", against the library's vectorised op",
                          [=] {
                              return caught([&] {
                                  const auto [a, b] = inputs();
                                  return differs(reference::binary(a, b, p.f), p.library(a, b), 0);
                              });
                          },
                          [=] {
                              const auto [a, b] = inputs();
                              return values(reference::binary(a, b, p.f));
                          }});
    }
    checks.push_back({"2×3 and 4, which do not broadcast, are refused with an error",
                      [] { return refuses([] { reference::binary(Tensor::zeros({2, 3}), Tensor::zeros({4}), plus); }); },
                      nullptr});
    return checks;
}

// ---- axis_sum: reference::sum ---------------------------------------------------------------------
std::vector<Check> axis_sum_checks(uint64_t seed) {
    std::vector<Check> checks;
    const Tensor x = Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3});
    // Down the columns [1+4, 2+5, 3+6], across the rows [1+2+3, 4+5+6].
    checks.push_back({"[[1 2 3] [4 5 6]] along axis 0 by hand: [5 7 9]",
                      [=] { return caught([&] { return differs(reference::sum(x, 0), Shape{3}, {5, 7, 9}, 0); }); },
                      [=] { return values(reference::sum(x, 0)); }});
    checks.push_back({"the same along axis 1, keepdim: [[6] [15]], shape 2×1",
                      [=] { return caught([&] { return differs(reference::sum(x, 1, true), Shape{2, 1}, {6, 15}, 0); }); },
                      [=] { return values(reference::sum(x, 1, true)); }});
    checks.push_back({"axis −1 is the last axis: [6 15]",
                      [=] { return caught([&] { return differs(reference::sum(x, -1), Shape{2}, {6, 15}, 0); }); },
                      nullptr});
    // Random 2×3×4 (and 3×1×5) along every axis, keepdim or not, against the library's sum.
    for (const Shape& s : {Shape{2, 3, 4}, Shape{3, 1, 5}})
        for (int axis = 0; axis < 3; ++axis)
            for (const bool keepdim : {false, true}) {
                auto input = [s, seed, axis] {
                    Generator gen(seed + 10 + static_cast<uint64_t>(axis));
                    return Tensor::normal(s, 0, 1, gen);
                };
                checks.push_back({s.str() + " along axis " + std::to_string(axis) + (keepdim ? ", keepdim" : "") +
                                      ", against the library's sum",
                                  [=] {
                                      return caught([&] {
                                          const Tensor a = input();
                                          return differs(reference::sum(a, axis, keepdim), sum(a, axis, keepdim), 1e-12);
                                      });
                                  },
                                  [=] { return values(reference::sum(input(), axis, keepdim)); }});
            }
    checks.push_back({"axis 2 of a 2×3 matrix is refused with an error",
                      [=] { return refuses([&] { reference::sum(x, 2); }); }, nullptr});
    return checks;
}

// ---- gru_gates: nn/rnn_cell.cpp ----------------------------------------------------------------------
// The GRU's equations one number at a time (PyTorch's gate order r, z, n):
//   r = σ(gi_r + gh_r)   z = σ(gi_z + gh_z)   n = tanh(gi_n + r·gh_n)   h' = (1 − z)·n + z·h
std::vector<double> gru_loops(const Tensor& gi, const Tensor& gh, const Tensor& h) {
    const int64_t B = h.size(0), H = h.size(1);
    auto sigma = [](double v) { return 1 / (1 + std::exp(-v)); };
    std::vector<double> out;
    for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < H; ++j) {
            auto at = [&](const Tensor& t, int gate) { return static_cast<double>(t[b * 3 * H + gate * H + j]); };
            const double r = sigma(at(gi, 0) + at(gh, 0));
            const double z = sigma(at(gi, 1) + at(gh, 1));
            const double n = std::tanh(at(gi, 2) + r * at(gh, 2));
            out.push_back((1 - z) * n + z * h[b * H + j]);
        }
    return out;
}

std::vector<Check> gru_gates_checks(uint64_t seed) {
    std::vector<Check> checks;
    const int64_t B = 2, H = 3;
    auto inputs = [=] {
        Generator gen(seed);
        return std::vector<Tensor>{Tensor::normal({B, 3 * H}, 0, 1, gen), Tensor::normal({B, 3 * H}, 0, 1, gen),
                                   Tensor::normal({B, H}, 0, 1, gen)};
    };
    auto run = [](const std::vector<Tensor>& x) { return gru_gates(Var(x[0]), Var(x[1]), Var(x[2])).value(); };
    checks.push_back({"h' for 2 sequences of 3 hidden units against the equations in loops",
                      [=] {
                          return caught([&] {
                              const std::vector<Tensor> x = inputs();
                              return differs(run(x), Shape{B, H}, gru_loops(x[0], x[1], x[2]), 1e-12);
                          });
                      },
                      [=] { return values(run(inputs())); }});
    // z = 1 (gi_z large): h' = h, whatever n is; z = 0 and gh = 0: h' = tanh(gi_n).
    checks.push_back({"an update gate z = 1 keeps h; z = 0 with gh = 0 gives tanh(gi_n)",
                      [] {
                          return caught([&] {
                              Tensor gi = Tensor::zeros({1, 3}), gh = Tensor::zeros({1, 3});
                              gi[1] = 50, gi[2] = 0.5;  // z = σ(50) = 1 to double precision
                              const std::string keep =
                                  differs(gru_gates(Var(gi), Var(gh), Var(Tensor::from({0.25}, {1, 1}))).value(),
                                          Shape{1, 1}, {0.25}, 1e-15);
                              if (!keep.empty()) return "z = 1: " + keep;
                              gi[1] = -50;  // z = 0
                              const std::string fresh =
                                  differs(gru_gates(Var(gi), Var(gh), Var(Tensor::from({0.25}, {1, 1}))).value(),
                                          Shape{1, 1}, {std::tanh(0.5)}, 1e-15);
                              return fresh.empty() ? fresh : "z = 0: " + fresh;
                          });
                      },
                      nullptr});
    checks.push_back({"gradients to gi, gh and h against central differences",
                      [=] {
                          return caught([&] {
                              return gradients("gru_gates", [](const std::vector<Var>& v) { return gru_gates(v[0], v[1], v[2]); },
                                               inputs());
                          });
                      },
                      nullptr});
    checks.push_back({"gi 2×8 with h 2×3 (not 3·H wide) is refused with an error",
                      [] {
                          return refuses([] {
                              gru_gates(Var(Tensor::zeros({2, 8})), Var(Tensor::zeros({2, 9})), Var(Tensor::zeros({2, 3})));
                          });
                      },
                      nullptr});
    return checks;
}

// ---- layer_norm: nn/layernorm.cpp ------------------------------------------------------------------
// y = γ ⊙ (x − μ) / √(σ² + ε) + β over the last axis, σ² the mean of (x − μ)² (biased, as PyTorch).
std::vector<double> layer_norm_loops(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
    const int64_t D = x.size(-1), rows = x.numel() / D;
    std::vector<double> out;
    for (int64_t r = 0; r < rows; ++r) {
        double mu = 0, var = 0;
        for (int64_t i = 0; i < D; ++i) mu += x[r * D + i];
        mu /= static_cast<double>(D);
        for (int64_t i = 0; i < D; ++i) var += (x[r * D + i] - mu) * (x[r * D + i] - mu);
        var /= static_cast<double>(D);
        for (int64_t i = 0; i < D; ++i) {
            const double y = (x[r * D + i] - mu) / std::sqrt(var + eps);
            out.push_back((gamma.defined() ? gamma[i] : 1) * y + (beta.defined() ? beta[i] : 0));
        }
    }
    return out;
}

std::vector<Check> layer_norm_checks(uint64_t seed) {
    std::vector<Check> checks;
    const real eps = 1e-5;
    // x = [1 2 3 4]: μ = 2.5, σ² = (2.25 + 0.25 + 0.25 + 2.25)/4 = 1.25, so
    // x̂ = [−1.5 −0.5 0.5 1.5]/√1.25.00001; with γ = [1 2 1 2], β = [0 0 1 1].
    auto by_hand = [=] {
        return layer_norm(Var(Tensor::from({1, 2, 3, 4}, {1, 4})), Var(Tensor::from({1, 2, 1, 2})),
                          Var(Tensor::from({0, 0, 1, 1})), eps)
            .value();
    };
    const double s = std::sqrt(1.25 + 1e-5);
    checks.push_back({"x = [1 2 3 4], γ = [1 2 1 2], β = [0 0 1 1] by hand: μ = 2.5, σ² = 1.25",
                      [=] {
                          return caught([&] {
                              return differs(by_hand(), Shape{1, 4}, {-1.5 / s, -1 / s, 1 + 0.5 / s, 1 + 3 / s}, 1e-12);
                          });
                      },
                      [=] { return values(by_hand()); }});
    auto inputs = [=] {
        Generator gen(seed);
        return std::vector<Tensor>{Tensor::normal({2, 3, 5}, 0, 2, gen), Tensor::normal({5}, 1, 0.5, gen),
                                   Tensor::normal({5}, 0, 0.5, gen)};
    };
    checks.push_back({"2×3×5 with γ and β against the formula in loops (biased variance, ε inside the root)",
                      [=] {
                          return caught([&] {
                              const std::vector<Tensor> x = inputs();
                              return differs(layer_norm(Var(x[0]), Var(x[1]), Var(x[2]), eps).value(), Shape{2, 3, 5},
                                             layer_norm_loops(x[0], x[1], x[2], eps), 1e-12);
                          });
                      },
                      [=] {
                          const std::vector<Tensor> x = inputs();
                          return values(layer_norm(Var(x[0]), Var(x[1]), Var(x[2]), eps).value());
                      }});
    checks.push_back({"without γ and β (undefined): plain (x − μ) / √(σ² + ε)",
                      [=] {
                          return caught([&] {
                              const Tensor x = inputs()[0];
                              return differs(layer_norm(Var(x), Var(), Var(), eps).value(), Shape{2, 3, 5},
                                             layer_norm_loops(x, Tensor(), Tensor(), eps), 1e-12);
                          });
                      },
                      nullptr});
    checks.push_back({"a constant row [3 3 3 3] gives β, not NaN (σ² = 0: ε keeps the root positive)",
                      [=] {
                          return caught([&] {
                              return differs(layer_norm(Var(Tensor::full({1, 4}, 3)), Var(Tensor::from({1, 2, 1, 2})),
                                                        Var(Tensor::from({0, 0, 1, 1})), eps)
                                                 .value(),
                                             Shape{1, 4}, {0, 0, 1, 1}, 1e-12);
                          });
                      },
                      nullptr});
    checks.push_back({"gradients to x, γ and β against central differences",
                      [=] {
                          return caught([&] {
                              return gradients(
                                  "layer_norm",
                                  [eps](const std::vector<Var>& v) { return layer_norm(v[0], v[1], v[2], eps); },
                                  inputs());
                          });
                      },
                      nullptr});
    return checks;
}

// ---- adam: Adam::update, nn/optim.cpp ---------------------------------------------------------------
// Adam as torch.optim.Adam, one value at a time, at steps t = 1, 2, …:
//   d = g + λp (Adam) | p ← p(1 − lr·λ) first, d = g (AdamW)
//   m = β₁m + (1 − β₁)d      v = β₂v + (1 − β₂)d²      v̂ = max(v̂, v) with AMSGrad, else v
//   p ← p − lr·(m / (1 − β₁ᵗ)) / (√(v̂ / (1 − β₂ᵗ)) + ε)
struct AdamRun {
    double lr = 0.01, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, decay = 0;
    bool decoupled = false, amsgrad = false;
};

std::vector<double> adam_loops(const AdamRun& o, const Tensor& p0, const std::vector<Tensor>& grads) {
    std::vector<double> p(p0.data(), p0.data() + p0.numel()), m(p.size(), 0), v(p.size(), 0), vmax(p.size(), 0);
    for (size_t t = 1; t <= grads.size(); ++t)
        for (size_t i = 0; i < p.size(); ++i) {
            if (o.decoupled) p[i] *= 1 - o.lr * o.decay;
            const double d = grads[t - 1][static_cast<int64_t>(i)] + (o.decoupled ? 0 : o.decay * p[i]);
            m[i] = o.beta1 * m[i] + (1 - o.beta1) * d;
            v[i] = o.beta2 * v[i] + (1 - o.beta2) * d * d;
            vmax[i] = std::max(vmax[i], v[i]);
            const double m_hat = m[i] / (1 - std::pow(o.beta1, static_cast<double>(t)));
            const double v_hat = (o.amsgrad ? vmax[i] : v[i]) / (1 - std::pow(o.beta2, static_cast<double>(t)));
            p[i] -= o.lr * m_hat / (std::sqrt(v_hat) + o.eps);
        }
    return p;
}

// The library's Adam (or AdamW) over the same steps: p after the last.
Tensor adam_library(const AdamRun& o, const Tensor& p0, const std::vector<Tensor>& grads) {
    Var p(p0.clone(), true);
    const AdamOptions options{.lr = o.lr, .beta1 = o.beta1, .beta2 = o.beta2, .eps = o.eps, .weight_decay = o.decay,
                              .amsgrad = o.amsgrad};
    std::unique_ptr<Optimizer> opt;
    if (o.decoupled) opt = std::make_unique<AdamW>(std::vector<Var>{p}, options);
    else opt = std::make_unique<Adam>(std::vector<Var>{p}, options);
    for (const Tensor& g : grads) {
        p.zero_grad();
        sum(p * Var(g)).backward();  // gives p the gradient g, as a training step does
        opt->step();
    }
    return p.value();
}

std::vector<Check> adam_checks(uint64_t seed) {
    std::vector<Check> checks;
    // One step, p = 1, g = 0.5, lr = 0.1: m = 0.05, v = 0.00025, m̂ = 0.5,
    // v̂ = 0.25, so p ← 1 − 0.1·0.5/(0.5 + 1e−8): about lr against the gradient.
    auto first = [] { return adam_library(AdamRun{.lr = 0.1}, Tensor::from({1}), {Tensor::from({0.5})}); };
    checks.push_back({"one step by hand: p = 1, g = 0.5, lr = 0.1 → 1 − 0.1·0.5/(0.5 + 1e−8)",
                      [=] { return caught([&] { return differs(first(), Shape{1}, {1 - 0.1 * 0.5 / (0.5 + 1e-8)}, 1e-12); }); },
                      [=] { return values(first()); }});
    struct Variant {
        AdamRun run;
        const char* what;
    };
    const std::vector<Variant> variants = {
        {AdamRun{}, "three steps, no decay"},
        {AdamRun{.lr = 0.05, .decay = 0.1}, "three steps with Adam's L2 decay λ = 0.1 (d = g + λp)"},
        {AdamRun{.lr = 0.05, .decay = 0.1, .decoupled = true}, "three steps of AdamW, λ = 0.1 (p·(1 − lr·λ) first)"},
        {AdamRun{.lr = 0.05, .amsgrad = true}, "three steps with AMSGrad (the largest v so far)"},
        {AdamRun{.lr = 0.02, .beta1 = 0.5, .beta2 = 0.9, .eps = 1e-3}, "β₁ = 0.5, β₂ = 0.9, ε = 1e−3"},
    };
    for (size_t k = 0; k < variants.size(); ++k) {
        const Variant var = variants[k];
        auto inputs = [seed, k] {
            Generator gen(seed + 20 + k);
            std::vector<Tensor> grads;
            const Tensor p0 = Tensor::normal({2, 3}, 0, 1, gen);
            // gradients that shrink, so that AMSGrad's maximum differs from v
            for (const double scale : {2.0, 0.5, 0.1}) grads.push_back(Tensor::normal({2, 3}, 0, scale, gen));
            return std::pair<Tensor, std::vector<Tensor>>{p0, grads};
        };
        checks.push_back({std::string(var.what) + ", against the formula in loops",
                          [=] {
                              return caught([&] {
                                  const auto [p0, grads] = inputs();
                                  return differs(adam_library(var.run, p0, grads), Shape{2, 3},
                                                 adam_loops(var.run, p0, grads), 1e-12);
                              });
                          },
                          [=] {
                              const auto [p0, grads] = inputs();
                              return values(adam_library(var.run, p0, grads));
                          }});
    }
    return checks;
}

// ---- reinforce: ReSA's token sampler, attention/alignments.cpp -----------------------------------------
// Hard selection trained by REINFORCE (Williams 1992): a token l is kept with
// probability π_l = σ(s_l), z_l ~ Bernoulli(π_l), and for example b
//   log p(z_b) = Σ_l over real tokens of z log π + (1 − z) log(1 − π)
//   kept_b = Σ_l z_l / (number of real tokens)
//   loss = −mean_b (r_b − baseline)·log p(z_b),   r_b = −(L_b + λ·kept_b)
// Averaged over every selection z, weighted by p(z), its gradient must be the
// exact gradient of E_z[mean_b (L_b(z) + λ·kept_b)]: small enough here to
// enumerate (two examples, 3 and 2 real tokens: 32 selections).
using ReinforceSelection = ReinforcedAlignment::Selection;

const int64_t kRB = 2, kRN = 3;
const Tensor& reinforce_valid() {
    static const Tensor valid = Tensor::from({1, 1, 1, 1, 1, 0}, {kRB, kRN});
    return valid;
}
// L_b(z): a fixed cost of each selection, as a task loss would be.
double task_cost(int64_t b, const std::vector<double>& z) {
    return b == 0 ? 0.9 - 0.5 * z[0] + 0.8 * z[1] * z[2] + 0.3 * z[2] : 1.1 + 0.6 * z[0] - 0.7 * z[1];
}

std::vector<Check> reinforce_checks(uint64_t seed) {
    std::vector<Check> checks;
    auto logits = [seed] {
        Generator gen(seed + 30);
        return Tensor::normal({kRB, kRN}, 0, 1, gen);
    };
    const double lambda = 0.3, baseline = 0.75;
    // s = [0, ln 3, −ln 3] for a real-only example: π = [1/2, 3/4, 1/4].
    // z = [1, 0, 1]: log p = log ½ + log ¼ + log ¼ = −log 32; kept = 2/3.
    auto by_hand = [] {
        const Tensor s = Tensor::from({0, std::log(3.0), -std::log(3.0)}, {1, 3});
        return ReinforcedAlignment::score_selection(Var(s), Tensor::ones({1, 3}), Tensor::from({1, 0, 1}, {1, 3}));
    };
    checks.push_back({"π, log p(z) and the share kept by hand: π = [1/2 3/4 1/4], z = [1 0 1] → −log 32, 2/3",
                      [=] {
                          return caught([&] {
                              const ReinforceSelection sel = by_hand();
                              const std::string pi = differs(sel.probs.value(), Shape{1, 3}, {0.5, 0.75, 0.25}, 1e-12);
                              if (!pi.empty()) return "π = σ(s): " + pi;
                              const std::string lp = differs(sel.log_prob.value(), Shape{1}, {-std::log(32.0)}, 1e-12);
                              if (!lp.empty()) return "log p(z): " + lp;
                              const std::string kept = differs(sel.kept, Shape{1}, {2.0 / 3}, 1e-12);
                              return kept.empty() ? kept : "kept: " + kept;
                          });
                      },
                      [=] {
                          const ReinforceSelection sel = by_hand();
                          return std::vector<double>{sel.log_prob.value()[0], sel.kept[0]};
                      }});
    // An example with one real token and one with none (a padding token is
    // never selected: z = 0 there): the share kept is z over 1 real token, and
    // 0 (not 0/0) over none; log p(z) of an example with no real token is 0
    // (nothing was drawn). s = [ln 3, 5, −5 | 2, 0, 1], z = [1 0 0 | 0 0 0]:
    // only s_1 = ln 3 counts, log p = log σ(ln 3) = log ¾.
    auto ragged = [] {
        const Tensor s = Tensor::from({std::log(3.0), 5, -5, 2, 0, 1}, {2, 3});
        return ReinforcedAlignment::score_selection(Var(s), Tensor::from({1, 0, 0, 0, 0, 0}, {2, 3}),
                                                    Tensor::from({1, 0, 0, 0, 0, 0}, {2, 3}));
    };
    checks.push_back({"one real token and none: kept = [1, 0] (not 0/0), log p(z) = [log ¾, 0]",
                      [=] {
                          return caught([&] {
                              const ReinforceSelection sel = ragged();
                              const std::string kept = differs(sel.kept, Shape{2}, {1, 0}, 1e-12);
                              if (!kept.empty()) return "kept: " + kept;
                              const std::string lp = differs(sel.log_prob.value(), Shape{2}, {std::log(0.75), 0}, 1e-12);
                              return lp.empty() ? lp : "log p(z): " + lp;
                          });
                      },
                      [=] {
                          const ReinforceSelection sel = ragged();
                          return std::vector<double>{sel.kept[0], sel.kept[1], sel.log_prob.value()[0],
                                                     sel.log_prob.value()[1]};
                      }});
    // One selection of the 2-example batch (the padded token left out of
    // log p and of the share kept): the loss's value against the formula.
    const std::vector<double> z1 = {1, 0, 1, 0, 1, 0};
    auto one_loss = [=] {
        const Tensor s = logits();
        const ReinforceSelection sel = ReinforcedAlignment::score_selection(Var(s), reinforce_valid(), Tensor::from(
            std::vector<real>(z1.begin(), z1.end()), {kRB, kRN}));
        const Tensor L = Tensor::from({static_cast<real>(task_cost(0, {1, 0, 1})), static_cast<real>(task_cost(1, {0, 1, 0}))});
        return ReinforcedAlignment::policy_loss(sel, L, lambda, baseline).value();
    };
    auto one_loss_by_hand = [=] {
        const Tensor s = logits();
        double total = 0;
        for (int64_t b = 0; b < kRB; ++b) {
            double log_p = 0, real_tokens = 0, kept = 0;
            for (int64_t l = 0; l < kRN; ++l) {
                if (reinforce_valid()[b * kRN + l] == 0) continue;
                const double pi = 1 / (1 + std::exp(-s[b * kRN + l])), z = z1[static_cast<size_t>(b * kRN + l)];
                log_p += z ? std::log(pi) : std::log(1 - pi);
                real_tokens += 1, kept += z;
            }
            const double cost = task_cost(b, b == 0 ? std::vector<double>{1, 0, 1} : std::vector<double>{0, 1, 0});
            const double reward = -(cost + lambda * kept / real_tokens);
            total += -(reward - baseline) * log_p;
        }
        return total / kRB;
    };
    checks.push_back({"the loss of one selection, −mean_b (r_b − baseline)·log p(z_b), r_b = −(L_b + λ·kept_b)",
                      [=] { return caught([&] { return differs(one_loss(), Shape{}, {one_loss_by_hand()}, 1e-10); }); },
                      [=] { return values(one_loss()); }});
    // Every selection of the real tokens (2³ · 2² = 32), each loss's gradient
    // to the logits weighted by p(z): the exact gradient of E[cost], whose
    // derivative to s_bl is (1/B) Σ_z p(z_b)·cost_b(z_b)·(z_bl − π_bl), the
    // baseline dropping out.
    auto expected_gradient = [=] {
        const Tensor s = logits();
        std::vector<double> estimate(kRB * kRN, 0);
        for (int outcome = 0; outcome < 32; ++outcome) {
            std::vector<real> z(kRB * kRN, 0);
            const int bits[5] = {0, 1, 2, 3, 4};  // the real tokens, in order
            for (int k = 0; k < 5; ++k) z[static_cast<size_t>(bits[k])] = static_cast<real>((outcome >> k) & 1);
            double p = 1;
            for (int k = 0; k < 5; ++k) {
                const double pi = 1 / (1 + std::exp(-s[bits[k]]));
                p *= z[static_cast<size_t>(bits[k])] ? pi : 1 - pi;
            }
            Var logit(s.clone(), true);
            const ReinforceSelection sel = ReinforcedAlignment::score_selection(logit, reinforce_valid(), Tensor::from(z, {kRB, kRN}));
            const Tensor L = Tensor::from({static_cast<real>(task_cost(0, {z[0], z[1], z[2]})),
                                           static_cast<real>(task_cost(1, {z[3], z[4], z[5]}))});
            ReinforcedAlignment::policy_loss(sel, L, lambda, baseline).backward();
            for (int64_t i = 0; i < kRB * kRN; ++i) estimate[static_cast<size_t>(i)] += p * logit.grad()[i];
        }
        return estimate;
    };
    auto exact_gradient = [=] {
        const Tensor s = logits();
        std::vector<double> exact(kRB * kRN, 0);
        for (int64_t b = 0; b < kRB; ++b) {
            const int64_t n_real = b == 0 ? 3 : 2;
            for (int outcome = 0; outcome < (1 << n_real); ++outcome) {
                std::vector<double> z(3, 0);
                double p = 1;
                for (int64_t l = 0; l < n_real; ++l) {
                    z[static_cast<size_t>(l)] = (outcome >> l) & 1;
                    const double pi = 1 / (1 + std::exp(-s[b * kRN + l]));
                    p *= z[static_cast<size_t>(l)] ? pi : 1 - pi;
                }
                double kept = 0;
                for (int64_t l = 0; l < n_real; ++l) kept += z[static_cast<size_t>(l)];
                const double cost = task_cost(b, z) + lambda * kept / static_cast<double>(n_real);
                for (int64_t l = 0; l < n_real; ++l) {
                    const double pi = 1 / (1 + std::exp(-s[b * kRN + l]));
                    exact[static_cast<size_t>(b * kRN + l)] += p * cost * (z[static_cast<size_t>(l)] - pi) / kRB;
                }
            }
        }
        return exact;
    };
    checks.push_back({"averaged over all 32 selections, the gradient to the logits is the exact gradient of E[L + λ·kept]",
                      [=] {
                          return caught([&] {
                              const std::vector<double> got = expected_gradient();
                              return differs(Tensor::from(std::vector<real>(got.begin(), got.end()), {kRB, kRN}),
                                             Shape{kRB, kRN}, exact_gradient(), 1e-10);
                          });
                      },
                      [=] { return expected_gradient(); }});
    checks.push_back({"one task loss for two examples is refused with an error",
                      [=] {
                          return refuses([&] {
                              const ReinforceSelection sel = ReinforcedAlignment::score_selection(
                                  Var(logits()), reinforce_valid(), Tensor::zeros({kRB, kRN}));
                              ReinforcedAlignment::policy_loss(sel, Tensor::from({1}), lambda, baseline);
                          });
                      },
                      nullptr});
    return checks;
}

}  // namespace

std::vector<Check> named_checks(const std::string& name, uint64_t seed) {
    if (name == "broadcast") return broadcast_checks(seed);
    if (name == "axis_sum") return axis_sum_checks(seed);
    if (name == "gru_gates") return gru_gates_checks(seed);
    if (name == "layer_norm") return layer_norm_checks(seed);
    if (name == "adam") return adam_checks(seed);
    if (name == "reinforce") return reinforce_checks(seed);
    throw std::invalid_argument("no checks named '" + name + "' (course/checks.cpp: broadcast, axis_sum, gru_gates, "
                                "layer_norm, adam, reinforce)");
}

}  // namespace attn::course
