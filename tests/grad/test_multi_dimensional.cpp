// Catalog entry 30, `multi_dimensional_attention` (attention/multi_dimensional.hpp):
// its independent reference and registry entry (tests/grad/catalog.hpp), and
// the catalog's property tests in double precision: every column of A sums to
// 1; with equal columns of W_d, every column is the additive score's soft
// weights; each c_i stays in the range of its column of V; a fully masked row
// gives zeros and no gradient.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <sstream>
#include <vector>

#include "attention/alignments.hpp"
#include "attention/multi_dimensional.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/catalog.hpp"
#include "tests/grad/helpers.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

// ---- the independent reference: the catalog's formula in plain loops ----------------------

// Whether query i of example b may attend to key l: a B×n key mask, an m×n
// mask shared by the batch (`shared`), a (B or 1)×m×n keep mask, or none.
double keeps(const Array& mask, int64_t b, int64_t i, int64_t l, bool shared = false) {
    if (mask.numel() == 0) return 1;
    if (mask.rank() == 2) return shared ? mask(i, l) : mask(b, l);
    return mask(mask.size(0) == 1 ? 0 : b, i, l);
}

// 30: h_l = act(W_1 q + W_2 k_l + b) ∈ ℝ^{d_w};  e_l = W_dᵀ h_l ∈ ℝ^{d_v}
//     a_{l,i} = exp(e_{l,i}) / Σ_j exp(e_{j,i})   over the kept keys j: a softmax per feature i
//     c = Σ_l a_l ∘ v_l
// queries B×m×d_q, keys B×n×d_k, values B×n×d_v (inputs q, k, v of the case)
// → output B×m×d_v, weights B×m×n×d_v
// (`shared`: a rank-2 mask is m×n for every example, not a B×n key mask)
std::vector<Expected> multi_dimensional_attention_reference(const Ref& r, double (*act)(double), size_t q = 0,
                                                            size_t k = 1, size_t v = 2, bool shared = false) {
    const Array &Q = r.x[q], &K = r.x[k], &V = r.x[v];
    const Array mask = r.masks.empty() ? Array() : r.masks[0];
    const Array W_1 = r.p["W_1"], W_2 = r.p["W_2"], W_d = r.p["W_d"];
    const Vec bias = vec(r.p["b"]);
    const int64_t B = Q.size(0), m = Q.size(1), n = K.size(1), d_v = V.size(2);
    Array output({B, m, d_v}), A({B, m, n, d_v});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < m; ++i) {
            std::vector<Vec> e;  // e[l] = e_l ∈ ℝ^{d_v}
            Vec keep;
            for (int64_t l = 0; l < n; ++l) {
                const Vec h = testing::each(add(add(matvec(W_1, row(Q, b, i)), matvec(W_2, row(K, b, l))), bias), act);
                e.push_back(matvec_t(W_d, h));
                keep.push_back(keeps(mask, b, i, l, shared));
            }
            for (int64_t f = 0; f < d_v; ++f) {
                Vec column;  // e_{·,f}: feature f of every key
                for (int64_t l = 0; l < n; ++l) column.push_back(e[static_cast<size_t>(l)][static_cast<size_t>(f)]);
                const Vec a = softmax(column, keep);
                double c = 0;
                for (int64_t l = 0; l < n; ++l) {
                    A(b, i, l, f) = a[static_cast<size_t>(l)];
                    c += a[static_cast<size_t>(l)] * V(b, l, f);
                }
                output(b, i, f) = c;
            }
        }
    return {{"output", output}, {"weights", A}};
}

// ---- runs, masks and properties ------------------------------------------------------------

// A B×n key mask becomes B×1×n; a rank-3 keep mask goes as it is (run_self_m_by_n passes an m×n one).
Tensor module_mask(Masks m) {
    if (m.empty()) return Tensor();
    return m[0].rank() == 2 ? key_mask(m[0]) : m[0];
}

Outputs run_qkv(Module* m, In x, Masks masks) {
    return output_and_weights(as<MultiDimensionalAttention>(m).forward(x[0], x[1], x[2], module_mask(masks)));
}

// Self-attention: the queries are the keys (input 0), the values input 1.
Outputs run_self(Module* m, In x, Masks masks) {
    return output_and_weights(as<MultiDimensionalAttention>(m).forward(x[0], x[0], x[1], module_mask(masks)));
}

// The mask as the module takes it: causal_mask(n, n) is m×n, broadcast over the batch and the features.
Outputs run_self_m_by_n(Module* m, In x, Masks masks) {
    return output_and_weights(as<MultiDimensionalAttention>(m).forward(x[0], x[0], x[1], masks[0]));
}

// 1×n×n: query i keeps keys l ≤ i (DiSAN's forward mask), or l ≥ i (its backward mask).
Tensor directional_mask(int64_t n, bool forward) {
    Tensor keep = Tensor::zeros(Shape{1, n, n});
    for (int64_t i = 0; i < n; ++i)
        for (int64_t l = 0; l < n; ++l) keep[i * n + l] = (forward ? l <= i : l >= i) ? 1 : 0;
    return keep;
}

