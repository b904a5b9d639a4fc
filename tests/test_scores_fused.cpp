// additive_score_fused (attention/scores.hpp) in the float build: a value
// worked by hand, the composed score's values and gradients, its AVX-512 rows
// against plain loops, the same bits on 1 and 2 threads, and its errors.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>
#include <utility>

#include "attention/scores.hpp"
#include "attention/scores_kernels.hpp"
#include "tensor/fast_math.hpp"
#include "tensor/ops.hpp"
#include "tensor/parallel.hpp"

using namespace attn;

TEST_CASE("additive_score_fused: a 1×1×2 score by hand, its gradients by hand") {
    // pq = (0.5, −1), pk = (1, 0.5) and (0, 0), b = (0, 0.25), w = (2, −1):
    //   e_0 = 2 tanh(1.5) − tanh(−0.25)     e_1 = 2 tanh(0.5) − tanh(−0.75)
    Var pq(Tensor::from({0.5f, -1}, Shape{1, 1, 2}), true);
    Var pk(Tensor::from({1, 0.5f, 0, 0}, Shape{1, 2, 2}), true);
    Var b(Tensor::from({0, 0.25f}), true), w(Tensor::from({2, -1}), true);
    Var e = additive_score_fused(pq, pk, b, w);
    REQUIRE(e.shape() == Shape{1, 1, 2});
    const double t00 = std::tanh(1.5), t01 = std::tanh(-0.25), t10 = std::tanh(0.5), t11 = std::tanh(-0.75);
    CHECK(std::as_const(e).value()[0] == doctest::Approx(2 * t00 - t01).epsilon(1e-6));
    CHECK(std::as_const(e).value()[1] == doctest::Approx(2 * t10 - t11).epsilon(1e-6));
    // G = (1, 0): only key 0 counts. δ = w ⊙ (1 − t²) at (1.5, −0.25).
    e.backward(Tensor::from({1, 0}, Shape{1, 1, 2}));
    const double d0 = 2 * (1 - t00 * t00), d1 = -1 * (1 - t01 * t01);
    CHECK(pq.grad()[0] == doctest::Approx(d0).epsilon(1e-5));
    CHECK(pq.grad()[1] == doctest::Approx(d1).epsilon(1e-5));
    CHECK(pk.grad()[0] == doctest::Approx(d0).epsilon(1e-5));
    CHECK(pk.grad()[1] == doctest::Approx(d1).epsilon(1e-5));
    CHECK(pk.grad()[2] == 0);  // key 1's score had no gradient
    CHECK(pk.grad()[3] == 0);
    CHECK(b.grad()[0] == doctest::Approx(d0).epsilon(1e-5));
    CHECK(b.grad()[1] == doctest::Approx(d1).epsilon(1e-5));
    CHECK(w.grad()[0] == doctest::Approx(t00).epsilon(1e-5));  // ∂e_0/∂w = t
    CHECK(w.grad()[1] == doctest::Approx(t01).epsilon(1e-5));
}

TEST_CASE("additive_score_fused: the composed score's values and gradients, d_w not a multiple of 16") {
    // W2's shape with d_w = 37 (two 16-wide blocks and a tail of 5), bias on.
    Generator gen(6);
    const int64_t B = 8, m = 2, n = 9, dw = 37;
    const Tensor pq0 = Tensor::normal({B, m, dw}, 0, 1, gen), pk0 = Tensor::normal({B, n, dw}, 0, 1, gen);
    const Tensor w0 = Tensor::normal({dw}, 0, 1, gen), b0 = Tensor::normal({dw}, 0, 1, gen);
    const Tensor up = Tensor::normal({B, m, n}, 0, 1, gen);
    auto run = [&](bool fused) {
        Var pq(pq0.clone(), true), pk(pk0.clone(), true), w(w0.clone(), true), b(b0.clone(), true);
        Var e = fused ? additive_score_fused(pq, pk, b, w)
                      : squeeze(matmul(additive_features(pq, pk, b, Activation::tanh), reshape(w, {dw, 1})), -1);
        e.backward(up);
        return std::vector<Tensor>{e.value(), pq.grad(), pk.grad(), w.grad(), b.grad()};
    };
    const std::vector<Tensor> fused = run(true), composed = run(false);
    const char* what[] = {"e", "∂pq", "∂pk", "∂w", "∂b"};
    for (size_t k = 0; k < fused.size(); ++k) {
        INFO(what[k]);
        CHECK(allclose(fused[k], composed[k], 1e-5, 1e-5));
    }
}

