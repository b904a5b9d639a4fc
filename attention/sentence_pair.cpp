// Sentence-pair attention (entries 67–73): two inputs that attend to each other.
// The formulas, the papers and the shape legend are in attention/sentence_pair.hpp.
#include "attention/sentence_pair.hpp"

#include <algorithm>
#include <stdexcept>

#include "attention/alignments.hpp"
#include "attention/query_types.hpp"
#include "nn/init.hpp"
#include "tensor/ops.hpp"

namespace attn {

namespace {

// Two sentences B×s_0×d and B×s_1×d: rank 3, the same batch size and the same
// width (unlike a score's queries and keys, whose widths may differ).
void check_sentence_pair(const std::string& who, const Var& a, const Var& b) {
    check_rank(who, "first input", a, 3);
    check_rank(who, "second input", b, 3);
    if (a.size(0) != b.size(0) || a.size(2) != b.size(2))
        throw std::invalid_argument(who + ": inputs " + a.shape().str() + " and " + b.shape().str() +
                                    " need the same batch size and width");
}

// keep_i · keep_j for every pair: masks B×s_0, B×s_1 → B×s_0×s_1 (undefined if both are)
Tensor pair_keep(const std::string& who, const Tensor& mask0, const Tensor& mask1, int64_t batch, int64_t s0,
                 int64_t s1) {
    if (!mask0.defined() && !mask1.defined()) return {};
    const Tensor k0 = mask0.defined() ? scores_keep_mask(who, mask0, batch, s0) : Tensor::ones(Shape{batch, 1, s0});
    const Tensor k1 = mask1.defined() ? scores_keep_mask(who, mask1, batch, s1) : Tensor::ones(Shape{batch, 1, s1});
    return mul(k0.reshape(Shape{batch, s0, 1}), k1);  // B×s_0×s_1
}

Var masked(const Var& x, const Tensor& keep) { return keep.defined() ? mul(x, Var(keep)) : x; }

// x with the rows of padding zeroed: x B×s×d, mask B×s (undefined: keep all)
Var keep_rows(const Var& x, const Tensor& mask) {
    return mask.defined() ? mul(x, Var(mask.reshape(Shape{mask.size(0), mask.size(1), 1}))) : x;
}

}  // namespace

// ---- ABCNN ------------------------------------------------------------------------------------------

Var abcnn_match_scores(const Var& F0_in, const Var& F1_in, const Tensor& mask0, const Tensor& mask1) {
    const std::string who = "abcnn_match_scores";
    check_sentence_pair(who, F0_in, F1_in);
    const Var F0 = hide_padded_rows(who, F0_in, mask0), F1 = hide_padded_rows(who, F1_in, mask1);
    // F_0[i] − F_1[j] for every pair                       B×s_0×s_1×d
    const Var diff = sub(unsqueeze(F0, 2), unsqueeze(F1, 1));
    // ‖F_0[i] − F_1[j]‖₂                                    B×s_0×s_1
    const Var distance = sqrt(add(sum(square(diff), -1), real(1e-12)));
    // A_ij = 1 / (1 + ‖·‖), zero where either unit is padding
    const Var A = real(1) / (distance + real(1));
    return masked(A, pair_keep(who, mask0, mask1, F0.size(0), F0.size(1), F1.size(1)));
}

AbcnnOneAttention::AbcnnOneAttention(int64_t max_length, int64_t dim, Generator& gen) {
    W_0 = register_parameter("W_0", init::xavier_uniform(Shape{max_length, dim}, gen));
    W_1 = register_parameter("W_1", init::xavier_uniform(Shape{max_length, dim}, gen));
}

AbcnnOneAttention::Output AbcnnOneAttention::forward(const Var& F0_in, const Var& F1_in, const Tensor& mask0,
                                                     const Tensor& mask1) {
    check_sentence_pair(id(), F0_in, F1_in);
    if (F0_in.size(1) != W_0.size(0) || F1_in.size(1) != W_0.size(0) || F0_in.size(2) != W_0.size(1))
        throw std::invalid_argument(id() + ": sentences " + F0_in.shape().str() + " and " + F1_in.shape().str() +
                                    " need the fixed shape B×" + W_0.shape().str() + " (pad to the maximum length)");
    const Var F0 = hide_padded_rows(id(), F0_in, mask0), F1 = hide_padded_rows(id(), F1_in, mask1);
    Output out;
    out.weights = abcnn_match_scores(F0, F1, mask0, mask1);  // A   B×s×s
    out.features0 = matmul(out.weights, W_0);                // F_{0,a} = A W_0    B×s×d
    out.features1 = matmul(out.weights, W_1, true);          // F_{1,a} = Aᵀ W_1   B×s×d
    // [F_k; F_{k,a}] with padding rows zero, as the paper's zero-padded
    // sentences: a padding token must not reach a real wide-conv output   B×2×s×d
    out.channels0 = stack({keep_rows(F0, mask0), out.features0}, 1);
    out.channels1 = stack({keep_rows(F1, mask1), out.features1}, 1);
    return out;
}

Taxonomy AbcnnOneAttention::taxonomy() const {
    Taxonomy t;
    t.multiplicity = "co-attention";
    t.scoring = "similarity_score";  // 1 / (1 + Euclidean distance)
    t.alignment = "elementwise";     // the match scores are used as they are, not softmaxed
    return t;
}

Var attention_weighted_pool(const Var& conv, const Var& unit_weights, int64_t width) {
    check_rank("abcnn2_attention", "conv outputs", conv, 3);
    const int64_t s = conv.size(1) - width + 1;
    if (width < 1 || s < 1 || unit_weights.shape() != Shape{conv.size(0), conv.size(1)})
        throw std::invalid_argument("abcnn2_attention: conv outputs " + conv.shape().str() + ", weights " +
                                    unit_weights.shape().str() + " and width " + std::to_string(width) +
                                    " do not fit (outputs B×(s+w−1)×d′, weights B×(s+w−1))");
    // a_r F^c[r]                                                B×(s+w−1)×d′
    const Var weighted = mul(unsqueeze(unit_weights, 2), conv);
    // F^p[j] = Σ_{r=j}^{j+w−1} a_r F^c[r]                       B×s×d′
    Var pooled = narrow(weighted, 1, 0, s);
    for (int64_t o = 1; o < width; ++o) pooled = add(pooled, narrow(weighted, 1, o, s));
    return pooled;
}

Var window_average_pool(const Var& conv, int64_t width) {
    const Tensor uniform = Tensor::full(Shape{conv.size(0), conv.size(1)}, real(1) / static_cast<real>(width));
    return attention_weighted_pool(conv, Var(uniform), width);
}

AbcnnPooled abcnn2_attention(const Var& conv0_in, const Var& conv1_in, int64_t width, const Tensor& mask0,
                             const Tensor& mask1) {
    check_sentence_pair("abcnn2_attention", conv0_in, conv1_in);
    // padded units zeroed (by selection) before the match scores and the pooling sums read them
    const Var conv0 = hide_padded_rows("abcnn2_attention", conv0_in, mask0);
    const Var conv1 = hide_padded_rows("abcnn2_attention", conv1_in, mask1);
    AbcnnPooled out;
    out.weights = abcnn_match_scores(conv0, conv1, mask0, mask1);  // A   B×(s_0+w−1)×(s_1+w−1)
    out.unit0 = sum(out.weights, 2);                               // a_{0,j} = Σ_r A_jr
    out.unit1 = sum(out.weights, 1);                               // a_{1,j} = Σ_r A_rj
    out.pooled0 = attention_weighted_pool(conv0, out.unit0, width);
    out.pooled1 = attention_weighted_pool(conv1, out.unit1, width);
    return out;
}

Var wide_convolution(Conv2d& conv, const Var& channels) {
    check_rank("abcnn wide convolution", "channels", channels, 4);
    // w×d filters over the zero-padded s×d image                B×d′×(s+w−1)×1
    const Var maps = tanh(conv.forward(channels));
    return transpose(squeeze(maps, 3), 1, 2);                     // B×(s+w−1)×d′
}

Tensor wide_conv_mask(const Tensor& token_mask, int64_t width) {
    if (!token_mask.defined()) return {};
    const int64_t B = token_mask.size(0), s = token_mask.size(1);
    Tensor keep = Tensor::zeros(Shape{B, s + width - 1});
    for (int64_t b = 0; b < B; ++b) {
        int64_t length = 0;
        for (int64_t i = 0; i < s; ++i) length += token_mask.at({b, i}) != 0 ? 1 : 0;
        for (int64_t i = 0; i < (length > 0 ? length + width - 1 : 0); ++i) keep.at({b, i}) = 1;
    }
    return keep;
}

AbcnnLayer::AbcnnLayer(Kind kind, int64_t max_length, int64_t dim, int64_t out_dim, int64_t width, Generator& gen)
    : conv(kind == Kind::two ? 1 : 2, out_dim, Size2(static_cast<int>(width), static_cast<int>(dim)), gen, 1,
           Size2(static_cast<int>(width - 1), 0)),
      kind_(kind),
      width_(width) {
    if (kind != Kind::two) {
        input_attention = std::make_unique<AbcnnOneAttention>(max_length, dim, gen);
        register_module("input_attention", *input_attention);
    }
    register_module("conv", conv);
}

AbcnnLayer::Output AbcnnLayer::forward(const Var& F0_in, const Var& F1_in, const Tensor& mask0, const Tensor& mask1) {
    check_sentence_pair(id(), F0_in, F1_in);
    // padded tokens zeroed (by selection) before the input attention and the convolution read them
    const Var F0 = hide_padded_rows(id(), F0_in, mask0), F1 = hide_padded_rows(id(), F1_in, mask1);
    Output out;
    // one channel, padding rows zero: B×1×s×d
    Var x0 = unsqueeze(keep_rows(F0, mask0), 1), x1 = unsqueeze(keep_rows(F1, mask1), 1);
    if (input_attention) {
        const auto att = input_attention->forward(F0, F1, mask0, mask1);
        x0 = att.channels0, x1 = att.channels1;  // two channels: [F_k; F_{k,a}]
        out.input_attention = att.weights;
    }
    // wide convolution + tanh, padded outputs zeroed                   B×(s+w−1)×d′
    const Tensor conv_mask0 = wide_conv_mask(mask0, width_), conv_mask1 = wide_conv_mask(mask1, width_);
    const Var c0 = keep_rows(wide_convolution(conv, x0), conv_mask0);
    const Var c1 = keep_rows(wide_convolution(conv, x1), conv_mask1);
    if (kind_ == Kind::one) {
        out.out0 = window_average_pool(c0, width_);
        out.out1 = window_average_pool(c1, width_);
    } else {
        const AbcnnPooled pooled = abcnn2_attention(c0, c1, width_, conv_mask0, conv_mask1);
        out.out0 = pooled.pooled0, out.out1 = pooled.pooled1;
        out.pooling_attention = pooled.weights;
    }
    out.out0 = keep_rows(out.out0, mask0);  // back to s rows, padding zero   B×s×d′
    out.out1 = keep_rows(out.out1, mask1);
    return out;
}

std::string AbcnnLayer::id() const {
    switch (kind_) {
        case Kind::one: return "abcnn1_attention";
        case Kind::two: return "abcnn2_attention";
        case Kind::three: break;
    }
    return "abcnn3_attention";
}

Taxonomy AbcnnLayer::taxonomy() const {
    Taxonomy t;
    t.multiplicity = "co-attention";
    t.levels = kind_ == Kind::three ? "multi" : "single";  // attention on the input and on the output
    t.scoring = "similarity_score";
    t.alignment = "elementwise";
    return t;
}

// ---- 70. decomposable_attention ------------------------------------------------------------------------

DecomposableAttention::DecomposableAttention(int64_t dim, int64_t hidden, int64_t classes, Generator& gen, bool intra)
    : F1(intra ? 2 * dim : dim, hidden, gen),
      F2(hidden, hidden, gen),
      G1(2 * (intra ? 2 * dim : dim), hidden, gen),
      G2(hidden, hidden, gen),
      H1(2 * hidden, hidden, gen),
      H2(hidden, hidden, gen),
      H3(hidden, classes, gen),
      intra_(intra) {
    register_module("F1", F1);
    register_module("F2", F2);
    register_module("G1", G1);
    register_module("G2", G2);
    register_module("H1", H1);
    register_module("H2", H2);
    register_module("H3", H3);
    if (intra) {
        Fin1 = std::make_unique<Linear>(dim, hidden, gen);
        Fin2 = std::make_unique<Linear>(hidden, hidden, gen);
        register_module("Fin1", *Fin1);
        register_module("Fin2", *Fin2);
        distance_bias = register_parameter("distance_bias", Tensor::zeros(Shape{kDistanceBuckets}));
    }
}

int64_t DecomposableAttention::distance_bucket(int64_t offset) {
    // offsets −10..10 → buckets 0..20; every distance |i − j| > 10 → the shared bucket 21
    return offset < -kMaxDistance || offset > kMaxDistance ? 2 * kMaxDistance + 1 : offset + kMaxDistance;
}

Var DecomposableAttention::intra_attend(const Var& a, const Tensor& mask) {
    if (!intra_) return a;
    const int64_t n = a.size(1);
    // F_in(a_i)                                                   B×ℓ×h
    const Var f = relu(Fin2->forward(relu(Fin1->forward(a))));
    // d_{i−j}, looked up by bucket                                  ℓ×ℓ
    Tensor bucket = Tensor::empty(Shape{n, n});
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) bucket.at({i, j}) = real(distance_bucket(i - j));
    const Var bias = reshape(embedding(reshape(distance_bias, {kDistanceBuckets, 1}), bucket), {n, n});
    // a′_i = Σ_j softmax_j(F_in(a_i)ᵀ F_in(a_j) + d_{i−j}) a_j      B×ℓ×d
    const Var weights = masked_softmax(add(matmul(f, f, false, true), bias), scores_keep_mask(id(), mask, a.size(0), n));
    return concat({a, attend(weights, a)}, -1);  // ā_i = [a_i; a′_i]
}

