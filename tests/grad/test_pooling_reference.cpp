// The independent references of catalog entries 74–80 (pooling, set functions
// and gating; attention/pooling.hpp): each rule written again in plain loops
// with only tests/grad/reference.hpp and <cmath>, reading masks from r.masks
// (masks[0], absent = keep every row) and parameters from r.p by name. They
// share nothing with attention/: a wrong op there cannot agree with them.
// Declared in test_pooling_reference.hpp; the registry entries are in
// test_pooling.cpp.
#include "tests/grad/test_pooling_reference.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace attn::testing {

namespace {

// The keep mask of example b: masks[0][b, :], or all ones without a mask.
Vec keep_of(const Ref& r, int64_t b, int64_t n) {
    return r.masks.empty() ? Vec(at(n), 1.0) : keep_row(r.masks[0], b, n);
}

// The kept rows of example b, in order.
std::vector<int64_t> kept_rows(const Ref& r, int64_t b, int64_t n) {
    const Vec keep = keep_of(r, b, n);
    std::vector<int64_t> rows;
    for (int64_t i = 0; i < n; ++i)
        if (keep[at(i)] != 0) rows.push_back(i);
    return rows;
}

}  // namespace

// ---- 74. sum_mean_max_pooling -----------------------------------------------------------------

// Over the kept rows K of example b:
//   sum = Σ_{i∈K} X_i,   mean = sum / |K|,   max_k = max_{i∈K} X_ik;   all three 0 when K is empty.
// X B×n×d → sum, mean, max, each B×d.
std::vector<Expected> sum_mean_max_pooling_reference(const Ref& r) {
    const Array& X = r.x[0];
    const int64_t B = X.size(0), n = X.size(1), d = X.size(2);
    Array S({B, d}), M({B, d}), T({B, d});
    for (int64_t b = 0; b < B; ++b) {
        const std::vector<int64_t> K = kept_rows(r, b, n);
        for (int64_t k = 0; k < d; ++k) {
            double total = 0, top = -INFINITY;
            for (int64_t i : K) total += X(b, i, k), top = std::max(top, X(b, i, k));
            S(b, k) = total;
            M(b, k) = K.empty() ? 0.0 : total / double(K.size());
            T(b, k) = K.empty() ? 0.0 : top;
        }
    }
    return {{"sum", S}, {"mean", M}, {"max", T}};
}

// ---- 75. k_max_pooling ------------------------------------------------------------------------

// Per column k of example b: pick, k times, the largest value of the kept rows
// not yet picked (scanning in row order, so on a tie the earlier row); write the
// picked values in row order; slots past the number of kept rows are 0.
// X B×n×d → B×k×d.
Array k_max_pooling_reference(const Ref& r, int64_t k) {
    const Array& X = r.x[0];
    const int64_t B = X.size(0), n = X.size(1), d = X.size(2);
    Array out({B, k, d});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t c = 0; c < d; ++c) {
            std::vector<bool> picked(at(n), false);
            const std::vector<int64_t> K = kept_rows(r, b, n);
            for (int64_t round = 0; round < k && round < int64_t(K.size()); ++round) {
                int64_t best = -1;
                for (int64_t i : K)
                    if (!picked[at(i)] && (best < 0 || X(b, i, c) > X(b, best, c))) best = i;
                picked[at(best)] = true;
            }
            int64_t slot = 0;
            for (int64_t i = 0; i < n; ++i)
                if (picked[at(i)]) out(b, slot++, c) = X(b, i, c);
        }
    return out;
}

// Kalchbrenner et al.'s dynamic k for layer ℓ of L and sentence length s.
int64_t dynamic_k_reference(int64_t k_top, int64_t layer, int64_t layers, int64_t length) {
    return std::max(k_top, int64_t(std::ceil(double(layers - layer) / double(layers) * double(length))));
}

// ---- 76. chunk_max_pooling --------------------------------------------------------------------

