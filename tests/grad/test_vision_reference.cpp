// CNN / vision attention, catalog entries 61–66 (attention/vision.hpp): the
// independent references (the catalog's formulas in plain loops over b, c, h, w)
// and the registry entries (tests/grad/catalog.hpp). The hand-computed values
// and the other property tests are in test_vision.cpp.
//
// Shapes: feature maps U, F, A are B×C×H×W; the cases use H ≠ W and C equal to
// neither, so a swapped axis is a shape error or a wrong value, never silent.
// Flattened positions are p = h·W + w.
#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "attention/vision.hpp"
#include "tests/grad/catalog.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

// ---- shared pieces of the references ---------------------------------------------------------

// y = W x + b for a Linear layer read as W out×in, b out (no b: with_bias false).
struct Dense {
    Array W;
    Vec b;
    Vec operator()(const Vec& x) const { return b.empty() ? matvec(W, x) : add(matvec(W, x), b); }
};
Dense dense(const Ref& r, const std::string& name, bool bias) {
    return {r.p[name + ".weight"], bias ? vec(r.p[name + ".bias"]) : Vec{}};
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
Conv1x1 conv1x1(const Ref& r, const std::string& name) { return {r.p[name + ".weight"], vec(r.p[name + ".bias"])}; }

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

// ---- 61 and 62: channel gates --------------------------------------------------------------

// 61: z_c = (1/HW) Σ_{i,j} U_c(i, j);  s = σ(W_2 ReLU(W_1 z + b_1) + b_2);  X̃_c = s_c U_c
// 62: M_c = σ(MLP(AvgPool(F)) + MLP(MaxPool(F))),  MLP(z) = W_1 ReLU(W_0 z + b_0) + b_1
//     one MLP for both branches (so b_1 counts twice); without the max branch, 61's gate.
// U B×C×H×W, fc1 (C/r)×C, fc2 C×(C/r) → output B×C×H×W, gates B×C.
Array channel_gates(const Array& U, const Dense& fc1, const Dense& fc2, bool use_max) {
    const int64_t B = U.size(0), C = U.size(1), H = U.size(2), W = U.size(3);
    auto mlp = [&](const Vec& z) { return fc2(apply(fc1(z), relu)); };
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
        set_row(gates, b, apply(energy, sigmoid));
    }
    return gates;
}

std::vector<Expected> squeeze_excitation_reference(const Ref& r, bool bias) {
    const Array gates = channel_gates(r.x[0], dense(r, "fc1", bias), dense(r, "fc2", bias), false);
    return {{"output", scale_channels(r.x[0], gates)}, {"weights", gates}};
}

std::vector<Expected> cbam_channel_attention_reference(const Ref& r, bool bias, bool use_max) {
    const Array gates = channel_gates(r.x[0], dense(r, "fc1", bias), dense(r, "fc2", bias), use_max);
    return {{"output", scale_channels(r.x[0], gates)}, {"weights", gates}};
}

// ---- 63: the spatial map ---------------------------------------------------------------------

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

std::vector<Expected> cbam_spatial_attention_reference(const Ref& r, bool bias) {
    const Array map = spatial_map(r.x[0], r.p["conv.weight"], bias ? r.p["conv.bias"][0] : 0.0);
    return {{"output", scale_pixels(r.x[0], map)}, {"weights", map}};
}

// The full CBAM block: F' = M_c(F) ⊗ F, then F'' = M_s(F') ⊗ F'.
std::vector<Expected> cbam_block_reference(const Ref& r) {
    const Array gates =
        channel_gates(r.x[0], dense(r, "channel.fc1", true), dense(r, "channel.fc2", true), true);
    const Array F1 = scale_channels(r.x[0], gates);
    const Array map = spatial_map(F1, r.p["spatial.conv.weight"], r.p["spatial.conv.bias"][0]);
    return {{"output", scale_pixels(F1, map)}, {"channel_gates", gates}, {"spatial_map", map}};
}

// ---- 64 and 65: DANet ------------------------------------------------------------------------

