// Scaled dot-product attention and the self-attentions built on it (catalog
// group TR, Vaswani et al. 2017 and follow-ups), composed from autograd's
// primitive ops so that every backward comes for free and a student can read
// each formula in a few lines:
//
//   44  scaled_dot_product_attention      softmax(QKᵀ/√d_k + M) V
//   45  restricted_self_attention         the same inside a band |i − j| ≤ r, in O(r·n)
//   48  relative_position_self_attention  Shaw et al. (2018): clipped relative positions
//   50  random_synthesizer_attention      Tay et al. (2021): learned, input-independent weights
//
// Above this file: multi-head attention (40, 41, 49) in attention/multi_head.hpp,
// which runs entry 44 in each head, and the Transformer's layers (82, 83, the
// encoder and decoder layers) in attention/transformer.hpp. Beside it: the
// fused (tiled, online-softmax) twin of entry 44 in attention/fused_attention.hpp.
//
// Shape legend (row = position, batch first; "…" is any number of leading
// axes, e.g. B or B×h for heads):
//   queries …×m×d_k   keys …×n×d_k   values …×n×d_v
//   weights …×m×n     output …×m×d_v
//   masks: keep masks of 0/1 (1 = may attend) broadcastable to …×m×n
//          (key_mask(B×n) → B×1×n for padding; causal_mask(m, n); band_mask(n, r))
// A query whose keys are all masked gets zero weights, a zero output and a
// zero gradient, never NaN.
#pragma once

#include <cstdint>
#include <string>

#include "attention/general.hpp"

namespace attn {

// ---- entry 44: scaled_dot_product_attention (composite) ----------------------
// Vaswani et al. (2017), Attention Is All You Need, eq. 1:
//
//     Attn(Q, K, V; M) = softmax_row(Q Kᵀ / √d_k + M) V
//
// M is 0 where the keep mask is 1 and −∞ where it is 0 (applied by
// selection, not by adding −∞: NaN + (−∞) is NaN); `causal` adds the causal
// mask (key j visible to query i when j ≤ i + n − m). Returns the output
// …×m×d_v and the weights A …×m×n (both differentiable).
//
// Non-finite inputs (docs/attention/transformer.md, "Masks and non-finite
// values"): a masked key takes no part whatever it holds (see
// FiniteKeysValues in attention/padding.hpp); a non-finite value a query may see makes that
// query's weights and output NaN (a +inf score, a −inf in a query: IEEE, as
// PyTorch), never hidden; the trainers stop on the non-finite loss.
AttentionOutput scaled_dot_product_attention(const Var& queries, const Var& keys, const Var& values,
                                             const Tensor& mask = {}, bool causal = false);

// The shapes both SDPA implementations accept: equal ranks ≥ 2, equal leading
// axes, d_k of queries = d_k of keys, n of keys = n of values. Throws
// std::invalid_argument naming `who` and the three shapes.
void check_sdpa_inputs(const std::string& who, const Var& queries, const Var& keys, const Var& values);

// A keep mask written for B×m×n scores, lifted to B×h×m×n heads: rank 3
// (B×m×n, B×1×n) gets a heads axis of 1 → B×1×m×n; rank ≤ 2 (m×n) and rank 4
// already broadcast and are returned as they are.
Tensor mask_for_heads(const Tensor& mask);

// The heads of multi-head attention side by side and apart:
//   split_heads   B×rows×(h·w) → B×rows×h×w → B×h×rows×w   (head j: columns j·w … (j+1)·w − 1)
//   concat_heads  B×h×rows×w → B×rows×h×w → B×rows×(h·w)   ([head_1, …, head_h])
Var split_heads(const Var& x, int64_t heads);
Var concat_heads(const Var& heads);

// ---- entry 45: restricted_self_attention -----------------------------------
// Vaswani et al. (2017), Table 1, "self-attention (restricted)": position i
// attends only to the 2r+1 positions j with |i − j| ≤ r:
//
//     Y = softmax_row(Q Kᵀ / √d_k + M_band) V,     M_band,ij = −∞ if |i − j| > r
//
// computed in the band only, O(r·n·d): row i's keys are gathered into a window
// W_i = (k_{i−r}, …, k_{i+r}) (zero rows past the ends, masked out), and
//     e_i = W_i q_i / √d_k      a_i = softmax(e_i)      y_i = W^Vᵢᵀ a_i.
// Nothing n×n is built. queries, keys B×n×d_k, values B×n×d_v, key_padding
// a B×n keep mask (or undefined) → output B×n×d_v and the BAND weights
// B×n×(2r+1): column o is key i + o − r (band_to_dense makes them B×n×n).
AttentionOutput restricted_self_attention(const Var& queries, const Var& keys, const Var& values, int64_t r,
                                          const Tensor& key_padding = {});
// Band weights B×n×(2r+1) → dense B×n×n (zeros outside the band), for drawing
// and for comparing with the masked full attention.
Tensor band_to_dense(const Tensor& band_weights, int64_t r);

// ---- entry 48: relative_position_self_attention -----------------------------
// Shaw, Uszkoreit & Vaswani (2018), Self-Attention with Relative Position
// Representations, eqs. 3–5 (row layout, XW form as in the paper):
//
//     e_ij = (x_i W^Q)(x_j W^K + a^K_ij)ᵀ / √d_z       α_ij = softmax_j(e_ij)
//     z_i  = Σ_j α_ij (x_j W^V + a^V_ij)
//     a^K_ij = w^K[clip(j − i, k) + k],  a^V_ij = w^V[clip(j − i, k) + k],  clip(x, k) = max(−k, min(k, x))
//
// Params: W_Q, W_K, W_V d×d_z; tables w_K, w_V (2k+1)×d_z.
// X B×n×d, mask → Z B×n×d_z, weights B×n×n.
class RelativePositionSelfAttention : public AttentionModule {
public:
    RelativePositionSelfAttention(int64_t d, int64_t d_z, int64_t k, Generator& gen);

