// Co-attention and rotatory attention (entries 3–9): two or three inputs, each attended by the others.
// The formulas, the papers and the shape legend are in attention/co_attention.hpp.
#include "attention/co_attention.hpp"

#include <limits>
#include <tuple>
#include <utility>
#include <stdexcept>

#include "attention/alignments.hpp"
#include "attention/query_types.hpp"
#include "nn/init.hpp"
#include "tensor/ops.hpp"

namespace attn {

namespace {


// F B×n×d with the given width (0: any width).
void check_features(const std::string& who, const char* what, const Var& f, int64_t width) {
    if (width > 0)
        check_width(who, what, f, width, 3);
    else
        check_rank(who, what, f, 3);
}

void check_same_batch(const std::string& who, const char* what1, const Var& a, const char* what2, const Var& b) {
    if (a.size(0) != b.size(0))
        throw std::invalid_argument(who + ": " + what1 + " " + a.shape().str() + " and " + what2 + " " +
                                    b.shape().str() + " need the same batch size");
}

// A B×n key mask, or undefined.
void check_key_mask(const std::string& who, const char* what, const Tensor& mask, const Var& f) {
    if (mask.defined() && (mask.rank() != 2 || mask.size(0) != f.size(0) || mask.size(1) != f.size(1)))
        throw std::invalid_argument(who + ": " + what + " " + mask.shape().str() + " does not fit features " +
                                    f.shape().str() + ": it needs B×n");
}

// One pooling step over the rows of F: a = softmax(e) with padding left out,
// c = Σ_l a_l f_l. e B×1×n, F B×n×d, mask B×n → c B×d, a B×n.
std::pair<Var, Var> pool(const std::string& who, const Var& e, const Var& features, const Tensor& mask) {
    const Var a = masked_softmax(e, scores_keep_mask(who, mask, features.size(0), features.size(1)));  // B×1×n
    return {squeeze(attend(a, features), 1), squeeze(a, 1)};
}

// The keep mask of an n1×n2 matrix: mask1_i · mask2_j  (B×n1×n2; undefined if neither mask is).
Tensor outer_keep(const Tensor& mask1, const Tensor& mask2, int64_t B, int64_t n1, int64_t n2) {
    if (!mask1.defined() && !mask2.defined()) return {};
    const Tensor m1 = mask1.defined() ? mask1.reshape(Shape{B, n1, 1}) : Tensor::ones(Shape{B, n1, 1});
    const Tensor m2 = mask2.defined() ? mask2.reshape(Shape{B, 1, n2}) : Tensor::ones(Shape{B, 1, n2});
    return mul(m1, m2);
}

}  // namespace

// ---- 3. alternating_co_attention ------------------------------------------------------------

AlternatingCoAttention::AlternatingCoAttention(int64_t dim1, int64_t dim2, int64_t attention_dim, Generator& gen)
    : score1(dim2, dim1, attention_dim, gen), score2(dim1, dim2, attention_dim, gen) {
    register_module("score1", score1);
    register_module("score2", score2);
}

namespace {

// Lu et al.'s operator A(X; g): e_l = wᵀ tanh(W_q g + W x_l + b), the additive
// score with query g, then x̂ = Σ_l softmax(e)_l x_l.
// guide g B×1×d_g, X B×n×d → x̂ B×d, a B×n.
std::pair<Var, Var> guided_pool(const std::string& who, AdditiveScore& score, const Var& guide, const Var& X,
                                const Tensor& mask) {
    return pool(who, score.score(guide, X), X, mask);  // e B×1×n
}

}  // namespace

AlternatingCoAttentionOutput AlternatingCoAttention::forward(const Var& features1_in, const Var& features2_in,
                                                             const Tensor& mask1, const Tensor& mask2) {
    check_features(id(), "features1", features1_in, score1.W_2.size(1));
    check_features(id(), "features2", features2_in, score2.W_2.size(1));
    check_same_batch(id(), "features1", features1_in, "features2", features2_in);
    check_key_mask(id(), "mask1", mask1, features1_in);
    check_key_mask(id(), "mask2", mask2, features2_in);
    const Var features1 = hide_padded_rows(id(), features1_in, mask1);
    const Var features2 = hide_padded_rows(id(), features2_in, mask2);
    AlternatingCoAttentionOutput out;
    // 1. c^(0) = A_1(F1; 0): a zero guide, so W_q g = 0   B×d1
    const Var no_guide(Tensor::zeros(Shape{features1.size(0), 1, score1.W_1.size(1)}));
    std::tie(out.context0, out.weights0) = guided_pool(id(), score1, no_guide, features1, mask1);
    // 2. c^(2) = A_2(F2; c^(0))                         B×d2
    std::tie(out.context2, out.weights2) = guided_pool(id(), score2, unsqueeze(out.context0, 1), features2, mask2);
    // 3. c^(1) = A_1(F1; c^(2))                         B×d1
    std::tie(out.context1, out.weights1) = guided_pool(id(), score1, unsqueeze(out.context2, 1), features1, mask1);
    out.output = concat({out.context1, out.context2}, -1);  // B×(d1+d2)
    return out;
}

Taxonomy AlternatingCoAttention::taxonomy() const {
    Taxonomy t;
    t.multiplicity = "co-attention";
    t.scoring = "additive_score";
    t.query = "specialized";
    return t;
}

// ---- 4. interactive_co_attention --------------------------------------------------------------

InteractiveCoAttention::InteractiveCoAttention(int64_t dim1, int64_t dim2, Generator& gen) {
    // One statement each: the generator's draws happen in a fixed order.
    score_12_ = std::make_unique<ActivatedGeneralScore>(dim2, dim1, gen);
    score_21_ = std::make_unique<ActivatedGeneralScore>(dim1, dim2, gen);
    register_module("score_12", *score_12_);
    register_module("score_21", *score_21_);
}

InteractiveCoAttention::InteractiveCoAttention(std::unique_ptr<ScoreFunction> score_12,
                                               std::unique_ptr<ScoreFunction> score_21)
    : score_12_(std::move(score_12)), score_21_(std::move(score_21)) {
    register_module("score_12", *score_12_);
    register_module("score_21", *score_21_);
}

CoAttentionOutput InteractiveCoAttention::forward(const Var& features1_in, const Var& features2_in, const Tensor& mask1,
                                                  const Tensor& mask2) {
    check_features(id(), "features1", features1_in, 0);
    check_features(id(), "features2", features2_in, 0);
    check_same_batch(id(), "features1", features1_in, "features2", features2_in);
    check_key_mask(id(), "mask1", mask1, features1_in);
    check_key_mask(id(), "mask2", mask2, features2_in);
    const Var features1 = hide_padded_rows(id(), features1_in, mask1);
    const Var features2 = hide_padded_rows(id(), features2_in, mask2);
    // k̄^(i): the mean of the unmasked rows              B×1×d_i
    const Var mean1 = masked_mean(features1, mask1);
    const Var mean2 = masked_mean(features2, mask2);
    CoAttentionOutput out;
    // e^(1)_l = score_12(k̄^(2), k^(1)_l); c^(1) = Σ_l a^(1)_l k^(1)_l     B×d1
    std::tie(out.context1, out.weights1) = pool(id(), score_12_->score(mean2, features1), features1, mask1);
    // e^(2)_l = score_21(k̄^(1), k^(2)_l); c^(2) = Σ_l a^(2)_l k^(2)_l     B×d2
    std::tie(out.context2, out.weights2) = pool(id(), score_21_->score(mean1, features2), features2, mask2);
    out.output = concat({out.context1, out.context2}, -1);
    return out;
}

Taxonomy InteractiveCoAttention::taxonomy() const {
    Taxonomy t;
    t.multiplicity = "co-attention";
    t.scoring = score_12_->id();
    t.query = "specialized";
    return t;
}

// ---- affinities --------------------------------------------------------------------------------

namespace {

void check_affinity_inputs(const std::string& who, const Var& keys1, const Var& keys2, int64_t d1, int64_t d2) {
    check_features(who, "keys1", keys1, 0);
    check_features(who, "keys2", keys2, 0);
    if (keys1.size(0) != keys2.size(0) || keys1.size(2) != d1 || keys2.size(2) != d2)
        throw std::invalid_argument(who + ": keys1 " + keys1.shape().str() + " and keys2 " + keys2.shape().str() +
                                    " need the same batch size and widths " + std::to_string(d1) + " and " +
                                    std::to_string(d2));
}

}  // namespace

BilinearAffinity::BilinearAffinity(int64_t dim1, int64_t dim2, Generator& gen) {
    W_A = register_parameter("W_A", init::xavier_uniform(Shape{dim1, dim2}, gen));
}

Var BilinearAffinity::affinity(const Var& keys1, const Var& keys2) {
    check_affinity_inputs(id(), keys1, keys2, W_A.size(0), W_A.size(1));
    // A = K1 W_A K2ᵀ                                    B×n1×n2
    return matmul(matmul(keys1, W_A), keys2, false, true);
}

// ---- 6. trilinear_affinity -----------------------------------------------------------------

TrilinearAffinity::TrilinearAffinity(int64_t dim, Generator& gen) {
    w_A = register_parameter("w_A", init::uniform_fan_in(Shape{3 * dim}, 3 * dim, gen));
}

Var TrilinearAffinity::affinity(const Var& keys1, const Var& keys2) {
    const int64_t d = w_A.size(0) / 3;
    check_affinity_inputs(id(), keys1, keys2, d, d);
    // w_A = [u; v; z]
    const Var u = reshape(narrow(w_A, 0, 0, d), {d, 1});
    const Var v = reshape(narrow(w_A, 0, d, d), {1, d});
    const Var z = narrow(w_A, 0, 2 * d, d);
    const Var row_term = matmul(keys1, u);                 // K1 u               B×n1×1
    const Var column_term = matmul(v, keys2, false, true);  // (K2 v)ᵀ            B×1×n2
    const Var product = matmul(mul(keys1, z), keys2, false, true);  // K1 diag(z) K2ᵀ   B×n1×n2
    return add(add(product, row_term), column_term);      // A                  B×n1×n2
}

Var TrilinearAffinity::concatenated(const Var& keys1, const Var& keys2) {
    const int64_t d = w_A.size(0) / 3;
    check_affinity_inputs(id(), keys1, keys2, d, d);
    const Shape pairs{keys1.size(0), keys1.size(1), keys2.size(1), d};
    const Var k1 = expand(unsqueeze(keys1, 2), pairs);  // k1_i at [b, i, j]   B×n1×n2×d
    const Var k2 = expand(unsqueeze(keys2, 1), pairs);  // k2_j at [b, i, j]   B×n1×n2×d
    // [k1_i; k2_j; k1_i ∘ k2_j]                          B×n1×n2×3d
    const Var features = concat({k1, k2, mul(k1, k2)}, -1);
    // A_ij = w_Aᵀ [⋯]                                    B×n1×n2
    return squeeze(matmul(features, reshape(w_A, {3 * d, 1})), -1);
}

// ---- 5. parallel_co_attention ----------------------------------------------------------------

ParallelCoAttention::ParallelCoAttention(int64_t dim1, int64_t dim2, int64_t attention_dim, Generator& gen)
    : ParallelCoAttention(std::make_unique<BilinearAffinity>(dim1, dim2, gen), dim1, dim2, attention_dim, gen) {}

ParallelCoAttention::ParallelCoAttention(std::unique_ptr<AffinityFunction> affinity, int64_t dim1, int64_t dim2,
                                         int64_t attention_dim, Generator& gen)
    : affinity_(std::move(affinity)) {
    register_module("affinity", *affinity_);
    W_1 = register_parameter("W_1", init::xavier_uniform(Shape{attention_dim, dim1}, gen));
    W_2 = register_parameter("W_2", init::xavier_uniform(Shape{attention_dim, dim2}, gen));
    w_1 = register_parameter("w_1", init::uniform_fan_in(Shape{attention_dim}, attention_dim, gen));
    w_2 = register_parameter("w_2", init::uniform_fan_in(Shape{attention_dim}, attention_dim, gen));
}

CoAttentionOutput ParallelCoAttention::forward(const Var& features1_in, const Var& features2_in, const Tensor& mask1,
                                               const Tensor& mask2) {
    check_features(id(), "features1", features1_in, W_1.size(1));
    check_features(id(), "features2", features2_in, W_2.size(1));
    check_same_batch(id(), "features1", features1_in, "features2", features2_in);
    check_key_mask(id(), "mask1", mask1, features1_in);
    check_key_mask(id(), "mask2", mask2, features2_in);
    const Var features1 = hide_padded_rows(id(), features1_in, mask1);
    const Var features2 = hide_padded_rows(id(), features2_in, mask2);
    const int64_t B = features1.size(0), n1 = features1.size(1), n2 = features2.size(1);
    CoAttentionOutput out;
    // A = tanh(affinity(K1, K2)), padded rows and columns set to 0       B×n1×n2
    Var A = tanh(affinity_->affinity(features1, features2));
    const Tensor keep = outer_keep(mask1, mask2, B, n1, n2);
    if (keep.defined()) A = mul(A, Var(keep));
    out.affinity = A;
    const Var P1 = matmul(features1, W_1, false, true);  // K1 W_1ᵀ    B×n1×d_w
    const Var P2 = matmul(features2, W_2, false, true);  // K2 W_2ᵀ    B×n2×d_w
    // H_1 = tanh(K1 W_1ᵀ + A K2 W_2ᵀ)                    B×n1×d_w
    const Var H1 = tanh(add(P1, matmul(A, P2)));
    // H_2 = tanh(K2 W_2ᵀ + Aᵀ K1 W_1ᵀ)                   B×n2×d_w
    const Var H2 = tanh(add(P2, matmul(A, P1, true, false)));
    // e^(i) = H_i w_i                                     B×1×n_i
    std::tie(out.context1, out.weights1) = pool(id(), matmul(as_row(w_1), H1, false, true), features1, mask1);
    std::tie(out.context2, out.weights2) = pool(id(), matmul(as_row(w_2), H2, false, true), features2, mask2);
    out.output = concat({out.context1, out.context2}, -1);
    return out;
}

Taxonomy ParallelCoAttention::taxonomy() const {
    Taxonomy t;
    t.multiplicity = "co-attention";
    t.scoring = "additive_score";
    t.query = "specialized";
    return t;
}

// ---- 7. max_affinity_co_attention --------------------------------------------------------------

CoAttentionOutput max_affinity_co_attention(const Var& affinity, const Var& values1_in, const Var& values2_in,
                                            const Tensor& mask1, const Tensor& mask2) {
    const std::string who = "max_affinity_co_attention";
    check_features(who, "values1", values1_in, 0);
    check_features(who, "values2", values2_in, 0);
    check_rank(who, "affinity", affinity, 3);
    const int64_t B = affinity.size(0), n1 = affinity.size(1), n2 = affinity.size(2);
    if (values1_in.size(0) != B || values1_in.size(1) != n1 || values2_in.size(0) != B || values2_in.size(1) != n2)
        throw std::invalid_argument(who + ": affinity " + affinity.shape().str() + " does not fit values1 " +
                                    values1_in.shape().str() + " and values2 " + values2_in.shape().str() +
                                    ": it needs B×n1×n2");
    check_key_mask(who, "mask1", mask1, values1_in);
    check_key_mask(who, "mask2", mask2, values2_in);
    const Var values1 = hide_padded_rows(who, values1_in, mask1);
    const Var values2 = hide_padded_rows(who, values2_in, mask2);
    CoAttentionOutput out;
    out.affinity = affinity;
    // masked entries of A become −∞, so they never win a max
    Var A = affinity;
    Tensor alive1, alive2;  // rows (columns) whose max is over at least one kept entry
    const Tensor keep = outer_keep(mask1, mask2, B, n1, n2);
    if (keep.defined()) {
        A = masked_fill(A, eq(keep, Tensor::scalar(0)), -std::numeric_limits<real>::infinity());
        alive1 = max(keep, 2);  // B×n1
        alive2 = max(keep, 1);  // B×n2
    }
    // e^(1)_i = max_j A_ij,  e^(2)_j = max_i A_ij      B×n1, B×n2 (dead rows: 0, left out below)
    Var e1 = max(A, 2), e2 = max(A, 1);
    if (keep.defined()) {
        e1 = masked_fill(e1, eq(alive1, Tensor::scalar(0)), 0);
        e2 = masked_fill(e2, eq(alive2, Tensor::scalar(0)), 0);
    }
    // a^(i) = softmax(e^(i)),  c^(i) = Σ_l a^(i)_l v^(i)_l
    std::tie(out.context1, out.weights1) = pool(who, unsqueeze(e1, 1), values1, alive1);
    std::tie(out.context2, out.weights2) = pool(who, unsqueeze(e2, 1), values2, alive2);
    out.output = concat({out.context1, out.context2}, -1);
    return out;
}

// ---- 8. multi_grained_co_attention -------------------------------------------------------------

MultiGrainedCoAttention::MultiGrainedCoAttention(int64_t dim, Generator& gen) {
    // One statement each: the generator's draws happen in a fixed order.
    std::unique_ptr<ScoreFunction> W_ca = std::make_unique<GeneralScore>(dim, dim, gen);
    std::unique_ptr<ScoreFunction> W_cc = std::make_unique<GeneralScore>(dim, dim, gen);
    coarse_ = std::make_unique<InteractiveCoAttention>(std::move(W_ca), std::move(W_cc));
    fine_ = std::make_unique<TrilinearAffinity>(dim, gen);
    register_module("coarse", *coarse_);
    register_module("fine", *fine_);
}

MultiGrainedCoAttentionOutput MultiGrainedCoAttention::forward(const Var& context_in, const Var& aspect_in,
                                                               const Tensor& context_mask,
                                                               const Tensor& aspect_mask) {
    check_features(id(), "context", context_in, 0);
    check_features(id(), "aspect", aspect_in, context_in.size(2));
    check_same_batch(id(), "context", context_in, "aspect", aspect_in);
    check_key_mask(id(), "context mask", context_mask, context_in);
    check_key_mask(id(), "aspect mask", aspect_mask, aspect_in);
    const Var context = hide_padded_rows(id(), context_in, context_mask);
    const Var aspect = hide_padded_rows(id(), aspect_in, aspect_mask);
    MultiGrainedCoAttentionOutput out;
    // coarse: C-A2C and C-C2A are entry 4 with bilinear scores      B×d each
    const CoAttentionOutput coarse = coarse_->forward(context, aspect, context_mask, aspect_mask);
    out.coarse_context = coarse.weights1;
    out.coarse_aspect = coarse.weights2;
    // fine: U = trilinear(H, T)                                     B×n×n_t
    out.affinity = fine_->affinity(context, aspect);
    // F-A2C: Σ_i softmax_i(max_j U_ij) h_i, entry 7's first context  B×d
    const CoAttentionOutput fine = max_affinity_co_attention(out.affinity, context, aspect, context_mask, aspect_mask);
    out.fine_context = fine.weights1;
    // F-C2A: q_i = Σ_j softmax_j(U_ij) t_j                          B×n×d
    out.fine_aspect = masked_softmax(out.affinity, scores_keep_mask(id(), aspect_mask, aspect.size(0), aspect.size(1)));
    const Var q = matmul(out.fine_aspect, aspect);
    // m_fc = (1/n) Σ_i q_i over the unmasked context words          B×d
    const Var m_fc = squeeze(masked_mean(q, context_mask), 1);
    out.output = concat({coarse.context1, coarse.context2, fine.context1, m_fc}, -1);  // B×4d
    return out;
}

Taxonomy MultiGrainedCoAttention::taxonomy() const {
    Taxonomy t;
    t.multiplicity = "co-attention";
    t.scoring = "general_score";
    t.query = "specialized";
    return t;
}

// ---- 9. rotatory_attention -------------------------------------------------------------------

RotatoryAttention::RotatoryAttention(int64_t left_dim, int64_t target_dim, int64_t right_dim, Generator& gen,
                                     int hops)
    : score_left(target_dim, left_dim, gen),
      score_right(target_dim, right_dim, gen),
      score_target_left(left_dim, target_dim, gen),
      score_target_right(right_dim, target_dim, gen),
      hops_(hops) {
    if (hops < 1) throw std::invalid_argument("rotatory_attention: hops must be >= 1, got " + std::to_string(hops));
    register_module("score_left", score_left);
    register_module("score_right", score_right);
    register_module("score_target_left", score_target_left);
    register_module("score_target_right", score_target_right);
}

RotatoryAttentionOutput RotatoryAttention::forward(const Var& left_in, const Var& target_in, const Var& right_in,
                                                   const Tensor& left_mask, const Tensor& target_mask,
                                                   const Tensor& right_mask) {
    check_features(id(), "left context", left_in, score_left.W.size(0));
    check_features(id(), "target", target_in, score_target_left.W.size(0));
    check_features(id(), "right context", right_in, score_right.W.size(0));
    check_same_batch(id(), "left context", left_in, "target", target_in);
    check_same_batch(id(), "right context", right_in, "target", target_in);
    check_key_mask(id(), "left mask", left_mask, left_in);
    check_key_mask(id(), "target mask", target_mask, target_in);
    check_key_mask(id(), "right mask", right_mask, right_in);
    const Var left = hide_padded_rows(id(), left_in, left_mask);
    const Var target = hide_padded_rows(id(), target_in, target_mask);
    const Var right = hide_padded_rows(id(), right_in, right_mask);
    // Attn(q; F) = Σ_i softmax_i(tanh(f_iᵀ W q + b)) f_i;  q B×1×d_q → B×d, B×n
    auto attn = [&](ActivatedGeneralScore& score, const Var& query, const Var& features, const Tensor& mask) {
        return pool(id(), score.score(query, features), features, mask);
    };
    RotatoryAttentionOutput out;
    // r^t = the mean of the target's rows; the first queries of both contexts   B×1×d_t
    Var query_left = masked_mean(target, target_mask), query_right = query_left;
    for (int hop = 0; hop < hops_; ++hop) {
        // target → contexts: r^l = Attn_l(q_l; F^l), r^r = Attn_r(q_r; F^r)
        std::tie(out.left, out.weights_left) = attn(score_left, query_left, left, left_mask);
        std::tie(out.right, out.weights_right) = attn(score_right, query_right, right, right_mask);
        // contexts → target: r^lt = Attn_tl(r^l; F^t), r^rt = Attn_tr(r^r; F^t)
        std::tie(out.target_left, out.weights_target_left) =
            attn(score_target_left, unsqueeze(out.left, 1), target, target_mask);
        std::tie(out.target_right, out.weights_target_right) =
            attn(score_target_right, unsqueeze(out.right, 1), target, target_mask);
        // the next hop's queries
        query_left = unsqueeze(out.target_left, 1);
        query_right = unsqueeze(out.target_right, 1);
    }
    out.output = concat({out.left, out.right, out.target_left, out.target_right}, -1);
    return out;
}

Taxonomy RotatoryAttention::taxonomy() const {
    Taxonomy t;
    t.multiplicity = "rotatory";
    t.scoring = "activated_general_score";
    t.query = "specialized";
    if (hops_ > 1) t.query_multiplicity = "multi-hop";
    return t;
}

}  // namespace attn
