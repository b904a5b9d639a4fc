// The matrix–vector product of gemm.cpp's gemv (acc = A·x, before alpha and
// beta), 4 floats at a time with NEON, for the two layouts that occur: rows
// of A contiguous (a dot product per row; x contiguous) and columns of A
// contiguous (acc += x_k · A[:, k]). As gemv_avx2.cpp; compiled when the
// compiler targets aarch64, where NEON is always there.
#if defined(__aarch64__)

#include <arm_neon.h>

#include "tensor/gemm/gemm_internal.hpp"

namespace attn::gemm_internal {

bool gemv_neon(int64_t M, int64_t K, const View& A, const float* x, int64_t incx, float* acc) {
    if (A.col_stride == 1 && incx == 1) {
        for (int64_t i = 0; i < M; ++i) {
            const float* row = A.data + i * A.row_stride;
            // Four sums, so that four FMAs are in flight (each waits ~4 cycles
            // for the one before it on the same sum).
            float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0, s2 = s0, s3 = s0;
            int64_t k = 0;
            for (; k + 16 <= K; k += 16) {
                s0 = vfmaq_f32(s0, vld1q_f32(row + k), vld1q_f32(x + k));
                s1 = vfmaq_f32(s1, vld1q_f32(row + k + 4), vld1q_f32(x + k + 4));
                s2 = vfmaq_f32(s2, vld1q_f32(row + k + 8), vld1q_f32(x + k + 8));
                s3 = vfmaq_f32(s3, vld1q_f32(row + k + 12), vld1q_f32(x + k + 12));
            }
            for (; k + 4 <= K; k += 4) s0 = vfmaq_f32(s0, vld1q_f32(row + k), vld1q_f32(x + k));
            float tail = 0;
            for (; k < K; ++k) tail += row[k] * x[k];
            acc[i] = vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3))) + tail;
        }
        return true;
    }
    if (A.row_stride == 1) {
        for (int64_t i = 0; i < M; ++i) acc[i] = 0;
        for (int64_t k = 0; k < K; ++k) {
            const float xk = x[k * incx];
            const float* col = A.data + k * A.col_stride;
            int64_t i = 0;
            for (; i + 4 <= M; i += 4) vst1q_f32(acc + i, vfmaq_n_f32(vld1q_f32(acc + i), vld1q_f32(col + i), xk));
            for (; i < M; ++i) acc[i] += xk * col[i];
        }
        return true;
    }
    return false;  // another layout: the caller's scalar loop
}

}  // namespace attn::gemm_internal

#endif  // __aarch64__
