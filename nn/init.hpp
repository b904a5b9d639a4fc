// Initialisers, after torch.nn.init: each fills a tensor in place from an
// explicit generator and returns it. fan_in / fan_out follow PyTorch: for a
// weight out×in (Linear) fan_in = in; for out×in×kh×kw (Conv2d) fan_in =
// in·kh·kw and fan_out = out·kh·kw.
#pragma once

#include <utility>

#include "tensor/random.hpp"
#include "tensor/tensor.hpp"

namespace attn::init {

// (fan_in, fan_out) of a weight of rank >= 2.
std::pair<int64_t, int64_t> fans(const Shape& shape);

Tensor& uniform_(Tensor& t, real lo, real hi, Generator& gen);
Tensor& normal_(Tensor& t, real mean, real std, Generator& gen);
Tensor& zeros_(Tensor& t);
Tensor& ones_(Tensor& t);
Tensor& constant_(Tensor& t, real value);
// Glorot & Bengio (2010): U(−b, b) with b = gain·√(6 / (fan_in + fan_out)).
Tensor& xavier_uniform_(Tensor& t, Generator& gen, real gain = 1);
// N(0, σ²) with σ = gain·√(2 / (fan_in + fan_out)).
Tensor& xavier_normal_(Tensor& t, Generator& gen, real gain = 1);
// He et al. (2015), fan_in mode: U(−b, b), b = gain·√(3 / fan_in) with
// gain = √(2 / (1 + a²)) for leaky ReLU slope a (a = 0: ReLU).
Tensor& kaiming_uniform_(Tensor& t, Generator& gen, real a = 0);
// N(0, σ²) with σ = gain / √fan_in.
Tensor& kaiming_normal_(Tensor& t, Generator& gen, real a = 0);

// PyTorch's default for Linear and Conv2d weights: kaiming_uniform_ with
// a = √5, which works out to U(−1/√fan_in, 1/√fan_in); their biases are
// U(−1/√fan_in, 1/√fan_in) too. RNN weights and biases: U(−1/√hidden, 1/√hidden).
Tensor& pytorch_default_weight_(Tensor& t, Generator& gen);
Tensor& uniform_fan_in_(Tensor& t, int64_t fan_in, Generator& gen);

// Fresh tensors for parameters, e.g. register_parameter("W", init::xavier_uniform({out, in}, gen)).
Tensor xavier_uniform(const Shape& shape, Generator& gen, real gain = 1);
Tensor uniform_fan_in(const Shape& shape, int64_t fan_in, Generator& gen);

}  // namespace attn::init
