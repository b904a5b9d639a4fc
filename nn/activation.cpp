#include "nn/activation.hpp"

#include <cstdio>

#include "autograd/ops.hpp"

namespace attn {

Var ReLU::forward(const Var& x) { return relu(x); }
Var LeakyReLU::forward(const Var& x) { return leaky_relu(x, negative_slope_); }
Var Tanh::forward(const Var& x) { return tanh(x); }
Var Sigmoid::forward(const Var& x) { return sigmoid(x); }
Var GELU::forward(const Var& x) { return gelu(x); }

std::string LeakyReLU::describe() const {
    char buf[48];
    std::snprintf(buf, sizeof buf, "LeakyReLU(negative_slope=%g)", static_cast<double>(negative_slope_));
    return buf;
}

}  // namespace attn
