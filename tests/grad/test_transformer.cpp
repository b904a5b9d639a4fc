// The Transformer's own mechanisms, double build: catalog entries 44
// (scaled_dot_product_attention, composite and fused), 45
// (restricted_self_attention), 48 (relative_position_self_attention), 50
// (random_synthesizer_attention), 82 (causal_self_attention) and 83
// (cross_attention), all in attention/transformer.hpp: their
// independent references and registry entries (tests/grad/catalog.hpp), then
// the catalog's reference values and properties, and the
// TransformerEncoderLayer and TransformerDecoderLayer against PyTorch
// (tests/fixtures/make_transformer_reference.py prints the values). The fused kernel's own tests
// against its composite twin are in test_fused_attention_grad.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attention/fused_attention.hpp"
#include "attention/multi_head.hpp"
#include "attention/self_attention.hpp"
#include "attention/scaled_dot_product.hpp"
#include "attention/transformer.hpp"
#include "autograd/gradcheck.hpp"
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
    Visible visible = visible_keys(r, false);
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

// 48: q_i = x_iᵀ W^Q, k_j = x_jᵀ W^K, v_j = x_jᵀ W^V      (W^Q, W^K, W^V d×d_z: the paper's XW form)
//     a^K_ij = w^K[clip(j − i, k) + k],  a^V_ij = w^V[clip(j − i, k) + k],  clip(x, k) = max(−k, min(k, x))
//     e_ij = q_i·(k_j + a^K_ij) / √d_z,  α_ij = softmax_j(e_ij + M_ij),  z_i = Σ_j α_ij (v_j + a^V_ij)
//   X B×n×d → Z B×n×d_z, weights B×n×n.
std::vector<Expected> relative_position_reference(const Ref& r, int64_t k, bool causal) {
    const Array& X = r.x[0];
    const Array W_Q = r.p["W_Q"], W_K = r.p["W_K"], W_V = r.p["W_V"], w_K = r.p["w_K"], w_V = r.p["w_V"];
    const int64_t B = X.size(0), n = X.size(1), d_z = W_Q.size(1);
    const Visible visible = visible_keys(r, causal);
    auto table_row = [k](int64_t i, int64_t j) { return std::max(-k, std::min(k, j - i)) + k; };
    Array Z({B, n, d_z}), A({B, n, n});
    for (int64_t b = 0; b < B; ++b) {
        const std::vector<Vec> x = rows_of(X, b);
        for (int64_t i = 0; i < n; ++i) {
            const Vec q = times(x[static_cast<size_t>(i)], W_Q);
            Vec e(static_cast<size_t>(n));
            for (int64_t j = 0; j < n; ++j) {
                const Vec key = add(times(x[static_cast<size_t>(j)], W_K), row(w_K, table_row(i, j)));
                e[static_cast<size_t>(j)] = dot(q, key) / std::sqrt(double(d_z));
            }
            const Vec alpha = softmax(e, visible.keep(b, i, n, n));
            Vec z(static_cast<size_t>(d_z), 0.0);
            for (int64_t j = 0; j < n; ++j) {
                const Vec value = add(times(x[static_cast<size_t>(j)], W_V), row(w_V, table_row(i, j)));
                z = add(z, scale(value, alpha[static_cast<size_t>(j)]));
            }
            set_row(Z, b, i, z);
            set_row(A, b, i, alpha);
        }
    }
    return {{"output", Z}, {"weights", A}};
}

