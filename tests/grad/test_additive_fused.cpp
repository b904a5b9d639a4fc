// additive_score_fused (attention/scores.hpp), in the double build: its
// hand-written backward against central differences, and the op against the
// composed additive score it replaces, value and every gradient.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "attention/scores.hpp"
#include "autograd/gradcheck.hpp"
#include "tensor/ops.hpp"

using namespace attn;

TEST_CASE("additive_score_fused: gradients match finite differences, with and without the bias, m = 1 and 3") {
    Generator gen(21);
    for (const bool with_bias : {true, false})
        for (const int64_t m : {1, 3}) {
            // pq B×m×d_w, pk B×n×d_w, w d_w (, b d_w)
            std::vector<Tensor> inputs{Tensor::normal({2, m, 5}, 0, 1, gen), Tensor::normal({2, 4, 5}, 0, 1, gen),
                                       Tensor::normal({5}, 0, 1, gen)};
            if (with_bias) inputs.push_back(Tensor::normal({5}, 0, 0.5, gen));
            const GradcheckResult r = gradcheck(
                "additive_score_fused",
                [&](const std::vector<Var>& x) {
                    return additive_score_fused(x[0], x[1], with_bias ? x[3] : Var(), x[2]);
                },
                inputs);
            INFO(r.message);
            CHECK(r.ok);
        }
}

TEST_CASE("additive_score_fused equals the composed AdditiveScore: value and the gradient of every parameter and input") {
    for (const bool with_bias : {true, false}) {
        Generator gen(22);
        AdditiveScore composed(3, 4, 6, gen, Activation::tanh, with_bias);
        Generator gen2(22);
        AdditiveScore fused(3, 4, 6, gen2, Activation::tanh, with_bias);  // the same weights
        fused.fused = true;
        const Tensor q0 = Tensor::normal({2, 3, 3}, 0, 1, gen), k0 = Tensor::normal({2, 5, 4}, 0, 1, gen);
        const Tensor up = Tensor::normal({2, 3, 5}, 0, 1, gen);
        Var q1(q0.clone(), true), k1(k0.clone(), true), q2(q0.clone(), true), k2(k0.clone(), true);
        Var e1 = composed.score(q1, k1), e2 = fused.score(q2, k2);
        CHECK(allclose(e1.value(), e2.value(), 1e-12, 1e-12));
        e1.backward(up);
        e2.backward(up);
        CHECK(allclose(q1.grad(), q2.grad(), 1e-12, 1e-12));
        CHECK(allclose(k1.grad(), k2.grad(), 1e-12, 1e-12));
        CHECK(allclose(composed.W_1.grad(), fused.W_1.grad(), 1e-12, 1e-12));
        CHECK(allclose(composed.W_2.grad(), fused.W_2.grad(), 1e-12, 1e-12));
        CHECK(allclose(composed.w.grad(), fused.w.grad(), 1e-12, 1e-12));
        if (with_bias) CHECK(allclose(composed.b.grad(), fused.b.grad(), 1e-12, 1e-12));
    }
}

TEST_CASE("additive_score_fused: values against the formula in plain loops") {
    Generator gen(23);
    const int64_t B = 2, m = 3, n = 4, dw = 5;
    const Tensor pq = Tensor::normal({B, m, dw}, 0, 1, gen), pk = Tensor::normal({B, n, dw}, 0, 1, gen);
    const Tensor w = Tensor::normal({dw}, 0, 1, gen), b = Tensor::normal({dw}, 0, 1, gen);
    const Tensor e = additive_score_fused(Var(pq), Var(pk), Var(b), Var(w)).value();
    for (int64_t x = 0; x < B; ++x)
        for (int64_t i = 0; i < m; ++i)
            for (int64_t l = 0; l < n; ++l) {
                double expected = 0;  // Σ_a w_a tanh(pq[x,i,a] + pk[x,l,a] + b_a)
                for (int64_t a = 0; a < dw; ++a)
                    expected += w[a] * std::tanh(pq[(x * m + i) * dw + a] + pk[(x * n + l) * dw + a] + b[a]);
                CHECK(e[(x * m + i) * n + l] == doctest::Approx(expected).epsilon(1e-12));
            }
}
