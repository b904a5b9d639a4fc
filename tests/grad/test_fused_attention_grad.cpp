// The fused scaled dot-product attention kernel (attention/fused_attention.hpp),
// double build: against its composite twin (entry 44's
// scaled_dot_product_attention) in value and in the gradients of Q, K and V,
// on shapes that cross its 128×128 tiles, with every kind of mask; its
// gradients accumulate; it returns no weights unless asked. Entry 44's
// registry cases, run composite and fused, are in test_transformer.cpp; the
// float build's tests of the kernel in tests/test_fused_attention.cpp.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "attention/fused_attention.hpp"
#include "attention/scaled_dot_product.hpp"
#include "autograd/gradcheck.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/helpers.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

TEST_CASE("scaled_dot_product_attention: fused equals composite in value and gradient, masks included") {
    struct Config {
        const char* name;
        Shape q, k, v;
        Tensor mask;
        bool causal;
    };
    const std::vector<Config> configs = {
        {"no mask, several tiles", {2, 150, 16}, {2, 300, 16}, {2, 300, 8}, {}, false},
        {"causal, m = n", {2, 200, 8}, {2, 200, 8}, {2, 200, 8}, {}, true},
        {"causal, m < n", {1, 70, 8}, {1, 260, 8}, {1, 260, 4}, {}, true},
        {"causal, m > n (first rows see nothing)", {1, 140, 8}, {1, 9, 8}, {1, 9, 4}, {}, true},
        {"padding, an empty example", {3, 65, 8}, {3, 130, 8}, {3, 130, 8}, padding({130, 77, 0}, 130), false},
        {"causal + padding", {2, 129, 8}, {2, 129, 8}, {2, 129, 8}, padding({129, 64}, 129), true},
        {"holes with an empty row", {2, 66, 4}, {2, 140, 4}, {2, 140, 3}, holes(66, 140, 65, 4), false},
        {"heads, B×1×1×n padding", {2, 3, 40, 8}, {2, 3, 50, 8}, {2, 3, 50, 8}, mask_for_heads(padding({50, 20}, 50)),
         false},
        {"heads, per-head B×h×m×n mask", {1, 2, 20, 4}, {1, 2, 30, 4}, {1, 2, 30, 4},
         reshape(concat({holes(20, 30, 3, 5).reshape(Shape{1, 20, 30}), holes(20, 30, 7, 6).reshape(Shape{1, 20, 30})}, 0),
                 {1, 2, 20, 30}),
         true},
    };
    Generator gen(4444);
    for (const Config& c : configs) {
        CAPTURE(c.name);
        const Tensor q = Tensor::normal(c.q, 0, 1, gen), k = Tensor::normal(c.k, 0, 1, gen);
        const Tensor v = Tensor::normal(c.v, 0, 1, gen);
        const Tensor G = Tensor::normal(c.q.with(c.q.rank() - 1, c.v[c.v.rank() - 1]), 0, 1, gen);
        const OutputAndGradients composite = run_with_gradients(
            [&](const Var& Q, const Var& K, const Var& V) {
                return scaled_dot_product_attention(Q, K, V, c.mask, c.causal).output;
            },
            q, k, v, G);
        const OutputAndGradients fused = run_with_gradients(
            [&](const Var& Q, const Var& K, const Var& V) {
                return scaled_dot_product_attention_fused(Q, K, V, c.mask, {.causal = c.causal}).output;
            },
            q, k, v, G);
        check_max_difference(fused.out, composite.out, 1e-12, "output");
        check_max_difference(fused.dq, composite.dq, 1e-11, "dQ");
        check_max_difference(fused.dk, composite.dk, 1e-11, "dK");
        check_max_difference(fused.dv, composite.dv, 1e-11, "dV");
        // The weights, when requested, are the composite's.
        const AttentionOutput with_weights =
            scaled_dot_product_attention_fused(Var(q), Var(k), Var(v), c.mask, {.causal = c.causal, .need_weights = true});
        check_max_difference(with_weights.weights.value(),
                             scaled_dot_product_attention(Var(q), Var(k), Var(v), c.mask, c.causal).weights.value(),
                             1e-12, "weights");
    }
}

