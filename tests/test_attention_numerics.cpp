// Attention numerics (issue 20: "never a silent NaN; masked positions must
// not leak"). The rules these cases pin down (attention/general.hpp,
// docs/attention/transformer.md, "Masks and non-finite values"):
//
//  1. A masked key takes no part, whatever it holds. A key masked for every
//     query (padding) changes no output and no gradient of another position,
//     and its own gradient is exactly 0, even when it holds NaN or inf. A
//     query that may attend no key gets zero weights, output and gradient.
//  2. A non-finite value a query may see propagates as NaN (IEEE, as in
//     PyTorch): a +inf score or a −inf in a query makes that query's weights
//     and output NaN, in the composite and the fused versions alike. The
//     trainers stop on the non-finite loss (examples/common/finite_guard.hpp).
//
// Reference: the same call with zeros (or other finite values) in place of
// the NaN and inf; that call is itself checked against independent
// references elsewhere (tests/grad/, tests/test_fused_attention.cpp).
// Tolerance 1e-6·(1 + |value|): both runs compute the same products on the
// same finite numbers, so they agree to the last bit or nearly; a leak turns
// a value into NaN or moves it by far more.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "attention/alignments.hpp"
#include "attention/by_id.hpp"
#include "attention/fused_attention.hpp"
#include "attention/multi_head.hpp"
#include "attention/padding.hpp"
#include "attention/query_types.hpp"
#include "attention/scaled_dot_product.hpp"
#include "tensor/ops.hpp"
#include "tests/helpers.hpp"

using namespace attn;
using attn::testing::check_close;

namespace {

constexpr real kNaN = std::numeric_limits<real>::quiet_NaN();
constexpr real kInf = std::numeric_limits<real>::infinity();
constexpr double kTol = 1e-6;

// Rows `rows` of t, t seen as (numel / width)×width with width its last axis: a copy.
Tensor pick_rows(const Tensor& t, const std::vector<int64_t>& rows) {
    const int64_t w = t.size(-1);
    Tensor out = Tensor::zeros(Shape{static_cast<int64_t>(rows.size()), w});
    for (size_t r = 0; r < rows.size(); ++r)
        for (int64_t c = 0; c < w; ++c) out[static_cast<int64_t>(r) * w + c] = t[rows[r] * w + c];
    return out;
}

// Every row of t (seen as above) except `rows`.
std::vector<int64_t> other_rows(const Tensor& t, const std::vector<int64_t>& rows) {
    std::vector<int64_t> out;
    for (int64_t r = 0; r < t.numel() / t.size(-1); ++r)
        if (std::find(rows.begin(), rows.end(), r) == rows.end()) out.push_back(r);
    return out;
}

// Each value of t exactly 0 (−0 too), naming the first that is not.
void check_zero(const Tensor& t, const std::string& what) {
    for (int64_t i = 0; i < t.numel(); ++i)
        if (t[i] != 0) {
            FAIL_CHECK(what << ": flat index " << i << " holds " << t[i] << ", not exactly 0");
            return;
        }
}

// Each value of t NaN.
void check_nan(const Tensor& t, const std::string& what) {
    for (int64_t i = 0; i < t.numel(); ++i)
        if (!std::isnan(t[i])) {
            FAIL_CHECK(what << ": flat index " << i << " holds " << t[i] << ", not NaN");
            return;
        }
}

// Whether t is NaN at the same flat indices as u.
bool same_nans(const Tensor& t, const Tensor& u) {
    if (t.shape() != u.shape()) return false;
    for (int64_t i = 0; i < t.numel(); ++i)
        if (std::isnan(t[i]) != std::isnan(u[i])) return false;
    return true;
}

// t with rows (b, j) of a B×n×d tensor set to `value` at column c (every column if c < 0).
Tensor with_entries(Tensor t, const std::vector<std::pair<int64_t, int64_t>>& positions, real value, int64_t c = -1) {
    t = t.clone();
    const int64_t n = t.size(-2), d = t.size(-1);
    for (const auto& pos : positions)
        for (int64_t k = 0; k < d; ++k)
            if (c < 0 || k == c) t[(pos.first * n + pos.second) * d + k] = value;
    return t;
}

// ---- scaled dot-product attention, composite or fused --------------------------

struct SdpaRun {
    Tensor out, weights, dq, dk, dv;
};

SdpaRun sdpa(bool fused, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& G, const Tensor& mask,
             bool causal) {
    Var Q(q.clone(), true), K(k.clone(), true), V(v.clone(), true);
    FusedAttentionOptions options;
    options.causal = causal;
    options.need_weights = true;
    AttentionOutput o = fused ? scaled_dot_product_attention_fused(Q, K, V, mask, options)
                                    : scaled_dot_product_attention(Q, K, V, mask, causal);
    SdpaRun r{o.output.value().clone(), o.weights.value().clone(), {}, {}, {}};
    o.output.backward(G);
    r.dq = Q.grad(), r.dk = K.grad(), r.dv = V.grad();
    return r;
}

std::string version(bool fused) { return fused ? "fused" : "composite"; }

}  // namespace