DecomposableAttention::Output DecomposableAttention::forward(const Var& a_in, const Var& b_in, const Tensor& mask_a,
                                                             const Tensor& mask_b) {
    check_sentence_pair(id(), a_in, b_in);
    const int64_t B = a_in.size(0), la = a_in.size(1), lb = b_in.size(1);
    const Tensor keep_a = scores_keep_mask(id(), mask_a, B, la);  // B×1×ℓ_a
    const Tensor keep_b = scores_keep_mask(id(), mask_b, B, lb);  // B×1×ℓ_b
    // padded tokens zeroed (by selection) before F, G and the sums read them
    const Var a = hide_unseen_keys(a_in, keep_a), b = hide_unseen_keys(b_in, keep_b);
    // a pair (i, j) counts only when both tokens are real: a padding token
    // attends to nothing and is attended by nothing        B×ℓ_a×ℓ_b
    const Tensor keep_ab = pair_keep(id(), mask_a, mask_b, B, la, lb);
    const Var abar = intra_attend(a, mask_a), bbar = intra_attend(b, mask_b);
    auto F = [&](const Var& x) { return relu(F2.forward(relu(F1.forward(x)))); };
    auto G = [&](const Var& x) { return relu(G2.forward(relu(G1.forward(x)))); };

    // attend: e_ij = F(ā_i)ᵀ F(b̄_j), F once per token               B×ℓ_a×ℓ_b
    const Var e = matmul(F(abar), F(bbar), false, true);
    Output out;
    const Tensor keep_ba = keep_ab.defined() ? transpose(keep_ab, 1, 2) : Tensor();
    out.weights_a = masked_softmax(e, keep_ab);                    // softmax_j(e_ij)
    out.weights_b = masked_softmax(transpose(e, 1, 2), keep_ba);   // softmax_i(e_ij), B×ℓ_b×ℓ_a
    const Var beta = attend(out.weights_a, bbar);                  // β_i   B×ℓ_a×d̄
    const Var alpha = attend(out.weights_b, abar);                 // α_j   B×ℓ_b×d̄
    // compare: v_{1,i} = G([ā_i; β_i]),  v_{2,j} = G([b̄_j; α_j])
    const Var v1 = G(concat({abar, beta}, -1)), v2 = G(concat({bbar, alpha}, -1));
    // aggregate over the real tokens: v_1 = Σ_i v_{1,i}, v_2 = Σ_j v_{2,j}     B×h
    auto total = [](const Var& v, const Tensor& keep) {
        return keep.defined() ? reshape(matmul(Var(keep), v), {v.size(0), v.size(2)}) : sum(v, 1);
    };
    // ŷ = H([v_1; v_2]): two ReLU layers, then the linear output layer   B×classes
    const Var v = concat({total(v1, keep_a), total(v2, keep_b)}, 1);
    out.logits = H3.forward(relu(H2.forward(relu(H1.forward(v)))));
    return out;
}

