// Catalog entries 44 (scaled_dot_product_attention, composite and fused) and
// 45 (restricted_self_attention), double build: their independent references
// and registry entries (tests/grad/catalog.hpp), then the catalog's reference
// values and properties, and the fused kernel against its composite twin in
// value and gradient on shapes that cross its tiles.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "attention/fused_attention.hpp"
#include "attention/transformer.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/catalog.hpp"
#include "tests/grad/helpers.hpp"
#include "tests/grad/transformer_reference.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

// Like holes, but row `late_row` keeps only keys from the second tile (j ≥ 128) on.
Tensor late_keys_only(int64_t m, int64_t n, int64_t late_row, uint64_t seed) {
    Tensor mask = holes(m, n, -1, seed);
    for (int64_t j = 0; j < n; ++j) mask[late_row * n + j] = j >= kFusedBlockKeys ? 1 : 0;
    return mask;
}

FusedAttentionOptions fused_options(bool causal, bool need_weights = false) {
    FusedAttentionOptions o;
    o.causal = causal;
    o.need_weights = need_weights;
    return o;
}

// ---- the independent references: the catalog's formulas in plain loops ------------------

// 44: Attn(Q, K, V; M) = softmax_row(Q Kᵀ / √d_k + M) V
//   Q …×m×d_k, K …×n×d_k, V …×n×d_v ("…" = B, or B×h for heads) → output …×m×d_v,
//   weights …×m×n. `visible` says which keys each query sees (its padding
//   is indexed by the first axis, b, shared by the heads of an example).
std::vector<Expected> sdpa_reference(const Array& Q, const Array& K, const Array& V, const Visible& visible) {
    const int64_t m = Q.size(-2), n = K.size(-2), d_k = Q.size(-1), d_v = V.size(-1);
    const int64_t leading = Q.numel() / (m * d_k), per_example = leading / Q.size(0);
    std::vector<int64_t> output_shape = Q.shape(), weights_shape = Q.shape();
    output_shape.back() = d_v, weights_shape.back() = n;
    Array O(output_shape), A(weights_shape);
    for (int64_t t = 0; t < leading; ++t) {
        const std::vector<Vec> q = rows_of(Q, t), k = rows_of(K, t), v = rows_of(V, t);
        for (int64_t i = 0; i < m; ++i) {
            const Vec keep = visible.keep(t / per_example, i, m, n);
            const Attended a = one_query_attention(q[static_cast<size_t>(i)], k, v, keep, std::sqrt(double(d_k)));
            set_flat_row(O, t, i, a.output);
            set_flat_row(A, t, i, a.weights);
        }
    }
    return {{"output", O}, {"weights", A}};
}

// 45: a_i = softmax_j(q_i·k_j / √d_k) over the keys with |i − j| ≤ r (and the
//   padding), y_i = Σ_j a_ij v_j. Q, K B×n×d_k, V B×n×d_v → output B×n×d_v, the
//   weights B×n×n ("dense_weights") and their band B×n×(2r+1), column o = key i + o − r.
std::vector<Expected> restricted_reference(const Ref& r, int64_t radius) {
    const Array &Q = r.x[0], &K = r.x[1], &V = r.x[2];
    const int64_t B = Q.size(0), n = Q.size(1), d_k = Q.size(2), w = 2 * radius + 1;
    Visible visible;
    if (!r.masks.empty()) visible.padding = r.masks[0];
    visible.band = radius;
    Array O({B, n, V.size(2)}), band({B, n, w}), dense({B, n, n});
    for (int64_t b = 0; b < B; ++b) {
        const std::vector<Vec> q = rows_of(Q, b), k = rows_of(K, b), v = rows_of(V, b);
        for (int64_t i = 0; i < n; ++i) {
            const Attended a =
                one_query_attention(q[static_cast<size_t>(i)], k, v, visible.keep(b, i, n, n), std::sqrt(double(d_k)));
            set_row(O, b, i, a.output);
            set_row(dense, b, i, a.weights);
            for (int64_t o = 0; o < w; ++o) {
                const int64_t j = i + o - radius;
                if (j >= 0 && j < n) band(b, i, o) = a.weights[static_cast<size_t>(j)];
            }
        }
    }
    return {{"output", O}, {"weights", band}, {"dense_weights", dense}};
}

// ---- entry 44: the cases, each run composite and fused --------------------------------------

// A case of entry 44: masks[0] is a B×n padding mask (or undefined), masks[1]
// an m×n mask of holes; `causal` adds the causal rule.
struct SdpaCase {
    std::string variant;
    Shape q, k, v;
    bool causal = false;
    std::vector<Tensor> masks = {};
};

