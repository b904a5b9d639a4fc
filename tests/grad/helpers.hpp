// What the tests of tests/grad/ share besides the registry: inputs drawn at
// random, value checks that name the index and both values, and the small
// conversions the registry's `run` functions need.
//
// These helpers build and compare the library's tensors, so an independent
// reference must never use them: a reference reads its inputs as Arrays and
// computes with tests/grad/reference.hpp only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attention/general.hpp"
#include "tests/grad/catalog.hpp"

namespace attn::testing {

// ---- inputs -------------------------------------------------------------------------------
// N(0, 1) draws from gen.
Tensor normal(const Shape& shape, Generator& gen);
// The same, as a constant input of a mechanism (no gradient).
Var normal_var(const Shape& shape, Generator& gen);
// N(0, scale_by²) inputs, redrawn until no two values of an input lie within
// 1e-5 of each other: no max sits at a tie, where the central difference of
// the gradient check would straddle a kink.
Draw distinct(std::vector<Shape> shapes, double scale_by = 1);

// ---- masks ----------------------------------------------------------------------------------
// masks[i] of a case, or an undefined tensor (keep everything) when the case
// has fewer masks.
Tensor mask_or_none(Masks masks, size_t i = 0);
// The B×1×n keep mask from lengths that scaled dot-product attention and the
// Transformer family take: key_mask(length_mask(lengths, n)). A length of 0
// masks every key of that example.
Tensor padding(const std::vector<int64_t>& lengths, int64_t n);
// The case's B×n padding mask (masks[0]) as that B×1×n keep mask, or undefined.
Tensor key_padding(Masks masks);
// An m×n keep mask with random holes (each key kept with probability 0.7)
// and row `empty_row` fully masked (−1: none).
Tensor holes(int64_t m, int64_t n, int64_t empty_row, uint64_t seed);

// ---- outputs --------------------------------------------------------------------------------
// A mechanism's output and weights as the registry's named outputs; weights
// materialised outside the graph (a fused kernel's) are not differentiable.
Outputs output_and_weights(const AttentionOutput& a, bool weights_differentiable = true);

// ---- checks ---------------------------------------------------------------------------------
// got equals want to atol, element by element: one CHECK per element, and a
// failure names the index and both values. Two computations in double agree
// to 1e-12 unless the test says otherwise.
void check_close(const Tensor& got, const Tensor& want, double atol = 1e-12);
// The same against values written out by hand, which are given to six digits.
void check_close(const Tensor& got, const std::vector<real>& want, double atol = 1e-6);
// For large tensors: one CHECK that every value of got is finite and one that
// the largest difference is at most atol, both labelled `what`.
void check_max_difference(const Tensor& got, const Tensor& want, double atol, const std::string& what);
// max_i |a_i − b_i| (the shapes must be equal).
double max_abs_diff(const Tensor& a, const Tensor& b);
// Every row of weights (last axis) sums to 1, to 1e-12.
void check_sums_to_one(const Tensor& weights);
// "" when want and got agree to 1e-9 relative, else what differs and where:
// for properties, which report a failure as a message.
std::string differs(const std::string& what, const Tensor& want, const Tensor& got);

// ---- parameters -----------------------------------------------------------------------------
// Overwrites a parameter's value in place (the module keeps the same Var).
void set(Var& parameter, const Tensor& value);
// The d×d identity matrix.
Tensor identity_matrix(int64_t d);

// ---- gradients ------------------------------------------------------------------------------
// The output of f(Q, K, V) and the gradients of Σ G ⊙ output to Q, K and V,
// each input a fresh variable holding a copy of q, k, v.
struct OutputAndGradients {
    Tensor out, dq, dk, dv;
};
template <class F>
OutputAndGradients run_with_gradients(F f, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& G) {
    Var Q(q.clone(), true), K(k.clone(), true), V(v.clone(), true);
    Var out = f(Q, K, V);
    OutputAndGradients g{out.value().clone(), {}, {}, {}};
    out.backward(G);
    g.dq = Q.grad(), g.dk = K.grad(), g.dv = V.grad();
    return g;
}

}  // namespace attn::testing
