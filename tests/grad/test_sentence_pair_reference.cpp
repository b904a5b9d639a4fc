// Sentence-pair and paired-input attention, catalog entries 67–73
// (attention/sentence_pair.hpp): the independent references, the catalog's
// formulas again in plain loops over indices with tests/grad/reference.hpp
// only. They read the modules' parameters by name and share nothing with
// attention/. The registry entries that use them are in test_sentence_pair.cpp.
#include "tests/grad/test_sentence_pair_reference.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace attn::testing::sentence_pair {

namespace {

// ---- shared pieces of the references ----------------------------------------------------

// A Linear layer read from its parameters: y = W x + b, W out×in.
struct Dense {
    Array W;
    Vec b;
    Dense(const Ref& r, const std::string& name) : W(r.p[name + ".weight"]), b(vec(r.p[name + ".bias"])) {}
    Vec operator()(const Vec& x) const { return add(matvec(W, x), b); }
};

// Two ReLU layers: relu(W_2 relu(W_1 x + b_1) + b_2).
struct TwoRelu {
    Dense first, second;
    TwoRelu(const Ref& r, const std::string& one, const std::string& two) : first(r, one), second(r, two) {}
    Vec operator()(const Vec& x) const { return testing::each(second(testing::each(first(x), relu)), relu); }
};

double absolute(double x) { return std::fabs(x); }

// X with the rows of padding set to 0: X B×s×d, mask B×s.
Array zero_padding(const Array& X, const Array& mask) {
    Array out = X;
    for (int64_t b = 0; b < X.size(0); ++b) {
        const Vec keep = keep_row(mask, b, X.size(1));
        for (int64_t i = 0; i < X.size(1); ++i) set_row(out, b, i, scale(row(X, b, i), keep[size_t(i)]));
    }
    return out;
}

// ---- 67–69. ABCNN -----------------------------------------------------------------------------

// The match scores A_ij = 1 / (1 + ‖X[i] − Y[j]‖₂), 0 where either unit is padding.
// X B×s_0×d, Y B×s_1×d, masks B×s_0, B×s_1 → A B×s_0×s_1
Array match_scores(const Array& X, const Array& Y, const Array& mask_x, const Array& mask_y) {
    const int64_t B = X.size(0), s0 = X.size(1), s1 = Y.size(1);
    Array A({B, s0, s1});
    for (int64_t b = 0; b < B; ++b) {
        const Vec kx = keep_row(mask_x, b, s0), ky = keep_row(mask_y, b, s1);
        for (int64_t i = 0; i < s0; ++i)
            for (int64_t j = 0; j < s1; ++j)
                A(b, i, j) = kx[size_t(i)] * ky[size_t(j)] / (1 + norm(sub(row(X, b, i), row(Y, b, j))));
    }
    return A;
}

// The attention feature map F_{0,a} = A W_0 (by_rows) or F_{1,a} = Aᵀ W_1:
// A B×s×s, W s×d → B×s×d.
Array attention_features(const Array& A, const Array& W, bool by_rows) {
    const int64_t B = A.size(0), s = A.size(1), d = W.size(1);
    Array Fa({B, s, d});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < s; ++i)
            for (int64_t c = 0; c < d; ++c)
                for (int64_t j = 0; j < s; ++j) Fa(b, i, c) += (by_rows ? A(b, i, j) : A(b, j, i)) * W(j, c);
    return Fa;
}

// The real rows of a wide convolution's output: ℓ tokens → ℓ + w − 1 rows (0 for ℓ = 0).
int64_t real_conv_rows(const Array& mask, int64_t b, int64_t s, int64_t w) {
    const int64_t length = static_cast<int64_t>(sum(keep_row(mask, b, s)));
    return length == 0 ? 0 : length + w - 1;
}

// The conv-output keep mask B×(s+w−1) of a token mask B×s (none without one).
Array conv_mask(const Array& mask, int64_t B, int64_t s, int64_t w) {
    if (mask.numel() == 0) return Array();
    Array m({B, s + w - 1});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t r = 0; r < real_conv_rows(mask, b, s, w); ++r) m(b, r) = 1;
    return m;
}