// The test that decides whether any of the above is needed: it reads the
// values in blocks of 1024 (attention/padding.cpp), so a bad value is put at
// each edge of a block, in the tail, and at the ends, one at a time; the
// largest finite value and the smallest denormal must count as finite.
TEST_CASE("attention numerics: finite_everywhere finds one NaN or inf anywhere, at every block edge") {
    const real inf = std::numeric_limits<real>::infinity();
    const std::vector<real> bad = {std::numeric_limits<real>::quiet_NaN(), -std::numeric_limits<real>::quiet_NaN(),
                                   inf, -inf};
    Generator gen(31);
    const Tensor base = Tensor::normal({2500}, 0, 10, gen);  // two blocks of 1024 and a tail of 452
    CHECK(finite_everywhere(base));
    CHECK(finite_everywhere(Tensor::zeros({0})));
    for (const int64_t at : {0, 1, 1022, 1023, 1024, 1025, 2047, 2048, 2049, 2498, 2499})
        for (const real value : bad) {
            INFO("value " << value << " at " << at);
            Tensor t = base.clone();
            t[at] = value;
            CHECK_FALSE(finite_everywhere(t));
        }
    for (const real value : {std::numeric_limits<real>::max(), -std::numeric_limits<real>::max(),
                             std::numeric_limits<real>::denorm_min(), real(-0.0)}) {
        INFO("value " << value);
        Tensor t = base.clone();
        t[2499] = value;
        CHECK(finite_everywhere(t));
    }
}

// Rule 1 for SDPA: padded keys hold NaN, +inf and −inf in K and in V. Before
// the fix, 0·NaN in A V made every output of the sequence NaN, and in the
// backward dQ = dS K did the same to the queries' gradient.
// The padding rule's two entry points, by hand: a 2×3×2 input whose padded
// rows (mask 0) hold NaN and inf come out zero, every other value untouched;
// a finite input comes back as itself (no copy); a mask of the wrong shape is
// refused naming the mechanism and both shapes.
TEST_CASE("attention numerics: hide_padded_rows and visible zero exactly the rows no query may use") {
    const real nan = std::numeric_limits<real>::quiet_NaN(), inf = std::numeric_limits<real>::infinity();
    Tensor x = Tensor::zeros({2, 3, 2});
    for (int64_t i = 0; i < 12; ++i) x[i] = real(i + 1);
    x[4] = nan, x[5] = inf;   // sequence 0, row 2: padded
    x[8] = -inf, x[9] = nan;  // sequence 1, row 1: padded
    Tensor mask = Tensor::zeros({2, 3});
    for (const int64_t kept : {0, 1, 3, 5}) mask[kept] = 1;
    const Tensor hidden = hide_padded_rows("test", Var(x), mask).value();
    const std::vector<real> expected = {1, 2, 3, 4, 0, 0, 7, 8, 0, 0, 11, 12};
    for (int64_t i = 0; i < 12; ++i) CHECK(hidden[i] == expected[static_cast<size_t>(i)]);

    const Var finite(Tensor::ones({2, 3, 2}));
    CHECK(hide_padded_rows("test", finite, mask).value().data() == finite.value().data());
    CHECK(hide_padded_rows("test", Var(x), Tensor()).value().data() == x.data());
    CHECK_THROWS_WITH_AS(hide_padded_rows("test", Var(x), Tensor::ones({2, 2})),
                         "test: mask 2×2 does not fit 2×3×2: it needs B×n, one 0/1 per row of each sequence",
                         std::invalid_argument);

    // visible: queries 2×2×2 against these keys; query row 1 of sequence 1 sees no key
    Tensor keep = Tensor::ones({2, 2, 3});
    for (const int64_t j : {0, 1, 2}) keep[6 + 3 + j] = 0;  // sequence 1, query 1
    for (const int64_t i : {0, 1}) keep[i * 3 + 2] = 0, keep[6 + i * 3 + 1] = 0;  // the padded keys
    Tensor q = Tensor::ones({2, 2, 2});
    q[6] = nan;  // sequence 1, query 1
    const VisibleInputs v = visible(Var(q), Var(x), Var(x), keep);
    for (int64_t i = 0; i < 8; ++i) CHECK(v.queries.value()[i] == (i >= 6 ? 0 : 1));
    for (int64_t i = 0; i < 12; ++i) {
        CHECK(v.keys.value()[i] == expected[static_cast<size_t>(i)]);
        CHECK(v.values.value()[i] == expected[static_cast<size_t>(i)]);
    }
}

