// Query types (survey §3.3.1, catalog entries 31–36): where the query comes from.
//
//   basic        the output model's own state asks the question
//                  31 bahdanau_attention   the previous decoder state s_{i−1}
//                  32 luong_attention      the current decoder state h_t
//   specialized  the query is built for the task from another input or module
//                  33 specialized_query_attention   any query builder
//                  34 attention_over_attention      a query distilled by a second attention
//   self         the features query themselves
//                  35 constant_query_self_attention a fixed query folded into the score
//                  36 learned_query_self_attention  a trainable query vector
//
// Shapes (row = position, batch first):
//   B batch · n source positions · m queries · d_s decoder state · d_h encoder
//   state · d_w attention width · d_k key width · d_v value width
//   queries B×m×d_q, keys B×n×d_k, values B×n×d_v → output B×m×d_v, weights B×m×n
//   mask: a B×n key mask (1 = may attend) or a keep mask broadcastable to B×m×n.
// A query whose keys are all masked gets zero weights, a zero output and zero
// gradient, never NaN.
//
// docs/attention/query_types.md; tests in tests/grad/test_query_types.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "attention/alignments.hpp"
#include "attention/by_id.hpp"
#include "attention/general.hpp"
#include "attention/scores.hpp"
#include "tensor/random.hpp"

namespace attn {

// The keep mask for scores B×m×n from a caller's mask: a B×n key mask becomes
// B×1×n; a rank-3 mask (B or 1)×(m or 1)×n passes through; undefined stays
// undefined (keep all). Throws, naming `who` and both shapes, otherwise.
Tensor scores_keep_mask(const std::string& who, const Tensor& mask, int64_t batch, int64_t n);
// Σ_l mask_l v_l / Σ_l mask_l: values B×n×d, B×n key mask → B×1×d. Without a
// mask, the plain mean; with every key masked, zeros.
Var masked_mean(const Var& values, const Tensor& mask);

// ---- 31. bahdanau_attention ------------------------------------------------------------
// Bahdanau, Cho, Bengio (2015), Neural Machine Translation by Jointly Learning to
// Align and Translate, ICLR.
//   e_ij = v_aᵀ tanh(W_a s_{i−1} + U_a h_j)     the additive score without bias
//   α_ij = softmax_j(e_ij)                       the soft alignment
//   c_i  = Σ_j α_ij h_j
// The score is an AdditiveScore without b, registered as "score": W_a is
// score.W_1 (d_w×d_s), U_a is score.W_2 (d_w×d_h), v_a is score.w (d_w).
// U_a h_j does not depend on the decoder step: precompute() projects the
// encoder states once per source sequence and step() scores one decoder state
// against them, inside the decoder loop:
//
//     auto memory = attention.precompute(H, mask);        // once
//     for (t ...) { auto [c, alpha] = attention.step(s, memory); s = cell([y; c], s); }
class BahdanauAttention : public AttentionModule {
public:
    BahdanauAttention(int64_t state_dim, int64_t encoder_dim, int64_t attention_dim, Generator& gen);

    // What a decoder step needs from the source, computed once per sequence.
    struct Memory {
        Var states;     // H        B×n×d_h (the values; padded rows zeroed if they held NaN or inf)
        Var projected;  // H U_aᵀ   B×n×d_w (the keys' half of every score)
        Tensor keep;    // B×1×n keep mask, or undefined
    };
    // encoder states B×n×d_h, B×n key mask → the memory.
    Memory precompute(const Var& encoder_states, const Tensor& mask = {});
    // One decoder step: s_{i−1} B×d_s → c_i B×d_h, α_i B×n.
    AttentionOutput step(const Var& previous_state, const Memory& memory);
    // Every query at once: B×m×d_s → c B×m×d_h, α B×m×n.
    AttentionOutput forward(const Var& queries, const Memory& memory);
    AttentionOutput forward(const Var& queries, const Var& encoder_states, const Tensor& mask = {});
    // e = v_aᵀ tanh(W_a s + U_a h)   B×m×n
    Var scores(const Var& queries, const Memory& memory);

    std::string id() const override { return "bahdanau_attention"; }
    Taxonomy taxonomy() const override;

