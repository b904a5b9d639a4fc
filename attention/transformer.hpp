// The Transformer's layers (Vaswani et al. 2017), built from multi-head
// attention (attention/multi_head.hpp), which runs scaled dot-product
// attention (entry 44, attention/scaled_dot_product.hpp) in each head:
//
//   82  causal_self_attention             §3.2.3: the decoder's masked self-attention, MH(X, X, X; causal)
//   83  cross_attention                   §3.2.3: encoder–decoder attention, MH(X, M, M; source padding)
//       TransformerEncoderLayer           post-LN, ReLU FFN (torch.nn.TransformerEncoderLayer)
//       TransformerDecoderLayer           post-LN: 82, then 83, then the FFN (torch.nn.TransformerDecoderLayer)
//
// Elsewhere: position encodings (46, 47) in attention/position.hpp; 37 and
// 38 in attention/self_attention.hpp. The shape legend is in
// attention/scaled_dot_product.hpp.
#pragma once

#include <cstdint>
#include <string>

#include "attention/multi_head.hpp"
#include "attention/scaled_dot_product.hpp"
#include "nn/dropout.hpp"
#include "nn/layernorm.hpp"
#include "nn/linear.hpp"

namespace attn {

// ---- the three uses of attention in the Transformer (Vaswani et al. 2017, §3.2.3) --
// Multi-head attention (entry 40) wired three ways:
//   encoder self-attention    MH(X, X, X; source padding)             (TransformerEncoderLayer)
//   82 causal_self_attention  MH(Y, Y, Y; causal ∧ target padding)    the decoder's first sub-layer
//   83 cross_attention        MH(Y, M, M; source padding)              the decoder's second sub-layer
// The padding masks here are B×n keep masks (1 = a real position; length_mask(lengths, n)).

// ---- entry 82: causal_self_attention ------------------------------------------
// Vaswani et al. (2017), §3.2.3, third use: "self-attention layers in the
// decoder allow each position in the decoder to attend to all positions in
// the decoder up to and including that position ... by masking out (setting
// to −∞) all values in the input of the softmax which correspond to illegal
// connections":
//
//     head_j = softmax_row((Y W^Q_j)(Y W^K_j)ᵀ / √d_k + M) (Y W^V_j),   M_ij = −∞ for j > i or key j padded
//     Y' = [head_1, …, head_h] W^O
//
// So training computes every position at once (teacher forcing) and still
// position i never sees the tokens after it, which it will not have when decoding.
// Y B×T×d_model, padding B×T (or undefined) → output B×T×d_model, weights B×h×T×T.
AttentionOutput causal_self_attention(MultiHeadAttention& attention, const Var& y, const Tensor& padding = {});

// ---- entry 83: cross_attention (encoder–decoder attention) ----------------------
// Vaswani et al. (2017), §3.2.3, first use: "the queries come from the
// previous decoder layer, and the memory keys and values come from the output
// of the encoder. This allows every position in the decoder to attend over
// all positions in the input sequence" (as Bahdanau et al. 2015):
//
//     head_j = softmax_row((Y W^Q_j)(M W^K_j)ᵀ / √d_k + P) (M W^V_j),   P_ij = −∞ for padded source j
//     Y' = [head_1, …, head_h] W^O
//
// Y B×T×d_model (queries), memory M B×n×d_model, memory_padding B×n (or
// undefined) → output B×T×d_model, weights B×h×T×n.
AttentionOutput cross_attention(MultiHeadAttention& attention, const Var& y, const Var& memory,
                                const Tensor& memory_padding = {});

// What both layers take: the fused paths (chosen by name) and dropout.
struct TransformerLayerOptions {
    bool fused = false;  // Module::set_fast(true) at construction; set_fast switches it after
    bool need_weights = true;  // with fused: materialise the weights for drawing
    // Dropout (Srivastava et al. 2014) on each sub-layer's output before its
    // residual sum, and inside the FFN after the ReLU, in training mode only;
    // as PyTorch's dropout, dropout1..3 (PyTorch also drops the attention
    // weights inside MultiheadAttention; this layer does not). The masks come
    // from the generator given to the constructor, kept by reference.
    real dropout = 0;
};

// ---- the encoder layer the Transformer stacks ----------------------------------
// torch.nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward,
// dropout=0, activation=relu, batch_first=True, norm_first=False):
//
//     X₁ = LayerNorm₁(X + Dropout(MHA(X, X, X; M)))                (post-LN)
//     Y  = LayerNorm₂(X₁ + Dropout(W₂ Dropout(ReLU(W₁ X₁ + b₁)) + b₂))
//
// MHA is entry 40 with biases (as PyTorch). With `fused`, its heads use the
// fused SDPA kernel and the weights are not materialised (output.weights is
// undefined) unless `need_weights`, and the LayerNorms are the fused op. X B×n×d_model, mask → Y B×n×d_model and the
// attention weights B×h×n×n. Dropout (default 0) as TransformerLayerOptions says.
class TransformerEncoderLayer : public Module {
public:
    using Options = TransformerLayerOptions;
    TransformerEncoderLayer(int64_t d_model, int64_t heads, int64_t dim_feedforward, Generator& gen);
    TransformerEncoderLayer(int64_t d_model, int64_t heads, int64_t dim_feedforward, Generator& gen,
                            const Options& options);

