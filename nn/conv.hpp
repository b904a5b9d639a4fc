// Convolution and pooling layers over images: torch.nn.Conv2d, MaxPool2d and
// AvgPool2d. The ops themselves (and their backward) are autograd's conv2d,
// max_pool2d and avg_pool2d (autograd/ops_conv.cpp); these modules hold the
// weights and the geometry.
//
// Shapes: input B×C×H×W (batch first, channels before space, as PyTorch)
//   → output B×O×Ho×Wo,  Ho = ⌊(H + 2·pad_h − kh) / stride_h⌋ + 1, likewise Wo.
#pragma once

#include <cstdint>
#include <string>

#include "autograd/ops.hpp"
#include "nn/unary_module.hpp"
#include "tensor/random.hpp"

namespace attn {

class MaxPool2d;

// Conv2d: O filters, each C×kh×kw, slid over the (zero-padded) input:
//
//   y[b, o, i, j] = bias[o] + Σ_{c, u, v} weight[o, c, u, v] · x[b, c, i·sh − ph + u, j·sw − pw + v]
//
//   weight  O×C×kh×kw      bias  O
// Init, PyTorch's default: weight and bias ~ U(−1/√fan_in, 1/√fan_in), fan_in = C·kh·kw.
// state_dict keys: "weight", "bias".
class Conv2d : public UnaryModule {
public:
    Conv2d(int64_t in_channels, int64_t out_channels, Size2 kernel_size, Generator& gen, Size2 stride = 1,
           Size2 padding = 0, bool with_bias = true);

    Var forward(const Var& x) override;
    // pool.forward(forward(x)), then relu when then_relu; fused:
    // conv2d_max_pool_fused (or _relu_fused), the same values without storing
    // the convolution's full output or its gradient.
    Var forward_max_pooled(const Var& x, const MaxPool2d& pool, bool then_relu = false);
    // "Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))"
    std::string describe() const override;

    int64_t in_channels() const { return in_channels_; }
    int64_t out_channels() const { return out_channels_; }

    Var weight;  // O×C×kh×kw
    Var bias;    // O; undefined when constructed with bias = false
    // false: autograd's composite conv2d (unfold, then one matrix product);
    // true: conv2d_fused, the same values without the unfolded copy of the
    // input (less memory, faster). Module::set_fast switches it.
    bool fused = false;

protected:
    void on_set_fast(bool on) override { fused = on; }  // Module::set_fast

private:
    void check_input(const Var& x) const;
    int64_t in_channels_, out_channels_;
    Size2 kernel_, stride_, padding_;
};

// MaxPool2d: the largest value of each kh×kw window (padding counts as −∞).
//   y[b, c, i, j] = max_{u, v} x[b, c, i·sh − ph + u, j·sw − pw + v]
// The gradient goes to the (first) maximum of each window. stride 0 means
// the kernel size, PyTorch's default. No parameters.
class MaxPool2d : public UnaryModule {
public:
    explicit MaxPool2d(Size2 kernel_size, Size2 stride = 0, Size2 padding = 0);
    Var forward(const Var& x) override;
    std::string describe() const override;  // "MaxPool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))"

    Size2 kernel_size() const { return kernel_; }
    Size2 stride() const { return stride_; }
    Size2 padding() const { return padding_; }

private:
    Size2 kernel_, stride_, padding_;
};

// AvgPool2d: the mean of each kh×kw window; zero padding counts in the mean
// (count_include_pad = true, PyTorch's default).
//   y[b, c, i, j] = (1 / kh·kw) Σ_{u, v} x[b, c, i·sh − ph + u, j·sw − pw + v]
class AvgPool2d : public UnaryModule {
public:
    explicit AvgPool2d(Size2 kernel_size, Size2 stride = 0, Size2 padding = 0);
    Var forward(const Var& x) override;
    std::string describe() const override;

private:
    Size2 kernel_, stride_, padding_;
};

}  // namespace attn