    AdditiveScore score;
};

// ---- 32. luong_attention ----------------------------------------------------------------
// Luong, Pham, Manning (2015), Effective Approaches to Attention-based Neural
// Machine Translation, EMNLP. The query is the current decoder state h_t.
//   score   any score function: Luong's dot h_tᵀ h̄_s, general h_tᵀ W_a h̄_s
//           (general_score, its W = W_aᵀ), concat v_aᵀ tanh(W_a [h_t; h̄_s])
//           (additive_score), location a_t = softmax(W_a h_t) (location_score,
//           W_a n_max×d_s: needs a maximum length) — or any other of the table
//   align   global (soft), local-m (window around p = t), local-p (predicted p_t)
//   c_t  = Σ_s a_ts h̄_s
//   h̃_t  = tanh(W_c [c_t; h_t])                    W_c d_s×(d_h + d_s), the attentional state
// The output layer p(y_t) = softmax(W_s h̃_t) belongs to the decoder. Input
// feeding: the decoder's next input is [y_t; h̃_t], so that it knows its past
// alignment decisions (docs/attention/query_types.md).
class LuongAttention : public AttentionModule {
public:
    struct Options {
        std::string score = "general_score";  // an id of attention/by_id.hpp's score table
        std::string align = "soft_alignment";  // an id of its alignment table
        int64_t window = 10;         // D, the half-width of the local windows
        int64_t max_length = 0;      // location score: the longest source, n_max
        int64_t attention_dim = 0;   // the additive score's d_w and local-p's d_p (0: d_s)
        NamedOptions score_options = {}, align_options = {};  // the rows' named options (by_id.hpp)
    };
    // The score and the alignment by id (make_score, make_alignment).
    LuongAttention(int64_t state_dim, int64_t encoder_dim, const Options& options, Generator& gen);
    // Any score and alignment, already built.
    LuongAttention(int64_t state_dim, int64_t encoder_dim, std::unique_ptr<ScoreFunction> score,
                   std::unique_ptr<Alignment> align, Generator& gen);

    struct Output {
        Var output;   // h̃_t  B×m×d_s
        Var context;  // c_t  B×m×d_h
        Var weights;  // a_t  B×m×n
    };
    // queries h_t B×m×d_s, encoder states B×n×d_h, mask, and for local-m the
    // source position of each query B×m (undefined: query i sits at position i).
    Output forward(const Var& queries, const Var& encoder_states, const Tensor& mask = {},
                   const Tensor& positions = {});
    // One decoder step t: h_t B×d_s → h̃_t B×d_s, c_t B×d_h, a_t B×n.
    Output step(const Var& state, const Var& encoder_states, const Tensor& mask, int64_t t);

    ScoreFunction& score() { return *score_; }
    Alignment& alignment() { return *align_; }
    std::string id() const override { return "luong_attention"; }
    Taxonomy taxonomy() const override;

    Var W_c;

private:
    std::unique_ptr<ScoreFunction> score_;
    std::unique_ptr<Alignment> align_;
};

// ---- 33. specialized_query_attention -----------------------------------------------------
// Survey §3.3.1. The query is built for the task from another input or module:
// the mean of the other input's states (IAN), another module's context vector
// (co-attention, rotatory attention), an aspect or question vector. No new
// maths: a query builder, then any score and alignment.
//   q = build(other)        B×m×d_q
//   e = score(q, K); a = align(e); c = Σ_l a_l v_l
// The builder is the override point: a QueryBuilder module (its parameters are
// registered as "query.*"), or a callable for builders without parameters.
class QueryBuilder : public Module {
public:
    // other B×n'×d_o, its B×n' key mask (may be undefined) → queries B×m×d_q
    virtual Var build(const Var& other, const Tensor& other_mask) = 0;
};

// The masked mean of the other input's rows (IAN's pooled target/context):
// other B×n'×d_o → B×1×d_o.
class MeanQuery : public QueryBuilder {
public:
    Var build(const Var& other, const Tensor& other_mask) override;
    std::string describe() const override { return "MeanQuery"; }
};

class SpecializedQueryAttention : public AttentionModule {
public:
    using BuildFn = std::function<Var(const Var& other, const Tensor& other_mask)>;
    SpecializedQueryAttention(std::unique_ptr<QueryBuilder> builder, std::unique_ptr<ScoreFunction> score,
                              std::unique_ptr<Alignment> align);
    SpecializedQueryAttention(BuildFn build, std::unique_ptr<ScoreFunction> score, std::unique_ptr<Alignment> align);

