// The independent references of catalog entries 61–66 (CNN / vision attention;
// attention/vision.hpp): each formula written again in plain loops over b, c,
// h, w with only tests/grad/reference.hpp and <cmath>, reading the module's
// parameters from r.p by name in their PyTorch layouts (Linear out×in, Conv2d
// O×C×kh×kw). They share nothing with attention/, nn/ or autograd/: a wrong op
// there cannot agree with them. Declared in test_vision_reference.hpp; the
// registry entries are in test_vision.cpp. Flattened positions are p = h·W + w.
#include "tests/grad/test_vision_reference.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace attn::testing {

// ---- shared pieces of the references ---------------------------------------------------------

namespace {

// (testing::apply below: a bare each(vector, f) would also find std::apply by ADL.)

// The parameter `name`, which must have the catalog's shape: a module built
// with other sizes (a wrong C/r, a wrong kernel) fails here instead of
// agreeing with a reference that read its sizes from the module.
Array parameter(const Ref& r, const std::string& name, const std::vector<int64_t>& shape) {
    Array a = r.p[name];
    if (a.shape() != shape) {
        std::string want;
        for (size_t i = 0; i < shape.size(); ++i) want += (i ? "×" : "") + std::to_string(shape[i]);
        throw std::runtime_error("reference: " + name + " is " + a.shape_str() + ", the catalog says " + want);
    }
    return a;
}

// The hidden width C/r of a channel reduction, at least 1.
int64_t reduced(int64_t C, int64_t r) { return std::max<int64_t>(1, C / r); }

// y = W x + b for a Linear layer read as W out×in, b out (no b: with_bias false).
struct Dense {
    Array W;
    Vec b;
    Vec operator()(const Vec& x) const { return b.empty() ? matvec(W, x) : add(matvec(W, x), b); }
};
Dense dense(const Ref& r, const std::string& name, int64_t out, int64_t in, bool bias) {
    return {parameter(r, name + ".weight", {out, in}), bias ? vec(r.p[name + ".bias"]) : Vec{}};
}

// A 1×1 convolution at one pixel: y_o = bias_o + Σ_c weight[o, c, 0, 0] · x_c.
struct Conv1x1 {
    Array weight;  // O×C×1×1
    Vec bias;      // O
    Vec operator()(const Vec& x) const {
        Vec y = bias;
        for (int64_t o = 0; o < weight.size(0); ++o)
            for (int64_t c = 0; c < weight.size(1); ++c) y[size_t(o)] += weight(o, c, 0, 0) * x[size_t(c)];
        return y;
    }
};
Conv1x1 conv1x1(const Ref& r, const std::string& name, int64_t out, int64_t in) {
    return {parameter(r, name + ".weight", {out, in, 1, 1}), vec(r.p[name + ".bias"])};
}

// The vector of channel values at pixel (h, w): X[b, :, h, w].
Vec pixel(const Array& X, int64_t b, int64_t h, int64_t w) {
    Vec v(static_cast<size_t>(X.size(1)));
    for (int64_t c = 0; c < X.size(1); ++c) v[size_t(c)] = X(b, c, h, w);
    return v;
}

// out[b, c, h, w] = gates[b, c] · U[b, c, h, w]
Array scale_channels(const Array& U, const Array& gates) {
    Array out(U.shape());
    for (int64_t b = 0; b < U.size(0); ++b)
        for (int64_t c = 0; c < U.size(1); ++c)
            for (int64_t h = 0; h < U.size(2); ++h)
                for (int64_t w = 0; w < U.size(3); ++w) out(b, c, h, w) = gates(b, c) * U(b, c, h, w);
    return out;
}

}  // namespace

// ---- 61 and 62: channel gates --------------------------------------------------------------

namespace {

// σ(MLP(mean of channel c) [+ MLP(max of channel c)]), MLP(z) = fc2(ReLU(fc1(z))):
// U B×C×H×W → gates B×C.
Array channel_gates(const Array& U, const Dense& fc1, const Dense& fc2, bool use_max) {
    const int64_t B = U.size(0), C = U.size(1), H = U.size(2), W = U.size(3);
    auto mlp = [&](const Vec& z) { return fc2(testing::each(fc1(z), relu)); };
    Array gates({B, C});
    for (int64_t b = 0; b < B; ++b) {
        Vec avg(size_t(C), 0.0), top(size_t(C), -INFINITY);
        for (int64_t c = 0; c < C; ++c) {
            for (int64_t h = 0; h < H; ++h)
                for (int64_t w = 0; w < W; ++w) {
                    avg[size_t(c)] += U(b, c, h, w) / double(H * W);
                    top[size_t(c)] = std::max(top[size_t(c)], U(b, c, h, w));
                }
        }
        const Vec energy = use_max ? add(mlp(avg), mlp(top)) : mlp(avg);
        set_row(gates, b, testing::each(energy, sigmoid));
    }
    return gates;
}

}  // namespace

