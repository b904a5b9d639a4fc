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
    // Slices k whose index falls in [lo, hi) of block o, in the order of k.
    auto add_block = [&](int64_t o, int64_t lo, int64_t hi) {
        for (int64_t k = 0; k < m; ++k) {
            const int64_t at = indices[static_cast<size_t>(k)];
            if (at < lo || at >= hi) continue;
            const real* from = ps + (o * m + k) * inner;
            real* to = pd + (o * n + at) * inner;
            for (int64_t j = 0; j < inner; ++j) to[j] += from[j];
        }
    };
    // Large work is split over the threads by destination: each thread adds
    // into its own range of slices (an embedding's rows, say), so repeated
    // indices never meet on two threads, and every slice receives its
    // additions in the order of k, as on one thread.
    const bool split = m * inner >= 2 * kParallelGrain;
    if (outer == 1) {
        parallel_for(0, n, split ? 1 : n, [&](int64_t lo, int64_t hi) { add_block(0, lo, hi); });
    } else {
        parallel_for(0, outer, split ? 1 : outer, [&](int64_t o0, int64_t o1) {
            for (int64_t o = o0; o < o1; ++o) add_block(o, 0, n);
        });
    }
}

std::string format_index(real v) {
    // (only a whole number an int64_t holds, below 2^63, is printed as one: casting 1e20 is undefined)
    if (std::isfinite(v) && v == std::floor(v) && std::fabs(static_cast<double>(v)) < 0x1p63)
        return std::to_string(static_cast<int64_t>(v));
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
