// Values and gradients of the autograd ops on tiny inputs, against results
// worked out by hand (float build). The derivatives are checked exhaustively
// by finite differences in tests/grad/; these pin down the conventions.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>
#include <utility>

#include "autograd/ops.hpp"
#include "autograd/pool_kernels.hpp"
#include "tensor/fast_math.hpp"
#include "tensor/ops.hpp"
#include "tensor/parallel.hpp"
#include "tensor/profile.hpp"

using namespace attn;

namespace {

bool close(const Tensor& a, std::vector<real> expected, double tol = 1e-5) {
    if (static_cast<int64_t>(expected.size()) != a.numel()) return false;
    return allclose(a, Tensor::from(std::move(expected), a.shape()), tol, tol);
}

// A fused op against its composite twin: the same shape, every element within
// 1e-4 relative (plus 1e-4 absolute).
bool agree(const Tensor& a, const Tensor& b) {
    for (int64_t i = 0; i < a.numel(); ++i)
        if (std::fabs(a[i] - b[i]) > 1e-4f * (1 + std::fabs(a[i]))) return false;
    return a.shape() == b.shape();
}

Var param(std::vector<real> values, const Shape& shape) { return Var(Tensor::from(std::move(values), shape), true); }

const real kInf = std::numeric_limits<real>::infinity();

}  // namespace

TEST_CASE("autograd values: broadcasting binary ops sum their gradients back") {
    Var a = param({1, 2, 3, 4, 5, 6}, {2, 3});
    Var b = param({10, 20, 30}, {3});
    Var z = a * b - a / b;
    CHECK(z.shape() == Shape{2, 3});
    CHECK(close(z.value(), {9.9f, 39.9f, 89.9f, 39.6f, 99.75f, 179.8f}));
    sum(z).backward();
    // ∂/∂a = b − 1/b ; ∂/∂b = Σ_rows (a + a/b²)
    CHECK(close(a.grad(), {9.9f, 19.95f, 29.966667f, 9.9f, 19.95f, 29.966667f}));
    CHECK(close(b.grad(), {5 + 5 / 100.f, 7 + 7 / 400.f, 9 + 9 / 900.f}));
}

TEST_CASE("autograd values: unary functions and their slopes") {
    Var x = param({-1, 0.5f, 2}, {3});
    struct Case {
        const char* name;
        Var (*f)(const Var&);
        std::vector<real> value, slope;
    };
    const double t = std::tanh(0.5), s = 1 / (1 + std::exp(-0.5));
    const Case cases[] = {
        {"tanh", [](const Var& v) { return tanh(v); }, {-0.7615942f, float(t), 0.9640276f},
         {0.4199743f, float(1 - t * t), 0.0706508f}},
        {"sigmoid", [](const Var& v) { return sigmoid(v); }, {0.2689414f, float(s), 0.8807971f},
         {0.1966119f, float(s * (1 - s)), 0.1049936f}},
        {"relu", [](const Var& v) { return relu(v); }, {0, 0.5f, 2}, {0, 1, 1}},
        {"leaky_relu", [](const Var& v) { return leaky_relu(v, 0.1f); }, {-0.1f, 0.5f, 2}, {0.1f, 1, 1}},
        {"gelu", [](const Var& v) { return gelu(v); }, {-0.1586553f, 0.3457312f, 1.9544997f},
         {-0.0833155f, 0.8674940f, 1.0852318f}},
        {"softplus", [](const Var& v) { return softplus(v); }, {0.3132617f, 0.9740770f, 2.1269280f},
         {0.2689414f, float(s), 0.8807971f}},
        {"abs", [](const Var& v) { return abs(v); }, {1, 0.5f, 2}, {-1, 1, 1}},
        {"exp", [](const Var& v) { return exp(v); }, {0.3678794f, 1.6487213f, 7.3890561f},
         {0.3678794f, 1.6487213f, 7.3890561f}},
        {"square", [](const Var& v) { return square(v); }, {1, 0.25f, 4}, {-2, 1, 4}},
        {"clamp", [](const Var& v) { return clamp(v, 0, 1); }, {0, 0.5f, 1}, {0, 1, 0}},
        {"pow 3", [](const Var& v) { return pow(v, 3); }, {-1, 0.125f, 8}, {3, 0.75f, 12}},
    };
    for (const Case& c : cases) {
        INFO(c.name);
        Var y = c.f(x);
        CHECK(close(y.value(), c.value));
        x.zero_grad();
        sum(y).backward();
        CHECK(close(x.grad(), c.slope));
    }
    Var p = param({4, 0.25f}, {2});
    Var q = log(p) + sqrt(p);  // slopes 1/p + 1/(2√p)
    CHECK(close(q.value(), {std::log(4.f) + 2, std::log(0.25f) + 0.5f}));
    sum(q).backward();
    CHECK(close(p.grad(), {0.25f + 0.25f, 4 + 1}));
}

TEST_CASE("autograd values: minimum and maximum share a tie's gradient") {
    Var a = param({1, 5, 3}, {3}), b = param({2, 4, 3}, {3});
    Var z = maximum(a, b) + minimum(a, b) * real(10);
    CHECK(close(z.value(), {12, 45, 33}));
    sum(z).backward();
    CHECK(close(a.grad(), {10, 1, 5.5f}));
    CHECK(close(b.grad(), {1, 10, 5.5f}));
}

TEST_CASE("autograd values: reductions") {
    Var a = param({1, 5, 2, 8, 3, 4}, {2, 3});
    Var s = sum(a, 1);
    CHECK(close(s.value(), {8, 15}));
    Var m = mean(a, 0, true);
    CHECK(m.shape() == Shape{1, 3});
    CHECK(close(m.value(), {4.5f, 4, 3}));
    Var mx = max(a, 1);
    CHECK(close(mx.value(), {5, 8}));
    Var mn = min(a);
    CHECK(mn.shape() == Shape{});
    CHECK(mn.item() == 1);
    sum(s + mx * real(10)).backward();
    // ∂ from s: 1 everywhere; from max: 10 at each row's maximum
    CHECK(close(a.grad(), {1, 11, 1, 11, 1, 1}));

    Var l = param({0, std::log(3.f)}, {2});
    Var lse = logsumexp(l, 0);
    CHECK(lse.item() == doctest::Approx(std::log(4.0)));
    lse.backward();
    CHECK(close(l.grad(), {0.25f, 0.75f}));
}