TEST_CASE("attention numerics: NaN and inf in padded keys and values change nothing (SDPA, composite and fused)") {
    struct Config {
        const char* name;
        Shape q, kv;
        std::vector<int64_t> lengths;
        bool causal;
    };
    const std::vector<Config> configs = {
        {"B×m×n, padding", {2, 3, 4}, {2, 5, 4}, {3, 5}, false},
        {"B×h×m×n, causal + padding", {2, 2, 5, 4}, {2, 2, 5, 4}, {3, 5}, true},
        {"across the fused tiles", {2, 140, 8}, {2, 150, 8}, {130, 150}, false},
    };
    Generator gen(11);
    for (const Config& c : configs) {
        const std::string name = c.name;
        CAPTURE(name);
        const int64_t n = c.kv[c.kv.rank() - 2], B = c.kv[0];
        const int64_t heads = c.kv.rank() == 4 ? c.kv[1] : 1;
        const Tensor padding = key_mask(length_mask(c.lengths, n));
        const Tensor mask = heads > 1 ? mask_for_heads(padding) : padding;
        // Padded positions (flat rows of K and V, over the heads too).
        std::vector<std::pair<int64_t, int64_t>> padded;
        std::vector<int64_t> padded_rows;
        for (int64_t b = 0; b < B; ++b)
            for (int64_t h = 0; h < heads; ++h)
                for (int64_t j = c.lengths[static_cast<size_t>(b)]; j < n; ++j) {
                    padded.push_back({b * heads + h, j});
                    padded_rows.push_back((b * heads + h) * n + j);
                }
        const Tensor q = Tensor::normal(c.q, 0, 1, gen), G = Tensor::normal(c.q, 0, 1, gen);
        const Tensor k = with_entries(Tensor::normal(c.kv, 0, 1, gen), padded, 0);
        const Tensor v = with_entries(Tensor::normal(c.kv, 0, 1, gen), padded, 0);
        // NaN in K, +inf in one column of V and −inf in another.
        const Tensor k_bad = with_entries(k, padded, kNaN);
        const Tensor v_bad = with_entries(with_entries(v, padded, kInf, 1), padded, -kInf, 2);
        for (bool fused : {false, true}) {
            const std::string path = version(fused);
            CAPTURE(path);
            const SdpaRun clean = sdpa(fused, q, k, v, G, mask, c.causal);
            const SdpaRun bad = sdpa(fused, q, k_bad, v_bad, G, mask, c.causal);
            check_close(bad.out, clean.out, "output", kTol);
            check_close(bad.weights, clean.weights, "weights", kTol);
            check_close(bad.dq, clean.dq, "dQ", kTol);
            check_close(bad.dk, clean.dk, "dK", kTol);
            check_close(bad.dv, clean.dv, "dV", kTol);
            check_zero(pick_rows(bad.dk, padded_rows), "dK at the padded keys");
            check_zero(pick_rows(bad.dv, padded_rows), "dV at the padded keys");
        }
    }
}

// A query that may attend no key (row 1 here), with NaN in the keys it masks
// and in itself: zero weights, zero output, zero gradient. Before the fix its
// NaN reached dK through dSᵀQ (0·NaN), and the NaN keys reached everything.
TEST_CASE("attention numerics: a fully masked query row with NaN in its masked keys gives zeros (SDPA)") {
    Generator gen(12);
    const int64_t m = 3, n = 4, d = 4;
    // rows 0 and 2 keep keys 0 and 1; row 1 keeps nothing; keys 2, 3 are masked for all
    Tensor mask = Tensor::zeros(Shape{1, m, n});
    for (int64_t i : {0, 2})
        for (int64_t j : {0, 1}) mask[i * n + j] = 1;
    const Tensor q = Tensor::normal({1, m, d}, 0, 1, gen), G = Tensor::normal({1, m, d}, 0, 1, gen);
    const Tensor k = Tensor::normal({1, n, d}, 0, 1, gen), v = Tensor::normal({1, n, d}, 0, 1, gen);
    const Tensor q_bad = with_entries(q, {{0, 1}}, kNaN);
    const Tensor k_bad = with_entries(k, {{0, 2}, {0, 3}}, kNaN), v_bad = with_entries(v, {{0, 2}, {0, 3}}, kNaN);
    for (bool fused : {false, true}) {
        const std::string path = version(fused);
        CAPTURE(path);
        const SdpaRun clean = sdpa(fused, q, k, v, G, mask, false);
        const SdpaRun bad = sdpa(fused, q_bad, k_bad, v_bad, G, mask, false);
        check_zero(pick_rows(bad.weights, {1}), "weights of the fully masked row");
        check_zero(pick_rows(bad.out, {1}), "output of the fully masked row");
        check_zero(pick_rows(bad.dq, {1}), "dQ of the fully masked row");
        check_zero(pick_rows(bad.dk, {2, 3}), "dK at the masked keys");
        check_zero(pick_rows(bad.dv, {2, 3}), "dV at the masked keys");
        check_close(bad.out, clean.out, "output", kTol);
        check_close(bad.weights, clean.weights, "weights", kTol);
        check_close(bad.dq, clean.dq, "dQ", kTol);
        check_close(bad.dk, clean.dk, "dK", kTol);
        check_close(bad.dv, clean.dv, "dV", kTol);
    }
}

