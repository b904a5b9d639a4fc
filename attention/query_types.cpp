// Query types (entries 31–36): where the query comes from.
// The formulas, the papers and the shape legend are in attention/query_types.hpp.
#include "attention/query_types.hpp"

#include <cmath>
#include <stdexcept>

#include "attention/by_id.hpp"
#include "nn/init.hpp"
#include "tensor/ops.hpp"

namespace attn {

namespace {

// keys B×n×d_k and values B×n×d_v of a self-attentive pooling.
void check_keys_values(const std::string& who, const Var& keys, const Var& values, int64_t key_dim) {
    check_rank(who, "keys", keys, 3);
    check_rank(who, "values", values, 3);
    if (keys.size(0) != values.size(0) || keys.size(1) != values.size(1))
        throw std::invalid_argument(who + ": keys " + keys.shape().str() + " and values " + values.shape().str() +
                                    " need the same batch size and number of positions");
    check_width(who, "keys", keys, key_dim);
}

}  // namespace

// ---- shared pieces -------------------------------------------------------------------------

Tensor scores_keep_mask(const std::string& who, const Tensor& mask, int64_t batch, int64_t n) {
    if (!mask.defined()) return mask;
    const std::string needs = " does not fit " + std::to_string(batch) + " sequences of " + std::to_string(n) +
                              " keys: it needs B×n (a key mask) or (B or 1)×(m or 1)×n";
    if (mask.rank() == 2) {
        if (mask.size(0) != batch || mask.size(1) != n)
            throw std::invalid_argument(who + ": mask " + mask.shape().str() + needs);
        return key_mask(mask);
    }
    if (mask.rank() == 3 && (mask.size(0) == batch || mask.size(0) == 1) && mask.size(2) == n) return mask;
    throw std::invalid_argument(who + ": mask " + mask.shape().str() + needs);
}

Var masked_mean(const Var& values, const Tensor& mask) {
    check_rank("masked_mean", "values", values, 3);
    if (!mask.defined()) return mean(values, 1, /*keepdim=*/true);
    const Tensor keep = scores_keep_mask("masked_mean", mask, values.size(0), values.size(1));  // B×1×n
    // uniform weights over the kept keys: mask_l / max(Σ_j mask_j, 1)   B×1×n
    const Tensor count = maximum(sum(keep, -1, /*keepdim=*/true), Tensor::scalar(1));
    return attend(Var(div(keep, count)), hide_unseen_keys(values, keep));  // B×1×d (padded rows zeroed first)
}

// ---- 31. bahdanau_attention ------------------------------------------------------------------

BahdanauAttention::BahdanauAttention(int64_t state_dim, int64_t encoder_dim, int64_t attention_dim,
                                     Generator& gen)
    : score(state_dim, encoder_dim, attention_dim, gen, Activation::tanh, /*bias=*/false) {
    register_module("score", score);
}

BahdanauAttention::Memory BahdanauAttention::precompute(const Var& encoder_states, const Tensor& mask) {
    check_rank(id(), "encoder states", encoder_states, 3);
    check_width(id(), "encoder states", encoder_states, score.W_2.size(1));
    const Tensor keep = scores_keep_mask(id(), mask, encoder_states.size(0), encoder_states.size(1));
    // Padded states are zeroed before U_a and the weighted sum read them: a NaN
    // there would otherwise give 0·NaN = NaN in c_i and in U_a's gradient.
    const Var states = hide_unseen_keys(encoder_states, keep);
    // U_a h_j for every source position, once per sequence   B×n×d_w
    return {states, score.project_keys(states), keep};
}

Var BahdanauAttention::scores(const Var& queries, const Memory& memory) {
    check_rank(id(), "queries", queries, 3);
    if (queries.size(0) != memory.states.size(0))
        throw std::invalid_argument(id() + ": queries " + queries.shape().str() + " and encoder states " +
                                    memory.states.shape().str() + " need the same batch size");
    // e_ij = v_aᵀ tanh(W_a s_{i−1} + U_a h_j)        B×m×n
    return score.score_projected(queries, memory.projected);
}

AttentionOutput BahdanauAttention::forward(const Var& queries, const Memory& memory) {
    // A query that may attend no key takes no part, whatever it holds (attention/padding.hpp).
    const Var e = scores(hide_fully_masked_queries(queries, memory.keep), memory);  // e_ij   B×m×n
    const Var alpha = masked_softmax(e, memory.keep, is_fast());  // α_ij = softmax_j B×m×n
    return {attend(alpha, memory.states), alpha};                 // c_i = Σ_j α_ij h_j   B×m×d_h
}

AttentionOutput BahdanauAttention::forward(const Var& queries, const Var& encoder_states, const Tensor& mask) {
    return forward(queries, precompute(encoder_states, mask));
}

AttentionOutput BahdanauAttention::step(const Var& previous_state, const Memory& memory) {
    check_rank(id(), "previous decoder state", previous_state, 2);
    const AttentionOutput out = forward(unsqueeze(previous_state, 1), memory);  // one query: B×1×·
    return {squeeze(out.output, 1), squeeze(out.weights, 1)};                  // c_i B×d_h, α_i B×n
}

Taxonomy BahdanauAttention::taxonomy() const {
    Taxonomy t;
    t.scoring = "additive_score";
    return t;
}

// ---- 32. luong_attention ------------------------------------------------------------------------

LuongAttention::LuongAttention(int64_t state_dim, int64_t encoder_dim, const Options& options, Generator& gen)
    : LuongAttention(state_dim, encoder_dim,
                     make_score(options.score,
                                {.query_dim = state_dim,
                                 .key_dim = encoder_dim,
                                 .hidden_dim = options.attention_dim,
                                 .max_length = options.max_length,
                                 .options = options.score_options},
                                gen),
                     make_alignment(options.align,
                                    {.query_dim = state_dim, .hidden_dim = options.attention_dim,
                                     .window = options.window, .options = options.align_options},
                                    gen),
                     gen) {}

LuongAttention::LuongAttention(int64_t state_dim, int64_t encoder_dim, std::unique_ptr<ScoreFunction> score,
                               std::unique_ptr<Alignment> align, Generator& gen)
    : score_(std::move(score)), align_(std::move(align)) {
    if (!score_ || !align_) throw std::invalid_argument("luong_attention: needs a score and an alignment");
    register_module("score", *score_);
    register_module("align", *align_);
    W_c = register_parameter("W_c", init::xavier_uniform({state_dim, encoder_dim + state_dim}, gen));
}

LuongAttention::Output LuongAttention::forward(const Var& queries, const Var& encoder_states, const Tensor& mask,
                                               const Tensor& positions) {
    check_qkv(id(), queries, encoder_states, encoder_states);
    check_width(id(), "queries", queries, W_c.size(0));
    check_width(id(), "encoder states", encoder_states, W_c.size(1) - W_c.size(0));  // W_c is d_s×(d_h + d_s)
    const Tensor keep = scores_keep_mask(id(), mask, encoder_states.size(0), encoder_states.size(1));
    // padded states, and queries that may attend no state, zeroed (attention/padding.hpp)
    const Var states = hide_unseen_keys(encoder_states, keep);
    const Var h = hide_fully_masked_queries(queries, keep);
    // e_ts = score(h_t, h̄_s)                        B×m×n
    const Var e = score_->score(h, states);
    // a_t = align(e_t): global, local-m or local-p   B×m×n
    const Var a = align_->align({e, keep, h, positions});
    // c_t = Σ_s a_ts h̄_s                              B×m×d_h
    const Var c = attend(a, states);
    // h̃_t = tanh(W_c [c_t; h_t])                      B×m×d_s
    const Var attentional = tanh(matmul(concat({c, h}, -1), W_c, false, true));
    return {attentional, c, a};
}

LuongAttention::Output LuongAttention::step(const Var& state, const Var& encoder_states, const Tensor& mask,
                                            int64_t t) {
    check_rank(id(), "decoder state", state, 2);
    // local-m centres the window on the decoder step: p_t = t
    const Tensor positions = Tensor::full(Shape{state.size(0), 1}, static_cast<real>(t));
    const Output out = forward(unsqueeze(state, 1), encoder_states, mask, positions);
    return {squeeze(out.output, 1), squeeze(out.context, 1), squeeze(out.weights, 1)};
}

Taxonomy LuongAttention::taxonomy() const {
    Taxonomy t;
    t.scoring = score_->id();
    t.alignment = align_->tag();
    return t;
}

// ---- 33. specialized_query_attention ----------------------------------------------------------------

Var MeanQuery::build(const Var& other, const Tensor& other_mask) { return masked_mean(other, other_mask); }

namespace {

// A builder without parameters of its own, from a callable.
class CallableQuery : public QueryBuilder {
public:
    explicit CallableQuery(SpecializedQueryAttention::BuildFn fn) : fn_(std::move(fn)) {
        if (!fn_) throw std::invalid_argument("specialized_query_attention: the query builder is empty");
    }
    Var build(const Var& other, const Tensor& other_mask) override { return fn_(other, other_mask); }
    std::string describe() const override { return "CallableQuery"; }

private:
    SpecializedQueryAttention::BuildFn fn_;
};

}  // namespace

SpecializedQueryAttention::SpecializedQueryAttention(std::unique_ptr<QueryBuilder> builder,
                                                     std::unique_ptr<ScoreFunction> score,
                                                     std::unique_ptr<Alignment> align)
    : builder_(std::move(builder)), attention_(std::move(score), std::move(align)) {
    if (!builder_) throw std::invalid_argument("specialized_query_attention: needs a query builder");
    register_module("query", *builder_);
    register_module("attention", attention_);
}

SpecializedQueryAttention::SpecializedQueryAttention(BuildFn build, std::unique_ptr<ScoreFunction> score,
                                                     std::unique_ptr<Alignment> align)
    : SpecializedQueryAttention(std::make_unique<CallableQuery>(std::move(build)), std::move(score),
                                std::move(align)) {}

Var SpecializedQueryAttention::query(const Var& other, const Tensor& other_mask) {
    check_rank(id(), "other input", other, 3);
    const Var q = builder_->build(other, other_mask);  // q = build(other)   B×m×d_q
    check_rank(id(), "built query", q, 3);
    return q;
}

AttentionOutput SpecializedQueryAttention::forward(const Var& other, const Var& keys, const Var& values,
                                                   const Tensor& mask, const Tensor& other_mask) {
    const Var q = query(other, other_mask);  // B×m×d_q
    check_qkv(id(), q, keys, values);
    // e = score(q, K); a = align(e); c = A V      B×m×d_v, B×m×n
    return attention_.forward(q, keys, values, scores_keep_mask(id(), mask, keys.size(0), keys.size(1)));
}

Taxonomy SpecializedQueryAttention::taxonomy() const {
    Taxonomy t = attention_.taxonomy();
    t.query = "specialized";
    return t;
}

// ---- 34. attention_over_attention --------------------------------------------------------------------

AttentionOverAttentionOutput attention_over_attention(const Var& document_in, const Var& query_in,
                                                      const Tensor& document_mask, const Tensor& query_mask) {
    const std::string who = "attention_over_attention";
    check_qkv(who, query_in, document_in, document_in);
    if (document_in.size(2) != query_in.size(2))
        throw std::invalid_argument(who + ": document " + document_in.shape().str() + " and query " +
                                    query_in.shape().str() + " need the same width");
    const int64_t B = document_in.size(0), n = document_in.size(1), m = query_in.size(1);
    for (const Tensor* mask : {&document_mask, &query_mask})
        if (mask->defined() && mask->rank() != 2)
            throw std::invalid_argument(who + ": masks must be B×n (document) and B×m (query), got " +
                                        mask->shape().str());
    // keep_ij = doc_i · query_j                        B×n×m (or B×n×1, B×1×m)
    const Tensor doc_keep = scores_keep_mask(who, document_mask, B, n);  // B×1×n
    const Tensor query_keep = scores_keep_mask(who, query_mask, B, m);   // B×1×m
    const Tensor keep = combine_masks(doc_keep.defined() ? doc_keep.reshape(Shape{B, n, 1}) : Tensor(), query_keep);
    const SoftmaxMask softmax_mask = keep.defined() ? SoftmaxMask::keep(keep) : SoftmaxMask{};
    // padded words of both zeroed (by selection) before M reads them: M's
    // gradient is H_q for a document word and H_d for a query word
    const Var document = hide_unseen_keys(document_in, doc_keep), query = hide_unseen_keys(query_in, query_keep);

    // M = H_d H_qᵀ                                      B×n×m
    const Var M = matmul(document, query, false, true);
    // α: softmax over the document positions i (column-softmax)   B×n×m
    const Var alpha = softmax(M, 1, softmax_mask);
    // β: softmax over the query words j (row-softmax)             B×n×m
    const Var beta = softmax(M, 2, softmax_mask);
    // β̄ = (1/n) Σ_i β_i,:  over the unmasked document words        B×1×m
    const Tensor n_doc = doc_keep.defined() ? maximum(sum(doc_keep, -1, true), Tensor::scalar(1))
                                            : Tensor::full(Shape{B, 1, 1}, static_cast<real>(n));
    const Var beta_mean = div(sum(beta, 1, /*keepdim=*/true), Var(n_doc));
    // s = α β̄                                           B×n×1 → B×n
    const Var s = squeeze(matmul(alpha, beta_mean, false, true), -1);
    return {s, alpha, beta, squeeze(beta_mean, 1)};
}

Var candidate_scores(const Var& s, const Tensor& document_tokens, const Tensor& candidates) {
    check_rank("candidate_scores", "s", s, 2);
    if (document_tokens.shape() != s.shape() || candidates.rank() != 2 || candidates.size(0) != s.size(0))
        throw std::invalid_argument("candidate_scores: s " + s.shape().str() + ", document tokens " +
                                    document_tokens.shape().str() + " and candidates " + candidates.shape().str() +
                                    " need shapes B×n, B×n and B×k");
    const int64_t B = s.size(0), n = s.size(1), k = candidates.size(1);
    // occurs[b, c, i] = 1 where document word i is candidate c     B×k×n
    const Tensor occurs = eq(document_tokens.reshape(Shape{B, 1, n}), candidates.reshape(Shape{B, k, 1}));
    // score_c = Σ_{i: w_i = c} s_i                                   B×k
    return squeeze(matmul(Var(occurs), unsqueeze(s, 2)), -1);
}

// ---- 35. constant_query_self_attention -------------------------------------------------------------

ConstantQuerySelfAttention::ConstantQuerySelfAttention(int64_t key_dim, int64_t attention_dim, Generator& gen,
                                                       Activation act)
    : act_(act) {
    W = register_parameter("W", init::xavier_uniform({attention_dim, key_dim}, gen));
    b = register_parameter("b", init::uniform_fan_in({attention_dim}, key_dim, gen));
    w = register_parameter("w", init::uniform_fan_in({attention_dim}, attention_dim, gen));
}

Var ConstantQuerySelfAttention::scores(const Var& keys) {
    // u_l = act(W k_l + b)                 B×n×d_w
    const Var u = activate(add(matmul(keys, W, false, true), b), act_);
    // e_l = wᵀ u_l                          B×1×n
    return matmul(as_row(w), u, false, true);
}

AttentionOutput ConstantQuerySelfAttention::forward(const Var& keys_in, const Var& values_in, const Tensor& mask) {
    check_keys_values(id(), keys_in, values_in, W.size(1));
    const Tensor keep = scores_keep_mask(id(), mask, keys_in.size(0), keys_in.size(1));
    // padded keys and values zeroed (by selection) before W and the sum read them
    const Var keys = hide_unseen_keys(keys_in, keep), values = hide_unseen_keys(values_in, keep);
    const Var e = scores(keys);  // B×1×n
    // a = softmax(e)                        B×1×n
    const Var a = masked_softmax(e, keep, is_fast());
    return {attend(a, values), a};  // c = Σ_l a_l v_l   B×1×d_v
}

AttentionOutput ConstantQuerySelfAttention::forward(const Var& features, const Tensor& mask) {
    return forward(features, features, mask);
}

Taxonomy ConstantQuerySelfAttention::taxonomy() const {
    Taxonomy t;
    t.scoring = "additive_score";
    t.query = "self";
    return t;
}

// ---- 36. learned_query_self_attention ---------------------------------------------------------------

LearnedQuerySelfAttention::LearnedQuerySelfAttention(int64_t key_dim, Generator& gen, bool scaled)
    : scaled_(scaled) {
    q = register_parameter("q", init::uniform_fan_in({key_dim}, key_dim, gen));
}

AttentionOutput LearnedQuerySelfAttention::forward(const Var& keys_in, const Var& values_in, const Tensor& mask) {
    check_keys_values(id(), keys_in, values_in, q.size(0));
    const Tensor keep = scores_keep_mask(id(), mask, keys_in.size(0), keys_in.size(1));
    // padded keys and values zeroed (by selection) before q and the sum read them
    const Var keys = hide_unseen_keys(keys_in, keep), values = hide_unseen_keys(values_in, keep);
    // e_l = qᵀ k_l                          B×1×n
    Var e = matmul(as_row(q), keys, false, true);
    // (optionally / √d_k)
    if (scaled_) e = mul(e, real(1) / std::sqrt(static_cast<real>(q.size(0))));
    const Var a = masked_softmax(e, keep, is_fast());  // B×1×n
    return {attend(a, values), a};  // c = Σ_l a_l v_l   B×1×d_v
}

AttentionOutput LearnedQuerySelfAttention::forward(const Var& features, const Tensor& mask) {
    return forward(features, features, mask);
}

Taxonomy LearnedQuerySelfAttention::taxonomy() const {
    Taxonomy t;
    t.scoring = scaled_ ? "scaled_dot_score" : "dot_score";
    t.query = "self";
    return t;
}

}  // namespace attn
