// Catalog entries 44 (scaled_dot_product_attention, composite and fused) and
// 45 (restricted_self_attention), double build: their registry cases for the
// generic gradient check, the catalog's properties and reference values, and
// the fused kernel against its composite twin in value and gradient.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "attention/fused_attention.hpp"
#include "attention/transformer.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/attention_registry.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

// Output and weights flattened into one vector, so the gradient check covers both.
Var output_and_weights(const AttentionOutput& a) {
    return concat({reshape(a.output, {-1}), reshape(a.weights, {-1})}, 0);
}

// A keep mask B×1×n from lengths; a length of 0 masks every key of that example.
Tensor padding(const std::vector<int64_t>& lengths, int64_t n) { return key_mask(length_mask(lengths, n)); }

// A keep mask m×n with random holes and row `empty_row` fully masked.
Tensor holes(int64_t m, int64_t n, int64_t empty_row, uint64_t seed) {
    Generator gen(seed);
    Tensor mask = Tensor::empty(Shape{m, n});
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) mask[i * n + j] = i == empty_row ? 0 : (gen.uniform() < 0.7 ? 1 : 0);
    return mask;
}

FusedAttentionOptions fused_options(bool causal, bool need_weights = false) {
    FusedAttentionOptions o;
    o.causal = causal;
    o.need_weights = need_weights;
    return o;
}

const RegisterMechanisms sdpa_cases({
    {"scaled_dot_product_attention", "composite, 3 queries over 5 keys", {{2, 3, 4}, {2, 5, 4}, {2, 5, 3}}, nullptr,
     [](Module*, const std::vector<Var>& x) { return output_and_weights(scaled_dot_product_attention(x[0], x[1], x[2])); }},
    {"scaled_dot_product_attention", "composite, padding mask with a fully masked example",
     {{3, 3, 4}, {3, 5, 4}, {3, 5, 2}}, nullptr,
     [](Module*, const std::vector<Var>& x) {
         return output_and_weights(scaled_dot_product_attention(x[0], x[1], x[2], padding({5, 2, 0}, 5)));
     }},
    {"scaled_dot_product_attention", "composite, causal, heads B×h×n×d", {{2, 2, 4, 3}, {2, 2, 4, 3}, {2, 2, 4, 3}},
     nullptr,
     [](Module*, const std::vector<Var>& x) {
         return output_and_weights(scaled_dot_product_attention(x[0], x[1], x[2], Tensor(), true));
     }},
    {"scaled_dot_product_attention", "fused, 3 queries over 5 keys", {{2, 3, 4}, {2, 5, 4}, {2, 5, 3}}, nullptr,
     [](Module*, const std::vector<Var>& x) { return scaled_dot_product_attention_fused(x[0], x[1], x[2]).output; }},
    {"scaled_dot_product_attention", "fused, causal with m < n, padding, an empty example",
     {{3, 4, 3}, {3, 6, 3}, {3, 6, 2}}, nullptr,
     [](Module*, const std::vector<Var>& x) {
         return scaled_dot_product_attention_fused(x[0], x[1], x[2], padding({6, 3, 0}, 6), fused_options(true)).output;
     }},
    {"scaled_dot_product_attention", "fused, heads with a B×1×1×n mask", {{2, 2, 3, 4}, {2, 2, 5, 4}, {2, 2, 5, 3}},
     nullptr,
     [](Module*, const std::vector<Var>& x) {
         return scaled_dot_product_attention_fused(x[0], x[1], x[2], mask_for_heads(padding({5, 3}, 5))).output;
     }},
    {"scaled_dot_product_attention", "fused, 2×2 tiles (130 queries, 135 keys), causal and holes",
     {{1, 130, 3}, {1, 135, 3}, {1, 135, 2}}, nullptr,
     [](Module*, const std::vector<Var>& x) {
         return scaled_dot_product_attention_fused(x[0], x[1], x[2], holes(130, 135, 5, 3), fused_options(true)).output;
     }},
    {"restricted_self_attention", "r = 1, n = 6", {{2, 6, 3}, {2, 6, 3}, {2, 6, 2}}, nullptr,
     [](Module*, const std::vector<Var>& x) { return output_and_weights(restricted_self_attention(x[0], x[1], x[2], 1)); }},
    {"restricted_self_attention", "r = 2 with padding", {{2, 5, 3}, {2, 5, 3}, {2, 5, 2}}, nullptr,
     [](Module*, const std::vector<Var>& x) {
         return output_and_weights(restricted_self_attention(x[0], x[1], x[2], 2, length_mask({5, 2}, 5)));
     }},
});