// ---- multi-head attention ----------------------------------------------------------

namespace {

struct MhaRun {
    Tensor out, dq, dx;
    std::vector<Tensor> param_grads;
};

// Multi-head attention (fresh weights from seed 7) of queries over the
// features x (x as keys and values; also as queries when `self`).
MhaRun mha_run(bool fused, bool self, const Tensor& queries, const Tensor& x, const Tensor& mask, const Tensor& G) {
    Generator g(7);
    MultiHeadAttention mha(8, 2, g, {.bias = true, .fused = fused});
    Var X(x.clone(), true), Q = self ? X : Var(queries.clone(), true);
    AttentionOutput o = mha.forward(Q, X, X, mask);
    MhaRun r{o.output.value().clone(), {}, {}, {}};
    o.output.backward(G);
    if (!self) r.dq = Q.grad();
    r.dx = X.grad();
    for (const Var& p : mha.parameters()) r.param_grads.push_back(p.grad());
    return r;
}

void check_same_parameter_grads(const MhaRun& got, const MhaRun& want) {
    REQUIRE(got.param_grads.size() == want.param_grads.size());
    for (size_t i = 0; i < got.param_grads.size(); ++i)
        check_close(got.param_grads[i], want.param_grads[i], "gradient of parameter " + std::to_string(i), kTol);
}

}  // namespace

// Before the fix a NaN at one padded position made sequence 0's outputs NaN
// (0·NaN in A V) and, through the gradients of W_K, W_V, W_O (Xᵀ·dY sums over
// every sequence), every parameter gradient of the batch: one optimiser step
// later every output of every sequence was NaN.
TEST_CASE("attention numerics: multi-head, a NaN at a padded position of sequence 0 touches nothing else") {
    // m = n: the queries are the size of the keys, so that only their storage
    // tells the two apart (the layer reads one tensor given three times once).
    Generator gen(13);
    const int64_t B = 2, n = 5, m = 5, d = 8;
    const Tensor mask = key_mask(length_mask({3, 5}, n));  // sequence 0: positions 3, 4 are padding
    const std::vector<std::pair<int64_t, int64_t>> padded = {{0, 3}, {0, 4}};
    const Tensor x = Tensor::normal({B, n, d}, 0, 1, gen);  // finite, even at the padding
    const Tensor x_zero = with_entries(x, padded, 0);
    const Tensor x_bad = with_entries(with_entries(x_zero, {{0, 3}}, kNaN, 2), {{0, 4}}, kInf, 5);
    const Tensor queries = Tensor::normal({B, m, d}, 0, 1, gen), G = Tensor::normal({B, m, d}, 0, 1, gen);
    for (bool fused : {false, true}) {
        const std::string path = version(fused);
        CAPTURE(path);
        const MhaRun original = mha_run(fused, false, queries, x, mask, G);
        const MhaRun zero = mha_run(fused, false, queries, x_zero, mask, G);
        const MhaRun bad = mha_run(fused, false, queries, x_bad, mask, G);
        // sequence 1 (output rows 5..9) is what it was without the NaN; sequence 0 too
        const std::vector<int64_t> sequence1 = {5, 6, 7, 8, 9};
        check_close(pick_rows(bad.out, sequence1), pick_rows(original.out, sequence1), "sequence 1's output", kTol);
        check_close(bad.out, zero.out, "output", kTol);
        check_close(bad.dq, zero.dq, "dQueries", kTol);
        check_close(bad.dx, zero.dx, "dFeatures", kTol);
        check_zero(pick_rows(bad.dx, {3, 4}), "dFeatures at the padded positions");
        check_same_parameter_grads(bad, zero);
    }
}

