// The alignments of catalog entries 22–28 written again in plain loops
// (tests/grad/reference.hpp), for the registry entries of the alignments
// (test_alignments_reference.cpp) and of general attention
// (test_general_reference.cpp). Nothing here calls attention/,
// autograd/, nn/ or tensor/ ops; the stochastic ones replay the module's draws
// from a Generator seeded like the module's, in the module's order.
//
// Shapes: scores E B×m×n; keep B×m×n of 0/1 (1 = may attend; keep_keys
// builds it from a B×n key mask); weights B×m×n.
#pragma once

#include <cstdint>

#include "tensor/random.hpp"
#include "tests/grad/reference.hpp"

namespace attn::testing {

// keep[b, i, l] = mask[b, l]: a B×n key mask for every query (all ones when
// the mask is empty).
Array keep_keys(const Array& mask, int64_t B, int64_t m, int64_t n);
// The kept entries of keep[b, i, :] as a Vec.
Vec keep_of(const Array& keep, int64_t b, int64_t i);

// 22: a_il = exp(e_il/T) / Σ_{j kept} exp(e_ij/T) on the kept l, 0 elsewhere.
Array soft_alignment_reference(const Array& E, const Array& keep, double T = 1);

// 23: a = softmax(e); m ~ Categorical(a) by inverting the cumulative sum with
// one uniform per row (a fully masked row draws too, then gets index −1),
// or m = argmax a when not sampling; then, in training with p > 0, one
// uniform per row: u < p puts the row on the expected context a.
struct HardDraw {
    Array probs;     // a            B×m×n
    Array indices;   // m            B×m (−1 fully masked)
    Array log_prob;  // log a_m      B×m (0 where soft or fully masked)
    Array entropy;   // −Σ a log a   B×m
    Array soft;      // 1 = expected context   B×m
    Array weights;   // onehot(m), or a where soft   B×m×n
};
HardDraw hard_alignment_reference(const Array& E, const Array& keep, Generator& noise, bool sample,
                                  double soft_probability);

// 24: W = {l : |l − p| ≤ D} ∩ [0, n), p = positions[b, i] (or i when empty);
// a = softmax over W ∩ kept, 0 elsewhere.
Array local_monotonic_reference(const Array& E, const Array& keep, int64_t D, const Array& positions = {});

// 25: p_t = S · σ(v_pᵀ tanh(W_p q)), S = the number of kept keys of the query   → B×m
Array local_predictive_centres(const Array& Q, const Array& W_p, const Vec& v_p, const Array& keep);
// a_l = softmax_{l ∈ W ∩ kept}(e_l) · exp(−(l − p_t)² / 2σ²), W = {l : |l − p_t| ≤ D}, σ = D/2
Array local_predictive_reference(const Array& E, const Array& keep, const Array& centres, int64_t D);

// 26: one sampler of ReSA: s_l = w_2ᵀ tanh(W_1 [x_l; x̄] + b_1) + b_2 with x̄ the
// mean of the valid tokens; π = σ(s); z_l = valid_l · [u_l < π_l] with one
// uniform per token (all B·n, padding included) in training, [π_l > 0.5] in
// evaluation; log p(z) = Σ_{valid l} z_l log π_l + (1 − z_l) log(1 − π_l).
struct SamplerDraw {
    Array probs;     // π   B×n
    Array z;         // B×n
    Array log_prob;  // B
};
SamplerDraw resa_sampler_reference(const Array& X, const Array& valid, const Array& W_1, const Vec& b_1,
                                   const Vec& w_2, double b_2, Generator& noise, bool training);
// a_il = z^att_i z^ed_l exp(e_il) / Σ_j z^att_i z^ed_j exp(e_ij), over the kept pairs
Array restricted_softmax_reference(const Array& E, const Array& keep, const Array& z_attending,
                                   const Array& z_attended);

// 27: y = softmax((log a + g)/τ) over the kept l, a = softmax(e), g_l = −log(−log u_l)
// with one uniform per score (all B·m·n, masked ones included) in training and
// g = 0 in evaluation; straight-through gives onehot(argmax y) (0 when fully masked).
Array gumbel_softmax_reference(const Array& E, const Array& keep, Generator& noise, double tau, bool training,
                               bool straight_through);

// 28: a_l = σ(e_l), or ReLU(e_l)/s with s = 1, n (the kept count, at least 1)
// or Σ_j ReLU(e_j) + ε; 0 where masked.
enum class ElementwiseRef { sigmoid, relu_one, relu_length, relu_sum };
Array elementwise_reference(const Array& E, const Array& keep, ElementwiseRef kind, double eps = 1e-6);

}  // namespace attn::testing