// 50: y_i = Σ_j softmax_j(R_ij + M_ij) W_V x_j   (R n_max×n_max, its top-left n×n block; W_V d_v×d)
//   X B×n×d → Y B×n×d_v, weights B×n×n (the same for every input).
std::vector<Expected> random_synthesizer_reference(const Ref& r, bool causal) {
    const Array& X = r.x[0];
    const Array R = r.p["R"], W_V = r.p["W_V"];
    const int64_t B = X.size(0), n = X.size(1);
    const Visible visible = visible_keys(r, causal);
    Array Y({B, n, W_V.size(0)}), A({B, n, n});
    for (int64_t b = 0; b < B; ++b) {
        std::vector<Vec> v;
        for (const Vec& x : rows_of(X, b)) v.push_back(matvec(W_V, x));
        for (int64_t i = 0; i < n; ++i) {
            Vec e(static_cast<size_t>(n));
            for (int64_t j = 0; j < n; ++j) e[static_cast<size_t>(j)] = R(i, j);
            const Vec a = softmax(e, visible.keep(b, i, n, n));
            Vec y(static_cast<size_t>(W_V.size(0)), 0.0);
            for (int64_t j = 0; j < n; ++j) y = add(y, scale(v[static_cast<size_t>(j)], a[static_cast<size_t>(j)]));
            set_row(Y, b, i, y);
            set_row(A, b, i, a);
        }
    }
    return {{"output", Y}, {"weights", A}};
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
            scaled_dot_product_attention_fused(x[0], x[1], x[2], M, {.causal = causal, .need_weights = need_weights});
        if (!need_weights) return {{"output", a.output}};
        return {{"output", a.output}, {"weights", a.weights, false}};  // materialised, outside the graph
    };
    c.reference = [causal, need_weights](const Ref& r) {
        std::vector<Expected> e = sdpa_reference(r.x[0], r.x[1], r.x[2], visible_keys(r, causal));
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
// several key blocks, the causal skip of whole tiles. Their gradient check
// differences 96 elements of each input, spread over every tile (every
// element of the 9 small cases above is differenced; every element of these
// shapes is compared with the composite's gradient in
// test_fused_attention_grad.cpp): all of them made this entry the longest
// check of the suites, 130 s of one test case under qemu-aarch64.
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
        for (const SdpaCase& s : tile_variants()) {
            cases.push_back(sdpa_case(s, fused));
            cases.back().max_differences = 96;
        }
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

// ---- entry 48 -----------------------------------------------------------------------------------

Case relative_case(std::string variant, Shape x, int64_t d_z, int64_t k, bool causal, std::vector<Tensor> masks = {}) {
    Case c;
    c.variant = std::move(variant);
    const int64_t d = x[2], n = x[1];
    c.inputs = {x};
    c.masks = std::move(masks);
    c.make = [=](Generator& g) { return std::make_unique<RelativePositionSelfAttention>(d, d_z, k, g); };
    c.run = [causal, n](Module* m, In in, Masks keep) {
        const Tensor M = combine_masks(key_padding(keep), causal ? causal_mask(n, n) : Tensor());
        return output_and_weights(as<RelativePositionSelfAttention>(m).forward(in[0], M));
    };
    c.reference = [k, causal](const Ref& r) { return relative_position_reference(r, k, causal); };
    self_attention_checks(c, causal, true);
    return c;
}

const RegisterEntry relative_entry(48, "relative_position_self_attention", {
    relative_case("k = 2, n = 5, d 4, d_z 3, padding {5, 3}", {2, 5, 4}, 3, 2, false, {keep_first({5, 3}, 5)}),
    relative_case("k = 1 (clipped from distance 2 on), causal", {2, 4, 3}, 2, 1, true),
    relative_case("k = 0: one shared relative term", {2, 3, 3}, 2, 0, false),
    relative_case("k = 6 ≥ n: nothing clipped, square weights d = d_z = 4", {2, 4, 4}, 4, 6, false),
    relative_case("k = 2, n = 6, causal and padding {6, 4}", {2, 6, 3}, 3, 2, true, {keep_first({6, 4}, 6)}),
});

// ---- entry 50 -----------------------------------------------------------------------------------

// Without masks every example gets the same weights: R does not see the input.
Property same_weights_for_every_example() {
    return {"every example has the same weights", [](const PropertyContext& c) -> std::string {
                const Tensor A = c.run(c.inputs, c.masks)["weights"];  // a copy: the map is a temporary
                const int64_t per_example = A.numel() / A.size(0);
                for (int64_t i = per_example; i < A.numel(); ++i)
                    if (A[i] != A[i % per_example])
                        return "weights at flat index " + std::to_string(i) + " differ from example 0's";
                return "";
            }};
}

Case synthesizer_case(std::string variant, Shape x, int64_t n_max, int64_t d_v, bool causal,
                      std::vector<Tensor> masks = {}) {
    Case c;
    c.variant = std::move(variant);
    const int64_t d = x[2], n = x[1];
    c.inputs = {x};
    c.masks = std::move(masks);
    c.make = [=](Generator& g) { return std::make_unique<RandomSynthesizerAttention>(n_max, d, d_v, g); };
    c.run = [causal, n](Module* m, In in, Masks keep) {
        const Tensor M = combine_masks(key_padding(keep), causal ? causal_mask(n, n) : Tensor());
        return output_and_weights(as<RandomSynthesizerAttention>(m).forward(in[0], M));
    };
    c.reference = [causal](const Ref& r) { return random_synthesizer_reference(r, causal); };
    // The queries are not the input: a masked row of X changes nothing at all,
    // and an example with every key masked gets a zero output and gradient.
    if (!c.masks.empty()) c.masking = {{0, {0}, {"weights"}, {"output"}}};
    c.properties = {rows_sum_to_one("weights"), independent_of(0, {"weights"})};
    if (c.masks.empty()) c.properties.push_back(same_weights_for_every_example());
    if (causal) c.properties.push_back(causal_rows({0}, {{"output", 1}, {"weights", -2}}));
    return c;
}

const RegisterEntry synthesizer_entry(50, "random_synthesizer_attention", {
    synthesizer_case("n = 4 < n_max = 6, d 3, d_v 2", {2, 4, 3}, 6, 2, false),
    synthesizer_case("n = 4 < n_max = 6, padding {3, 4}", {2, 4, 3}, 6, 2, false, {keep_first({3, 4}, 4)}),
    synthesizer_case("n = n_max = 5, square W_V (d = d_v = 3), causal", {2, 5, 3}, 5, 3, true),
    synthesizer_case("n = 3 < n_max = 7, causal and padding {2, 3}", {2, 3, 4}, 7, 2, true, {keep_first({2, 3}, 3)}),
});

// ---- entries 82 and 83: the decoder's two attentions ------------------------------------------

MultiHeadAttention::Options layer_heads(bool fused) {
    MultiHeadAttention::Options o;
    o.bias = true;  // as in the Transformer layers (PyTorch's MultiheadAttention)
    o.fused = fused;
    return o;
}

// 82: multi_head_reference over Y (queries = keys = values) where query i sees
//   key j when j ≤ i and j is not padding. Y B×T×d_model, masks[0] a B×T
//   padding (optional) → output B×T×d_model, weights B×h×T×T.
Case causal_self_case(std::string variant, Shape y, int64_t h, bool fused, std::vector<Tensor> masks = {}) {
    Case c;
    c.variant = (fused ? "fused heads, " : "") + std::move(variant);
    c.inputs = {y};
    c.masks = std::move(masks);
    const int64_t d_model = y[2];
    c.make = [=](Generator& g) { return std::make_unique<MultiHeadAttention>(d_model, h, g, layer_heads(fused)); };
    c.run = [fused](Module* m, In x, Masks keep) {
        return output_and_weights(causal_self_attention(as<MultiHeadAttention>(m), x[0], mask_or_none(keep)), !fused);
    };
    c.reference = [h](const Ref& r) { return multi_head_reference(r, {"", true, h, true, visible_keys(r, true)}); };
    if (!c.masks.empty()) c.masking = {{0, {0}, {"weights"}, {}, true}};
    c.properties = {rows_sum_to_one("weights"), causal_rows({0}, {{"output", 1}, {"weights", -2}})};
    return c;
}

const RegisterEntry causal_self_entry(82, "causal_self_attention", {
    causal_self_case("h 2, d_model 4, T 4", {2, 4, 4}, 2, false),
    causal_self_case("h 2, d_model 4, T 5, target padding {5, 3}", {2, 5, 4}, 2, false, {keep_first({5, 3}, 5)}),
    causal_self_case("h 1, d_model 3, T 3", {2, 3, 3}, 1, false),
    causal_self_case("h 3, d_model 6, T 4, target padding {2, 4}", {2, 4, 6}, 3, true, {keep_first({2, 4}, 4)}),
    causal_self_case("h 2, d_model 4, T 4", {2, 4, 4}, 2, true),
});

// Cross-attention's queries do not see each other: changing row p of the
// queries (input 0) changes row p of the output (axis 1) and of the weights
// (axis −2) and no other row.
Property queries_independent() {
    return {"a query row changes only its own output rows", [](const PropertyContext& c) -> std::string {
                const Evaluation original = c.run(c.inputs, c.masks);
                const Tensor& y = c.inputs[0];
                const int64_t T = y.size(1), d = y.size(2);
                for (int64_t p = 0; p < T; ++p) {
                    std::vector<Tensor> xs = c.inputs;
                    xs[0] = y.clone();
                    for (int64_t b = 0; b < y.size(0); ++b)
                        for (int64_t k = 0; k < d; ++k) xs[0][(b * T + p) * d + k] += real(1.25);
                    const Evaluation changed = c.run(xs, c.masks);
                    for (const auto& [name, axis] : {std::pair<std::string, int>{"output", 1}, {"weights", 2}}) {
                        const Tensor &a = original[name], &z = changed[name];
                        int64_t inner = 1;
                        for (int k = axis + 1; k < a.rank(); ++k) inner *= a.size(k);
                        for (int64_t i = 0; i < a.numel(); ++i)
                            if ((i / inner) % a.size(axis) != p && a[i] != z[i])
                                return name + " at flat index " + std::to_string(i) + " moved when query row " +
                                       std::to_string(p) + " changed";
                    }
                }
                return "";
            }};
}

// 83: multi_head_reference with queries Y and the memory M as keys and
//   values, where every query sees the memory rows that are not padding.
//   Y B×T×d_model, M B×n×d_model, masks[0] a B×n padding (optional) →
//   output B×T×d_model, weights B×h×T×n.
Case cross_case(std::string variant, Shape y, Shape memory, int64_t h, bool fused, std::vector<Tensor> masks = {}) {
    Case c;
    c.variant = (fused ? "fused heads, " : "") + std::move(variant);
    c.inputs = {y, memory};
    c.masks = std::move(masks);
    const int64_t d_model = y[2];
    c.make = [=](Generator& g) { return std::make_unique<MultiHeadAttention>(d_model, h, g, layer_heads(fused)); };
    c.run = [fused](Module* m, In x, Masks keep) {
        return output_and_weights(cross_attention(as<MultiHeadAttention>(m), x[0], x[1], mask_or_none(keep)), !fused);
    };
    c.reference = [h](const Ref& r) { return multi_head_reference(r, {"", false, h, true, visible_keys(r, false)}); };
    const std::vector<int> masks_of_keys = c.masks.empty() ? std::vector<int>{} : std::vector<int>{0};
    // A fully masked memory leaves the output at b_O, not 0: no zero_when_empty.
    if (!c.masks.empty()) c.masking = {{0, {1}, {"weights"}, {}}};
    c.properties = {rows_sum_to_one("weights"), permutation_invariant({1}, masks_of_keys, {"output"}),
                    permutation_equivariant_keys({1}, masks_of_keys, {"weights"}), queries_independent()};
    return c;
}

const RegisterEntry cross_entry(83, "cross_attention", {
    cross_case("h 2, d_model 4, T 3 queries over n 5, memory padding {5, 3}", {2, 3, 4}, {2, 5, 4}, 2, false,
               {keep_first({5, 3}, 5)}),
    cross_case("h 2, T 4 > n 2", {2, 4, 4}, {2, 2, 4}, 2, false),
    cross_case("h 4, d_model 4 (heads of width 1), T 2, n 3", {2, 2, 4}, {2, 3, 4}, 4, false),
    cross_case("h 3, d_model 6, T 3, n 4, memory padding {1, 4}", {2, 3, 6}, {2, 4, 6}, 3, true,
               {keep_first({1, 4}, 4)}),
});

}  // namespace

