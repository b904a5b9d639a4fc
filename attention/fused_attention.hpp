// The fused twin of scaled_dot_product_attention (catalog entry 44): tiled,
// with an online softmax, and a hand-written backward. It computes exactly
//
//     O = softmax_row(Q Kᵀ / √d_k + M) V
//
// (attention/scaled_dot_product.hpp has the composite version, the one to read; a
// test shows the two agree in value and gradient, masks included), but it
// never materialises the m×n matrix of scores or weights:
//
// Forward (Milakov & Gimelshein 2018, "Online normalizer calculation for
// softmax"; Dao et al. 2022, FlashAttention). For a block of Br queries, visit
// the keys in blocks of Bc, keeping per query row a running maximum μ, a
// running sum ℓ and an unnormalised output o:
//
//     S  = Q_i K_jᵀ / √d_k                     Br×Bc, masked entries −∞
//     μ' = max(μ, rowmax S)
//     P  = exp(S − μ')                         Br×Bc
//     ℓ  = e^(μ−μ') ℓ + rowsum P
//     o  = e^(μ−μ') o + P V_j                  Br×d_v
//
// and at the end O_i = o / ℓ and the log-sum-exp L_i = μ + log ℓ, saved for
// backward (a vector per query, not a matrix).
//
// Backward (FlashAttention's, recomputing each tile from L):
//
//     D_i = Σ_c dO_ic O_ic                     (= Σ_j P_ij dP_ij)
//     P   = exp(Q_i K_jᵀ/√d_k − L_i)           the weights of the tile, recomputed
//     dV_j += Pᵀ dO_i                          dP = dO_i V_jᵀ
//     dS  = P ∘ (dP − D_i)                     (the softmax backward)
//     dQ_i += dS K_j / √d_k                    dK_j += dSᵀ Q_i / √d_k
//
// Every tile product is a call to the GEMM. A query row whose keys are all
// masked has ℓ = 0: its output is 0, L_i = −∞, its P is 0, so it gives zero
// gradient (never NaN). With `causal`, tiles above the diagonal are skipped
// without being computed, and no mask tensor is built.
//
// Non-finite values follow the composite's rules (FiniteKeysValues in
// attention/padding.hpp): the kernel reads the finite part of K and V, a
// key that held a non-finite value gets NaN scores before the mask is
// applied, and a row whose scores include a NaN comes out NaN (the running
// maximum keeps a NaN), never taken for a fully masked row.
//
// Memory: besides Q, K, V and O it keeps L (…×m) and per thread a few Br×Bc
// tiles. The weights …×m×n are built only when `need_weights` is set; they are
// then materialised, after the fact, for drawing (a tensor outside the graph:
// no gradient flows through them).
//
// Parallelism: forward over (batch, query block) pairs, backward over the
// leading (batch·heads) axis, each thread owning whole rows of the gradients.
//
// Shapes: queries …×m×d_k, keys …×n×d_k, values …×n×d_v (same leading axes),
// mask a keep mask broadcastable to …×m×n → output …×m×d_v.
#pragma once

#include <cstdint>

#include "attention/general.hpp"

namespace attn {

struct FusedAttentionOptions {
    bool causal = false;        // keep only keys j ≤ i + (n − m), without a mask tensor
    bool need_weights = false;  // also return the weights …×m×n (materialised, detached)
};

// The tile sizes: a block of Br queries against a block of Bc keys.
constexpr int64_t kFusedBlockQueries = 128;  // Br
constexpr int64_t kFusedBlockKeys = 128;     // Bc

// Entry 44, fused. `weights` is an undefined Var unless options.need_weights.
AttentionOutput scaled_dot_product_attention_fused(const Var& queries, const Var& keys, const Var& values,
                                                   const Tensor& mask = {}, const FusedAttentionOptions& options = {});

// The same attention for h heads that sit side by side in the last axis, as
// multi-head attention's projections give them (head j in columns j·d_k …
// (j+1)·d_k − 1):
//
//     queries B×m×(h·d_k), keys B×n×(h·d_k), values B×n×(h·d_v)
//       → output B×m×(h·d_v), the heads concatenated; weights B×h×m×n
//
// It equals splitting each input into heads (B×h×rows×d, a reshape and a
// permute), scaled_dot_product_attention_fused, and concatenating the
// heads of its output again, but the kernel reads and writes the heads in
// place (a row stride of h·d instead of d), so none of the four copies is
// made. The mask broadcasts to B×h×m×n, as for the split heads.
AttentionOutput scaled_dot_product_attention_fused_heads(const Var& queries, const Var& keys, const Var& values,
                                                         int64_t heads, const Tensor& mask = {},
                                                         const FusedAttentionOptions& options = {});

}  // namespace attn