bool has_padding(const std::vector<Tensor>& masks) { return !masks.empty() && masks[0].defined(); }
bool has_holes(const std::vector<Tensor>& masks) { return masks.size() > 1 && masks[1].defined(); }

// The keep mask the mechanism gets: the padding as B×1×n (B×1×1×n for heads) times the holes.
Tensor sdpa_mask(const std::vector<Tensor>& masks, int rank) {
    Tensor M = has_padding(masks) ? key_mask(masks[0]) : Tensor();
    if (M.defined() && rank == 4) M = mask_for_heads(M);
    return combine_masks(M, has_holes(masks) ? masks[1] : Tensor());
}

// What generic tests 3 and 4 check on a case of entry 44, as far as its
// options allow: a padding KeySet (rank 3), rows summing to 1, a convex
// combination of the values (unless some query sees nothing), invariance to
// the order of the keys (without causal rule or holes), and the causal rule.
void sdpa_checks(Case& c, const SdpaCase& s, bool need_weights) {
    const bool rank3 = s.q.rank() == 3, pad = has_padding(s.masks), holes_ = has_holes(s.masks);
    const int64_t m = s.q[s.q.rank() - 2], n = s.k[s.k.rank() - 2];
    const std::vector<std::string> weights =
        need_weights ? std::vector<std::string>{"weights"} : std::vector<std::string>{};
    const std::vector<int> masks_of_keys = pad ? std::vector<int>{0} : std::vector<int>{};
    if (pad && rank3) c.masking = {{0, {1, 2}, weights, {"output"}}};
    if (need_weights) c.properties.push_back(rows_sum_to_one("weights"));
    if (rank3 && !holes_ && !(s.causal && m > n)) c.properties.push_back(convex_combination("output", 2, pad ? 0 : -1));
    if (rank3 && !s.causal && !holes_) {
        c.properties.push_back(permutation_invariant({1, 2}, masks_of_keys, {"output"}));
        if (need_weights) c.properties.push_back(permutation_equivariant_keys({1, 2}, masks_of_keys, weights));
    }
    if (s.causal && m == n && !holes_) {
        std::vector<QueryRows> rows = {{"output", -2}};
        if (need_weights) rows.push_back({"weights", -2});
        c.properties.push_back(causal_rows({0, 1, 2}, rows));
    }
}

Case sdpa_case(const SdpaCase& s, bool fused, bool need_weights = true) {
    Case c;
    c.variant = std::string(fused ? "fused" : "composite") + (fused && !need_weights ? " without weights" : "") +
                ", " + s.variant;
    c.inputs = {s.q, s.k, s.v};
    c.masks = s.masks;
    const bool causal = s.causal;
    c.run = [causal, fused, need_weights](Module*, In x, Masks masks) -> Outputs {
        const Tensor M = sdpa_mask(masks, x[0].rank());
        if (!fused) {
            const AttentionOutput a = scaled_dot_product_attention(x[0], x[1], x[2], M, causal);
            return {{"output", a.output}, {"weights", a.weights}};
        }
        const AttentionOutput a =
            scaled_dot_product_attention_fused(x[0], x[1], x[2], M, fused_options(causal, need_weights));
        if (!need_weights) return {{"output", a.output}};
        return {{"output", a.output}, {"weights", a.weights, false}};  // materialised, outside the graph
    };
    c.reference = [causal, need_weights](const Ref& r) {
        Visible visible;
        visible.causal = causal;
        if (!r.masks.empty()) visible.padding = r.masks[0];
        if (r.masks.size() > 1) visible.holes = r.masks[1];
        std::vector<Expected> e = sdpa_reference(r.x[0], r.x[1], r.x[2], visible);
        if (!need_weights) e.pop_back();
        return e;
    };
    sdpa_checks(c, s, need_weights);
    return c;
}

