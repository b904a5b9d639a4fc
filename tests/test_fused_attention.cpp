// The fused scaled_dot_product_attention (catalog entry 44) against its
// composite twin in the float build, the one the library runs: value and
// gradient agree, masks included, on shapes that cross every tile boundary;
// the fused kernel gives the same bits on 1 and 2 threads. (The double build,
// tests/grad/test_fused_attention_grad.cpp, checks the same to 1e-11.)
//
// Tolerance: both versions sum at most a few hundred float products per
// entry, in different orders; their rounding errors are ~1e-7 relative per
// term, so 2e-5·(1 + |value|) is safe, and a real mistake (a missed tile, a
// wrong mask) moves values by ~1e-1.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "attention/fused_attention.hpp"
#include "attention/scaled_dot_product.hpp"
#include "tensor/ops.hpp"
#include "tensor/parallel.hpp"
#include "tests/helpers.hpp"

using namespace attn;
using attn::testing::check_close;

namespace {

struct Run {
    Tensor out, weights, dq, dk, dv;
};

// The output and the gradients of two runs: close (to tol·(1 + |value|)), or the same bits.
void check_runs_close(const Run& got, const Run& want) {
    check_close(got.out, want.out, "output", 2e-5);
    check_close(got.dq, want.dq, "dQ", 2e-5);
    check_close(got.dk, want.dk, "dK", 2e-5);
    check_close(got.dv, want.dv, "dV", 2e-5);
}
void check_same_bits(const Run& one, const Run& two) {
    for (const auto& [a, b] : {std::pair{one.out, two.out}, {one.dq, two.dq}, {one.dk, two.dk}, {one.dv, two.dv}})
        CHECK(std::equal(a.data(), a.data() + a.numel(), b.data()));
}

// Attends (attend(Q, K, V) → AttentionOutput) on fresh leaves made of q, k,
// v, then runs backward from G: the output, the weights if any, the gradients.
template <class F>
Run run_with(F attend, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& G) {
    Var Q(q.clone(), true), K(k.clone(), true), V(v.clone(), true);
    const AttentionOutput a = attend(Q, K, V);
    Run r{a.output.value().clone(), a.weights.defined() ? a.weights.value().clone() : Tensor(), {}, {}, {}};
    Var out = a.output;
    out.backward(G);
    r.dq = Q.grad(), r.dk = K.grad(), r.dv = V.grad();
    return r;
}

Run run(bool fused, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& G, const Tensor& mask,
        bool causal) {
    return run_with(
        [&](const Var& Q, const Var& K, const Var& V) {
            return fused ? scaled_dot_product_attention_fused(Q, K, V, mask, {.causal = causal})
                         : scaled_dot_product_attention(Q, K, V, mask, causal);
        },
        q, k, v, G);
}

}  // namespace

TEST_CASE("scaled_dot_product_attention fused vs composite (float): value and gradient, masks included") {
    struct Config {
        const char* name;
        Shape q, k, v;
        Tensor mask;
        bool causal;
    };
    const std::vector<Config> configs = {
        {"no mask", {4, 130, 64}, {4, 257, 64}, {4, 257, 64}, {}, false},
        {"causal", {3, 200, 32}, {3, 200, 32}, {3, 200, 16}, {}, true},
        {"causal, m < n", {2, 64, 16}, {2, 129, 16}, {2, 129, 16}, {}, true},
        {"padding with an empty example", {3, 100, 16}, {3, 150, 16}, {3, 150, 8},
         key_mask(length_mask({150, 70, 0}, 150)), false},
        {"causal + padding, heads", {2, 2, 90, 16}, {2, 2, 90, 16}, {2, 2, 90, 16},
         mask_for_heads(key_mask(length_mask({90, 33}, 90))), true},
    };
    Generator gen(6);
    for (const Config& c : configs) {
        CAPTURE(c.name);
        const Tensor q = Tensor::normal(c.q, 0, 1, gen), k = Tensor::normal(c.k, 0, 1, gen);
        const Tensor v = Tensor::normal(c.v, 0, 1, gen);
        const Tensor G = Tensor::normal(c.q.with(c.q.rank() - 1, c.v[c.v.rank() - 1]), 0, 1, gen);
        check_runs_close(run(true, q, k, v, G, c.mask, c.causal), run(false, q, k, v, G, c.mask, c.causal));
    }
}