Taxonomy DecomposableAttention::taxonomy() const {
    Taxonomy t;
    t.multiplicity = "co-attention";
    t.scoring = "dot_score";  // on F-transformed tokens
    return t;
}

// ---- 71. compositional_de_attention --------------------------------------------------------------------

namespace {

// M = tanh(α E_A E_Bᵀ) ⊙ σ(−β ‖N_A[i] − N_B[j]‖₁), then A′ = M B, B′ = Mᵀ A
CodaOutput coda(const std::string& who, const Var& EA, const Var& EB, const Var& NA, const Var& NB, const Var& A,
                const Var& B, real alpha, real beta, const Tensor& mask_a, const Tensor& mask_b) {
    // E_ij = α F_E(a_i)ᵀ F_E(b_j)                               B×ℓ_a×ℓ_b
    const Var E = mul(matmul(EA, EB, false, true), alpha);
    // N_ij = −β ‖F_N(a_i) − F_N(b_j)‖₁                          B×ℓ_a×ℓ_b
    const Var N = mul(sum(abs(sub(unsqueeze(NA, 2), unsqueeze(NB, 1))), -1), -beta);
    // M = tanh(E) ⊙ σ(N), zero where a token is padding
    const Var M = masked(mul(tanh(E), sigmoid(N)), pair_keep(who, mask_a, mask_b, A.size(0), A.size(1), B.size(1)));
    return {matmul(M, B), matmul(M, A, true), M};  // A′ = M B, B′ = Mᵀ A
}

}  // namespace