// 61: z_c = (1/HW) Σ_{i,j} U_c(i, j);  s = σ(W_2 ReLU(W_1 z + b_1) + b_2);  X̃_c = s_c U_c
// U B×C×H×W, W_1 "fc1" (C/r)×C, W_2 "fc2" C×(C/r) → output B×C×H×W, weights s B×C.
std::vector<Expected> squeeze_excitation_reference(const Ref& r, int64_t reduction, bool bias) {
    const int64_t C = r.x[0].size(1), h = reduced(C, reduction);
    const Array gates = channel_gates(r.x[0], dense(r, "fc1", h, C, bias), dense(r, "fc2", C, h, bias), false);
    return {{"output", scale_channels(r.x[0], gates)}, {"weights", gates}};
}

// 62: M_c = σ(MLP(AvgPool(F)) + MLP(MaxPool(F))),  MLP(z) = W_1 ReLU(W_0 z + b_0) + b_1,
//     one MLP for both branches (so b_1 counts twice); without the max branch, 61's gate;
//     F' = M_c ⊗ F.  F B×C×H×W, W_0 "fc1", W_1 "fc2" → output B×C×H×W, weights M_c B×C.
std::vector<Expected> cbam_channel_attention_reference(const Ref& r, int64_t reduction, bool bias, bool use_max) {
    const int64_t C = r.x[0].size(1), h = reduced(C, reduction);
    const Array gates = channel_gates(r.x[0], dense(r, "fc1", h, C, bias), dense(r, "fc2", C, h, bias), use_max);
    return {{"output", scale_channels(r.x[0], gates)}, {"weights", gates}};
}

// ---- 63: the spatial map ---------------------------------------------------------------------

namespace {

// 63: P = [AvgPool_c(F); MaxPool_c(F)] (B×2×H×W, pooled across channels);
//     M_s(h, w) = σ(bias + Σ_{c<2} Σ_{u,v<k} K[0, c, u, v] · P[c, h − ⌊k/2⌋ + u, w − ⌊k/2⌋ + v]),
//     zero outside the map (padding ⌊k/2⌋);  F'' = M_s ⊗ F.  K 1×2×k×k → M_s B×1×H×W.
Array spatial_map(const Array& F, const Array& K, double bias) {
    const int64_t B = F.size(0), C = F.size(1), H = F.size(2), W = F.size(3), k = K.size(3), pad = k / 2;
    Array P({B, 2, H, W}), map({B, 1, H, W});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
            for (int64_t w = 0; w < W; ++w) {
                double total = 0, top = -INFINITY;
                for (int64_t c = 0; c < C; ++c) total += F(b, c, h, w), top = std::max(top, F(b, c, h, w));
                P(b, 0, h, w) = total / double(C);
                P(b, 1, h, w) = top;
            }
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
            for (int64_t w = 0; w < W; ++w) {
                double e = bias;
                for (int64_t c = 0; c < 2; ++c)
                    for (int64_t u = 0; u < k; ++u)
                        for (int64_t v = 0; v < k; ++v) {
                            const int64_t i = h - pad + u, j = w - pad + v;
                            if (i >= 0 && i < H && j >= 0 && j < W) e += K(0, c, u, v) * P(b, c, i, j);
                        }
                map(b, 0, h, w) = sigmoid(e);
            }
    return map;
}

// out[b, c, h, w] = map[b, 0, h, w] · F[b, c, h, w]
Array scale_pixels(const Array& F, const Array& map) {
    Array out(F.shape());
    for (int64_t b = 0; b < F.size(0); ++b)
        for (int64_t c = 0; c < F.size(1); ++c)
            for (int64_t h = 0; h < F.size(2); ++h)
                for (int64_t w = 0; w < F.size(3); ++w) out(b, c, h, w) = map(b, 0, h, w) * F(b, c, h, w);
    return out;
}

}  // namespace

// 63: F'' = M_s(F) ⊗ F with the map above; the conv "conv" has weight 1×2×k×k and
// an optional bias. F B×C×H×W → output B×C×H×W, weights M_s B×1×H×W.
std::vector<Expected> cbam_spatial_attention_reference(const Ref& r, int64_t kernel, bool bias) {
    const Array K = parameter(r, "conv.weight", {1, 2, kernel, kernel});
    const Array map = spatial_map(r.x[0], K, bias ? r.p["conv.bias"][0] : 0.0);
    return {{"output", scale_pixels(r.x[0], map)}, {"weights", map}};
}