TEST_CASE("autograd values: matmul, and its gradients through the transpose flags") {
    Var a = param({1, 2, 3, 4}, {2, 2});
    Var b = param({5, 6, 7, 8}, {2, 2});
    Var c = matmul(a, b);
    CHECK(close(c.value(), {19, 22, 43, 50}));
    sum(c).backward();
    CHECK(close(a.grad(), {11, 15, 11, 15}));  // g·bᵀ with g = ones: row sums of b
    CHECK(close(b.grad(), {4, 4, 6, 6}));      // aᵀ·g: column sums of a
    a.zero_grad();
    b.zero_grad();
    Var d = matmul(a, b, true, true);  // aᵀ·bᵀ = (b·a)ᵀ
    CHECK(close(d.value(), {23, 31, 34, 46}));
    sum(d).backward();
    CHECK(close(a.grad(), {12, 12, 14, 14}));  // op(b)·gᵀ = bᵀ·1
    CHECK(close(b.grad(), {3, 7, 3, 7}));      // gᵀ·op(a) = 1·aᵀ
    // A matrix shared by a batch collects the gradient of every batch element.
    Var w = param({1, 0, 0, 1}, {2, 2});
    Var xs(Tensor::ones(Shape{3, 2, 2}));
    sum(matmul(w, xs)).backward();
    CHECK(close(w.grad(), {6, 6, 6, 6}));
}

TEST_CASE("autograd values: matmul_bias against sums written out, and its errors") {
    // z = x·wᵀ + b with x 2×2 (as 1×2×2: the leading axes are rows), w 3×2 stored transposed, b 3.
    Var x = param({1, 2, 3, 4}, {1, 2, 2});
    Var w = param({1, 0, 0, 1, 1, 1}, {3, 2});
    Var b = param({10, 20, 30}, {3});
    Var z = matmul_bias(x, w, b, /*trans_w=*/true);
    CHECK(z.shape() == Shape{1, 2, 3});
    // row 1: (1, 2, 1 + 2) + b; row 2: (3, 4, 3 + 4) + b
    CHECK(close(z.value(), {11, 22, 33, 13, 24, 37}));
    // L = Σ r ⊙ z with r = (1 2 3; 4 5 6):
    //   ∂L/∂x = r·w = (1 + 3, 2 + 3; 4 + 6, 5 + 6), ∂L/∂w = rᵀ·x, ∂L/∂b = column sums of r
    const Var r(Tensor::from({1, 2, 3, 4, 5, 6}).reshape(Shape{1, 2, 3}));
    sum(z * r).backward();
    CHECK(close(x.grad(), {4, 5, 10, 11}));
    CHECK(close(w.grad(), {1 * 1 + 4 * 3, 1 * 2 + 4 * 4, 2 * 1 + 5 * 3, 2 * 2 + 5 * 4, 3 * 1 + 6 * 3, 3 * 2 + 6 * 4}));
    CHECK(close(b.grad(), {5, 7, 9}));
    // w stored k×n: the same product from wᵀ written out.
    Var wk = param({1, 0, 1, 0, 1, 1}, {2, 3});
    CHECK(close(matmul_bias(x, wk, b).value(), {11, 22, 33, 13, 24, 37}));
    // Shapes that do not fit are named, with the op.
    CHECK_THROWS_WITH(matmul_bias(x, w, b), "matmul_bias: x 1×2×2, w 3×2 and bias 3: need x …×k, op(w) k×n and bias n");
    CHECK_THROWS_WITH(matmul_bias(x, w, param({1, 2}, {2}), true),
                      "matmul_bias: x 1×2×2, w 3×2 (transposed) and bias 2: need x …×k, op(w) k×n and bias n");
}

TEST_CASE("autograd values: matmul_bias_relu against sums written out, and its errors") {
    // y = relu(x·wᵀ + b) with x 2×2 (as 1×2×2), w 3×2 stored transposed, b 3.
    Var x = param({1, 2, 3, 4}, {1, 2, 2});
    Var w = param({1, -1, 0, 1, -1, -1}, {3, 2});
    Var b = param({0.5, -2.5, 6}, {3});
    Var y = matmul_bias_relu(x, w, b, /*trans_w=*/true);
    CHECK(y.shape() == Shape{1, 2, 3});
    // before the ReLU: row 1 (1 − 2, 2, −1 − 2) + b = (−0.5, −0.5, 3); row 2 (3 − 4, 4, −3 − 4) + b = (−0.5, 1.5, −1)
    CHECK(close(y.value(), {0, 0, 3, 0, 1.5, 0}));
    // L = Σ r ⊙ y with r = (1 2 3; 4 5 6): the gradient through the ReLU is r where y > 0,
    // g = (0 0 3; 0 5 0); ∂L/∂x = g·w, ∂L/∂w = gᵀ·x (3×2), ∂L/∂b = column sums of g
    const Var r(Tensor::from({1, 2, 3, 4, 5, 6}).reshape(Shape{1, 2, 3}));
    sum(y * r).backward();
    CHECK(close(x.grad(), {3 * -1, 3 * -1, 5 * 0, 5 * 1}));
    CHECK(close(w.grad(), {0, 0, 5 * 3, 5 * 4, 3 * 1, 3 * 2}));
    CHECK(close(b.grad(), {0, 5, 3}));
    // w stored k×n: the same layer from wᵀ written out.
    Var wk = param({1, 0, -1, -1, 1, -1}, {2, 3});
    CHECK(close(matmul_bias_relu(x, wk, b).value(), {0, 0, 3, 0, 1.5, 0}));
    CHECK_THROWS_WITH(matmul_bias_relu(x, w, b),
                      "matmul_bias_relu: x 1×2×2, w 3×2 and bias 3: need x …×k, op(w) k×n and bias n");
    CHECK_THROWS_WITH(matmul_bias_relu(x, w, Var(), true), "matmul_bias_relu: x, w and bias must all be defined");
}