TEST_CASE("scaled_dot_product_attention fused (float): the same bits on 1 and 2 threads") {
    Generator gen(7);
    const Tensor q = Tensor::normal({8, 150, 32}, 0, 1, gen), k = Tensor::normal({8, 150, 32}, 0, 1, gen);
    const Tensor v = Tensor::normal({8, 150, 32}, 0, 1, gen), G = Tensor::normal({8, 150, 32}, 0, 1, gen);
    const int before = num_threads();
    set_num_threads(1);
    const Run one = run(true, q, k, v, G, {}, true);
    set_num_threads(2);
    const Run two = run(true, q, k, v, G, {}, true);
    set_num_threads(before);
    check_same_bits(one, two);
}

TEST_CASE("scaled_dot_product_attention fused (float): weights only on request, then equal to the composite's") {
    Generator gen(8);
    const Var q(Tensor::normal({2, 70, 16}, 0, 1, gen)), k(Tensor::normal({2, 140, 16}, 0, 1, gen));
    FusedAttentionOptions options;
    options.causal = true;
    CHECK_FALSE(scaled_dot_product_attention_fused(q, k, k, {}, options).weights.defined());
    options.need_weights = true;
    const Var w = scaled_dot_product_attention_fused(q, k, k, {}, options).weights;
    check_close(w.value(), scaled_dot_product_attention(q, k, k, {}, true).weights.value(), "weights", 2e-5);
}

// Weights asked for at m = n = 2²⁰ need 4 TiB: the forward, O(m·n) work, used
// to run first (for hours) and the allocation to fail after it. The storage
// is now taken first, so the refusal comes at once, naming the op and shapes.
TEST_CASE("scaled_dot_product_attention fused: weights too large for memory are refused before the forward") {
    const int64_t n = int64_t{1} << 20;
    const Var q(Tensor::zeros({1, n, 1})), k(Tensor::zeros({1, n, 1}));
    FusedAttentionOptions options;
    options.need_weights = true;
    const std::string want = "scaled_dot_product_attention_fused: the weights 1×1048576×1048576 of queries 1×1048576×1 and keys 1×1048576×1 do not fit "
                             "in memory (need_weights; leave it off to attend in O(m) memory): tensor storage: ";
    CHECK_THROWS_WITH_AS(scaled_dot_product_attention_fused(q, k, k, {}, options),
                         doctest::Contains(want.c_str()), std::length_error);
    const Var q4(Tensor::zeros({1, n, 4})), k4(Tensor::zeros({1, n, 4}));
    CHECK_THROWS_WITH_AS(scaled_dot_product_attention_fused_heads(q4, k4, k4, 2, {}, options),
                         doctest::Contains("the weights 1×2×1048576×1048576 of queries"), std::length_error);
}