// The full CBAM block: F' = M_c(F) ⊗ F, then F'' = M_s(F') ⊗ F'.
std::vector<Expected> cbam_block_reference(const Ref& r, int64_t reduction, int64_t kernel) {
    const int64_t C = r.x[0].size(1), h = reduced(C, reduction);
    const Array gates =
        channel_gates(r.x[0], dense(r, "channel.fc1", h, C, true), dense(r, "channel.fc2", C, h, true), true);
    const Array F1 = scale_channels(r.x[0], gates);
    const Array K = parameter(r, "spatial.conv.weight", {1, 2, kernel, kernel});
    const Array map = spatial_map(F1, K, r.p["spatial.conv.bias"][0]);
    return {{"output", scale_pixels(F1, map)}, {"channel_gates", gates}, {"spatial_map", map}};
}

// ---- 64 and 65: DANet ------------------------------------------------------------------------

// 64: Q_p = conv_q(A)_p, K_p = conv_k(A)_p (C' each), V_p = conv_v(A)_p (C), p = h·W + w;
//     S_ji = exp(K_i·Q_j) / Σ_i exp(K_i·Q_j);  E_j = α Σ_i S_ji V_i + A_j
// A B×C×H×W → output B×C×H×W, weights S B×N×N.
std::vector<Expected> danet_position_attention_reference(const Ref& r, int64_t reduction) {
    const Array& A = r.x[0];
    const int64_t B = A.size(0), C = A.size(1), H = A.size(2), W = A.size(3), N = H * W;
    const int64_t Cr = reduced(C, reduction);
    const Conv1x1 query = conv1x1(r, "query", Cr, C), key = conv1x1(r, "key", Cr, C), value = conv1x1(r, "value", C, C);
    const double alpha = r.p["alpha"][0];
    Array S({B, N, N}), E(A.shape());
    for (int64_t b = 0; b < B; ++b) {
        std::vector<Vec> Q, K, V;
        for (int64_t p = 0; p < N; ++p) {
            const Vec a = pixel(A, b, p / W, p % W);
            Q.push_back(query(a));
            K.push_back(key(a));
            V.push_back(value(a));
        }
        for (int64_t j = 0; j < N; ++j) {
            Vec e(static_cast<size_t>(N));
            for (int64_t i = 0; i < N; ++i) e[size_t(i)] = dot(K[size_t(i)], Q[size_t(j)]);
            const Vec s = softmax(e);
            set_row(S, b, j, s);
            for (int64_t c = 0; c < C; ++c) {
                double context = 0;
                for (int64_t i = 0; i < N; ++i) context += s[size_t(i)] * V[size_t(i)][size_t(c)];
                E(b, c, j / W, j % W) = alpha * context + A(b, c, j / W, j % W);
            }
        }
    }
    return {{"output", E}, {"weights", S}};
}

// 65: a_c = A[c, :, :] flattened (N values);  paper: X_ji = softmax_i(a_i·a_j);
//     released code: X_ji = softmax_i(max_k(a_k·a_j) − a_i·a_j);  E_j = β Σ_i X_ji a_i + a_j
// A B×C×H×W → output B×C×H×W, weights X B×C×C.
std::vector<Expected> danet_channel_attention_reference(const Ref& r, bool released_code) {
    const Array& A = r.x[0];
    const int64_t B = A.size(0), C = A.size(1), H = A.size(2), W = A.size(3), N = H * W;
    const double beta = r.p["beta"][0];
    Array X({B, C, C}), E(A.shape());
    for (int64_t b = 0; b < B; ++b) {
        std::vector<Vec> a(static_cast<size_t>(C), Vec(static_cast<size_t>(N)));
        for (int64_t c = 0; c < C; ++c)
            for (int64_t p = 0; p < N; ++p) a[size_t(c)][size_t(p)] = A(b, c, p / W, p % W);
        for (int64_t j = 0; j < C; ++j) {
            Vec e(static_cast<size_t>(C));
            for (int64_t i = 0; i < C; ++i) e[size_t(i)] = dot(a[size_t(i)], a[size_t(j)]);
            if (released_code) {
                const double top = max(e);
                for (double& v : e) v = top - v;
            }
            const Vec x = softmax(e);
            set_row(X, b, j, x);
            for (int64_t p = 0; p < N; ++p) {
                double context = 0;
                for (int64_t i = 0; i < C; ++i) context += x[size_t(i)] * a[size_t(i)][size_t(p)];
                E(b, j, p / W, p % W) = beta * context + a[size_t(j)][size_t(p)];
            }
        }
    }
    return {{"output", E}, {"weights", X}};
}