// ---- entry 44: scaled_dot_product_attention ------------------------------------------

TEST_CASE("scaled_dot_product_attention: the catalog's reference values, composite and fused") {
    // Q = [[1, 1]], K = [[1, 1], [0, 0]], V = I₂: e = (2/√2, 0), A = (0.804430, 0.195570) = output
    const Var Q(Tensor::from({1, 1}, {1, 1, 2})), K(Tensor::from({1, 1, 0, 0}, {1, 2, 2}));
    const Var V(Tensor::from({1, 0, 0, 1}, {1, 2, 2}));
    const AttentionOutput composite = scaled_dot_product_attention(Q, K, V);
    const AttentionOutput fused = scaled_dot_product_attention_fused(Q, K, V, {}, {.need_weights = true});
    for (const AttentionOutput* a : {&composite, &fused}) {
        CHECK(std::abs(a->weights.value()[0] - 0.804430) < 1e-6);
        CHECK(std::abs(a->weights.value()[1] - 0.195570) < 1e-6);
        CHECK(std::abs(a->output.value()[0] - 0.804430) < 1e-6);
        CHECK(std::abs(a->output.value()[1] - 0.195570) < 1e-6);
    }
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

// ---- entry 48: relative_position_self_attention --------------------------------------------------

TEST_CASE("relative_position_self_attention: w^K = w^V = 0 gives qkv_self_attention") {
    Generator gen(48);
    const int64_t d = 4, d_z = 3;
    RelativePositionSelfAttention shaw(d, d_z, 2, gen);
    QKVSelfAttention qkv(d, d_z, d_z, gen);
    set(shaw.w_K, Tensor::zeros(shaw.w_K.shape())), set(shaw.w_V, Tensor::zeros(shaw.w_V.shape()));
    // Shaw's XW form against entry 37's X Wᵀ: W_Q(37) = W^Qᵀ, and so on.
    set(qkv.W_Q, transpose(shaw.W_Q.value(), 0, 1)), set(qkv.W_K, transpose(shaw.W_K.value(), 0, 1));
    set(qkv.W_V, transpose(shaw.W_V.value(), 0, 1));
    const Var x(Tensor::normal({2, 5, d}, 0, 1, gen));
    const Tensor mask = padding({5, 2}, 5);
    const AttentionOutput a = shaw.forward(x, mask), b = qkv.forward(x, mask);
    CHECK(max_abs_diff(a.output.value(), b.output.value()) < 1e-12);
    CHECK(max_abs_diff(a.weights.value(), b.weights.value()) < 1e-12);
}

TEST_CASE("relative_position_self_attention: a^K is Toeplitz and constant once |j − i| >= k") {
    Generator gen(480);
    const int64_t n = 7, k = 2, d_z = 3;
    RelativePositionSelfAttention shaw(4, d_z, k, gen);
    const Tensor aK = shaw.relative_keys(n).value();  // n×n×d_z
    REQUIRE(aK.shape() == Shape{n, n, d_z});
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j)
            for (int64_t c = 0; c < d_z; ++c) {
                const real v = aK[(i * n + j) * d_z + c];
                if (i + 1 < n && j + 1 < n) CHECK(aK[((i + 1) * n + j + 1) * d_z + c] == v);  // depends on j − i only
                const int64_t clipped = std::max(-k, std::min(k, j - i));
                CHECK(v == shaw.w_K.value()[(clipped + k) * d_z + c]);  // w^K[clip(j − i, k) + k]
            }
    // Different rows of the table where |j − i| < k: the positions are told apart.
    CHECK(aK[(0 * n + 1) * d_z] != aK[(1 * n + 0) * d_z]);
}

