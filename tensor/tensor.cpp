#include "tensor/tensor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "tensor/allocator.hpp"
#include "tensor/parallel.hpp"

namespace attn {

// ---- Storage ---------------------------------------------------------------

// The blocks come from the caching allocator (tensor/allocator.hpp): a
// training step's tensors reuse the previous step's memory.
Storage::Storage(int64_t size) : size_(size) {
    data_ = static_cast<real*>(storage_allocate(static_cast<size_t>(size) * sizeof(real)));
}

Storage::~Storage() { storage_release(data_, static_cast<size_t>(size_) * sizeof(real)); }

// ---- factories -------------------------------------------------------------

Tensor Tensor::empty(const Shape& shape) { return Tensor(std::make_shared<Storage>(shape.numel()), 0, shape); }

Tensor Tensor::zeros(const Shape& shape) { return full(shape, 0); }
Tensor Tensor::ones(const Shape& shape) { return full(shape, 1); }

Tensor Tensor::full(const Shape& shape, real value) {
    Tensor t = empty(shape);
    t.fill_(value);
    return t;
}

Tensor Tensor::scalar(real value) { return full(Shape{}, value); }

Tensor Tensor::arange(int64_t n) { return arange(0, static_cast<real>(n), 1); }

Tensor Tensor::arange(real start, real stop, real step) {
    if (step == 0) throw std::invalid_argument("arange: step must not be zero");
    // (a NaN step once gave an empty tensor, and a count of 1e30 was cast to an integer: undefined)
    if (!std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step))
        throw std::invalid_argument("arange: start, stop and step must be finite, got " + std::to_string(start) + ", " +
                                    std::to_string(stop) + ", " + std::to_string(step));
    const double count = std::ceil((static_cast<double>(stop) - start) / step);
    if (count >= 0x1p63)  // 2^63: more than an int64_t holds
        throw std::length_error("arange: " + std::to_string(count) + " elements from " + std::to_string(start) + " to " +
                                std::to_string(stop) + " by " + std::to_string(step) + " are more than an int64_t counts");
    const int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
    Tensor t = empty(Shape{n});
    for (int64_t i = 0; i < n; ++i) t[i] = static_cast<real>(start + static_cast<double>(step) * i);
    return t;
}

Tensor Tensor::from(std::vector<real> values, const Shape& shape) {
    if (static_cast<int64_t>(values.size()) != shape.numel())
        throw std::invalid_argument("Tensor::from: " + std::to_string(values.size()) +
                                    " values cannot fill shape " + shape.str() + " (" +
                                    std::to_string(shape.numel()) + " elements)");
    Tensor t = empty(shape);
    if (!values.empty()) std::memcpy(t.data(), values.data(), values.size() * sizeof(real));
    return t;
}

Tensor Tensor::from(std::initializer_list<real> values) {
    return from(std::vector<real>(values), Shape{static_cast<int64_t>(values.size())});
}

Tensor Tensor::uniform(const Shape& shape, real lo, real hi, Generator& gen) {
    Tensor t = empty(shape);
    for (int64_t i = 0; i < t.numel(); ++i) t[i] = static_cast<real>(gen.uniform(lo, hi));
    return t;
}

Tensor Tensor::normal(const Shape& shape, real mean, real std, Generator& gen) {
    Tensor t = empty(shape);
    for (int64_t i = 0; i < t.numel(); ++i) t[i] = static_cast<real>(gen.normal(mean, std));
    return t;
}

// ---- shape and access ------------------------------------------------------

int64_t Tensor::size(int axis) const { return shape_[shape_.normalize_axis(axis, "Tensor::size")]; }

real& Tensor::at(std::initializer_list<int64_t> index) {
    const int64_t flat = flat_index(index);  // checked before data() counts a change
    return data()[flat];
}

// Not through the non-const at(): a read must not count as a change (version()).
real Tensor::at(std::initializer_list<int64_t> index) const { return data()[flat_index(index)]; }

int64_t Tensor::flat_index(std::initializer_list<int64_t> index) const {
    if (static_cast<int>(index.size()) != rank())
        throw std::invalid_argument("Tensor::at: " + std::to_string(index.size()) +
                                    " indices for a tensor of shape " + shape_.str());
    int64_t flat = 0, axis = 0;
    for (int64_t i : index) {
        if (i < 0 || i >= shape_[static_cast<int>(axis)])
            throw std::out_of_range("Tensor::at: index " + std::to_string(i) + " is out of range on axis " +
                                    std::to_string(axis) + " of shape " + shape_.str());
        flat = flat * shape_[static_cast<int>(axis)] + i;
        ++axis;
    }
    return flat;
}

