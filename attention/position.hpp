// Position encodings (catalog entries 46, 47). Self-attention is permutation
// equivariant (entry 37): without them a Transformer sees a bag of tokens.
// Both are added to the token embeddings before the first layer:
//
//     X ← X + PE          X B×n×d, PE n×d (broadcast over the batch)
//
//   46  sinusoidal_position_encoding   fixed sines and cosines (Vaswani et al. 2017)
//   47  learned_position_embedding     a trained table (Gehring et al. 2017)
#pragma once

#include <cstdint>
#include <string>

#include "nn/unary_module.hpp"
#include "tensor/random.hpp"

namespace attn {

// ---- entry 46: sinusoidal_position_encoding ------------------------------------------
// Vaswani et al. (2017), §3.5:
//
//     PE_{t,2i} = sin(t / 10000^{2i/D}),   PE_{t,2i+1} = cos(t / 10000^{2i/D}),   t = 0..n−1
//
// n, D (even; throws otherwise) → PE n×D. Each (sin, cos) pair turns at its own
// frequency, so PE_{t+k} = R_k PE_t for a block-diagonal rotation R_k that
// does not depend on t: relative offsets are linear maps.
Tensor sinusoidal_position_encoding(int64_t n, int64_t D);
// X + PE: X B×n×D (or n×D) → the same shape. PE is a constant: the gradient
// passes to X unchanged.
Var add_sinusoidal_position_encoding(const Var& x);

// ---- entry 47: learned_position_embedding --------------------------------------------
// Gehring, Auli, Grangier, Yarats & Dauphin (2017), Convolutional Sequence to
// Sequence Learning, §3.1; compared with sinusoids by Vaswani et al. (2017):
//
//     X ← X + P_{0:n},      P n_max×d trained
//
// Seed 001's argument that this is the same as a one-hot position input:
// embedding [x_t; onehot(t)] with W = [W_x W_p] gives W_x x_t + W_{p,:t}, i.e.
// the token's embedding plus column t of W_p, which is row t of P = W_pᵀ.
//
// X B×n×d (n ≤ n_max; throws naming n and n_max otherwise) → B×n×d.
// Init: P ~ N(0, 1), as torch.nn.Embedding. state_dict key: "P".
class LearnedPositionEmbedding : public UnaryModule {
public:
    LearnedPositionEmbedding(int64_t n_max, int64_t d, Generator& gen);

    Var forward(const Var& x) override;
    std::string id() const { return "learned_position_embedding"; }
    std::string describe() const override;  // "LearnedPositionEmbedding(n_max=64, d=128)"
    int64_t max_positions() const { return n_max_; }

    Var P;  // n_max×d

private:
    int64_t n_max_, d_;
};

}  // namespace attn