CodaOutput compositional_de_attention(const Var& A_in, const Var& B_in, real alpha, real beta, const Tensor& mask_a,
                                      const Tensor& mask_b) {
    const std::string who = "compositional_de_attention";
    check_sentence_pair(who, A_in, B_in);
    const Var A = hide_padded_rows(who, A_in, mask_a), B = hide_padded_rows(who, B_in, mask_b);
    return coda(who, A, B, A, B, A, B, alpha, beta, mask_a, mask_b);
}

CompositionalDeAttention::CompositionalDeAttention(int64_t dim, int64_t projection_dim, Generator& gen, real alpha,
                                                   real beta)
    : F_E(dim, projection_dim, gen), F_N(dim, projection_dim, gen), alpha_(alpha), beta_(beta) {
    register_module("F_E", F_E);
    register_module("F_N", F_N);
}

CodaOutput CompositionalDeAttention::forward(const Var& A_in, const Var& B_in, const Tensor& mask_a,
                                             const Tensor& mask_b) {
    check_sentence_pair(id(), A_in, B_in);
    // padded tokens zeroed (by selection) before F_E and F_N read them
    const Var A = hide_padded_rows(id(), A_in, mask_a), B = hide_padded_rows(id(), B_in, mask_b);
    return coda(id(), F_E.forward(A), F_E.forward(B), F_N.forward(A), F_N.forward(B), A, B, alpha_, beta_, mask_a,
                mask_b);
}

