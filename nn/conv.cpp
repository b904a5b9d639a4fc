#include "nn/conv.hpp"

#include <stdexcept>

#include "nn/init.hpp"

namespace attn {

namespace {

std::string pair_str(Size2 s) { return "(" + std::to_string(s.h) + ", " + std::to_string(s.w) + ")"; }

// PyTorch's default stride for pooling is the kernel size.
Size2 default_stride(Size2 stride, Size2 kernel) { return stride.h == 0 && stride.w == 0 ? kernel : stride; }

}  // namespace

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, Size2 kernel_size, Generator& gen, Size2 stride,
               Size2 padding, bool with_bias)
    : in_channels_(in_channels), out_channels_(out_channels), kernel_(kernel_size), stride_(stride),
      padding_(padding) {
    if (in_channels <= 0 || out_channels <= 0 || kernel_size.h <= 0 || kernel_size.w <= 0)
        throw std::invalid_argument("Conv2d: channels " + std::to_string(in_channels) + " → " +
                                    std::to_string(out_channels) + " and kernel " + pair_str(kernel_size) +
                                    " must be positive");
    Tensor w = Tensor::empty({out_channels, in_channels, kernel_size.h, kernel_size.w});
    weight = register_parameter("weight", init::pytorch_default_weight_(w, gen));
    if (with_bias) {
        Tensor b = Tensor::empty({out_channels});
        bias = register_parameter("bias", init::uniform_fan_in_(b, init::fans(w.shape()).first, gen));
    }
}

void Conv2d::check_input(const Var& x) const {
    if (x.rank() != 4 || x.size(1) != in_channels_)
        throw std::invalid_argument("Conv2d: input " + x.shape().str() + " must be B×C×H×W with C = " +
                                    std::to_string(in_channels_) + " channels");
}

Var Conv2d::forward(const Var& x) {
    check_input(x);
    return fused ? conv2d_fused(x, weight, bias, stride_, padding_) : conv2d(x, weight, bias, stride_, padding_);
}

Var Conv2d::forward_max_pooled(const Var& x, const MaxPool2d& pool, bool then_relu) {
    if (!fused) {
        const Var pooled = max_pool2d(forward(x), pool.kernel_size(), pool.stride(), pool.padding());
        return then_relu ? relu(pooled) : pooled;
    }
    check_input(x);
    const auto op = then_relu ? conv2d_max_pool_relu_fused : conv2d_max_pool_fused;
    return op(x, weight, bias, stride_, padding_, pool.kernel_size(), pool.stride(), pool.padding());
}

std::string Conv2d::describe() const {
    return "Conv2d(" + std::to_string(in_channels_) + ", " + std::to_string(out_channels_) +
           ", kernel_size=" + pair_str(kernel_) + ", stride=" + pair_str(stride_) + ", padding=" +
           pair_str(padding_) + (bias.defined() ? "" : ", bias=false") + ")";
}

MaxPool2d::MaxPool2d(Size2 kernel_size, Size2 stride, Size2 padding)
    : kernel_(kernel_size), stride_(default_stride(stride, kernel_size)), padding_(padding) {}

Var MaxPool2d::forward(const Var& x) { return max_pool2d(x, kernel_, stride_, padding_, is_fast()); }

std::string MaxPool2d::describe() const {
    return "MaxPool2d(kernel_size=" + pair_str(kernel_) + ", stride=" + pair_str(stride_) +
           ", padding=" + pair_str(padding_) + ")";
}

AvgPool2d::AvgPool2d(Size2 kernel_size, Size2 stride, Size2 padding)
    : kernel_(kernel_size), stride_(default_stride(stride, kernel_size)), padding_(padding) {}

Var AvgPool2d::forward(const Var& x) { return avg_pool2d(x, kernel_, stride_, padding_); }

std::string AvgPool2d::describe() const {
    return "AvgPool2d(kernel_size=" + pair_str(kernel_) + ", stride=" + pair_str(stride_) +
           ", padding=" + pair_str(padding_) + ")";
}

}  // namespace attn
