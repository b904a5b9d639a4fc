// The matrix–vector product of gemm.cpp's gemv (acc = A·x, before alpha and
// beta), 8 floats at a time with AVX2 + FMA, for the two layouts that occur:
// rows of A contiguous (a dot product per row; x contiguous) and columns of A
// contiguous (acc += x_k · A[:, k]). Compiled with -mavx2 -mfma (the Makefile,
// by file name); gemm.cpp calls it only when CPUID has both.
#include <immintrin.h>

#include "tensor/gemm/gemm_internal.hpp"

namespace attn::gemm_internal {
namespace {

float horizontal_sum(__m256 v) {
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}

}  // namespace

bool gemv_avx2(int64_t M, int64_t K, const View& A, const float* x, int64_t incx, float* acc) {
    if (A.col_stride == 1 && incx == 1) {
        for (int64_t i = 0; i < M; ++i) {
            const float* row = A.data + i * A.row_stride;
            __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();  // two sums for the FMA latency
            int64_t k = 0;
            for (; k + 16 <= K; k += 16) {
                s0 = _mm256_fmadd_ps(_mm256_loadu_ps(row + k), _mm256_loadu_ps(x + k), s0);
                s1 = _mm256_fmadd_ps(_mm256_loadu_ps(row + k + 8), _mm256_loadu_ps(x + k + 8), s1);
            }
            float tail = 0;
            for (; k < K; ++k) tail += row[k] * x[k];
            acc[i] = horizontal_sum(_mm256_add_ps(s0, s1)) + tail;
        }
        return true;
    }
    if (A.row_stride == 1) {
        for (int64_t i = 0; i < M; ++i) acc[i] = 0;
        for (int64_t k = 0; k < K; ++k) {
            const __m256 xk = _mm256_set1_ps(x[k * incx]);
            const float* col = A.data + k * A.col_stride;
            int64_t i = 0;
            for (; i + 8 <= M; i += 8)
                _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(xk, _mm256_loadu_ps(col + i), _mm256_loadu_ps(acc + i)));
            for (; i < M; ++i) acc[i] += x[k * incx] * col[i];
        }
        return true;
    }
    return false;  // another layout: the caller's scalar loop
}

}  // namespace attn::gemm_internal
