#include "tests/grad/registry.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "tensor/ops.hpp"

namespace attn::testing {

namespace {

using In = const std::vector<Var>&;

Tensor tensor(std::vector<real> values, const Shape& shape) { return Tensor::from(std::move(values), shape); }
// A constant operand (no gradient wanted), the same values every time.
Var constant(const Shape& shape, uint64_t seed) {
    Generator gen(seed);
    return Var(Tensor::normal(shape, 0, 1, gen));
}
const real kNegInf = -std::numeric_limits<real>::infinity();

std::vector<OpCase> elementwise_cases() {
    const Domain N = Domain::normal, P = Domain::positive, D = Domain::distinct;
    return {
        {"add", "2×3 + 2×3", {{2, 3}, {2, 3}}, N, [](In x) { return x[0] + x[1]; }},
        {"add", "broadcast 2×3 + 3", {{2, 3}, {3}}, N, [](In x) { return add(x[0], x[1]); }},
        {"add", "both broadcast 4×1×3 + 2×1", {{4, 1, 3}, {2, 1}}, N, [](In x) { return x[0] + x[1]; }},
        {"add", "x + x (one input used twice)", {{2, 3}}, N, [](In x) { return x[0] + x[0]; }},
        {"add", "with a scalar, x + 2.5", {{3}}, N, [](In x) { return x[0] + real(2.5); }},
        {"sub", "2×3 − 1×3", {{2, 3}, {1, 3}}, N, [](In x) { return x[0] - x[1]; }},
        {"sub", "scalar − x", {{2, 2}}, N, [](In x) { return real(1.5) - x[0]; }},
        {"mul", "2×3 ⊙ 2×3", {{2, 3}, {2, 3}}, N, [](In x) { return x[0] * x[1]; }},
        {"mul", "broadcast 2×1×4 ⊙ 3×1", {{2, 1, 4}, {3, 1}}, N, [](In x) { return mul(x[0], x[1]); }},
        {"mul", "x ⊙ x (one input used twice)", {{2, 3}}, N, [](In x) { return x[0] * x[0]; }},
        {"mul", "with a scalar, 3·x", {{4}}, N, [](In x) { return real(3) * x[0]; }},
        {"div", "2×3 / 2×3", {{2, 3}, {2, 3}}, P, [](In x) { return x[0] / x[1]; }},
        {"div", "broadcast 2×3 / 3", {{2, 3}, {3}}, P, [](In x) { return div(x[0], x[1]); }},
        {"div", "scalar / x", {{3}}, P, [](In x) { return real(2) / x[0]; }},
        {"neg", "2×3", {{2, 3}}, N, [](In x) { return -x[0]; }},
        {"pow", "x³", {{2, 3}}, N, [](In x) { return pow(x[0], real(3)); }},
        {"pow", "x^0.5 and x^−2", {{5}}, P, [](In x) { return pow(x[0], real(0.5)) + pow(x[0], real(-2)); }},
        {"pow", "a^b, both variables, broadcast", {{2, 3}, {3}}, P, [](In x) { return pow(x[0], x[1]); }},
        {"square", "2×3", {{2, 3}}, N, [](In x) { return square(x[0]); }},
        {"exp", "2×3", {{2, 3}}, N, [](In x) { return exp(x[0]); }},
        {"log", "2×3", {{2, 3}}, P, [](In x) { return log(x[0]); }},
        {"sqrt", "2×3", {{2, 3}}, P, [](In x) { return sqrt(x[0]); }},
        {"abs", "away from 0", {{3, 3}}, D, [](In x) { return abs(x[0]); }},
        {"clamp", "to [−0.5, 0.5], away from the ends", {{4, 4}}, D,
         [](In x) { return clamp(x[0], real(-0.5), real(0.5)); }},
        {"minimum", "2×3 vs 2×3, no ties", {{2, 3}, {2, 3}}, D, [](In x) { return minimum(x[0], x[1]); }},
        {"minimum", "broadcast 2×3 vs 3", {{2, 3}, {3}}, D, [](In x) { return minimum(x[0], x[1]); }},
        {"maximum", "2×3 vs 2×3, no ties", {{2, 3}, {2, 3}}, D, [](In x) { return maximum(x[0], x[1]); }},
        {"maximum", "broadcast 3×1 vs 4", {{3, 1}, {4}}, D, [](In x) { return maximum(x[0], x[1]); }},
        {"tanh", "2×3", {{2, 3}}, N, [](In x) { return tanh(x[0]); }},
        {"tanh", "a chain of 60 ops (add, mul, tanh)", {{1, 8}, {1, 8}, {1, 8}}, N,
         [](In x) {
             Var h = x[0];
             for (int i = 0; i < 20; ++i) h = tanh(h * x[2] + x[1]);
             return h;
         }},
        {"sigmoid", "2×3", {{2, 3}}, N, [](In x) { return sigmoid(x[0]); }},
        {"sigmoid", "3×4, large |a| where σ saturates", {{3, 4}}, N, [](In x) { return sigmoid(x[0] * 4.0); }},
        // x by two sigmoids: each backward adds its share to x's gradient; one that
        // overwrote it (rather than accumulate) would lose the other's.
        {"sigmoid", "one input, two sigmoids: σ(x)·σ(2x)", {{2, 3}}, N,
         [](In x) { return sigmoid(x[0]) * sigmoid(x[0] * 2.0); }},
        {"sigmoid", "2×3×2, its output used twice: σ² + σ", {{2, 3, 2}}, N,
         [](In x) {
             const Var s = sigmoid(x[0]);
             return s * s + s;
         }},
        {"relu", "away from 0", {{3, 4}}, D, [](In x) { return relu(x[0]); }},
        {"leaky_relu", "slope 0.1, away from 0", {{3, 4}}, D, [](In x) { return leaky_relu(x[0], real(0.1)); }},
        {"gelu", "2×3", {{2, 3}}, N, [](In x) { return gelu(x[0]); }},
        {"softplus", "2×3", {{2, 3}}, N, [](In x) { return softplus(x[0] * real(3)); }},
    };
}

std::vector<OpCase> reduce_and_linalg_cases() {
    const Domain N = Domain::normal, D = Domain::distinct;
    return {
        {"sum", "everything", {{2, 3, 2}}, N, [](In x) { return sum(x[0]); }},
        {"sum", "axis 1", {{2, 3, 2}}, N, [](In x) { return sum(x[0], 1); }},
        {"sum", "axis 0, keepdim", {{3, 2}}, N, [](In x) { return sum(x[0], 0, true); }},
        {"sum", "axes {0, 2}", {{2, 3, 2}}, N, [](In x) { return sum(x[0], std::vector<int>{0, 2}); }},
        {"mean", "everything", {{2, 3}}, N, [](In x) { return mean(x[0]); }},
        {"mean", "axis −1", {{2, 3}}, N, [](In x) { return mean(x[0], -1); }},
        {"mean", "axes {0, 1}, keepdim", {{2, 3, 2}}, N, [](In x) { return mean(x[0], std::vector<int>{0, 1}, true); }},
        {"max", "axis 1, no ties", {{3, 4}}, D, [](In x) { return max(x[0], 1); }},
        {"max", "everything", {{2, 3}}, D, [](In x) { return max(x[0]); }},
        {"min", "axis 0, keepdim, no ties", {{3, 4}}, D, [](In x) { return min(x[0], 0, true); }},
        {"min", "everything", {{2, 3}}, D, [](In x) { return min(x[0]); }},
        {"logsumexp", "axis 1", {{3, 4}}, N, [](In x) { return logsumexp(x[0], 1); }},
        {"logsumexp", "axis 0, keepdim", {{3, 4}}, N, [](In x) { return logsumexp(x[0], 0, true); }},
        {"matmul", "3×4 · 4×5", {{3, 4}, {4, 5}}, N, [](In x) { return matmul(x[0], x[1]); }},
        {"matmul", "aᵀ·b, a stored 4×3", {{4, 3}, {4, 5}}, N, [](In x) { return matmul(x[0], x[1], true, false); }},
        {"matmul", "a·bᵀ, b stored 5×4", {{3, 4}, {5, 4}}, N, [](In x) { return matmul(x[0], x[1], false, true); }},
        {"matmul", "aᵀ·bᵀ", {{4, 3}, {5, 4}}, N, [](In x) { return matmul(x[0], x[1], true, true); }},
        {"matmul", "batched 2×3×4 · 2×4×5", {{2, 3, 4}, {2, 4, 5}}, N, [](In x) { return matmul(x[0], x[1]); }},
        {"matmul", "a shared by the batch, 3×4 · 2×4×5", {{3, 4}, {2, 4, 5}}, N,
         [](In x) { return matmul(x[0], x[1]); }},
        {"matmul", "b shared by the batch, 2×3×4 · 5×4 transposed", {{2, 3, 4}, {5, 4}}, N,
         [](In x) { return matmul(x[0], x[1], false, true); }},
        {"matmul", "batch axes broadcast in part, 2×1×3×4 · 3×4×2", {{2, 1, 3, 4}, {3, 4, 2}}, N,
         [](In x) { return matmul(x[0], x[1]); }},
        {"matmul", "x·xᵀ (one input used twice)", {{3, 4}}, N, [](In x) { return matmul(x[0], x[0], false, true); }},
        // A backward that computes a gradient nobody asked for (bw.needs(i) false)
        // meets an input that is not there: these two crash it.
        {"matmul", "b a constant: only a wants a gradient", {{3, 4}}, N,
         [](In x) { return matmul(x[0], constant({4, 5}, 11)); }},
        {"matmul", "a a constant, stored 4×3: only b wants a gradient", {{4, 5}}, N,
         [](In x) { return matmul(constant({4, 3}, 12), x[0], true, false); }},
        // Two products from one input: each hands in its share of the gradient,
        // added to what the other handed in, never in place of it.
        {"matmul", "x used by two products, x·W and (2x)·V", {{2, 3}}, N,
         [](In x) { return matmul(x[0], constant({3, 2}, 13)) + matmul(x[0] * 2.0, constant({3, 2}, 14)); }},
        {"matmul_bias", "3×4 · 4×5 + 5", {{3, 4}, {4, 5}, {5}}, N,
         [](In x) { return matmul_bias(x[0], x[1], x[2]); }},
        {"matmul_bias", "2×3×4 · (5×4)ᵀ + 5 (Linear's layout; the leading axes are rows)", {{2, 3, 4}, {5, 4}, {5}}, N,
         [](In x) { return matmul_bias(x[0], x[1], x[2], true); }},
        {"matmul_bias", "used twice, so that the second backward adds into the buffers", {{2, 3, 4}, {5, 4}, {5}}, N,
         [](In x) { return matmul_bias(x[0], x[1], x[2], true) * matmul_bias(x[0], x[1], x[2], true); }},
        {"matmul_bias", "used twice, w not transposed", {{3, 4}, {4, 5}, {5}}, N,
         [](In x) { return matmul_bias(x[0], x[1], x[2]) * matmul_bias(x[0], x[1], x[2]); }},
        {"matmul_bias_relu", "relu(3×4 · 4×5 + 5)", {{3, 4}, {4, 5}, {5}}, N,
         [](In x) { return matmul_bias_relu(x[0], x[1], x[2]); }},
        {"matmul_bias_relu", "relu(2×3×4 · (5×4)ᵀ + 5) (Linear's layout)", {{2, 3, 4}, {5, 4}, {5}}, N,
         [](In x) { return matmul_bias_relu(x[0], x[1], x[2], true); }},
        {"matmul_bias_relu", "used twice, so that the second backward adds into the buffers", {{2, 3, 4}, {5, 4}, {5}},
         N, [](In x) { return matmul_bias_relu(x[0], x[1], x[2], true) * matmul_bias_relu(x[0], x[1], x[2], true); }},
    };
}

std::vector<OpCase> shape_and_index_cases() {
    const Domain N = Domain::normal;
    return {
        {"reshape", "2×3×2 → 3×4", {{2, 3, 2}}, N, [](In x) { return reshape(x[0], {3, -1}) * reshape(x[0], {3, 4}); }},
        {"transpose", "axes 0 and 2", {{2, 3, 4}}, N, [](In x) { return transpose(x[0], 0, 2); }},
        {"permute", "(2, 0, 1)", {{2, 3, 4}}, N, [](In x) { return permute(x[0], {2, 0, 1}); }},
        {"slice", "axis 1, [1, 6) step 2", {{2, 7}}, N, [](In x) { return slice(x[0], 1, 1, 6, 2); }},
        {"slice", "axis 0, from −2, used twice", {{4, 3}}, N,
         [](In x) { return slice(x[0], 0, -2, 4) * slice(x[0], 0, 1, 3); }},
        {"narrow", "axis −1, 2 from 1", {{3, 5}}, N, [](In x) { return narrow(x[0], -1, 1, 2); }},
        {"concat", "three parts along axis 1, one of them twice", {{2, 1}, {2, 3}}, N,
         [](In x) { return concat({x[0], x[1], x[0]}, 1); }},
        {"stack", "two parts along a new axis 1", {{2, 3}, {2, 3}}, N, [](In x) { return stack({x[0], x[1]}, 1); }},
        {"split", "sizes 1, 3, 2 along axis 1", {{2, 6}}, N,
         [](In x) {
             std::vector<Var> p = split(x[0], {1, 3, 2}, 1);
             return p[0] * sum(p[1], 1, true) + p[2];
         }},
        {"expand", "3×1 → 2×3×4", {{3, 1}}, N, [](In x) { return expand(x[0], Shape{2, 3, 4}); }},
        {"squeeze", "2×1×3 → 2×3", {{2, 1, 3}}, N, [](In x) { return squeeze(x[0], 1); }},
        {"unsqueeze", "2×3 → 2×3×1", {{2, 3}}, N, [](In x) { return unsqueeze(x[0], -1); }},
        {"gather", "axis 1, repeated indices", {{3, 4}}, N,
         [](In x) { return gather(x[0], 1, tensor({0, 3, 3, 1, 2, 2, 0, 0, 1}, {3, 3})); }},
        {"index_select", "axis 0, rows 2, 0, 2", {{3, 4}}, N, [](In x) { return index_select(x[0], 0, {2, 0, 2}); }},
        {"embedding", "5×3 table, 2×4 indices with repeats", {{5, 3}}, N,
         [](In x) { return embedding(x[0], tensor({0, 4, 4, 1, 2, 0, 3, 4}, {2, 4})); }},
        {"masked_fill", "masked positions get no gradient", {{2, 4}}, N,
         [](In x) { return masked_fill(x[0], tensor({0, 1, 0, 0}, {4}), real(-7)); }},
        {"where", "cond 2×1 broadcast, a 2×3, b 3", {{2, 3}, {3}}, N,
         [](In x) { return where(tensor({1, 0}, {2, 1}), x[0], x[1]); }},
    };
}

std::vector<OpCase> nn_cases() {
    const Domain N = Domain::normal, D = Domain::distinct;
    const Tensor keep = tensor({1, 1, 0, 1, 0, 0, 0, 0, 1, 0, 1, 1}, {3, 4});  // row 1 fully masked
    const Tensor bias = tensor({0, kNegInf, 0, 0.5}, {4});
    const Tensor targets = tensor({2, 0, 3, 1}, {4});
    const Tensor with_ignored = tensor({2, -100, 3, -100}, {4});
    const Tensor sequence_targets = tensor({1, 0, 4, 2, 2, 3}, {2, 3});
    return {
        {"softmax", "axis −1", {{3, 4}}, N, [](In x) { return softmax(x[0], -1); }},
        {"softmax", "axis 0 of 3×2×2", {{3, 2, 2}}, N, [](In x) { return softmax(x[0], 0); }},
        {"softmax", "axis −2 of 2×3×2", {{2, 3, 2}}, N, [](In x) { return softmax(x[0], -2); }},
        // x by two softmaxes: each backward adds its share (see sigmoid's).
        {"softmax", "one input, two softmaxes: softmax(x)·softmax(2x), axis 1", {{2, 3}}, N,
         [](In x) { return softmax(x[0], 1) * softmax(x[0] * 2.0, 1); }},
        {"softmax_composed", "axis 1 of 3×4×2", {{3, 4, 2}}, N, [](In x) { return softmax_composed(x[0], 1); }},
        {"softmax", "keep mask, one row fully masked", {{3, 4}}, N,
         [keep](In x) { return softmax(x[0], 1, SoftmaxMask::keep(keep)); }},
        {"softmax", "additive mask with −∞, broadcast", {{2, 4}}, N,
         [bias](In x) { return softmax(x[0], -1, SoftmaxMask::additive(bias)); }},
        // The fast twin: the same backward, by the one-pass kernel.
        {"softmax_fused", "axis 0 of 3×2×2", {{3, 2, 2}}, N, [](In x) { return softmax_fused(x[0], 0); }},
        {"softmax_fused", "keep mask, one row fully masked", {{3, 4}}, N,
         [keep](In x) { return softmax_fused(x[0], 1, SoftmaxMask::keep(keep)); }},
        {"softmax_fused", "additive mask with −∞, broadcast", {{2, 4}}, N,
         [bias](In x) { return softmax_fused(x[0], -1, SoftmaxMask::additive(bias)); }},
        {"log_softmax", "axis −1", {{3, 4}}, N, [](In x) { return log_softmax(x[0], -1); }},
        {"log_softmax", "keep mask, one row fully masked (masked outputs dropped)", {{3, 4}}, N,
         [keep](In x) {
             Var z = log_softmax(x[0], 1, SoftmaxMask::keep(keep));
             return masked_fill(z, eq(keep, Tensor::scalar(0)), 0);  // −∞ → 0 so L stays finite
         }},
        {"cross_entropy", "4×5 logits", {{4, 5}}, N, [targets](In x) { return cross_entropy(x[0], targets); }},
        {"cross_entropy", "ignore_index", {{4, 5}}, N,
         [with_ignored](In x) { return cross_entropy(x[0], with_ignored); }},
        {"cross_entropy", "label smoothing 0.1", {{4, 5}}, N,
         [targets](In x) { return cross_entropy(x[0], targets, -100, real(0.1)); }},
        {"cross_entropy", "2×3×5 logits (classes last)", {{2, 3, 5}}, N,
         [sequence_targets](In x) { return cross_entropy(x[0], sequence_targets); }},
        {"nll_loss", "of log_softmax, ignore_index", {{4, 5}}, N,
         [with_ignored](In x) { return nll_loss(log_softmax(x[0], -1), with_ignored); }},
        {"unfold", "3×3 kernel, stride 2, padding 1", {{2, 2, 5, 4}}, N,
         [](In x) { return unfold(x[0], 3, 2, 1); }},
        {"conv2d", "2×3×5×5 input, 4×3×3×3 weight, bias", {{2, 3, 5, 5}, {4, 3, 3, 3}, {4}}, N,
         [](In x) { return conv2d(x[0], x[1], x[2]); }},
        {"conv2d", "stride 2, padding 1, 2×3 kernel, no bias", {{1, 2, 5, 6}, {3, 2, 2, 3}}, N,
         [](In x) { return conv2d(x[0], x[1], Var(), Size2(2), Size2(1)); }},
        {"conv2d_fused", "2×3×5×5 input, 4×3×3×3 weight, bias", {{2, 3, 5, 5}, {4, 3, 3, 3}, {4}}, N,
         [](In x) { return conv2d_fused(x[0], x[1], x[2]); }},
        {"conv2d_fused", "stride 2, padding 1, 2×3 kernel, no bias", {{1, 2, 5, 6}, {3, 2, 2, 3}}, N,
         [](In x) { return conv2d_fused(x[0], x[1], Var(), Size2(2), Size2(1)); }},
        {"conv2d_max_pool_fused", "3×3 conv, padding 1, bias; 2×2 pool (its 2×2 path)",
         {{2, 2, 4, 5}, {3, 2, 3, 3}, {3}}, N, [](In x) { return conv2d_max_pool_fused(x[0], x[1], x[2], 1, 1, 2); }},
        {"conv2d_max_pool_relu_fused", "3×3 conv, padding 1, bias; 2×2 pool; ReLU",
         {{2, 2, 4, 5}, {3, 2, 3, 3}, {3}}, N,
         [](In x) { return conv2d_max_pool_relu_fused(x[0], x[1], x[2], 1, 1, 2); }},
        {"conv2d_max_pool_fused", "stride-2 conv, no bias; 3×3 pool, stride 1, padding 1",
         {{1, 2, 7, 6}, {2, 2, 2, 3}}, N,
         [](In x) { return conv2d_max_pool_fused(x[0], x[1], Var(), 2, Size2(1), 3, 1, 1); }},
        {"max_pool2d", "2×2, stride 2, no ties", {{2, 2, 4, 4}}, D, [](In x) { return max_pool2d(x[0], 2); }},
        {"max_pool2d", "2×2, stride 2, no ties, fast (the rows)", {{2, 2, 4, 4}}, D,
         [](In x) { return max_pool2d(x[0], 2, 0, 0, /*fast=*/true); }},
        {"max_pool2d", "3×3, stride 1, padding 1", {{1, 2, 4, 3}}, D,
         [](In x) { return max_pool2d(x[0], 3, 1, 1); }},
        {"avg_pool2d", "2×2, stride 2", {{2, 2, 4, 4}}, N, [](In x) { return avg_pool2d(x[0], 2); }},
        {"avg_pool2d", "3×3, stride 2, padding 1", {{1, 2, 5, 5}}, N, [](In x) { return avg_pool2d(x[0], 3, 2, 1); }},
        {"dropout", "p = 0.3, a fixed mask", {{4, 5}}, N,
         [](In x) {
             Generator gen(7);  // the same mask on every call
             return dropout(x[0], real(0.3), gen);
         }},
        {"categorical_log_prob", "3 rows of 4, a fixed sample", {{3, 4}}, Domain::probability,
         [](In x) { return categorical_log_prob(x[0], tensor({2, 0, 3}, {3})); }},
    };
}

}  // namespace

const std::vector<OpCase>& op_registry() {
    static const std::vector<OpCase> all = [] {
        std::vector<OpCase> out;
        for (auto family : {elementwise_cases, reduce_and_linalg_cases, shape_and_index_cases, nn_cases})
            for (OpCase& c : family()) out.push_back(std::move(c));
        return out;
    }();
    return all;
}

std::vector<Tensor> sample_inputs(const OpCase& c, Generator& gen) {
    std::vector<Tensor> inputs;
    for (const Shape& s : c.shapes) {
        switch (c.domain) {
        case Domain::normal: inputs.push_back(Tensor::normal(s, 0, 1, gen)); break;
        case Domain::positive: inputs.push_back(Tensor::uniform(s, real(0.5), real(2), gen)); break;
        case Domain::probability: inputs.push_back(Tensor::uniform(s, real(0.2), real(1), gen)); break;
        case Domain::distinct: inputs.push_back(Tensor::empty(s)); break;
        }
    }
    if (c.domain == Domain::distinct) {
        // 0.1·(a random permutation of 0..n−1, centred) + 0.037: gaps of 0.1,
        // and 0.013 from the nearest multiple of 0.05.
        int64_t n = 0;
        for (const Tensor& t : inputs) n += t.numel();
        std::vector<int64_t> order(static_cast<size_t>(n));
        std::iota(order.begin(), order.end(), 0);
        for (int64_t i = n - 1; i > 0; --i)
            std::swap(order[static_cast<size_t>(i)], order[gen.randint(static_cast<uint64_t>(i + 1))]);
        size_t k = 0;
        for (Tensor& t : inputs)
            for (int64_t i = 0; i < t.numel(); ++i)
                t[i] = static_cast<real>(0.1 * static_cast<double>(order[k++] - n / 2) + 0.037);
    }
    return inputs;
}

}  // namespace attn::testing
