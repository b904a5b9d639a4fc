// The score functions (entries 15–21 and Luong's location score): queries against keys.
// The formulas, the papers and the shape legend are in attention/scores.hpp.
#include "attention/scores.hpp"

#include <cmath>
#include <stdexcept>

#include "attention/scores_kernels.hpp"
#include "nn/init.hpp"
#include "tensor/ops.hpp"

namespace attn {

using detail::check_pair;

// queries B×m×d_q and keys B×n×d_k: rank 3, the same batch size (declared in
// attention/scores_kernels.hpp: the fused twin checks the same).
void detail::check_pair(const std::string& who, const Var& queries, const Var& keys) {
    check_rank(who, "queries", queries, 3);
    check_rank(who, "keys", keys, 3);
    if (queries.size(0) != keys.size(0))
        throw std::invalid_argument(who + ": queries " + queries.shape().str() + " and keys " + keys.shape().str() +
                                    " need the same batch size");
}

// ---- activations ----------------------------------------------------------------------

Var activate(const Var& x, Activation act) {
    switch (act) {
        case Activation::tanh: return tanh(x);
        case Activation::relu: return relu(x);
        case Activation::sigmoid: return sigmoid(x);
        case Activation::identity: return x;
    }
    throw std::invalid_argument("activate: unknown activation");
}

std::string activation_name(Activation act) {
    switch (act) {
        case Activation::tanh: return "tanh";
        case Activation::relu: return "relu";
        case Activation::sigmoid: return "sigmoid";
        case Activation::identity: return "identity";
    }
    return "?";
}

// H[b, i, l, :] = act(W_1 q_i + W_2 k_l + b)
Var additive_features(const Var& projected_queries, const Var& projected_keys, const Var& bias, Activation act) {
    // Q W_1ᵀ ⊕ K W_2ᵀ: B×m×1×d_w + B×1×n×d_w → B×m×n×d_w
    const Var sum_qk = unsqueeze(projected_queries, 2) + unsqueeze(projected_keys, 1);
    return activate(bias.defined() ? sum_qk + bias : sum_qk, act);  // B×m×n×d_w
}

// ---- 15. additive_score ---------------------------------------------------------------------

AdditiveScore::AdditiveScore(int64_t query_dim, int64_t key_dim, int64_t hidden_dim, Generator& gen,
                             Activation act, bool bias)
    : act_(act) {
    W_1 = register_parameter("W_1", init::xavier_uniform({hidden_dim, query_dim}, gen));
    W_2 = register_parameter("W_2", init::xavier_uniform({hidden_dim, key_dim}, gen));
    if (bias) b = register_parameter("b", init::uniform_fan_in(Shape{hidden_dim}, query_dim, gen));
    w = register_parameter("w", init::uniform_fan_in(Shape{hidden_dim}, hidden_dim, gen));
}

Var AdditiveScore::project_keys(const Var& keys) {
    check_rank(id(), "keys", keys, 3);
    check_width(id(), "keys", keys, W_2.size(1));
    return matmul(keys, W_2, false, true);  // K W_2ᵀ   B×n×d_w
}

Var AdditiveScore::score_projected(const Var& queries, const Var& projected_keys) {
    check_pair(id(), queries, projected_keys);
    check_width(id(), "queries", queries, W_1.size(1));
    check_width(id(), "projected keys", projected_keys, W_1.size(0));
    const Var projected_queries = matmul(queries, W_1, false, true);  // Q W_1ᵀ   B×m×d_w
    if (fused && act_ == Activation::tanh) return additive_score_fused(projected_queries, projected_keys, b, w);
    // H = act(W_1 q + W_2 k_l + b)   B×m×n×d_w
    const Var H = additive_features(projected_queries, projected_keys, b, act_);
    // e = H w: B×m×n×d_w · d_w×1 → B×m×n×1 → B×m×n
    return squeeze(matmul(H, reshape(w, {w.size(0), 1})), -1);
}

Var AdditiveScore::score(const Var& queries, const Var& keys) {
    check_pair(id(), queries, keys);
    return score_projected(queries, project_keys(keys));
}

std::string AdditiveScore::describe() const {
    return "additive_score(d_q=" + std::to_string(W_1.size(1)) + ", d_k=" + std::to_string(W_2.size(1)) +
           ", d_w=" + std::to_string(W_1.size(0)) + ", act=" + activation_name(act_) + (b.defined() ? "" : ", no bias") +
           ")";
}

// ---- 16. dot_score --------------------------------------------------------------------------

Var DotScore::score(const Var& queries, const Var& keys) {
    check_pair(id(), queries, keys);
    if (queries.size(2) != keys.size(2))
        throw std::invalid_argument(id() + ": queries " + queries.shape().str() + " and keys " + keys.shape().str() +
                                    " need the same width (d_q = d_k)");
    return matmul(queries, keys, false, true);  // E = Q Kᵀ   B×m×n
}

// ---- 17. scaled_dot_score ----------------------------------------------------------------------

Var ScaledDotScore::score(const Var& queries, const Var& keys) {
    check_pair(id(), queries, keys);
    if (queries.size(2) != keys.size(2))
        throw std::invalid_argument(id() + ": queries " + queries.shape().str() + " and keys " + keys.shape().str() +
                                    " need the same width (d_q = d_k)");
    const real d_k = static_cast<real>(keys.size(2));
    return matmul(queries, keys, false, true) / std::sqrt(d_k);  // E = Q Kᵀ / √d_k   B×m×n
}

// ---- 18. general_score -------------------------------------------------------------------------

GeneralScore::GeneralScore(int64_t query_dim, int64_t key_dim, Generator& gen) {
    W = register_parameter("W", init::xavier_uniform({key_dim, query_dim}, gen));
}

Var GeneralScore::score(const Var& queries, const Var& keys) {
    check_pair(id(), queries, keys);
    check_width(id(), "queries", queries, W.size(1));
    check_width(id(), "keys", keys, W.size(0));
    const Var Wq = matmul(queries, W, false, true);  // W q for every query: Q Wᵀ   B×m×d_k
    return matmul(Wq, keys, false, true);            // e_l = k_lᵀ W q: Q Wᵀ Kᵀ    B×m×n
}

std::string GeneralScore::describe() const {
    return "general_score(d_q=" + std::to_string(W.size(1)) + ", d_k=" + std::to_string(W.size(0)) + ")";
}

// ---- 19. biased_general_score ------------------------------------------------------------------

BiasedGeneralScore::BiasedGeneralScore(int64_t query_dim, int64_t key_dim, Generator& gen) {
    W = register_parameter("W", init::xavier_uniform({key_dim, query_dim}, gen));
    b = register_parameter("b", init::uniform_fan_in(Shape{key_dim}, query_dim, gen));
}

Var BiasedGeneralScore::score(const Var& queries, const Var& keys) {
    check_pair(id(), queries, keys);
    check_width(id(), "queries", queries, W.size(1));
    check_width(id(), "keys", keys, W.size(0));
    const Var Wq_b = matmul(queries, W, false, true) + b;  // W q + b: Q Wᵀ + b   B×m×d_k
    return matmul(Wq_b, keys, false, true);               // e_l = k_lᵀ (W q + b)  B×m×n
}

std::string BiasedGeneralScore::describe() const {
    return "biased_general_score(d_q=" + std::to_string(W.size(1)) + ", d_k=" + std::to_string(W.size(0)) + ")";
}

// ---- 20. activated_general_score ---------------------------------------------------------------

ActivatedGeneralScore::ActivatedGeneralScore(int64_t query_dim, int64_t key_dim, Generator& gen, Activation act)
    : act_(act) {
    W = register_parameter("W", init::xavier_uniform({key_dim, query_dim}, gen));
    b = register_parameter("b", init::uniform_fan_in(Shape{1}, query_dim, gen));
}

Var ActivatedGeneralScore::score(const Var& queries, const Var& keys) {
    check_pair(id(), queries, keys);
    check_width(id(), "queries", queries, W.size(1));
    check_width(id(), "keys", keys, W.size(0));
    const Var Wq = matmul(queries, W, false, true);         // Q Wᵀ      B×m×d_k
    const Var bilinear = matmul(Wq, keys, false, true);     // k_lᵀ W q  B×m×n
    return activate(bilinear + b, act_);                    // e_l = act(k_lᵀ W q + b)  B×m×n
}

std::string ActivatedGeneralScore::describe() const {
    return "activated_general_score(d_q=" + std::to_string(W.size(1)) + ", d_k=" + std::to_string(W.size(0)) +
           ", act=" + activation_name(act_) + ")";
}

// ---- 21. similarity_score ----------------------------------------------------------------------

SimilarityScore::SimilarityScore(const Options& options) : options_(options) {
    if (options.beta < 0) throw std::invalid_argument("similarity_score: the key strength beta must be >= 0");
    const Tensor beta_value = Tensor::full(Shape{1}, options.beta);
    beta = options.learn_beta ? register_parameter("beta", beta_value) : Var(beta_value);
}

Var SimilarityScore::cosine(const Var& queries, const Var& keys, const Var& key_strength) const {
    check_pair(id(), queries, keys);
    if (queries.size(2) != keys.size(2))
        throw std::invalid_argument(id() + ": queries " + queries.shape().str() + " and keys " + keys.shape().str() +
                                    " need the same width for the cosine");
    const Var dot = matmul(queries, keys, false, true);                 // qᵀ k_l        B×m×n
    const Var q_norm = l2_norm(queries, -1);                            // ‖q‖          B×m×1
    const Var k_norm = transpose(l2_norm(keys, -1), 1, 2);              // ‖k_l‖        B×1×n
    return key_strength * dot / (q_norm * k_norm + options_.eps);      // β qᵀk_l / (‖q‖‖k_l‖ + ε)  B×m×n
}

Var SimilarityScore::negative_distance(const Var& queries, const Var& keys) const {
    check_pair(id(), queries, keys);
    if (queries.size(2) != keys.size(2))
        throw std::invalid_argument(id() + ": queries " + queries.shape().str() + " and keys " + keys.shape().str() +
                                    " need the same width for the distance");
    const Var diff = unsqueeze(queries, 2) - unsqueeze(keys, 1);  // q − k_l   B×m×n×d
    const Var squared = sum(square(diff), -1);                    // ‖q − k_l‖²  B×m×n
    if (options_.squared) return -squared;                        // e_l = −‖q − k_l‖²
    return -sqrt(squared + real(1e-30));                          // e_l = −‖q − k_l‖, finite gradient at q = k_l
}

Var SimilarityScore::score(const Var& queries, const Var& keys) {
    if (options_.kind == Kind::cosine) return cosine(queries, keys, beta);
    return negative_distance(queries, keys);
}

std::string SimilarityScore::describe() const {
    if (options_.kind == Kind::cosine)
        return "similarity_score(cosine, beta=" + std::to_string(options_.beta) +
               (options_.learn_beta ? ", learned)" : ")");
    return std::string("similarity_score(negative_distance") + (options_.squared ? ", squared)" : ")");
}

// ---- 81. low_rank_bilinear_score -------------------------------------------------------------

LowRankBilinearScore::LowRankBilinearScore(int64_t query_dim, int64_t key_dim, int64_t rank, Generator& gen) {
    U = register_parameter("U", init::xavier_uniform({rank, query_dim}, gen));
    V = register_parameter("V", init::xavier_uniform({rank, key_dim}, gen));
    p = register_parameter("p", init::uniform_fan_in(Shape{rank}, rank, gen));
}

Var LowRankBilinearScore::score(const Var& queries, const Var& keys) {
    check_pair(id(), queries, keys);
    check_width(id(), "queries", queries, U.size(1));
    check_width(id(), "keys", keys, V.size(1));
    const Var Uq = tanh(matmul(queries, U, false, true));  // tanh(U q) for every query   B×m×r
    const Var Vk = tanh(matmul(keys, V, false, true));     // tanh(V k_l) for every key   B×n×r
    return matmul(Uq * p, Vk, false, true);                // e_l = pᵀ(tanh(U q) ∘ tanh(V k_l))   B×m×n
}

// ---- Luong's location score ------------------------------------------------------------------

LocationScore::LocationScore(int64_t query_dim, int64_t max_length, Generator& gen) {
    if (max_length <= 0)
        throw std::invalid_argument("location_score: needs a maximum source length > 0, got " +
                                    std::to_string(max_length));
    W_a = register_parameter("W_a", init::xavier_uniform({max_length, query_dim}, gen));
}

Var LocationScore::score(const Var& queries, const Var& keys) {
    check_pair(id(), queries, keys);
    check_width(id(), "queries", queries, W_a.size(1));
    const int64_t n = keys.size(1), n_max = W_a.size(0);
    if (n > n_max)
        throw std::invalid_argument(id() + ": keys " + keys.shape().str() + " are longer than the maximum length " +
                                    std::to_string(n_max) + " the score was built for");
    // W_a h_t, one score per source position, kept for the first n   B×m×n
    return slice(matmul(queries, W_a, false, true), 2, 0, n);
}

}  // namespace attn
