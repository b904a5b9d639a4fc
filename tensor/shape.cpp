#include "tensor/shape.hpp"

#include <stdexcept>

namespace attn {

Shape::Shape(std::initializer_list<int64_t> dims) {
    for (int64_t d : dims) push_back(d);
}

Shape::Shape(const std::vector<int64_t>& dims) {
    for (int64_t d : dims) push_back(d);
}

void Shape::push_back(int64_t d) {
    if (rank_ == kMaxRank)
        throw std::invalid_argument("Shape: rank above " + std::to_string(kMaxRank) + " is not supported");
    if (d < 0) throw std::invalid_argument("Shape: negative dimension " + std::to_string(d));
    dims_[rank_++] = d;
}

int64_t Shape::numel() const {
    // Every product is checked: a size read from a flag or a file (2^31 × 2^33,
    // say) must not wrap around to a small or zero count that the code would
    // then index past. (__builtin_mul_overflow, GCC's and clang's, multiplies
    // and reports a wrap-around in one step: numel is called in every op.)
    int64_t n = 1;
    bool wrapped = false;
    for (int i = 0; i < rank_; ++i) wrapped |= __builtin_mul_overflow(n, dims_[i], &n);
    if (wrapped) {
        for (int i = 0; i < rank_; ++i)
            if (dims_[i] == 0) return 0;  // an empty tensor, however large its other axes
        throw std::length_error("Shape " + str() + " has more elements than an int64_t counts");
    }
    return n;
}

int Shape::normalize_axis(int axis, const char* op) const {
    int a = axis < 0 ? axis + rank_ : axis;
    if (a < 0 || a >= rank_)
        throw std::out_of_range(std::string(op) + ": axis " + std::to_string(axis) +
                                " is out of range for shape " + str());
    return a;
}

int64_t Shape::stride(int axis) const {
    int64_t s = 1;
    for (int i = rank_ - 1; i > axis; --i) s *= dims_[i];
    return s;
}

Shape Shape::without(int axis) const {
    Shape s;
    for (int i = 0; i < rank_; ++i)
        if (i != axis) s.push_back(dims_[i]);
    return s;
}

Shape Shape::with(int axis, int64_t size) const {
    Shape s = *this;
    s.dims_[axis] = size;
    return s;
}

Shape Shape::inserted(int axis, int64_t size) const {
    Shape s;
    for (int i = 0; i < rank_; ++i) {
        if (i == axis) s.push_back(size);
        s.push_back(dims_[i]);
    }
    if (axis == rank_) s.push_back(size);
    return s;
}

bool Shape::operator==(const Shape& other) const {
    if (rank_ != other.rank_) return false;
    for (int i = 0; i < rank_; ++i)
        if (dims_[i] != other.dims_[i]) return false;
    return true;
}

std::string Shape::str() const {
    if (rank_ == 0) return "scalar";
    std::string s;
    for (int i = 0; i < rank_; ++i) {
        if (i) s += "×";
        s += std::to_string(dims_[i]);
    }
    return s;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
    int rank = a.rank() > b.rank() ? a.rank() : b.rank();
    Shape out;
    for (int i = 0; i < rank; ++i) {
        // Axis i of the result lines up with axis i-(rank-r) of an input of rank r.
        int ia = i - (rank - a.rank()), ib = i - (rank - b.rank());
        int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
        if (da != db && da != 1 && db != 1)
            throw std::invalid_argument(std::string(op) + ": shapes " + a.str() + " and " + b.str() +
                                        " do not broadcast (axis " + std::to_string(i) + ": " +
                                        std::to_string(da) + " vs " + std::to_string(db) + ")");
        out.push_back(da == 1 ? db : da);
    }
    return out;
}

}  // namespace attn
