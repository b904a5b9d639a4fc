// Shape ops: rearrange, cut, join and index the elements of a tensor without
// computing new values.
//
//   views (share storage)   reshape unsqueeze squeeze
//   copies                  transpose permute slice concat stack split expand
//   indexing                index_select gather scatter_add one_hot
//
// A Tensor is always contiguous (tensor/tensor.hpp), so only ops that keep the
// row-major order of the elements can be views; every other op copies into a
// new contiguous tensor. Most copies are "strided copies": the output is
// walked in order while the input is read through one stride per output axis,
//     out[i_0, …, i_{r-1}] = in[Σ_d i_d · stride_d],
// where permute uses the input's strides in permuted order and expand uses
// stride 0 along each broadcast axis.
//
// Index tensors hold whole numbers stored as reals (the library has one
// element type). Each one is checked: a fraction, a NaN or a value out of
// range throws, naming the op, the value and the valid range.
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>

#include "tensor/ops.hpp"
#include "tensor/parallel.hpp"

namespace attn {
namespace {


void check_defined(const Tensor& t, const char* op) {
    if (!t.defined()) throw std::invalid_argument(std::string(op) + ": the input tensor is undefined");
}

// An axis at which a new one can be inserted into a tensor of `s`'s rank:
// 0 … rank, or negative counting from rank+1 (-1 appends).
int normalize_insert_axis(int axis, const Shape& s, const char* op) {
    const int a = axis < 0 ? axis + s.rank() + 1 : axis;
    if (a < 0 || a > s.rank())
        throw std::out_of_range(std::string(op) + ": axis " + std::to_string(axis) +
                                " is out of range for inserting an axis into shape " + s.str());
    return a;
}

// "7", "1.5", "nan": how an index value appears in an error message.
std::string show(real v) {
    std::ostringstream os;
    os << v;
    return os.str();
}

// Reads index value v as an integer in [0, n). `where()` completes the error
// message (e.g. " on axis 1 of shape 2×5"); it is only called on failure.
template <class Where>
int64_t checked_index(real v, int64_t n, const char* op, Where where) {
    if (!(v >= 0 && v < static_cast<real>(n)))  // also catches NaN
        throw std::out_of_range(std::string(op) + ": index " + show(v) + " is out of range [0, " +
                                std::to_string(n) + ")" + where());
    const int64_t i = static_cast<int64_t>(v);
    if (static_cast<real>(i) != v)
        throw std::invalid_argument(std::string(op) + ": index " + show(v) + " is not a whole number");
    return i;
}

std::string on_axis(int axis, const Shape& s) { return " on axis " + std::to_string(axis) + " of shape " + s.str(); }

// out (contiguous, of `shape`) [i] = in[Σ_d i_d · strides[d]]. The last axis is
// the inner loop: a memcpy when its stride is 1, a fill when it is 0.
void strided_copy(const real* in, const Shape& shape, const int64_t* strides, real* out) {
    const int r = shape.rank();
    if (r == 0) {
        out[0] = in[0];
        return;
    }
    const int64_t inner = shape[r - 1], step = strides[r - 1];
    if (shape.numel() == 0) return;
    const int64_t rows = shape.numel() / inner;
    const int64_t grain = parallel_grain(inner);
    parallel_for(0, rows, grain, [&](int64_t lo, int64_t hi) {
        int64_t idx[Shape::kMaxRank] = {}, off = 0, rest = lo;
        for (int d = r - 2; d >= 0; --d) {
            idx[d] = rest % shape[d];
            rest /= shape[d];
            off += idx[d] * strides[d];
        }
        for (int64_t row = lo; row < hi; ++row) {
            real* dst = out + row * inner;
            const real* src = in + off;
            if (step == 1)
                std::memcpy(dst, src, static_cast<size_t>(inner) * sizeof(real));
            else if (step == 0)
                for (int64_t j = 0; j < inner; ++j) dst[j] = src[0];
            else
                for (int64_t j = 0; j < inner; ++j) dst[j] = src[j * step];
            for (int d = r - 2; d >= 0; --d) {  // odometer step
                off += strides[d];
                if (++idx[d] < shape[d]) break;
                off -= strides[d] * shape[d];
                idx[d] = 0;
            }
        }
    });
}

// Calls f(flat index into `index`, offset into the big tensor) for every
// element of an index tensor used by gather / scatter_add: the offset covers
// every axis except `axis`, whose contribution the caller adds.
template <class F>
void for_each_index_position(const Shape& index_shape, const Shape& big, int axis, F f) {
    const int r = index_shape.rank();
    int64_t idx[Shape::kMaxRank] = {}, off = 0;
    for (int64_t flat = 0, n = index_shape.numel(); flat < n; ++flat) {
        f(flat, off);
        for (int d = r - 1; d >= 0; --d) {
            const int64_t st = d == axis ? 0 : big.stride(d);
            off += st;
            if (++idx[d] < index_shape[d]) break;
            off -= st * index_shape[d];
            idx[d] = 0;
        }
    }
}

// gather and scatter_add need an index of the big tensor's rank whose sizes
// off `axis` are no larger than the big tensor's.
void check_index_shape(const Shape& index, const Shape& big, int axis, const char* op) {
    if (index.rank() != big.rank())
        throw std::invalid_argument(std::string(op) + ": index of shape " + index.str() + " and tensor of shape " +
                                    big.str() + " need the same rank");
    for (int d = 0; d < big.rank(); ++d)
        if (d != axis && index[d] > big[d])
            throw std::invalid_argument(std::string(op) + ": index of shape " + index.str() +
                                        " is larger than tensor of shape " + big.str() + " on axis " +
                                        std::to_string(d));
}

}  // namespace

// ---- views ---------------------------------------------------------------------

Tensor reshape(const Tensor& a, const std::vector<int64_t>& dims) {
    check_defined(a, "reshape");
    return a.reshape(dims);
}

Tensor unsqueeze(const Tensor& a, int axis) {
    check_defined(a, "unsqueeze");
    return a.reshape(a.shape().inserted(normalize_insert_axis(axis, a.shape(), "unsqueeze"), 1));
}

Tensor squeeze(const Tensor& a, int axis) {
    check_defined(a, "squeeze");
    const int ax = a.shape().normalize_axis(axis, "squeeze");
    if (a.shape()[ax] != 1)
        throw std::invalid_argument("squeeze: axis " + std::to_string(axis) + " of shape " + a.shape().str() +
                                    " has size " + std::to_string(a.shape()[ax]) + ", not 1");
    return a.reshape(a.shape().without(ax));
}

// ---- copies --------------------------------------------------------------------

// out axis i = in axis axes[i]: out[i_0, …] = in[Σ_i i_i · in_stride(axes[i])].
Tensor permute(const Tensor& a, const std::vector<int>& axes) {
    check_defined(a, "permute");
    const Shape& s = a.shape();
    bool seen[Shape::kMaxRank] = {};
    bool ok = static_cast<int>(axes.size()) == s.rank();
    int norm[Shape::kMaxRank] = {};
    for (int i = 0; ok && i < s.rank(); ++i) {
        const int ax = axes[static_cast<size_t>(i)] < 0 ? axes[static_cast<size_t>(i)] + s.rank()
                                                        : axes[static_cast<size_t>(i)];
        ok = ax >= 0 && ax < s.rank() && !seen[ax];
        if (ok) {
            seen[ax] = true;
            norm[i] = ax;
        }
    }
    if (!ok) {
        std::string list;
        for (size_t i = 0; i < axes.size(); ++i) list += (i ? ", " : "") + std::to_string(axes[i]);
        throw std::invalid_argument("permute: axes [" + list + "] are not a permutation of the " +
                                    std::to_string(s.rank()) + " axes of shape " + s.str());
    }
    Shape out_shape;
    int64_t strides[Shape::kMaxRank] = {};
    for (int i = 0; i < s.rank(); ++i) {
        out_shape.push_back(s[norm[i]]);
        strides[i] = s.stride(norm[i]);
    }
    Tensor out = Tensor::empty(out_shape);
    strided_copy(a.data(), out_shape, strides, out.data());
    return out;
}

Tensor transpose(const Tensor& a, int axis0, int axis1) {
    check_defined(a, "transpose");
    const int x = a.shape().normalize_axis(axis0, "transpose"), y = a.shape().normalize_axis(axis1, "transpose");
    std::vector<int> axes;
    for (int i = 0; i < a.rank(); ++i) axes.push_back(i == x ? y : (i == y ? x : i));
    return permute(a, axes);
}

// Materialises a broadcast: the same strided copy as permute, with stride 0
// along the axes where a has size 1 (or that a lacks).
Tensor expand(const Tensor& a, const Shape& shape) {
    check_defined(a, "expand");
    const Shape& s = a.shape();
    const int shift = shape.rank() - s.rank();
    bool ok = shift >= 0;
    int64_t strides[Shape::kMaxRank] = {};
    for (int i = 0; ok && i < shape.rank(); ++i) {
        const int j = i - shift;
        const int64_t d = j >= 0 ? s[j] : 1;
        ok = d == shape[i] || d == 1;
        strides[i] = (j >= 0 && d != 1) ? s.stride(j) : 0;
    }
    if (!ok) throw std::invalid_argument("expand: shape " + s.str() + " does not broadcast to " + shape.str());
    Tensor out = Tensor::empty(shape);
    strided_copy(a.data(), shape, strides, out.data());
    return out;
}

// Python's a[start:end:step] along one axis: negative start/end count from the
// end, both are clamped to [0, n], and the step must be positive.
Tensor slice(const Tensor& a, int axis, int64_t start, int64_t end, int64_t step) {
    check_defined(a, "slice");
    const int ax = a.shape().normalize_axis(axis, "slice");
    if (step <= 0) throw std::invalid_argument("slice: step must be positive, got " + std::to_string(step));
    const int64_t n = a.shape()[ax];
    auto resolve = [n](int64_t i) {
        if (i < 0) i += n;
        return i < 0 ? 0 : (i > n ? n : i);
    };
    const int64_t b = resolve(start), e = resolve(end);
    const int64_t count = e > b ? (e - b + step - 1) / step : 0;
    Tensor out = Tensor::empty(a.shape().with(ax, count));
    if (out.numel() == 0) return out;
    const int64_t inner = a.shape().stride(ax), outer = out.numel() / (count * inner);
    const real* in = a.data();
    real* po = out.data();
    if (step == 1) {  // the slices of one outer index are one run: copy it at once
        for (int64_t o = 0; o < outer; ++o)
            std::memcpy(po + o * count * inner, in + (o * n + b) * inner,
                        static_cast<size_t>(count * inner) * sizeof(real));
        return out;
    }
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < count; ++i)
            std::memcpy(po + (o * count + i) * inner, in + (o * n + b + i * step) * inner,
                        static_cast<size_t>(inner) * sizeof(real));
    return out;
}

