#include "nn/init.hpp"

#include <cmath>
#include <stdexcept>

namespace attn::init {

std::pair<int64_t, int64_t> fans(const Shape& shape) {
    if (shape.rank() < 2)
        throw std::invalid_argument("init: fan_in and fan_out need a weight of rank >= 2, got " + shape.str());
    int64_t receptive = 1;  // kh·kw for a convolution, 1 for a Linear weight
    for (int i = 2; i < shape.rank(); ++i) receptive *= shape[i];
    return {shape[1] * receptive, shape[0] * receptive};
}

Tensor& uniform_(Tensor& t, real lo, real hi, Generator& gen) {
    for (int64_t i = 0; i < t.numel(); ++i) t[i] = static_cast<real>(gen.uniform(lo, hi));
    return t;
}

Tensor& normal_(Tensor& t, real mean, real std, Generator& gen) {
    for (int64_t i = 0; i < t.numel(); ++i) t[i] = static_cast<real>(gen.normal(mean, std));
    return t;
}

Tensor& zeros_(Tensor& t) { return t.fill_(0); }
Tensor& ones_(Tensor& t) { return t.fill_(1); }
Tensor& constant_(Tensor& t, real value) { return t.fill_(value); }

Tensor& xavier_uniform_(Tensor& t, Generator& gen, real gain) {
    auto [fan_in, fan_out] = fans(t.shape());
    const double bound = gain * std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
    return uniform_(t, static_cast<real>(-bound), static_cast<real>(bound), gen);
}

Tensor& xavier_normal_(Tensor& t, Generator& gen, real gain) {
    auto [fan_in, fan_out] = fans(t.shape());
    return normal_(t, 0, static_cast<real>(gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out))), gen);
}

static double leaky_relu_gain(double a) { return std::sqrt(2.0 / (1.0 + a * a)); }

Tensor& kaiming_uniform_(Tensor& t, Generator& gen, real a) {
    const double bound = leaky_relu_gain(a) * std::sqrt(3.0 / static_cast<double>(fans(t.shape()).first));
    return uniform_(t, static_cast<real>(-bound), static_cast<real>(bound), gen);
}

Tensor& kaiming_normal_(Tensor& t, Generator& gen, real a) {
    const double std = leaky_relu_gain(a) / std::sqrt(static_cast<double>(fans(t.shape()).first));
    return normal_(t, 0, static_cast<real>(std), gen);
}

Tensor& pytorch_default_weight_(Tensor& t, Generator& gen) { return kaiming_uniform_(t, gen, std::sqrt(real(5))); }

Tensor& uniform_fan_in_(Tensor& t, int64_t fan_in, Generator& gen) {
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    return uniform_(t, static_cast<real>(-bound), static_cast<real>(bound), gen);
}

Tensor xavier_uniform(const Shape& shape, Generator& gen, real gain) {
    Tensor t = Tensor::empty(shape);
    return xavier_uniform_(t, gen, gain);
}

Tensor uniform_fan_in(const Shape& shape, int64_t fan_in, Generator& gen) {
    Tensor t = Tensor::empty(shape);
    return uniform_fan_in_(t, fan_in, gen);
}

}  // namespace attn::init
