// The Transformer's layers: entries 82 and 83, and the encoder and decoder
// layers, wired from multi-head attention. The formulas are in
// attention/transformer.hpp; each line below carries the formula it computes
// and the shape it produces.
#include "attention/transformer.hpp"

#include <sstream>
#include <stdexcept>
#include <string>

#include "tensor/ops.hpp"

namespace attn {

namespace {

// The multi-head attention of a Transformer layer: entry 40 with biases, as PyTorch's.
MultiHeadAttention::Options layer_attention(const TransformerLayerOptions& options) {
    MultiHeadAttention::Options mha;
    mha.bias = true;  // (mha.fused: the layer's constructor calls set_fast)
    mha.need_weights = options.need_weights;
    return mha;
}

// ", dropout=0.1" when the layer drops anything (describe()).
std::string dropout_text(const Dropout& d) {
    if (d.p() == 0) return "";
    std::ostringstream s;
    s << ", dropout=" << d.p();
    return s.str();
}

}  // namespace

// ---- entries 82 and 83: the decoder's two attentions (§3.2.3) -------------------------

namespace {

// A B×n keep mask of padding (or undefined) checked against the n rows it covers.
void check_padding(const std::string& who, const char* what, const Tensor& padding, const Var& rows) {
    if (padding.defined() && padding.shape() != Shape{rows.size(0), rows.size(1)})
        throw std::invalid_argument(who + ": " + what + " " + padding.shape().str() + " must be B×n = " +
                                    Shape{rows.size(0), rows.size(1)}.str() + " for the rows " + rows.shape().str());
}

}  // namespace

AttentionOutput causal_self_attention(MultiHeadAttention& attention, const Var& y, const Tensor& padding) {
    check_rank("causal_self_attention", "y", y, 3);
    check_padding("causal_self_attention", "padding", padding, y);
    // M: key j hidden from query i when j > i (causal) or j is padding      B×1×T, and T×T
    return attention.forward(y, y, y, padding.defined() ? key_mask(padding) : Tensor(), /*causal=*/true);
}

AttentionOutput cross_attention(MultiHeadAttention& attention, const Var& y, const Var& memory,
                                const Tensor& memory_padding) {
    check_rank("cross_attention", "y", y, 3);
    check_rank("cross_attention", "memory", memory, 3);
    check_padding("cross_attention", "memory_padding", memory_padding, memory);
    // queries from the decoder, keys and values from the encoder; P hides padded sources   B×1×n
    return attention.forward(y, memory, memory, memory_padding.defined() ? key_mask(memory_padding) : Tensor());
}

// ---- TransformerEncoderLayer ---------------------------------------------------------

namespace {

// ReLU(W₁ x + b₁), the feed-forward block's hidden layer. With the layer's
// fused flag set, one op (matmul_bias_relu: the bias and the ReLU in one pass
// over the product, nothing kept but the output); else the composite.
Var feed_forward_hidden(Linear& linear1, const Var& x) {
    if (linear1.fused && linear1.bias.defined())
        return matmul_bias_relu(x, linear1.weight, linear1.bias, /*trans_w=*/true);
    return relu(linear1(x));
}

}  // namespace

TransformerEncoderLayer::TransformerEncoderLayer(int64_t d_model, int64_t heads, int64_t dim_feedforward,
                                                 Generator& gen)
    : TransformerEncoderLayer(d_model, heads, dim_feedforward, gen, Options{}) {}

TransformerEncoderLayer::TransformerEncoderLayer(int64_t d_model, int64_t heads, int64_t dim_feedforward,
                                                 Generator& gen, const Options& options)
    : linear1(d_model, dim_feedforward, gen),
      linear2(dim_feedforward, d_model, gen),
      norm1(d_model),
      norm2(d_model),
      dropout(options.dropout, gen),
      self_attn_(d_model, heads, gen, layer_attention(options)) {
    // PyTorch's state_dict order (dropout has no parameters).
    register_module("self_attn", self_attn_);
    register_module("linear1", linear1);
    register_module("linear2", linear2);
    register_module("norm1", norm1);
    register_module("norm2", norm2);
    register_module("dropout", dropout);
    set_fast(options.fused);
}

AttentionOutput TransformerEncoderLayer::forward(const Var& x, const Tensor& mask, bool causal) {
    // X₁ = LayerNorm₁(X + Dropout(MHA(X, X, X; M)))                     B×n×d_model
    const AttentionOutput attention = self_attn_.forward(x, x, x, mask, causal);
    const Var x1 = norm1.add_and_norm(x, dropout(attention.output));
    // Y = LayerNorm₂(X₁ + Dropout(W₂ Dropout(ReLU(W₁ X₁ + b₁)) + b₂))    B×n×d_model
    const Var y = norm2.add_and_norm(x1, dropout(linear2(dropout(feed_forward_hidden(linear1, x1)))));
    return {y, attention.weights};
}

std::string TransformerEncoderLayer::describe() const {
    return "TransformerEncoderLayer(d_model=" + std::to_string(self_attn_.d_model()) +
           ", nhead=" + std::to_string(self_attn_.num_heads()) +
           ", dim_feedforward=" + std::to_string(linear1.out_features()) + dropout_text(dropout) +
           ", norm_first=false)";
}

// ---- TransformerDecoderLayer ---------------------------------------------------------

TransformerDecoderLayer::TransformerDecoderLayer(int64_t d_model, int64_t heads, int64_t dim_feedforward,
                                                 Generator& gen)
    : TransformerDecoderLayer(d_model, heads, dim_feedforward, gen, Options{}) {}

TransformerDecoderLayer::TransformerDecoderLayer(int64_t d_model, int64_t heads, int64_t dim_feedforward,
                                                 Generator& gen, const Options& options)
    : linear1(d_model, dim_feedforward, gen),
      linear2(dim_feedforward, d_model, gen),
      norm1(d_model),
      norm2(d_model),
      norm3(d_model),
      dropout(options.dropout, gen),
      self_attn_(d_model, heads, gen, layer_attention(options)),
      multihead_attn_(d_model, heads, gen, layer_attention(options)) {
    // PyTorch's state_dict order (dropout has no parameters).
    register_module("self_attn", self_attn_);
    register_module("multihead_attn", multihead_attn_);
    register_module("linear1", linear1);
    register_module("linear2", linear2);
    register_module("norm1", norm1);
    register_module("norm2", norm2);
    register_module("norm3", norm3);
    register_module("dropout", dropout);
    set_fast(options.fused);
}

TransformerDecoderLayer::Output TransformerDecoderLayer::forward(const Var& y, const Var& memory,
                                                                 const Tensor& target_padding,
                                                                 const Tensor& memory_padding) {
    // Y₁ = LayerNorm₁(Y + Dropout(MH_self(Y, Y, Y; causal ∧ target padding)))   B×T×d_model
    const AttentionOutput self = causal_self_attention(self_attn_, y, target_padding);
    const Var y1 = norm1.add_and_norm(y, dropout(self.output));
    // Y₂ = LayerNorm₂(Y₁ + Dropout(MH_cross(Y₁, M, M; source padding)))          B×T×d_model
    const AttentionOutput cross = cross_attention(multihead_attn_, y1, memory, memory_padding);
    const Var y2 = norm2.add_and_norm(y1, dropout(cross.output));
    // Z = LayerNorm₃(Y₂ + Dropout(W₂ Dropout(ReLU(W₁ Y₂ + b₁)) + b₂))             B×T×d_model
    const Var z = norm3.add_and_norm(y2, dropout(linear2(dropout(feed_forward_hidden(linear1, y2)))));
    return {z, self.weights, cross.weights};
}

std::string TransformerDecoderLayer::describe() const {
    return "TransformerDecoderLayer(d_model=" + std::to_string(self_attn_.d_model()) +
           ", nhead=" + std::to_string(self_attn_.num_heads()) +
           ", dim_feedforward=" + std::to_string(linear1.out_features()) + dropout_text(dropout) +
           ", norm_first=false)";
}

}  // namespace attn