// The wide convolution + tanh over the channels X_c (each B×s×d), filters
// weight O×C×w×d and bias O, the sentence zero-padded by w − 1 rows at both ends:
//   F^c[r, o] = tanh(bias_o + Σ_{c,u,v} weight[o,c,u,v] · X_c[r − (w−1) + u, v]),  r = 0..s+w−2
// and the rows past ℓ + w − 1 of an example of ℓ real tokens set to 0.  → B×(s+w−1)×O
Array wide_convolution(const std::vector<Array>& X, const Array& weight, const Vec& bias, const Array& mask) {
    const int64_t B = X[0].size(0), s = X[0].size(1), d = X[0].size(2);
    const int64_t O = weight.size(0), w = weight.size(2);
    Array out({B, s + w - 1, O});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t r = 0; r < real_conv_rows(mask, b, s, w); ++r)
            for (int64_t o = 0; o < O; ++o) {
                double pre = bias[size_t(o)];
                for (size_t c = 0; c < X.size(); ++c)
                    for (int64_t u = 0; u < w; ++u) {
                        const int64_t t = r - (w - 1) + u;  // the input row under filter row u
                        if (t < 0 || t >= s) continue;      // the wide padding
                        for (int64_t v = 0; v < d; ++v) pre += weight(o, int64_t(c), u, v) * X[c](b, t, v);
                    }
                out(b, r, o) = std::tanh(pre);
            }
    return out;
}

// Attention-weighted w-ap: F^p[j] = Σ_{r=j}^{j+w−1} a_r F^c[r], j = 0..s−1.
// conv B×(s+w−1)×d′, a B×(s+w−1) → B×s×d′ (a = 1/w is ABCNN-1's plain w-ap).
Array window_pool(const Array& conv, const Array& a, int64_t w) {
    const int64_t B = conv.size(0), s = conv.size(1) - w + 1, d = conv.size(2);
    Array out({B, s, d});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < s; ++j) {
            Vec total(size_t(d), 0.0);
            for (int64_t r = j; r < j + w; ++r) total = add(total, scale(row(conv, b, r), a(b, r)));
            set_row(out, b, j, total);
        }
    return out;
}

// a_{0,j} = Σ_r A_jr (rows) or a_{1,j} = Σ_r A_rj (columns): A B×s_0×s_1.
Array unit_weights(const Array& A, bool rows) {
    const int64_t B = A.size(0), n = A.size(rows ? 1 : 2), other = A.size(rows ? 2 : 1);
    Array a({B, n});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < n; ++j)
            for (int64_t r = 0; r < other; ++r) a(b, j) += rows ? A(b, j, r) : A(b, r, j);
    return a;
}

}  // namespace

// 67: A_ij = 1 / (1 + ‖F_0[i] − F_1[j]‖₂) (0 at padding); F_{0,a} = A W_0, F_{1,a} = Aᵀ W_1;
// the conv inputs [F_k; F_{k,a}] B×2×s×d with the padding rows of F_k zero.
// F_0, F_1 B×s×d, W_0, W_1 s×d.
std::vector<Expected> abcnn1_attention_reference(const Ref& r) {
    const Array m0 = mask_or_all(r, 0), m1 = mask_or_all(r, 1);
    const Array A = match_scores(r.x[0], r.x[1], m0, m1);
    const Array Fa0 = attention_features(A, r.p["W_0"], true), Fa1 = attention_features(A, r.p["W_1"], false);
    auto channels = [](const Array& F, const Array& Fa) {
        const int64_t B = F.size(0), s = F.size(1);
        Array out({B, 2, s, F.size(2)});
        for (int64_t b = 0; b < B; ++b)
            for (int64_t i = 0; i < s; ++i) {
                set_row(out, b, 0, i, row(F, b, i));
                set_row(out, b, 1, i, row(Fa, b, i));
            }
        return out;
    };
    return {{"weights", A},
            {"features0", Fa0},
            {"features1", Fa1},
            {"channels0", channels(zero_padding(r.x[0], m0), Fa0)},
            {"channels1", channels(zero_padding(r.x[1], m1), Fa1)}};
}