real Tensor::item() const {
    if (!defined() || numel() != 1)
        throw std::invalid_argument("Tensor::item: needs exactly one element, got shape " + shape_.str());
    return data()[0];
}

Tensor Tensor::clone() const {
    Tensor t = empty(shape_);
    if (numel() > 0) std::memcpy(t.data(), data(), static_cast<size_t>(numel()) * sizeof(real));
    return t;
}

Tensor Tensor::reshape(const std::vector<int64_t>& dims) const {
    int64_t known = 1;
    int inferred = -1;
    for (size_t i = 0; i < dims.size(); ++i) {
        if (dims[i] == -1) {
            if (inferred >= 0) throw std::invalid_argument("reshape: only one dimension can be -1");
            inferred = static_cast<int>(i);
        } else {
            if (dims[i] < 0) throw std::invalid_argument("reshape: negative dimension " + std::to_string(dims[i]));
            known *= dims[i];
        }
    }
    std::vector<int64_t> resolved = dims;
    if (inferred >= 0) {
        if (known == 0 || numel() % known != 0)
            throw std::invalid_argument("reshape: cannot infer the -1 dimension reshaping " + shape_.str() +
                                        " (" + std::to_string(numel()) + " elements)");
        resolved[static_cast<size_t>(inferred)] = numel() / known;
    }
    return reshape(Shape(resolved));
}

Tensor Tensor::reshape(const Shape& shape) const {
    if (shape.numel() != numel())
        throw std::invalid_argument("reshape: cannot reshape " + shape_.str() + " (" + std::to_string(numel()) +
                                    " elements) into " + shape.str() + " (" + std::to_string(shape.numel()) +
                                    " elements)");
    return Tensor(storage_, offset_, shape);
}

Tensor Tensor::rows(int64_t start, int64_t end) const {
    if (rank() == 0 || start < 0 || end < start || end > shape_[0])
        throw std::out_of_range("Tensor::rows: rows [" + std::to_string(start) + ", " + std::to_string(end) +
                                ") of shape " + shape_.str());
    return Tensor(storage_, offset_ + start * shape_.stride(0), shape_.with(0, end - start));
}

Tensor& Tensor::fill_(real value) {
    real* p = data();
    // Large fills (the zeros of a gradient buffer or of conv2d's columns, up
    // to tens of MB) are split over the pool: 64K floats a chunk at least.
    parallel_for(0, numel(), int64_t(1) << 16,
                 [&](int64_t begin, int64_t end) { std::fill(p + begin, p + end, value); });
    return *this;
}

Tensor& Tensor::copy_(const Tensor& src) {
    if (src.shape() != shape_)
        throw std::invalid_argument("copy_: source shape " + src.shape().str() + " differs from destination " +
                                    shape_.str());
    if (numel() > 0) std::memmove(data(), src.data(), static_cast<size_t>(numel()) * sizeof(real));
    return *this;
}

// ---- printing --------------------------------------------------------------

namespace {

void print_axis(std::ostream& os, const Tensor& t, int axis, int64_t offset) {
    const int64_t n = t.shape()[axis], stride = t.shape().stride(axis);
    const int64_t edge = 3;  // show the first and last 3 entries of a long axis
    // Entries of the last axis go on one line; rows, and the "..." that
    // stands for the rows left out, one per line (as NumPy prints).
    const std::string separator =
        axis + 1 == t.rank() ? ", " : ",\n" + std::string(static_cast<size_t>(axis) + 8, ' ');
    os << '[';
    for (int64_t i = 0; i < n; ++i) {
        if (n > 2 * edge + 1 && i == edge) {
            os << "..." << separator;
            i = n - edge - 1;
            continue;
        }
        if (axis + 1 == t.rank())
            os << t[offset + i];
        else
            print_axis(os, t, axis + 1, offset + i * stride);
        if (i + 1 < n) os << separator;
    }
    os << ']';
}

}  // namespace

std::string Tensor::str() const {
    std::ostringstream os;
    os.precision(5);
    if (!defined()) return "tensor(undefined)";
    os << "tensor(" << shape_.str() << ", ";
    if (rank() == 0)
        os << data()[0];
    else
        print_axis(os, *this, 0, 0);
    os << ')';
    return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }
std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.str(); }

}  // namespace attn