// ---- entry 50: random_synthesizer_attention ---------------------------------------------------------

TEST_CASE("random_synthesizer_attention: the gradient to R is nonzero; n > n_max throws") {
    Generator gen(50);
    RandomSynthesizerAttention synth(6, 3, 2, gen);
    const AttentionOutput a = synth.forward(Var(Tensor::normal({2, 5, 3}, 0, 1, gen)));
    sum(a.output).backward();
    double grad_norm = 0;
    for (int64_t i = 0; i < synth.R.numel(); ++i) grad_norm += std::abs(synth.R.grad()[i]);
    CHECK(grad_norm > 1e-3);
    CHECK_THROWS_WITH_AS(synth.forward(Var(Tensor::zeros({1, 7, 3}))), doctest::Contains("at most n_max = 6"),
                         std::invalid_argument);
}

// ---- TransformerEncoderLayer -------------------------------------------------------------------

TEST_CASE("TransformerEncoderLayer equals torch.nn.TransformerEncoderLayer (post-LN, ReLU, batch_first)") {
    // Reference: torch 1.13, float64, TransformerEncoderLayer(4, 2, 8, dropout=0, batch_first=True) in train
    // mode, parameter k of named_parameters() (torch layout) flat[i] = 0.3 sin(1.7 i + k),
    // x flat[i] = sin(0.5 i) + 0.1 i / 24; src_key_padding_mask hides key 2 of example 1.
    Generator gen(5);
    TransformerEncoderLayer layer(4, 2, 8, gen);
    auto torch_param = [](int k, const Shape& shape) {
        Tensor t = Tensor::empty(shape);
        for (int64_t i = 0; i < t.numel(); ++i) t[i] = 0.3 * std::sin(1.7 * static_cast<double>(i) + k);
        return t;
    };
    MultiHeadAttention& mha = layer.self_attn();
    const Tensor in_proj = torch_param(0, {12, 4}), in_bias = torch_param(1, {12});  // [W_Qᵀ; W_Kᵀ; W_Vᵀ]
    set(mha.W_Q, transpose(slice(in_proj, 0, 0, 4), 0, 1)), set(mha.b_Q, slice(in_bias, 0, 0, 4));
    set(mha.W_K, transpose(slice(in_proj, 0, 4, 8), 0, 1)), set(mha.b_K, slice(in_bias, 0, 4, 8));
    set(mha.W_V, transpose(slice(in_proj, 0, 8, 12), 0, 1)), set(mha.b_V, slice(in_bias, 0, 8, 12));
    set(mha.W_O, transpose(torch_param(2, {4, 4}), 0, 1)), set(mha.b_O, torch_param(3, {4}));
    set(layer.linear1.weight, torch_param(4, {8, 4})), set(layer.linear1.bias, torch_param(5, {8}));
    set(layer.linear2.weight, torch_param(6, {4, 8})), set(layer.linear2.bias, torch_param(7, {4}));
    set(layer.norm1.weight, torch_param(8, {4})), set(layer.norm1.bias, torch_param(9, {4}));
    set(layer.norm2.weight, torch_param(10, {4})), set(layer.norm2.bias, torch_param(11, {4}));
    Tensor x = Tensor::empty(Shape{2, 3, 4});
    for (int64_t i = 0; i < 24; ++i) x[i] = std::sin(0.5 * static_cast<double>(i)) + 0.1 * static_cast<double>(i) / 24;

    const std::vector<double> padded = {
        -0.349504, 0.035775, -0.054417, 0.095737, -0.577473, 0.167888, 0.103087, -0.166100,
        -0.509339, 0.160245, -0.004525, -0.017270, -0.349376, 0.041637, -0.051837, 0.098276,
        -0.576718, 0.161276, 0.096553, -0.165222, -0.559261, 0.183574, 0.059339, -0.101467};
    const std::vector<double> causal = {
        -0.352719, 0.037205, -0.055247, 0.094073, -0.577458, 0.167760, 0.102950, -0.166073,
        -0.509339, 0.160245, -0.004525, -0.017270, -0.352516, 0.043506, -0.052446, 0.096848,
        -0.576718, 0.161276, 0.096553, -0.165222, -0.558489, 0.183190, 0.057697, -0.099678};
    for (bool fused : {false, true}) {  // the composite, then the fast paths (fused attention, LayerNorm, FFN)
        CAPTURE(fused);
        layer.set_fast(fused);
        CHECK((layer.norm1.fused == fused && layer.linear1.fused == fused && layer.self_attn().fused() == fused));
        const Tensor y1 = layer.forward(Var(x), padding({3, 2}, 3)).output.value();
        const Tensor y2 = layer.forward(Var(x), {}, true).output.value();
        for (int64_t i = 0; i < 24; ++i) {
            CAPTURE(i);
            CHECK(std::abs(y1[i] - padded[static_cast<size_t>(i)]) < 1e-6);
            CHECK(std::abs(y2[i] - causal[static_cast<size_t>(i)]) < 1e-6);
        }
    }
    layer.set_fast(false);
    // W5's layer (d_model 128, 4 heads, feed-forward 512) has PyTorch's parameter count.
    CHECK(TransformerEncoderLayer(128, 4, 512, gen).num_parameters() == 198272);
}