// One ABCNN layer of width w: [ABCNN-1's channels [F_k; F_{k,a}]] → wide conv + tanh →
// ABCNN-2's attention pooling (A on the conv outputs, a = its row/column sums), else
// w-ap → the padding rows zero. F_0 B×s_0×d, F_1 B×s_1×d → B×s_k×d′.
std::vector<Expected> abcnn_layer_reference(const Ref& r, bool attention_channels, bool attention_pooling) {
    const Array &F0 = r.x[0], &F1 = r.x[1];
    const Array m0 = mask_or_all(r, 0), m1 = mask_or_all(r, 1);
    std::vector<Array> X0{zero_padding(F0, m0)}, X1{zero_padding(F1, m1)};
    std::vector<Expected> out;
    if (attention_channels) {
        const Array A = match_scores(F0, F1, m0, m1);
        X0.push_back(attention_features(A, r.p["input_attention.W_0"], true));
        X1.push_back(attention_features(A, r.p["input_attention.W_1"], false));
        out.push_back({"input_attention", A});
    }
    const Array weight = r.p["conv.weight"];
    const Vec bias = vec(r.p["conv.bias"]);
    const int64_t B = F0.size(0), w = weight.size(2);
    const Array c0 = wide_convolution(X0, weight, bias, m0), c1 = wide_convolution(X1, weight, bias, m1);
    Array a0({B, c0.size(1)}, 1.0 / double(w)), a1({B, c1.size(1)}, 1.0 / double(w));
    if (attention_pooling) {
        const Array A = match_scores(c0, c1, conv_mask(m0, B, F0.size(1), w), conv_mask(m1, B, F1.size(1), w));
        a0 = unit_weights(A, true), a1 = unit_weights(A, false);
        out.push_back({"pooling_attention", A});
    }
    out.push_back({"out0", zero_padding(window_pool(c0, a0, w), m0)});
    out.push_back({"out1", zero_padding(window_pool(c1, a1, w), m1)});
    return out;
}

// 67 as a layer: attention channels, wide conv, w-ap.
std::vector<Expected> abcnn1_layer_reference(const Ref& r) { return abcnn_layer_reference(r, true, false); }

// 68: on the conv outputs F^c_k B×(s_k+w−1)×d′ (masks over those rows):
//   A_jr = 1 / (1 + ‖F^c_0[j] − F^c_1[r]‖₂);  a_{0,j} = Σ_r A_jr,  a_{1,j} = Σ_r A_rj
//   F^p_k[j] = Σ_{r=j}^{j+w−1} a_{k,r} F^c_k[r],  j = 0..s_k−1
std::vector<Expected> abcnn2_attention_reference(const Ref& r, int64_t w) {
    const Array A = match_scores(r.x[0], r.x[1], mask_or_all(r, 0), mask_or_all(r, 1));
    const Array a0 = unit_weights(A, true), a1 = unit_weights(A, false);
    return {{"weights", A},
            {"unit0", a0},
            {"unit1", a1},
            {"pooled0", window_pool(r.x[0], a0, w)},
            {"pooled1", window_pool(r.x[1], a1, w)}};
}

// 68 as a layer: one-channel wide conv, then 68's attention pooling.
std::vector<Expected> abcnn2_layer_reference(const Ref& r) { return abcnn_layer_reference(r, false, true); }

// 69: ABCNN-1's attention channels on the input and ABCNN-2's attention pooling on the output.
std::vector<Expected> abcnn3_attention_reference(const Ref& r) { return abcnn_layer_reference(r, true, true); }

// ---- 70. decomposable_attention ----------------------------------------------------------------

namespace {

// The bucket of the distance bias d_{i−j}: each offset −10..10 its own (0..20),
// and one shared by every distance |i − j| > 10 (21).
int64_t distance_bucket(int64_t offset) { return std::abs(offset) > 10 ? 21 : offset + 10; }

// Intra-sentence attention: ā_i = [a_i; a′_i] with
//   a′_i = Σ_j softmax_j(F_in(a_i)ᵀ F_in(a_j) + d_{i−j}) a_j   over the real tokens j.
// X B×ℓ×d → B×ℓ×2d
Array intra_attend(const Ref& r, const Array& X, const Array& mask) {
    const TwoRelu F_in(r, "Fin1", "Fin2");
    const Vec d = vec(r.p["distance_bias"]);
    const int64_t B = X.size(0), n = X.size(1), dim = X.size(2);
    Array out({B, n, 2 * dim});
    for (int64_t b = 0; b < B; ++b) {
        std::vector<Vec> f;
        for (int64_t j = 0; j < n; ++j) f.push_back(F_in(row(X, b, j)));
        for (int64_t i = 0; i < n; ++i) {
            Vec scores(static_cast<size_t>(n));
            for (int64_t j = 0; j < n; ++j)
                scores[size_t(j)] = dot(f[size_t(i)], f[size_t(j)]) + d[size_t(distance_bucket(i - j))];
            const Vec weights = softmax(scores, keep_row(mask, b, n));
            Vec attended(size_t(dim), 0.0);
            for (int64_t j = 0; j < n; ++j) attended = add(attended, scale(row(X, b, j), weights[size_t(j)]));
            set_row(out, b, i, concat(row(X, b, i), attended));
        }
    }
    return out;
}

}  // namespace