void check_close(const Tensor& a, const Tensor& b, double atol, const std::string& what) {
    INFO(what << ": " << a.shape() << " vs " << b.shape());
    REQUIRE(a.shape() == b.shape());
    double worst = 0;
    int64_t not_finite = 0;
    for (int64_t i = 0; i < a.numel(); ++i) {
        not_finite += !std::isfinite(a[i]);
        worst = std::max(worst, std::abs(a[i] - b[i]));
    }
    CHECK_MESSAGE(not_finite == 0, what << ": " << not_finite << " values are not finite");
    CHECK_MESSAGE(worst <= atol, what << ": largest difference " << worst);
}

struct Grads {
    Tensor out, dq, dk, dv;
};

// Output and the gradients of Σ G ⊙ output for one implementation.
template <class F>
Grads run_with_grads(F attention, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& G) {
    Var Q(q.clone(), true), K(k.clone(), true), V(v.clone(), true);
    Var out = attention(Q, K, V);
    Grads g{out.value().clone(), {}, {}, {}};
    out.backward(G);
    g.dq = Q.grad(), g.dk = K.grad(), g.dv = V.grad();
    return g;
}

}  // namespace

// ---- entry 44: scaled_dot_product_attention ------------------------------------------

TEST_CASE("scaled_dot_product_attention: the catalog's reference values, composite and fused") {
    // Q = [[1, 1]], K = [[1, 1], [0, 0]], V = I₂: e = (2/√2, 0), A = (0.804430, 0.195570) = output
    const Var Q(Tensor::from({1, 1}, {1, 1, 2})), K(Tensor::from({1, 1, 0, 0}, {1, 2, 2}));
    const Var V(Tensor::from({1, 0, 0, 1}, {1, 2, 2}));
    const AttentionOutput composite = scaled_dot_product_attention(Q, K, V);
    const AttentionOutput fused = scaled_dot_product_attention_fused(Q, K, V, {}, fused_options(false, true));
    for (const AttentionOutput* a : {&composite, &fused}) {
        CHECK(std::abs(a->weights.value()[0] - 0.804430) < 1e-6);
        CHECK(std::abs(a->weights.value()[1] - 0.195570) < 1e-6);
        CHECK(std::abs(a->output.value()[0] - 0.804430) < 1e-6);
        CHECK(std::abs(a->output.value()[1] - 0.195570) < 1e-6);
    }
}

