// Dropout (Srivastava et al., 2014), inverted as torch.nn.Dropout: in training
// mode each element is zeroed with probability p and the survivors are scaled
// by 1/(1 − p), so the expected value is unchanged and evaluation needs no
// rescaling; in evaluation mode it is the identity.
//
//   y = x ⊙ m / (1 − p),   m_i ~ Bernoulli(1 − p)      (training)
//   y = x                                               (eval)
//
// Shapes: any → the same shape. No parameters.
//
// The masks come from the Generator given to the constructor, which the
// module keeps by reference: it must outlive the module. Sharing the trainer's
// generator means one seed reproduces the whole run.
#pragma once

#include <string>

#include "nn/unary_module.hpp"
#include "tensor/random.hpp"

namespace attn {

class Dropout : public UnaryModule {
public:
    Dropout(real p, Generator& gen);

    Var forward(const Var& x) override;  // dropout(x, p, gen, is_training())
    std::string describe() const override;  // "Dropout(p=0.1)"

    real p() const { return p_; }

private:
    real p_;
    Generator* gen_;
};

}  // namespace attn
