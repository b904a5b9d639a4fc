// Packing: copying a block of op(A) or op(B) into the order in which the
// micro-kernel will read it, so that the kernel's loads are contiguous,
// aligned and walk memory strictly forward (docs/gemm.md, "Packing").
//
// Portable code, included by each kernel file (gemm_avx2.cpp, gemm_avx512.cpp,
// gemm_neon.cpp) and compiled with that file's instruction set; where that
// includes AVX2, the two packings that transpose work on 8×8 blocks in
// registers. Everything here
// has internal linkage (an unnamed namespace): two kernel files compiled with
// different -m flags must never share one instantiation, or the linker could
// hand the AVX-512 copy to the AVX2 path.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "tensor/gemm/gemm_internal.hpp"

namespace attn::gemm_internal {
namespace {

#if defined(__AVX2__)
// Transposes an 8-column block of ROWS (6 or 8) rows: row r is read at
// src + r·src_stride, and column c is written, ROWS numbers, at
// dst + c·dst_stride. Three rounds of shuffles in registers: pairs of rows
// interleaved, then pairs of pairs, then the 128-bit halves exchanged. Six
// rows read row 5 three times (as rows 5, 6, 7) and store 4 + 2 numbers.
template <int ROWS>
inline void transpose_8_columns(const float* src, int64_t src_stride, float* dst, int64_t dst_stride) {
    static_assert(ROWS == 6 || ROWS == 8);
    const auto row = [&](int r) { return _mm256_loadu_ps(src + std::min(r, ROWS - 1) * src_stride); };
    const __m256 r0 = row(0), r1 = row(1), r2 = row(2), r3 = row(3), r4 = row(4), r5 = row(5), r6 = row(6),
                 r7 = row(7);
    const __m256 u0 = _mm256_unpacklo_ps(r0, r1), u1 = _mm256_unpackhi_ps(r0, r1);
    const __m256 u2 = _mm256_unpacklo_ps(r2, r3), u3 = _mm256_unpackhi_ps(r2, r3);
    const __m256 u4 = _mm256_unpacklo_ps(r4, r5), u5 = _mm256_unpackhi_ps(r4, r5);
    const __m256 u6 = _mm256_unpacklo_ps(r6, r7), u7 = _mm256_unpackhi_ps(r6, r7);
    const __m256 s0 = _mm256_shuffle_ps(u0, u2, 0x44), s1 = _mm256_shuffle_ps(u0, u2, 0xEE);
    const __m256 s2 = _mm256_shuffle_ps(u1, u3, 0x44), s3 = _mm256_shuffle_ps(u1, u3, 0xEE);
    const __m256 s4 = _mm256_shuffle_ps(u4, u6, 0x44), s5 = _mm256_shuffle_ps(u4, u6, 0xEE);
    const __m256 s6 = _mm256_shuffle_ps(u5, u7, 0x44), s7 = _mm256_shuffle_ps(u5, u7, 0xEE);
    const auto store = [&](int c, __m256 column) {
        float* d = dst + c * dst_stride;
        if constexpr (ROWS == 8) {
            _mm256_storeu_ps(d, column);
        } else {
            _mm_storeu_ps(d, _mm256_castps256_ps128(column));
            _mm_storel_pi(reinterpret_cast<__m64*>(d + 4), _mm256_extractf128_ps(column, 1));
        }
    };
    store(0, _mm256_permute2f128_ps(s0, s4, 0x20));
    store(1, _mm256_permute2f128_ps(s1, s5, 0x20));
    store(2, _mm256_permute2f128_ps(s2, s6, 0x20));
    store(3, _mm256_permute2f128_ps(s3, s7, 0x20));
    store(4, _mm256_permute2f128_ps(s0, s4, 0x31));
    store(5, _mm256_permute2f128_ps(s1, s5, 0x31));
    store(6, _mm256_permute2f128_ps(s2, s6, 0x31));
    store(7, _mm256_permute2f128_ps(s3, s7, 0x31));
}
#endif

// Ã, the packed block of A: rows [0, mc) and columns [0, kc) of `a`, cut into
// panels of MR rows. Panel p holds element (p·MR + r, k) at
//
//     dest[p·MR·kc + k·MR + r]
//
// k-major: the MR numbers one step k of the micro-kernel broadcasts are
// adjacent, and step k+1 follows them. A last panel with fewer than MR rows
// keeps the stride MR; the kernel for that many rows never reads the gap.
template <int MR>
void pack_a_block(View a, int64_t mc, int64_t kc, float* dest) {
    int64_t i0 = 0;  // rows below i0 are packed
    if (a.row_stride == 1) {
        // op(A) = Aᵀ: the MR numbers of one step are adjacent in A too. Two
        // panels at a time, so that each step reads 2·MR adjacent numbers (a
        // whole cache line for MR = 8) and writes two sequential streams.
        for (; i0 + 2 * MR <= mc; i0 += 2 * MR) {
            float* first = dest + i0 * kc;
            float* second = first + MR * kc;
            for (int64_t k = 0; k < kc; ++k) {
                const float* src = a.data + k * a.col_stride + i0;
                std::memcpy(first + k * MR, src, sizeof(float) * MR);
                std::memcpy(second + k * MR, src + MR, sizeof(float) * MR);
            }
        }
        if (i0 + MR <= mc) {
            for (int64_t k = 0; k < kc; ++k)
                std::memcpy(dest + i0 * kc + k * MR, a.data + k * a.col_stride + i0, sizeof(float) * MR);
            i0 += MR;
        }
    }
    for (; i0 < mc; i0 += MR) {
        const int64_t rows = std::min<int64_t>(MR, mc - i0);
        const float* src = a.data + i0 * a.row_stride;
        float* panel = dest + i0 * kc;
        int64_t k0 = 0;  // steps below k0 are packed
#if defined(__AVX2__)
        if (rows == MR && a.col_stride == 1 && (MR == 6 || MR == 8)) {
            // op(A) = A: a transpose, 8 steps at a time in registers.
            for (; k0 + 8 <= kc; k0 += 8) transpose_8_columns<MR>(src + k0, a.row_stride, panel + k0 * MR, MR);
        }
#endif
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t k = k0; k < kc; ++k) panel[k * MR + r] = src[r * a.row_stride + k * a.col_stride];
    }
}

// B̃, the packed block of B: rows [0, kc) and columns [0, nc) of `b`, cut into
// panels of NR columns. Panel q holds element (k, q·NR + j) at
//
//     dest[q·NR·kc + k·NR + j]
//
// so one step k of the micro-kernel loads NR adjacent numbers (whole vector
// registers) and step k+1 follows them. Columns past nc are zero: the kernel
// computes them (harmlessly, 0·a = 0) and its partial store drops them.
template <int NR>
void pack_b_block(View b, int64_t kc, int64_t nc, float* dest) {
    for (int64_t j0 = 0; j0 < nc; j0 += NR) {
        const int64_t cols = std::min<int64_t>(NR, nc - j0);
        const float* src = b.data + j0 * b.col_stride;
        float* panel = dest + j0 * kc;
        if (b.col_stride == 1) {
            // op(B) = B: one step of the panel is a contiguous piece of a row of
            // B. (A copy of constant size NR compiles to a few vector moves.)
            for (int64_t k = 0; k < kc; ++k) {
                if (cols == NR) {
                    std::memcpy(panel + k * NR, src + k * b.row_stride, sizeof(float) * NR);
                } else {
                    std::memcpy(panel + k * NR, src + k * b.row_stride, sizeof(float) * cols);
                    std::fill(panel + k * NR + cols, panel + (k + 1) * NR, 0.0f);
                }
            }
            continue;
        }
        // op(B) = Bᵀ: a transpose; column j of the panel is row j of B. Groups
        // of 8 columns, 8 steps at a time in registers; the rest one by one.
        for (int64_t j = 0; j < cols; j += 8) {
            const int64_t width = std::min<int64_t>(8, cols - j);
            int64_t k0 = 0;  // steps below k0 are packed
#if defined(__AVX2__)
            if (width == 8 && b.row_stride == 1)
                for (; k0 + 8 <= kc; k0 += 8)
                    transpose_8_columns<8>(src + j * b.col_stride + k0, b.col_stride, panel + k0 * NR + j, NR);
#endif
            for (int64_t k = k0; k < kc; ++k)
                for (int64_t jj = j; jj < j + width; ++jj)
                    panel[k * NR + jj] = src[jj * b.col_stride + k * b.row_stride];
        }
        if (cols < NR)
            for (int64_t k = 0; k < kc; ++k) std::fill(panel + k * NR + cols, panel + (k + 1) * NR, 0.0f);
    }
}

// The packing buffers of one thread: allocated on its first product, 64-byte
// aligned (one cache line, one AVX-512 register), reused by every later
// product on that thread. Freed only when the thread ends: giving the memory
// back would cost a page fault per 4 KiB on every call.
struct PackBuffers {
    struct Free {
        void operator()(float* p) const { std::free(p); }
    };
    std::unique_ptr<float, Free> a_store, b_store;
    float* a;  // Ã: MC×KC
    float* b;  // B̃: KC×NC

    PackBuffers(int64_t a_floats, int64_t b_floats)
        : a_store(allocate(a_floats)), b_store(allocate(b_floats)), a(a_store.get()), b(b_store.get()) {}

    static float* allocate(int64_t floats) {
        const auto bytes = static_cast<size_t>((floats * 4 + 63) / 64 * 64);
        void* p = std::aligned_alloc(64, bytes);
        if (!p) throw std::bad_alloc();
        return static_cast<float*>(p);
    }
};

}  // namespace
}  // namespace attn::gemm_internal
