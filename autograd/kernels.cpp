#include "autograd/kernels.hpp"

#include <cmath>
#include <sstream>

namespace attn {

void index_add_(Tensor& dst, int axis, const std::vector<int64_t>& indices, const Tensor& src) {
    const int64_t n = dst.shape()[axis], m = static_cast<int64_t>(indices.size());
    if (src.shape() != dst.shape().with(axis, m))
        throw std::invalid_argument("index_add_: src of shape " + src.shape().str() + " does not fit " +
                                    std::to_string(m) + " slices of " + dst.shape().str() + " along axis " +
                                    std::to_string(axis));
    if (src.numel() == 0) return;
    const int64_t inner = dst.shape().stride(axis), outer = src.numel() / (m * inner);
    const real* ps = src.data();
    real* pd = dst.data();
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t k = 0; k < m; ++k) {
            const real* from = ps + (o * m + k) * inner;
            real* to = pd + (o * n + indices[static_cast<size_t>(k)]) * inner;
            for (int64_t j = 0; j < inner; ++j) to[j] += from[j];
        }
}

std::string format_index(real v) {
    if (std::isfinite(v) && v == std::floor(v)) return std::to_string(static_cast<int64_t>(v));
    std::ostringstream os;
    os << v;
    return os.str();
}

std::vector<int64_t> strided_indices(int64_t start, int64_t step, int64_t count) {
    std::vector<int64_t> out(static_cast<size_t>(count));
    for (int64_t k = 0; k < count; ++k) out[static_cast<size_t>(k)] = start + k * step;
    return out;
}

}  // namespace attn
