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