TEST_CASE("autograd values: matmul_bias_relu's gradients are the bits of relu(matmul_bias(...)), on 1 and 2 threads") {
    // 600 rows of 70 columns: the mask and the bias sums go in two blocks of
    // rows (tensor/row_blocks.hpp), over the threads on two: every gradient
    // equal to the two ops composed, bit for bit, whatever the thread count.
    Generator gen(31);
    const Tensor x = Tensor::normal({3, 200, 20}, 0, 1, gen), w = Tensor::normal({70, 20}, 0, 0.3, gen);
    const Tensor b = Tensor::normal({70}, 0, 0.3, gen), g = Tensor::normal({3, 200, 70}, 0, 1, gen);
    const int before = num_threads();
    for (int threads : {1, 2}) {
        set_num_threads(threads);
        CAPTURE(threads);
        Tensor got[4], want[4];
        for (bool fused : {true, false}) {
            Var xv(x.clone(), true), wv(w.clone(), true), bv(b.clone(), true);
            Var y = fused ? matmul_bias_relu(xv, wv, bv, true) : relu(matmul_bias(xv, wv, bv, true));
            y.backward(g);
            Tensor* out = fused ? got : want;
            out[0] = y.value(), out[1] = xv.grad(), out[2] = wv.grad(), out[3] = bv.grad();
        }
        for (int k = 0; k < 4; ++k) {
            CAPTURE(k);
            CHECK(std::equal(got[k].data(), got[k].data() + got[k].numel(), want[k].data()));
        }
    }
    set_num_threads(before);
}

TEST_CASE("autograd values: shape ops route gradients back") {
    Var a = param({1, 2, 3, 4, 5, 6}, {2, 3});
    Var t = transpose(a, 0, 1);
    CHECK(close(t.value(), {1, 4, 2, 5, 3, 6}));
    Var s = slice(a, 1, 0, 3, 2);  // columns 0 and 2
    CHECK(close(s.value(), {1, 3, 4, 6}));
    std::vector<Var> parts = split(a, {1, 2}, 1);
    CHECK(close(parts[1].value(), {2, 3, 5, 6}));
    Var c = concat({parts[1], parts[0]}, 1);
    CHECK(close(c.value(), {2, 3, 1, 5, 6, 4}));
    Var st = stack({a, a}, 0);
    CHECK(st.shape() == Shape{2, 2, 3});
    Var e = expand(reshape(a, {2, 3, 1}), Shape{2, 3, 2});
    CHECK(close(e.value(), {1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6}));
    sum(t * real(1) + reshape(c, {3, 2}) * real(0)).backward();
    CHECK(close(a.grad(), {1, 1, 1, 1, 1, 1}));
    a.zero_grad();
    sum(s * real(10)).backward();
    CHECK(close(a.grad(), {10, 0, 10, 10, 0, 10}));
    a.zero_grad();
    sum(e).backward();
    CHECK(close(a.grad(), {2, 2, 2, 2, 2, 2}));
    a.zero_grad();
    sum(narrow(permute(st, {1, 0, 2}), 2, 1, 1)).backward();  // column 1 of both copies
    CHECK(close(a.grad(), {0, 2, 0, 0, 2, 0}));
}

TEST_CASE("autograd values: indexing ops scatter gradients back, repeated indices add up") {
    Var table = param({0, 1, 10, 11, 20, 21}, {3, 2});
    Var e = embedding(table, Tensor::from({2, 0, 2}, Shape{3}));
    CHECK(e.shape() == Shape{3, 2});
    CHECK(close(e.value(), {20, 21, 0, 1, 20, 21}));
    sum(e).backward();
    CHECK(close(table.grad(), {1, 1, 0, 0, 2, 2}));

    Var a = param({1, 2, 3, 4}, {2, 2});
    Var g = gather(a, 1, Tensor::from({1, 1, 0, 1}, Shape{2, 2}));
    CHECK(close(g.value(), {2, 2, 3, 4}));
    Var f = masked_fill(a, Tensor::from({0, 1}, Shape{2}), -9);
    CHECK(close(f.value(), {1, -9, 3, -9}));
    Var w = where(Tensor::from({1, 0}, Shape{2, 1}), a, Var(Tensor::scalar(7)));
    CHECK(close(w.value(), {1, 2, 7, 7}));
    sum(g + f + w).backward();
    CHECK(close(a.grad(), {0 + 1 + 1, 2 + 0 + 1, 1 + 1 + 0, 1 + 0 + 0}));  // gather + masked_fill + where
    Var oh(one_hot(Tensor::from({2, 0}), 3));
    CHECK(close(oh.value(), {0, 0, 1, 1, 0, 0}));
}

TEST_CASE("autograd values: a large embedding gradient split over the threads, repeated indices, the same bits") {
    // W3's table (20000×200) and batch of 4096 word positions, many repeated,
    // some at the table's first and last rows and where two threads' row
    // ranges meet: large enough that the scatter is split over the threads
    // by destination row.
    Generator gen(13);
    const int64_t V = 20000, D = 200, P = 4096;
    Tensor ids = Tensor::empty(Shape{P});
    for (int64_t p = 0; p < P; ++p) ids[p] = static_cast<real>(p % 7 == 0 ? 17 : p % 11 == 0 ? V - 1 : gen.randint(V));
    ids[0] = 0, ids[1] = V / 2, ids[2] = V / 2 - 1, ids[3] = V / 2;  // where two threads' ranges meet
    const Tensor table0 = Tensor::normal(Shape{V, D}, 0, 1, gen), up = Tensor::normal(Shape{P, D}, 0, 1, gen);
    // the reference: the upstream rows added into their table rows in order, in double
    std::vector<double> want(static_cast<size_t>(V * D), 0);
    for (int64_t p = 0; p < P; ++p)
        for (int64_t j = 0; j < D; ++j)
            want[static_cast<size_t>(static_cast<int64_t>(ids[p]) * D + j)] += up[p * D + j];
    Tensor grads[2];
    const int before = num_threads();
    for (int k = 0; k < 2; ++k) {
        set_num_threads(k + 1);
        Var table(table0.clone(), true);
        embedding(table, ids).backward(up);
        grads[k] = table.grad();
    }
    set_num_threads(before);
    CHECK(allclose(grads[0], grads[1], 0, 0));
    double worst = 0;
    for (int64_t i = 0; i < V * D; ++i) worst = std::max(worst, std::abs(grads[1][i] - want[static_cast<size_t>(i)]));
    CHECK(worst < 1e-4);
}

