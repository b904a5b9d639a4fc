// Pooling, set functions and GRU gates (entries 74–80): what attention is compared with.
// The formulas, the papers and the shape legend are in attention/pooling.hpp.
#include "attention/pooling.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "nn/init.hpp"
#include "tensor/ops.hpp"

namespace attn {

namespace {

void check_set(const std::string& who, const Var& X, const Tensor& mask) {
    check_rank(who, "set", X, 3);
    if (mask.defined() && mask.shape() != Shape{X.size(0), X.size(1)})
        throw std::invalid_argument(who + ": set " + X.shape().str() + " needs a B×n mask, got " + mask.shape().str());
}

// The kept positions of row b of a B×n mask (all of them without a mask).
std::vector<int64_t> kept_positions(const Tensor& mask, int64_t b, int64_t n) {
    std::vector<int64_t> kept;
    for (int64_t i = 0; i < n; ++i)
        if (!mask.defined() || mask[b * n + i] != 0) kept.push_back(i);
    return kept;
}

// B×n mask → B×n×1, to broadcast over the features.
Tensor per_row(const Tensor& mask) { return reshape(mask, {mask.size(0), mask.size(1), 1}); }

// A B×n mask with, for each row, the given positions kept.
Tensor mask_of(const std::vector<std::vector<int64_t>>& positions, int64_t n) {
    const auto B = static_cast<int64_t>(positions.size());
    Tensor m = Tensor::zeros({B, n});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i : positions[static_cast<size_t>(b)]) m[b * n + i] = 1;
    return m;
}

}  // namespace

// ---- 74 -----------------------------------------------------------------------------------

Var sum_pooling(const Var& X, const Tensor& mask) {
    check_set("sum_pooling", X, mask);
    // Σ_i m_i X_i, the dropped rows zeroed by selection first            B×d
    return sum(mask.defined() ? mul(hide_padded_rows("sum_pooling", X, mask), Var(per_row(mask))) : X, 1);
}

Var mean_pooling(const Var& X, const Tensor& mask) {
    check_set("mean_pooling", X, mask);
    if (!mask.defined()) return mean(X, 1);
    // (1/n_kept) Σ_i m_i X_i; an empty set divides 0 by 1              B×d
    const Tensor count = maximum(sum(mask, 1, true), Tensor::ones({mask.size(0), 1}));
    return div(sum_pooling(X, mask), Var(count));
}

Var max_pooling(const Var& X, const Tensor& mask) {
    check_set("max_pooling", X, mask);
    if (!mask.defined()) return max(X, 1);
    // dropped rows become the lowest real (a selection, whatever they held),
    // so they never win a max
    const Tensor dropped = per_row(sub(Tensor::ones(mask.shape()), mask));
    const Var best = max(masked_fill(X, dropped, std::numeric_limits<real>::lowest()), 1);
    // an empty set gives 0                                             B×d
    const Tensor any_kept = gt(sum(mask, 1, true), Tensor::zeros({mask.size(0), 1}));
    return where(any_kept, best, Var(Tensor::zeros(best.shape())));
}

SumMeanMaxPooled sum_mean_max_pooling(const Var& X, const Tensor& mask) {
    return {sum_pooling(X, mask), mean_pooling(X, mask), max_pooling(X, mask)};
}

// ---- 75 -----------------------------------------------------------------------------------

Var k_max_pooling(const Var& X, int64_t k, const Tensor& mask) {
    const std::string who = "k_max_pooling";
    check_set(who, X, mask);
    if (k < 1) throw std::invalid_argument(who + ": k = " + std::to_string(k) + " must be at least 1");
    const int64_t B = X.size(0), n = X.size(1), d = X.size(2);
    const Tensor& x = X.value();
    // Which rows each column keeps: index[b, j, c] and whether slot j is filled.
    Tensor index = Tensor::zeros({B, k, d}), filled = Tensor::zeros({B, k, d});
    for (int64_t b = 0; b < B; ++b) {
        const std::vector<int64_t> kept = kept_positions(mask, b, n);
        for (int64_t c = 0; c < d; ++c) {
            std::vector<int64_t> rows = kept;
            // largest first; stable, so on a tie the earlier row comes first
            std::stable_sort(rows.begin(), rows.end(),
                             [&](int64_t i, int64_t j) { return x[(b * n + i) * d + c] > x[(b * n + j) * d + c]; });
            rows.resize(std::min<size_t>(rows.size(), static_cast<size_t>(k)));
            std::sort(rows.begin(), rows.end());  // back in their original order
            for (size_t j = 0; j < rows.size(); ++j) {
                const int64_t at = (b * k + static_cast<int64_t>(j)) * d + c;
                index[at] = static_cast<real>(rows[j]);
                filled[at] = 1;
            }
        }
    }
    // out[b, j, c] = X[b, index[b, j, c], c], zero where no row is left   B×k×d
    return mul(gather(X, 1, index), Var(filled));
}