// 70: attend  e_ij = F(ā_i)ᵀ F(b̄_j);  β_i = Σ_j softmax_j(e_ij) b̄_j;  α_j = Σ_i softmax_i(e_ij) ā_i
//     compare v_{1,i} = G([ā_i; β_i]),  v_{2,j} = G([b̄_j; α_j])
//     aggregate ŷ = H([Σ_i v_{1,i}; Σ_j v_{2,j}])
// F, G: two ReLU layers; H: two ReLU layers and a linear output. Padding takes
// no part: its weights are 0 both ways and it is left out of the sums.
// a B×ℓ_a×d, b B×ℓ_b×d → logits B×classes, softmax_j(e) B×ℓ_a×ℓ_b, softmax_i(e) B×ℓ_b×ℓ_a
std::vector<Expected> decomposable_attention_reference(const Ref& r, bool intra) {
    const Array ma = mask_or_all(r, 0), mb = mask_or_all(r, 1);
    const Array A = intra ? intra_attend(r, r.x[0], ma) : r.x[0];
    const Array Bb = intra ? intra_attend(r, r.x[1], mb) : r.x[1];
    const TwoRelu F(r, "F1", "F2"), G(r, "G1", "G2"), H(r, "H1", "H2");
    const Dense H_out(r, "H3");
    const int64_t B = A.size(0), la = A.size(1), lb = Bb.size(1), dbar = A.size(2);
    Array wa({B, la, lb}), wb({B, lb, la}), logits({B, H_out.W.size(0)});
    for (int64_t b = 0; b < B; ++b) {
        const Vec ka = keep_row(ma, b, la), kb = keep_row(mb, b, lb);
        std::vector<Vec> Fa, Fb;
        for (int64_t i = 0; i < la; ++i) Fa.push_back(F(row(A, b, i)));
        for (int64_t j = 0; j < lb; ++j) Fb.push_back(F(row(Bb, b, j)));
        for (int64_t i = 0; i < la; ++i) {
            Vec e(static_cast<size_t>(lb));
            for (int64_t j = 0; j < lb; ++j) e[size_t(j)] = dot(Fa[size_t(i)], Fb[size_t(j)]);
            set_row(wa, b, i, ka[size_t(i)] != 0 ? softmax(e, kb) : Vec(size_t(lb), 0.0));
        }
        for (int64_t j = 0; j < lb; ++j) {
            Vec e(static_cast<size_t>(la));
            for (int64_t i = 0; i < la; ++i) e[size_t(i)] = dot(Fa[size_t(i)], Fb[size_t(j)]);
            set_row(wb, b, j, kb[size_t(j)] != 0 ? softmax(e, ka) : Vec(size_t(la), 0.0));
        }
        Vec v1, v2;
        for (int64_t i = 0; i < la; ++i) {
            Vec beta(size_t(dbar), 0.0);
            for (int64_t j = 0; j < lb; ++j) beta = add(beta, scale(row(Bb, b, j), wa(b, i, j)));
            const Vec v = scale(G(concat(row(A, b, i), beta)), ka[size_t(i)]);
            v1 = v1.empty() ? v : add(v1, v);
        }
        for (int64_t j = 0; j < lb; ++j) {
            Vec alpha(size_t(dbar), 0.0);
            for (int64_t i = 0; i < la; ++i) alpha = add(alpha, scale(row(A, b, i), wb(b, j, i)));
            const Vec v = scale(G(concat(row(Bb, b, j), alpha)), kb[size_t(j)]);
            v2 = v2.empty() ? v : add(v2, v);
        }
        set_row(logits, b, H_out(H(concat(v1, v2))));
    }
    return {{"logits", logits}, {"weights_a", wa}, {"weights_b", wb}};
}

// ---- 71. compositional_de_attention --------------------------------------------------------------