// Every option on small shapes.
std::vector<SdpaCase> sdpa_variants() {
    return {
        {"3 queries over 5 keys, d_k 4, d_v 3", {2, 3, 4}, {2, 5, 4}, {2, 5, 3}},
        {"m = n = d_k = d_v = 4 (Aᵀ V is shape-valid)", {2, 4, 4}, {2, 4, 4}, {2, 4, 4}},
        {"padding {3, 5}", {2, 3, 4}, {2, 5, 4}, {2, 5, 3}, false, {keep_first({3, 5}, 5)}},
        {"causal, m = n = 4", {2, 4, 3}, {2, 4, 3}, {2, 4, 2}, true},
        {"causal with m = 3 < n = 5 (j ≤ i + 2), padding {4, 5}", {2, 3, 3}, {2, 5, 3}, {2, 5, 2}, true,
         {keep_first({4, 5}, 5)}},
        {"causal with m = 5 > n = 3: queries 0 and 1 see nothing", {2, 5, 3}, {2, 3, 3}, {2, 3, 2}, true},
        {"heads B×h×m×d (h = 3), padding {3, 5} lifted to B×1×1×n", {2, 3, 3, 4}, {2, 3, 5, 4}, {2, 3, 5, 3}, false,
         {keep_first({3, 5}, 5)}},
        {"heads, causal m = n = 4", {2, 2, 4, 3}, {2, 2, 4, 3}, {2, 2, 4, 2}, true},
        {"padding {4, 5} and an m×n mask of holes with an empty row", {2, 3, 4}, {2, 5, 4}, {2, 5, 3}, false,
         {keep_first({4, 5}, 5), holes(3, 5, 1, 11)}},
    };
}

// Shapes that cross the fused kernel's 128×128 tiles: several query blocks,
// several key blocks, the causal skip of whole tiles.
std::vector<SdpaCase> tile_variants() {
    return {
        {"2×2 tiles (130 queries, 135 keys), causal and holes", {1, 130, 3}, {1, 135, 3}, {1, 135, 2}, true,
         {Tensor(), holes(130, 135, 5, 3)}},
        {"2 query tiles, causal m = 140 > n = 9", {1, 140, 3}, {1, 9, 3}, {1, 9, 2}, true},
        {"2 key tiles, causal m = 70 < n = 200 (j ≤ i + 130), padding {190}", {1, 70, 2}, {1, 200, 2}, {1, 200, 2},
         true, {keep_first({190}, 200)}},
        {"2 key tiles, m = n = 129, padding {129, 64}", {2, 129, 2}, {2, 129, 2}, {2, 129, 2}, false,
         {keep_first({129, 64}, 129)}},
        {"query 0 sees nothing in the first key tile, only in the second", {1, 3, 2}, {1, 135, 2}, {1, 135, 2},
         false, {Tensor(), late_keys_only(3, 135, 0, 7)}},
    };
}

std::vector<Case> sdpa_cases(bool fused) {
    std::vector<Case> cases;
    for (const SdpaCase& s : sdpa_variants()) cases.push_back(sdpa_case(s, fused));
    if (fused)
        for (const SdpaCase& s : tile_variants()) cases.push_back(sdpa_case(s, fused));
    return cases;
}

const RegisterEntry sdpa_composite(44, "scaled_dot_product_attention", sdpa_cases(false));
const RegisterEntry sdpa_fused(44, "scaled_dot_product_attention", sdpa_cases(true));
const RegisterEntry sdpa_fused_without_weights(
    44, "scaled_dot_product_attention",
    {sdpa_case({"causal m = n = 4, padding {2, 4}", {2, 4, 3}, {2, 4, 3}, {2, 4, 2}, true, {keep_first({2, 4}, 4)}},
               true, false)});

// ---- entry 45 -----------------------------------------------------------------------------

// Row i of the output does not change when rows outside [i − r, i + r] of
// the queries, keys and values change.
Property band_locality(int64_t radius) {
    return {"row i ignores the rows outside [i − r, i + r]", [radius](const PropertyContext& c) -> std::string {
                const int64_t B = c.inputs[0].size(0), n = c.inputs[0].size(1);
                const Tensor before = c.run(c.inputs, c.masks)["output"];
                const int64_t d_v = before.size(2);
                for (int64_t p = 0; p < n; ++p) {
                    std::vector<Tensor> x = c.inputs;
                    for (Tensor& t : x) {
                        t = t.clone();
                        const int64_t d = t.size(2);
                        for (int64_t b = 0; b < B; ++b)
                            for (int64_t k = 0; k < d; ++k) t[(b * n + p) * d + k] += real(2.5);
                    }
                    const Tensor after = c.run(x, c.masks)["output"];
                    for (int64_t b = 0; b < B; ++b)
                        for (int64_t i = 0; i < n; ++i)
                            for (int64_t k = 0; k < d_v && std::abs(i - p) > radius; ++k) {
                                const int64_t o = (b * n + i) * d_v + k;
                                if (before[o] != after[o])
                                    return "row " + std::to_string(i) + " of example " + std::to_string(b) +
                                           " changed when row " + std::to_string(p) + " changed";
                            }
                }
                return "";
            }};
}

