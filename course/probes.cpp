// What an exercise's code computes on wide random inputs (course/probes.hpp):
// how make check-exercises tells a mistake made automatically in the
// solution (scripts/mutants.py) from the solution itself, before it asks the
// grader to fail it. Each draw picks its own shapes, axes, masks, positions,
// options and values, well beyond the graded cases: sizes of 1, negative
// axes, broadcast axes, inputs used by two consumers or by none, constant
// operands, fractional and out-of-range positions, NaN behind a mask, ragged
// lengths, C's padding between rows. A mistake whose every draw agrees with
// the solution is set aside as equivalent (a softmax that ignores a shift
// common to its row); every other must fail its grader.
//
// Nothing here is a reference: the solution's own outputs, recorded in this
// tree, are what a mistake's are compared with.
#include "course/probes.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/alignments.hpp"
#include "course/guard.hpp"
#include "attention/multi_dimensional.hpp"
#include "attention/multi_head.hpp"
#include "attention/scaled_dot_product.hpp"
#include "attention/scores.hpp"
#include "autograd/ops.hpp"
#include "nn/layernorm.hpp"
#include "nn/optim.hpp"
#include "nn/rnn_cell.hpp"
#include "tensor/gemm/gemm.hpp"
#include "tensor/gemm/gemm_internal.hpp"
#include "tensor/parallel.hpp"
#include "tensor/ops.hpp"
#include "tensor/random.hpp"
#include "tensor/reference.hpp"
#include "tests/grad/catalog_checks.hpp"

