// The loops around the micro-kernel: GotoBLAS's blocking, shared by the AVX2,
// AVX-512 and NEON paths. Each kernel file instantiates blocked_product<Kernel>
// with its own micro-kernel and block sizes (internal linkage, like pack.hpp:
// every instantiation is compiled with its own file's instruction set).
//
//   for ic in [0, M) step MC               Ã: an MC×KC block of op(A)        (L3)
//     for pc in [0, K) step KC             one KC-deep slice of the sum
//       pack Ã = op(A)[ic.., pc..]         (or read A in place)
//       for jc in [0, N) step NC           B̃: a KC×NC block of op(B)         (L2)
//         pack B̃ = op(B)[pc.., jc..]       (or read B in place)
//         for ir in [0, MC) step MR        an MR×KC micro-panel of Ã          (L1)
//           for jr in [0, NC) step NR      a KC×NR micro-panel of B̃ streams from L2
//             C[ir.., jr..] (MR×NR, in registers) += Ã micro-panel · B̃ micro-panel
//                                          (the jr loop is row_panel, below)
//
// Why each level (docs/gemm.md has the arithmetic): the micro-kernel does
// 2·MR·NR flops for each MR + NR numbers it loads, so its operands can come
// from L1 and L2 at full speed only if they are already there. The MR×KC
// micro-panel of Ã is reused by all NC/NR tiles of the jr loop, so it must
// stay in L1; the KC×NC block of B̃ is reused by all MC/MR row panels, so it
// must stay in L2; KC is as deep as L1 allows, so that each tile of C is
// loaded and stored only once per KC multiply-adds.
//
// With C row-major and vectors along N, this is the column-major textbook nest
// (B̃ micro-panel in L1, Ã block in L2) with A and B exchanged: the broadcast
// operand, A, sits in L1; the operand loaded in whole vectors, B, in L2.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "tensor/gemm/gemm_internal.hpp"
#include "tensor/gemm/pack.hpp"