// 64: Q_p = conv_q(A)_p, K_p = conv_k(A)_p (C' each), V_p = conv_v(A)_p (C), p = h·W + w;
//     S_ji = exp(K_i·Q_j) / Σ_i exp(K_i·Q_j);  E_j = α Σ_i S_ji V_i + A_j
// A B×C×H×W → output B×C×H×W, weights S B×N×N.
std::vector<Expected> danet_position_attention_reference(const Ref& r) {
    const Array& A = r.x[0];
    const int64_t B = A.size(0), C = A.size(1), H = A.size(2), W = A.size(3), N = H * W;
    const Conv1x1 query = conv1x1(r, "query"), key = conv1x1(r, "key"), value = conv1x1(r, "value");
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

// 66, the map: 𝒜_0 ≡ 1;  𝒜_k(h, w) = 𝒜_{k−1}(h, w) · σ(score_k(ReLU(reduce_k(𝒜_{k−1}(h, w) U_{:,h,w}))))
// with 1×1 convolutions "reduce<k>" (C→hidden) and "score<k>" (hidden→1). U B×C×H×W → 𝒜 B×H×W.
Array pyramid_attention_map(const Ref& r, int cascade) {
    const Array& U = r.x[0];
    const int64_t B = U.size(0), H = U.size(2), W = U.size(3);
    Array map({B, H, W}, 1.0);
    for (int k = 0; k < cascade; ++k) {
        const Conv1x1 reduce = conv1x1(r, "reduce" + std::to_string(k));
        const Conv1x1 score = conv1x1(r, "score" + std::to_string(k));
        Array next({B, H, W});
        for (int64_t b = 0; b < B; ++b)
            for (int64_t h = 0; h < H; ++h)
                for (int64_t w = 0; w < W; ++w) {
                    const Vec hidden = apply(reduce(scale(pixel(U, b, h, w), map(b, h, w))), relu);
                    next(b, h, w) = map(b, h, w) * sigmoid(score(hidden)[0]);
                }
        map = next;
    }
    return map;
}

// f / √(‖f‖² + 1e-12)
Vec unit(const Vec& f) { return scale(f, 1 / std::sqrt(dot(f, f) + 1e-12)); }

// 66, the aggregation: bin u of b on a side of length a covers ⌊u·a/b⌋ … ⌈(u+1)·a/b⌉ − 1;
//     f_R = Σ_{(h,w)∈R} 𝒜(h, w) U_{:,h,w},  f_R ← f_R / ‖f_R‖;
//     f = Σ_{ℓ,R} f_R (sum), or level by level f[c·b² + u·b + v] = f_{R(u,v)}[c] (concat);  f ← f / ‖f‖
// U B×C×H×W, 𝒜 B×H×W → B×C or B×(C·Σ b²).
Array pyramid_aggregate(const Array& U, const Array& map, const std::vector<int64_t>& levels, bool concatenate) {
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

std::vector<Expected> pyramid_aggregation_attention_reference(const Ref& r, int cascade,
                                                              const std::vector<int64_t>& levels, bool concatenate) {
    const Array map = pyramid_attention_map(r, cascade);
    return {{"output", pyramid_aggregate(r.x[0], map, levels, concatenate)}, {"weights", map}};
}

// ---- inputs and properties -------------------------------------------------------------------

// N(0, 1) inputs, times `scale_by`, redrawn until no two values of an input
// lie within 1e-5 of each other: no max sits at a tie, where the central
// difference would straddle a kink.
Draw distinct(std::vector<Shape> shapes, double scale_by = 1) {
    return [=](Generator& gen) {
        std::vector<Tensor> out;
        for (const Shape& s : shapes)
            for (;;) {
                Tensor t = Tensor::normal(s, 0, scale_by, gen);
                std::vector<double> v(static_cast<size_t>(t.numel()));
                for (int64_t i = 0; i < t.numel(); ++i) v[size_t(i)] = t[i];
                std::sort(v.begin(), v.end());
                bool apart = true;
                for (size_t i = 1; i < v.size(); ++i) apart = apart && v[i] - v[i - 1] >= 1e-5;
                if (!apart) continue;
                out.push_back(t);
                break;
            }
        return out;
    };
}

// A fixed shuffle of 0 … n−1 that moves something.
std::vector<int64_t> shuffle(int64_t n) {
    std::vector<int64_t> perm(static_cast<size_t>(n));
    std::iota(perm.begin(), perm.end(), 0);
    Generator gen(606);
    for (int64_t i = n - 1; i > 0; --i) std::swap(perm[size_t(i)], perm[size_t(gen.randint(uint64_t(i + 1)))]);
    if (std::is_sorted(perm.begin(), perm.end())) std::rotate(perm.begin(), perm.begin() + 1, perm.end());
    return perm;
}

// out[b, perm[i], rest] = x[b, i, rest]: axis 1 permuted (channels of a map, or of gates).
Tensor permute_axis1(const Tensor& x, const std::vector<int64_t>& perm) {
    const int64_t B = x.size(0), n = x.size(1), inner = x.numel() / (B * n);
    Tensor out = Tensor::zeros(x.shape());
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < n; ++i)
            for (int64_t k = 0; k < inner; ++k) out[(b * n + perm[size_t(i)]) * inner + k] = x[(b * n + i) * inner + k];
    return out;
}

// out[b, c, perm[p]] = x[b, c, p] over the N = H·W pixels of a B×C×H×W map.
Tensor permute_pixels(const Tensor& x, const std::vector<int64_t>& perm) {
    const int64_t planes = x.size(0) * x.size(1), N = x.numel() / planes;
    Tensor out = Tensor::zeros(x.shape());
    for (int64_t q = 0; q < planes; ++q)
        for (int64_t p = 0; p < N; ++p) out[q * N + perm[size_t(p)]] = x[q * N + p];
    return out;
}

// out[b, perm[j], perm[i]] = S[b, j, i]: a B×n×n matrix permuted on both axes.
Tensor permute_both(const Tensor& S, const std::vector<int64_t>& perm) {
    const int64_t B = S.size(0), n = S.size(1);
    Tensor out = Tensor::zeros(S.shape());
    for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < n; ++j)
            for (int64_t i = 0; i < n; ++i)
                out[(b * n + perm[size_t(j)]) * n + perm[size_t(i)]] = S[(b * n + j) * n + i];
    return out;
}