Taxonomy CompositionalDeAttention::taxonomy() const {
    Taxonomy t;
    t.multiplicity = "co-attention";
    t.scoring = "dot_score";
    t.alignment = "elementwise";  // tanh ⊙ sigmoid, no softmax
    return t;
}

// ---- 72. cosnet_co_attention ---------------------------------------------------------------------------

CosnetCoAttention::CosnetCoAttention(int64_t channels, Variant variant, Generator& gen) : variant_(variant) {
    const int64_t C = channels;
    if (variant == Variant::vanilla) W = register_parameter("W", init::xavier_uniform(Shape{C, C}, gen));
    if (variant == Variant::symmetric) P = register_parameter("P", init::xavier_uniform(Shape{C, C}, gen));
    if (variant != Variant::vanilla) {
        Tensor d = Tensor::empty(Shape{C});
        D = register_parameter("D", init::uniform_(d, real(0.5), real(1.5), gen));
    }
    w_f = register_parameter("w_f", init::uniform_fan_in(Shape{C}, C, gen));
    b_f = register_parameter("b_f", init::uniform_fan_in(Shape{1}, C, gen));
}

Var CosnetCoAttention::weight() const {
    switch (variant_) {
        case Variant::vanilla: return W;
        case Variant::symmetric: return matmul(P, mul(unsqueeze(D, 1), P), true);  // Pᵀ D P
        case Variant::channel: break;
    }
    const int64_t C = D.size(0);
    Tensor eye = Tensor::zeros(Shape{C, C});
    for (int64_t c = 0; c < C; ++c) eye.at({c, c}) = 1;
    return mul(Var(eye), D);  // diag(D)
}