namespace {

// The max of rows first … last of example b, per column, into out[b, j, :].
void max_of_rows(const Array& X, int64_t b, const std::vector<int64_t>& rows, Array& out, int64_t j) {
    for (int64_t c = 0; c < X.size(2); ++c) {
        double top = -INFINITY;
        for (int64_t i : rows) top = std::max(top, X(b, i, c));
        out(b, j, c) = rows.empty() ? 0.0 : top;
    }
}

}  // namespace

// The L kept rows of example b in c contiguous chunks, chunk j holding
// ⌊L/c⌋ + (1 if j < L mod c) of them; the max of each, per column (0 for an
// empty chunk). X B×n×d → B×c×d.
Array chunk_max_pooling_reference(const Ref& r, int64_t chunks) {
    const Array& X = r.x[0];
    const int64_t B = X.size(0), n = X.size(1);
    Array out({B, chunks, X.size(2)});
    for (int64_t b = 0; b < B; ++b) {
        const std::vector<int64_t> K = kept_rows(r, b, n);
        const int64_t L = int64_t(K.size());
        size_t next = 0;
        for (int64_t j = 0; j < chunks; ++j) {
            const int64_t size = L / chunks + (j < L % chunks ? 1 : 0);
            const std::vector<int64_t> rows(K.begin() + long(next), K.begin() + long(next) + size);
            next += at(size);
            max_of_rows(X, b, rows, out, j);
        }
    }
    return out;
}

// Caller-given boundaries 0 = b_0 < … < b_c = n: chunk j is rows b_j … b_{j+1} − 1.
Array chunk_max_pooling_reference(const Ref& r, const std::vector<int64_t>& boundaries) {
    const Array& X = r.x[0];
    const int64_t chunks = int64_t(boundaries.size()) - 1;
    Array out({X.size(0), chunks, X.size(2)});
    for (int64_t b = 0; b < X.size(0); ++b)
        for (int64_t j = 0; j < chunks; ++j) {
            std::vector<int64_t> rows;
            for (int64_t i = boundaries[at(j)]; i < boundaries[at(j + 1)]; ++i) rows.push_back(i);
            max_of_rows(X, b, rows, out, j);
        }
    return out;
}

// ---- 77. stochastic_pooling -------------------------------------------------------------------

namespace {

// The module's draw (sample_categorical's): u ~ U[0, 1), then the first l with
// p_l > 0 and u·Σp < p_0 + … + p_l (the last positive l, should rounding pass them all).
size_t replay_draw(const Vec& p, Generator& noise) {
    const double t = noise.uniform() * sum(p);
    size_t pick = 0;
    double cumulative = 0;
    for (size_t l = 0; l < p.size(); ++l) {
        cumulative += p[l];
        if (p[l] == 0) continue;
        pick = l;
        if (t < cumulative) break;
    }
    return pick;
}

}  // namespace

// Window (ho, wo) of plane (b, c) holds a_i = U[b, c, ho·s_h + u, wo·s_w + v],
// i = u·k_w + v, and p_i = a_i / Σ a:
//   test:     s = Σ_i p_i a_i = Σ a_i² / Σ a, 0 for an all-zero window;
//   training: s = a_l, l ~ p, one draw per window in (b, c, ho, wo) order
//             (an all-zero window draws l uniformly; every a_l is 0 there).
// U B×C×H×W → B×C×Ho×Wo, Ho = ⌊(H − k_h)/s_h⌋ + 1.
Array stochastic_pooling_reference(const Ref& r, Window window) {
    const Array& U = r.x[0];
    const int64_t B = U.size(0), C = U.size(1);
    const int64_t Ho = (U.size(2) - window.kh) / window.sh + 1, Wo = (U.size(3) - window.kw) / window.sw + 1;
    Array out({B, C, Ho, Wo});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t c = 0; c < C; ++c)
            for (int64_t ho = 0; ho < Ho; ++ho)
                for (int64_t wo = 0; wo < Wo; ++wo) {
                    Vec a;
                    for (int64_t u = 0; u < window.kh; ++u)
                        for (int64_t v = 0; v < window.kw; ++v)
                            a.push_back(U(b, c, ho * window.sh + u, wo * window.sw + v));
                    const double total = sum(a);
                    if (r.training)
                        out(b, c, ho, wo) = a[replay_draw(total == 0 ? Vec(a.size(), 1.0) : a, r.noise)];
                    else
                        out(b, c, ho, wo) = total == 0 ? 0.0 : dot(a, a) / total;
                }
    return out;
}

