#include "autograd/gradcheck.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace attn {

namespace {

// L = Σ w ⊙ out, summed in double.
double weighted_sum(const Tensor& out, const Tensor& w) {
    double s = 0;
    for (int64_t i = 0; i < out.numel(); ++i) s += static_cast<double>(w[i]) * out[i];
    return s;
}

std::string failure(const std::string& name, size_t input, const Shape& shape, int64_t index, double analytic,
                    double numeric, double tolerance) {
    std::ostringstream os;
    os.precision(10);
    os << "gradcheck " << name << ": input " << input << " (shape " << shape.str() << "), flat index " << index
       << ": analytic " << analytic << ", numeric " << numeric;
    os.precision(2);
    os << std::scientific << " (|difference| " << std::fabs(analytic - numeric) << " > " << tolerance << ")";
    return os.str();
}

// The flat indices of an input of n elements to difference: all of them, or
// `most` spread evenly from the first to the last.
std::vector<int64_t> elements_to_check(int64_t n, int64_t most) {
    std::vector<int64_t> picked;
    if (most <= 0 || n <= most) {
        for (int64_t i = 0; i < n; ++i) picked.push_back(i);
    } else if (most == 1) {
        picked.push_back(0);
    } else {
        for (int64_t k = 0; k < most; ++k) picked.push_back(k * (n - 1) / (most - 1));
    }
    return picked;
}

}  // namespace

GradcheckResult gradcheck(const std::string& name, FunctionRef<Var()> f, const std::vector<Var>& params,
                          const GradcheckOptions& options) {
    GradcheckResult result;
    for (size_t k = 0; k < params.size(); ++k)
        if (!params[k].requires_grad())
            return {false, "gradcheck " + name + ": input " + std::to_string(k) + " does not require a gradient", 0, {}};

    // Analytic: one backward pass with ∂L/∂out = w, from clean gradients.
    std::vector<Tensor> saved_grads;
    for (const Var& p : params) {
        saved_grads.push_back(p.node()->grad);
        p.node()->grad = Tensor();
    }
    Var out = f();
    if (!out.requires_grad()) {
        for (size_t k = 0; k < params.size(); ++k) params[k].node()->grad = saved_grads[k];
        return {false, "gradcheck " + name + ": the output does not require a gradient (was the op recorded?)", 0, {}};
    }
    Generator gen(options.seed);
    const Tensor w = Tensor::normal(out.shape(), 0, 1, gen);
    out.backward(w);
    std::vector<Tensor> analytic;
    for (size_t k = 0; k < params.size(); ++k) {
        const Tensor g = params[k].grad();
        analytic.push_back(g.defined() ? g : Tensor::zeros(params[k].shape()));
        params[k].node()->grad = saved_grads[k];
    }

    // Numeric: central differences, one element at a time, recording nothing.
    NoGradGuard no_grad;
    for (size_t k = 0; k < params.size() && (result.ok || options.every_element); ++k) {
        Tensor value = params[k].node()->value;
        GradcheckTensor table{value.shape()};
        for (const int64_t i : elements_to_check(value.numel(), options.max_per_input)) {
            const real original = value[i];
            value[i] = static_cast<real>(original + options.eps);
            const double up = weighted_sum(f().value(), w);
            value[i] = static_cast<real>(original - options.eps);
            const double down = weighted_sum(f().value(), w);
            value[i] = original;
            const double numeric = (up - down) / (2 * options.eps);
            const double a = analytic[k][i];
            const double tolerance = options.atol + options.rtol * std::max(std::fabs(a), std::fabs(numeric));
            ++result.checked;
            const bool right = std::fabs(a - numeric) <= tolerance;  // written so that NaN fails
            if (options.every_element) {
                const double scale = std::max(std::fabs(a), std::fabs(numeric));
                const double relative = scale > 0 ? std::fabs(a - numeric) / scale : 0;
                ++table.checked;
                // NaN counts as the worst there is
                if (!(relative <= table.worst_relative)) table.worst_relative = std::isnan(relative) ? std::numeric_limits<double>::infinity() : relative;
                if (!right && table.wrong++ == 0) table.first_wrong = i, table.analytic = a, table.numeric = numeric;
            }
            if (!right) {
                if (result.ok) result.message = failure(name, k, value.shape(), i, a, numeric, tolerance);
                result.ok = false;
                if (!options.every_element) break;
            }
        }
        if (options.every_element) result.tensors.push_back(table);
    }
    return result;
}

GradcheckResult gradcheck(const std::string& name, FunctionRef<Var(const std::vector<Var>&)> f,
                          const std::vector<Tensor>& inputs, const GradcheckOptions& options) {
    std::vector<Var> leaves;
    for (const Tensor& t : inputs) leaves.emplace_back(t.clone(), true);
    return gradcheck(name, [&] { return f(leaves); }, leaves, options);
}

}  // namespace attn