CosnetCoAttention::Output CosnetCoAttention::forward(const Var& Va, const Var& Vb) {
    check_rank(id(), "frame a", Va, 4);
    check_rank(id(), "frame b", Vb, 4);
    const int64_t C = w_f.size(0);
    if (Va.shape() != Vb.shape() || Va.size(1) != C)
        throw std::invalid_argument(id() + ": frames " + Va.shape().str() + " and " + Vb.shape().str() +
                                    " need the same shape B×" + std::to_string(C) + "×H×W");
    const int64_t B = Va.size(0), H = Va.size(2), Wd = Va.size(3), N = H * Wd;
    auto flatten = [&](const Var& V) { return transpose(reshape(V, {B, C, N}), 1, 2); };  // B×N×C
    auto unflatten = [&](const Var& Z) { return reshape(transpose(Z, 1, 2), {B, C, H, Wd}); };
    const Var a = flatten(Va), b = flatten(Vb);

    Output out;
    // S = V_b W V_aᵀ                                               B×N_b×N_a
    out.affinity = matmul(matmul(b, weight()), a, false, true);
    // Z_a = softmax_row(Sᵀ) V_b,  Z_b = softmax_row(S) V_a          B×N×C
    out.weights_a = softmax(transpose(out.affinity, 1, 2), -1);
    out.weights_b = softmax(out.affinity, -1);
    const Var Za = matmul(out.weights_a, b), Zb = matmul(out.weights_b, a);
    // g = σ(Z w_f + b_f), one gate per position                      B×N×1
    const Var wf = reshape(w_f, {C, 1});
    const Var ga = sigmoid(add(matmul(Za, wf), b_f)), gb = sigmoid(add(matmul(Zb, wf), b_f));
    out.gate_a = reshape(ga, {B, N}), out.gate_b = reshape(gb, {B, N});
    // [g ⊙ Z; V] along channels                                      B×2C×H×W
    out.out_a = concat({unflatten(mul(ga, Za)), Va}, 1);
    out.out_b = concat({unflatten(mul(gb, Zb)), Vb}, 1);
    return out;
}