    AttentionOutput forward(const Var& x, const Tensor& mask = {}, bool causal = false);
    std::string describe() const override;

    MultiHeadAttention& self_attn() { return self_attn_; }
    Linear linear1, linear2;
    LayerNorm norm1, norm2;
    Dropout dropout;

private:
    MultiHeadAttention self_attn_;  // after linear1 and linear2: the generator's draws in PyTorch's order
};

// ---- the decoder layer -----------------------------------------------------------------
// torch.nn.TransformerDecoderLayer(d_model, nhead, dim_feedforward,
// dropout=0, activation=relu, batch_first=True, norm_first=False), Vaswani
// et al. (2017) §3.1 "Decoder" (post-LN):
//
//     Y₁ = LayerNorm₁(Y + Dropout(MH_self(Y, Y, Y; causal ∧ target padding)))      entry 82
//     Y₂ = LayerNorm₂(Y₁ + Dropout(MH_cross(Y₁, M, M; source padding)))             entry 83
//     Z  = LayerNorm₃(Y₂ + Dropout(W₂ Dropout(ReLU(W₁ Y₂ + b₁)) + b₂))
//
// Y B×T×d_model (the target so far), memory M B×n×d_model (the encoder's
// output), target_padding B×T and memory_padding B×n keep masks (or
// undefined) → Z B×T×d_model, the self-attention weights B×h×T×T and the
// cross-attention weights B×h×T×n. Sub-modules in PyTorch's state_dict order:
// self_attn, multihead_attn, linear1, linear2, norm1, norm2, norm3.
class TransformerDecoderLayer : public Module {
public:
    using Options = TransformerLayerOptions;
    struct Output {
        Var output;        // B×T×d_model
        Var self_weights;  // B×h×T×T (undefined with fused heads unless need_weights)
        Var cross_weights; // B×h×T×n (likewise)
    };
    TransformerDecoderLayer(int64_t d_model, int64_t heads, int64_t dim_feedforward, Generator& gen);
    TransformerDecoderLayer(int64_t d_model, int64_t heads, int64_t dim_feedforward, Generator& gen,
                            const Options& options);

    Output forward(const Var& y, const Var& memory, const Tensor& target_padding = {},
                   const Tensor& memory_padding = {});
    std::string describe() const override;

    MultiHeadAttention& self_attn() { return self_attn_; }
    MultiHeadAttention& multihead_attn() { return multihead_attn_; }
    Linear linear1, linear2;
    LayerNorm norm1, norm2, norm3;
    Dropout dropout;

private:
    MultiHeadAttention self_attn_, multihead_attn_;  // after linear1 and linear2, as the encoder layer's
};

}  // namespace attn
