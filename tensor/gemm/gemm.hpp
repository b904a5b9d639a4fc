// GEMM: C = alpha · op(A) · op(B) + beta · C, on row-major matrices.
//
// op(A) is M×K and op(B) is K×N: with trans_a, A is stored K×M and read
// transposed (likewise B). lda/ldb/ldc are the row strides, in elements, of the
// matrices as stored. beta == 0 means C is written without being read (it may
// hold garbage or NaN), as in BLAS.
//
// The implementations stand side by side: gemm_reference (the triple loop,
// the definition), on x86-64 gemm_avx2 (AVX2 + FMA) and gemm_avx512
// (AVX-512F), on 64-bit ARM gemm_neon. gemm() picks the fastest one this CPU
// supports at run time (CPUID on x86), unless the environment variable
// ATTN_GEMM=reference|avx2|avx512|neon forces a path. The library is never
// compiled with -march=native: each x86 kernel file has its own
// instruction-set flags (see the Makefile); NEON is part of every aarch64 CPU.
#pragma once

#include <cstdint>
#include <string_view>

namespace attn {

enum class GemmPath { reference, avx2, avx512, neon };

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

// The double-precision build (ATTN_DOUBLE) uses this one; it is the reference
// loop, blocked for the cache, which is plenty for gradient checks.
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
          const double* B, int64_t ldb, double beta, double* C, int64_t ldc);

// `batch` independent products; matrix i of A starts at A + i*stride_a (etc.).
// A stride of 0 reuses the same matrix for every product (broadcasting).
void gemm_batched(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N, int64_t K, float alpha,
                  const float* A, int64_t lda, int64_t stride_a, const float* B, int64_t ldb, int64_t stride_b,
                  float beta, float* C, int64_t ldc, int64_t stride_c);
void gemm_batched(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N, int64_t K, double alpha,
                  const double* A, int64_t lda, int64_t stride_a, const double* B, int64_t ldb, int64_t stride_b,
                  double beta, double* C, int64_t ldc, int64_t stride_c);

// ---- an operand that is not stored --------------------------------------------
// C = alpha · op(A) · B + beta · C where B (K×N) exists only as a function
// that writes any block of it in the packed layout the kernels read: the
// columns of a convolution (autograd/ops_conv.cpp) are packed straight from
// the image, one block at a time, and the unfolded matrix is never stored
// ("implicit GEMM"). pack(ctx, k0, kc, j0, nc, nr, dest) writes rows
// [k0, k0 + kc) and columns [j0, j0 + nc) of B as panels of nr columns,
//
//     B[k0 + k][j0 + q·nr + j]  at  dest[q·nr·kc + k·nr + j],
//
// with zeros in the last panel's columns past nc. (With k0 = j0 = 0, kc = K
// and nc = nr = N that is B itself, row-major: how the reference and double
// versions get it.) It may be called from several threads at once.
template <class T>
struct ImplicitB {
    void (*pack)(const void* ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nc, int64_t nr, T* dest);
    const void* ctx;
};
void gemm_implicit_b(bool trans_a, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                     const ImplicitB<float>& B, float beta, float* C, int64_t ldc);
void gemm_implicit_b(bool trans_a, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
                     const ImplicitB<double>& B, double beta, double* C, int64_t ldc);

// One path, chosen explicitly (tests and benchmarks use these). A path this
// CPU does not support throws std::runtime_error.
void gemm_with(GemmPath path, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
               const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

void gemm_implicit_b_with(GemmPath path, bool trans_a, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                          int64_t lda, const ImplicitB<float>& B, float beta, float* C, int64_t ldc);

bool gemm_path_supported(GemmPath path);
GemmPath gemm_default_path();  // what gemm() uses: ATTN_GEMM, else the best supported
const char* gemm_path_name(GemmPath path);
// "reference", "avx2", "avx512" or "neon" (the values of ATTN_GEMM); anything else
// throws std::invalid_argument.
GemmPath parse_gemm_path(std::string_view name);

}  // namespace attn