std::string differs(const std::string& what, const Tensor& want, const Tensor& got) {
    if (!(want.shape() == got.shape())) return what + ": shape " + got.shape().str() + ", expected " + want.shape().str();
    for (int64_t i = 0; i < want.numel(); ++i)
        if (!(std::abs(want[i] - got[i]) <= 1e-9 * (1 + std::abs(want[i])))) {
            std::ostringstream os;
            os << what << " at flat index " << i << ": " << got[i] << ", expected " << want[i];
            return os.str();
        }
    return "";
}

// Permuting input 0 with `move` (pixels or channels): the outputs named in
// `moved` move the same way, `fixed` stay, `both_axes` (B×n×n) move on both axes.
Property permutes_with(const std::string& what, Tensor (*move)(const Tensor&, const std::vector<int64_t>&),
                       int64_t (*count)(const Tensor&), std::vector<std::string> moved,
                       std::vector<std::string> fixed, std::vector<std::string> both_axes) {
    return {"permuting the " + what + " of the input permutes the outputs alike",
            [=](const PropertyContext& c) -> std::string {
                const std::vector<int64_t> perm = shuffle(count(c.inputs[0]));
                std::vector<Tensor> x = c.inputs;
                x[0] = move(x[0], perm);
                const Evaluation before = c.run(c.inputs, c.masks), after = c.run(x, c.masks);
                std::string err;
                for (const std::string& n : moved)
                    if (err.empty()) err = differs(n + " with the " + what + " permuted", move(before[n], perm), after[n]);
                for (const std::string& n : fixed)
                    if (err.empty()) err = differs(n + " with the " + what + " permuted", before[n], after[n]);
                for (const std::string& n : both_axes)
                    if (err.empty())
                        err = differs(n + " with the " + what + " permuted", permute_both(before[n], perm), after[n]);
                return err;
            }};
}
int64_t pixel_count(const Tensor& x) { return x.size(2) * x.size(3); }
int64_t channel_count(const Tensor& x) { return x.size(1); }

