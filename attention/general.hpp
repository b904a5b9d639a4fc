// The general attention module (catalog entry 1, `general_attention`) and the
// pieces every mechanism shares: masks, the returned weights, the two override
// points (score and alignment), and the survey's taxonomy tags.
//
// Brauwers & Frasincar (2023), A General Survey on Attention Mechanisms in
// Deep Learning, §2. Given feature vectors F and a query q:
//
//     K = F W_Kᵀ            keys           (optional projection; identity if absent)
//     V = F W_Vᵀ            values
//     e_l = score(q, k_l)   one score per key             ← override point 1
//     a = align(e)          weights, usually softmax      ← override point 2
//     c = Σ_l a_l v_l       the context: c = Vᵀa, in rows C = A V
//
// Shapes (row = position, batch first):
//     queries  B×m×d_q   (m = 1 for a single query per example)
//     features B×n×d_f   keys B×n×d_k   values B×n×d_v
//     mask     a "keep" mask broadcastable to B×m×n: 1 = may attend
//     scores, weights B×m×n      output B×m×d_v
//
// A query whose keys are all masked gets all-zero weights, a zero output and
// zero gradient, never NaN (autograd's masked softmax guarantees it), and a
// key no query may attend (padding) takes no part in anything, whatever its
// row holds, NaN and inf included: see hide_unseen_keys below.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "attention/padding.hpp"
#include "autograd/ops.hpp"
#include "nn/module.hpp"

namespace attn {

// ---- what every mechanism returns ----------------------------------------
struct AttentionOutput {
    Var output;   // B×m×d_v: the context vectors
    Var weights;  // B×m×n: how much each query attended to each key
};

// ---- taxonomy tags (the survey's Table 3) ----------------------------------
// Every mechanism reports where it sits in the survey's taxonomy; the
// defaults are the survey's "baseline" nodes (catalog entries 2, 10, 13, 29, 39).
struct Taxonomy {
    std::string multiplicity = "singular";        // singular | co-attention | rotatory | ...
    std::string levels = "single";                // single | multi (hierarchical, attention-via-attention)
    std::string representations = "single";      // single | multi (meta-embeddings)
    std::string scoring = "additive";             // the score function's catalog id
    std::string alignment = "soft";               // soft | hard | local-m | local-p | ...
    std::string dimensionality = "single";        // single | multi (a weight per feature)
    std::string query = "basic";                  // basic | specialized | self
    std::string query_multiplicity = "singular";  // singular | multi-head | multi-hop | capsule