int64_t dynamic_k(int64_t k_top, int64_t layer, int64_t num_layers, int64_t length) {
    if (num_layers < 1 || layer < 0 || layer > num_layers)
        throw std::invalid_argument("dynamic_k: layer " + std::to_string(layer) + " of " + std::to_string(num_layers) +
                                    " is out of range");
    // ⌈(L − ℓ)/L · s⌉ in integers
    const int64_t scaled = ((num_layers - layer) * length + num_layers - 1) / num_layers;
    return std::max(k_top, scaled);
}

// ---- 76 -----------------------------------------------------------------------------------

Var chunk_max_pooling(const Var& X, int64_t chunks, const Tensor& mask) {
    const std::string who = "chunk_max_pooling";
    check_set(who, X, mask);
    if (chunks < 1) throw std::invalid_argument(who + ": " + std::to_string(chunks) + " chunks: need at least 1");
    const int64_t B = X.size(0), n = X.size(1);
    // chunk_positions[j][b]: the positions of chunk j in sequence b
    std::vector<std::vector<std::vector<int64_t>>> chunk_positions(
        static_cast<size_t>(chunks), std::vector<std::vector<int64_t>>(static_cast<size_t>(B)));
    for (int64_t b = 0; b < B; ++b) {
        const std::vector<int64_t> kept = kept_positions(mask, b, n);
        const auto L = static_cast<int64_t>(kept.size());
        int64_t next = 0;
        for (int64_t j = 0; j < chunks; ++j) {
            // the first L mod c chunks are one longer
            const int64_t size = L / chunks + (j < L % chunks ? 1 : 0);
            auto& chunk = chunk_positions[static_cast<size_t>(j)][static_cast<size_t>(b)];
            for (int64_t i = next; i < next + size; ++i) chunk.push_back(kept[static_cast<size_t>(i)]);
            next += size;
        }
    }
    // max over each chunk, side by side                                B×c×d
    std::vector<Var> pooled;
    for (const auto& positions : chunk_positions) pooled.push_back(max_pooling(X, mask_of(positions, n)));
    return stack(pooled, 1);
}

Var chunk_max_pooling(const Var& X, const std::vector<int64_t>& boundaries) {
    const std::string who = "chunk_max_pooling";
    check_set(who, X, {});
    const int64_t n = X.size(1);
    bool valid = boundaries.size() >= 2 && boundaries.front() == 0 && boundaries.back() == n;
    for (size_t j = 1; valid && j < boundaries.size(); ++j) valid = boundaries[j - 1] < boundaries[j];
    if (!valid)
        throw std::invalid_argument(who + ": boundaries must rise strictly from 0 to n = " + std::to_string(n) +
                                    " for set " + X.shape().str());
    std::vector<Var> pooled;
    for (size_t j = 0; j + 1 < boundaries.size(); ++j)
        pooled.push_back(max(slice(X, 1, boundaries[j], boundaries[j + 1]), 1));
    return stack(pooled, 1);
}

// ---- 77 -----------------------------------------------------------------------------------

Var stochastic_pooling(const Var& U, Size2 kernel, Size2 stride, Generator& gen, bool training) {
    const std::string who = "stochastic_pooling";
    check_rank(who, "feature map", U, 4);
    const Tensor& u = U.value();
    for (int64_t i = 0; i < u.numel(); ++i)
        if (u[i] < 0)
            throw std::invalid_argument(who + ": feature map " + U.shape().str() +
                                        " has a negative value; it needs nonnegative activations (after ReLU)");
    if (stride.h == 0) stride.h = kernel.h;
    if (stride.w == 0) stride.w = kernel.w;
    const int64_t B = U.size(0), C = U.size(1);
    const int64_t Ho = (U.size(2) - kernel.h) / stride.h + 1, Wo = (U.size(3) - kernel.w) / stride.w + 1;
    const int64_t K = int64_t{kernel.h} * kernel.w;
    // the windows, one per row: a[b, c, l, i] is element i of window l   B×C×L×K
    const Var a = permute(reshape(unfold(U, kernel, stride), {B, C, K, Ho * Wo}), {0, 1, 3, 2});
    const Var total = sum(a, -1, true);  // Σ_k a_k                     B×C×L×1
    const Tensor empty = eq(total.value(), Tensor::zeros(total.shape()));  // all-zero windows
    Var pooled;
    if (training) {
        // l ~ Multinomial(a / Σ a): sample_categorical normalises; an all-zero
        // window samples uniformly (every element is 0 there anyway)
        const Tensor probs = add(a.value(), expand(empty, a.shape()));
        const Tensor pick = one_hot(sample_categorical(probs, gen), K);
        // s = a_l                                                      B×C×L
        pooled = sum(mul(a, Var(pick)), -1);
    } else {
        // s = Σ_i p_i a_i = Σ_i a_i² / Σ_k a_k; an all-zero window gives 0/1 = 0
        pooled = squeeze(div(sum(square(a), -1, true), add(total, Var(empty))), -1);
    }
    return reshape(pooled, {B, C, Ho, Wo});
}