// E_ij = α F_E(a_i)ᵀ F_E(b_j);  N_ij = −β ‖F_N(a_i) − F_N(b_j)‖₁;  M = tanh(E) ⊙ σ(N), 0 at padding;
// A′ = M B,  B′ = Mᵀ A.  F_E, F_N the identity or one dense layer each.
// A B×ℓ_a×d, B B×ℓ_b×d → A′ B×ℓ_a×d, B′ B×ℓ_b×d, M B×ℓ_a×ℓ_b
std::vector<Expected> compositional_de_attention_reference(const Ref& r, double alpha, double beta, bool dense) {
    const Array &X = r.x[0], &Y = r.x[1];
    const Array mx = mask_or_all(r, 0), my = mask_or_all(r, 1);
    auto F = [&](const std::string& name, const Vec& v) { return dense ? Dense(r, name)(v) : v; };
    const int64_t B = X.size(0), la = X.size(1), lb = Y.size(1), d = X.size(2);
    Array M({B, la, lb}), Xp({B, la, d}), Yp({B, lb, d});
    for (int64_t b = 0; b < B; ++b) {
        const Vec kx = keep_row(mx, b, la), ky = keep_row(my, b, lb);
        for (int64_t i = 0; i < la; ++i)
            for (int64_t j = 0; j < lb; ++j) {
                const double E = alpha * dot(F("F_E", row(X, b, i)), F("F_E", row(Y, b, j)));
                const Vec diff = sub(F("F_N", row(X, b, i)), F("F_N", row(Y, b, j)));
                const double N = -beta * sum(testing::each(diff, absolute));
                M(b, i, j) = kx[size_t(i)] * ky[size_t(j)] * std::tanh(E) * sigmoid(N);
            }
        for (int64_t i = 0; i < la; ++i)
            for (int64_t j = 0; j < lb; ++j) {
                set_row(Xp, b, i, add(row(Xp, b, i), scale(row(Y, b, j), M(b, i, j))));
                set_row(Yp, b, j, add(row(Yp, b, j), scale(row(X, b, i), M(b, i, j))));
            }
    }
    return {{"aligned_a", Xp}, {"aligned_b", Yp}, {"weights", M}};
}

// ---- 72. cosnet_co_attention ---------------------------------------------------------------------

namespace {

// W of the variant from its parameters: W; Pᵀ diag(D) P; diag(D).   C×C
Array cosnet_weight(const Ref& r, CosnetW variant, int64_t C) {
    if (variant == CosnetW::vanilla) return r.p["W"];
    const Vec D = vec(r.p["D"]);
    Array W({C, C});
    const Array P = variant == CosnetW::symmetric ? r.p["P"] : Array();
    for (int64_t k = 0; k < C; ++k)
        for (int64_t l = 0; l < C; ++l)
            if (variant == CosnetW::channel) {
                W(k, l) = k == l ? D[size_t(k)] : 0.0;
            } else {
                for (int64_t q = 0; q < C; ++q) W(k, l) += P(q, k) * D[size_t(q)] * P(q, l);
            }
    return W;
}

}  // namespace

// 72: the frames flattened to N×C (position n = y·W + x):
//   S = V_b W V_aᵀ;  Z_a = softmax_row(Sᵀ) V_b;  Z_b = softmax_row(S) V_a
//   g = σ(Z w_f + b_f);  out = [g ⊙ Z; V] along channels
// V_a, V_b B×C×H×W → out B×2C×H×W, S B×N×N, weights B×N×N, gates B×N
std::vector<Expected> cosnet_co_attention_reference(const Ref& r, CosnetW variant) {
    const Array &Va = r.x[0], &Vb = r.x[1];
    const int64_t B = Va.size(0), C = Va.size(1), H = Va.size(2), Wd = Va.size(3), N = H * Wd;
    const Array W = cosnet_weight(r, variant, C);
    const Vec wf = vec(r.p["w_f"]);
    const double bf = r.p["b_f"][0];
    auto position = [&](const Array& V, int64_t b, int64_t n) {
        Vec v(static_cast<size_t>(C));
        for (int64_t c = 0; c < C; ++c) v[size_t(c)] = V(b, c, n / Wd, n % Wd);
        return v;
    };
    Array S({B, N, N}), wa({B, N, N}), wb({B, N, N}), ga({B, N}), gb({B, N});
    Array out_a({B, 2 * C, H, Wd}), out_b({B, 2 * C, H, Wd});
    for (int64_t b = 0; b < B; ++b) {
        for (int64_t i = 0; i < N; ++i)
            for (int64_t j = 0; j < N; ++j) S(b, i, j) = dot(position(Vb, b, i), matvec(W, position(Va, b, j)));
        for (int64_t n = 0; n < N; ++n) {
            Vec column(static_cast<size_t>(N));
            for (int64_t i = 0; i < N; ++i) column[size_t(i)] = S(b, i, n);
            set_row(wa, b, n, softmax(column));       // row n of softmax_row(Sᵀ)
            set_row(wb, b, n, softmax(row(S, b, n)));  // row n of softmax_row(S)
        }
        for (int64_t n = 0; n < N; ++n) {
            Vec Za(size_t(C), 0.0), Zb(size_t(C), 0.0);
            for (int64_t m = 0; m < N; ++m) {
                Za = add(Za, scale(position(Vb, b, m), wa(b, n, m)));
                Zb = add(Zb, scale(position(Va, b, m), wb(b, n, m)));
            }
            ga(b, n) = sigmoid(dot(Za, wf) + bf);
            gb(b, n) = sigmoid(dot(Zb, wf) + bf);
            for (int64_t c = 0; c < C; ++c) {
                out_a(b, c, n / Wd, n % Wd) = ga(b, n) * Za[size_t(c)];
                out_b(b, c, n / Wd, n % Wd) = gb(b, n) * Zb[size_t(c)];
                out_a(b, C + c, n / Wd, n % Wd) = Va(b, c, n / Wd, n % Wd);
                out_b(b, C + c, n / Wd, n % Wd) = Vb(b, c, n / Wd, n % Wd);
            }
        }
    }
    return {{"out_a", out_a}, {"out_b", out_b}, {"affinity", S}, {"weights_a", wa},
            {"weights_b", wb}, {"gate_a", ga},   {"gate_b", gb}};
}