    // "multiplicity=singular levels=single ... query_multiplicity=singular"
    std::string str() const;
};

// The survey's baseline nodes are tags, not code: each of these catalog
// entries is a predicate on a module's taxonomy.
//   2  singular_features_attention: attention over one input's features
//  10  single_level_attention: features of one granularity (not hierarchical)
//  13  single_representational_attention: one representation of each input
//  29  single_dimensional_attention: one scalar weight per value vector
//  39  singular_query_attention: one query per prediction
bool singular_features_attention(const Taxonomy& t);
bool single_level_attention(const Taxonomy& t);
bool single_representational_attention(const Taxonomy& t);
bool single_dimensional_attention(const Taxonomy& t);
bool singular_query_attention(const Taxonomy& t);

// The base of every attention mechanism: a Module that knows its catalog id
// and its taxonomy tags. Mechanisms differ in their inputs, so forward() is
// not virtual: each declares the one its formula needs.
class AttentionModule : public Module {
public:
    virtual std::string id() const = 0;  // the catalog id, e.g. "bahdanau_attention"
    virtual Taxonomy taxonomy() const = 0;
    std::string describe() const override { return id(); }
};

// ---- masks -------------------------------------------------------------------
// All masks are "keep" masks of 0/1 (1 = may attend), combined by product.
// lengths (B) → B×n: row b keeps its first lengths[b] positions.
Tensor length_mask(const std::vector<int64_t>& lengths, int64_t n);
// B×n key mask → B×1×n, broadcastable against B×m×n scores.
Tensor key_mask(const Tensor& mask_b_n);
// m×n: query i may attend to key j when j ≤ i + (n − m) (the last query sees
// every key; with m = n, the usual lower triangle).
Tensor causal_mask(int64_t m, int64_t n);
// n×n: position i may attend to j when |i − j| ≤ r (restricted self-attention).
Tensor band_mask(int64_t n, int64_t r);
// The product of two keep masks (either may be undefined, meaning "keep all").
Tensor combine_masks(const Tensor& a, const Tensor& b);


// ---- override point 1: the score function -----------------------------------
// queries B×m×d_q, keys B×n×d_k → scores B×m×n. Subclasses: attention/scores.hpp.
class ScoreFunction : public Module {
public:
    virtual std::string id() const = 0;  // catalog id, e.g. "additive_score"
    virtual Var score(const Var& queries, const Var& keys) = 0;
    std::string describe() const override { return id(); }
};

// ---- override point 2: the alignment function -------------------------------
// What an alignment sees. Only `scores` is required; the rest is for the
// alignments that need it (local-m: positions; local-p: queries).
struct AlignmentInput {
    Var scores;        // B×m×n
    Tensor mask;       // keep mask broadcastable to B×m×n; undefined = keep all
    Var queries;       // B×m×d_q, for alignments that predict from the query
    Tensor positions;  // B×m source positions aligned with each query (local-m);
                       // undefined = the query's own index i
};

// scores → weights B×m×n. Subclasses: attention/alignments.hpp.
class Alignment : public Module {
public:
    virtual std::string id() const = 0;  // catalog id, e.g. "soft_alignment"
    virtual std::string tag() const = 0;  // the taxonomy's alignment tag, e.g. "soft"
    virtual Var align(const AlignmentInput& in) = 0;
    // Whether each row of weights sums to 1 (or 0 when fully masked). Local-p
    // and element-wise alignments do not: tests must not assume it.
    virtual bool normalized() const { return true; }
    std::string describe() const override { return id(); }
};

// The context: weights B×m×n, values B×n×d_v → B×m×d_v (c = Σ_l a_l v_l).
Var attend(const Var& weights, const Var& values);

// ---- entry 1: general_attention -----------------------------------------------
// Any score with any alignment, and optional key/value projections of the
// features. Owns its score and alignment (registered as "score" and "align").
class GeneralAttention : public AttentionModule {
public:
    struct Options {
        int64_t feature_dim = 0;  // d_f; needed only when projecting
        int64_t key_dim = 0;      // d_k > 0: learn W_K (d_k×d_f); 0: keys = features
        int64_t value_dim = 0;    // d_v > 0: learn W_V (d_v×d_f); 0: values = features
        bool query_is_self = false;  // tag: the keys' own rows are the queries
    };
    GeneralAttention(std::unique_ptr<ScoreFunction> score, std::unique_ptr<Alignment> align);
    GeneralAttention(std::unique_ptr<ScoreFunction> score, std::unique_ptr<Alignment> align, const Options& options,
                     Generator& gen);

    // queries B×m×d_q, features B×n×d_f, mask → output B×m×d_v, weights B×m×n.
    AttentionOutput forward(const Var& queries, const Var& features, const Tensor& mask = {});
    // Keys and values given separately (no projection is applied).
    AttentionOutput forward(const Var& queries, const Var& keys, const Var& values, const Tensor& mask);

    ScoreFunction& score() { return *score_; }
    Alignment& alignment() { return *align_; }
    std::string id() const override { return "general_attention"; }
    Taxonomy taxonomy() const override;

    Var W_K, W_V;  // undefined unless projecting

private:
    std::unique_ptr<ScoreFunction> score_;
    std::unique_ptr<Alignment> align_;
    bool query_is_self_ = false;
};

// Shape checks shared by the mechanisms: throw std::invalid_argument naming
// the mechanism and the shapes, e.g. "bahdanau_attention: queries 4×1×16 and
// keys 5×7×32 need the same batch size".
void check_rank(const std::string& who, const char* what, const Var& v, int rank);
// x's last axis has `width` elements (and, if rank > 0, x has that rank), or
// throw: "who: what 2×3×5 need width 4".
void check_width(const std::string& who, const char* what, const Var& x, int64_t width, int rank = 0);
void check_qkv(const std::string& who, const Var& queries, const Var& keys, const Var& values);

// A vector parameter w (size d) as a 1×d matrix, so that matmul(as_row(w), X, false, true)
// scores every row of a batch of X against the one shared w.
Var as_row(const Var& v);

// ‖x‖ along `axis`, kept as a size-1 axis. The tiny constant under the root
// keeps the gradient x/‖x‖ finite (zero) at x = 0 instead of 0/0, and is far
// below any norm that matters (it is 10⁻¹⁵ once rooted).
Var l2_norm(const Var& x, int axis);

}  // namespace attn