Property pixels_permute(std::vector<std::string> moved, std::vector<std::string> fixed,
                        std::vector<std::string> both_axes = {}) {
    return permutes_with("pixels", permute_pixels, pixel_count, std::move(moved), std::move(fixed),
                         std::move(both_axes));
}
Property channels_permute(std::vector<std::string> moved, std::vector<std::string> fixed,
                          std::vector<std::string> both_axes = {}) {
    return permutes_with("channels", permute_axis1, channel_count, std::move(moved), std::move(fixed),
                         std::move(both_axes));
}

// Every row of a B×D descriptor has L2 norm 1.
Property unit_norm(const std::string& output) {
    return {output + " has unit norm", [output](const PropertyContext& c) -> std::string {
                const Array f(c.run(c.inputs, c.masks)[output]);
                for (int64_t b = 0; b < f.size(0); ++b)
                    if (std::abs(norm(row(f, b)) - 1) > 1e-9)
                        return output + " row " + std::to_string(b) + " has norm " + std::to_string(norm(row(f, b)));
                return "";
            }};
}

Outputs both(const AttentionOutput& o) { return {{"output", o.output}, {"weights", o.weights}}; }

// ---- the registry entries ---------------------------------------------------------------------

template <class M>
Run forward_of() {
    return [](Module* m, In x, Masks) { return both(as<M>(m).forward(x[0])); };
}

const RegisterEntry squeeze_excitation_entry(61, "squeeze_excitation", {
    {.variant = "C 6, r 2 (3 hidden), 3×4 maps, biases",
     .inputs = {Shape{2, 6, 3, 4}},
     .make = [](Generator& g) { return std::make_unique<SqueezeExcitation>(6, 2, g); },
     .run = forward_of<SqueezeExcitation>(),
     .reference = [](const Ref& r) { return squeeze_excitation_reference(r, true); },
     .properties = {bounded("weights", 0, 1), pixels_permute({"output"}, {"weights"})}},
    {.variant = "no biases (the paper's notation), C 5, r 2 (2 hidden), 4×3 maps",
     .inputs = {Shape{2, 5, 4, 3}},
     .make = [](Generator& g) { return std::make_unique<SqueezeExcitation>(5, 2, g, false); },
     .run = forward_of<SqueezeExcitation>(),
     .reference = [](const Ref& r) { return squeeze_excitation_reference(r, false); }},
    {.variant = "r 1: square W_1 and W_2 (5×5), where a transposed weight is shape-valid; 2×3 maps",
     .inputs = {Shape{3, 5, 2, 3}},
     .make = [](Generator& g) { return std::make_unique<SqueezeExcitation>(5, 1, g); },
     .run = forward_of<SqueezeExcitation>(),
     .reference = [](const Ref& r) { return squeeze_excitation_reference(r, true); }},
});

const RegisterEntry cbam_channel_entry(62, "cbam_channel_attention", {
    {.variant = "C 6, r 3 (2 hidden), 4×3 maps, mean and max branches, biases",
     .inputs = {Shape{2, 6, 4, 3}},
     .make = [](Generator& g) { return std::make_unique<CbamChannelAttention>(6, 3, g); },
     .run = forward_of<CbamChannelAttention>(),
     .reference = [](const Ref& r) { return cbam_channel_attention_reference(r, true, true); },
     .properties = {bounded("weights", 0, 1), pixels_permute({"output"}, {"weights"})},
     .draw = distinct({Shape{2, 6, 4, 3}})},
    {.variant = "the mean branch only (entry 61's gate), C 5, r 2, 3×4 maps",
     .inputs = {Shape{2, 5, 3, 4}},
     .make = [](Generator& g) { return std::make_unique<CbamChannelAttention>(5, 2, g, true, false); },
     .run = forward_of<CbamChannelAttention>(),
     .reference = [](const Ref& r) { return cbam_channel_attention_reference(r, true, false); }},
    {.variant = "r 1: square MLP (4×4), no biases, 3×2 maps",
     .inputs = {Shape{2, 4, 3, 2}},
     .make = [](Generator& g) { return std::make_unique<CbamChannelAttention>(4, 1, g, false); },
     .run = forward_of<CbamChannelAttention>(),
     .reference = [](const Ref& r) { return cbam_channel_attention_reference(r, false, true); },
     .draw = distinct({Shape{2, 4, 3, 2}})},
});