// The row kernels (row maximum, exponentials, lane sums, 16 lanes with
// AVX-512, 8 with AVX2, 4 otherwise) on rows of 37 keys: whole vectors and a
// tail. The scores are hundreds apart, so the softmax's shift must be the
// true row maximum (e^(s − μ) overflows past s − μ = 88): against the formula
// as a plain loop in double. Query 0 of example 0 may see key 10 only, and
// key 10 holds NaN: its output must be NaN (a NaN score is not a masked
// one), while the other queries, which may not see key 10, stay finite.
TEST_CASE("scaled_dot_product_attention fused (float): scores hundreds apart and a NaN score, against a plain loop") {
    const int64_t B = 2, m = 3, n = 37, d = 4;
    Generator gen(9);
    Tensor q = Tensor::normal({B, m, d}, 0, 12, gen), k = Tensor::normal({B, n, d}, 0, 12, gen);
    const Tensor v = Tensor::normal({B, n, d}, 0, 1, gen);
    k[(0 * n + 10) * d + 2] = std::numeric_limits<real>::quiet_NaN();
    Tensor mask = Tensor::ones({B, m, n});
    for (int64_t j = 0; j < n; ++j) {
        mask[(0 * m + 0) * n + j] = j == 10 ? 1 : 0;  // example 0, query 0: key 10 only
        if (j == 10) mask[(0 * m + 1) * n + j] = mask[(0 * m + 2) * n + j] = 0;  // the others never see it
    }
    const Tensor out = scaled_dot_product_attention_fused(Var(q), Var(k), Var(v), mask, {}).output.value();
    CHECK(std::isnan(out[0]));
    double worst = 0, spread = 0;
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < m; ++i) {
            if (b == 0 && i == 0) continue;
            std::vector<double> s(n, -1e300);
            double mu = -1e300;
            for (int64_t j = 0; j < n; ++j) {
                if (mask[(b * m + i) * n + j] == 0) continue;
                double dot = 0;
                for (int64_t c = 0; c < d; ++c) dot += double(q[(b * m + i) * d + c]) * k[(b * n + j) * d + c];
                s[j] = dot / std::sqrt(double(d));
                mu = std::max(mu, s[j]);
            }
            double ell = 0, lo = 1e300;
            for (int64_t j = 0; j < n; ++j)
                if (mask[(b * m + i) * n + j] != 0) ell += std::exp(s[j] - mu), lo = std::min(lo, s[j]);
            spread = std::max(spread, mu - lo);
            for (int64_t c = 0; c < d; ++c) {
                double o = 0;
                for (int64_t j = 0; j < n; ++j)
                    if (mask[(b * m + i) * n + j] != 0) o += std::exp(s[j] - mu) / ell * v[(b * n + j) * d + c];
                worst = std::max(worst, std::fabs(out[(b * m + i) * d + c] - o) / (1 + std::fabs(o)));
            }
        }
    MESSAGE("largest relative error " << worst << "; scores of a row up to " << spread << " apart");
    CHECK(spread > 200);  // the data does what the test needs: e^spread overflows float
    CHECK(worst < 1e-4);
}

// ---- the heads side by side (scaled_dot_product_attention_fused_heads) ----------------

namespace {

// The attention of head j of example b, straight from the formula in double:
// O[b, i, j·d_v + c] = Σ_k softmax_k(q_i · k_k / √d_k over the keys kept) v[b, k, j·d_v + c],
// with keep(b, j, i, k) the mask; a query that keeps no key gives 0.
template <class Keep>
Tensor heads_by_loops(const Tensor& q, const Tensor& k, const Tensor& v, int64_t h, Keep keep) {
    const int64_t B = q.size(0), m = q.size(1), n = k.size(1), dk = q.size(2) / h, dv = v.size(2) / h;
    Tensor out = Tensor::zeros({B, m, h * dv});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < h; ++j)
            for (int64_t i = 0; i < m; ++i) {
                std::vector<double> s(static_cast<size_t>(n), 0);
                double mu = -1e300;
                for (int64_t t = 0; t < n; ++t) {
                    if (!keep(b, j, i, t)) continue;
                    double dot = 0;
                    for (int64_t c = 0; c < dk; ++c)
                        dot += double(q[(b * m + i) * h * dk + j * dk + c]) * k[(b * n + t) * h * dk + j * dk + c];
                    s[size_t(t)] = dot / std::sqrt(double(dk));
                    mu = std::max(mu, s[size_t(t)]);
                }
                double ell = 0;
                for (int64_t t = 0; t < n; ++t)
                    if (keep(b, j, i, t)) ell += std::exp(s[size_t(t)] - mu);
                if (ell == 0) continue;
                for (int64_t c = 0; c < dv; ++c) {
                    double o = 0;
                    for (int64_t t = 0; t < n; ++t)
                        if (keep(b, j, i, t)) o += std::exp(s[size_t(t)] - mu) / ell * v[(b * n + t) * h * dv + j * dv + c];
                    out[(b * m + i) * h * dv + j * dv + c] = real(o);
                }
            }
    return out;
}

// The heads in place (fused) or split, attended by the composite and joined (not fused).
Run run_heads(bool fused, const Tensor& q, const Tensor& k, const Tensor& v, int64_t h, const Tensor& G,
              const Tensor& mask, bool causal) {
    return run_with(
        [&](const Var& Q, const Var& K, const Var& V) {
            if (fused)
                return scaled_dot_product_attention_fused_heads(Q, K, V, h, mask, {.causal = causal, .need_weights = true});
            AttentionOutput a =
                scaled_dot_product_attention(split_heads(Q, h), split_heads(K, h), split_heads(V, h), mask, causal);
            a.output = concat_heads(a.output);
            return a;
        },
        q, k, v, G);
}

}  // namespace