// ---- 73. can_cross_attention ---------------------------------------------------------------------

// 73: positions m = h·w (n = y·w + x), rows L2-normalised:
//   R^p_ij = p̂_iᵀ q̂_j;  R^q = (R^p)ᵀ
//   w = W_2 ReLU(W_1 GAP(R)),  GAP(R)_j = (1/m) Σ_i R_ij
//   A_i = softmax_i(wᵀ R_{i,:} / τ);  P̄ = P ⊙ (1 + A^p) position by position, Q̄ likewise
// P, Q B×c×h×w, W_1 (m/r)×m, W_2 m×(m/r)
std::vector<Expected> can_cross_attention_reference(const Ref& r, double tau) {
    const Array &P = r.x[0], &Q = r.x[1];
    const Array W_1 = r.p["W_1"], W_2 = r.p["W_2"];
    const int64_t B = P.size(0), c = P.size(1), h = P.size(2), w = P.size(3), m = h * w;
    auto unit = [&](const Array& X, int64_t b, int64_t n) {
        Vec v(static_cast<size_t>(c));
        for (int64_t k = 0; k < c; ++k) v[size_t(k)] = X(b, k, n / w, n % w);
        return scale(v, 1 / norm(v));
    };
    // A = softmax_i(wᵀ R_{i,:} / τ) of one m×m correlation R
    auto attention = [&](const Array& R) {
        Vec gap(size_t(m), 0.0);
        for (int64_t i = 0; i < m; ++i) gap = add(gap, scale(row(R, i), 1.0 / double(m)));
        const Vec kernel = matvec(W_2, testing::each(matvec(W_1, gap), relu));
        Vec logits(static_cast<size_t>(m));
        for (int64_t i = 0; i < m; ++i) logits[size_t(i)] = dot(kernel, row(R, i)) / tau;
        return softmax(logits);
    };
    Array Rp({B, m, m}), Ap({B, m}), Aq({B, m}), Pbar = P, Qbar = Q;
    for (int64_t b = 0; b < B; ++b) {
        Array R({m, m}), Rt({m, m});
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < m; ++j) Rp(b, i, j) = R(i, j) = Rt(j, i) = dot(unit(P, b, i), unit(Q, b, j));
        set_row(Ap, b, attention(R));
        set_row(Aq, b, attention(Rt));
        for (int64_t k = 0; k < c; ++k)
            for (int64_t n = 0; n < m; ++n) {
                Pbar(b, k, n / w, n % w) *= 1 + Ap(b, n);
                Qbar(b, k, n / w, n % w) *= 1 + Aq(b, n);
            }
    }
    return {{"P_bar", Pbar}, {"Q_bar", Qbar}, {"weights_p", Ap}, {"weights_q", Aq}, {"correlation", Rp}};
}

// ---- properties ---------------------------------------------------------------------------