    AttentionOutput forward(const Var& x, const Tensor& mask = {});
    // n×n: R_ij = clip(j − i, k) + k, the row of the tables pair (i, j) uses.
    Tensor relative_index(int64_t n) const;
    // a^K, a^V as n×n×d_z tensors (Toeplitz: they depend on j − i only).
    Var relative_keys(int64_t n) const { return embedding(w_K, relative_index(n)); }
    Var relative_values(int64_t n) const { return embedding(w_V, relative_index(n)); }

    std::string id() const override { return "relative_position_self_attention"; }
    Taxonomy taxonomy() const override;
    int64_t max_distance() const { return k_; }

    Var W_Q, W_K, W_V;  // d×d_z
    Var w_K, w_V;       // (2k+1)×d_z

private:
    int64_t d_, d_z_, k_;
};

// ---- entry 50: random_synthesizer_attention --------------------------------
// Tay et al. (2021), Synthesizer: Rethinking Self-Attention for Transformer
// Models, "Random Synthesizer": the weights are a learned matrix, the same for
// every input:
//
//     Y = softmax_row(R_{0:n,0:n} + M) (X W_Vᵀ)
//
// Params: R n_max×n_max, W_V d_v×d. X B×n×d (n ≤ n_max), mask → Y B×n×d_v,
// weights B×n×n.
class RandomSynthesizerAttention : public AttentionModule {
public:
    RandomSynthesizerAttention(int64_t n_max, int64_t d, int64_t d_v, Generator& gen);

    AttentionOutput forward(const Var& x, const Tensor& mask = {});

    std::string id() const override { return "random_synthesizer_attention"; }
    Taxonomy taxonomy() const override;

    Var R;    // n_max×n_max
    Var W_V;  // d_v×d

private:
    int64_t n_max_, d_;
};

}  // namespace attn