namespace attn::gemm_internal {
namespace {

// The last tile of a row panel, 0 < cols < NR columns: the fewest vectors
// that hold them (V ≤ NR/VL), the last one masked (EDGE) unless cols is a
// whole number of vectors.
template <class Kernel, int R, int V>
[[gnu::always_inline]] inline void narrow_tile(int64_t kc, const float* a, int64_t a_rs, int64_t a_ks,
                                               const float* b, int64_t b_ks, float* c, int64_t ldc, float alpha,
                                               float beta, int64_t cols) {
    constexpr int VL = Kernel::VL;
    if constexpr (V > 1)
        if (cols <= VL * (V - 1))
            return narrow_tile<Kernel, R, V - 1>(kc, a, a_rs, a_ks, b, b_ks, c, ldc, alpha, beta, cols);
    if constexpr (V < Kernel::NR / VL)  // (V = NR/VL vectors hold more than cols)
        if (cols == VL * V)
            return Kernel::template tile<R, V, false>(kc, a, a_rs, a_ks, b, b_ks, c, ldc, alpha, beta, cols);
    Kernel::template tile<R, V, true>(kc, a, a_rs, a_ks, b, b_ks, c, ldc, alpha, beta, cols);
}

// One row panel of C: `rows` ≤ MR rows and nc columns, cut into tiles of NR
// columns, each computed by the micro-kernel Kernel::tile:
//     C[r][·] = alpha · Σ_k a(r, k) · b(k, ·) + beta · C[r][·]   over kc steps,
// where a(r, k) = a[r·a_rs + k·a_ks] and row k of the tile's b starts at
// b + j·b_step + k·b_ks (packed B̃: panels of NR columns, b_step = kc and
// b_ks = NR; B in place: b_step = 1 and b_ks = ldb). Whole tiles first; then
// at most one narrower tile (narrow_tile).
template <class Kernel, int R>
[[gnu::always_inline]] inline void row_panel(int64_t kc, const float* a, int64_t a_rs, int64_t a_ks, const float* b,
                                             int64_t b_step, int64_t b_ks, float* c, int64_t ldc, float alpha,
                                             float beta, int64_t nc) {
    constexpr int NR = Kernel::NR, VL = Kernel::VL;
    static_assert(NR % VL == 0, "a tile is a whole number of vectors");
    int64_t j = 0;
    for (; j + NR <= nc; j += NR)
        Kernel::template tile<R, NR / VL, false>(kc, a, a_rs, a_ks, b + j * b_step, b_ks, c + j, ldc, alpha, beta,
                                                 NR);
    if (j < nc)
        narrow_tile<Kernel, R, NR / VL>(kc, a, a_rs, a_ks, b + j * b_step, b_ks, c + j, ldc, alpha, beta, nc - j);
}

// row_panel<Kernel, R> compiled for each R < MR, for a last partial panel
// of R rows: it runs a kernel of its own size instead of padding to MR.
template <class Kernel, int R>
void partial_panel(int64_t kc, const float* a, int64_t a_rs, int64_t a_ks, const float* b, int64_t b_step,
                   int64_t b_ks, float* c, int64_t ldc, float alpha, float beta, int64_t nc) {
    row_panel<Kernel, R>(kc, a, a_rs, a_ks, b, b_step, b_ks, c, ldc, alpha, beta, nc);
}
using PanelFn = void (*)(int64_t, const float*, int64_t, int64_t, const float*, int64_t, int64_t, float*, int64_t,
                         float, float, int64_t);
template <class Kernel, int... R>
constexpr std::array<PanelFn, sizeof...(R)> partial_panels(std::integer_sequence<int, R...>) {
    return {&partial_panel<Kernel, R + 1>...};
}

// The two inner loops (BLIS's "macro-kernel"): all the tiles of an mc×nc
// block of C. Row panel i of A starts at a + i·a_step (packed Ã: a_step = kc,
// a_rs = 1, a_ks = MR; in place: A's own strides). Whole row panels run the
// MR-row kernel, inlined into this one loop nest.
template <class Kernel>
void macro_kernel(int64_t mc, int64_t nc, int64_t kc, const float* a, int64_t a_step, int64_t a_rs, int64_t a_ks,
                  const float* b, int64_t b_step, int64_t b_ks, float* c, int64_t ldc, float alpha, float beta) {
    constexpr int MR = Kernel::MR;
    static constexpr auto partial = partial_panels<Kernel>(std::make_integer_sequence<int, MR - 1>());
    int64_t i = 0;
    for (; i + MR <= mc; i += MR)
        row_panel<Kernel, MR>(kc, a + i * a_step, a_rs, a_ks, b, b_step, b_ks, c + i * ldc, ldc, alpha, beta, nc);
    if (i < mc)
        partial[mc - i - 1](kc, a + i * a_step, a_rs, a_ks, b, b_step, b_ks, c + i * ldc, ldc, alpha, beta, nc);
}

// Reading an operand in place saves the copy; packing pays when a block is
// read many times, and when in place it would be read from memory spread so
// far that it costs TLB misses and cache-set conflicts.
//  - B in place needs contiguous rows (op(B) = B). It is packed when at least
//    4 row panels read it and one KC-deep block of it spans more than
//    Kernel::pack_b_span bytes of memory (kc rows, ldb apart).
//  - A in place works for both layouts (a broadcast takes any stride). It is
//    packed when at least 4 tiles of a row read each micro-panel (for a
//    row-major A, Kernel::pack_a_row_major_min_tiles) and it holds more than
//    Kernel::pack_a_min floats; with few columns (N = 48) it is not reused
//    enough to repay the copy. Except op(A) = Aᵀ with rows of A 4 KiB
//    or more apart: read in place, every step k of the micro-kernel then
//    touches a new page and the same L1 set as the step before, so the
//    micro-panel cannot stay in L1 for the next tile; it is packed, unless
//    it holds more than Kernel::strided_a_in_place_min bytes and
//    N < Kernel::strided_a_in_place_max_n, where packing costs more (the
//    kernel files say when, and why).
template <class Kernel>
bool pack_b_needed(const Product& p) {
    if (p.b_source || p.b.col_stride != 1) return true;  // (an implicit B exists only packed)
    const Packing policy = packing();
    if (policy != Packing::by_size) return policy == Packing::always;
    return p.M >= 4 * Kernel::MR && std::min(p.K, Kernel::KC) * p.b.row_stride * 4 > Kernel::pack_b_span;
}
template <class Kernel>
bool pack_a_needed(const Product& p) {
    const Packing policy = packing();
    if (policy != Packing::by_size) return policy == Packing::always;
    const bool strided = p.a.row_stride == 1 && p.a.col_stride * 4 >= 4096;
    if (strided && p.M * p.K * 4 > Kernel::strided_a_in_place_min && p.N < Kernel::strided_a_in_place_max_n)
        return false;
    const int64_t min_tiles = p.a.col_stride == 1 ? Kernel::pack_a_row_major_min_tiles : 4;
    return p.N > Kernel::NR && (strided || (p.N >= min_tiles * Kernel::NR && p.M * p.K > Kernel::pack_a_min));
}

template <class Kernel>
PackBuffers& pack_buffers() {
    thread_local PackBuffers buffers(Kernel::MC * Kernel::KC, Kernel::KC * Kernel::NC);
    return buffers;
}

template <class Kernel>
void blocked_product(const Product& p) {
    constexpr int MR = Kernel::MR, NR = Kernel::NR;
    constexpr int64_t MC = Kernel::MC, KC = Kernel::KC, NC = Kernel::NC;
    PackBuffers& buf = pack_buffers<Kernel>();
    const bool pack_a = pack_a_needed<Kernel>(p), pack_b = pack_b_needed<Kernel>(p);
    for (int64_t ic = 0; ic < p.M; ic += MC) {
        const int64_t mc = std::min(MC, p.M - ic);
        for (int64_t pc = 0; pc < p.K; pc += KC) {
            const int64_t kc = std::min(KC, p.K - pc);
            const float beta = pc == 0 ? p.beta : 1.0f;  // later slices add to the first
            const View a_blk{p.a.data + ic * p.a.row_stride + pc * p.a.col_stride, p.a.row_stride, p.a.col_stride};
            if (pack_a) pack_a_block<MR>(a_blk, mc, kc, buf.a);
            for (int64_t jc = 0; jc < p.N; jc += NC) {
                const int64_t nc = std::min(NC, p.N - jc);
                const View b_blk = p.b_source ? p.b
                                              : View{p.b.data + pc * p.b.row_stride + jc * p.b.col_stride,
                                                     p.b.row_stride, p.b.col_stride};
                if (p.b_source) p.b_source->pack(p.b_source->ctx, pc, kc, p.b_col0 + jc, nc, NR, buf.b);
                else if (pack_b) pack_b_block<NR>(b_blk, kc, nc, buf.b);
                // Packed Ã: panels of MR rows, k-major. In place: A's own strides.
                const float* a = pack_a ? buf.a : a_blk.data;
                const int64_t a_step = pack_a ? kc : a_blk.row_stride;
                const int64_t a_rs = pack_a ? 1 : a_blk.row_stride, a_ks = pack_a ? MR : a_blk.col_stride;
                // Packed B̃: panels of NR columns, zero-padded. In place: rows of B.
                const float* b = pack_b ? buf.b : b_blk.data;
                const int64_t b_step = pack_b ? kc : 1, b_ks = pack_b ? NR : b_blk.row_stride;
                macro_kernel<Kernel>(mc, nc, kc, a, a_step, a_rs, a_ks, b, b_step, b_ks, p.c + ic * p.ldc + jc, p.ldc,
                                     p.alpha, beta);
            }
        }
    }
}

}  // namespace
}  // namespace attn::gemm_internal
