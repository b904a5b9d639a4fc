#include "tests/grad/reference.hpp"

#include <algorithm>

namespace attn::testing {

Array::Array(std::vector<int64_t> shape, double fill) : shape_(std::move(shape)) {
    int64_t n = 1;
    for (int64_t s : shape_) {
        if (s < 0) throw std::invalid_argument("reference Array: negative size in " + shape_str());
        n *= s;
    }
    v_.assign(static_cast<size_t>(n), fill);
}

Array::Array(const Tensor& t) {
    if (!t.defined()) return;
    for (int64_t s : t.shape()) shape_.push_back(s);
    v_.resize(static_cast<size_t>(t.numel()));
    for (int64_t i = 0; i < t.numel(); ++i) v_[static_cast<size_t>(i)] = static_cast<double>(t[i]);
}

Tensor Array::tensor() const {
    std::vector<real> values(v_.begin(), v_.end());
    return Tensor::from(std::move(values), Shape(shape_));
}

int64_t Array::size(int axis) const {
    const int r = rank();
    const int a = axis < 0 ? axis + r : axis;
    if (a < 0 || a >= r)
        throw std::out_of_range("reference Array " + shape_str() + ": no axis " + std::to_string(axis));
    return shape_[static_cast<size_t>(a)];
}

std::string Array::shape_str() const {
    std::string s;
    for (size_t i = 0; i < shape_.size(); ++i) s += (i ? "×" : "") + std::to_string(shape_[i]);
    return s.empty() ? "scalar" : s;
}

size_t Array::offset(std::initializer_list<int64_t> index) const {
    if (index.size() != shape_.size())
        throw std::out_of_range("reference Array " + shape_str() + ": indexed with " +
                                std::to_string(index.size()) + " indices");
    size_t flat = 0, axis = 0;
    for (int64_t i : index) {
        if (i < 0 || i >= shape_[axis])
            throw std::out_of_range("reference Array " + shape_str() + ": index " + std::to_string(i) +
                                    " out of range on axis " + std::to_string(axis));
        flat = flat * static_cast<size_t>(shape_[axis]) + static_cast<size_t>(i);
        ++axis;
    }
    return flat;
}

// ---- vectors ------------------------------------------------------------------------------

namespace {

// The flat offset of X[lead..., 0] and the length of the last axis.
std::pair<int64_t, int64_t> row_span(const Array& X, std::initializer_list<int64_t> lead) {
    if (static_cast<int>(lead.size()) != X.rank() - 1)
        throw std::out_of_range("reference row: " + std::to_string(lead.size()) + " leading indices for an array " +
                                X.shape_str());
    int64_t flat = 0, axis = 0;
    for (int64_t i : lead) {
        if (i < 0 || i >= X.size(static_cast<int>(axis)))
            throw std::out_of_range("reference row: index " + std::to_string(i) + " out of range on axis " +
                                    std::to_string(axis) + " of " + X.shape_str());
        flat = flat * X.size(static_cast<int>(axis)) + i;
        ++axis;
    }
    const int64_t d = X.size(-1);
    return {flat * d, d};
}

Vec read(const Array& X, std::initializer_list<int64_t> lead) {
    const auto [start, d] = row_span(X, lead);
    Vec v(static_cast<size_t>(d));
    for (int64_t k = 0; k < d; ++k) v[static_cast<size_t>(k)] = X[start + k];
    return v;
}

void write(Array& X, std::initializer_list<int64_t> lead, const Vec& v) {
    const auto [start, d] = row_span(X, lead);
    if (static_cast<int64_t>(v.size()) != d)
        throw std::out_of_range("reference set_row: a vector of " + std::to_string(v.size()) + " into rows of " +
                                std::to_string(d));
    for (int64_t k = 0; k < d; ++k) X[start + k] = v[static_cast<size_t>(k)];
}

void same_size(const char* what, const Vec& a, const Vec& b) {
    if (a.size() != b.size())
        throw std::invalid_argument(std::string("reference ") + what + ": sizes " + std::to_string(a.size()) +
                                    " and " + std::to_string(b.size()));
}

}  // namespace

Vec row(const Array& X, int64_t i) { return read(X, {i}); }
Vec row(const Array& X, int64_t i, int64_t j) { return read(X, {i, j}); }
Vec row(const Array& X, int64_t i, int64_t j, int64_t k) { return read(X, {i, j, k}); }
void set_row(Array& X, int64_t i, const Vec& v) { write(X, {i}, v); }
void set_row(Array& X, int64_t i, int64_t j, const Vec& v) { write(X, {i, j}, v); }
void set_row(Array& X, int64_t i, int64_t j, int64_t k, const Vec& v) { write(X, {i, j, k}, v); }

double dot(const Vec& a, const Vec& b) {
    same_size("dot", a, b);
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

Vec matvec(const Array& W, const Vec& x) {
    if (W.rank() != 2 || W.size(1) != static_cast<int64_t>(x.size()))
        throw std::invalid_argument("reference matvec: W " + W.shape_str() + " times a vector of " +
                                    std::to_string(x.size()));
    Vec y(static_cast<size_t>(W.size(0)), 0.0);
    for (int64_t o = 0; o < W.size(0); ++o)
        for (int64_t i = 0; i < W.size(1); ++i) y[static_cast<size_t>(o)] += W(o, i) * x[static_cast<size_t>(i)];
    return y;
}

Vec matvec_t(const Array& W, const Vec& x) {
    if (W.rank() != 2 || W.size(0) != static_cast<int64_t>(x.size()))
        throw std::invalid_argument("reference matvec_t: W " + W.shape_str() + " transposed times a vector of " +
                                    std::to_string(x.size()));
    Vec y(static_cast<size_t>(W.size(1)), 0.0);
    for (int64_t o = 0; o < W.size(0); ++o)
        for (int64_t i = 0; i < W.size(1); ++i) y[static_cast<size_t>(i)] += W(o, i) * x[static_cast<size_t>(o)];
    return y;
}

Vec add(const Vec& a, const Vec& b) {
    same_size("add", a, b);
    Vec y(a.size());
    for (size_t i = 0; i < a.size(); ++i) y[i] = a[i] + b[i];
    return y;
}

Vec sub(const Vec& a, const Vec& b) {
    same_size("sub", a, b);
    Vec y(a.size());
    for (size_t i = 0; i < a.size(); ++i) y[i] = a[i] - b[i];
    return y;
}

Vec hadamard(const Vec& a, const Vec& b) {
    same_size("hadamard", a, b);
    Vec y(a.size());
    for (size_t i = 0; i < a.size(); ++i) y[i] = a[i] * b[i];
    return y;
}

Vec scale(const Vec& a, double s) {
    Vec y(a.size());
    for (size_t i = 0; i < a.size(); ++i) y[i] = a[i] * s;
    return y;
}

Vec concat(const Vec& a, const Vec& b) {
    Vec y(a);
    y.insert(y.end(), b.begin(), b.end());
    return y;
}

Vec each(const Vec& a, double (*f)(double)) {
    Vec y(a.size());
    for (size_t i = 0; i < a.size(); ++i) y[i] = f(a[i]);
    return y;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double relu(double x) { return x > 0 ? x : 0.0; }
double tanh_(double x) { return std::tanh(x); }

double norm(const Vec& a) { return std::sqrt(dot(a, a)); }

double sum(const Vec& a) {
    double s = 0;
    for (double v : a) s += v;
    return s;
}

double max(const Vec& a) {
    if (a.empty()) throw std::invalid_argument("reference max of an empty vector");
    double m = a[0];
    for (double v : a) m = v > m ? v : m;
    return m;
}

Vec vec(const Array& a) {
    Vec v(static_cast<size_t>(a.numel()));
    for (int64_t i = 0; i < a.numel(); ++i) v[static_cast<size_t>(i)] = a[i];
    return v;
}

Vec softmax(const Vec& e, const Vec& keep) {
    if (!keep.empty()) same_size("softmax (scores and mask)", e, keep);
    auto kept = [&](size_t l) { return keep.empty() || keep[l] != 0; };
    Vec a(e.size(), 0.0);
    double top = -INFINITY;
    for (size_t l = 0; l < e.size(); ++l)
        if (kept(l)) top = std::max(top, e[l]);
    if (top == -INFINITY) return a;  // nothing kept: all zeros
    double total = 0;
    for (size_t l = 0; l < e.size(); ++l)
        if (kept(l)) total += a[l] = std::exp(e[l] - top);
    for (double& v : a) v /= total;
    return a;
}

Vec keep_row(const Array& mask, int64_t b, int64_t n) {
    if (mask.numel() == 0) return Vec(static_cast<size_t>(n), 1.0);
    Vec k = row(mask, b);
    if (static_cast<int64_t>(k.size()) != n)
        throw std::invalid_argument("reference keep_row: a mask " + mask.shape_str() + " for " + std::to_string(n) +
                                    " keys");
    return k;
}

}  // namespace attn::testing
