// Shape: the dimensions of a tensor, and NumPy's broadcasting rules.
//
// A Shape holds up to kMaxRank dimensions inline (no heap allocation), because
// every op of the autograd engine creates one and tiny ops must stay cheap.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace attn {

class Shape {
public:
    static constexpr int kMaxRank = 8;

    Shape() = default;
    Shape(std::initializer_list<int64_t> dims);
    explicit Shape(const std::vector<int64_t>& dims);

    int rank() const { return rank_; }
    int64_t operator[](int axis) const { return dims_[axis]; }
    int64_t& operator[](int axis) { return dims_[axis]; }
    int64_t numel() const;
    // Negative axes count from the end, as in NumPy: -1 is the last axis.
    // Throws, naming `op`, when the axis is out of range.
    int normalize_axis(int axis, const char* op) const;
    // The distance in elements between consecutive indices along `axis`
    // in contiguous (row-major) storage.
    int64_t stride(int axis) const;

    void push_back(int64_t d);
    Shape without(int axis) const;                  // drop one axis
    Shape with(int axis, int64_t size) const;       // replace one axis
    Shape inserted(int axis, int64_t size) const;   // insert an axis before `axis`
    std::vector<int64_t> to_vector() const { return {dims_, dims_ + rank_}; }

    const int64_t* begin() const { return dims_; }
    const int64_t* end() const { return dims_ + rank_; }

    bool operator==(const Shape& other) const;
    bool operator!=(const Shape& other) const { return !(*this == other); }

    // "4×5×16"; a scalar (rank 0) prints as "scalar".
    std::string str() const;

private:
    int64_t dims_[kMaxRank] = {};
    int rank_ = 0;
};

// NumPy broadcasting: align the shapes at their last axis; each pair of sizes
// must be equal or one of them 1. Throws "op: shapes 2×3 and 4×3 do not broadcast".
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace attn