// ---- 78. spatial_pyramid_pooling --------------------------------------------------------------

// Level b: bin (u, v) covers rows ⌊u·H/b⌋ … ⌈(u+1)·H/b⌉ − 1 and columns
// ⌊v·W/b⌋ … ⌈(v+1)·W/b⌉ − 1; out[offset_ℓ + c·b² + u·b + v] = the bin's max in
// channel c, levels one after the other. U B×C×H×W → B×(C·Σ b²).
Array spatial_pyramid_pooling_reference(const Ref& r, const std::vector<int64_t>& levels) {
    const Array& U = r.x[0];
    const int64_t B = U.size(0), C = U.size(1), H = U.size(2), W = U.size(3);
    auto first = [](int64_t u, int64_t b, int64_t a) { return int64_t(std::floor(double(u * a) / double(b))); };
    auto last = [](int64_t u, int64_t b, int64_t a) { return int64_t(std::ceil(double((u + 1) * a) / double(b))) - 1; };
    int64_t width = 0;
    for (int64_t b : levels) width += C * b * b;
    Array out({B, width});
    for (int64_t bb = 0; bb < B; ++bb) {
        int64_t offset = 0;
        for (int64_t b : levels) {
            for (int64_t c = 0; c < C; ++c)
                for (int64_t u = 0; u < b; ++u)
                    for (int64_t v = 0; v < b; ++v) {
                        double top = -INFINITY;
                        for (int64_t h = first(u, b, H); h <= last(u, b, H); ++h)
                            for (int64_t w = first(v, b, W); w <= last(v, b, W); ++w)
                                top = std::max(top, U(bb, c, h, w));
                        out(bb, offset + c * b * b + u * b + v) = top;
                    }
            offset += C * b * b;
        }
    }
    return out;
}

// ---- 79. deep_sets_pooling --------------------------------------------------------------------

namespace {

// ⊕ over the kept rows K of vectors v_i: Σ, the mean, or the max per feature; 0 when K is empty.
Vec pool_rows(const std::vector<Vec>& v, const std::vector<int64_t>& K, int64_t width, SetPool how) {
    Vec out(at(width), how == SetPool::max ? -INFINITY : 0.0);
    for (int64_t i : K)
        for (int64_t k = 0; k < width; ++k) {
            const double x = v[at(i)][at(k)];
            out[at(k)] = how == SetPool::max ? std::max(out[at(k)], x) : out[at(k)] + x;
        }
    if (K.empty()) return Vec(at(width), 0.0);
    return how == SetPool::mean ? scale(out, 1.0 / double(K.size())) : out;
}

}  // namespace

// f(X) = ρ(⊕_{i∈K} φ(x_i)),  φ(x) = ReLU(W_φ2 ReLU(W_φ1 x + b_φ1) + b_φ2),
//                            ρ(z) = W_ρ2 ReLU(W_ρ1 z + b_ρ1) + b_ρ2.   X B×n×d → B×d_out
Array deep_sets_pooling_reference(const Ref& r, SetPool how) {
    const Array& X = r.x[0];
    const int64_t B = X.size(0), n = X.size(1);
    auto layer = [&](const std::string& name, const Vec& x) {
        return add(matvec(r.p[name + ".weight"], x), vec(r.p[name + ".bias"]));
    };
    const int64_t hidden = r.p["phi2.weight"].size(0);
    Array out({B, r.p["rho2.weight"].size(0)});
    for (int64_t b = 0; b < B; ++b) {
        std::vector<Vec> phi;
        for (int64_t i = 0; i < n; ++i)
            phi.push_back(testing::each(layer("phi2", testing::each(layer("phi1", row(X, b, i)), relu)), relu));
        const Vec pooled = pool_rows(phi, kept_rows(r, b, n), hidden, how);
        set_row(out, b, layer("rho2", testing::each(layer("rho1", pooled), relu)));
    }
    return out;
}

