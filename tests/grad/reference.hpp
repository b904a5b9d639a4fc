// What the independent references of tests/grad/ are written with: a plain
// row-major array indexed like the catalog's formulas, and a few vector
// helpers in plain loops. Nothing here calls the library's ops, so a wrong op
// in tensor/, autograd/ or attention/ cannot make a reference agree with it.
//
//     Array Q = x[0];                       // B×m×d, copied from the input tensor
//     for (b) for (i) for (l) E(b, i, l) = dot(row(Q, b, i), row(K, b, l));
//
// Indexing is bounds-checked and throws, naming the array's shape and the
// index, so a reference with a wrong loop bound fails loudly instead of
// reading garbage.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "tensor/tensor.hpp"

namespace attn::testing {

using Vec = std::vector<double>;

class Array {
public:
    Array() = default;
    explicit Array(std::vector<int64_t> shape, double fill = 0);
    // A copy of a tensor's values (the reference never shares its storage).
    Array(const Tensor& t);  // NOLINT: implicit on purpose, references read inputs as Arrays

    Tensor tensor() const;  // back to a Tensor, to compare with the module
    const std::vector<int64_t>& shape() const { return shape_; }
    int64_t size(int axis) const;
    int rank() const { return static_cast<int>(shape_.size()); }
    int64_t numel() const { return static_cast<int64_t>(v_.size()); }
    std::string shape_str() const;

    double& operator[](int64_t flat) { return v_.at(static_cast<size_t>(flat)); }
    double operator[](int64_t flat) const { return v_.at(static_cast<size_t>(flat)); }
    double& operator()(int64_t i) { return v_[offset({i})]; }
    double& operator()(int64_t i, int64_t j) { return v_[offset({i, j})]; }
    double& operator()(int64_t i, int64_t j, int64_t k) { return v_[offset({i, j, k})]; }
    double& operator()(int64_t i, int64_t j, int64_t k, int64_t l) { return v_[offset({i, j, k, l})]; }
    double& operator()(int64_t i, int64_t j, int64_t k, int64_t l, int64_t m) { return v_[offset({i, j, k, l, m})]; }
    double operator()(int64_t i) const { return v_[offset({i})]; }
    double operator()(int64_t i, int64_t j) const { return v_[offset({i, j})]; }
    double operator()(int64_t i, int64_t j, int64_t k) const { return v_[offset({i, j, k})]; }
    double operator()(int64_t i, int64_t j, int64_t k, int64_t l) const { return v_[offset({i, j, k, l})]; }
    double operator()(int64_t i, int64_t j, int64_t k, int64_t l, int64_t m) const {
        return v_[offset({i, j, k, l, m})];
    }

private:
    size_t offset(std::initializer_list<int64_t> index) const;
    std::vector<int64_t> shape_;
    std::vector<double> v_;
};

// ---- vectors, in plain loops --------------------------------------------------------
// The vector along the last axis at the leading indices: row(X, b, i) = X[b, i, :].
Vec row(const Array& X, int64_t i);
Vec row(const Array& X, int64_t i, int64_t j);
Vec row(const Array& X, int64_t i, int64_t j, int64_t k);
// Writes v into X[..., :] at the leading indices.
void set_row(Array& X, int64_t i, const Vec& v);
void set_row(Array& X, int64_t i, int64_t j, const Vec& v);
void set_row(Array& X, int64_t i, int64_t j, int64_t k, const Vec& v);

double dot(const Vec& a, const Vec& b);
// W x for W of shape out×in (PyTorch's Linear.weight layout: row o holds the
// weights of output o).
Vec matvec(const Array& W, const Vec& x);
// Wᵀ x for W of shape out×in (x has out entries).
Vec matvec_t(const Array& W, const Vec& x);
Vec add(const Vec& a, const Vec& b);
Vec sub(const Vec& a, const Vec& b);
Vec hadamard(const Vec& a, const Vec& b);
Vec scale(const Vec& a, double s);
Vec concat(const Vec& a, const Vec& b);
// f applied to every element: each(v, std::tanh). (Not "apply": argument-dependent
// lookup would find std::apply for a std::vector argument.)
Vec each(const Vec& a, double (*f)(double));
double sigmoid(double x);
double relu(double x);
// std::tanh as a plain function of a double, for each(v, tanh_): the standard
// library's own functions are overloaded and may not have their address taken.
double tanh_(double x);
double norm(const Vec& a);  // the L2 norm
double sum(const Vec& a);
double max(const Vec& a);
// A 1-D parameter (or a vector-shaped Array) as a Vec.
Vec vec(const Array& a);

// softmax_l(e_l) over the positions with keep[l] != 0; the others get exactly 0,
// and a row with nothing kept is all zeros (the catalog's fully-masked rule).
// keep empty = keep all.
Vec softmax(const Vec& e, const Vec& keep = {});

// The keep mask of one example: mask[b, :] of a B×n keep mask, or all ones
// when the mask is undefined (rank 0 / empty).
Vec keep_row(const Array& mask, int64_t b, int64_t n);

}  // namespace attn::testing
