// Linear: the fully connected layer, torch.nn.Linear.
//
//   y = x Wᵀ + b
//
// Shapes (row = position): x …×in, any number of leading axes (B×n×in: one row
// per position of each sequence; a plain vector of in also works)
//   weight  out×in   (PyTorch's layout: one row per output feature)
//   bias    out
//   → y     …×out
// The leading axes are flattened to one, so the whole batch is one GEMM
// (N×in)·(out×in)ᵀ, the transpose being the GEMM's flag, not a copy. The
// module composes matmul and add unless its `fused` is set: then one op,
// matmul_bias (autograd/ops.hpp), adds the bias to the product in place.
//
// Init, PyTorch's default: W and b ~ U(−1/√in, 1/√in).
// state_dict keys: "weight", "bias" (as torch.nn.Linear).
#pragma once

#include <cstdint>
#include <string>

#include "nn/unary_module.hpp"
#include "tensor/random.hpp"

namespace attn {

class Linear : public UnaryModule {
public:
    Linear(int64_t in_features, int64_t out_features, Generator& gen, bool with_bias = true);

    Var forward(const Var& x) override;
    std::string describe() const override;  // "Linear(in_features=4, out_features=3, bias=true)"

    int64_t in_features() const { return in_features_; }
    int64_t out_features() const { return out_features_; }

    Var weight;  // out×in
    Var bias;    // out; undefined when constructed with bias = false
    bool fused = false;  // matmul_bias instead of matmul, then add (the same values)

protected:
    void on_set_fast(bool on) override { fused = on; }  // Module::set_fast

private:
    int64_t in_features_, out_features_;
};

}  // namespace attn