// The equivariant layer: Y_i = tanh(Λᵀ x_i + Γᵀ ⊕_{j∈K} x_j) for a kept row i, 0 for a
// masked one; Λ, Γ d×d' (so Λᵀ x is the row-layout X Λ). X B×n×d → B×n×d'.
Array deep_sets_equivariant_reference(const Ref& r, SetPool how) {
    const Array& X = r.x[0];
    const Array Lambda = r.p["Lambda"], Gamma = r.p["Gamma"];
    const int64_t B = X.size(0), n = X.size(1), d = X.size(2);
    Array out({B, n, Lambda.size(1)});
    for (int64_t b = 0; b < B; ++b) {
        std::vector<Vec> rows;
        for (int64_t i = 0; i < n; ++i) rows.push_back(row(X, b, i));
        const Vec keep = keep_of(r, b, n);
        const Vec shared = matvec_t(Gamma, pool_rows(rows, kept_rows(r, b, n), d, how));
        for (int64_t i = 0; i < n; ++i)
            if (keep[at(i)] != 0) set_row(out, b, i, testing::each(add(matvec_t(Lambda, rows[at(i)]), shared), tanh_));
    }
    return out;
}

// ---- 80. gru_gating ---------------------------------------------------------------------------

// z_t = σ(W_z x_t + b_z + U_z h_{t−1}),  r_t = σ(W_r x_t + b_r + U_r h_{t−1}),
// h̃_t = tanh(W x_t + b + U (r_t ⊙ h_{t−1})),  h_t = (1 − z_t) ⊙ h_{t−1} + z_t ⊙ h̃_t;
// a masked step keeps h_{t−1} and reports z_t = r_t = 0. X B×T×d_x, h_0 B×d_h
// (x[1], or zeros) → states, update_gates, reset_gates, each B×T×d_h.
std::vector<Expected> gru_gating_reference(const Ref& r) {
    const Array& X = r.x[0];
    const int64_t B = X.size(0), T = X.size(1);
    const Array Wz = r.p["W_z.weight"], Wr = r.p["W_r.weight"], W = r.p["W.weight"];
    const Array Uz = r.p["U_z.weight"], Ur = r.p["U_r.weight"], U = r.p["U.weight"];
    const Vec bz = vec(r.p["W_z.bias"]), br = vec(r.p["W_r.bias"]), b = vec(r.p["W.bias"]);
    const int64_t dh = Uz.size(0);
    Array states({B, T, dh}), Z({B, T, dh}), R({B, T, dh});
    for (int64_t bb = 0; bb < B; ++bb) {
        Vec h = r.x.size() > 1 ? row(r.x[1], bb) : Vec(at(dh), 0.0);
        const Vec keep = keep_of(r, bb, T);
        for (int64_t t = 0; t < T; ++t) {
            if (keep[at(t)] != 0) {
                const Vec x = row(X, bb, t);
                const Vec z = testing::each(add(add(matvec(Wz, x), bz), matvec(Uz, h)), sigmoid);
                const Vec rr = testing::each(add(add(matvec(Wr, x), br), matvec(Ur, h)), sigmoid);
                const Vec candidate = testing::each(add(add(matvec(W, x), b), matvec(U, hadamard(rr, h))), tanh_);
                for (int64_t k = 0; k < dh; ++k) h[at(k)] = (1 - z[at(k)]) * h[at(k)] + z[at(k)] * candidate[at(k)];
                set_row(Z, bb, t, z);
                set_row(R, bb, t, rr);
            }
            set_row(states, bb, t, h);
        }
    }
    return {{"states", states}, {"update_gates", Z}, {"reset_gates", R}};
}

}  // namespace attn::testing
