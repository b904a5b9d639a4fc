// Embedding: a table of learned vectors looked up by index, torch.nn.Embedding.
//
//   y[…, :] = W[indices[…], :]
//
// Shapes: indices … (any shape; whole numbers stored as reals, in [0, V))
//   weight  V×D   (num_embeddings × embedding_dim)
//   → y     …×D   (B×n token ids → B×n×D, one row per position)
//
// padding_idx p (optional; negative counts from the end, as in PyTorch): row p
// is zero at initialisation and never receives a gradient, so a padding token
// keeps its vector (zero, unless a checkpoint set it) however long we train.
//
// Init, PyTorch's default: W ~ N(0, 1), then W[p] = 0.
// state_dict key: "weight".
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "nn/module.hpp"
#include "tensor/random.hpp"

namespace attn {

// The lookup is autograd's embedding() (autograd/ops.hpp), with PyTorch's
// padding_idx rule: ∂L/∂W[p, :] = 0 for the padding index p.

// Not a UnaryModule: its input is an index tensor, not a Var.
class Embedding : public Module {
public:
    Embedding(int64_t num_embeddings, int64_t embedding_dim, Generator& gen,
              std::optional<int64_t> padding_idx = std::nullopt);

    Var forward(const Tensor& indices) const;
    Var operator()(const Tensor& indices) const { return forward(indices); }
    // "Embedding(10, 4, padding_idx=0)"
    std::string describe() const override;

    int64_t num_embeddings() const { return num_embeddings_; }
    int64_t embedding_dim() const { return embedding_dim_; }
    std::optional<int64_t> padding_idx() const { return padding_idx_; }  // in [0, V) once constructed

    Var weight;  // V×D

private:
    int64_t num_embeddings_, embedding_dim_;
    std::optional<int64_t> padding_idx_;
};

}  // namespace attn
