// UnaryModule: a module with one input and one output, y = f(x).
//
// Most layers are of this kind (Linear, Conv2d, LayerNorm, Dropout, the
// activations); Sequential chains them. A layer overrides forward(), and
// callers may write layer(x) as in PyTorch.
#pragma once

#include "autograd/variable.hpp"
#include "nn/module.hpp"

namespace attn {

class UnaryModule : public Module {
public:
    virtual Var forward(const Var& x) = 0;
    Var operator()(const Var& x) { return forward(x); }
};

}  // namespace attn
