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
#include "attention/transformer.hpp"
#include "tensor/ops.hpp"
#include "tensor/parallel.hpp"
#include "tests/helpers.hpp"

using namespace attn;
using attn::testing::check_close;

namespace {

struct Run {
    Tensor out, dq, dk, dv;
};

Run run(bool fused, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& G, const Tensor& mask,
        bool causal) {
    Var Q(q.clone(), true), K(k.clone(), true), V(v.clone(), true);
    FusedAttentionOptions options;
    options.causal = causal;
    Var out = fused ? scaled_dot_product_attention_fused(Q, K, V, mask, options).output
                    : scaled_dot_product_attention(Q, K, V, mask, causal).output;
    Run r{out.value().clone(), {}, {}, {}};
    out.backward(G);
    r.dq = Q.grad(), r.dk = K.grad(), r.dv = V.grad();
    return r;
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
        const Run composite = run(false, q, k, v, G, c.mask, c.causal);
        const Run fused = run(true, q, k, v, G, c.mask, c.causal);
        check_close(fused.out, composite.out, "output", 2e-5);
        check_close(fused.dq, composite.dq, "dQ", 2e-5);
        check_close(fused.dk, composite.dk, "dK", 2e-5);
        check_close(fused.dv, composite.dv, "dV", 2e-5);
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
    for (const auto& [a, b] : {std::pair{one.out, two.out}, {one.dq, two.dq}, {one.dk, two.dk}, {one.dv, two.dv}})
        CHECK(std::equal(a.data(), a.data() + a.numel(), b.data()));
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