// Joins tensors that agree on every axis but `axis`: for each outer index,
// copy each part's block of (its length × inner) elements in turn.
Tensor concat(const std::vector<Tensor>& parts, int axis) {
    if (parts.empty()) throw std::invalid_argument("concat: needs at least one tensor");
    for (const Tensor& p : parts) check_defined(p, "concat");
    const Shape& first = parts[0].shape();
    const int ax = first.normalize_axis(axis, "concat");
    int64_t total = 0;
    for (size_t k = 0; k < parts.size(); ++k) {
        const Shape& s = parts[k].shape();
        bool ok = s.rank() == first.rank();
        for (int d = 0; ok && d < s.rank(); ++d) ok = d == ax || s[d] == first[d];
        if (!ok)
            throw std::invalid_argument("concat: part " + std::to_string(k) + " of shape " + s.str() +
                                        " does not match part 0 of shape " + first.str() + " off axis " +
                                        std::to_string(ax));
        total += s[ax];
    }
    Tensor out = Tensor::empty(first.with(ax, total));
    if (out.numel() == 0) return out;
    const int64_t inner = first.stride(ax), outer = out.numel() / (total * inner);
    real* dst = out.data();
    for (int64_t o = 0; o < outer; ++o)
        for (const Tensor& p : parts) {
            const int64_t block = p.shape()[ax] * inner;
            if (block == 0) continue;
            std::memcpy(dst, p.data() + o * block, static_cast<size_t>(block) * sizeof(real));
            dst += block;
        }
    return out;
}