TEST_CASE("scaled_dot_product_attention_fused_heads: against the formula as loops, and the composite's gradients") {
    struct Config {
        const char* name;
        int64_t B, h, m, n, d_k, d_v;
        bool causal;
        int64_t holes;  // 0: no mask; 1: padding B×1×1×n; 2: a per-head B×h×m×n mask with an empty row
    };
    const std::vector<Config> configs = {
        {"3 heads, d_k 16 ≠ d_v 8, m 130, n 257: every tile edge", 2, 3, 130, 257, 16, 8, false, 0},
        {"2 heads, causal, padding {90, 33}", 2, 2, 90, 90, 16, 16, true, 1},
        {"4 heads, a mask of its own per head, one query seeing no key", 2, 4, 20, 33, 8, 4, false, 2},
    };
    Generator gen(12);
    for (const Config& c : configs) {
        CAPTURE(c.name);
        const Tensor q = Tensor::normal({c.B, c.m, c.h * c.d_k}, 0, 1, gen);
        const Tensor k = Tensor::normal({c.B, c.n, c.h * c.d_k}, 0, 1, gen);
        const Tensor v = Tensor::normal({c.B, c.n, c.h * c.d_v}, 0, 1, gen);
        const Tensor G = Tensor::normal({c.B, c.m, c.h * c.d_v}, 0, 1, gen);
        Tensor mask;
        if (c.holes == 1) mask = mask_for_heads(key_mask(length_mask({c.n, 33}, c.n)));  // B×1×1×n
        if (c.holes == 2) {
            mask = Tensor::empty({c.B, c.h, c.m, c.n});
            for (int64_t e = 0; e < mask.numel(); ++e) mask[e] = gen.uniform() < 0.6 ? 1 : 0;
            for (int64_t t = 0; t < c.n; ++t) mask[((1 * c.h + 2) * c.m + 5) * c.n + t] = 0;  // example 1, head 2, query 5
        }
        auto keep = [&](int64_t b, int64_t j, int64_t i, int64_t t) {
            if (c.causal && t > i + c.n - c.m) return false;
            if (c.holes == 1) return mask[b * c.n + t] != 0;
            if (c.holes == 2) return mask[((b * c.h + j) * c.m + i) * c.n + t] != 0;
            return true;
        };
        const Run fused = run_heads(true, q, k, v, c.h, G, mask, c.causal);
        const Run composite = run_heads(false, q, k, v, c.h, G, mask, c.causal);
        check_close(fused.out, heads_by_loops(q, k, v, c.h, keep), "output against the loops", 2e-5);
        check_close(fused.weights, composite.weights, "weights", 2e-5);
        check_runs_close(fused, composite);
    }
}

TEST_CASE("scaled_dot_product_attention_fused_heads: the same bits on 1 and 2 threads") {
    Generator gen(13);
    const Tensor q = Tensor::normal({4, 150, 64}, 0, 1, gen), k = Tensor::normal({4, 150, 64}, 0, 1, gen);
    const Tensor v = Tensor::normal({4, 150, 64}, 0, 1, gen), G = Tensor::normal({4, 150, 64}, 0, 1, gen);
    const int before = num_threads();
    set_num_threads(1);
    const Run one = run_heads(true, q, k, v, 4, G, {}, true);
    set_num_threads(2);
    const Run two = run_heads(true, q, k, v, 4, G, {}, true);
    set_num_threads(before);
    check_same_bits(one, two);
}