TEST_CASE("TransformerEncoderLayer: gradients to inputs and parameters match finite differences, fused or not") {
    for (bool fused : {false, true}) {
        CAPTURE(fused);
        Generator gen(55);
        TransformerEncoderLayer::Options options;
        options.fused = fused;
        TransformerEncoderLayer layer(4, 2, 6, gen, options);
        Var x(Tensor::normal({2, 3, 4}, 0, 1, gen), true);
        std::vector<Var> vars{x};
        for (const Var& p : layer.parameters()) vars.push_back(p);
        const Tensor mask = padding({3, 2}, 3);
        const GradcheckResult r = gradcheck("TransformerEncoderLayer", [&] { return layer.forward(x, mask).output; }, vars);
        CHECK_MESSAGE(r.ok, r.message);
    }
}

// ---- TransformerDecoderLayer -------------------------------------------------------------------

namespace {

// Parameter k of PyTorch's named_parameters() (its layout): flat[i] = 0.3 sin(1.7 i + k).
Tensor torch_param(int k, const Shape& shape) {
    Tensor t = Tensor::empty(shape);
    for (int64_t i = 0; i < t.numel(); ++i) t[i] = 0.3 * std::sin(1.7 * static_cast<double>(i) + k);
    return t;
}

// PyTorch's MultiheadAttention parameters k, k+1, k+2, k+3 (in_proj_weight
// [W_Qᵀ; W_Kᵀ; W_Vᵀ], in_proj_bias, out_proj.weight = W_Oᵀ, out_proj.bias) into ours.
void set_torch_attention(MultiHeadAttention& mha, int k, int64_t d) {
    const Tensor in_proj = torch_param(k, {3 * d, d}), in_bias = torch_param(k + 1, {3 * d});
    set(mha.W_Q, transpose(slice(in_proj, 0, 0, d), 0, 1)), set(mha.b_Q, slice(in_bias, 0, 0, d));
    set(mha.W_K, transpose(slice(in_proj, 0, d, 2 * d), 0, 1)), set(mha.b_K, slice(in_bias, 0, d, 2 * d));
    set(mha.W_V, transpose(slice(in_proj, 0, 2 * d, 3 * d), 0, 1)), set(mha.b_V, slice(in_bias, 0, 2 * d, 3 * d));
    set(mha.W_O, transpose(torch_param(k + 2, {d, d}), 0, 1)), set(mha.b_O, torch_param(k + 3, {d}));
}

}  // namespace