TEST_CASE("scaled_dot_product_attention: fused gradients add to earlier ones, also when Q, K, V are one variable") {
    Generator gen(4400);
    const Tensor x = Tensor::normal({2, 140, 6}, 0, 1, gen), G = Tensor::normal({2, 140, 6}, 0, 1, gen);
    const Tensor mask = padding({140, 90}, 140);
    Tensor grads[2];
    for (bool fused : {false, true}) {
        Var X(x.clone(), true);
        for (int pass = 0; pass < 2; ++pass) {  // two backward passes: the gradients accumulate
            Var out = fused ? scaled_dot_product_attention_fused(X, X, X, mask, {.causal = true}).output
                            : scaled_dot_product_attention(X, X, X, mask, true).output;
            out.backward(G);
        }
        grads[fused] = X.grad();
    }
    check_max_difference(grads[1], grads[0], 1e-11, "∂L/∂X accumulated over two passes");
}

TEST_CASE("scaled_dot_product_attention: the fused version returns no weights unless asked") {
    Generator gen(1);
    const Var Q(Tensor::normal({2, 8, 4}, 0, 1, gen), true), K(Tensor::normal({2, 8, 4}, 0, 1, gen));
    const AttentionOutput a = scaled_dot_product_attention_fused(Q, K, K, {}, {.causal = true});
    CHECK(a.output.shape() == Shape{2, 8, 4});
    CHECK_FALSE(a.weights.defined());
    CHECK(std::string(a.output.op()) == "scaled_dot_product_attention_fused");
}

// The heads side by side (multi-head attention's projections read in place):
// finite differences, and the composite on the split heads, with a padding
// mask, causal, d_k ≠ d_v and a query block boundary (m = 130).
TEST_CASE("scaled_dot_product_attention_fused_heads: gradients match finite differences and the split composite") {
    Generator gen(4450);
    const int64_t h = 3;
    const Tensor mask = mask_for_heads(padding({6, 4}, 6));  // B×1×1×n
    const GradcheckResult r = gradcheck(
        "scaled_dot_product_attention_fused_heads",
        [&](const std::vector<Var>& x) {
            return scaled_dot_product_attention_fused_heads(x[0], x[1], x[2], h, mask, {.causal = true}).output;
        },
        {Tensor::normal({2, 5, h * 2}, 0, 1, gen), Tensor::normal({2, 6, h * 2}, 0, 1, gen),
         Tensor::normal({2, 6, h * 3}, 0, 1, gen)});
    INFO(r.message);
    CHECK(r.ok);

    const Tensor q = Tensor::normal({2, 130, 4 * 8}, 0, 1, gen), k = Tensor::normal({2, 140, 4 * 8}, 0, 1, gen);
    const Tensor v = Tensor::normal({2, 140, 4 * 5}, 0, 1, gen), G = Tensor::normal({2, 130, 4 * 5}, 0, 1, gen);
    const Tensor pad = mask_for_heads(padding({140, 61}, 140));
    const OutputAndGradients composite = run_with_gradients(
        [&](const Var& Q, const Var& K, const Var& V) {
            return concat_heads(
                scaled_dot_product_attention(split_heads(Q, 4), split_heads(K, 4), split_heads(V, 4), pad, true).output);
        },
        q, k, v, G);
    const OutputAndGradients fused = run_with_gradients(
        [&](const Var& Q, const Var& K, const Var& V) {
            return scaled_dot_product_attention_fused_heads(Q, K, V, 4, pad, {.causal = true}).output;
        },
        q, k, v, G);
    check_max_difference(fused.out, composite.out, 1e-12, "output");
    check_max_difference(fused.dq, composite.dq, 1e-11, "dQ");
    check_max_difference(fused.dk, composite.dk, 1e-11, "dK");
    check_max_difference(fused.dv, composite.dv, 1e-11, "dV");
}