// Self-attention: the padded position is a query as well as a key. With a
// mask that also masks it as a query (B×n×n), it takes no part at all; with a
// key mask only, its own query is visible and its own output row is NaN
// (rule 2), but no other row, and no other sequence, is touched.
TEST_CASE("attention numerics: multi-head self-attention with a NaN at a padded position") {
    Generator gen(14);
    const int64_t B = 2, n = 5, d = 8;
    const Tensor lengths = length_mask({3, 5}, n);  // B×n
    const Tensor key_only = key_mask(lengths);      // B×1×n
    const Tensor both = mul(key_only, lengths.reshape(Shape{B, n, 1}));  // B×n×n: padded as key and as query
    const Tensor x = with_entries(Tensor::normal({B, n, d}, 0, 1, gen), {{0, 3}, {0, 4}}, 0);
    const Tensor x_bad = with_entries(x, {{0, 3}}, kNaN, 1);
    const Tensor G = Tensor::normal({B, n, d}, 0, 1, gen);
    for (bool fused : {false, true}) {
        const std::string path = version(fused);
        CAPTURE(path);
        {
            const MhaRun zero = mha_run(fused, true, {}, x, both, G);
            const MhaRun bad = mha_run(fused, true, {}, x_bad, both, G);
            check_close(bad.out, zero.out, "output, padding masked as keys and queries", kTol);
            check_close(bad.dx, zero.dx, "dX, padding masked as keys and queries", kTol);
            check_zero(pick_rows(bad.dx, {3, 4}), "dX at the padded positions");
            check_same_parameter_grads(bad, zero);
        }
        {
            const MhaRun zero = mha_run(fused, true, {}, x, key_only, G);
            const MhaRun bad = mha_run(fused, true, {}, x_bad, key_only, G);
            const std::vector<int64_t> others = other_rows(bad.out, {3});
            check_close(pick_rows(bad.out, others), pick_rows(zero.out, others), "output, other rows", kTol);
            check_nan(pick_rows(bad.out, {3}), "output of the padded row, whose own query is NaN");
        }
    }
}

// ---- Bahdanau (additive) attention ------------------------------------------------

namespace {

struct BahdanauRun {
    Tensor out, weights, ds, dh;
    std::vector<Tensor> param_grads;
};

BahdanauRun bahdanau_run(const Tensor& states, const Tensor& h, const Tensor& mask, const Tensor& G) {
    Generator g(5);
    BahdanauAttention attention(6, 8, 5, g);
    Var S(states.clone(), true), H(h.clone(), true);
    AttentionOutput o = attention.forward(S, H, mask);
    BahdanauRun r{o.output.value().clone(), o.weights.value().clone(), {}, {}, {}};
    o.output.backward(G);
    r.ds = S.grad(), r.dh = H.grad();
    for (const Var& p : attention.parameters()) r.param_grads.push_back(p.grad());
    return r;
}

}  // namespace

// Sequence 0 has padding holding NaN and inf; sequence 2 is empty (length 0)
// and holds NaN everywhere. Before the fix c_i = Σ_j α_ij h_j was NaN for
// both (0·NaN), the fully masked row included.
TEST_CASE("attention numerics: Bahdanau attention with NaN and inf at masked positions") {
    Generator gen(15);
    const int64_t B = 3, n = 5, m = 2;
    const Tensor mask = length_mask({3, 5, 0}, n);
    std::vector<std::pair<int64_t, int64_t>> masked = {{0, 3}, {0, 4}};
    for (int64_t j = 0; j < n; ++j) masked.push_back({2, j});
    const Tensor h = with_entries(Tensor::normal({B, n, 8}, 0, 1, gen), masked, 0);
    const Tensor h_bad = with_entries(with_entries(h, masked, kNaN, 0), {{0, 4}}, kInf, 3);
    const Tensor s = Tensor::normal({B, m, 6}, 0, 1, gen), G = Tensor::normal({B, m, 8}, 0, 1, gen);
    const BahdanauRun zero = bahdanau_run(s, h, mask, G);
    const BahdanauRun bad = bahdanau_run(s, h_bad, mask, G);
    check_close(bad.out, zero.out, "context", kTol);
    check_close(bad.weights, zero.weights, "weights", kTol);
    check_close(bad.ds, zero.ds, "dStates (queries)", kTol);
    check_close(bad.dh, zero.dh, "dEncoder states", kTol);
    check_zero(pick_rows(bad.dh, {3, 4, 10, 11, 12, 13, 14}), "dEncoder states at the masked positions");
    // the empty sequence: zero weights, context and gradient
    check_zero(pick_rows(bad.weights, {4, 5}), "weights of the empty sequence");
    check_zero(pick_rows(bad.out, {4, 5}), "context of the empty sequence");
    check_zero(pick_rows(bad.ds, {4, 5}), "dStates of the empty sequence");
    REQUIRE(bad.param_grads.size() == zero.param_grads.size());
    for (size_t i = 0; i < bad.param_grads.size(); ++i)
        check_close(bad.param_grads[i], zero.param_grads[i], "parameter gradient " + std::to_string(i), kTol);
}