Case restricted_case(std::string variant, int64_t B, int64_t n, int64_t radius, std::vector<Tensor> masks = {},
                     int64_t d_v = 2) {
    Case c;
    c.variant = std::move(variant);
    c.inputs = {Shape{B, n, 3}, Shape{B, n, 3}, Shape{B, n, d_v}};
    c.masks = std::move(masks);
    c.run = [radius](Module*, In x, Masks m) -> Outputs {
        const AttentionOutput a = restricted_self_attention(x[0], x[1], x[2], radius, m.empty() ? Tensor() : m[0]);
        const Var dense(band_to_dense(a.weights.value(), radius));  // for drawing: outside the graph
        return {{"output", a.output}, {"weights", a.weights}, {"dense_weights", dense, false}};
    };
    c.reference = [radius](const Ref& r) { return restricted_reference(r, radius); };
    c.properties = {rows_sum_to_one("weights"), rows_sum_to_one("dense_weights"), band_locality(radius)};
    if (!c.masks.empty()) c.masking = {{0, {1, 2}, {"dense_weights"}, {"output", "weights"}}};
    return c;
}

const RegisterEntry restricted_entry(45, "restricted_self_attention", {
    restricted_case("r = 1, n = 6", 2, 6, 1),
    restricted_case("r = 2, n = 5, padding {3, 5}", 2, 5, 2, {keep_first({3, 5}, 5)}),
    restricted_case("r = 0: each position sees only itself", 2, 4, 0),
    restricted_case("r = 1, d_k = d_v = 3 (keys and values interchangeable in shape)", 2, 5, 1, {}, 3),
    restricted_case("r = 5 ≥ n − 1 = 3 (full attention), padding {2, 4}", 2, 4, 5, {keep_first({2, 4}, 4)}),
});

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
                return scaled_dot_product_attention_fused(Q, K, V, c.mask, fused_options(c.causal)).output;
            },
            q, k, v, G);
        check_max_difference(fused.out, composite.out, 1e-12, "output");
        check_max_difference(fused.dq, composite.dq, 1e-11, "dQ");
        check_max_difference(fused.dk, composite.dk, 1e-11, "dK");
        check_max_difference(fused.dv, composite.dv, 1e-11, "dV");
        // The weights, when requested, are the composite's.
        const AttentionOutput with_weights =
            scaled_dot_product_attention_fused(Var(q), Var(k), Var(v), c.mask, fused_options(c.causal, true));
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
            Var out = fused ? scaled_dot_product_attention_fused(X, X, X, mask, fused_options(true)).output
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
            const OutputAndGradients banded = run_with_gradients(
                [&](const Var& Q, const Var& K, const Var& V) { return restricted_self_attention(Q, K, V, r, pad).output; },
                q, k, v, G);
            const OutputAndGradients full = run_with_gradients(
                [&](const Var& Q, const Var& K, const Var& V) {
                    return scaled_dot_product_attention(Q, K, V, full_mask).output;
                },
                q, k, v, G);
            check_max_difference(banded.out, full.out, 1e-12, "output");
            check_max_difference(banded.dq, full.dq, 1e-12, "dQ");
            check_max_difference(banded.dk, full.dk, 1e-12, "dK");
            check_max_difference(banded.dv, full.dv, 1e-12, "dV");
            const AttentionOutput a = restricted_self_attention(Var(q), Var(k), Var(v), r, pad);
            CHECK(a.weights.shape() == Shape{B, n, 2 * r + 1});  // the band only, never n×n
            check_max_difference(band_to_dense(a.weights.value(), r),
                                 scaled_dot_product_attention(Var(q), Var(k), Var(v), full_mask).weights.value(), 1e-12,
                                 "weights");
        }
    }
}

TEST_CASE("restricted_self_attention: r >= n − 1 is full attention") {
    Generator gen(4545);
    const int64_t n = 7;
    const Tensor x = Tensor::normal({1, n, 3}, 0, 1, gen);
    const AttentionOutput wide = restricted_self_attention(Var(x), Var(x), Var(x), n - 1);
    check_max_difference(wide.output.value(), scaled_dot_product_attention(Var(x), Var(x), Var(x)).output.value(),
                         1e-12, "r = n − 1");
    check_max_difference(restricted_self_attention(Var(x), Var(x), Var(x), n + 5).output.value(), wide.output.value(),
                         1e-12, "r > n − 1");
}