// 2×3×4: a different pattern per query; query 0 of example 1 keeps nothing.
Tensor per_query_mask() {
    return Tensor::from({1, 1, 0, 1, 0, 1, 1, 1, 1, 0, 0, 0,  //
                         0, 0, 0, 0, 1, 1, 1, 1, 0, 1, 1, 0},
                        Shape{2, 3, 4});
}

// A masked key gets weight exactly 0 in every feature column.
const Property masked_keys_get_zero{
    "a masked key gets weight 0 in every feature", [](const PropertyContext& c) -> std::string {
        const Array A(c.run(c.inputs, c.masks)["weights"]), mask(c.masks[0]);
        for (int64_t b = 0; b < A.size(0); ++b)
            for (int64_t i = 0; i < A.size(1); ++i)
                for (int64_t l = 0; l < A.size(2); ++l)
                    for (int64_t f = 0; f < A.size(3); ++f)
                        if (keeps(mask, b, i, l) == 0 && A(b, i, l, f) != 0) {
                            std::ostringstream os;
                            os << "weights [" << b << ", " << i << ", " << l << ", " << f << "] = " << A(b, i, l, f)
                               << " for a masked key";
                            return os.str();
                        }
        return "";
    }};

// ---- the registry entry -------------------------------------------------------------------
const RegisterEntry multi_dimensional_attention_entry(30, "multi_dimensional_attention", {
    {.variant = "3 queries of 3, 4 keys of 5, d_w 4, d_v 2, a key mask (lengths 4, 2)",
     .inputs = {Shape{2, 3, 3}, Shape{2, 4, 5}, Shape{2, 4, 2}},
     .masks = {keep_first({4, 2}, 4)},
     .make = [](Generator& g) { return std::make_unique<MultiDimensionalAttention>(3, 5, 4, 2, g); },
     .run = run_qkv,
     .reference = [](const Ref& r) { return multi_dimensional_attention_reference(r, tanh_); },
     // the weights' last axis is the feature, not the key: zero weights are checked by masked_keys_get_zero
     .masking = {{.mask = 0, .inputs = {1, 2}, .weights = {}, .zero_when_empty = {"output", "weights"}}},
     .properties = {columns_sum_to_one("weights"), convex_combination("output", 2, 0), masked_keys_get_zero,
                    permutation_invariant({1, 2}, {0}, {"output"})}},
    {.variant = "square W_1, W_2, W_d (d_q = d_k = d_w = d_v = 3), 2 queries, 5 keys, no mask",
     .inputs = {Shape{2, 2, 3}, Shape{2, 5, 3}, Shape{2, 5, 3}},
     .make = [](Generator& g) { return std::make_unique<MultiDimensionalAttention>(3, 3, 3, 3, g); },
     .run = run_qkv,
     .reference = [](const Ref& r) { return multi_dimensional_attention_reference(r, tanh_); },
     .properties = {columns_sum_to_one("weights"), convex_combination("output", 2)}},
    {.variant = "self-attention under DiSAN's forward mask, d_v 2",
     .inputs = {Shape{2, 4, 3}, Shape{2, 4, 2}},
     .masks = {directional_mask(4, true)},
     .make = [](Generator& g) { return std::make_unique<MultiDimensionalAttention>(3, 3, 4, 2, g); },
     .run = run_self,
     .reference = [](const Ref& r) { return multi_dimensional_attention_reference(r, tanh_, 0, 0, 1); },
     .properties = {columns_sum_to_one("weights"), masked_keys_get_zero}},
    {.variant = "self-attention under causal_mask(4, 4), an m×n mask shared by the batch",
     .inputs = {Shape{2, 4, 3}, Shape{2, 4, 3}},
     .masks = {causal_mask(4, 4)},
     .make = [](Generator& g) { return std::make_unique<MultiDimensionalAttention>(3, 3, 2, 3, g); },
     .run = run_self_m_by_n,
     .reference = [](const Ref& r) { return multi_dimensional_attention_reference(r, tanh_, 0, 0, 1, true); },
     .properties = {columns_sum_to_one("weights")}},
    {.variant = "self-attention under DiSAN's backward mask, sigmoid activation",
     .inputs = {Shape{2, 4, 2}, Shape{2, 4, 3}},
     .masks = {directional_mask(4, false)},
     .make = [](Generator& g) {
         return std::make_unique<MultiDimensionalAttention>(2, 2, 3, 3, g, Activation::sigmoid);
     },
     .run = run_self,
     .reference = [](const Ref& r) { return multi_dimensional_attention_reference(r, sigmoid, 0, 0, 1); },
     .properties = {columns_sum_to_one("weights"), masked_keys_get_zero}},
    {.variant = "relu activation, a mask per query with one query that keeps nothing",
     .inputs = {Shape{2, 3, 2}, Shape{2, 4, 3}, Shape{2, 4, 4}},
     .masks = {per_query_mask()},
     .make = [](Generator& g) { return std::make_unique<MultiDimensionalAttention>(2, 3, 5, 4, g, Activation::relu); },
     .run = run_qkv,
     .reference = [](const Ref& r) { return multi_dimensional_attention_reference(r, relu); },
     .properties = {columns_sum_to_one("weights"), masked_keys_get_zero}},
    // d_v = 1: one column of weights, which broadcasts against values of any
    // width. Values two wide are not the case's: refused, not weighed.
    {.variant = "d_v 1 (one feature), a key mask (lengths 3, 1); values one column wider are refused",
     .inputs = {Shape{2, 2, 3}, Shape{2, 3, 2}, Shape{2, 3, 1}},
     .masks = {keep_first({3, 1}, 3)},
     .make = [](Generator& g) { return std::make_unique<MultiDimensionalAttention>(3, 2, 4, 1, g); },
     .run = run_qkv,
     .reference = [](const Ref& r) { return multi_dimensional_attention_reference(r, tanh_); },
     .masking = {{.mask = 0, .inputs = {1, 2}, .weights = {}, .zero_when_empty = {"output", "weights"}}},
     .properties = {columns_sum_to_one("weights"), masked_keys_get_zero, refuses_wider(2, "values")}},
});

}  // namespace