const RegisterEntry cbam_spatial_entry(63, "cbam_spatial_attention", {
    {.variant = "7×7 kernel on 5×4 maps (the padding reaches past every edge), C 3",
     .inputs = {Shape{2, 3, 5, 4}},
     .make = [](Generator& g) { return std::make_unique<CbamSpatialAttention>(g); },
     .run = forward_of<CbamSpatialAttention>(),
     .reference = [](const Ref& r) { return cbam_spatial_attention_reference(r, true); },
     .properties = {bounded("weights", 0, 1), channels_permute({"output"}, {"weights"})},
     .draw = distinct({Shape{2, 3, 5, 4}})},
    {.variant = "3×3 kernel without bias, 4×6 maps, C 5",
     .inputs = {Shape{2, 5, 4, 6}},
     .make = [](Generator& g) { return std::make_unique<CbamSpatialAttention>(g, 3, false); },
     .run = forward_of<CbamSpatialAttention>(),
     .reference = [](const Ref& r) { return cbam_spatial_attention_reference(r, false); },
     .draw = distinct({Shape{2, 5, 4, 6}})},
    {.variant = "5×5 kernel on 7×6 maps (interior pixels see the whole kernel), C 2",
     .inputs = {Shape{2, 2, 7, 6}},
     .make = [](Generator& g) { return std::make_unique<CbamSpatialAttention>(g, 5); },
     .run = forward_of<CbamSpatialAttention>(),
     .reference = [](const Ref& r) { return cbam_spatial_attention_reference(r, true); },
     .draw = distinct({Shape{2, 2, 7, 6}})},
    {.variant = "the full CBAM block: entry 62 (C 4, r 2), then this with a 7×7 kernel; 3×5 maps",
     .inputs = {Shape{2, 4, 3, 5}},
     .make = [](Generator& g) { return std::make_unique<Cbam>(4, 2, g); },
     .run = [](Module* m, In x, Masks) {
         const CbamOutput o = as<Cbam>(m).forward(x[0]);
         return Outputs{{"output", o.output}, {"channel_gates", o.channel_gates}, {"spatial_map", o.spatial_map}};
     },
     .reference = cbam_block_reference,
     .draw = distinct({Shape{2, 4, 3, 5}})},
});

const RegisterEntry danet_position_entry(64, "danet_position_attention", {
    {.variant = "C 8 (C/8 = 1), 2×3 maps",
     .inputs = {Shape{2, 8, 2, 3}},
     .make = [](Generator& g) { return std::make_unique<DanetPositionAttention>(8, g); },
     .run = forward_of<DanetPositionAttention>(),
     .reference = danet_position_attention_reference,
     .properties = {rows_sum_to_one("weights"), pixels_permute({"output"}, {}, {"weights"})}},
    {.variant = "C 6, reduction 2 (C' = 3), 3×2 maps",
     .inputs = {Shape{2, 6, 3, 2}},
     .make = [](Generator& g) { return std::make_unique<DanetPositionAttention>(6, g, 2); },
     .run = forward_of<DanetPositionAttention>(),
     .reference = danet_position_attention_reference,
     .properties = {rows_sum_to_one("weights"), pixels_permute({"output"}, {}, {"weights"})}},
    {.variant = "reduction 1: square query and key convolutions (5×5), 2×4 maps",
     .inputs = {Shape{2, 5, 2, 4}},
     .make = [](Generator& g) { return std::make_unique<DanetPositionAttention>(5, g, 1); },
     .run = forward_of<DanetPositionAttention>(),
     .reference = danet_position_attention_reference},
    {.variant = "α = 0 as initialised: the identity, C 3, 2×4 maps",
     .inputs = {Shape{2, 3, 2, 4}},
     .make = [](Generator& g) { return std::make_unique<DanetPositionAttention>(3, g, 1); },
     .run = forward_of<DanetPositionAttention>(),
     .reference = danet_position_attention_reference,
     .randomize_parameters = false},
});

template <DanetChannelAttention::EnergyMode mode>
std::unique_ptr<Module> make_cam(Generator&) {
    return std::make_unique<DanetChannelAttention>(mode);
}
constexpr auto kPaper = DanetChannelAttention::EnergyMode::paper;
constexpr auto kReleased = DanetChannelAttention::EnergyMode::released_code;