TEST_CASE("autograd values: softmax with masks; a fully masked row gives zeros, never NaN") {
    using Softmax = Var (*)(const Var&, int, const SoftmaxMask&);
    for (Softmax f : {Softmax(softmax), Softmax(softmax_fused)}) {  // the readable one and its fast twin
        Var x = param({0, std::log(3.f), 5, 1, 2, 3}, {2, 3});
        const Tensor keep = Tensor::from({1, 1, 0, 0, 0, 0}, Shape{2, 3});  // row 1 fully masked
        Var p = f(x, -1, SoftmaxMask::keep(keep));
        CHECK(close(p.value(), {0.25f, 0.75f, 0, 0, 0, 0}));
        sum(p).backward();
        CHECK(close(x.grad(), {0, 0, 0, 0, 0, 0}));  // Σ of a softmax row is constant
        x.zero_grad();
        Var q = f(x, -1, SoftmaxMask::keep(keep));
        q.backward(Tensor::from({1, 0, 0, 1, 1, 1}, Shape{2, 3}));
        // ∂p₀/∂x₀ = p₀(1 − p₀) = 0.1875, ∂p₀/∂x₁ = −p₀p₁ = −0.1875
        CHECK(close(x.grad(), {0.1875f, -0.1875f, 0, 0, 0, 0}));
        for (int64_t i = 0; i < 6; ++i) CHECK_FALSE(std::isnan(x.grad()[i]));
        // Along axis 0 of a 3×2 (columns the slices): column 0 is (1, 3, 0) / 4 with
        // upstream (0, 1, 0): ∂p₁/∂x = (−p₀p₁, p₁(1 − p₁), −p₂p₁) = (−0.1875, 0.1875, 0);
        // column 1 takes no gradient.
        Var c = param({0, 7, std::log(3.f), -1, -100, 2}, {3, 2});
        f(c, 0, SoftmaxMask::keep(Tensor::from({1, 1, 1, 1, 0, 1}, Shape{3, 2})))
            .backward(Tensor::from({0, 0, 1, 0, 0, 0}, Shape{3, 2}));
        CHECK(close(c.grad(), {-0.1875f, 0, 0.1875f, 0, 0, 0}));
    }

    Var y = param({1, 2, 3}, {3});
    Var r = softmax(y, 0, SoftmaxMask::additive(Tensor::from({0, -kInf, 0})));
    CHECK(close(r.value(), {0.1192029f, 0, 0.8807971f}));
    Var lr = log_softmax(y, 0, SoftmaxMask::keep(Tensor::from({1, 0, 1})));
    CHECK(std::as_const(lr).value()[1] == -kInf);
    CHECK(std::as_const(lr).value()[0] == doctest::Approx(std::log(0.1192029)));
    lr.backward(Tensor::from({1, 5, 0}));  // the masked position's gradient is dropped
    CHECK(close(y.grad(), {1 - 0.1192029f, 0, -0.8807971f}));
}

TEST_CASE("autograd values: cross_entropy with ignore_index and label smoothing") {
    Var logits = param({0, 0, 1, 2, 3, 4}, {3, 2});
    // rows: [0,0] target 1 → ln 2; [1,2] target ignored; [3,4] target 0 → ln(1 + e)
    const Tensor targets = Tensor::from({1, -100, 0});
    Var loss = cross_entropy(logits, targets);
    const double l1 = std::log(2.0), l3 = std::log(1 + std::exp(1.0));
    CHECK(loss.item() == doctest::Approx((l1 + l3) / 2));
    loss.backward();
    const float p = float(1 / (1 + std::exp(1.0)));  // softmax([3, 4])[0]
    CHECK(close(logits.grad(), {0.25f, -0.25f, 0, 0, (p - 1) / 2, (1 - p) / 2}));

    Var z = param({0, 0}, {1, 2});
    Var smoothed = cross_entropy(z, Tensor::from({0}, Shape{1}), -100, 0.2f);
    CHECK(smoothed.item() == doctest::Approx(std::log(2.0)));  // uniform logits: ln 2 whatever the target
    smoothed.backward();
    CHECK(close(z.grad(), {0.5f - 0.9f, 0.5f - 0.1f}));  // p − q, q = (0.9, 0.1)

    Var all_ignored = param({1, 2}, {1, 2});
    Var zero = cross_entropy(all_ignored, Tensor::from({-100}, Shape{1}));
    CHECK(zero.item() == 0);
    zero.backward();
    CHECK(close(all_ignored.grad(), {0, 0}));
}