// ---- the general attention module -----------------------------------------------

// GeneralAttention with projected keys and values, for three score functions:
// the padded feature rows hold NaN and inf.
TEST_CASE("attention numerics: general attention with NaN and inf in padded features") {
    for (const std::string score_id : {"additive_score", "general_score", "scaled_dot_score"}) {
        CAPTURE(score_id);
        Generator gen(16);
        const int64_t B = 2, n = 5, m = 3, d_f = 8, d = 4;
        const Tensor mask = key_mask(length_mask({2, 5}, n));
        const std::vector<std::pair<int64_t, int64_t>> padded = {{0, 2}, {0, 3}, {0, 4}};
        const Tensor f = with_entries(Tensor::normal({B, n, d_f}, 0, 1, gen), padded, 0);
        const Tensor f_bad = with_entries(with_entries(f, padded, kNaN, 0), {{0, 3}}, -kInf, 4);
        const Tensor q = Tensor::normal({B, m, d}, 0, 1, gen), G = Tensor::normal({B, m, d}, 0, 1, gen);
        auto run = [&](const Tensor& features) {
            Generator g(9);
            GeneralAttention attention(make_score(score_id, {.query_dim = d, .key_dim = d, .hidden_dim = 5}, g),
                                       make_alignment("soft_alignment", {}, g),
                                       {.feature_dim = d_f, .key_dim = d, .value_dim = d}, g);
            Var Q(q.clone(), true), F(features.clone(), true);
            AttentionOutput o = attention.forward(Q, F, mask);
            std::vector<Tensor> r = {o.output.value().clone(), o.weights.value().clone()};
            o.output.backward(G);
            r.push_back(Q.grad());
            r.push_back(F.grad());
            for (const Var& p : attention.parameters()) r.push_back(p.grad());
            return r;
        };
        const std::vector<Tensor> zero = run(f), bad = run(f_bad);
        REQUIRE(bad.size() == zero.size());
        const char* names[] = {"output", "weights", "dQueries", "dFeatures"};
        for (size_t i = 0; i < bad.size(); ++i)
            check_close(bad[i], zero[i], i < 4 ? names[i] : "a parameter's gradient", kTol);
        check_zero(pick_rows(bad[3], {2, 3, 4}), "dFeatures at the padded positions");
    }
}

// ---- rule 2: visible non-finite values propagate -------------------------------------

// A score that overflows to +inf (finite inputs), a −inf in a query against
// keys of both signs, a NaN in a query: that query's weights and output are
// NaN, the other rows are what they were, and composite and fused agree on
// which values are NaN. Before the fix the fused kernel took a row of NaN
// scores for a fully masked row and returned zeros: silent, and unlike the
// composite.
TEST_CASE("attention numerics: a +inf score or a non-finite query makes that row NaN, composite and fused alike") {
    Generator gen(17);
    const int64_t m = 4, n = 5, d = 4;
    const Tensor q = Tensor::normal({1, m, d}, 0, 1, gen), v = Tensor::normal({1, n, d}, 0, 1, gen);
    Tensor k = Tensor::normal({1, n, d}, 0, 1, gen);
    const real signs[] = {1, -1, 0.5, -0.5, 2};  // column 0 of K: both signs, so that −inf·k is ±inf
    for (int64_t j = 0; j < n; ++j) k[j * d] = signs[j], k[j * d + 1] = 1;
    const Tensor G = Tensor::ones({1, m, d});
    struct Case {
        const char* name;
        int64_t row;
        Tensor q;
    };
    // q_0 = (3e38, 3e38, 0, 0), finite; q_0·k_4 / √d = 1.5e38·(2 + 1) overflows to +inf
    Tensor huge = q.clone();
    for (int64_t c = 0; c < d; ++c) huge[c] = c < 2 ? real(3e38) : 0;
    const std::vector<Case> cases = {
        {"a score overflowing to +inf", 0, huge},
        {"-inf in a query", 1, with_entries(q, {{0, 1}}, -kInf, 0)},
        {"NaN in a query", 2, with_entries(q, {{0, 2}}, kNaN, 3)},
    };
    for (const Case& c : cases) {
        const std::string name = c.name;
        CAPTURE(name);
        SdpaRun runs[2];
        for (bool fused : {false, true}) {
            const std::string path = version(fused);
            CAPTURE(path);
            const SdpaRun clean = sdpa(fused, q, k, v, G, {}, false);
            const SdpaRun bad = sdpa(fused, c.q, k, v, G, {}, false);
            check_nan(pick_rows(bad.weights, {c.row}), "weights of the row");
            check_nan(pick_rows(bad.out, {c.row}), "output of the row");
            const std::vector<int64_t> others = other_rows(bad.out, {c.row});
            check_close(pick_rows(bad.weights, others), pick_rows(clean.weights, others), "weights of the other rows",
                        kTol);
            check_close(pick_rows(bad.out, others), pick_rows(clean.out, others), "output of the other rows", kTol);
            check_close(pick_rows(bad.dq, others), pick_rows(clean.dq, others), "dQ of the other rows", kTol);
            runs[fused] = bad;
        }
        CHECK_MESSAGE(same_nans(runs[0].weights, runs[1].weights), "composite and fused weights differ in their NaN");
        CHECK_MESSAGE(same_nans(runs[0].out, runs[1].out), "composite and fused outputs differ in their NaN");
    }
}