namespace {

// "" when `actual` equals `expected` to 1e-9, else where they differ.
std::string differ(const std::string& what, const Array& expected, const Array& actual) {
    if (expected.shape() != actual.shape())
        return what + ": shape " + actual.shape_str() + ", expected " + expected.shape_str();
    for (int64_t i = 0; i < expected.numel(); ++i)
        if (!(std::abs(expected[i] - actual[i]) <= 1e-9 * (1 + std::abs(expected[i]))))
            return what + " at flat index " + std::to_string(i) + ": " + std::to_string(actual[i]) + ", expected " +
                   std::to_string(expected[i]);
    return "";
}

// X with its last two axes swapped.
Array transposed(const Array& X) {
    std::vector<int64_t> shape = X.shape();
    const int64_t n = X.size(-2), m = X.size(-1), outer = X.numel() / (n * m);
    std::swap(shape[shape.size() - 2], shape[shape.size() - 1]);
    Array out(shape);
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < m; ++j) out[(o * m + j) * n + i] = X[(o * n + i) * m + j];
    return out;
}

// The case's inputs and masks with the first two of each swapped.
Evaluation run_swapped(const PropertyContext& c) {
    std::vector<Tensor> x = c.inputs, m = c.masks;
    std::swap(x[0], x[1]);
    if (m.size() >= 2) std::swap(m[0], m[1]);
    return c.run(x, m);
}

}  // namespace

Property swapping_transposes(std::vector<std::string> weights) {
    return {"swapping the two inputs transposes the weights", [weights](const PropertyContext& c) {
                const Evaluation before = c.run(c.inputs, c.masks), after = run_swapped(c);
                for (const std::string& w : weights) {
                    std::string err = differ(w + " after the swap", transposed(before[w]), after[w]);
                    if (!err.empty()) return err;
                }
                return std::string();
            }};
}

Property swapping_swaps(std::vector<std::pair<std::string, std::string>> pairs) {
    return {"swapping the two inputs swaps the outputs", [pairs](const PropertyContext& c) {
                const Evaluation before = c.run(c.inputs, c.masks), after = run_swapped(c);
                for (const auto& [first, second] : pairs) {
                    std::string err = differ(first + " after the swap", before[second], after[first]);
                    if (err.empty()) err = differ(second + " after the swap", before[first], after[second]);
                    if (!err.empty()) return err;
                }
                return std::string();
            }};
}

Property same_inputs_equal_outputs(std::vector<std::pair<std::string, std::string>> pairs) {
    return {"the same input twice gives equal outputs", [pairs](const PropertyContext& c) {
                std::vector<Tensor> x = c.inputs, m = c.masks;
                x[1] = x[0];
                if (m.size() >= 2) m[1] = m[0];
                const Evaluation e = c.run(x, m);
                for (const auto& [first, second] : pairs) {
                    std::string err = differ(second, e[first], e[second]);
                    if (!err.empty()) return err;
                }
                return std::string();
            }};
}

Property cosnet_convex(const std::string& out, const std::string& gate, int other_frame) {
    return {out + " / " + gate + " is a convex combination of the other frame's positions",
            [=](const PropertyContext& c) -> std::string {
                const Evaluation e = c.run(c.inputs, c.masks);
                const Array O(e[out]), g(e[gate]), V(c.inputs[size_t(other_frame)]);
                const int64_t B = V.size(0), C = V.size(1), H = V.size(2), W = V.size(3);
                for (int64_t b = 0; b < B; ++b)
                    for (int64_t k = 0; k < C; ++k) {
                        double lo = INFINITY, hi = -INFINITY;
                        for (int64_t y = 0; y < H; ++y)
                            for (int64_t x = 0; x < W; ++x) {
                                lo = std::min(lo, V(b, k, y, x));
                                hi = std::max(hi, V(b, k, y, x));
                            }
                        for (int64_t y = 0; y < H; ++y)
                            for (int64_t x = 0; x < W; ++x) {
                                const double z = O(b, k, y, x) / g(b, y * W + x);
                                if (z < lo - 1e-9 || z > hi + 1e-9)
                                    return "Z[" + std::to_string(b) + ", " + std::to_string(k) + ", " +
                                           std::to_string(y) + ", " + std::to_string(x) + "] = " + std::to_string(z) +
                                           " lies outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
                            }
                    }
                return "";
            }};
}

}  // namespace attn::testing::sentence_pair