// ---- 78 -----------------------------------------------------------------------------------

PyramidBin pyramid_bin(int64_t u, int64_t b, int64_t a) {
    // ⌊u·a/b⌋ … ⌈(u+1)·a/b⌉ − 1
    return {u * a / b, ((u + 1) * a + b - 1) / b};
}

Var spatial_pyramid_pooling(const Var& U, const std::vector<int64_t>& levels) {
    const std::string who = "spatial_pyramid_pooling";
    check_rank(who, "feature map", U, 4);
    if (levels.empty()) throw std::invalid_argument(who + ": needs at least one pyramid level");
    const int64_t B = U.size(0), C = U.size(1), H = U.size(2), W = U.size(3);
    std::vector<Var> per_level;
    for (int64_t b : levels) {
        if (b < 1 || b > H || b > W)
            throw std::invalid_argument(who + ": level " + std::to_string(b) + " needs 1 ≤ b ≤ H, W; map is " +
                                        U.shape().str());
        std::vector<Var> bins;
        for (int64_t u = 0; u < b; ++u)
            for (int64_t v = 0; v < b; ++v) {
                const PyramidBin rows = pyramid_bin(u, b, H), cols = pyramid_bin(v, b, W);
                const Var region = slice(slice(U, 2, rows.start, rows.end), 3, cols.start, cols.end);
                // the max of bin (u, v)                                    B×C
                bins.push_back(max(reshape(region, {B, C, -1}), -1));
            }
        // B×C×b² → B×(C·b²)
        per_level.push_back(reshape(stack(bins, 2), {B, C * b * b}));
    }
    return concat(per_level, 1);
}

// ---- 79 -----------------------------------------------------------------------------------

namespace {

Var aggregate_set(const Var& X, const Tensor& mask, SetAggregate how) {
    switch (how) {
        case SetAggregate::sum: return sum_pooling(X, mask);
        case SetAggregate::mean: return mean_pooling(X, mask);
        case SetAggregate::max: return max_pooling(X, mask);
    }
    throw std::invalid_argument("deep_sets_pooling: unknown aggregate");
}

}  // namespace

DeepSetsPooling::DeepSetsPooling(int64_t in_dim, int64_t hidden, int64_t out_dim, Generator& gen,
                                 SetAggregate aggregate)
    : phi1(in_dim, hidden, gen), phi2(hidden, hidden, gen), rho1(hidden, hidden, gen), rho2(hidden, out_dim, gen),
      aggregate_(aggregate) {
    register_module("phi1", phi1);
    register_module("phi2", phi2);
    register_module("rho1", rho1);
    register_module("rho2", rho2);
}

Var DeepSetsPooling::forward(const Var& X_in, const Tensor& mask) {
    check_set(id(), X_in, mask);
    if (X_in.size(2) != phi1.in_features())
        throw std::invalid_argument(id() + ": set " + X_in.shape().str() + " needs items of width " +
                                    std::to_string(phi1.in_features()));
    const Var X = hide_padded_rows(id(), X_in, mask);  // before φ reads them: φ(NaN) is NaN, as are φ's gradients
    // φ(x_i) for every item                                           B×n×h
    const Var phi = relu(phi2.forward(relu(phi1.forward(X))));
    // ⊕_i φ(x_i)                                                      B×h
    const Var pooled = aggregate_set(phi, mask, aggregate_);
    // ρ(·)                                                            B×d_out
    return rho2.forward(relu(rho1.forward(pooled)));
}

Taxonomy DeepSetsPooling::taxonomy() const {
    Taxonomy t;
    t.scoring = "none";       // every item counts alike
    t.alignment = "uniform";  // sum, mean or max: a fixed rule, no learned weights
    t.query = "self";
    return t;
}

