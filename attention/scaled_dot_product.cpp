// Entries 44, 45, 48 and 50, composed from autograd's primitives. The
// formulas and the shape legend are in attention/scaled_dot_product.hpp; each
// line below carries the formula it computes and the shape it produces.
#include "attention/scaled_dot_product.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "nn/init.hpp"
#include "tensor/ops.hpp"

namespace attn {

namespace {

SoftmaxMask keep(const Tensor& mask) { return mask.defined() ? SoftmaxMask::keep(mask) : SoftmaxMask{}; }

real inv_sqrt(int64_t d) { return real(1) / std::sqrt(static_cast<real>(d)); }

}  // namespace

// ---- entry 44: scaled_dot_product_attention ------------------------------------

void check_sdpa_inputs(const std::string& who, const Var& queries, const Var& keys, const Var& values) {
    if (!queries.defined() || !keys.defined() || !values.defined())
        throw std::invalid_argument(who + ": queries, keys and values must all be defined");
    const Shape &q = queries.shape(), &k = keys.shape(), &v = values.shape();
    const std::string shapes = "queries " + q.str() + ", keys " + k.str() + " and values " + v.str();
    const int R = q.rank();
    if (R < 2 || k.rank() != R || v.rank() != R)
        throw std::invalid_argument(who + ": " + shapes + " need the same rank, at least 2 (…×m×d_k, …×n×d_k, …×n×d_v)");
    for (int a = 0; a < R - 2; ++a)
        if (q[a] != k[a] || k[a] != v[a])
            throw std::invalid_argument(who + ": " + shapes + " need the same leading (batch) axes");
    if (q[R - 1] != k[R - 1] || q[R - 1] == 0)
        throw std::invalid_argument(who + ": " + shapes + " need the same non-zero width d_k of queries and keys");
    if (k[R - 2] != v[R - 2])
        throw std::invalid_argument(who + ": " + shapes + " need as many keys as values");
}

AttentionOutput scaled_dot_product_attention(const Var& queries, const Var& keys, const Var& values,
                                             const Tensor& mask, bool causal) {
    check_sdpa_inputs("scaled_dot_product_attention", queries, keys, values);
    const int64_t m = queries.size(-2), n = keys.size(-2), d_k = queries.size(-1);
    const Tensor M = combine_masks(mask, causal ? causal_mask(m, n) : Tensor());
    // K, V with their non-finite entries set aside (0 in the products, NaN put
    // back below only where a query may see them): FiniteKeysValues
    const FiniteKeysValues kv = finite_keys_values(keys, values);
    // and a query that may attend no key zeroed, so that nothing it holds reaches dK
    const Var Q = hide_fully_masked_queries(queries, M);
    // E = Q Kᵀ / √d_k, computed as (Q / √d_k) Kᵀ: the m×d_k queries are
    // scaled rather than the m×n scores                                  …×m×n
    const Var scores = nan_at_bad_keys(matmul(Q * inv_sqrt(d_k), kv.keys, false, true), kv.bad_keys);
    // A = softmax_row(E + M), M applied by selection                     …×m×n
    const Var weights = softmax(scores, -1, keep(M));
    // Attn = A V                                                        …×m×d_v
    return {nan_at_seen_bad_values(matmul(weights, kv.values), mask, causal, kv.bad_values), weights};
}

Var split_heads(const Var& x, int64_t heads) {
    return permute(reshape(x, {x.size(0), x.size(1), heads, x.size(2) / heads}), {0, 2, 1, 3});
}

Var concat_heads(const Var& heads) {
    const int64_t B = heads.size(0), h = heads.size(1), m = heads.size(2), w = heads.size(3);
    return reshape(permute(heads, {0, 2, 1, 3}), {B, m, h * w});
}

Tensor mask_for_heads(const Tensor& mask) {
    if (!mask.defined() || mask.rank() != 3) return mask;
    return mask.reshape(Shape{mask.size(0), 1, mask.size(1), mask.size(2)});  // B×1×m×n
}

// ---- entry 45: restricted_self_attention -----------------------------------------

namespace {

// A window of radius r holds 2r + 1 positions: a radius past (2⁶³ − 2)/2
// would overflow that count (signed overflow, undefined) and reach Shape as a
// "negative dimension". Refused here, in the caller's terms.
void check_radius(const std::string& who, const char* name, int64_t r) {
    constexpr int64_t most = (std::numeric_limits<int64_t>::max() - 1) / 2;
    if (r < 0 || r > most)
        throw std::invalid_argument(who + ": the radius " + name + " = " + std::to_string(r) +
                                    " must be in [0, " + std::to_string(most) + "] (the window 2" + name +
                                    "+1 must fit in int64)");
}

// Row i of the result is the window (x_{i−r}, …, x_{i+r}) of x, zero rows past
// either end: x B×n×d → B×n×(2r+1)×d.
Var windows(const Var& x, int64_t r) {
    const int64_t B = x.size(0), n = x.size(1), d = x.size(2);
    const Var zeros(Tensor::zeros(Shape{B, r, d}));
    const Var padded = r > 0 ? concat({zeros, x, zeros}, 1) : x;  // B×(n+2r)×d
    std::vector<Var> shifted;
    for (int64_t o = 0; o <= 2 * r; ++o) shifted.push_back(slice(padded, 1, o, o + n));  // row i: x_{i+o−r}
    return stack(shifted, 2);
}

// B×n×(2r+1): 1 where key i + o − r lies inside the sequence (and the padding
// mask keeps it).
Tensor window_mask(int64_t B, int64_t n, int64_t r, const Tensor& key_padding) {
    const int64_t w = 2 * r + 1;
    Tensor mask = Tensor::zeros(Shape{B, n, w});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < n; ++i)
            for (int64_t o = 0; o < w; ++o) {
                const int64_t j = i + o - r;
                const bool inside = j >= 0 && j < n;
                mask[(b * n + i) * w + o] = inside && (!key_padding.defined() || key_padding[b * n + j] != 0) ? 1 : 0;
            }
    return mask;
}

}  // namespace