TEST_CASE("TransformerDecoderLayer equals torch.nn.TransformerDecoderLayer (post-LN, ReLU, batch_first)") {
    // Reference: tests/fixtures/make_transformer_reference.py (torch 1.13, float64,
    // TransformerDecoderLayer(4, 2, 8, dropout=0, batch_first=True)): parameter k of
    // named_parameters() flat[i] = 0.3 sin(1.7 i + k); target x flat[i] = sin(0.5 i) + 0.1 i / 24
    // (2×3×4); memory flat[i] = cos(0.3 i) − 0.05 i / 32 (2×4×4); tgt_mask causal.
    Generator gen(6);
    TransformerDecoderLayer layer(4, 2, 8, gen);
    set_torch_attention(layer.self_attn(), 0, 4);
    set_torch_attention(layer.multihead_attn(), 4, 4);
    set(layer.linear1.weight, torch_param(8, {8, 4})), set(layer.linear1.bias, torch_param(9, {8}));
    set(layer.linear2.weight, torch_param(10, {4, 8})), set(layer.linear2.bias, torch_param(11, {4}));
    set(layer.norm1.weight, torch_param(12, {4})), set(layer.norm1.bias, torch_param(13, {4}));
    set(layer.norm2.weight, torch_param(14, {4})), set(layer.norm2.bias, torch_param(15, {4}));
    set(layer.norm3.weight, torch_param(16, {4})), set(layer.norm3.bias, torch_param(17, {4}));
    Tensor x = Tensor::empty(Shape{2, 3, 4}), memory = Tensor::empty(Shape{2, 4, 4});
    for (int64_t i = 0; i < 24; ++i) x[i] = std::sin(0.5 * static_cast<double>(i)) + 0.1 * static_cast<double>(i) / 24;
    for (int64_t i = 0; i < 32; ++i) memory[i] = std::cos(0.3 * static_cast<double>(i)) - 0.05 * static_cast<double>(i) / 32;

    // tgt_key_padding_mask hides target 2 of example 1; memory_key_padding_mask
    // hides source 3 of example 0 and sources 2, 3 of example 1.
    const std::vector<real> padded = {
        -0.387264, 0.382343, 0.378306, -0.052193, -0.296482, 0.366373, 0.506175, -0.010689,
        -0.382198, 0.386103, 0.390876, -0.053992, -0.387242, 0.382084, 0.378765, -0.053036,
        -0.297790, 0.366767, 0.505858, -0.013414, -0.360975, 0.391077, 0.435587, -0.058904};
    // No padding: the causal mask only.
    const std::vector<real> causal = {
        -0.387307, 0.382104, 0.378489, -0.052785, -0.297242, 0.366808, 0.505843, -0.011878,
        -0.382290, 0.385761, 0.391013, -0.054738, -0.387182, 0.382414, 0.378518, -0.052225,
        -0.296675, 0.366097, 0.506381, -0.011751, -0.361441, 0.391440, 0.434438, -0.058143};
    for (bool fused : {false, true}) {
        CAPTURE(fused);
        layer.set_fast(fused);
        CHECK((layer.norm1.fused == fused && layer.norm2.fused == fused && layer.norm3.fused == fused));
        CHECK((layer.self_attn().fused() == fused && layer.multihead_attn().fused() == fused));
        const auto a = layer.forward(Var(x), Var(memory), length_mask({3, 2}, 3), length_mask({3, 2}, 4));
        check_close(a.output.value(), padded);
        check_close(layer.forward(Var(x), Var(memory)).output.value(), causal);
        REQUIRE(a.self_weights.defined());
        REQUIRE(a.cross_weights.defined());
        CHECK(a.self_weights.shape() == Shape{2, 2, 3, 3});
        CHECK(a.cross_weights.shape() == Shape{2, 2, 3, 4});
        CHECK(a.self_weights.value()[(0 * 3 + 0) * 3 + 1] == 0);     // causal: query 0 never sees key 1
        CHECK(a.cross_weights.value()[((1 * 2 + 1) * 3 + 0) * 4 + 2] == 0);  // padded source 2 of example 1
    }
    // W5's sizes (d_model 128, 4 heads, feed-forward 512) have PyTorch's parameter count.
    CHECK(TransformerDecoderLayer(128, 4, 512, gen).num_parameters() == 264576);
    CHECK(layer.describe() == "TransformerDecoderLayer(d_model=4, nhead=2, dim_feedforward=8, norm_first=false)");
}