// Causal mask, a NaN at key j: a key masked for some queries and visible to
// others. The queries i < j mask it: their weights, outputs and dQ are what
// they were. The decision for the queries i ≥ j, which see it (rule 2):
//   NaN in V_j (column c): output column c is NaN, the other columns and the
//     weights are unchanged (V does not enter the weights);
//   NaN in K_j: the whole row of weights and of output is NaN.
// Before the fix, 0·NaN in A V (and in dS K) made every query NaN, also in
// the fused kernel, whose diagonal tile holds masked and visible entries.
TEST_CASE("attention numerics: causal mask, a NaN at key j reaches only the queries i >= j") {
    struct Config {
        int64_t n, j;
    };
    Generator gen(18);
    for (const Config cfg : {Config{6, 3}, Config{200, 150}}) {
        const int64_t n = cfg.n, j = cfg.j, d = 4, c = 1;
        CAPTURE(n);
        const Tensor q = Tensor::normal({1, n, d}, 0, 1, gen), k = Tensor::normal({1, n, d}, 0, 1, gen);
        const Tensor v = Tensor::normal({1, n, d}, 0, 1, gen), G = Tensor::normal({1, n, d}, 0, 1, gen);
        std::vector<int64_t> before, after;
        for (int64_t i = 0; i < n; ++i) (i < j ? before : after).push_back(i);
        for (bool fused : {false, true}) {
            const std::string path = version(fused);
            CAPTURE(path);
            const SdpaRun clean = sdpa(fused, q, k, v, G, {}, true);
            {  // NaN in V_jc
                const SdpaRun bad = sdpa(fused, q, k, with_entries(v, {{0, j}}, kNaN, c), G, {}, true);
                check_close(pick_rows(bad.out, before), pick_rows(clean.out, before), "V: output of queries < j", kTol);
                check_close(pick_rows(bad.dq, before), pick_rows(clean.dq, before), "V: dQ of queries < j", kTol);
                check_close(bad.weights, clean.weights, "V: weights", kTol);
                for (int64_t i : after)
                    for (int64_t col = 0; col < d; ++col) {
                        const real got = bad.out[i * d + col], want = clean.out[i * d + col];
                        if (col == c)
                            CHECK_MESSAGE(std::isnan(got), "V: output (" << i << ", " << col << ") = " << got);
                        else
                            CHECK_MESSAGE(std::abs(got - want) <= kTol * (1 + std::abs(want)),
                                          "V: output (" << i << ", " << col << ") = " << got << " vs " << want);
                    }
            }
            {  // NaN in K_j
                const SdpaRun bad = sdpa(fused, q, with_entries(k, {{0, j}}, kNaN, c), v, G, {}, true);
                check_close(pick_rows(bad.weights, before), pick_rows(clean.weights, before), "K: weights, queries < j",
                            kTol);
                check_close(pick_rows(bad.out, before), pick_rows(clean.out, before), "K: output of queries < j", kTol);
                check_close(pick_rows(bad.dq, before), pick_rows(clean.dq, before), "K: dQ of queries < j", kTol);
                check_nan(pick_rows(bad.weights, after), "K: weights of queries >= j");
                check_nan(pick_rows(bad.out, after), "K: output of queries >= j");
            }
        }
    }
}