AttentionOutput restricted_self_attention(const Var& queries_in, const Var& keys_in, const Var& values_in, int64_t r,
                                          const Tensor& key_padding) {
    const std::string who = "restricted_self_attention";
    check_qkv(who, queries_in, keys_in, values_in);
    const int64_t B = queries_in.size(0), n = queries_in.size(1), d_k = queries_in.size(2), d_v = values_in.size(2);
    if (keys_in.size(1) != n || keys_in.size(2) != d_k)
        throw std::invalid_argument(who + ": queries " + queries_in.shape().str() + " and keys " +
                                    keys_in.shape().str() + " need the same positions and width (self-attention)");
    check_radius(who, "r", r);
    if (key_padding.defined() && key_padding.shape() != Shape{B, n})
        throw std::invalid_argument(who + ": key_padding " + key_padding.shape().str() + " must be B×n = " +
                                    Shape{B, n}.str());
    const int64_t w = 2 * r + 1;
    const Tensor window_keep = window_mask(B, n, r, key_padding);  // B×n×(2r+1)
    // padded keys and values, and queries whose window keeps nothing, zeroed
    // (by selection) before the windows' products read them
    const Tensor keep = key_padding.defined() ? key_mask(key_padding) : Tensor();
    const Var keys = hide_unseen_keys(keys_in, keep), values = hide_unseen_keys(values_in, keep);
    const Var queries = hide_fully_masked_queries(queries_in, window_keep);
    // W_i = (k_{i−r}, …, k_{i+r}),  W^V_i = (v_{i−r}, …, v_{i+r})          B×n×(2r+1)×d
    const Var key_windows = windows(keys, r), value_windows = windows(values, r);
    // e_i = W_i q_i / √d_k                                                B×n×(2r+1)
    const Var scores = reshape(matmul(key_windows, unsqueeze(queries, -1)), {B, n, w}) * inv_sqrt(d_k);
    // a_i = softmax(e_i) over the window's keys inside the sequence       B×n×(2r+1)
    const Var weights = softmax(scores, -1, SoftmaxMask::keep(window_keep));
    // y_i = W^Vᵢᵀ a_i                                                     B×n×d_v
    const Var output = reshape(matmul(unsqueeze(weights, 2), value_windows), {B, n, d_v});
    return {output, weights};
}

Tensor band_to_dense(const Tensor& band_weights, int64_t r) {
    check_radius("band_to_dense", "r", r);
    if (band_weights.rank() != 3 || band_weights.size(2) != 2 * r + 1)
        throw std::invalid_argument("band_to_dense: band weights " + band_weights.shape().str() +
                                    " must be B×n×(2r+1) with r = " + std::to_string(r));
    const int64_t B = band_weights.size(0), n = band_weights.size(1), w = 2 * r + 1;
    Tensor dense = Tensor::zeros(Shape{B, n, n});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < n; ++i)
            for (int64_t o = 0; o < w; ++o) {
                const int64_t j = i + o - r;
                if (j >= 0 && j < n) dense[(b * n + i) * n + j] = band_weights[(b * n + i) * w + o];
            }
    return dense;
}

// ---- entry 48: relative_position_self_attention -----------------------------------

RelativePositionSelfAttention::RelativePositionSelfAttention(int64_t d, int64_t d_z, int64_t k, Generator& gen)
    : d_(d), d_z_(d_z), k_(k) {
    if (d <= 0 || d_z <= 0 || k < 0)
        throw std::invalid_argument(id() + ": needs d > 0, d_z > 0 and k >= 0, got d = " + std::to_string(d) +
                                    ", d_z = " + std::to_string(d_z) + ", k = " + std::to_string(k));
    check_radius(id(), "k", k);
    W_Q = register_parameter("W_Q", init::xavier_uniform(Shape{d, d_z}, gen));
    W_K = register_parameter("W_K", init::xavier_uniform(Shape{d, d_z}, gen));
    W_V = register_parameter("W_V", init::xavier_uniform(Shape{d, d_z}, gen));
    w_K = register_parameter("w_K", init::xavier_uniform(Shape{2 * k + 1, d_z}, gen));
    w_V = register_parameter("w_V", init::xavier_uniform(Shape{2 * k + 1, d_z}, gen));
}