TEST_CASE("scaled_dot_product_attention: rows sum to 1, masked entries are 0, a fully masked row gives 0 and no gradient") {
    Generator gen(44);
    const Tensor q = Tensor::normal({3, 4, 5}, 0, 1, gen), k = Tensor::normal({3, 6, 5}, 0, 1, gen);
    const Tensor v = Tensor::normal({3, 6, 2}, 0, 1, gen);
    const Tensor mask = combine_masks(padding({6, 3, 0}, 6), holes(4, 6, 2, 9));  // example 2 and row 2: empty
    for (bool fused : {false, true}) {
        CAPTURE(fused);
        Var Q(q, true), K(k, true), V(v, true);
        AttentionOutput a = fused ? scaled_dot_product_attention_fused(Q, K, V, mask, fused_options(false, true))
                                  : scaled_dot_product_attention(Q, K, V, mask);
        const Tensor full = expand(mask, Shape{3, 4, 6});
        for (int64_t b = 0; b < 3; ++b)
            for (int64_t i = 0; i < 4; ++i) {
                double row = 0, kept = 0;
                for (int64_t j = 0; j < 6; ++j) {
                    const double w = a.weights.value()[(b * 4 + i) * 6 + j];
                    if (full[(b * 4 + i) * 6 + j] == 0) CHECK(w == 0);
                    row += w, kept += full[(b * 4 + i) * 6 + j];
                }
                CHECK(std::abs(row - (kept > 0 ? 1 : 0)) < 1e-12);
                if (kept == 0)
                    for (int64_t c = 0; c < 2; ++c) CHECK(a.output.value()[(b * 4 + i) * 2 + c] == 0);
            }
        a.output.backward(Tensor::ones(a.output.shape()));
        for (int64_t i = 0; i < Q.numel(); ++i) REQUIRE(std::isfinite(Q.grad()[i]));
        for (int64_t c = 0; c < 5; ++c) {
            CHECK(Q.grad()[(0 * 4 + 2) * 5 + c] == 0);  // row 2 of example 0: every key masked
            CHECK(Q.grad()[(2 * 4 + 1) * 5 + c] == 0);  // example 2: every key padding
        }
        for (int64_t i = 0; i < 6 * 5; ++i) CHECK(K.grad()[2 * 6 * 5 + i] == 0);
    }
}

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
        const Grads composite = run_with_grads(
            [&](const Var& Q, const Var& K, const Var& V) {
                return scaled_dot_product_attention(Q, K, V, c.mask, c.causal).output;
            },
            q, k, v, G);
        const Grads fused = run_with_grads(
            [&](const Var& Q, const Var& K, const Var& V) {
                return scaled_dot_product_attention_fused(Q, K, V, c.mask, fused_options(c.causal)).output;
            },
            q, k, v, G);
        check_close(fused.out, composite.out, 1e-12, "output");
        check_close(fused.dq, composite.dq, 1e-11, "dQ");
        check_close(fused.dk, composite.dk, 1e-11, "dK");
        check_close(fused.dv, composite.dv, 1e-11, "dV");
        // The weights, when requested, are the composite's.
        const AttentionOutput with_weights =
            scaled_dot_product_attention_fused(Var(q), Var(k), Var(v), c.mask, fused_options(c.causal, true));
        check_close(with_weights.weights.value(),
                    scaled_dot_product_attention(Var(q), Var(k), Var(v), c.mask, c.causal).weights.value(), 1e-12,
                    "weights");
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
            Var out = fused ? scaled_dot_product_attention_fused(X, X, X, mask, fused_options(true)).output
                            : scaled_dot_product_attention(X, X, X, mask, true).output;
            out.backward(G);
        }
        grads[fused] = X.grad();
    }
    check_close(grads[1], grads[0], 1e-11, "∂L/∂X accumulated over two passes");
}

TEST_CASE("scaled_dot_product_attention: the fused version returns no weights unless asked") {
    Generator gen(1);
    const Var Q(Tensor::normal({2, 8, 4}, 0, 1, gen), true), K(Tensor::normal({2, 8, 4}, 0, 1, gen));
    const AttentionOutput a = scaled_dot_product_attention_fused(Q, K, K, {}, fused_options(true));
    CHECK(a.output.shape() == Shape{2, 8, 4});
    CHECK_FALSE(a.weights.defined());
    CHECK(std::string(a.output.op()) == "scaled_dot_product_attention_fused");
}

