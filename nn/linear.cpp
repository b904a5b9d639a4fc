#include "nn/linear.hpp"

#include <stdexcept>

#include "autograd/ops.hpp"
#include "nn/init.hpp"

namespace attn {

Linear::Linear(int64_t in_features, int64_t out_features, Generator& gen, bool with_bias)
    : in_features_(in_features), out_features_(out_features) {
    if (in_features <= 0 || out_features <= 0)
        throw std::invalid_argument("Linear: in_features and out_features must be positive, got " +
                                    std::to_string(in_features) + " and " + std::to_string(out_features));
    Tensor w = Tensor::empty({out_features, in_features});
    weight = register_parameter("weight", init::pytorch_default_weight_(w, gen));
    if (with_bias) {
        Tensor b = Tensor::empty({out_features});
        bias = register_parameter("bias", init::uniform_fan_in_(b, in_features, gen));
    }
}

// x …×in → rows N×in (N = the product of the leading axes)
//        → N×out = rows · Wᵀ (+ b, broadcast over the rows)
//        → …×out
Var Linear::forward(const Var& x) {
    if (x.rank() < 1 || x.size(-1) != in_features_)
        throw std::invalid_argument("Linear: input " + x.shape().str() + " needs " + std::to_string(in_features_) +
                                    " features on its last axis (in_features = " + std::to_string(in_features_) +
                                    ")");
    if (fused && bias.defined()) return matmul_bias(x, weight, bias, /*trans_w=*/true);
    Shape out_shape = x.shape();
    out_shape[out_shape.rank() - 1] = out_features_;
    Var rows = reshape(x, {-1, in_features_});
    Var y = matmul(rows, weight, /*trans_a=*/false, /*trans_b=*/true);
    if (bias.defined()) y = y + bias;
    return reshape(y, out_shape);
}

std::string Linear::describe() const {
    return "Linear(in_features=" + std::to_string(in_features_) + ", out_features=" + std::to_string(out_features_) +
           ", bias=" + (bias.defined() ? "true" : "false") + ")";
}

}  // namespace attn