TEST_CASE("autograd values: conv2d, max_pool2d and avg_pool2d on a 3×3 image") {
    Var x = param({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
    Var w = param({1, 1, 1, 1}, {1, 1, 2, 2});
    Var b = param({0.5f}, {1});
    Var y = conv2d(x, w, b);
    CHECK(y.shape() == Shape{1, 1, 2, 2});
    CHECK(close(y.value(), {12.5f, 16.5f, 24.5f, 28.5f}));
    sum(y).backward();
    CHECK(close(x.grad(), {1, 2, 1, 2, 4, 2, 1, 2, 1}));  // how many windows cover each pixel
    CHECK(close(w.grad(), {12, 16, 24, 28}));
    CHECK(close(b.grad(), {4}));

    Var padded = conv2d(x, w, Var(), 2, 1);  // windows at −1, 1 in each direction
    CHECK(close(padded.value(), {1, 5, 11, 28}));

    x.zero_grad();
    Var mp = max_pool2d(x, 2, 1);
    CHECK(close(mp.value(), {5, 6, 8, 9}));
    sum(mp).backward();
    CHECK(close(x.grad(), {0, 0, 0, 0, 1, 1, 0, 1, 1}));

    x.zero_grad();
    Var ap = avg_pool2d(x, 2, 1);
    CHECK(close(ap.value(), {3, 4, 6, 7}));
    sum(ap).backward();
    CHECK(close(x.grad(), {0.25f, 0.5f, 0.25f, 0.5f, 1, 0.5f, 0.25f, 0.5f, 0.25f}));
    CHECK(close(max_pool2d(x, 2, 2, 1).value(), {1, 3, 7, 9}));
}

// A window walk for the unfold and pooling tests: C planes of H×W, a kh×kw
// window moved by (sh, sw) over the input padded by (ph, pw); Ho×Wo windows.
struct WindowCase {
    int64_t C, H, W, kh, kw, sh, sw, ph, pw;
    int64_t Ho() const { return (H + 2 * ph - kh) / sh + 1; }
    int64_t Wo() const { return (W + 2 * pw - kw) / sw + 1; }
};
// Windows that fit, overhang by a row or a column, skip input (stride > kernel
// width), or see a whole padded border; 2×2 stride 2 is the W4 pool (and
// max_pool2d's own path for it), also over odd sizes that leave a row and a
// column out.
const WindowCase kWindowCases[] = {{2, 8, 8, 2, 2, 2, 2, 0, 0}, {3, 7, 9, 2, 2, 2, 2, 0, 0}, {2, 4, 70, 2, 2, 2, 2, 0, 0},
                                   {1, 5, 67, 2, 2, 2, 2, 0, 0}, {1, 5, 4, 3, 3, 2, 2, 1, 1}, {2, 6, 7, 3, 3, 1, 1, 1, 1},
                                   {3, 4, 5, 2, 3, 1, 2, 0, 1}, {1, 3, 3, 3, 5, 1, 3, 1, 2}, {2, 2, 2, 1, 1, 1, 1, 0, 0},
                                   {1, 7, 5, 4, 2, 3, 1, 2, 1}, {1, 3, 3, 3, 3, 1, 1, 1, 1}};

TEST_CASE("autograd values: unfold and its backward (fold) match the formula on strided, padded windows") {
    // z[b, c·kh·kw + i·kw + j, oh·Wo + ow] = x[b, c, oh·sh − ph + i, ow·sw − pw + j], 0 in the padding
    for (const WindowCase& g : kWindowCases) {
        const int64_t B = 2, Ho = g.Ho(), Wo = g.Wo();
        Generator gen(7);
        Var x(Tensor::normal(Shape{B, g.C, g.H, g.W}, 0, 1, gen), true);
        Var z = unfold(x, Size2(g.kh, g.kw), Size2(g.sh, g.sw), Size2(g.ph, g.pw));
        REQUIRE(z.shape() == Shape{B, g.C * g.kh * g.kw, Ho * Wo});
        const Tensor up = Tensor::normal(z.shape(), 0, 1, gen);
        z.backward(up);
        Tensor want_dx = Tensor::zeros(x.shape());
        int bad = 0;
        for (int64_t b = 0; b < B; ++b)
            for (int64_t c = 0; c < g.C; ++c)
                for (int64_t i = 0; i < g.kh; ++i)
                    for (int64_t j = 0; j < g.kw; ++j)
                        for (int64_t oh = 0; oh < Ho; ++oh)
                            for (int64_t ow = 0; ow < Wo; ++ow) {
                                const int64_t y = oh * g.sh - g.ph + i, xx = ow * g.sw - g.pw + j;
                                const bool inside = y >= 0 && y < g.H && xx >= 0 && xx < g.W;
                                const int64_t zi = ((b * g.C + c) * g.kh * g.kw + i * g.kw + j) * Ho * Wo + oh * Wo + ow;
                                const int64_t xi = ((b * g.C + c) * g.H + y) * g.W + xx;
                                if (z.value()[zi] != (inside ? x.value()[xi] : 0)) ++bad;
                                if (inside) want_dx[xi] += up[zi];
                            }
        CHECK(bad == 0);
        for (int64_t k = 0; k < x.numel(); ++k) CHECK(x.grad()[k] == doctest::Approx(want_dx[k]).epsilon(1e-6));
    }
}

TEST_CASE("autograd values: max_pool2d matches a brute-force maximum on strided, padded windows, ties included") {
    // z = the maximum of the window's elements inside the input; the gradient
    // goes to the first of them (in row-major window order) holding it. Both
    // the default loop over each window and the fast 2×2 rows.
    for (const bool fast : {false, true})
    for (const WindowCase& g : kWindowCases) {
        INFO("fast " << fast << ", kernel " << g.kh << "×" << g.kw << ", stride " << g.sh << "×" << g.sw);
        const int64_t B = 2, Ho = g.Ho(), Wo = g.Wo();
        // Small whole numbers, so that most windows hold ties.
        Generator gen(5);
        Tensor xv = Tensor::uniform(Shape{B, g.C, g.H, g.W}, 0, 4, gen);
        for (int64_t k = 0; k < xv.numel(); ++k) xv[k] = std::floor(xv[k]);
        Var x(xv, true);
        Var z = max_pool2d(x, Size2(g.kh, g.kw), Size2(g.sh, g.sw), Size2(g.ph, g.pw), fast);
        REQUIRE(z.shape() == Shape{B, g.C, Ho, Wo});
        const Tensor up = Tensor::normal(z.shape(), 0, 1, gen);
        z.backward(up);
        Tensor want_dx = Tensor::zeros(x.shape());
        int bad = 0;
        for (int64_t bc = 0; bc < B * g.C; ++bc)
            for (int64_t oh = 0; oh < Ho; ++oh)
                for (int64_t ow = 0; ow < Wo; ++ow) {
                    real best = -std::numeric_limits<real>::infinity();
                    int64_t at = -1;
                    for (int64_t i = 0; i < g.kh; ++i)
                        for (int64_t j = 0; j < g.kw; ++j) {
                            const int64_t y = oh * g.sh - g.ph + i, xx = ow * g.sw - g.pw + j;
                            if (y < 0 || y >= g.H || xx < 0 || xx >= g.W) continue;
                            const int64_t xi = (bc * g.H + y) * g.W + xx;
                            if (xv[xi] > best) best = xv[xi], at = xi;
                        }
                    const int64_t zi = (bc * Ho + oh) * Wo + ow;
                    if (z.value()[zi] != best) ++bad;
                    want_dx[at] += up[zi];
                }
        CHECK(bad == 0);
        for (int64_t k = 0; k < x.numel(); ++k) CHECK(x.grad()[k] == doctest::Approx(want_dx[k]).epsilon(1e-6));
    }
}

TEST_CASE("autograd values: max_pool2d over 2×2 windows, by hand: an all −∞ window and NaN") {
    // Window 0 holds only −∞: its maximum is −∞, and the gradient goes to its
    // first element. Window 1 holds NaN, 1, 2, NaN: a NaN is never greater, so
    // the maximum is 2, at kernel offset 2 (row 1, column 0 of the window).
    const real inf = std::numeric_limits<real>::infinity(), nan = std::numeric_limits<real>::quiet_NaN();
    for (const bool fast : {false, true}) {
        INFO("fast " << fast);
        Var x(Tensor::from({-inf, -inf, nan, 1, -inf, -inf, 2, nan}, Shape{1, 1, 2, 4}), true);
        Var z = max_pool2d(x, Size2(2), 0, 0, fast);
        REQUIRE(z.shape() == Shape{1, 1, 1, 2});
        CHECK(std::as_const(z).value()[0] == -inf);
        CHECK(std::as_const(z).value()[1] == 2);
        z.backward(Tensor::from({10, 20}, Shape{1, 1, 1, 2}));
        const real want[] = {10, 0, 0, 0, 0, 0, 20, 0};
        for (int k = 0; k < 8; ++k) CHECK(x.grad()[k] == want[k]);
    }
}

TEST_CASE("autograd values: max_pool2d runs the 2×2 rows only with fast, and only where they fit") {
    // The two paths give the same values (the cases above), so what tells them
    // apart is which one ran: the rows have a profile row of their own.
    struct Case {
        Size2 kernel, stride;
        bool fast, rows;
    };
    for (const Case& c : {Case{2, 2, true, true}, Case{2, 2, false, false}, Case{3, 2, true, false},
                          Case{2, 1, true, false}}) {
        INFO("kernel " << c.kernel.h << ", stride " << c.stride.h << ", fast " << c.fast);
        Generator gen(3);
        Var x(Tensor::normal(Shape{2, 3, 6, 6}, 0, 1, gen), true);
        Profiler profiler;
        sum(max_pool2d(x, c.kernel, c.stride, 0, c.fast)).backward();
        profiler.stop();
        const ProfileSummary s = profiler.summary();
        int64_t forward = 0, backward = 0;
        for (const ProfileRow& r : s.rows)
            if (r.name == "max_pool2d 2x2 rows") forward = r.forward_calls, backward = r.backward_calls;
        CHECK(forward == (c.rows ? 1 : 0));
        CHECK(backward == (c.rows ? 1 : 0));
    }
}

TEST_CASE("autograd values: max_pool2d's 2×2 row kernels, portable and AVX-512, against a brute-force maximum") {
    // Two rows of windows, of every length around the AVX-512 kernel's 16
    // windows, odd widths (a column left out), ties (whole numbers 0–2), NaN
    // and −∞ scattered, a window of −∞ only and one of NaN and −∞ only. The
    // maximum is the first (top left, top right, bottom left, bottom right)
    // greater than all before it, starting from −∞; the gradient is added to
    // it, and no other element is touched (a −0 stays −0).
    const real inf = std::numeric_limits<real>::infinity(), nan = std::numeric_limits<real>::quiet_NaN();
    const int64_t R = 2;
    for (int64_t Wo : {1, 5, 8, 9, 15, 16, 17, 31, 32, 35}) {
        CAPTURE(Wo);
        const int64_t W = 2 * Wo + Wo % 2;
        Generator gen(static_cast<uint64_t>(Wo));
        std::vector<real> x(static_cast<size_t>(2 * R * W));
        for (size_t k = 0; k < x.size(); ++k)
            x[k] = k % 7 == 3 ? nan : k % 11 == 5 ? -inf : std::floor(static_cast<real>(gen.uniform(0, 3)));
        auto at = [&](int64_t r, int64_t ow, int k) -> size_t {
            return static_cast<size_t>((2 * r + (k >> 1)) * W + 2 * ow + (k & 1));
        };
        for (int k = 0; k < 4; ++k) x[at(0, Wo / 2, k)] = -inf, x[at(R - 1, Wo - 1, k)] = k % 2 ? -inf : nan;
        std::vector<real> want_z(static_cast<size_t>(R * Wo)), g(want_z.size());
        std::vector<uint16_t> want_k(want_z.size());
        std::vector<real> want_dx(x.size(), -0.0f);
        for (int64_t r = 0; r < R; ++r)
            for (int64_t ow = 0; ow < Wo; ++ow) {
                real best = -inf;
                int where = 0;
                for (int k = 0; k < 4; ++k)
                    if (x[at(r, ow, k)] > best) best = x[at(r, ow, k)], where = k;
                const size_t i = static_cast<size_t>(r * Wo + ow);
                want_z[i] = best, want_k[i] = static_cast<uint16_t>(where);
                g[i] = static_cast<real>(gen.uniform(-1, 1));
                want_dx[at(r, ow, where)] += g[i];
            }
        auto check = [&](auto forward, auto backward) {
            std::vector<real> z(want_z.size(), nan), dx(x.size(), -0.0f);
            std::vector<uint16_t> k(want_z.size(), 9);
            forward(x.data(), W, R, Wo, z.data(), k.data());
            CHECK(z == want_z);
            CHECK(k == want_k);
            backward(want_k.data(), g.data(), W, R, Wo, dx.data());
            CHECK(std::memcmp(dx.data(), want_dx.data(), dx.size() * sizeof(real)) == 0);
        };
        check(detail::max_pool_2x2_rows, detail::max_pool_2x2_backward_rows);
        if constexpr (std::is_same_v<real, float>)
            if (fast_math_path() == FastMathPath::avx512)
                check(detail::max_pool_2x2_rows_avx512, detail::max_pool_2x2_backward_rows_avx512);
    }
}

TEST_CASE("autograd values: softmax_composed, by hand: large scores do not overflow; the softmax kernel agrees") {
    // e^1000 overflows a float; e^(a − max) does not: (1, 3) / 4.
    Var x = param({1000, 1000 + std::log(3.f), -2, 0}, {2, 2});
    Var p = softmax_composed(x, -1);
    CHECK(close(p.value(), {0.25f, 0.75f, 0.1192029f, 0.8807971f}));
    p.backward(Tensor::from({1, 0, 0, 1}, Shape{2, 2}));
    // ∂p₀/∂x = (p₀(1 − p₀), −p₀p₁) = (0.1875, −0.1875); row 2: ∂p₁/∂x = (−p₀p₁, p₁(1 − p₁))
    CHECK(close(x.grad(), {0.1875f, -0.1875f, -0.1049936f, 0.1049936f}));

    Generator gen(5);
    const Tensor scores = Tensor::normal(Shape{4, 6, 3}, 0, 2, gen);
    const Tensor up = Tensor::normal(Shape{4, 6, 3}, 0, 1, gen);
    for (int axis : {0, 1, 2}) {
        Var a(scores.clone(), true), b(scores.clone(), true), c(scores.clone(), true);
        Var pa = softmax(a, axis), pb = softmax_composed(b, axis), pc = softmax_fused(c, axis);
        CHECK(allclose(pa.value(), pb.value(), 1e-6, 1e-6));
        CHECK(allclose(pa.value(), pc.value(), 0, 0));  // one forward kernel
        pa.backward(up);
        pb.backward(up);
        pc.backward(up);
        CHECK(allclose(a.grad(), b.grad(), 1e-5, 1e-6));
        CHECK(allclose(a.grad(), c.grad(), 1e-5, 1e-6));  // the fast twin's one-pass backward
    }
}

TEST_CASE("autograd values: conv2d_fused agrees with the composite conv2d, value and gradient") {
    struct Geometry {
        int64_t C, H, W, O, k, stride, pad;
        bool bias;
    };
    for (const Geometry& g : {Geometry{1, 9, 8, 4, 3, 1, 1, true}, Geometry{3, 7, 6, 5, 3, 2, 1, true},
                              Geometry{2, 5, 5, 3, 2, 1, 0, false}, Geometry{4, 6, 9, 2, 1, 1, 0, true}}) {
        Generator gen(11);
        const Tensor xv = Tensor::normal(Shape{3, g.C, g.H, g.W}, 0, 1, gen);
        const Tensor wv = Tensor::normal(Shape{g.O, g.C, g.k, g.k}, 0, 0.5f, gen);
        const Tensor bv = Tensor::normal(Shape{g.O}, 0, 1, gen);
        Var x1(xv.clone(), true), w1(wv.clone(), true), b1 = g.bias ? Var(bv.clone(), true) : Var();
        Var x2(xv.clone(), true), w2(wv.clone(), true), b2 = g.bias ? Var(bv.clone(), true) : Var();
        Var z1 = conv2d(x1, w1, b1, static_cast<int>(g.stride), static_cast<int>(g.pad));
        Var z2 = conv2d_fused(x2, w2, b2, static_cast<int>(g.stride), static_cast<int>(g.pad));
        REQUIRE(z1.shape() == z2.shape());
        const Tensor up = Tensor::normal(z1.shape(), 0, 1, gen);
        z1.backward(up);
        z2.backward(up);
        CHECK(agree(z1.value(), z2.value()));
        CHECK(agree(x1.grad(), x2.grad()));
        CHECK(agree(w1.grad(), w2.grad()));
        if (g.bias) CHECK(agree(b1.grad(), b2.grad()));
    }
}

TEST_CASE("autograd values: conv2d_max_pool_fused and its ReLU twin agree with max_pool2d of the composite conv2d") {
    // The pool's 2×2 path (W4's encoder) and its general path; conv outputs of
    // odd size (the pool drops the last row and column), strided and padded
    // convolutions and pools, no bias.
    struct Geometry {
        int64_t C, H, W, O, k, stride, pad;
        bool bias;
        int pool_k, pool_stride, pool_pad;
    };
    for (const Geometry& g : {Geometry{1, 8, 8, 4, 3, 1, 1, true, 2, 2, 0}, Geometry{3, 9, 7, 5, 3, 1, 1, true, 2, 2, 0},
                              Geometry{2, 7, 8, 3, 3, 2, 1, false, 2, 1, 0}, Geometry{2, 6, 6, 3, 3, 1, 1, true, 3, 1, 1},
                              Geometry{3, 10, 9, 2, 2, 1, 0, true, 3, 2, 1},
                              // (30 positions, every one in a window: the bias's row sums end in a tail of 2)
                              Geometry{2, 6, 5, 3, 3, 1, 1, true, 3, 1, 1}}) {
        CAPTURE(g.C);
        CAPTURE(g.pool_k);
        Generator gen(13);
        const Tensor xv = Tensor::normal(Shape{3, g.C, g.H, g.W}, 0, 1, gen);
        const Tensor wv = Tensor::normal(Shape{g.O, g.C, g.k, g.k}, 0, 0.5f, gen);
        const Tensor bv = Tensor::normal(Shape{g.O}, 0, 1, gen);
        Var x1(xv.clone(), true), w1(wv.clone(), true), b1 = g.bias ? Var(bv.clone(), true) : Var();
        Var x2(xv.clone(), true), w2(wv.clone(), true), b2 = g.bias ? Var(bv.clone(), true) : Var();
        const Size2 stride(static_cast<int>(g.stride)), pad(static_cast<int>(g.pad));
        for (bool then_relu : {false, true}) {
            CAPTURE(then_relu);
            for (Var* v : {&x1, &w1, &b1, &x2, &w2, &b2})
                if (v->defined()) v->zero_grad();
            Var z1 = max_pool2d(conv2d(x1, w1, b1, stride, pad), g.pool_k, g.pool_stride, g.pool_pad);
            Var z2 = then_relu ? conv2d_max_pool_relu_fused(x2, w2, b2, stride, pad, g.pool_k, g.pool_stride, g.pool_pad)
                               : conv2d_max_pool_fused(x2, w2, b2, stride, pad, g.pool_k, g.pool_stride, g.pool_pad);
            if (then_relu) z1 = relu(z1);
            REQUIRE(z1.shape() == z2.shape());
            const Tensor up = Tensor::normal(z1.shape(), 0, 1, gen);
            z1.backward(up);
            z2.backward(up);
            CHECK(agree(z1.value(), z2.value()));
            CHECK(agree(x1.grad(), x2.grad()));
            CHECK(agree(w1.grad(), w2.grad()));
            if (g.bias) CHECK(agree(b1.grad(), b2.grad()));
            if (then_relu) {  // (a test that proves something: some pooled values are cut to 0, some not)
                int64_t cut = 0;
                for (int64_t i = 0; i < z2.numel(); ++i) cut += z2.value()[i] == 0;
                CHECK(cut > 0);
                CHECK(cut < z2.numel());
            }
        }
    }
}

TEST_CASE("autograd values: conv2d_max_pool_fused by hand, and its errors") {
    // One 1×4×4 image of 0..15, a 1×1 weight of 2 and bias −20: z = 2x − 20,
    // pooled 2×2: the bottom-right element of each window (−10, −6, 6, 10).
    Tensor xv = Tensor::empty(Shape{1, 1, 4, 4});
    for (int64_t i = 0; i < 16; ++i) xv[i] = static_cast<real>(i);
    Var x(xv, true), w(Tensor::full(Shape{1, 1, 1, 1}, 2), true), b(Tensor::full(Shape{1}, -20), true);
    Var y = conv2d_max_pool_fused(x, w, b, 1, 0, 2);
    CHECK(y.shape() == Shape{1, 1, 2, 2});
    CHECK(close(y.value(), {-10, -6, 6, 10}));
    y.backward(Tensor::from({1, 2, 3, 4}, Shape{1, 1, 2, 2}));
    // ∂x: 2·g at positions 5, 7, 13, 15; ∂w = Σ g·x at the maxima; ∂b = Σ g
    std::vector<real> dx(16, 0);
    dx[5] = 2, dx[7] = 4, dx[13] = 6, dx[15] = 8;
    CHECK(close(x.grad(), dx));
    CHECK(w.grad()[0] == doctest::Approx(1 * 5 + 2 * 7 + 3 * 13 + 4 * 15));
    CHECK(b.grad()[0] == doctest::Approx(10));

    const Var img(Tensor::zeros(Shape{1, 2, 6, 6})), k3(Tensor::zeros(Shape{4, 2, 3, 3}));
    CHECK_THROWS_WITH(conv2d_max_pool_fused(img, Var(Tensor::zeros(Shape{4, 2, 3})), Var(), 1, 1, 2),
                      doctest::Contains("conv2d_max_pool_fused: weight must be O×C×kh×kw"));
    CHECK_THROWS_WITH(conv2d_max_pool_fused(img, Var(Tensor::zeros(Shape{4, 3, 3, 3})), Var(), 1, 1, 2),
                      doctest::Contains("input 1×2×6×6, weight 4×3×3×3 and bias (none) must be"));
    CHECK_THROWS_WITH(conv2d_max_pool_fused(img, k3, Var(), 1, 1, 2, 2, 2),
                      doctest::Contains("conv2d_max_pool_fused: padding 2×2 must be at most half the kernel 2×2"));
    CHECK_THROWS_WITH(conv2d_max_pool_fused(img, k3, Var(), 1, 0, 7),
                      doctest::Contains("conv2d_max_pool_fused: kernel 7×7 with padding 0×0 does not fit"));
}

TEST_CASE("autograd values: conv2d_fused, conv2d_max_pool_fused, relu, max_pool2d and unfold give the same bits on 1 and 2 threads") {
    // Large enough that each is split over two threads: planes (unfold, the
    // pool), images (conv2d_fused's input gradient), elements (relu's
    // gradient, the 147K-float fills of gradient buffers).
    Generator gen(12);
    const Tensor xv = Tensor::normal(Shape{4, 8, 48, 48}, 0, 1, gen);
    const Tensor wv = Tensor::normal(Shape{16, 8, 3, 3}, 0, 0.3f, gen), bv = Tensor::normal(Shape{16}, 0, 1, gen);
    const Tensor up = Tensor::normal(Shape{4, 16, 24, 24}, 0, 1, gen);
    const Tensor up_cols = Tensor::normal(Shape{4, 8 * 9, 48 * 48}, 0, 1, gen);
    struct Run {
        Tensor pooled, cols, dx, dw, db;
        Tensor fused, fused_dx, fused_dw, fused_db;  // conv2d_max_pool_fused
    };
    auto run = [&](int threads) {
        set_num_threads(threads);
        Var x(xv.clone(), true), w(wv.clone(), true), b(bv.clone(), true);
        Var pooled = max_pool2d(relu(conv2d_fused(x, w, b, 1, 1)), Size2(2));
        Var cols = unfold(x, Size2(3), Size2(1), Size2(1));
        (sum(mul(pooled, Var(up))) + sum(mul(cols, Var(up_cols)))).backward();
        Var x2(xv.clone(), true), w2(wv.clone(), true), b2(bv.clone(), true);
        Var fused = relu(conv2d_max_pool_fused(x2, w2, b2, 1, 1, 2));
        sum(mul(fused, Var(up))).backward();
        return Run{pooled.value(), cols.value(), x.grad(), w.grad(), b.grad(),
                   fused.value(), x2.grad(), w2.grad(), b2.grad()};
    };
    const int before = num_threads();
    const Run one = run(1), two = run(2);
    set_num_threads(before);
    for (const auto& [a, b] : {std::pair{one.pooled, two.pooled}, {one.cols, two.cols}, {one.dx, two.dx},
                               {one.dw, two.dw}, {one.db, two.db}, {one.fused, two.fused},
                               {one.fused_dx, two.fused_dx}, {one.fused_dw, two.fused_dw},
                               {one.fused_db, two.fused_db}}) {
        REQUIRE(a.shape() == b.shape());
        CHECK(std::equal(a.data(), a.data() + a.numel(), b.data()));
    }
}

TEST_CASE("autograd values: dropout is inverted, seeded, and the identity when not training") {
    Var x(Tensor::ones(Shape{1000}), true);
    Generator g1(42), g2(42);
    Var d1 = dropout(x, 0.25f, g1), d2 = dropout(x, 0.25f, g2);
    CHECK(allclose(d1.value(), d2.value(), 0, 0));  // same seed, same mask
    int64_t kept = 0;
    for (int64_t i = 0; i < 1000; ++i) {
        const real v = std::as_const(d1).value()[i];
        CHECK((v == 0 || v == doctest::Approx(1 / 0.75)));
        kept += v != 0;
    }
    CHECK(kept > 700);
    CHECK(kept < 800);
    // the mask is m_i = 1/(1−p) where the i-th uniform draw is ≥ p, else 0
    Generator g4(42);
    for (int64_t i = 0; i < 1000; ++i) CHECK(std::as_const(d1).value()[i] == (g4.uniform() >= 0.25 ? real(1 / 0.75f) : 0));
    sum(d1).backward();
    CHECK(allclose(x.grad(), d1.value(), 0, 0));  // the mask, scaled
    Generator g3(1);
    CHECK(dropout(x, 0.5f, g3, false).node() == x.node());
    CHECK(sum(dropout(x, 1, g3)).item() == 0);
    CHECK_THROWS_AS(dropout(x, 1.5f, g3), std::invalid_argument);
}

TEST_CASE("autograd values: categorical sampling and the log-probability of a sample") {
    Generator gen(9);
    const Tensor probs = Tensor::from({0.1f, 0, 0.6f, 0.3f, 0, 0, 1, 0}, Shape{2, 4});
    int counts[4] = {};
    for (int i = 0; i < 4000; ++i) {
        const Tensor s = sample_categorical(probs, gen);
        CHECK(s.shape() == Shape{2});
        CHECK(s[1] == 2);  // a one-hot row always gives its index
        ++counts[static_cast<int>(s[0])];
    }
    CHECK(counts[1] == 0);  // probability 0 is never drawn
    CHECK(counts[0] > 300);
    CHECK(counts[0] < 500);
    CHECK(counts[2] > 2200);
    CHECK(counts[2] < 2600);
    CHECK_THROWS_WITH_AS(sample_categorical(Tensor::zeros(Shape{3}), gen),
                         "sample_categorical: row 0 has no positive probability", std::invalid_argument);

    Var p = param({0.2f, 0.5f, 0.3f}, {3});
    Var lp = categorical_log_prob(p, Tensor::scalar(1));
    CHECK(lp.item() == doctest::Approx(std::log(0.5)));
    lp.backward();
    CHECK(close(p.grad(), {0, 2, 0}));  // 1/p at the sample
}
