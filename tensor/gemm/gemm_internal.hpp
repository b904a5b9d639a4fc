// What gemm.cpp (the entry points, dispatch and threading) and the SIMD
// kernel files (gemm_avx2.cpp, gemm_avx512.cpp, gemm_neon.cpp) share. Not
// part of the public API: include tensor/gemm/gemm.hpp instead.
#pragma once

#include <cstdint>

#include "tensor/gemm/gemm.hpp"

namespace attn::gemm_internal {

// A matrix seen through two strides: element (r, c) is data[r*row_stride +
// c*col_stride]. A row-major M×K matrix with leading dimension ld is
// {data, ld, 1}; its transpose is {data, 1, ld}. So op(A) and op(B) become
// plain views, and the kernels never look at the trans flags again.
struct View {
    const float* data;
    int64_t row_stride, col_stride;
};

// One product C = alpha·a·b + beta·C with a M×K, b K×N, C M×N row-major with
// leading dimension ldc. beta == 0 never reads C. When b_source is set, b is
// not stored (b.data is null): blocks of it are packed by b_source, whose
// column b_col0 is this product's column 0 (a piece of a product split over
// threads starts further along).
struct Product {
    int64_t M, N, K;
    float alpha;
    View a, b;
    float beta;
    float* c;
    int64_t ldc;
    const ImplicitB<float>* b_source = nullptr;
    int64_t b_col0 = 0;
};

// Each computes one whole product on the calling thread. gemm.cpp splits a
// large product into independent pieces (blocks of rows or of columns of C)
// and runs one piece per thread. The x86 ones need the CPU features of their
// names; each exists only in a build for its architecture (x86-64, aarch64).
void product_avx2(const Product& p);
void product_avx512(const Product& p);
void product_neon(const Product& p);
// acc[0..M) = A·x for an M×K view A and x of stride incx (gemv_avx2.cpp,
// gemv_neon.cpp), when A's rows (and x) or A's columns are contiguous; false
// otherwise.
bool gemv_avx2(int64_t M, int64_t K, const View& A, const float* x, int64_t incx, float* acc);
bool gemv_neon(int64_t M, int64_t K, const View& A, const float* x, int64_t incx, float* acc);

// The register tile of each kernel (rows × columns of C per micro-kernel
// call): gemm.cpp cuts the work for threads at multiples of these.
inline constexpr int avx2_mr = 6, avx2_nr = 16;
inline constexpr int avx512_mr = 8, avx512_nr = 32;
inline constexpr int neon_mr = 8, neon_nr = 12;

// What the CPU offers, and the path gemm() takes given ATTN_GEMM (`env`, may
// be null) and those features: the forced path if named (an unknown name
// throws std::invalid_argument, a path the CPU lacks std::runtime_error),
// else the fastest the CPU has. Separate from CPUID so tests can ask about
// CPUs other than this one.
struct CpuFeatures {
    bool avx2 = false;    // AVX2 and FMA
    bool avx512 = false;  // AVX-512 F, BW, DQ, VL (and AVX2, FMA)
    bool neon = false;    // AArch64's Advanced SIMD: every 64-bit ARM CPU has it
};
CpuFeatures cpu_features();
GemmPath choose_path(const char* env, CpuFeatures cpu);

// Whether the kernels pack their operands. By default each product decides by
// its size (loops.hpp); tests force `always` (every operand packed) or `never`
// (every operand that can be read in place read in place) to reach every code
// path on every shape.
enum class Packing { by_size, always, never };
void set_packing(Packing policy);
Packing packing();

}  // namespace attn::gemm_internal
