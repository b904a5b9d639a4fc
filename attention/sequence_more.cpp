// More sequence variants (entries 57, 58, 60): latent, neural-transducer and local-global attention.
// The formulas, the papers and the shape legend are in attention/sequence_more.hpp.
#include "attention/sequence_more.hpp"

#include <stdexcept>

#include "attention/alignments.hpp"
#include "attention/query_types.hpp"
#include "nn/init.hpp"

namespace attn {

namespace {

// conv over time of an n×d "image" with a width×d filter bank, tanh, max over time:
// X̂ B×n×d → B×filters
Var conv_tanh_max(Conv2d& conv, const Var& X) {
    const Var image = unsqueeze(X, 1);                 // B×1×n×d
    const Var maps = tanh(conv.forward(image));        // B×f×n'×1
    return reshape(max(maps, 2), {X.size(0), -1});     // max over time   B×f
}

}  // namespace

// ---- 57. latent_attention ------------------------------------------------------------------------

LatentAttention::LatentAttention(int64_t dim, int64_t max_length, Generator& gen) {
    u = register_parameter("u", init::uniform_fan_in(Shape{dim}, dim, gen));
    V = register_parameter("V", init::xavier_uniform(Shape{dim, max_length}, gen));
}

LatentAttention::Output LatentAttention::forward(const Var& D1_in, const Var& D2_in, const Var& D3_in,
                                                 const Tensor& mask) {
    const int64_t d = V.size(0), J = V.size(1);
    for (const auto& [what, D] : {std::pair{"D_1", &D1_in}, std::pair{"D_2", &D2_in}, std::pair{"D_3", &D3_in}}) {
        check_width(id(), what, *D, d, 3);
        if (D->size(1) != J || D->size(0) != D1_in.size(0))
            throw std::invalid_argument(id() + ": " + what + " " + D->shape().str() + " needs shape " +
                                        std::to_string(D1_in.size(0)) + "×" + std::to_string(J) + "×" +
                                        std::to_string(d) + " (B × the fixed length J × d)");
    }
    const int64_t B = D1_in.size(0);
    const Tensor keep = scores_keep_mask(id(), mask, B, J);  // B×1×J, or undefined
    // padded tokens zeroed (by selection) in all three before u, V and the sum read them
    const Var D1 = hide_unseen_keys(D1_in, keep), D2 = hide_unseen_keys(D2_in, keep);
    const Var D3 = hide_unseen_keys(D3_in, keep);
    // l = softmax(D_1 u)                                    B×1×J
    const Var l = masked_softmax(matmul(reshape(u, {1, d}), D1, false, true), keep);
    // A = softmax_col(D_2 V): column j normalised over the tokens i   B×J×J
    const Var A = softmax(matmul(D2, V), 1,
                          keep.defined() ? SoftmaxMask::keep(keep.reshape(Shape{B, J, 1})) : SoftmaxMask{});
    // w = A l                                               B×J
    const Var w = reshape(matmul(A, l, false, true), {B, J});
    // o = D_3ᵀ w                                            B×d
    const Var o = reshape(matmul(unsqueeze(w, 1), D3), {B, d});
    return {o, reshape(l, {B, J}), A, w};
}

Taxonomy LatentAttention::taxonomy() const {
    Taxonomy t;
    t.levels = "multi";  // weights over weights: the latent level picks the active level's column
    t.scoring = "dot_score";
    t.query = "self";
    return t;
}

// ---- 58. neural_transducer_attention ------------------------------------------------------------

NeuralTransducerAttention::NeuralTransducerAttention(std::unique_ptr<ScoreFunction> score, int64_t block_size)
    : score_(std::move(score)), block_(block_size) {
    if (block_size < 1)
        throw std::invalid_argument("neural_transducer_attention: block size " + std::to_string(block_size) +
                                    " must be positive");
    register_module("score", *score_);
}

Var NeuralTransducerAttention::block_frames(const Var& frames, int64_t block) const {
    check_rank(id(), "frames", frames, 3);
    const int64_t T = frames.size(1), start = block * block_;
    if (block < 0 || start >= T)
        throw std::invalid_argument(id() + ": block " + std::to_string(block) + " is outside the " +
                                    std::to_string(num_blocks(T)) + " blocks of frames " + frames.shape().str());
    const int64_t present = std::min(block_, T - start);
    const Var part = narrow(frames, 1, start, present);
    if (present == block_) return part;
    // the last, partial block: pad with zero frames (masked below)
    const Var pad(Tensor::zeros(Shape{frames.size(0), block_ - present, frames.size(2)}));
    return concat({part, pad}, 1);
}

Tensor NeuralTransducerAttention::block_mask(const Var& frames, int64_t block, const Tensor& mask) const {
    const int64_t B = frames.size(0), T = frames.size(1), start = block * block_;
    if (mask.defined() && mask.shape() != Shape{B, T})
        throw std::invalid_argument(id() + ": mask " + mask.shape().str() + " does not fit frames " +
                                    frames.shape().str() + " (it needs B×T)");
    Tensor keep = Tensor::zeros(Shape{B, block_});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < block_ && start + j < T; ++j)
            keep.at({b, j}) = mask.defined() ? mask.at({b, start + j}) : 1;
    return keep;
}