Tensor RelativePositionSelfAttention::relative_index(int64_t n) const {
    Tensor R = Tensor::empty(Shape{n, n});
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) R[i * n + j] = static_cast<real>(std::max(-k_, std::min(k_, j - i)) + k_);
    return R;
}

AttentionOutput RelativePositionSelfAttention::forward(const Var& x, const Tensor& mask) {
    check_rank(id(), "x", x, 3);
    if (x.size(2) != d_)
        throw std::invalid_argument(id() + ": x " + x.shape().str() + " needs width d = " + std::to_string(d_));
    const int64_t n = x.size(1);
    // padded positions zeroed (by selection) before W^K and W^V read them, and
    // a position that may attend nothing before W^Q (attention/padding.hpp)
    const Var x_q = hide_fully_masked_queries(x, mask), x_kv = hide_unseen_keys(x, mask);
    // Q = X W^Q,  K = X W^K,  V = X W^V                                  B×n×d_z
    const Var Q = matmul(x_q, W_Q), K = matmul(x_kv, W_K), V = matmul(x_kv, W_V);
    // a^K_ij = w^K[clip(j − i, k) + k],  a^V_ij likewise                 n×n×d_z
    const Var aK = relative_keys(n), aV = relative_values(n);
    // e_ij = (q_i·k_j + q_i·a^K_ij) / √d_z. The second term is a product
    // batched over i: (Q as n×B×d_z)·(a^K_i as d_z×n) → n×B×n → B×n×n.
    const Var relative_scores = permute(matmul(permute(Q, {1, 0, 2}), aK, false, true), {1, 0, 2});
    const Var scores = (matmul(Q, K, false, true) + relative_scores) * inv_sqrt(d_z_);
    // α_ij = softmax_j(e_ij)                                            B×n×n
    const Var weights = softmax(scores, -1, keep(mask));
    // z_i = Σ_j α_ij v_j + Σ_j α_ij a^V_ij, the second term batched over i:
    // (α as n×B×n)·(a^V_i n×d_z) → n×B×d_z → B×n×d_z.
    const Var relative_values_term = permute(matmul(permute(weights, {1, 0, 2}), aV), {1, 0, 2});
    return {matmul(weights, V) + relative_values_term, weights};
}

Taxonomy RelativePositionSelfAttention::taxonomy() const {
    Taxonomy t;
    t.scoring = "scaled_dot_score";
    t.query = "self";
    return t;
}

// ---- entry 50: random_synthesizer_attention ----------------------------------------

RandomSynthesizerAttention::RandomSynthesizerAttention(int64_t n_max, int64_t d, int64_t d_v, Generator& gen)
    : n_max_(n_max), d_(d) {
    if (n_max <= 0 || d <= 0 || d_v <= 0)
        throw std::invalid_argument(id() + ": needs n_max, d and d_v > 0, got " + std::to_string(n_max) + ", " +
                                    std::to_string(d) + ", " + std::to_string(d_v));
    R = register_parameter("R", init::xavier_uniform(Shape{n_max, n_max}, gen));
    W_V = register_parameter("W_V", init::xavier_uniform(Shape{d_v, d}, gen));
}

AttentionOutput RandomSynthesizerAttention::forward(const Var& x, const Tensor& mask) {
    check_rank(id(), "x", x, 3);
    const int64_t B = x.size(0), n = x.size(1);
    if (n > n_max_ || x.size(2) != d_)
        throw std::invalid_argument(id() + ": x " + x.shape().str() + " needs at most n_max = " +
                                    std::to_string(n_max_) + " positions of width d = " + std::to_string(d_));
    // R_{0:n,0:n}, the same for every example                          B×n×n
    const Var R_n = expand(unsqueeze(slice(slice(R, 0, 0, n), 1, 0, n), 0), Shape{B, n, n});
    // A = softmax_row(R_n + M)                                          B×n×n
    const Var weights = softmax(R_n, -1, keep(mask));
    // Y = A (X W_Vᵀ), padded rows of X zeroed (by selection) first      B×n×d_v
    return {matmul(weights, matmul(hide_unseen_keys(x, mask), W_V, false, true)), weights};
}

Taxonomy RandomSynthesizerAttention::taxonomy() const {
    Taxonomy t;
    t.scoring = "learned_weights";  // no score function: R is the scores
    t.query = "self";
    return t;
}

}  // namespace attn
