// Position encodings (entries 46, 47); formulas in attention/position.hpp.
#include "attention/position.hpp"

#include <cmath>
#include <stdexcept>

#include "autograd/ops.hpp"
#include "nn/init.hpp"

namespace attn {

// ---- entry 46: sinusoidal_position_encoding -----------------------------------------------

Tensor sinusoidal_position_encoding(int64_t n, int64_t D) {
    if (n < 0 || D <= 0 || D % 2 != 0)
        throw std::invalid_argument("sinusoidal_position_encoding: needs n >= 0 and an even width D > 0, got n = " +
                                    std::to_string(n) + ", D = " + std::to_string(D));
    Tensor pe = Tensor::empty(Shape{n, D});
    for (int64_t t = 0; t < n; ++t)
        for (int64_t i = 0; i < D / 2; ++i) {
            // angle = t / 10000^{2i/D}
            const double angle = static_cast<double>(t) / std::pow(10000.0, 2.0 * static_cast<double>(i) / D);
            pe[t * D + 2 * i] = static_cast<real>(std::sin(angle));      // PE_{t,2i}
            pe[t * D + 2 * i + 1] = static_cast<real>(std::cos(angle));  // PE_{t,2i+1}
        }
    return pe;
}

Var add_sinusoidal_position_encoding(const Var& x) {
    if (!x.defined() || x.rank() < 2)
        throw std::invalid_argument("sinusoidal_position_encoding: x " + (x.defined() ? x.shape().str() : "undefined") +
                                    " must be …×n×D");
    // X + PE                                                            B×n×D
    return x + Var(sinusoidal_position_encoding(x.size(-2), x.size(-1)));
}

// ---- entry 47: learned_position_embedding ---------------------------------------------------

LearnedPositionEmbedding::LearnedPositionEmbedding(int64_t n_max, int64_t d, Generator& gen) : n_max_(n_max), d_(d) {
    if (n_max <= 0 || d <= 0)
        throw std::invalid_argument(id() + ": needs n_max > 0 and d > 0, got " + std::to_string(n_max) + ", " +
                                    std::to_string(d));
    Tensor p = Tensor::empty(Shape{n_max, d});
    P = register_parameter("P", init::normal_(p, 0, 1, gen));
}

Var LearnedPositionEmbedding::forward(const Var& x) {
    if (!x.defined() || x.rank() < 2 || x.size(-1) != d_)
        throw std::invalid_argument(id() + ": x " + (x.defined() ? x.shape().str() : std::string("undefined")) +
                                    " must be …×n×d with d = " + std::to_string(d_));
    const int64_t n = x.size(-2);
    if (n > n_max_)
        throw std::invalid_argument(id() + ": a sequence of n = " + std::to_string(n) + " positions (t up to " +
                                    std::to_string(n - 1) + ") exceeds n_max = " + std::to_string(n_max_));
    // X + P_{0:n}                                                       B×n×d
    return x + slice(P, 0, 0, n);
}

std::string LearnedPositionEmbedding::describe() const {
    return "LearnedPositionEmbedding(n_max=" + std::to_string(n_max_) + ", d=" + std::to_string(d_) + ")";
}

}  // namespace attn
