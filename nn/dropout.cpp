#include "nn/dropout.hpp"

#include <cstdio>
#include <stdexcept>

#include "autograd/ops.hpp"

namespace attn {

Dropout::Dropout(real p, Generator& gen) : p_(p), gen_(&gen) {
    if (!(p >= 0 && p <= 1))
        throw std::invalid_argument("Dropout: probability " + std::to_string(p) + " is not in [0, 1]");
}

Var Dropout::forward(const Var& x) { return dropout(x, p_, *gen_, is_training()); }

std::string Dropout::describe() const {
    char buf[48];
    std::snprintf(buf, sizeof buf, "Dropout(p=%g)", static_cast<double>(p_));
    return buf;
}

}  // namespace attn