Taxonomy CosnetCoAttention::taxonomy() const {
    Taxonomy t;
    t.multiplicity = "co-attention";
    t.scoring = "general_score";  // xᵀ W y in every variant
    return t;
}

// ---- 73. can_cross_attention ---------------------------------------------------------------------------

CanCrossAttention::CanCrossAttention(int64_t positions, int64_t reduction, Generator& gen, real temperature)
    : temperature_(temperature) {
    const int64_t m = positions, hidden = std::max<int64_t>(1, positions / std::max<int64_t>(1, reduction));
    W_1 = register_parameter("W_1", init::xavier_uniform(Shape{hidden, m}, gen));
    W_2 = register_parameter("W_2", init::xavier_uniform(Shape{m, hidden}, gen));
}

CanCrossAttention::Output CanCrossAttention::forward(const Var& P, const Var& Q) {
    check_rank(id(), "class feature", P, 4);
    check_rank(id(), "query feature", Q, 4);
    const int64_t B = P.size(0), c = P.size(1), m = P.size(2) * P.size(3);
    if (P.shape() != Q.shape() || m != W_1.size(1))
        throw std::invalid_argument(id() + ": features " + P.shape().str() + " and " + Q.shape().str() +
                                    " need the same shape with h·w = " + std::to_string(W_1.size(1)));
    // rows = positions, each L2-normalised                            B×m×c
    auto unit_rows = [&](const Var& X) {
        const Var rows = transpose(reshape(X, {B, c, m}), 1, 2);
        return div(rows, sqrt(add(sum(square(rows), -1, true), real(1e-12))));
    };
    // A_i = softmax_i(w ᵀ R_{i,:} / τ) with w = W_2 ReLU(W_1 GAP(R))     B×m
    auto attention = [&](const Var& R) {
        const Var gap = mean(R, 1);                                            // (1/m) Σ_i R_{i,:}  B×m
        const Var w = matmul(relu(matmul(gap, W_1, false, true)), W_2, false, true);  // B×m
        const Var logits = reshape(matmul(R, unsqueeze(w, 2)), {B, m});
        return softmax(mul(logits, real(1) / temperature_), -1);
    };
    Output out;
    out.correlation = matmul(unit_rows(P), unit_rows(Q), false, true);  // R^p = P̂ Q̂ᵀ   B×m×m
    out.weights_p = attention(out.correlation);
    out.weights_q = attention(transpose(out.correlation, 1, 2));      // R^q = (R^p)ᵀ
    // P̄ = P ⊙ (1 + A^p) position by position                       B×c×h×w
    auto reweight = [&](const Var& X, const Var& A) {
        return mul(X, add(reshape(A, {B, 1, X.size(2), X.size(3)}), real(1)));
    };
    out.P_bar = reweight(P, out.weights_p);
    out.Q_bar = reweight(Q, out.weights_q);
    return out;
}

Taxonomy CanCrossAttention::taxonomy() const {
    Taxonomy t;
    t.multiplicity = "co-attention";
    t.scoring = "similarity_score";  // cosine correlations, fused by the meta-learned kernel
    return t;
}

}  // namespace attn