TEST_CASE("TransformerDecoderLayer: gradients to target, memory and parameters match finite differences") {
    for (bool fused : {false, true}) {
        CAPTURE(fused);
        Generator gen(56);
        TransformerDecoderLayer::Options options;
        options.fused = fused;
        TransformerDecoderLayer layer(4, 2, 6, gen, options);
        Var y(Tensor::normal({2, 3, 4}, 0, 1, gen), true), memory(Tensor::normal({2, 5, 4}, 0, 1, gen), true);
        std::vector<Var> vars{y, memory};
        for (const Var& p : layer.parameters()) vars.push_back(p);
        const Tensor target_padding = length_mask({3, 2}, 3), memory_padding = length_mask({5, 3}, 5);
        const GradcheckResult r = gradcheck(
            "TransformerDecoderLayer",
            [&] { return layer.forward(y, memory, target_padding, memory_padding).output; }, vars);
        CHECK_MESSAGE(r.ok, r.message);
    }
}

TEST_CASE("Transformer layers: dropout only in training, reproducible from the seed, gradient checked") {
    TransformerLayerOptions options;
    options.dropout = 0.3;
    Generator gen(57), plain_gen(57);
    TransformerDecoderLayer dropped(4, 2, 6, gen, options), plain(4, 2, 6, plain_gen);  // the same weights
    CHECK(dropped.describe() ==
          "TransformerDecoderLayer(d_model=4, nhead=2, dim_feedforward=6, dropout=0.3, norm_first=false)");
    const Var y(Tensor::normal({2, 3, 4}, 0, 1, gen)), memory(Tensor::normal({2, 5, 4}, 0, 1, gen));
    dropped.eval();
    check_close(dropped.forward(y, memory).output.value(), plain.forward(y, memory).output.value(), 0);
    dropped.train();
    gen = Generator(9);
    const Tensor first = dropped.forward(y, memory).output.value();
    gen = Generator(9);
    check_close(dropped.forward(y, memory).output.value(), first, 0);  // the same draws, the same output
    CHECK(max_abs_diff(first, plain.forward(y, memory).output.value()) > 1e-3);
    // Where the masks go (PyTorch's dropout1, dropout2, dropout, dropout3), replayed by hand:
    // the same draws in the same order, m_i = 1/(1 − p) if u_i ≥ p else 0.
    Generator replay(9);
    auto mask = [&](const Shape& shape) {
        Tensor m = Tensor::empty(shape);
        for (int64_t i = 0; i < m.numel(); ++i) m[i] = replay.uniform() >= 0.3 ? 1 / (1 - 0.3) : 0;
        return Var(m);
    };
    const Var y1 = plain.norm1(y + causal_self_attention(plain.self_attn(), y).output * mask(y.shape()));
    const Var y2 = plain.norm2(y1 + cross_attention(plain.multihead_attn(), y1, memory).output * mask(y.shape()));
    const Var hidden = relu(plain.linear1(y2));
    const Var ffn = plain.linear2(hidden * mask(hidden.shape()));
    check_close(first, plain.norm3(y2 + ffn * mask(y.shape())).value(), 1e-12);
    // With the draws replayed before every evaluation, the dropped layer is a
    // fixed function: its gradients match finite differences.
    Var x(Tensor::normal({2, 3, 4}, 0, 1, gen), true);
    std::vector<Var> vars{x};
    for (const Var& p : dropped.parameters()) vars.push_back(p);
    const GradcheckResult r = gradcheck("TransformerDecoderLayer with dropout", [&] {
        gen = Generator(10);
        return dropped.forward(x, memory).output;
    }, vars);
    CHECK_MESSAGE(r.ok, r.message);
    // The encoder layer: the same rule.
    Generator enc_gen(58), enc_plain_gen(58);
    TransformerEncoderLayer encoder(4, 2, 6, enc_gen, options), encoder_plain(4, 2, 6, enc_plain_gen);
    encoder.eval();
    check_close(encoder.forward(y).output.value(), encoder_plain.forward(y).output.value(), 0);
    encoder.train();
    CHECK(max_abs_diff(encoder.forward(y).output.value(), encoder_plain.forward(y).output.value()) > 1e-3);
}

TEST_CASE("cross_attention and causal_self_attention: bad shapes name the mechanism and the shapes") {
    Generator gen(83);
    MultiHeadAttention mha(4, 2, gen);
    const Var y(Tensor::zeros({2, 3, 4})), memory(Tensor::zeros({2, 5, 4}));
    CHECK_THROWS_WITH_AS(cross_attention(mha, y, memory, length_mask({3, 3}, 3)),
                         "cross_attention: memory_padding 2×3 must be B×n = 2×5 for the rows 2×5×4",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(causal_self_attention(mha, y, length_mask({1}, 3)),
                         "causal_self_attention: padding 1×3 must be B×n = 2×3 for the rows 2×3×4",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(cross_attention(mha, y, Var(Tensor::zeros({2, 5, 6}))), doctest::Contains("d_model = 4"),
                         std::invalid_argument);
    TransformerDecoderLayer layer(4, 2, 6, gen);
    CHECK_THROWS_WITH_AS(layer.forward(y, Var(Tensor::zeros({2, 5}))), doctest::Contains("cross_attention: memory"),
                         std::invalid_argument);
}
