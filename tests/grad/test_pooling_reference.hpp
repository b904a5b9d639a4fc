// The independent references of catalog entries 74–80 (pooling, set functions
// and gating), written in test_pooling_reference.cpp with only
// tests/grad/reference.hpp; their registry entries are in test_pooling.cpp.
// Each reads the inputs r.x (x[0] the set, sequence or map), the keep mask
// r.masks[0] (absent = keep every row) and the parameters r.p by name.
#pragma once

#include <cstdint>
#include <vector>

#include "tests/grad/catalog.hpp"

namespace attn::testing {

// An index as a std::vector subscript.
inline size_t at(int64_t i) { return static_cast<size_t>(i); }

// 74. X B×n×d → sum, mean, max (each B×d)
std::vector<Expected> sum_mean_max_pooling_reference(const Ref& r);

// 75. X B×n×d → B×k×d;  dynamic k for layer ℓ of L and sentence length s
Array k_max_pooling_reference(const Ref& r, int64_t k);
int64_t dynamic_k_reference(int64_t k_top, int64_t layer, int64_t layers, int64_t length);

// 76. X B×n×d → B×c×d: c chunks of the kept rows, or chunks at caller-given boundaries
Array chunk_max_pooling_reference(const Ref& r, int64_t chunks);
Array chunk_max_pooling_reference(const Ref& r, const std::vector<int64_t>& boundaries);

// 77. U B×C×H×W → B×C×Ho×Wo, in r.training's mode (training replays r.noise)
struct Window {
    int64_t kh, kw;  // kernel
    int64_t sh, sw;  // stride (> 0)
};
Array stochastic_pooling_reference(const Ref& r, Window window);

// 78. U B×C×H×W → B×(C·Σ b²)
Array spatial_pyramid_pooling_reference(const Ref& r, const std::vector<int64_t>& levels);

// 79. parameters phi1, phi2, rho1, rho2 (Linear .weight, .bias): X B×n×d → B×d_out;
//     the equivariant layer, parameters Lambda, Gamma (d×d'): X B×n×d → B×n×d'
enum class SetPool { sum, mean, max };
Array deep_sets_pooling_reference(const Ref& r, SetPool how);
Array deep_sets_equivariant_reference(const Ref& r, SetPool how);

// 80. parameters W_z, W_r, W (.weight, .bias), U_z, U_r, U (.weight); X B×T×d_x, h_0 = x[1]
//     (absent: zeros) → states, update_gates, reset_gates (each B×T×d_h)
std::vector<Expected> gru_gating_reference(const Ref& r);

}  // namespace attn::testing
