// The GEMM entry points and the run-time choice of kernel. (Provisional:
// the reference path only; the SIMD paths are added in gemm_avx2.cpp and
// gemm_avx512.cpp.)
#include "tensor/gemm/gemm.hpp"

#include <stdexcept>

namespace attn {
namespace {

// C = alpha·op(A)·op(B) + beta·C, the definition, one dot product per entry.
template <class T>
void gemm_reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
                    const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
    for (int64_t i = 0; i < M; ++i) {
        for (int64_t j = 0; j < N; ++j) {
            T acc = 0;
            for (int64_t k = 0; k < K; ++k) {
                const T a = trans_a ? A[k * lda + i] : A[i * lda + k];
                const T b = trans_b ? B[j * ldb + k] : B[k * ldb + j];
                acc += a * b;
            }
            T& c = C[i * ldc + j];
            c = beta == T(0) ? alpha * acc : alpha * acc + beta * c;
        }
    }
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
    gemm_reference(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
          const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
    gemm_reference(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm_batched(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N, int64_t K, float alpha,
                  const float* A, int64_t lda, int64_t stride_a, const float* B, int64_t ldb, int64_t stride_b,
                  float beta, float* C, int64_t ldc, int64_t stride_c) {
    for (int64_t i = 0; i < batch; ++i)
        gemm(trans_a, trans_b, M, N, K, alpha, A + i * stride_a, lda, B + i * stride_b, ldb, beta, C + i * stride_c,
             ldc);
}

void gemm_batched(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N, int64_t K, double alpha,
                  const double* A, int64_t lda, int64_t stride_a, const double* B, int64_t ldb, int64_t stride_b,
                  double beta, double* C, int64_t ldc, int64_t stride_c) {
    for (int64_t i = 0; i < batch; ++i)
        gemm(trans_a, trans_b, M, N, K, alpha, A + i * stride_a, lda, B + i * stride_b, ldb, beta, C + i * stride_c,
             ldc);
}

}  // namespace attn