// A NaN in head 1's columns of key 3 of example 0: the rules of the composite
// hold per head. Head 1's queries that may see key 3 come out NaN; every
// other value (heads 0 and 2, the queries the mask hides key 3 from, example
// 1) is finite and equal to the split heads' composite, gradients included.
TEST_CASE("scaled_dot_product_attention_fused_heads: a non-finite key reaches only its own head") {
    const int64_t B = 2, h = 3, m = 4, n = 6, d = 4;
    Generator gen(14);
    Tensor k = Tensor::normal({B, n, h * d}, 0, 1, gen);
    const Tensor q = Tensor::normal({B, m, h * d}, 0, 1, gen), v = Tensor::normal({B, n, h * d}, 0, 1, gen);
    const Tensor G = Tensor::normal({B, m, h * d}, 0, 1, gen);
    k[(0 * n + 3) * h * d + 1 * d + 2] = std::numeric_limits<real>::quiet_NaN();
    Tensor mask = Tensor::ones({B, 1, m, n});
    mask[(0 * m + 0) * n + 3] = mask[(0 * m + 2) * n + 3] = 0;  // queries 0 and 2 of example 0 never see key 3
    const Run fused = run_heads(true, q, k, v, h, G, mask, false);
    const Run composite = run_heads(false, q, k, v, h, G, mask, false);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < m; ++i)
            for (int64_t c = 0; c < h * d; ++c) {
                const int64_t e = (b * m + i) * h * d + c;
                const bool sees_nan = b == 0 && c / d == 1 && (i == 1 || i == 3);
                INFO("example ", b, ", query ", i, ", column ", c);
                CHECK(std::isnan(fused.out[e]) == sees_nan);
                if (!sees_nan) CHECK(std::fabs(fused.out[e] - composite.out[e]) < 2e-5);
            }
    // The gradients: NaN exactly where the composite's are, equal elsewhere;
    // except the bad key's own row of dK, which the composite sets to 0 (its
    // scores are replaced by a selection) and the fused kernel, like
    // scaled_dot_product_attention_fused on the split heads, leaves NaN.
    const std::pair<Tensor, Tensor> grads[] = {{fused.dq, composite.dq}, {fused.dk, composite.dk}, {fused.dv, composite.dv}};
    for (int g = 0; g < 3; ++g)
        for (int64_t e = 0; e < grads[g].first.numel(); ++e) {
            if (g == 1 && e / (h * d) == 0 * n + 3) continue;
            const real got = grads[g].first[e], want = grads[g].second[e];
            INFO("gradient ", g, ", element ", e);
            REQUIRE(std::isnan(got) == std::isnan(want));
            if (!std::isnan(want)) CHECK(std::fabs(got - want) < 2e-5);
        }
    // and the way round they take is exactly the fused kernel on the split heads
    Var Q(q.clone(), true), K(k.clone(), true), V(v.clone(), true);
    Var split = concat_heads(
        scaled_dot_product_attention_fused(split_heads(Q, h), split_heads(K, h), split_heads(V, h), mask).output);
    split.backward(G);
    for (const auto& [got, want] : {std::pair{fused.out, split.value()}, {fused.dk, K.grad()}})
        CHECK(std::equal(got.data(), got.data() + got.numel(), want.data(),
                         [](real x, real y) { return x == y || (std::isnan(x) && std::isnan(y)); }));
}

TEST_CASE("scaled_dot_product_attention_fused_heads: shapes that do not split into h heads name the op and shapes") {
    const Var q(Tensor::zeros({2, 3, 8})), k(Tensor::zeros({2, 5, 8})), v(Tensor::zeros({2, 5, 6}));
    CHECK_THROWS_WITH_AS(scaled_dot_product_attention_fused_heads(q, k, v, 4),
                         "scaled_dot_product_attention_fused_heads: queries 2×3×8, keys 2×5×8 and values 2×5×6 "
                         "with h = 4 heads: need B×m×(h·d_k), B×n×(h·d_k) and B×n×(h·d_v), h > 0, d_k > 0",
                         std::invalid_argument);
    CHECK_THROWS_AS(scaled_dot_product_attention_fused_heads(q, Var(Tensor::zeros({2, 5, 4})), k, 2),
                    std::invalid_argument);
    CHECK_THROWS_AS(scaled_dot_product_attention_fused_heads(q, k, k, 0), std::invalid_argument);
    CHECK_THROWS_WITH_AS(scaled_dot_product_attention_fused_heads(q, k, k, 2, Tensor::ones({4, 5})),
                         "scaled_dot_product_attention_fused_heads: mask 4×5 does not broadcast to the scores 2×2×3×5",
                         std::invalid_argument);
}