// stack = unsqueeze every part at `axis`, then concat along it.
Tensor stack(const std::vector<Tensor>& parts, int axis) {
    if (parts.empty()) throw std::invalid_argument("stack: needs at least one tensor");
    for (const Tensor& p : parts) check_defined(p, "stack");
    const int ax = normalize_insert_axis(axis, parts[0].shape(), "stack");
    std::vector<Tensor> lifted;
    lifted.reserve(parts.size());
    for (size_t k = 0; k < parts.size(); ++k) {
        if (parts[k].shape() != parts[0].shape())
            throw std::invalid_argument("stack: part " + std::to_string(k) + " of shape " + parts[k].shape().str() +
                                        " differs from part 0 of shape " + parts[0].shape().str() +
                                        " (stack needs equal shapes)");
        lifted.push_back(parts[k].reshape(parts[k].shape().inserted(ax, 1)));
    }
    return concat(lifted, ax);
}

std::vector<Tensor> split(const Tensor& a, const std::vector<int64_t>& sizes, int axis) {
    check_defined(a, "split");
    const int ax = a.shape().normalize_axis(axis, "split");
    int64_t total = 0;
    std::string list;
    bool negative = false;
    for (size_t i = 0; i < sizes.size(); ++i) {
        total += sizes[i];
        negative = negative || sizes[i] < 0;
        list += (i ? " + " : "") + std::to_string(sizes[i]);
    }
    if (negative || total != a.shape()[ax])
        throw std::invalid_argument("split: sizes " + list + " do not add up to the size " +
                                    std::to_string(a.shape()[ax]) + " of axis " + std::to_string(ax) +
                                    " of shape " + a.shape().str());
    std::vector<Tensor> pieces;
    int64_t start = 0;
    for (int64_t size : sizes) {
        pieces.push_back(slice(a, ax, start, start + size));
        start += size;
    }
    return pieces;
}

