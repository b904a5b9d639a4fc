// The additive score's fast twin (attention/scores.hpp): additive_score_fused,
// one op with its backward written by hand, row by row (the row kernels of
// attention/scores_kernels.hpp; AVX-512 ones in scores_avx512.cpp).
// AdditiveScore chooses it after set_fast; the formula itself, the one to
// read, is AdditiveScore::score_projected in attention/scores.cpp, and
// tests/test_scores_fused.cpp checks that the two agree.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "attention/scores.hpp"
#include "attention/scores_kernels.hpp"
#include "autograd/record.hpp"
#include "tensor/fast_math.hpp"
#include "tensor/gemm/gemm.hpp"
#include "tensor/ops.hpp"
#include "tensor/parallel.hpp"
#include "tensor/profile.hpp"

namespace attn {

// ---- the fused additive score --------------------------------------------------------------

// The portable row kernels (attention/scores_kernels.hpp). Their loops take
// __restrict pointers: without the promise that the arrays do not overlap,
// the compiler (at -O2) keeps them scalar.

namespace {

// One (query, key) pair of the backward, G = ∂L/∂E_il, t = t_il:
//   δ = G·w ⊙ (1 − t²)     dq += δ     dk += δ     dw += G·t
void additive_pair_backward(real G, const real* __restrict t, const real* __restrict w, int64_t dw,
                            real* __restrict dq, real* __restrict dk, real* __restrict dw_sum) {
    for (int64_t a = 0; a < dw; ++a) {
        const real d = G * w[a] * (1 - t[a] * t[a]);
        dq[a] += d;
        dk[a] += d;
        dw_sum[a] += G * t[a];
    }
}

// qb = pq + b (b null: no bias).
void add_bias(const real* __restrict pq, const real* __restrict bias, int64_t dw, real* __restrict qb) {
    if (bias) {
        for (int64_t a = 0; a < dw; ++a) qb[a] = pq[a] + bias[a];
    } else {
        for (int64_t a = 0; a < dw; ++a) qb[a] = pq[a];
    }
}

// The AVX-512 rows when the fast-math path is avx512 (float only: a template,
// so that with real = double the float-only calls are never compiled).
template <class R>
bool forward_avx512(const R* qb, const R* pk, const R* w, int64_t n, int64_t dw, R* t, R* e) {
    if constexpr (std::is_same_v<R, float>) {
        if (fast_math_path() != FastMathPath::avx512) return false;
        detail::additive_row_forward_avx512(qb, pk, w, n, dw, t, e);
        return true;
    }
    return false;
}
template <class R>
bool backward_avx512(const R* g, const R* t, const R* w, int64_t n, int64_t dw, R* dq, R* dk, R* dw_sum) {
    if constexpr (std::is_same_v<R, float>) {
        if (fast_math_path() != FastMathPath::avx512) return false;
        detail::additive_row_backward_avx512(g, t, w, n, dw, dq, dk, dw_sum);
        return true;
    }
    return false;
}

}  // namespace

void detail::additive_row_forward(const real* __restrict qb, const real* __restrict pk, const real* w, int64_t n,
                                  int64_t dw, real* __restrict t, real* e) {
    if (forward_avx512(qb, pk, w, n, dw, t, e)) return;
    // t = tanh(qb + pk): n×d_w values, one tanh call over all of them
    for (int64_t l = 0; l < n; ++l)
        for (int64_t a = 0; a < dw; ++a) t[l * dw + a] = qb[a] + pk[l * dw + a];
    tanh_into(t, t, n * dw);
    // e = t w: n×d_w times d_w, the library's matrix-vector product
    gemm(false, false, n, 1, dw, real(1), t, dw, w, 1, real(0), e, 1);
}

void detail::additive_row_backward(const real* g, const real* t, const real* w, int64_t n, int64_t dw, real* dq,
                                   real* dk, real* dw_sum) {
    if (backward_avx512(g, t, w, n, dw, dq, dk, dw_sum)) return;
    for (int64_t l = 0; l < n; ++l) additive_pair_backward(g[l], t + l * dw, w, dw, dq, dk + l * dw, dw_sum);
}

#if !defined(__x86_64__)
void detail::additive_row_forward_avx512(const float*, const float*, const float*, int64_t, int64_t, float*, float*) {}
void detail::additive_row_backward_avx512(const float*, const float*, const float*, int64_t, int64_t, float*, float*,
                                          float*) {}
#endif

Var additive_score_fused(const Var& projected_queries, const Var& projected_keys, const Var& bias, const Var& w) {
    const ProfileScope scope("additive_score_fused");
    static const std::string who = "additive_score_fused";
    detail::check_pair(who, projected_queries, projected_keys);
    const int64_t B = projected_queries.size(0), m = projected_queries.size(1), n = projected_keys.size(1);
    const int64_t dw = projected_queries.size(2);
    if (projected_keys.size(2) != dw || w.rank() != 1 || w.size(0) != dw ||
        (bias.defined() && (bias.rank() != 1 || bias.size(0) != dw)))
        throw std::invalid_argument(who + ": projected queries " + projected_queries.shape().str() +
                                    ", projected keys " + projected_keys.shape().str() + ", w " + w.shape().str() +
                                    (bias.defined() ? ", b " + bias.shape().str() : std::string()) +
                                    ": the last axes and w (and b) need the same width d_w");
    const Tensor pq = projected_queries.value(), pk = projected_keys.value(), wv = w.value();
    const Tensor bv = bias.defined() ? bias.value() : Tensor();
    const real* pb = bv.defined() ? bv.data() : nullptr;

    // E[b, i, l] = w · t_il, t_il = tanh(pq_i + pk_l + b), one row (b, i) at
    // a time. t is kept for the backward (B×m×n×d_w, what the composed score
    // keeps too; computing it again there cost more than reading it).
    Tensor e = Tensor::empty({B, m, n}), t = Tensor::empty({B, m, n, dw});
    parallel_for(0, B * m, parallel_grain(n * dw), [&](int64_t lo, int64_t hi) {
        std::vector<real> qb(static_cast<size_t>(dw));
        for (int64_t r = lo; r < hi; ++r) {
            add_bias(pq.data() + r * dw, pb, dw, qb.data());
            detail::additive_row_forward(qb.data(), pk.data() + (r / m) * n * dw, wv.data(), n, dw,
                                         t.data() + r * n * dw, e.data() + r * n);
        }
    });

    std::vector<Var> inputs{projected_queries, projected_keys, w};
    if (bias.defined()) inputs.push_back(bias);
    const bool with_bias = bias.defined();
    return record("additive_score_fused", std::move(e), inputs, [t, wv, B, m, n, dw, with_bias](Backward& bw) {
        const real* g = bw.grad().data();
        real* dpq = bw.needs(0) ? bw.grad_buffer(0).data() : nullptr;
        real* dpk = bw.needs(1) ? bw.grad_buffer(1).data() : nullptr;
        // ∂w and ∂b sum over the batch: each example adds into its own row
        // here, and the rows are summed in order afterwards, so the result has
        // the same bits on any number of threads.
        Tensor dw_rows = Tensor::zeros({B, dw}), db_rows = Tensor::zeros({B, dw});
        parallel_for(0, B, parallel_grain(m * n * dw), [&](int64_t lo, int64_t hi) {
            std::vector<real> dq(static_cast<size_t>(dw)), dk_unused;  // Σ_l δ_il of one query
            if (!dpk) dk_unused.assign(static_cast<size_t>(n * dw), 0);
            for (int64_t b = lo; b < hi; ++b) {
                real* dk = dpk ? dpk + b * n * dw : dk_unused.data();
                for (int64_t i = 0; i < m; ++i) {
                    const int64_t r = b * m + i;
                    std::fill(dq.begin(), dq.end(), real(0));
                    detail::additive_row_backward(g + r * n, t.data() + r * n * dw, wv.data(), n, dw, dq.data(), dk,
                                                  dw_rows.data() + b * dw);
                    real* dbr = db_rows.data() + b * dw;  // ∂b = Σ_{b,i} Σ_l δ_il
                    for (int64_t a = 0; a < dw; ++a) dbr[a] += dq[a];
                    if (dpq)
                        for (int64_t a = 0; a < dw; ++a) dpq[r * dw + a] += dq[a];
                }
            }
        });
        if (bw.needs(2)) bw.accumulate(2, sum(dw_rows, 0));
        if (with_bias && bw.needs(3)) bw.accumulate(3, sum(db_rows, 0));
    });
}

}  // namespace attn