// Multi-head attention hides rows before the split into heads
// (visible_to_heads), so the rule over heads and the causal rule are folded
// into one mask first. Written out on 1×2×2 inputs (B = 1, m = n = 2, d = 2),
// where each case turns on one entry of that mask.
TEST_CASE("visible_to_heads: a per-head mask keeps a key any head keeps; the causal rule is folded in") {
    const real nan = std::numeric_limits<real>::quiet_NaN();
    const Var finite(Tensor::ones({1, 2, 2}));
    Tensor bad_key = Tensor::ones({1, 2, 2});
    bad_key[2] = nan;  // key 1's row holds a NaN: hidden only if no head of no query may see it
    // Per head (1×h×m×n, h = 2): head 0 sees every key, head 1 sees key 0 only.
    Tensor per_head = Tensor::ones({1, 2, 2, 2});
    per_head[4 + 1] = 0, per_head[4 + 3] = 0;  // head 1: key 1 hidden from both queries
    const VisibleInputs one_head_sees = visible_to_heads(finite, Var(bad_key), Var(bad_key), per_head, false);
    // head 0 may still attend key 1: its row is left as it is (NaN: a visible bad key is the caller's NaN)
    CHECK(std::isnan(one_head_sees.keys.value()[2]));
    CHECK(std::isnan(one_head_sees.values.value()[2]));
    per_head[1] = 0, per_head[3] = 0;  // now head 0 hides key 1 too: no head sees it
    const VisibleInputs none_sees = visible_to_heads(finite, Var(bad_key), Var(bad_key), per_head, false);
    for (int64_t i = 0; i < 4; ++i) {
        CHECK(none_sees.keys.value()[i] == (i >= 2 ? 0 : 1));
        CHECK(none_sees.values.value()[i] == (i >= 2 ? 0 : 1));
    }

    // The causal rule: query 0 may see key 0 only. A mask that hides key 0
    // leaves query 0 nothing with the rule, key 1 without it.
    Tensor bad_query = Tensor::ones({1, 2, 2});
    bad_query[0] = nan;  // query 0's row
    Tensor hides_key0 = Tensor::ones({1, 2, 2});
    hides_key0[0] = 0, hides_key0[2] = 0;
    const VisibleInputs causal = visible_to_heads(Var(bad_query), finite, finite, hides_key0, true);
    for (int64_t i = 0; i < 4; ++i) CHECK(causal.queries.value()[i] == (i < 2 ? 0 : 1));  // query 0 sees no key: 0
    const VisibleInputs not_causal = visible_to_heads(Var(bad_query), finite, finite, hides_key0, false);
    CHECK(std::isnan(not_causal.queries.value()[0]));  // it sees key 1: its row is its own
    // the causal rule alone, with no mask, hides query 0 of nothing (it sees key 0)
    CHECK(std::isnan(visible_to_heads(Var(bad_query), finite, finite, Tensor(), true).queries.value()[0]));
}

// ---- softmax's fast twin under set_fast ------------------------------------------------

// Module::set_fast takes the alignments and Bahdanau's attention to
// softmax_fused (the one-pass backward): the op each records names which ran,
// and the weights and gradients are the readable softmax's.
TEST_CASE("attention numerics: set_fast takes softmax_fused in the soft alignment and in Bahdanau's attention") {
    Generator gen(8);
    const Tensor scores = Tensor::normal(Shape{2, 3, 5}, 0, 2, gen);
    const Tensor up = Tensor::normal(Shape{2, 3, 5}, 0, 1, gen);
    Tensor keep = Tensor::ones(Shape{2, 1, 5});
    keep.at({1, 0, 3}) = keep.at({1, 0, 4}) = 0;  // sequence 1: 3 keys
    SoftAlignment readable, fast;
    fast.set_fast(true);
    Var a(scores.clone(), true), b(scores.clone(), true);
    Var wa = readable.align({a, keep, Var(), Tensor()}), wb = fast.align({b, keep, Var(), Tensor()});
    CHECK(std::string(wa.op()) == "softmax");
    CHECK(std::string(wb.op()) == "softmax_fused");
    CHECK(allclose(wa.value(), wb.value(), 0, 0));
    wa.backward(up);
    wb.backward(up);
    CHECK(allclose(a.grad(), b.grad(), 1e-5, 1e-6));

    Generator g1(5), g2(5);
    BahdanauAttention bahdanau(6, 8, 5, g1), bahdanau_fast(6, 8, 5, g2);
    bahdanau_fast.set_fast(true);
    const Var states(Tensor::normal(Shape{2, 5, 8}, 0, 1, gen)), h(Tensor::normal(Shape{2, 1, 6}, 0, 1, gen));
    CHECK(std::string(bahdanau.forward(h, states, keep).weights.op()) == "softmax");
    CHECK(std::string(bahdanau_fast.forward(h, states, keep).weights.op()) == "softmax_fused");
}