namespace attn::course {
namespace {

using attn::course::GuardedFloats;

// ---- what a draw records ---------------------------------------------------------------------
// Values, in order; a tensor's every element; an undefined gradient, or an
// error, as a value no computation gives.
constexpr double kNoGradient = 1e300;
constexpr double kRefused = 2e300;  // a std::logic_error: the arguments refused
constexpr double kThrew = 3e300;    // any other exception

struct Record {
    std::vector<double> values;
    void add(double x) { values.push_back(x); }
    void add(const Tensor& t) {
        if (!t.defined()) {
            add(kNoGradient);
            return;
        }
        add(static_cast<double>(t.rank()));  // the shape, then every element
        for (const int64_t n : t.shape()) add(static_cast<double>(n));
        for (int64_t i = 0; i < t.numel(); ++i) add(t[i]);
    }
    void grad(const Var& v) { add(v.grad()); }
    // Runs f, recording an exception as its kind.
    template <class F>
    void guarded(F&& f) {
        try {
            f();
        } catch (const std::logic_error&) {
            add(kRefused);
        } catch (const std::exception&) {
            add(kThrew);
        }
    }
};

struct Draw {
    Generator gen;
    // One draw in five, every time: inputs of a shape the code must refuse
    // (a width off by one, sizes that do not broadcast, a mask of another
    // length), each probe picking which.
    bool wrong_shape;
    explicit Draw(uint64_t seed) : gen(seed * 7919 + 13), wrong_shape(seed % 5 == 2) {}
    int64_t size(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(gen.randint(static_cast<uint64_t>(hi - lo + 1))); }
    bool coin(double p = 0.5) { return gen.uniform() < p; }
    Tensor normal(const Shape& s, double scale = 1) { return Tensor::normal(s, 0, scale, gen); }
    Tensor uniform(const Shape& s, double lo, double hi) {
        Tensor t = Tensor::empty(s);
        for (int64_t i = 0; i < t.numel(); ++i) t[i] = static_cast<real>(gen.uniform(lo, hi));
        return t;
    }
    // A B×n keep mask of random lengths (some 0, some n), or holes.
    Tensor key_keep(int64_t B, int64_t n) {
        Tensor k = Tensor::zeros({B, n});
        const bool holes = coin(0.3);
        for (int64_t b = 0; b < B; ++b) {
            const int64_t len = coin(0.2) ? 0 : size(1, n);
            for (int64_t l = 0; l < n; ++l) k[b * n + l] = holes ? (coin(0.6) ? 1 : 0) : (l < len ? 1 : 0);
        }
        return k;
    }
    // Rows of x (B×n×d) that the keep mask hides, set to NaN: the padding rule's promise.
    Tensor with_nan_where_hidden(Tensor x, const Tensor& keep) {
        const int64_t B = x.size(0), n = x.size(1), d = x.size(2);
        for (int64_t b = 0; b < B; ++b)
            for (int64_t l = 0; l < n; ++l)
                if (keep[b * n + l] == 0)
                    for (int64_t j = 0; j < d; ++j) x[(b * n + l) * d + j] = std::numeric_limits<real>::quiet_NaN();
        return x;
    }
    Activation activation() {
        const int k = static_cast<int>(gen.randint(3));
        return k == 0 ? Activation::tanh : k == 1 ? Activation::relu : Activation::sigmoid;
    }
};

// Σ y ⊙ w for fixed random w: every element of y reaches the gradient with its own weight.
Var weighted(const Var& y, Draw& d) { return sum(y * Var(d.normal(y.shape()))); }

// The module's parameters and their gradients.
void parameters(Record& rec, const Module& m) {
    for (const auto& [name, v] : m.named_parameters()) {
        rec.add(v.value());
        rec.grad(v);
    }
}

// Parameters moved away from their initial values, so that none is zero.
void shake(Module& m, Draw& d) {
    for (auto [name, v] : m.named_parameters()) v.value().copy_(attn::add(v.value(), d.normal(v.shape(), 0.5)));
}

// ---- 0.1, 0.2: the tensor layer's loops --------------------------------------------------------
real plus(real x, real y) { return x + y; }
real minus(real x, real y) { return x - y; }
real times(real x, real y) { return x * y; }
real lopsided(real x, real y) { return x - 2 * y; }

void broadcast(Record& rec, Draw& d) {
    // ranks 0–4, each axis of the output a size 1–3, each input's axis that size or 1
    const int rank = static_cast<int>(d.size(0, 4)), ra = static_cast<int>(d.size(0, rank)), rb = static_cast<int>(d.size(0, rank));
    std::vector<int64_t> out(static_cast<size_t>(rank));
    for (int64_t& s : out) s = d.size(1, 3);
    auto shape_of = [&](int r) {
        std::vector<int64_t> s;
        for (int i = rank - r; i < rank; ++i) s.push_back(d.coin(0.3) ? 1 : out[static_cast<size_t>(i)]);
        return Shape(s);
    };
    Shape a = shape_of(ra), b = shape_of(rb);
    if (d.wrong_shape) {  // last axes of sizes s and s + 1 ≥ 2: they do not broadcast
        const int64_t s = d.size(2, 3);
        a = d.coin() ? Shape{s} : Shape{2, s};
        b = d.coin() ? Shape{s + 1} : Shape{1, s + 1};
    }
    real (*const f[])(real, real) = {plus, minus, times, lopsided};
    const auto op = f[d.gen.randint(4)];
    const Tensor x = d.normal(a), y = d.normal(b);
    rec.guarded([&] { rec.add(reference::binary(x, y, op)); });
}

void axis_sum(Record& rec, Draw& d) {
    const int rank = static_cast<int>(d.size(0, 4));
    std::vector<int64_t> s(static_cast<size_t>(rank));
    for (int64_t& v : s) v = d.size(1, 4);
    const Tensor x = d.normal(Shape(s));
    for (int k = 0; k < 3; ++k) {
        const int axis = static_cast<int>(d.size(-rank - 1, rank));  // out of range now and then
        const bool keepdim = d.coin();
        rec.guarded([&] { rec.add(reference::sum(x, axis, keepdim)); });
    }
}

// ---- 1.1, 1.3, 1.4: backward functions ---------------------------------------------------------
// The op in graphs that use its input twice (two consumers hand in their
// gradients), its output twice, its input as a constant next to a variable.
void sigmoid_backward(Record& rec, Draw& d) {
    const int rank = static_cast<int>(d.size(1, 3));
    std::vector<int64_t> s(static_cast<size_t>(rank));
    for (int64_t& v : s) v = d.size(1, 3);
    const double scale = d.coin(0.3) ? 8 : 1.5;
    Var x(d.normal(Shape(s), scale), true), w(d.normal(Shape(s)), true);
    const int graph = static_cast<int>(d.gen.randint(5));
    rec.guarded([&] {
        Var y;
        if (graph == 0) y = sigmoid(x);
        else if (graph == 1) y = sigmoid(x) * sigmoid(x * 0.5);   // x reaches the loss by two sigmoids
        else if (graph == 2) y = x * w + sigmoid(x);              // and by another op
        else if (graph == 3) y = sigmoid(sigmoid(x)) * sigmoid(x);  // σ used twice
        else y = sigmoid(Var(x.value())) * w;                     // a constant input
        weighted(y, d).backward();
        rec.grad(x);
        rec.grad(w);
    });
}

void softmax_backward(Record& rec, Draw& d) {
    const int rank = static_cast<int>(d.size(1, 4));
    std::vector<int64_t> s(static_cast<size_t>(rank));
    for (int64_t& v : s) v = d.size(1, 4);
    const Shape shape(s);
    const int axis = static_cast<int>(d.size(-rank, rank - 1));
    Var x(d.normal(shape, 2), true), w(d.normal(shape), true);
    SoftmaxMask mask;
    if (d.coin(0.4)) {
        Tensor keep = Tensor::empty(shape);
        for (int64_t i = 0; i < keep.numel(); ++i) keep[i] = d.coin(0.7) ? 1 : 0;
        mask = SoftmaxMask::keep(keep);
    }
    const int graph = static_cast<int>(d.gen.randint(4));
    rec.guarded([&] {
        Var y;
        if (graph == 0) y = softmax(x, axis, mask);
        else if (graph == 1) y = softmax(x, axis, mask) * softmax(x * 2.0, axis, mask);
        else if (graph == 2) y = x * w + softmax(x, axis, mask);
        else y = softmax(Var(x.value()), axis, mask) * w;
        weighted(y, d).backward();
        rec.grad(x);
        rec.grad(w);
    });
}

void matmul_backward(Record& rec, Draw& d) {
    const int64_t M = d.size(1, 4), N = d.size(1, 4), K = d.size(1, 4);
    const bool ta = d.coin(), tb = d.coin();
    // batch axes: none, one side's, both, or broadcast in part
    std::vector<int64_t> ba, bb;
    const int batch = static_cast<int>(d.gen.randint(5));
    if (batch == 1) ba = {2};
    if (batch == 2) bb = {3};
    if (batch == 3) ba = bb = {2};
    if (batch == 4) ba = {2, 1}, bb = {3};
    auto with = [](std::vector<int64_t> s, int64_t r, int64_t c) {
        s.push_back(r);
        s.push_back(c);
        return Shape(s);
    };
    Var a(d.normal(ta ? with(ba, K, M) : with(ba, M, K)), true), b(d.normal(tb ? with(bb, N, K) : with(bb, K, N)), true);
    const int graph = static_cast<int>(d.gen.randint(5));
    rec.guarded([&] {
        Var y;
        if (graph == 0) y = matmul(a, b, ta, tb);
        else if (graph == 1) y = matmul(Var(a.value()), b, ta, tb);  // a constant
        else if (graph == 2) y = matmul(a, Var(b.value()), ta, tb);  // b constant
        else if (graph == 3) y = matmul(a, b, ta, tb) * 2.0 + matmul(a * 0.5, b, ta, tb);  // two consumers each
        else {
            Var x(d.normal(Shape{M, K}), true);  // x·xᵀ, one input on both sides
            y = matmul(x, x, false, true) + matmul(x * 1.0, x, false, true);
            weighted(y, d).backward();
            rec.grad(x);
            return;
        }
        weighted(y, d).backward();
        rec.grad(a);
        rec.grad(b);
    });
}

// ---- 1.2: the engine ---------------------------------------------------------------------------
// A random DAG of element-wise ops over a few leaves (some constants), nodes
// used by several later ones; then backward() through it, and a second
// backward() through the freed graph.
void engine_order(Record& rec, Draw& d) {
    const int leaves = static_cast<int>(d.size(1, 4));
    std::vector<Var> nodes, inputs;
    for (int i = 0; i < leaves; ++i) {
        Var v(d.normal(Shape{2}), d.coin(0.8));
        nodes.push_back(v);
        inputs.push_back(v);
    }
    const int ops = static_cast<int>(d.size(1, 25));
    for (int k = 0; k < ops; ++k) {
        const Var& p = nodes[d.gen.randint(nodes.size())];
        const Var& q = nodes[d.gen.randint(nodes.size())];
        const int op = static_cast<int>(d.gen.randint(5));
        if (op == 4) {  // a node of many inputs: more than a node keeps inline
            std::vector<Var> parts;
            for (int j = 0, n = static_cast<int>(d.size(2, 6)); j < n; ++j) parts.push_back(nodes[d.gen.randint(nodes.size())]);
            const Var c = concat(parts, 0);
            nodes.push_back(reshape(sum(reshape(c, {static_cast<int64_t>(parts.size()), 2}), 0), {2}));
            continue;
        }
        nodes.push_back(op == 0 ? p + q : op == 1 ? p * q * 0.5 : op == 2 ? tanh(p) : p - q * 0.25);
    }
    rec.guarded([&] {
        Var y = sum(nodes.back());
        if (d.coin(0.5)) y = y + sum(nodes[nodes.size() / 2]);
        if (!y.requires_grad()) {
            rec.add(y.value());
            return;
        }
        y.backward();
        for (const Var& v : inputs) rec.grad(v);
    });
    rec.guarded([&] {  // through the freed graph again: refused
        Var z = sum(nodes.back());
        if (z.requires_grad()) z.backward();
        rec.add(1);
    });
    if (d.coin(0.1)) {  // deep: a chain of 20,000
        rec.guarded([&] {
            Var x(Tensor::from({1.0}), true);
            Var z = x;
            for (int k = 0; k < 20000; ++k) z = z * 1.0 + 0.5;
            z.backward();
            rec.grad(x);
        });
    }
}

// ---- 1.5, 1.6, 1.7: the layers' formulas -------------------------------------------------------
void gru_gates_probe(Record& rec, Draw& d) {
    const int64_t B = d.size(1, 3), H = d.size(1, 4);
    // now and then a shape that does not fit
    const int64_t wrong = d.wrong_shape ? d.size(1, 2) : 0;
    Var gi(d.normal(Shape{B, 3 * H + wrong}), true), gh(d.normal(Shape{B, 3 * H}), true), h(d.normal(Shape{B, H}), true);
    rec.guarded([&] {
        const Var y = gru_gates(gi, gh, h);
        rec.add(y.value());
        weighted(y, d).backward();
        rec.grad(gi);
        rec.grad(gh);
        rec.grad(h);
    });
}

void layer_norm_probe(Record& rec, Draw& d) {
    const int rank = static_cast<int>(d.size(1, 3));
    std::vector<int64_t> s(static_cast<size_t>(rank));
    for (int64_t& v : s) v = d.size(1, 4);
    const int64_t D = s.back();
    Var x(d.normal(Shape(s), d.coin(0.2) ? 1e-3 : 2), true);
    Var w = d.coin(0.7) ? Var(d.normal(Shape{D}), true) : Var();
    Var b = d.coin(0.7) ? Var(d.normal(Shape{D}), true) : Var();
    if (d.wrong_shape) w = Var(d.normal(Shape{D + 1}), true);  // refused
    const real eps = static_cast<real>(d.coin() ? 1e-5 : d.gen.uniform(0.01, 1));
    rec.guarded([&] {
        const Var y = layer_norm(x, w, b, eps);
        rec.add(y.value());
        weighted(y, d).backward();
        rec.grad(x);
        if (w.defined()) rec.grad(w);
        if (b.defined()) rec.grad(b);
    });
}

void adam_probe(Record& rec, Draw& d) {
    AdamOptions o;
    o.lr = d.gen.uniform(0.001, 0.2);
    o.beta1 = d.coin(0.2) ? 0 : d.gen.uniform(0.3, 0.95);
    o.beta2 = d.gen.uniform(0.5, 0.999);
    o.eps = d.coin() ? 1e-8 : d.gen.uniform(1e-4, 0.1);
    o.weight_decay = d.coin(0.5) ? 0 : d.gen.uniform(0.01, 0.5);
    o.amsgrad = d.coin(0.4);
    const bool decoupled = d.coin(0.4);
    const Shape shape{d.size(1, 3), d.size(1, 4)};
    Var p(d.normal(shape), true), q(d.normal(Shape{d.size(1, 3)}), true);
    std::unique_ptr<Optimizer> opt;
    if (decoupled) opt = std::make_unique<AdamW>(std::vector<Var>{p, q}, o);
    else opt = std::make_unique<Adam>(std::vector<Var>{p, q}, o);
    const int steps = static_cast<int>(d.size(1, 5));
    rec.guarded([&] {
        for (int t = 0; t < steps; ++t) {
            opt->zero_grad();
            const double scale = t % 2 ? 0.1 : 3;  // shrinking and growing gradients: AMSGrad's maximum
            Tensor g = d.normal(shape, scale);
            if (d.coin(0.2)) g = Tensor::zeros(shape);
            (sum(p * Var(g)) + sum(q * q)).backward();
            opt->step();
            rec.add(p.value());
            rec.add(q.value());
        }
    });
}

// ---- 3.4: REINFORCE ----------------------------------------------------------------------------
void reinforce_probe(Record& rec, Draw& d) {
    const int64_t B = d.size(1, 3), n = d.size(1, 4);
    Tensor valid = d.key_keep(B, n), z = Tensor::empty({B, n});
    for (int64_t i = 0; i < z.numel(); ++i) z[i] = valid[i] != 0 && d.coin() ? 1 : 0;  // (padding is never selected)
    Var s(d.normal(Shape{B, n}, d.coin(0.3) ? 30 : 1.5), true);
    const Tensor task = d.normal(Shape{d.wrong_shape ? B + 1 : B});
    const real sparsity = static_cast<real>(d.gen.uniform(0, 1)), baseline = static_cast<real>(d.gen.uniform(-1, 1));
    rec.guarded([&] {
        const ReinforcedAlignment::Selection sel = ReinforcedAlignment::score_selection(s, valid, z);
        rec.add(sel.probs.value());
        rec.add(sel.log_prob.value());
        rec.add(sel.kept);
        Var loss = ReinforcedAlignment::policy_loss(sel, task, sparsity, baseline);
        rec.add(loss.value());
        loss.backward();
        rec.grad(s);
    });
}

// ---- 2.1 – 3.3: mechanisms ---------------------------------------------------------------------
void additive_score_probe(Record& rec, Draw& d) {
    const int64_t B = d.size(1, 2), m = d.size(1, 3), n = d.size(1, 4), dq = d.size(1, 4), dk = d.size(1, 4),
                  dw = d.size(1, 4);
    AdditiveScore score(dq, dk, dw, d.gen, d.activation(), d.coin(0.7));
    shake(score, d);
    Var q(d.normal(Shape{B, m, d.wrong_shape ? dq + 1 : dq}), true), k(d.normal(Shape{B, n, dk}), true);
    const bool projected = d.coin(0.4);
    rec.guarded([&] {
        const Var e = projected ? score.score_projected(q, score.project_keys(k)) : score.score(q, k);
        rec.add(e.value());
        weighted(e, d).backward();
        rec.grad(q);
        rec.grad(k);
        parameters(rec, score);
    });
}

void local_monotonic_probe(Record& rec, Draw& d) {
    const int64_t B = d.size(1, 3), m = d.size(1, 4), n = d.size(1, 5), D = d.size(0, n + 1);
    Var e(d.normal(Shape{B, m, n}, 2), true);
    Tensor positions;
    const int kind = static_cast<int>(d.gen.randint(4));
    if (kind > 0) {
        positions = Tensor::empty({B, m});
        for (int64_t i = 0; i < positions.numel(); ++i)
            positions[i] = static_cast<real>(kind == 1   ? static_cast<double>(d.size(0, n - 1))  // whole
                                              : kind == 2 ? d.gen.uniform(0, static_cast<double>(n - 1))  // fractional
                                                          : d.gen.uniform(-2, static_cast<double>(n + 1)));  // beyond the ends
    }
    if (d.wrong_shape) positions = Tensor::zeros({B, m + 1});  // refused
    const Tensor keep = d.coin(0.6) ? d.key_keep(B, n) : Tensor();
    LocalMonotonicAlignment align(D);
    rec.guarded([&] {
        const Var a = align.align({e, keep.defined() ? key_mask(keep) : Tensor(), Var(), positions});
        rec.add(a.value());
        weighted(a, d).backward();
        rec.grad(e);
    });
}

// Masks a mechanism takes: none, B×n padding (as key_mask), B×m×n per query, m×n shared.
Tensor mechanism_mask(Draw& d, int64_t B, int64_t m, int64_t n, Tensor* padding) {
    const int kind = static_cast<int>(d.gen.randint(4));
    if (kind == 0) return Tensor();
    if (kind == 1) {
        *padding = d.key_keep(B, n);
        return key_mask(*padding);
    }
    Tensor mask = Tensor::empty(kind == 2 ? Shape{B, m, n} : Shape{m, n});
    for (int64_t i = 0; i < mask.numel(); ++i) mask[i] = d.coin(0.7) ? 1 : 0;
    return mask;
}

void multi_dimensional_probe(Record& rec, Draw& d) {
    const int64_t B = d.size(1, 2), m = d.size(1, 3), n = d.size(1, 4), dq = d.size(1, 3), dk = d.size(1, 3),
                  dw = d.size(1, 3), dv = d.size(1, 3);
    MultiDimensionalAttention att(dq, dk, dw, dv, d.gen, d.activation());
    shake(att, d);
    Tensor padding;
    const Tensor mask = mechanism_mask(d, B, m, n, &padding);
    Tensor K = d.normal(Shape{B, n, dk}), V = d.normal(Shape{B, n, d.wrong_shape ? dv + 1 : dv});
    if (padding.defined() && d.coin()) K = d.with_nan_where_hidden(K, padding), V = d.with_nan_where_hidden(V, padding);
    Var q(d.normal(Shape{B, m, dq}), true), k(K, true), v(V, true);
    rec.guarded([&] {
        const AttentionOutput out = att.forward(q, k, v, mask);
        rec.add(out.output.value());
        rec.add(out.weights.value());
        weighted(out.output, d).backward();
        rec.grad(q);
        rec.grad(k);
        rec.grad(v);
        parameters(rec, att);
    });
}

void multi_head_probe(Record& rec, Draw& d) {
    const int64_t B = d.size(1, 2), h = d.size(1, 3), w = d.size(1, 2), m = d.size(1, 4);
    const bool self = d.coin(0.4);
    const int64_t n = self ? m : d.size(1, 4), d_model = h * w;
    MultiHeadAttention::Options o;
    o.bias = d.coin();
    if (d.coin(0.3)) o.d_k = d.size(1, 3), o.d_v = d.size(1, 3);
    MultiHeadAttention mha(d_model, h, d.gen, o);
    shake(mha, d);
    Tensor padding;
    const Tensor mask = mechanism_mask(d, B, m, n, &padding);
    const bool causal = self && d.coin(0.4);
    Tensor K = d.normal(Shape{B, n, d_model});
    if (padding.defined() && !self && d.coin()) K = d.with_nan_where_hidden(K, padding);
    Var q(d.normal(Shape{B, m, d_model}), true), k(K, true), v(d.normal(Shape{B, n, d_model}), true);
    rec.guarded([&] {
        const AttentionOutput out = self ? mha.forward(q, q, q, mask, causal) : mha.forward(q, k, v, mask, causal);
        rec.add(out.output.value());
        rec.add(out.weights.value());
        weighted(out.output, d).backward();
        rec.grad(q);
        if (!self) rec.grad(k), rec.grad(v);
        parameters(rec, mha);
    });
    // the helpers alone, on widths that are and are not a multiple of the heads
    rec.guarded([&] {
        const int64_t heads = d.size(1, 3), width = heads * d.size(1, 3) + (d.wrong_shape ? 1 : 0);
        Var x(d.normal(Shape{B, m, width}), true);
        const Var split = split_heads(x, heads);
        rec.add(split.value());
        const Var back = concat_heads(split * 2.0);
        rec.add(back.value());
        weighted(back, d).backward();
        rec.grad(x);
    });
}

void relative_position_probe(Record& rec, Draw& d) {
    const int64_t B = d.size(1, 2), n = d.size(1, 6), dm = d.size(1, 4), dz = d.size(1, 4), k = d.size(0, n + 1);
    RelativePositionSelfAttention att(dm, dz, k, d.gen);
    shake(att, d);
    Tensor padding;
    Tensor mask = mechanism_mask(d, B, n, n, &padding);
    if (d.coin(0.3)) mask = combine_masks(mask, causal_mask(n, n));
    Var x(d.normal(Shape{B, n, d.wrong_shape ? dm + 1 : dm}), true);
    rec.guarded([&] {
        rec.add(att.relative_index(n));
        const AttentionOutput out = att.forward(x, mask);
        rec.add(out.output.value());
        rec.add(out.weights.value());
        weighted(out.output, d).backward();
        rec.grad(x);
        parameters(rec, att);
    });
}

// ---- 4.1: the GEMM's micro-kernel --------------------------------------------------------------
// A, B and C each against an unreadable page (course/guard.hpp), after
// their last float or before their first: a read or write past either end
// crashes the draw, which the solution's never does.
void gemm_probe(Record& rec, Draw& d) {
    if (!gemm_path_supported(GemmPath::avx2)) return;
    set_num_threads(1);
    const int64_t M = d.coin(0.2) ? d.size(20, 120) : d.size(1, 20), N = d.coin(0.2) ? d.size(20, 120) : d.size(1, 40),
                  K = d.coin(0.2) ? d.size(100, 300) : d.size(1, 30);
    const bool ta = d.coin(), tb = d.coin();
    const float alpha = d.coin(0.5) ? 1.0f : static_cast<float>(d.gen.uniform(-2, 2));
    const int beta_kind = static_cast<int>(d.gen.randint(3));
    const float beta = beta_kind == 0 ? 0.0f : beta_kind == 1 ? 1.0f : static_cast<float>(d.gen.uniform(-2, 2));
    const int64_t ldc = N + (d.coin(0.3) ? d.size(1, 5) : 0);
    const int policy = static_cast<int>(d.gen.randint(3));
    gemm_internal::set_packing(policy == 0 ? gemm_internal::Packing::by_size
                               : policy == 1 ? gemm_internal::Packing::always : gemm_internal::Packing::never);
    const auto side = d.coin() ? GuardedFloats::Side::end : GuardedFloats::Side::start;
    GuardedFloats A(static_cast<size_t>(M * K), side), B(static_cast<size_t>(K * N), side),
        C(static_cast<size_t>(M * ldc), side);
    for (int64_t i = 0; i < M * K; ++i) A.data()[i] = static_cast<float>(d.gen.normal());
    for (int64_t i = 0; i < K * N; ++i) B.data()[i] = static_cast<float>(d.gen.normal());
    for (int64_t i = 0; i < M * ldc; ++i)
        C.data()[i] = beta == 0 || i % ldc >= N ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(d.gen.normal());
    rec.guarded([&] {
        gemm_with(GemmPath::avx2, ta, tb, M, N, K, alpha, A.data(), ta ? M : K, B.data(), tb ? K : N, beta, C.data(),
                  ldc);
        for (int64_t i = 0; i < M * ldc; ++i) {
            if (i % ldc < N) rec.add(C.data()[i]);
            else rec.add(std::isnan(C.data()[i]) ? 0.0 : 1.0);  // C's padding between rows untouched
        }
    });
    gemm_internal::set_packing(gemm_internal::Packing::by_size);
}

}  // namespace

std::vector<double> probe_entries(const std::vector<std::string>& ids, uint64_t draw) {
    using namespace attn::testing;
    Record rec;
    for (const std::string& id : ids) {
        const Entry* e = find_entry(id);
        if (!e) continue;
        for (size_t k = 0; k < e->cases.size(); ++k) {
            const Case& c = e->cases[k];
            rec.guarded([&] {
                const Prepared p(*e, c, 50000 + draw * 100 + k);
                std::vector<Var> x;
                for (const Tensor& t : p.inputs) x.emplace_back(t, true);
                const Outputs outs = p.run(x, c.masks);
                Generator weights(draw);
                Var loss;
                for (const Named& o : outs) {
                    rec.add(o.value.value());
                    if (!o.differentiable) continue;
                    const Var term = sum(o.value * Var(Tensor::normal(o.value.shape(), 0, 1, weights)));
                    loss = loss.defined() ? loss + term : term;
                }
                if (loss.defined() && loss.requires_grad()) loss.backward();
                for (const Var& v : x) rec.grad(v);
                if (p.module) parameters(rec, *p.module);
            });
        }
    }
    return rec.values;
}

std::vector<double> probe(const std::string& exercise, uint64_t draw) {
    Record rec;
    Draw d(draw);
    if (exercise == "broadcast") broadcast(rec, d);
    else if (exercise == "axis_sum") axis_sum(rec, d);
    else if (exercise == "sigmoid_backward") sigmoid_backward(rec, d);
    else if (exercise == "softmax_backward") softmax_backward(rec, d);
    else if (exercise == "matmul_backward") matmul_backward(rec, d);
    else if (exercise == "engine_order") engine_order(rec, d);
    else if (exercise == "gru_gates") gru_gates_probe(rec, d);
    else if (exercise == "layer_norm") layer_norm_probe(rec, d);
    else if (exercise == "adam") adam_probe(rec, d);
    else if (exercise == "reinforce") reinforce_probe(rec, d);
    else if (exercise == "additive_score") additive_score_probe(rec, d);
    else if (exercise == "local_monotonic") local_monotonic_probe(rec, d);
    else if (exercise == "multi_dimensional") multi_dimensional_probe(rec, d);
    else if (exercise == "multi_head") multi_head_probe(rec, d);
    else if (exercise == "relative_position") relative_position_probe(rec, d);
    else if (exercise == "gemm_kernel") gemm_probe(rec, d);
    else throw std::invalid_argument("no probe for exercise '" + exercise + "' (course/probes.cpp)");
    return rec.values;
}

}  // namespace attn::course