    // other B×n'×d_o, keys B×n×d_k, values B×n×d_v → output B×m×d_v, weights B×m×n
    AttentionOutput forward(const Var& other, const Var& keys, const Var& values, const Tensor& mask = {},
                            const Tensor& other_mask = {});
    Var query(const Var& other, const Tensor& other_mask = {});

    GeneralAttention& attention() { return attention_; }
    std::string id() const override { return "specialized_query_attention"; }
    Taxonomy taxonomy() const override;

private:
    std::unique_ptr<QueryBuilder> builder_;
    GeneralAttention attention_;
};

// ---- 34. attention_over_attention --------------------------------------------------------
// Cui, Chen, Wei, Wang, Liu, Hu (2017), Attention-over-Attention Neural Networks
// for Reading Comprehension, ACL.
//   M = H_d H_qᵀ                      B×n×m   pair-wise matching scores
//   α = column-softmax of M           over document positions i: one distribution per query word
//   β = row-softmax of M              over query words j: one distribution per document word
//   β̄ = (1/n) Σ_i β_i,:                B×m     the query-level attention, averaged
//   s = α β̄                            B×n     the document-level attention over attention
// No parameters (the encoders are outside). Σ_i s_i = 1. Masks: document B×n,
// query B×m; the average β̄ runs over the unmasked document words.
struct AttentionOverAttentionOutput {
    Var output;  // s  B×n: the attended document positions
    Var alpha;   // α  B×n×m (each column sums to 1)
    Var beta;    // β  B×n×m (each row sums to 1)
    Var beta_mean;  // β̄  B×m
};
AttentionOverAttentionOutput attention_over_attention(const Var& document, const Var& query,
                                                      const Tensor& document_mask = {},
                                                      const Tensor& query_mask = {});
// The answer score of each candidate: the sum of s over the document positions
// holding it (AoA's "sum attention"). s B×n, document tokens B×n, candidate
// tokens B×k → B×k.
Var candidate_scores(const Var& s, const Tensor& document_tokens, const Tensor& candidates);

// ---- 35. constant_query_self_attention ---------------------------------------------------
// Survey §3.3.1 (a score without a query); HAN's word attention, Yang et al. (2016).
//   e_l = wᵀ act(W k_l + b)          W d_w×d_k, b d_w, w d_w, act = tanh
//   a = softmax(e);  c = Σ_l a_l v_l
// The additive score with the query fixed at q = 0; w plays the part of a
// learned constant query ("u_w" in HAN).
class ConstantQuerySelfAttention : public AttentionModule {
public:
    ConstantQuerySelfAttention(int64_t key_dim, int64_t attention_dim, Generator& gen,
                               Activation act = Activation::tanh);

    // keys B×n×d_k, values B×n×d_v → output B×1×d_v, weights B×1×n
    AttentionOutput forward(const Var& keys, const Var& values, const Tensor& mask = {});
    // keys = values = features
    AttentionOutput forward(const Var& features, const Tensor& mask = {});
    // e = wᵀ act(W k + b)    B×1×n
    Var scores(const Var& keys);

    std::string id() const override { return "constant_query_self_attention"; }
    Taxonomy taxonomy() const override;

    Var W, b, w;

private:
    Activation act_;
};

// ---- 36. learned_query_self_attention ----------------------------------------------------
// Survey §3.3.1 (a trainable query in the dot score).
//   e_l = qᵀ k_l  (or qᵀ k_l / √d_k)     q d_k, trainable
//   a = softmax(e);  c = Σ_l a_l v_l
// q = 0 gives mean pooling. Entry 43 uses one such query per class.
class LearnedQuerySelfAttention : public AttentionModule {
public:
    LearnedQuerySelfAttention(int64_t key_dim, Generator& gen, bool scaled = false);

    // keys B×n×d_k, values B×n×d_v → output B×1×d_v, weights B×1×n
    AttentionOutput forward(const Var& keys, const Var& values, const Tensor& mask = {});
    AttentionOutput forward(const Var& features, const Tensor& mask = {});

    std::string id() const override { return "learned_query_self_attention"; }
    Taxonomy taxonomy() const override;

    Var q;

private:
    bool scaled_;
};

}  // namespace attn
