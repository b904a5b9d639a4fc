// Activation modules, after torch.nn's: each wraps one element-wise op of
// autograd/ops.hpp so that it can sit in a Sequential. No parameters.
//
//   ReLU       y = max(x, 0)
//   LeakyReLU  y = x if x > 0, else a·x            (negative_slope a, default 0.01)
//   Tanh       y = tanh x
//   Sigmoid    y = 1 / (1 + e^−x)
//   GELU       y = x·Φ(x), Φ the standard normal CDF (the exact form, PyTorch's default)
//
// Shapes: any → the same shape.
#pragma once

#include <string>

#include "nn/unary_module.hpp"

namespace attn {

class ReLU : public UnaryModule {
public:
    Var forward(const Var& x) override;
    std::string describe() const override { return "ReLU()"; }
};

class LeakyReLU : public UnaryModule {
public:
    explicit LeakyReLU(real negative_slope = real(0.01)) : negative_slope_(negative_slope) {}
    Var forward(const Var& x) override;
    std::string describe() const override;  // "LeakyReLU(negative_slope=0.01)"

private:
    real negative_slope_;
};

class Tanh : public UnaryModule {
public:
    Var forward(const Var& x) override;
    std::string describe() const override { return "Tanh()"; }
};

class Sigmoid : public UnaryModule {
public:
    Var forward(const Var& x) override;
    std::string describe() const override { return "Sigmoid()"; }
};

class GELU : public UnaryModule {
public:
    Var forward(const Var& x) override;
    std::string describe() const override { return "GELU()"; }
};

}  // namespace attn