AttentionOutput NeuralTransducerAttention::forward(const Var& frames, int64_t block, const Var& decoder_states,
                                                   const Tensor& mask) {
    check_rank(id(), "decoder states", decoder_states, 3);
    if (decoder_states.size(0) != frames.size(0))
        throw std::invalid_argument(id() + ": decoder states " + decoder_states.shape().str() + " and frames " +
                                    frames.shape().str() + " need the same batch size");
    // h_{(b−1)W+1} .. h_{bW}: only the current block                 B×W×d
    const Var block_in = block_frames(frames, block);
    const Tensor keep = key_mask(block_mask(frames, block, mask));  // the block's real frames   B×1×W
    const Var h = hide_unseen_keys(block_in, keep);  // its padded frames zeroed (by selection) before f_att reads them
    // e_{m,j} = f_att(s_m, h_{(b−1)W+j})                              B×m×W
    const Var e = score_->score(decoder_states, h);
    // α_m = softmax(e_m) over the block's real frames                 B×m×W
    const Var alpha = masked_softmax(e, keep);
    return {attend(alpha, h), alpha};  // c_m = Σ_j α_{m,j} h_j     B×m×d
}

Taxonomy NeuralTransducerAttention::taxonomy() const {
    Taxonomy t;
    t.scoring = score_->id();
    t.alignment = "local-m";  // a window fixed by the stream position, not predicted
    return t;
}

// ---- 60. dual_local_global_attention ------------------------------------------------------------

DualLocalGlobalAttention::DualLocalGlobalAttention(int64_t length, int64_t dim, int64_t filters, int64_t out_dim,
                                                   Generator& gen, int64_t window)
    : local_conv(1, filters, Size2(1, static_cast<int>(dim)), gen),
      global_conv2(1, filters, Size2(2, static_cast<int>(dim)), gen),
      global_conv3(1, filters, Size2(3, static_cast<int>(dim)), gen),
      global_conv4(1, filters, Size2(4, static_cast<int>(dim)), gen),
      fc(4 * filters, out_dim, gen),
      length_(length),
      dim_(dim),
      window_(window) {
    if (window < 1 || window % 2 == 0 || length < 4)
        throw std::invalid_argument("dual_local_global_attention: window " + std::to_string(window) +
                                    " must be odd and length " + std::to_string(length) + " at least 4");
    W_L = register_parameter("W_L", init::uniform_fan_in(Shape{window, dim}, window * dim, gen));
    b_L = register_parameter("b_L", init::uniform_fan_in(Shape{1}, window * dim, gen));
    W_G = register_parameter("W_G", init::uniform_fan_in(Shape{length, dim}, length * dim, gen));
    b_G = register_parameter("b_G", init::uniform_fan_in(Shape{1}, length * dim, gen));
    register_module("local_conv", local_conv);
    register_module("global_conv2", global_conv2);
    register_module("global_conv3", global_conv3);
    register_module("global_conv4", global_conv4);
    register_module("fc", fc);
}

Var DualLocalGlobalAttention::local_scores(const Var& X) {
    check_width(id(), "reviews", X, dim_, 3);
    if (X.size(1) != length_)
        throw std::invalid_argument(id() + ": reviews " + X.shape().str() + " need the fixed length " +
                                    std::to_string(length_) + " (pad with zero rows)");
    // Σ_k ⟨W_L[k], x_{i+k}⟩ + b_L: one w×d filter slid over time, zero padded   B×1×n×1
    const int pad = static_cast<int>((window_ - 1) / 2);
    const Var filter = reshape(W_L, {1, 1, window_, dim_});
    const Var e = conv2d(unsqueeze(X, 1), filter, b_L, Size2(1), Size2(pad, 0));
    return reshape(sigmoid(e), {X.size(0), length_});  // s_i = σ(⋯)   B×n
}

DualLocalGlobalAttention::Output DualLocalGlobalAttention::forward(const Var& X) {
    const int64_t B = X.size(0);
    const Var s = local_scores(X);
    // local branch: x̂_i = s_i x_i, then conv width 1, tanh, max over time     B×f
    const Var local = conv_tanh_max(local_conv, mul(unsqueeze(s, 2), X));
    // global branch: g = σ(⟨W_G, X⟩ + b_G), one gate per review                B
    const Var g = sigmoid(add(sum(mul(X, W_G), std::vector<int>{1, 2}), b_G));
    const Var Xg = mul(reshape(g, {B, 1, 1}), X);  // X̂ = g X
    // convs of widths 2, 3, 4, tanh, max over time                             B×3f
    const Var global =
        concat({conv_tanh_max(global_conv2, Xg), conv_tanh_max(global_conv3, Xg), conv_tanh_max(global_conv4, Xg)}, 1);
    // z = FC([f_L; f_G])                                                          B×out
    return {fc.forward(concat({local, global}, 1)), s, g};
}

Taxonomy DualLocalGlobalAttention::taxonomy() const {
    Taxonomy t;
    t.levels = "multi";        // a word-window level and a document level
    t.scoring = "additive_score";
    t.alignment = "elementwise";  // sigmoid gates, not a softmax
    t.query = "self";
    return t;
}

}  // namespace attn