// ---- indexing --------------------------------------------------------------------

// out = a with axis `axis` replaced by the slices indices[0], indices[1], ….
Tensor index_select(const Tensor& a, int axis, const std::vector<int64_t>& indices) {
    check_defined(a, "index_select");
    const Shape& s = a.shape();
    const int ax = s.normalize_axis(axis, "index_select");
    const int64_t n = s[ax], m = static_cast<int64_t>(indices.size());
    for (int64_t i : indices)
        if (i < 0 || i >= n)
            throw std::out_of_range("index_select: index " + std::to_string(i) + " is out of range [0, " +
                                    std::to_string(n) + ")" + on_axis(ax, s));
    Tensor out = Tensor::empty(s.with(ax, m));
    if (out.numel() == 0) return out;
    const int64_t inner = s.stride(ax), outer = out.numel() / (m * inner);
    const real* in = a.data();
    real* po = out.data();
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t k = 0; k < m; ++k)
            std::memcpy(po + (o * m + k) * inner, in + (o * n + indices[static_cast<size_t>(k)]) * inner,
                        static_cast<size_t>(inner) * sizeof(real));
    return out;
}

// For axis 1 of a rank-3 tensor: out[i][j][k] = a[i][index[i][j][k]][k].
Tensor gather(const Tensor& a, int axis, const Tensor& index) {
    check_defined(a, "gather");
    check_defined(index, "gather");
    const Shape& s = a.shape();
    const int ax = s.normalize_axis(axis, "gather");
    check_index_shape(index.shape(), s, ax, "gather");
    Tensor out = Tensor::empty(index.shape());
    const int64_t n = s[ax], step = s.stride(ax);
    const real* in = a.data();
    const real* idx = index.data();
    real* po = out.data();
    for_each_index_position(index.shape(), s, ax, [&](int64_t flat, int64_t off) {
        po[flat] = in[off + checked_index(idx[flat], n, "gather", [&] { return on_axis(ax, s); }) * step];
    });
    return out;
}

// The adjoint of gather: out = zeros(shape); out[…index…] += src. Indices may
// repeat (their contributions add up), so this runs on one thread.
Tensor scatter_add(const Shape& shape, int axis, const Tensor& index, const Tensor& src) {
    check_defined(index, "scatter_add");
    check_defined(src, "scatter_add");
    const int ax = shape.normalize_axis(axis, "scatter_add");
    if (index.shape() != src.shape())
        throw std::invalid_argument("scatter_add: index of shape " + index.shape().str() + " and src of shape " +
                                    src.shape().str() + " need the same shape");
    check_index_shape(index.shape(), shape, ax, "scatter_add");
    Tensor out = Tensor::zeros(shape);
    const int64_t n = shape[ax], step = shape.stride(ax);
    const real* idx = index.data();
    const real* ps = src.data();
    real* po = out.data();
    for_each_index_position(index.shape(), shape, ax, [&](int64_t flat, int64_t off) {
        po[off + checked_index(idx[flat], n, "scatter_add", [&] { return on_axis(ax, shape); }) * step] += ps[flat];
    });
    return out;
}

// indices (any shape) → indices.shape() × num_classes, a 1 at each index.
Tensor one_hot(const Tensor& indices, int64_t num_classes) {
    check_defined(indices, "one_hot");
    if (num_classes <= 0)
        throw std::invalid_argument("one_hot: num_classes must be positive, got " + std::to_string(num_classes));
    Shape shape = indices.shape();
    shape.push_back(num_classes);
    Tensor out = Tensor::zeros(shape);
    const real* idx = indices.data();
    real* po = out.data();
    for (int64_t i = 0, n = indices.numel(); i < n; ++i)
        po[i * num_classes + checked_index(idx[i], num_classes, "one_hot", [&] {
                 return " for " + std::to_string(num_classes) + " classes";
             })] = 1;
    return out;
}

}  // namespace attn