// ---- 66: pyramid aggregation ---------------------------------------------------------------

namespace {

// 66, the map: 𝒜_0 ≡ 1;
//   𝒜_k(h, w) = 𝒜_{k−1}(h, w) · σ(score_k(ReLU(reduce_k(𝒜_{k−1}(h, w) U_{:,h,w}))))
// with 1×1 convolutions "reduce<k>" (C→hidden) and "score<k>" (hidden→1). U B×C×H×W → 𝒜 B×H×W.
Array pyramid_attention_map(const Ref& r, int cascade, int64_t hidden) {
    const Array& U = r.x[0];
    const int64_t B = U.size(0), C = U.size(1), H = U.size(2), W = U.size(3);
    Array map({B, H, W}, 1.0);
    for (int k = 0; k < cascade; ++k) {
        const Conv1x1 reduce = conv1x1(r, "reduce" + std::to_string(k), hidden, C);
        const Conv1x1 score = conv1x1(r, "score" + std::to_string(k), 1, hidden);
        Array next({B, H, W});
        for (int64_t b = 0; b < B; ++b)
            for (int64_t h = 0; h < H; ++h)
                for (int64_t w = 0; w < W; ++w) {
                    const Vec z = testing::each(reduce(scale(pixel(U, b, h, w), map(b, h, w))), relu);
                    next(b, h, w) = map(b, h, w) * sigmoid(score(z)[0]);
                }
        map = next;
    }
    return map;
}

// f / √(‖f‖² + 1e-30), as the library keeps a zero vector at zero
Vec unit(const Vec& f) { return scale(f, 1 / std::sqrt(dot(f, f) + 1e-30)); }

}  // namespace

// 66, the aggregation: bin u of b on a side of length a covers ⌊u·a/b⌋ … ⌈(u+1)·a/b⌉ − 1;
//     f_R = Σ_{(h,w)∈R} 𝒜(h, w) U_{:,h,w},  f_R ← f_R / ‖f_R‖;
//     f = Σ_{ℓ,R} f_R (sum), or level by level f[c·b² + u·b + v] = f_{R(u,v)}[c] (concat);  f ← f / ‖f‖
// U B×C×H×W, 𝒜 B×H×W → B×C or B×(C·Σ b²).
Array pyramid_aggregate_reference(const Array& U, const Array& map, const std::vector<int64_t>& levels,
                                  bool concatenate) {
    const int64_t B = U.size(0), C = U.size(1), H = U.size(2), W = U.size(3);
    int64_t width = concatenate ? 0 : C;
    for (int64_t b : levels) width += concatenate ? C * b * b : 0;
    auto first = [](int64_t u, int64_t b, int64_t a) { return int64_t(std::floor(double(u * a) / double(b))); };
    auto last = [](int64_t u, int64_t b, int64_t a) { return int64_t(std::ceil(double((u + 1) * a) / double(b))) - 1; };
    Array out({B, width});
    for (int64_t bb = 0; bb < B; ++bb) {
        Vec f(size_t(width), 0.0);
        int64_t offset = 0;  // where the level starts in the concatenation
        for (int64_t b : levels) {
            for (int64_t u = 0; u < b; ++u)
                for (int64_t v = 0; v < b; ++v) {
                    Vec region(size_t(C), 0.0);
                    for (int64_t h = first(u, b, H); h <= last(u, b, H); ++h)
                        for (int64_t w = first(v, b, W); w <= last(v, b, W); ++w)
                            for (int64_t c = 0; c < C; ++c) region[size_t(c)] += map(bb, h, w) * U(bb, c, h, w);
                    region = unit(region);
                    for (int64_t c = 0; c < C; ++c)
                        f[size_t(concatenate ? offset + c * b * b + u * b + v : c)] += region[size_t(c)];
                }
            offset += C * b * b;
        }
        set_row(out, bb, unit(f));
    }
    return out;
}

// 66: the map of the cascade, then the aggregation.  U B×C×H×W → output B×C or
// B×(C·Σ b²), weights 𝒜 B×H×W.
std::vector<Expected> pyramid_aggregation_attention_reference(const Ref& r, int cascade, int64_t hidden,
                                                              const std::vector<int64_t>& levels, bool concatenate) {
    const Array map = pyramid_attention_map(r, cascade, hidden);
    return {{"output", pyramid_aggregate_reference(r.x[0], map, levels, concatenate)}, {"weights", map}};
}

}  // namespace attn::testing