TEST_CASE("scaled_dot_product_attention: shape errors name the mechanism and the shapes") {
    const Var q(Tensor::zeros({2, 3, 4})), k(Tensor::zeros({2, 5, 4})), v(Tensor::zeros({2, 5, 3}));
    CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, Var(Tensor::zeros({2, 5, 6})), v),
                         doctest::Contains("scaled_dot_product_attention: queries 2×3×4, keys 2×5×6"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(scaled_dot_product_attention_fused(q, k, Var(Tensor::zeros({3, 5, 3}))),
                         doctest::Contains("same leading (batch) axes"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(scaled_dot_product_attention_fused(q, k, v, Tensor::ones({4, 5})),
                         doctest::Contains("mask 4×5 does not broadcast to the scores 2×3×5"), std::invalid_argument);
}

// ---- entry 45: restricted_self_attention ------------------------------------------------

TEST_CASE("restricted_self_attention: the banded implementation equals the masked full one, value and gradient") {
    Generator gen(45);
    const int64_t B = 2, n = 9, d = 4;
    const Tensor q = Tensor::normal({B, n, d}, 0, 1, gen), k = Tensor::normal({B, n, d}, 0, 1, gen);
    const Tensor v = Tensor::normal({B, n, 3}, 0, 1, gen), G = Tensor::normal({B, n, 3}, 0, 1, gen);
    for (int64_t r : {0, 1, 3}) {
        for (bool padded : {false, true}) {
            CAPTURE(r);
            CAPTURE(padded);
            const Tensor pad = padded ? length_mask({9, 4}, n) : Tensor();
            const Tensor full_mask = combine_masks(band_mask(n, r), padded ? key_mask(pad) : Tensor());
            const Grads banded = run_with_grads(
                [&](const Var& Q, const Var& K, const Var& V) { return restricted_self_attention(Q, K, V, r, pad).output; },
                q, k, v, G);
            const Grads full = run_with_grads(
                [&](const Var& Q, const Var& K, const Var& V) {
                    return scaled_dot_product_attention(Q, K, V, full_mask).output;
                },
                q, k, v, G);
            check_close(banded.out, full.out, 1e-12, "output");
            check_close(banded.dq, full.dq, 1e-12, "dQ");
            check_close(banded.dk, full.dk, 1e-12, "dK");
            check_close(banded.dv, full.dv, 1e-12, "dV");
            const AttentionOutput a = restricted_self_attention(Var(q), Var(k), Var(v), r, pad);
            CHECK(a.weights.shape() == Shape{B, n, 2 * r + 1});  // the band only, never n×n
            check_close(band_to_dense(a.weights.value(), r),
                        scaled_dot_product_attention(Var(q), Var(k), Var(v), full_mask).weights.value(), 1e-12,
                        "weights");
        }
    }
}

TEST_CASE("restricted_self_attention: r >= n − 1 is full attention; row i ignores rows outside [i − r, i + r]") {
    Generator gen(4545);
    const int64_t n = 7, r = 2;
    const Tensor x = Tensor::normal({1, n, 3}, 0, 1, gen);
    const AttentionOutput wide = restricted_self_attention(Var(x), Var(x), Var(x), n - 1);
    check_close(wide.output.value(), scaled_dot_product_attention(Var(x), Var(x), Var(x)).output.value(), 1e-12,
                "r = n − 1");
    check_close(restricted_self_attention(Var(x), Var(x), Var(x), n + 5).output.value(), wide.output.value(), 1e-12,
                "r > n − 1");

    const Tensor y = restricted_self_attention(Var(x), Var(x), Var(x), r).output.value();
    Tensor changed = x.clone();
    for (int64_t c = 0; c < 3; ++c) changed[6 * 3 + c] += 5;  // row 6 is outside [0, 4]: rows 0..3 keep their output
    const Tensor y2 = restricted_self_attention(Var(x), Var(changed), Var(changed), r).output.value();
    for (int64_t i = 0; i < n; ++i)
        for (int64_t c = 0; c < 3; ++c) {
            CAPTURE(i);
            if (i + r < 6) CHECK(y2[i * 3 + c] == y[i * 3 + c]);
            else CHECK(y2[i * 3 + c] != y[i * 3 + c]);
        }
}