TEST_CASE("additive_score_fused: the AVX-512 rows against plain loops in double") {
    if (!fast_math_avx512_available()) return;
    Generator gen(7);
    for (int64_t dw : {16, 37, 256}) {
        CAPTURE(dw);
        const int64_t n = 5;
        const Tensor qb = Tensor::normal({dw}, 0, 1, gen), pk = Tensor::normal({n, dw}, 0, 1, gen);
        const Tensor w = Tensor::normal({dw}, 0, 1, gen), g = Tensor::normal({n}, 0, 1, gen);
        std::vector<float> t(static_cast<size_t>(n * dw) + 1, -7), e(static_cast<size_t>(n) + 1, -7);
        detail::additive_row_forward_avx512(qb.data(), pk.data(), w.data(), n, dw, t.data(), e.data());
        std::vector<float> dq(static_cast<size_t>(dw), 0.5f), dk(static_cast<size_t>(n * dw), 0.25f),
            dws(static_cast<size_t>(dw), -1);
        detail::additive_row_backward_avx512(g.data(), t.data(), w.data(), n, dw, dq.data(), dk.data(), dws.data());
        CHECK(t.back() == -7);  // nothing written past the end
        CHECK(e.back() == -7);
        for (int64_t l = 0; l < n; ++l) {
            double e_ref = 0;
            for (int64_t a = 0; a < dw; ++a) {
                const double th = std::tanh(static_cast<double>(qb[a]) + pk[l * dw + a]);
                CHECK(t[static_cast<size_t>(l * dw + a)] == doctest::Approx(th).epsilon(1e-6));
                e_ref += w[a] * th;
                const double d = g[l] * w[a] * (1 - th * th);
                CHECK(dk[static_cast<size_t>(l * dw + a)] == doctest::Approx(0.25 + d).epsilon(1e-5));
            }
            CHECK(e[static_cast<size_t>(l)] == doctest::Approx(e_ref).epsilon(1e-5));
        }
        for (int64_t a = 0; a < dw; ++a) {
            double dq_ref = 0.5, dw_ref = -1;
            for (int64_t l = 0; l < n; ++l) {
                const double th = std::tanh(static_cast<double>(qb[a]) + pk[l * dw + a]);
                dq_ref += g[l] * w[a] * (1 - th * th);
                dw_ref += g[l] * th;
            }
            CHECK(dq[static_cast<size_t>(a)] == doctest::Approx(dq_ref).epsilon(1e-5));
            CHECK(dws[static_cast<size_t>(a)] == doctest::Approx(dw_ref).epsilon(1e-5));
        }
    }
}

TEST_CASE("additive_score_fused: the same bits on 1 and 2 threads, value and gradients") {
    Generator gen(3);
    const Tensor pq0 = Tensor::normal({64, 1, 128}, 0, 1, gen), pk0 = Tensor::normal({64, 16, 128}, 0, 1, gen);
    const Tensor w0 = Tensor::normal({128}, 0, 1, gen), b0 = Tensor::normal({128}, 0, 1, gen);
    const Tensor up = Tensor::normal({64, 1, 16}, 0, 1, gen);
    Tensor value[2], grads[2][4];
    const int before = num_threads();
    for (int k = 0; k < 2; ++k) {
        set_num_threads(k + 1);
        Var pq(pq0.clone(), true), pk(pk0.clone(), true), w(w0.clone(), true), b(b0.clone(), true);
        Var e = additive_score_fused(pq, pk, b, w);
        e.backward(up);
        value[k] = e.value();
        grads[k][0] = pq.grad(), grads[k][1] = pk.grad(), grads[k][2] = w.grad(), grads[k][3] = b.grad();
    }
    set_num_threads(before);
    CHECK(allclose(value[0], value[1], 0, 0));
    for (int i = 0; i < 4; ++i) CHECK(allclose(grads[0][i], grads[1][i], 0, 0));
}

TEST_CASE("additive_score_fused: mismatched widths are refused, naming the shapes") {
    const Var pq(Tensor::zeros({2, 1, 4})), pk(Tensor::zeros({2, 3, 4})), w(Tensor::zeros({5}));
    CHECK_THROWS_WITH_AS(additive_score_fused(pq, pk, Var(), w),
                         doctest::Contains("additive_score_fused: projected queries 2×1×4, projected keys 2×3×4, w 5"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(additive_score_fused(pq, Var(Tensor::zeros({3, 3, 4})), Var(), Var(Tensor::zeros({4}))),
                         doctest::Contains("same batch size"), std::invalid_argument);
}
