// The grade kind "engine" (course/grade_kinds.hpp): the backward engine's
// graphs (exercise 1.2, the engine's order), each with its gradient worked
// out by hand here: two paths added, nodes used by several later ones, a
// ladder of 2^30 paths visited once, an RNN's back-propagation through
// time, a chain of 100,000 additions on a small stack, a freed graph
// refused and the next one right, a node of five inputs. Each check runs in
// a child process of its own (grade_each, course/report.hpp); its values
// are also what tells the engine's known mistakes apart
// (course/fingerprints.cpp).
#include <sys/resource.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/ops.hpp"
#include "course/checks.hpp"
#include "course/grade_kinds.hpp"

namespace attn::course::grading {
namespace {

// "" when every element of got is want's, else the first difference.
std::string same(const Tensor& got, const std::vector<double>& want, double tolerance = 1e-9) {
    if (!got.defined()) return "no gradient reached x";
    return attn::course::differs(got, Shape{static_cast<int64_t>(want.size())}, want, tolerance);
}

}  // namespace

std::vector<Check> engine_checks() {
    std::vector<Check> checks;
    // y = Σ (2x)·(3x): x reaches y by two paths, dy/dx = 12x.
    auto diamond = [] {
        Var x(Tensor::from({1, -2, 0.5}), true);
        sum((x * 2.0) * (x * 3.0)).backward();
        return x.grad();
    };
    checks.push_back({"a diamond, y = Σ (2x)·(3x): dy/dx = 12x, both paths added",
                      [=] { return same(diamond(), {12, -24, 6}); },
                      [=] { const Tensor g = diamond(); return std::vector<double>(g.data(), g.data() + g.numel()); }});
    // y = Σ a·b·c with a = x + 1, b = a·x, c = b + a: nodes used by several
    // later ones, which must all hand their gradient in before a node runs.
    auto shared = [] {
        Var x(Tensor::from({0.5, -1.5}), true);
        Var a = x + 1.0;
        Var b = a * x;
        Var c = b + a;
        sum(a * b * c).backward();
        return x.grad();
    };
    // a = x+1, b = x²+x, c = x²+2x+1 = (x+1)²: y = (x+1)·x(x+1)·(x+1)² = x(x+1)⁴,
    // dy/dx = (x+1)⁴ + 4x(x+1)³ = (x+1)³(5x+1).
    auto dydx = [](double x) { return std::pow(x + 1, 3) * (5 * x + 1); };
    checks.push_back({"nodes used by several later ones: y = Σ a·b·c, a = x+1, b = a·x, c = b+a",
                      [=] { return same(shared(), {dydx(0.5), dydx(-1.5)}); },
                      [=] { const Tensor g = shared(); return std::vector<double>(g.data(), g.data() + g.numel()); }});
    // A ladder of 30 diamonds, z ← z·1 + z·1: 2³⁰ paths from x to the top,
    // each visited once by a search that marks what it has seen.
    auto ladder = [] {
        Var x(Tensor::from({1.0}), true);
        Var z = x;
        for (int k = 0; k < 30; ++k) z = z * 1.0 + z * 1.0;
        sum(z).backward();
        return x.grad();
    };
    checks.push_back({"a ladder of 30 diamonds (2^30 paths): each node visited once, dy/dx = 2^30",
                      [=] { return same(ladder(), {1073741824.0}); },
                      [=] { const Tensor g = ladder(); return std::vector<double>(g.data(), g.data() + g.numel()); }});
    // An RNN unrolled over six steps, one weight w shared by every step:
    // h_t = tanh(w·h_{t−1} + x_t), y = h_6. Its gradient is back-propagation
    // through time, written out below as a loop: g = ∂y/∂h_t from the last
    // step back, each step adding (1 − h_t²)·h_{t−1}·g to dy/dw and handing
    // w·(1 − h_t²)·g to h_{t−1}. The engine must run each step's node once,
    // after every later step has handed in its share.
    const std::vector<double> xs = {0.5, -0.3, 0.8, 0.1, -0.6, 0.2};
    auto rnn = [xs] {
        Var w(Tensor::from({0.7}), true), h(Tensor::from({0.25}), true);
        const Var h0 = h;
        for (const double x : xs) h = tanh(w * h + x);
        h.backward();
        return std::vector<Tensor>{w.grad(), h0.grad()};
    };
    auto bptt = [xs] {
        std::vector<double> h = {0.25};
        for (const double x : xs) h.push_back(std::tanh(0.7 * h.back() + x));
        double g = 1, dw = 0;
        for (size_t t = xs.size(); t >= 1; --t) {
            const double d = g * (1 - h[t] * h[t]);
            dw += d * h[t - 1];
            g = d * 0.7;
        }
        return std::vector<double>{dw, g};  // dy/dw, dy/dh_0
    };
    checks.push_back({"an RNN unrolled over 6 steps, w shared by every step: dy/dw and dy/dh_0 as BPTT by hand",
                      [=] {
                          const std::vector<Tensor> g = rnn();
                          const std::vector<double> want = bptt();
                          const std::string w = same(g[0], {want[0]});
                          if (!w.empty()) return "dy/dw: " + w;
                          const std::string h0 = same(g[1], {want[1]});
                          return h0.empty() ? h0 : "dy/dh_0: " + h0;
                      },
                      [=] {
                          const std::vector<Tensor> g = rnn();
                          std::vector<double> v;
                          for (const Tensor& t : g)
                              if (t.defined()) v.push_back(t[0]);
                          return v;
                      }});
    // A chain of 100,000 additions: no recursion that deep fits a stack.
    checks.push_back({"a chain of 100,000 additions: backward returns, dy/dx = 1",
                      [] {
                          // A 1 MiB stack, as on some systems' threads: a search that
                          // recurses once per node needs several (8 MiB here hid it).
                          const rlimit small{1 << 20, 1 << 20};
                          setrlimit(RLIMIT_STACK, &small);
                          Var x(Tensor::from({2.0}), true);
                          Var z = x;
                          for (int k = 0; k < 100000; ++k) z = z + 1.0;
                          z.backward();
                          return same(x.grad(), {1.0});
                      },
                      nullptr});
    // Walking a freed graph again is refused, with a sentence.
    checks.push_back({"backward() twice through the same graph is refused with an error that says why",
                      [] {
                          Var x(Tensor::from({1.0, 2.0}), true);
                          Var h = tanh(x);
                          Var y = sum(h * h);
                          Var y2 = sum(h);
                          y.backward();
                          try {
                              y2.backward();
                          } catch (const std::runtime_error& e) {
                              if (std::string(e.what()).find("already freed") != std::string::npos) return std::string();
                              return "the error says: " + std::string(e.what());
                          }
                          return std::string("the second backward() ran through a freed graph without an error");
                      },
                      nullptr});
    // A refused backward() leaves the search where it stopped: the next one,
    // on a new graph, must start afresh. 3x and the freed graph's h share
    // nothing, so dy/dx = 3 whatever the first pass left behind.
    auto after_refusal = [] {
        Var x(Tensor::from({1.0, 2.0}), true);
        Var h = tanh(x);
        Var y = sum(h * h), y2 = sum(h + h * 2.0);
        y.backward();
        try {
            y2.backward();
        } catch (const std::runtime_error&) {
        }
        Var w(Tensor::from({0.5, -1.0}), true);
        sum(w * 3.0).backward();
        return w.grad();
    };
    checks.push_back({"after a backward() refused halfway, the next one on a new graph is right: d(Σ 3w)/dw = 3",
                      [=] { return same(after_refusal(), {3, 3}); },
                      [=] { const Tensor g = after_refusal(); return std::vector<double>(g.data(), g.data() + g.numel()); }});
    // A node with more inputs than a node keeps inline (three): concat of five.
    auto five = [] {
        std::vector<Var> parts;
        for (int k = 0; k < 5; ++k) parts.emplace_back(Tensor::from({static_cast<real>(k + 1)}), true);
        const Var c = concat(parts, 0);
        sum(c * c).backward();  // d/dp_k = 2 p_k
        std::vector<double> g;
        for (const Var& p : parts) g.push_back(p.grad().defined() ? p.grad()[0] : std::nan(""));
        return g;
    };
    checks.push_back({"a node with five inputs, concat(p_1 … p_5): d(Σ c²)/dp_k = 2 p_k for each",
                      [=] {
                          const std::vector<double> g = five();
                          for (size_t k = 0; k < g.size(); ++k)
                              if (!(std::fabs(g[k] - 2.0 * static_cast<double>(k + 1)) <= 1e-12))
                                  return "dy/dp_" + std::to_string(k + 1) + ": expected " + num(2.0 * static_cast<double>(k + 1)) +
                                         ", got " + num(g[k]);
                          return std::string();
                      },
                      [=] { return five(); }});
    return checks;
}

}  // namespace attn::course::grading
