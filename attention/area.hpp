// Area attention (catalog entry 59): attend to areas — groups of adjacent
// items — instead of single items, so the model can pick how much to look at.
//
// Li, Kaiser, Bengio, Si (2019), Area Attention, ICML. (Seed 004 credits it to
// "Yang et al."; the first author is Yang Li.)
//
// The areas are every contiguous span of 1..A_w items (1-D), or every
// rectangle of 1..A_h × 1..A_w cells of an H×W grid (2-D; a sequence is the
// grid 1×n). For an area r of |r| cells:
//
//   basic keys and values   μ_r = (1/|r|) Σ_{i∈r} k_i          the area key (mean)
//                           v_r = Σ_{i∈r} v_i                   the area value (sum; mean allowed)
//   rich keys               σ_r = √(|(1/|r|) Σ k_i²  − μ_r²| + ε)   per-dimension standard deviation
//                           k_r = W_d ReLU(W_m [μ_r; σ_r; E_h(h_r); E_w(w_r)] + b)
//   then attention over the areas: a = softmax_r(q·k_r / (τ √d)),  o = Σ_r a_r v_r
//
// The sums come from a summed-area table: P[i][j] = Σ_{h<i, w<j} x[h][w], and an
// area's sum is P[bottom][right] − P[top][right] − P[bottom][left] + P[top][left],
// so each feature costs O(1) per area after one O(n) pass.
//
// Shapes (row = position, batch first; a 2-D grid is flattened row-major,
// position p = h·W + w):
//   queries B×m×d · keys B×n×d · values B×n×d_v · mask B×n (1 = real item)
//   N_a areas: in 1-D Σ_{a=1}^{A_w} (n − a + 1), so n = 4 and A_w = 2 give 7
//   → area keys B×N_a×d, area values B×N_a×d_v, output B×m×d_v, weights B×m×N_a
// An area that touches padding is masked.
//
// docs/attention/area.md; tests in tests/grad/test_area.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attention/general.hpp"
#include "tensor/random.hpp"

namespace attn {

// One rectangle of cells: rows top..top+height−1, columns left..left+width−1.
struct Area {
    int64_t top, left, height, width;
};

// Every area of an H×W grid with height ≤ max_height and width ≤ max_width, in
// the order: height, width, top, left (for a sequence: width 1 spans first).
std::vector<Area> enumerate_areas(int64_t grid_height, int64_t grid_width, int64_t max_height, int64_t max_width);

// What the summed-area table gives for each area.
struct AreaFeatures {
    Var sum;      // Σ_{i∈r} x_i              B×N_a×d
    Var mean;     // μ_r                       B×N_a×d
    Var stddev;   // σ_r                       B×N_a×d
    Tensor keep;  // B×N_a: 1 when no cell of the area is padding (undefined without a mask)
};
// x B×n×d on an H×W grid (n = H·W), areas from enumerate_areas, mask B×n or undefined.
AreaFeatures area_features(const Var& x, int64_t grid_height, const std::vector<Area>& areas,
                           const Tensor& mask = {});

// ---- 59. area_attention ----------------------------------------------------------------
class AreaAttention : public AttentionModule {
public:
    struct Options {
        int64_t max_width = 2;    // A_w
        int64_t max_height = 1;   // A_h (1 for sequences)
        int64_t grid_height = 1;  // H; the grid width is n / H (1 for sequences)
        bool rich_keys = false;   // k_r from [μ; σ; size embeddings] through a small MLP
        bool sum_values = true;   // v_r = Σ v_i (false: the mean)
        real temperature = 1;     // τ
        int64_t dim = 0;          // d, needed for rich keys
        int64_t hidden_dim = 0;   // width of W_m (0: d)
    };
    AreaAttention(const Options& options, Generator& gen);

    struct Output {
        Var output;               // B×m×d_v
        Var weights;              // B×m×N_a
        Var area_keys;            // B×N_a×d
        Var area_values;          // B×N_a×d_v
        std::vector<Area> areas;  // which cells each column of the weights covers
    };
    Output forward(const Var& queries, const Var& keys, const Var& values, const Tensor& mask = {});

    std::string id() const override { return "area_attention"; }
    Taxonomy taxonomy() const override;

    Var E_h, E_w, W_m, b_m, W_d;  // rich keys only: E_h A_h×d/2, E_w A_w×d/2, W_m h×(2d+2·d/2), b_m h, W_d d×h

private:
    Options options_;
};

}  // namespace attn
