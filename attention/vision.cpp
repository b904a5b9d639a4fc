// Attention inside convolutional networks (entries 61–66): channel gates, spatial maps, self-attention over maps.
// The formulas, the papers and the shape legend are in attention/vision.hpp.
#include "attention/vision.hpp"

#include <algorithm>
#include <stdexcept>

#include "attention/pooling.hpp"

namespace attn {

namespace {

// U must be B×C×H×W with the module's C.
void check_map(const std::string& who, const Var& U, int64_t channels) {
    check_rank(who, "feature map", U, 4);
    if (channels > 0 && U.size(1) != channels)
        throw std::invalid_argument(who + ": feature map " + U.shape().str() + " has " + std::to_string(U.size(1)) +
                                    " channels but the module was built for " + std::to_string(channels));
}

int64_t reduced(int64_t channels, int64_t reduction) { return std::max<int64_t>(1, channels / reduction); }

// Gates B×C → B×C×1×1, to scale every pixel of a channel.
Var per_channel(const Var& gates) { return reshape(gates, {gates.size(0), gates.size(1), 1, 1}); }

}  // namespace

Var l2_normalize(const Var& x, int axis) { return div(x, l2_norm(x, axis)); }

// ---- 61 -----------------------------------------------------------------------------------

SqueezeExcitation::SqueezeExcitation(int64_t channels, int64_t reduction, Generator& gen, bool with_bias)
    : fc1(channels, reduced(channels, reduction), gen, with_bias),
      fc2(reduced(channels, reduction), channels, gen, with_bias) {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
}

AttentionOutput SqueezeExcitation::forward(const Var& U) {
    check_map(id(), U, fc1.in_features());
    // z_c = (1/HW) Σ_{i,j} U_c(i, j)                           B×C
    const Var z = mean(U, std::vector<int>{2, 3});
    // s = σ(W_2 ReLU(W_1 z))                                   B×C
    const Var s = sigmoid(fc2.forward(relu(fc1.forward(z))));
    // X̃_c = s_c U_c                                            B×C×H×W
    return {mul(U, per_channel(s)), s};
}

Taxonomy SqueezeExcitation::taxonomy() const {
    Taxonomy t;
    t.scoring = "additive";     // an MLP of the pooled features
    t.alignment = "sigmoid";    // independent gates, no softmax
    t.dimensionality = "multi";  // one weight per channel
    t.query = "self";
    return t;
}

// ---- 62 -----------------------------------------------------------------------------------

CbamChannelAttention::CbamChannelAttention(int64_t channels, int64_t reduction, Generator& gen, bool with_bias,
                                           bool use_max)
    : fc1(channels, reduced(channels, reduction), gen, with_bias),
      fc2(reduced(channels, reduction), channels, gen, with_bias),
      use_max_(use_max) {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
}

AttentionOutput CbamChannelAttention::forward(const Var& F) {
    check_map(id(), F, fc1.in_features());
    const int64_t B = F.size(0), C = F.size(1);
    auto mlp = [&](const Var& z) { return fc2.forward(relu(fc1.forward(z))); };
    // AvgPool(F) and MaxPool(F) over the pixels                 B×C
    const Var avg = mean(F, std::vector<int>{2, 3});
    Var energy = mlp(avg);
    if (use_max_) energy = add(energy, mlp(max(reshape(F, {B, C, -1}), -1)));
    // M_c = σ(MLP(avg) + MLP(max))                              B×C
    const Var gates = sigmoid(energy);
    return {mul(F, per_channel(gates)), gates};
}

Taxonomy CbamChannelAttention::taxonomy() const {
    Taxonomy t;
    t.alignment = "sigmoid";
    t.dimensionality = "multi";
    t.query = "self";
    return t;
}

// ---- 63 -----------------------------------------------------------------------------------

CbamSpatialAttention::CbamSpatialAttention(Generator& gen, int kernel_size, bool with_bias)
    : conv(2, 1, kernel_size, gen, 1, kernel_size / 2, with_bias) {
    if (kernel_size % 2 == 0)
        throw std::invalid_argument("cbam_spatial_attention: kernel size " + std::to_string(kernel_size) +
                                    " must be odd to keep H and W");
    register_module("conv", conv);
}

AttentionOutput CbamSpatialAttention::forward(const Var& F) {
    check_map(id(), F, 0);
    // [AvgPool_c(F); MaxPool_c(F)]: two maps pooled across channels     B×2×H×W
    const Var pooled = concat({mean(F, 1, true), max(F, 1, true)}, 1);
    // M_s = σ(conv_{k×k}(pooled))                                       B×1×H×W
    const Var map = sigmoid(conv.forward(pooled));
    return {mul(F, map), map};
}

Taxonomy CbamSpatialAttention::taxonomy() const {
    Taxonomy t;
    t.alignment = "sigmoid";
    t.query = "self";
    return t;
}

Cbam::Cbam(int64_t channels, int64_t reduction, Generator& gen, int kernel_size)
    : channel(channels, reduction, gen), spatial(gen, kernel_size) {
    register_module("channel", channel);
    register_module("spatial", spatial);
}

CbamOutput Cbam::forward(const Var& F) {
    const AttentionOutput c = channel.forward(F);
    const AttentionOutput s = spatial.forward(c.output);
    return {s.output, c.weights, s.weights};
}

// ---- 64 -----------------------------------------------------------------------------------

DanetPositionAttention::DanetPositionAttention(int64_t channels, Generator& gen, int64_t reduction)
    : query(channels, reduced(channels, reduction), 1, gen),
      key(channels, reduced(channels, reduction), 1, gen),
      value(channels, channels, 1, gen) {
    register_module("query", query);
    register_module("key", key);
    register_module("value", value);
    alpha = register_parameter("alpha", Tensor::zeros(Shape{1}));
}

AttentionOutput DanetPositionAttention::forward(const Var& A) {
    check_map(id(), A, query.in_channels());
    const int64_t B = A.size(0), C = A.size(1), H = A.size(2), W = A.size(3);
    // a 1×1 conv, flattened to one row per position                    B×N×C'
    auto rows = [&](Conv2d& conv) { return transpose(reshape(conv.forward(A), {B, conv.out_channels(), H * W}), 1, 2); };
    const Var Cq = rows(query), Bk = rows(key), D = rows(value);
    // S_ji = softmax_i(B_i · C_j)                                      B×N×N
    const Var S = softmax(matmul(Cq, Bk, false, true), -1);
    // Σ_i S_ji D_i, back to a map                                      B×C×H×W
    const Var context = reshape(transpose(matmul(S, D), 1, 2), {B, C, H, W});
    // E = α context + A
    return {add(mul(context, alpha), A), S};
}

Taxonomy DanetPositionAttention::taxonomy() const {
    Taxonomy t;
    t.scoring = "dot_score";
    t.query = "self";
    return t;
}

// ---- 65 -----------------------------------------------------------------------------------

DanetChannelAttention::DanetChannelAttention(EnergyMode mode) : mode_(mode) {
    beta = register_parameter("beta", Tensor::zeros(Shape{1}));
}

AttentionOutput DanetChannelAttention::forward(const Var& A) {
    check_map(id(), A, 0);
    const int64_t B = A.size(0), C = A.size(1);
    // one row per channel                                              B×C×N
    const Var rows = reshape(A, {B, C, -1});
    // energy_ji = A_i · A_j                                            B×C×C
    Var energy = matmul(rows, rows, false, true);
    // the released code: max_i(A_i·A_j) − A_i·A_j
    if (mode_ == EnergyMode::released_code) energy = sub(max(energy, -1, true), energy);
    // X_ji = softmax_i(energy_ji)                                      B×C×C
    const Var X = softmax(energy, -1);
    // E_j = β Σ_i X_ji A_i + A_j                                       B×C×H×W
    const Var context = reshape(matmul(X, rows), A.shape());
    return {add(mul(context, beta), A), X};
}

Taxonomy DanetChannelAttention::taxonomy() const {
    Taxonomy t;
    t.scoring = "dot_score";
    t.query = "self";
    return t;
}

// ---- 66 -----------------------------------------------------------------------------------

Var pyramid_aggregation(const Var& U, const Var& attention_map, const std::vector<int64_t>& levels,
                        PyramidAggregate aggregate) {
    const std::string who = "pyramid_aggregation_attention";
    check_map(who, U, 0);
    const int64_t B = U.size(0), C = U.size(1), H = U.size(2), W = U.size(3);
    if (attention_map.shape() != Shape{B, H, W})
        throw std::invalid_argument(who + ": attention map " + attention_map.shape().str() +
                                    " does not fit feature map " + U.shape().str() + " (needs B×H×W)");
    if (levels.empty()) throw std::invalid_argument(who + ": needs at least one pyramid level");
    // 𝒜(i, j) U_{:,i,j}                                                B×C×H×W
    const Var weighted = mul(U, unsqueeze(attention_map, 1));
    std::vector<Var> regions;
    for (int64_t b : levels) {
        if (b < 1 || b > H || b > W)
            throw std::invalid_argument(who + ": level " + std::to_string(b) + " needs 1 ≤ b ≤ H, W; map is " +
                                        U.shape().str());
        for (int64_t u = 0; u < b; ++u)
            for (int64_t v = 0; v < b; ++v) {
                const PyramidBin rows = pyramid_bin(u, b, H), cols = pyramid_bin(v, b, W);
                const Var region = slice(slice(weighted, 2, rows.start, rows.end), 3, cols.start, cols.end);
                // f_R = Σ_{(i,j)∈R} 𝒜(i, j) U_{:,i,j}, L2-normalised        B×C
                regions.push_back(l2_normalize(sum(region, std::vector<int>{2, 3}), 1));
            }
    }
    // Σ over regions and levels (or concatenation), L2-normalised again
    if (aggregate == PyramidAggregate::sum) return l2_normalize(sum(stack(regions, 1), 1), 1);
    // concat: within a level channel-major, (c, u, v), as SPP
    std::vector<Var> per_level;
    size_t next = 0;
    for (int64_t b : levels) {
        const std::vector<Var> bins(regions.begin() + static_cast<std::ptrdiff_t>(next),
                                    regions.begin() + static_cast<std::ptrdiff_t>(next + static_cast<size_t>(b * b)));
        next += static_cast<size_t>(b * b);
        per_level.push_back(reshape(stack(bins, 2), {B, C * b * b}));
    }
    return l2_normalize(concat(per_level, 1), 1);
}

PyramidAggregationAttention::PyramidAggregationAttention(int64_t channels, int64_t hidden, Generator& gen,
                                                         std::vector<int64_t> levels_, int64_t cascade,
                                                         PyramidAggregate aggregate)
    : levels(std::move(levels_)), aggregate_(aggregate) {
    if (cascade < 1)
        throw std::invalid_argument("pyramid_aggregation_attention: cascade " + std::to_string(cascade) +
                                    " needs at least one block");
    for (int64_t k = 0; k < cascade; ++k) {
        reduce.push_back(std::make_unique<Conv2d>(channels, hidden, 1, gen));
        score.push_back(std::make_unique<Conv2d>(hidden, 1, 1, gen));
        register_module("reduce" + std::to_string(k), *reduce.back());
        register_module("score" + std::to_string(k), *score.back());
    }
}

AttentionOutput PyramidAggregationAttention::forward(const Var& U) {
    check_map(id(), U, reduce.front()->in_channels());
    const int64_t B = U.size(0), H = U.size(2), W = U.size(3);
    // 𝒜_k = 𝒜_{k−1} ⊙ σ(conv(ReLU(conv(𝒜_{k−1} ⊙ U)))),  𝒜_0 ≡ 1       B×1×H×W
    Var map;
    for (size_t k = 0; k < reduce.size(); ++k) {
        const Var input = map.defined() ? mul(U, map) : U;
        const Var block = sigmoid(score[k]->forward(relu(reduce[k]->forward(input))));
        map = map.defined() ? mul(map, block) : block;
    }
    const Var flat_map = reshape(map, {B, H, W});
    return {pyramid_aggregation(U, flat_map, levels, aggregate_), flat_map};
}

Taxonomy PyramidAggregationAttention::taxonomy() const {
    Taxonomy t;
    t.levels = "multi";  // pyramid levels
    t.alignment = "sigmoid";
    t.query = "self";
    return t;
}

}  // namespace attn