DeepSetsEquivariant::DeepSetsEquivariant(int64_t in_dim, int64_t out_dim, Generator& gen, SetAggregate aggregate)
    : aggregate_(aggregate) {
    Lambda = register_parameter("Lambda", init::uniform_fan_in(Shape{in_dim, out_dim}, in_dim, gen));
    Gamma = register_parameter("Gamma", init::uniform_fan_in(Shape{in_dim, out_dim}, in_dim, gen));
}

Var DeepSetsEquivariant::forward(const Var& X_in, const Tensor& mask) {
    check_set("deep_sets_equivariant", X_in, mask);
    const Var X = hide_padded_rows("deep_sets_equivariant", X_in, mask);  // before Λ and Γ read them
    // X Λ                                                             B×n×d'
    const Var own = matmul(X, Lambda);
    // 1 1ᵀ X Γ: the set's sum (or max) times Γ, added to every row     B×1×d'
    const Var shared = unsqueeze(matmul(aggregate_set(X, mask, aggregate_), Gamma), 1);
    const Var Y = tanh(add(own, shared));
    return mask.defined() ? mul(Y, Var(per_row(mask))) : Y;
}

// ---- 80 -----------------------------------------------------------------------------------

GruGating::GruGating(int64_t input_dim, int64_t hidden_dim, Generator& gen)
    : W_z(input_dim, hidden_dim, gen), W_r(input_dim, hidden_dim, gen), W(input_dim, hidden_dim, gen),
      U_z(hidden_dim, hidden_dim, gen, false), U_r(hidden_dim, hidden_dim, gen, false),
      U(hidden_dim, hidden_dim, gen, false), hidden_dim_(hidden_dim) {
    register_module("W_z", W_z);
    register_module("W_r", W_r);
    register_module("W", W);
    register_module("U_z", U_z);
    register_module("U_r", U_r);
    register_module("U", U);
}

GruGating::Step GruGating::step(const Var& x, const Var& h) {
    // z_t = σ(W_z x_t + U_z h_{t−1} + b_z)                            B×d_h
    const Var z = sigmoid(add(W_z.forward(x), U_z.forward(h)));
    // r_t = σ(W_r x_t + U_r h_{t−1} + b_r)
    const Var r = sigmoid(add(W_r.forward(x), U_r.forward(h)));
    // h̃_t = tanh(W x_t + U (r_t ⊙ h_{t−1}) + b)
    const Var candidate = tanh(add(W.forward(x), U.forward(mul(r, h))));
    // h_t = (1 − z_t) ⊙ h_{t−1} + z_t ⊙ h̃_t
    return {add(mul(1 - z, h), mul(z, candidate)), z, r};
}

GruGatingOutput GruGating::forward(const Var& X, const Var& h0, const Tensor& mask) {
    check_rank(id(), "inputs", X, 3);
    const int64_t B = X.size(0), T = X.size(1);
    if (X.size(2) != W.in_features())
        throw std::invalid_argument(id() + ": inputs " + X.shape().str() + " need width " +
                                    std::to_string(W.in_features()));
    if (h0.defined() && h0.shape() != Shape{B, hidden_dim_})
        throw std::invalid_argument(id() + ": h0 " + h0.shape().str() + " does not fit inputs " + X.shape().str() +
                                    " (needs B×" + std::to_string(hidden_dim_) + ")");
    if (mask.defined() && mask.shape() != Shape{B, T})
        throw std::invalid_argument(id() + ": inputs " + X.shape().str() + " need a B×T mask, got " +
                                    mask.shape().str());
    // Masked steps zeroed (by selection) before the gates read them: the state
    // is kept by selection below, but W's gradient would still get x_t·0 = NaN.
    const Var inputs = hide_padded_rows(id(), X, mask);
    Var h = h0.defined() ? h0 : Var(Tensor::zeros({B, hidden_dim_}));
    std::vector<Var> states, zs, rs;
    for (int64_t t = 0; t < T; ++t) {
        Step s = step(squeeze(narrow(inputs, 1, t, 1), 1), h);
        if (mask.defined()) {
            // a masked step keeps the state and shows zero gates
            const Tensor keep = reshape(slice(mask, 1, t, t + 1), {B, 1});
            s.h = where(keep, s.h, h);
            s.z = mul(s.z, Var(keep));
            s.r = mul(s.r, Var(keep));
        }
        h = s.h;
        states.push_back(s.h);
        zs.push_back(s.z);
        rs.push_back(s.r);
    }
    return {stack(states, 1), stack(zs, 1), stack(rs, 1)};
}

Taxonomy GruGating::taxonomy() const {
    Taxonomy t;
    t.alignment = "sigmoid";     // gates, no competition between positions
    t.dimensionality = "multi";  // one gate per feature
    t.query = "self";
    return t;
}

}  // namespace attn
