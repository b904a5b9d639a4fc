// Element-wise ops: forward and backward side by side.
//
// Notation: z is the op's output, g = ∂L/∂z (bw.grad()), and each backward line
// computes ∂L/∂input = g · ∂z/∂input. Binary ops broadcast; bw.accumulate sums
// each gradient back to its input's shape, so no backward here mentions it.
// Shapes: any; binary ops a ⊕ b → broadcast(a, b).
#include <cmath>

#include "autograd/ops.hpp"
#include "autograd/kernels.hpp"
#include "autograd/record.hpp"
#include "tensor/fast_math.hpp"
#include "tensor/ops.hpp"
#include "tensor/profile.hpp"

namespace attn {

// ---- binary ------------------------------------------------------------------

// z = a + b        ∂z/∂a = 1        ∂z/∂b = 1
Var add(const Var& a, const Var& b) {
    const ProfileScope scope("add");
    return record("add", add(a.value(), b.value()), {a, b}, [](Backward& bw) {
        bw.accumulate(0, bw.grad());
        bw.accumulate(1, bw.grad());
    });
}

// z = a − b        ∂z/∂a = 1        ∂z/∂b = −1
Var sub(const Var& a, const Var& b) {
    const ProfileScope scope("sub");
    return record("sub", sub(a.value(), b.value()), {a, b}, [](Backward& bw) {
        bw.accumulate(0, bw.grad());
        if (bw.needs(1)) bw.accumulate(1, neg(bw.grad()));
    });
}

// z = a ⊙ b        ∂z/∂a = b        ∂z/∂b = a
Var mul(const Var& a, const Var& b) {
    const ProfileScope scope("mul");
    return record("mul", mul(a.value(), b.value()), {a, b}, [a = a.value(), b = b.value()](Backward& bw) {
        if (bw.needs(0)) bw.accumulate(0, mul(bw.grad(), b));
        if (bw.needs(1)) bw.accumulate(1, mul(bw.grad(), a));
    });
}

// z = a / b        ∂z/∂a = 1/b        ∂z/∂b = −a/b² = −z/b
Var div(const Var& a, const Var& b) {
    const ProfileScope scope("div");
    return record("div", div(a.value(), b.value()), {a, b}, [b = b.value()](Backward& bw) {
        if (bw.needs(0)) bw.accumulate(0, div(bw.grad(), b));
        if (bw.needs(1)) bw.accumulate(1, neg(div(mul(bw.grad(), bw.output()), b)));
    });
}

// z = a^b (a > 0 where b wants a gradient)      ∂z/∂a = b·a^(b−1)      ∂z/∂b = z·ln a
Var pow(const Var& a, const Var& b) {
    const ProfileScope scope("pow");
    return record("pow", pow(a.value(), b.value()), {a, b}, [a = a.value(), b = b.value()](Backward& bw) {
        if (bw.needs(0)) bw.accumulate(0, mul(bw.grad(), mul(b, pow(a, add(b, real(-1))))));
        if (bw.needs(1)) bw.accumulate(1, mul(bw.grad(), mul(bw.output(), log(a))));
    });
}

// z = min(a, b)    ∂z/∂a = [a < b] + ½[a = b]    ∂z/∂b = [b < a] + ½[a = b]
Var minimum(const Var& a, const Var& b) {
    const ProfileScope scope("minimum");
    return record("minimum", minimum(a.value(), b.value()), {a, b}, [a = a.value(), b = b.value()](Backward& bw) {
        const Tensor half_tie = mul(eq(a, b), real(0.5));
        if (bw.needs(0)) bw.accumulate(0, mul(bw.grad(), add(lt(a, b), half_tie)));
        if (bw.needs(1)) bw.accumulate(1, mul(bw.grad(), add(lt(b, a), half_tie)));
    });
}

// z = max(a, b)    ∂z/∂a = [a > b] + ½[a = b]    ∂z/∂b = [b > a] + ½[a = b]
Var maximum(const Var& a, const Var& b) {
    const ProfileScope scope("maximum");
    return record("maximum", maximum(a.value(), b.value()), {a, b}, [a = a.value(), b = b.value()](Backward& bw) {
        const Tensor half_tie = mul(eq(a, b), real(0.5));
        if (bw.needs(0)) bw.accumulate(0, mul(bw.grad(), add(gt(a, b), half_tie)));
        if (bw.needs(1)) bw.accumulate(1, mul(bw.grad(), add(gt(b, a), half_tie)));
    });
}

// ---- with a scalar -------------------------------------------------------------

// z = a + s        ∂z/∂a = 1
Var add(const Var& a, real s) {
    const ProfileScope scope("add");
    return record("add", add(a.value(), s), {a}, [](Backward& bw) { bw.accumulate(0, bw.grad()); });
}

// z = s·a          ∂z/∂a = s
Var mul(const Var& a, real s) {
    const ProfileScope scope("mul");
    return record("mul", mul(a.value(), s), {a}, [s](Backward& bw) { bw.accumulate(0, mul(bw.grad(), s)); });
}

// ---- unary -------------------------------------------------------------------

// z = −a           ∂z/∂a = −1
Var neg(const Var& a) {
    const ProfileScope scope("neg");
    return record("neg", neg(a.value()), {a}, [](Backward& bw) { bw.accumulate(0, neg(bw.grad())); });
}

// z = a^c          ∂z/∂a = c·a^(c−1)   (0 for c = 0, also at a = 0)
Var pow(const Var& a, real c) {
    const ProfileScope scope("pow");
    return record("pow", pow(a.value(), c), {a}, [a = a.value(), c](Backward& bw) {
        bw.accumulate(0, pointwise(bw.grad(), a, [c](real g, real x) {
                          return c == 0 ? real(0) : g * c * std::pow(x, c - 1);
                      }));
    });
}

// z = a²           ∂z/∂a = 2a
Var square(const Var& a) {
    const ProfileScope scope("square");
    return record("square", square(a.value()), {a}, [a = a.value()](Backward& bw) {
        bw.accumulate(0, pointwise(bw.grad(), a, [](real g, real x) { return 2 * x * g; }));
    });
}

// z = eᵃ           ∂z/∂a = eᵃ = z
Var exp(const Var& a) {
    const ProfileScope scope("exp");
    return record("exp", exp(a.value()), {a}, [](Backward& bw) {
        bw.accumulate(0, pointwise(bw.grad(), bw.output(), [](real g, real z) { return g * z; }));
    });
}

// z = ln a         ∂z/∂a = 1/a
Var log(const Var& a) {
    const ProfileScope scope("log");
    return record("log", log(a.value()), {a}, [a = a.value()](Backward& bw) {
        bw.accumulate(0, pointwise(bw.grad(), a, [](real g, real x) { return g / x; }));
    });
}

// z = √a           ∂z/∂a = 1/(2√a) = 1/(2z)
Var sqrt(const Var& a) {
    const ProfileScope scope("sqrt");
    return record("sqrt", sqrt(a.value()), {a}, [](Backward& bw) {
        bw.accumulate(0, pointwise(bw.grad(), bw.output(), [](real g, real z) { return g / (2 * z); }));
    });
}

// z = |a|          ∂z/∂a = sign(a)   (0 at a = 0)
Var abs(const Var& a) {
    const ProfileScope scope("abs");
    return record("abs", abs(a.value()), {a}, [a = a.value()](Backward& bw) {
        bw.accumulate(0, pointwise(bw.grad(), a, [](real g, real x) { return x > 0 ? g : x < 0 ? -g : real(0); }));
    });
}

// z = min(max(a, lo), hi)      ∂z/∂a = [lo ≤ a ≤ hi]
Var clamp(const Var& a, real lo, real hi) {
    const ProfileScope scope("clamp");
    return record("clamp", clamp(a.value(), lo, hi), {a}, [a = a.value(), lo, hi](Backward& bw) {
        bw.accumulate(0, pointwise(bw.grad(), a, [lo, hi](real g, real x) {
                          return x >= lo && x <= hi ? g : real(0);
                      }));
    });
}

// z = tanh a       ∂z/∂a = 1 − z²
Var tanh(const Var& a) {
    const ProfileScope scope("tanh");
    return record("tanh", tanh(a.value()), {a}, [](Backward& bw) {
        bw.accumulate(0, pointwise(bw.grad(), bw.output(), [](real g, real z) { return g * (1 - z * z); }));
    });
}

// z = σ(a) = 1/(1 + e⁻ᵃ)       ∂z/∂a = z(1 − z)
Var sigmoid(const Var& a) {
    const ProfileScope scope("sigmoid");
    return record("sigmoid", sigmoid(a.value()), {a}, [](Backward& bw) {
        bw.accumulate(0, pointwise(bw.grad(), bw.output(), [](real g, real z) { return g * z * (1 - z); }));
    });
}

// z = max(a, 0)    ∂z/∂a = [a > 0]
Var relu(const Var& a) {
    const ProfileScope scope("relu");
    return record("relu", relu(a.value()), {a}, [a = a.value()](Backward& bw) {
        bw.accumulate(0, pointwise(bw.grad(), a, [](real g, real x) { return keep_or_zero(x > 0, g); }));
    });
}

// z = a if a > 0 else s·a      ∂z/∂a = 1 if a > 0 else s
Var leaky_relu(const Var& a, real s) {
    const ProfileScope scope("leaky_relu");
    return record("leaky_relu", leaky_relu(a.value(), s), {a}, [a = a.value(), s](Backward& bw) {
        bw.accumulate(0, pointwise(bw.grad(), a, [s](real g, real x) { return x > 0 ? g : s * g; }));
    });
}

// z = a·Φ(a), Φ the standard normal CDF       ∂z/∂a = Φ(a) + a·φ(a),  φ(a) = e^(−a²/2)/√(2π)
Var gelu(const Var& a) {
    const ProfileScope scope("gelu");
    return record("gelu", gelu(a.value()), {a}, [a = a.value()](Backward& bw) {
        bw.accumulate(0, pointwise(bw.grad(), a, [](real g, real x) {
                          const double xd = x;
                          const double cdf = 0.5 * (1 + std::erf(xd / std::sqrt(2.0)));
                          const double pdf = std::exp(-0.5 * xd * xd) / std::sqrt(2 * 3.14159265358979323846);
                          return static_cast<real>(g * (cdf + xd * pdf));
                      }));
    });
}

// z = ln(1 + eᵃ)   ∂z/∂a = σ(a)
Var softplus(const Var& a) {
    const ProfileScope scope("softplus");
    return record("softplus", softplus(a.value()), {a}, [a = a.value()](Backward& bw) {
        bw.accumulate(0, mul(bw.grad(), sigmoid(a)));
    });
}

// ---- operators: the same ops, spelled as math ------------------------------------

Var operator+(const Var& a, const Var& b) { return add(a, b); }
Var operator-(const Var& a, const Var& b) { return sub(a, b); }
Var operator*(const Var& a, const Var& b) { return mul(a, b); }
Var operator/(const Var& a, const Var& b) { return div(a, b); }
Var operator-(const Var& a) { return neg(a); }
Var operator+(const Var& a, real b) { return add(a, b); }
Var operator+(real a, const Var& b) { return add(b, a); }
Var operator-(const Var& a, real b) { return add(a, -b); }
Var operator-(real a, const Var& b) { return add(neg(b), a); }
Var operator*(const Var& a, real b) { return mul(a, b); }
Var operator*(real a, const Var& b) { return mul(b, a); }
Var operator/(const Var& a, real b) { return mul(a, 1 / b); }
Var operator/(real a, const Var& b) { return mul(pow(b, real(-1)), a); }

}  // namespace attn