TEST_CASE("multi_dimensional_attention: W_d with equal columns w gives additive_score + soft_alignment in every column") {
    Generator gen(2);
    MultiDimensionalAttention multi(3, 5, 4, 3, gen);
    AdditiveScore additive(3, 5, 4, gen);
    additive.W_1.value().copy_(multi.W_1.value());
    additive.W_2.value().copy_(multi.W_2.value());
    additive.b.value().copy_(multi.b.value());
    for (int64_t h = 0; h < 4; ++h)
        for (int64_t j = 0; j < 3; ++j) multi.W_d.value().at({h, j}) = additive.w.value()[h];  // every column = w

    const Var Q(Tensor::normal(Shape{2, 2, 3}, 0, 1, gen)), K(Tensor::normal(Shape{2, 6, 5}, 0, 1, gen));
    const Var V(Tensor::normal(Shape{2, 6, 3}, 0, 1, gen));
    const Tensor mask = key_mask(length_mask({6, 4}, 6));
    const Tensor A = multi.forward(Q, K, V, mask).weights.value();
    const Tensor a = SoftAlignment().align({additive.score(Q, K), mask, Var(), Tensor()}).value();
    for (int64_t r = 0; r < 4; ++r)
        for (int64_t l = 0; l < 6; ++l)
            for (int64_t j = 0; j < 3; ++j) CHECK(std::abs(A[(r * 6 + l) * 3 + j] - a[r * 6 + l]) <= 1e-12);
}

TEST_CASE("multi_dimensional_attention: the features are weighed differently") {
    Generator gen(1);
    MultiDimensionalAttention attention(3, 5, 4, 3, gen);
    const Var Q(Tensor::normal(Shape{2, 2, 3}, 0, 1, gen)), K(Tensor::normal(Shape{2, 6, 5}, 0, 1, gen));
    const Var V(Tensor::normal(Shape{2, 6, 3}, 0, 1, gen));
    const AttentionOutput out = attention.forward(Q, K, V);
    REQUIRE(out.weights.shape() == Shape{2, 2, 6, 3});
    CHECK(std::abs(out.weights.value().at({0, 0, 0, 0}) - out.weights.value().at({0, 0, 0, 1})) > 1e-6);
}

TEST_CASE("multi_dimensional_attention: a fully masked example gives zero gradient to its queries too") {
    // (the registry checks the keys and values; a query is not a key, so it is checked here)
    Generator gen(3);
    MultiDimensionalAttention attention(2, 2, 3, 3, gen);
    Var Q(Tensor::normal(Shape{2, 3, 2}, 0, 1, gen), true), K(Tensor::normal(Shape{2, 5, 2}, 0, 1, gen), true);
    Var V(Tensor::normal(Shape{2, 5, 3}, 0, 1, gen), true);
    const AttentionOutput out = attention.forward(Q, K, V, key_mask(length_mask({5, 0}, 5)));
    sum(out.output * Var(Tensor::normal(out.output.shape(), 0, 1, gen))).backward();
    for (int64_t i = 9; i < 18; ++i) CHECK(out.output.value()[i] == 0);
    for (int64_t i = 6; i < 12; ++i) CHECK(Q.grad()[i] == 0);
    for (int64_t i = 0; i < 6; ++i) CHECK(Q.grad()[i] != 0);
}

TEST_CASE("multi_dimensional_attention: its taxonomy and its shape errors") {
    Generator gen(4);
    MultiDimensionalAttention attention(3, 5, 4, 3, gen);
    CHECK(attention.id() == "multi_dimensional_attention");
    CHECK(attention.taxonomy().dimensionality == "multi");
    CHECK(!single_dimensional_attention(attention.taxonomy()));
    CHECK_THROWS_WITH_AS(attention.forward(Var(Tensor::zeros(Shape{2, 1, 3})), Var(Tensor::zeros(Shape{2, 4, 4})),
                                           Var(Tensor::zeros(Shape{2, 4, 3}))),
                         "multi_dimensional_attention: queries 2×1×3, keys 2×4×4 and values 2×4×3 need widths "
                         "d_q = 3, d_k = 5, d_v = 3",
                         std::invalid_argument);
}