// Energies are sums over N pixels: 0.5·N(0, 1) keeps the softmax away from one-hot.
const RegisterEntry danet_channel_entry(65, "danet_channel_attention", {
    {.variant = "the paper's energy, C 4, 3×2 maps",
     .inputs = {Shape{2, 4, 3, 2}},
     .make = make_cam<kPaper>,
     .run = forward_of<DanetChannelAttention>(),
     .reference = [](const Ref& r) { return danet_channel_attention_reference(r, false); },
     .properties = {rows_sum_to_one("weights"), channels_permute({"output"}, {}, {"weights"})},
     .draw = distinct({Shape{2, 4, 3, 2}}, 0.5)},
    {.variant = "the released code's energy max − A_i·A_j, C 4, 3×2 maps",
     .inputs = {Shape{2, 4, 3, 2}},
     .make = make_cam<kReleased>,
     .run = forward_of<DanetChannelAttention>(),
     .reference = [](const Ref& r) { return danet_channel_attention_reference(r, true); },
     .properties = {rows_sum_to_one("weights"), channels_permute({"output"}, {}, {"weights"})},
     .draw = distinct({Shape{2, 4, 3, 2}}, 0.5)},
    {.variant = "the paper's energy, C 3, 2×4 maps, batch 3",
     .inputs = {Shape{3, 3, 2, 4}},
     .make = make_cam<kPaper>,
     .run = forward_of<DanetChannelAttention>(),
     .reference = [](const Ref& r) { return danet_channel_attention_reference(r, false); },
     .draw = distinct({Shape{3, 3, 2, 4}}, 0.5)},
});

Make make_pyramid(int64_t C, int64_t hidden, std::vector<int64_t> levels, int64_t cascade, PyramidAggregate how) {
    return [=](Generator& g) {
        return std::make_unique<PyramidAggregationAttention>(C, hidden, g, levels, cascade, how);
    };
}

const RegisterEntry pyramid_entry(66, "pyramid_aggregation_attention", {
    {.variant = "levels {1, 2}, sum, C 3, hidden 2, 4×5 maps",
     .inputs = {Shape{2, 3, 4, 5}},
     .make = make_pyramid(3, 2, {1, 2}, 1, PyramidAggregate::sum),
     .run = forward_of<PyramidAggregationAttention>(),
     .reference = [](const Ref& r) { return pyramid_aggregation_attention_reference(r, 1, {1, 2}, false); },
     .properties = {bounded("weights", 0, 1), unit_norm("output")}},
    {.variant = "levels {1, 3}, concat, a cascade of 2, C 2, hidden 3, 3×5 maps (overlapping bins)",
     .inputs = {Shape{2, 2, 3, 5}},
     .make = make_pyramid(2, 3, {1, 3}, 2, PyramidAggregate::concat),
     .run = forward_of<PyramidAggregationAttention>(),
     .reference = [](const Ref& r) { return pyramid_aggregation_attention_reference(r, 2, {1, 3}, true); },
     .properties = {bounded("weights", 0, 1), unit_norm("output")}},
    {.variant = "levels {3, 2}, sum, a cascade of 3, square 1×1 convs (C = hidden = 4), 5×7 maps",
     .inputs = {Shape{2, 4, 5, 7}},
     .make = make_pyramid(4, 4, {3, 2}, 3, PyramidAggregate::sum),
     .run = forward_of<PyramidAggregationAttention>(),
     .reference = [](const Ref& r) { return pyramid_aggregation_attention_reference(r, 3, {3, 2}, false); }},
    {.variant = "the aggregation alone on a given map, levels {2, 3}, concat, C 3, 5×4 maps",
     .inputs = {Shape{2, 3, 5, 4}, Shape{2, 5, 4}},
     .run = [](Module*, In x, Masks) {
         return Outputs{{"output", pyramid_aggregation(x[0], x[1], {2, 3}, PyramidAggregate::concat)}};
     },
     .reference = [](const Ref& r) {
         return std::vector<Expected>{{"output", pyramid_aggregate(r.x[0], r.x[1], {2, 3}, true)}};
     },
     .properties = {unit_norm("output")}},
});

}  // namespace
