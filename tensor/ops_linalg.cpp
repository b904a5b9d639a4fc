// Linear algebra: the batched matrix product, and allclose for tests.
//
//   C[..., i, j] = Σ_k op(A)[..., i, k] · op(B)[..., k, j]
//   A ...×M×K (or ...×K×M with trans_a), B ...×K×N (or ...×N×K with trans_b)
//   → C batch×M×N, where batch = the broadcast of A's and B's leading axes.
//
// All the arithmetic happens in the GEMM (tensor/gemm/). This file only works
// out which matrices to multiply:
//   - a transpose is never copied: trans_a / trans_b become the GEMM's flags;
//   - when B is one matrix shared by the whole batch and A is not transposed
//     (x·W in every Linear layer: B×n×d · d×e), the batch folds into the rows:
//     one (B·n)×d · d×e product, the GEMM's best case;
//   - otherwise the batch axes are merged where possible and walked; each run
//     along the innermost batch axis is one gemm_batched call, where an input
//     broadcast along that axis gets stride 0 (the same matrix reused).
#include <cmath>
#include <stdexcept>
#include <string>

#include "tensor/gemm/gemm.hpp"
#include "tensor/ops.hpp"

namespace attn {
namespace {

// The sizes of one matmul call, worked out from the shapes and flags.
struct MatmulPlan {
    int64_t M = 0, N = 0, K = 0;
    Shape batch;  // broadcast leading axes of the result
    Shape out;    // batch × M × N
};

Shape leading(const Shape& s) {
    Shape lead;
    for (int i = 0; i + 2 < s.rank(); ++i) lead.push_back(s[i]);
    return lead;
}

MatmulPlan plan_matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, const char* op) {
    if (!a.defined() || !b.defined()) throw std::invalid_argument(std::string(op) + ": an input tensor is undefined");
    const Shape &sa = a.shape(), &sb = b.shape();
    const std::string shapes = sa.str() + (trans_a ? " (transposed)" : "") + " and " + sb.str() +
                               (trans_b ? " (transposed)" : "");
    if (sa.rank() < 2 || sb.rank() < 2)
        throw std::invalid_argument(std::string(op) + ": " + shapes + " need rank 2 or more (matrices)");
    const int64_t ra = sa[sa.rank() - 2], ca = sa[sa.rank() - 1];
    const int64_t rb = sb[sb.rank() - 2], cb = sb[sb.rank() - 1];
    MatmulPlan p;
    p.M = trans_a ? ca : ra;
    p.K = trans_a ? ra : ca;
    p.N = trans_b ? rb : cb;
    const int64_t kb = trans_b ? cb : rb;
    if (p.K != kb)
        throw std::invalid_argument(std::string(op) + ": " + shapes + " need a's " +
                                    (trans_a ? "rows" : "last dimension") + " (" + std::to_string(p.K) +
                                    ") to equal b's " + (trans_b ? "last dimension" : "rows") + " (" +
                                    std::to_string(kb) + ")");
    const Shape la = leading(sa), lb = leading(sb);
    try {
        p.batch = broadcast_shapes(la, lb, op);
    } catch (const std::invalid_argument&) {
        throw std::invalid_argument(std::string(op) + ": " + shapes + " have batch axes " + la.str() + " and " +
                                    lb.str() + ", which do not broadcast");
    }
    p.out = p.batch;
    p.out.push_back(p.M);
    p.out.push_back(p.N);
    return p;
}

// C = alpha·op(A)·op(B) + beta·C for every matrix of the batch.
void run_matmul(const MatmulPlan& p, real* c, const Tensor& a, const Tensor& b, bool trans_a, bool trans_b,
                real alpha, real beta) {
    const int64_t M = p.M, N = p.N, K = p.K;
    const int64_t count = p.batch.numel();
    if (count == 0 || M == 0 || N == 0) return;
    if (K == 0) {  // an empty sum: C = beta·C (beta == 0 overwrites, as in BLAS)
        for (int64_t i = 0, n = count * M * N; i < n; ++i) c[i] = beta == 0 ? real(0) : beta * c[i];
        return;
    }
    const Shape &sa = a.shape(), &sb = b.shape();
    const int64_t lda = sa[sa.rank() - 1], ldb = sb[sb.rank() - 1];
    const int64_t mat_a = M * K, mat_b = K * N, mat_c = M * N;
    const int64_t count_a = leading(sa).numel(), count_b = leading(sb).numel();

    if (count_b == 1 && count_a == count && !trans_a) {  // fold the batch into A's rows
        gemm(trans_a, trans_b, count * M, N, K, alpha, a.data(), lda, b.data(), ldb, beta, c, N);
        return;
    }

    // Strides (in elements) of each batch axis for A, B and C; 0 where broadcast.
    const int R = p.batch.rank();
    int64_t full[3][Shape::kMaxRank] = {};
    const Shape lead[2] = {leading(sa), leading(sb)};
    const int64_t mats[2] = {mat_a, mat_b};
    for (int k = 0; k < 2; ++k) {
        const int shift = R - lead[k].rank();
        int64_t stride = mats[k];
        for (int i = R - 1; i >= 0; --i) {
            const int j = i - shift;
            const int64_t d = j >= 0 ? lead[k][j] : 1;
            full[k][i] = d == 1 ? 0 : stride;
            stride *= d;
        }
    }
    int64_t stride_c = mat_c;  // C is contiguous
    for (int i = R - 1; i >= 0; --i) {
        full[2][i] = stride_c;
        stride_c *= p.batch[i];
    }
    // Merge neighbouring batch axes that all three walk as one (drop size-1 axes).
    int rank = 0;
    int64_t dims[Shape::kMaxRank] = {}, st[3][Shape::kMaxRank] = {};
    for (int i = 0; i < R; ++i) {
        if (p.batch[i] == 1) continue;
        bool merge = rank > 0;
        for (int k = 0; k < 3 && merge; ++k) merge = st[k][rank - 1] == full[k][i] * p.batch[i];
        if (merge) {
            dims[rank - 1] *= p.batch[i];
            for (int k = 0; k < 3; ++k) st[k][rank - 1] = full[k][i];
        } else {
            dims[rank] = p.batch[i];
            for (int k = 0; k < 3; ++k) st[k][rank] = full[k][i];
            ++rank;
        }
    }
    if (rank == 0) {  // a single product
        gemm(trans_a, trans_b, M, N, K, alpha, a.data(), lda, b.data(), ldb, beta, c, N);
        return;
    }
    // One gemm_batched call per run of the innermost merged axis; an odometer
    // walks the outer ones.
    const int last = rank - 1;
    int64_t idx[Shape::kMaxRank] = {}, off[3] = {};
    int64_t runs = 1;
    for (int i = 0; i < last; ++i) runs *= dims[i];
    for (int64_t r = 0; r < runs; ++r) {
        gemm_batched(trans_a, trans_b, dims[last], M, N, K, alpha, a.data() + off[0], lda, st[0][last],
                     b.data() + off[1], ldb, st[1][last], beta, c + off[2], N, st[2][last]);
        for (int i = last - 1; i >= 0; --i) {
            for (int k = 0; k < 3; ++k) off[k] += st[k][i];
            if (++idx[i] < dims[i]) break;
            for (int k = 0; k < 3; ++k) off[k] -= st[k][i] * dims[i];
            idx[i] = 0;
        }
    }
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
    const MatmulPlan p = plan_matmul(a, b, trans_a, trans_b, "matmul");
    Tensor out = Tensor::empty(p.out);
    run_matmul(p, out.data(), a, b, trans_a, trans_b, 1, 0);
    return out;
}

// out = alpha·op(a)·op(b) + beta·out. `out` must not share storage with a or
// b: the GEMM would read values it has already overwritten.
void matmul_into(Tensor& out, const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, real alpha,
                 real beta) {
    const MatmulPlan p = plan_matmul(a, b, trans_a, trans_b, "matmul_into");
    if (!out.defined() || out.shape() != p.out)
        throw std::invalid_argument("matmul_into: out has shape " + (out.defined() ? out.shape().str() : "undefined") +
                                    " but the product of " + a.shape().str() + " and " + b.shape().str() +
                                    " has shape " + p.out.str());
    if (out.shares_storage_with(a) || out.shares_storage_with(b))
        throw std::invalid_argument("matmul_into: out must not share storage with a or b");
    run_matmul(p, out.data(), a, b, trans_a, trans_b, alpha, beta);
}

// |a - b| <= atol + rtol·|b| everywhere (NumPy's rule; not symmetric in a, b).
// Equal infinities match; a NaN never does.
bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
    if (!a.defined() || !b.defined() || a.shape() != b.shape()) return false;
    const real *x = a.data(), *y = b.data();
    for (int64_t i = 0, n = a.numel(); i < n; ++i) {
        if (x[i] == y[i]) continue;
        if (std::isinf(x[i]) || std::isinf(y[i])) return false;  // unequal infinities
        const double diff = std::abs(static_cast<double>(x[i]) - static_cast<double>(y[i]));
        if (!(diff <= atol + rtol * std::abs(static_cast<double>(y[i])))) return false;
    }
    return true;
}

}  // namespace attn
