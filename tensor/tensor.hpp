// Tensor: an n-dimensional array of `real` (float32, or float64 in the
// gradient-check build), stored contiguously in row-major order.
//
// Copying a Tensor is cheap and shares its storage, like a NumPy array or a
// torch.Tensor: `Tensor b = a; b[0] = 1;` changes a too. clone() makes an
// independent copy. Views are limited to what keeps the data contiguous:
// reshape() shares storage; transpose, permute and slice copy (tensor/ops.hpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "tensor/random.hpp"
#include "tensor/real.hpp"
#include "tensor/shape.hpp"

namespace attn {

// A block of `size` reals. Allocated 64-byte aligned (one cache line, one
// AVX-512 register) so that SIMD kernels may use aligned loads at offset 0,
// by the caching allocator of tensor/allocator.hpp.
class Storage {
public:
    explicit Storage(int64_t size);
    ~Storage();
    Storage(const Storage&) = delete;
    Storage& operator=(const Storage&) = delete;

    real* data() { return data_; }
    const real* data() const { return data_; }
    int64_t size() const { return size_; }

    // The version counter behind autograd's check of in-place changes
    // (autograd/variable.hpp). Once an op has saved this storage for its
    // backward (watch()), every mutable access through a Tensor counts as a
    // change; before, an access costs one load and a branch, never a store,
    // so that kernels writing fresh results pay nothing. Atomic (relaxed):
    // the workers of a parallel loop may take data() of one tensor together.
    uint64_t version() const { return version_.load(std::memory_order_relaxed); }
    uint64_t watch() {
        watched_.store(true, std::memory_order_relaxed);
        return version();
    }
    void note_change() {
        if (watched_.load(std::memory_order_relaxed)) version_.fetch_add(1, std::memory_order_relaxed);
    }

private:
    real* data_ = nullptr;
    int64_t size_ = 0;
    std::atomic<uint64_t> version_{0};
    std::atomic<bool> watched_{false};
};

class Tensor {
public:
    // An undefined tensor (no storage); defined() is false.
    Tensor() = default;

    // ---- factories -------------------------------------------------------
    static Tensor empty(const Shape& shape);  // uninitialised values
    static Tensor zeros(const Shape& shape);
    static Tensor ones(const Shape& shape);
    static Tensor full(const Shape& shape, real value);
    static Tensor scalar(real value);  // rank 0
    // 0, 1, ..., n-1 and start, start+step, ... < stop (as NumPy's arange).
    static Tensor arange(int64_t n);
    static Tensor arange(real start, real stop, real step = 1);
    // From a flat list in row-major order; its length must equal shape.numel().
    static Tensor from(std::vector<real> values, const Shape& shape);
    static Tensor from(std::initializer_list<real> values);  // a vector (rank 1)
    // Random tensors, always from an explicit generator.
    static Tensor uniform(const Shape& shape, real lo, real hi, Generator& gen);
    static Tensor normal(const Shape& shape, real mean, real std, Generator& gen);

    // ---- shape -----------------------------------------------------------
    bool defined() const { return storage_ != nullptr; }
    const Shape& shape() const { return shape_; }
    int rank() const { return shape_.rank(); }
    int64_t size(int axis) const;  // negative axes count from the end
    int64_t numel() const { return shape_.numel(); }

    // ---- element access --------------------------------------------------
    // The non-const accessors (data(), operator[], at(), and fill_, copy_)
    // count as a change of the storage's version once autograd has saved it
    // (see version()): read a saved tensor through a const Tensor&, or
    // through const_data().
    real* data() {
        storage_->note_change();
        return storage_->data() + offset_;
    }
    const real* data() const { return storage_->data() + offset_; }
    // The elements, read only, from any Tensor: never a change. gdb calls the
    // non-const data() of a non-const tensor, so `print t.data()[0]` inside a
    // training step would count as one, and backward() would refuse the step;
    // `print t.const_data()[0]` reads.
    const real* const_data() const { return data(); }
    real& operator[](int64_t flat_index) { return data()[flat_index]; }
    real operator[](int64_t flat_index) const { return data()[flat_index]; }
    // Bounds-checked access by multi-index: t.at({i, j}).
    real& at(std::initializer_list<int64_t> index);
    real at(std::initializer_list<int64_t> index) const;
    // The single value of a one-element tensor.
    real item() const;
    std::vector<real> to_vector() const { return {data(), data() + numel()}; }

    // ---- copies and views ------------------------------------------------
    Tensor clone() const;
    // Same storage, new shape of the same numel; one dimension may be -1.
    Tensor reshape(const std::vector<int64_t>& dims) const;
    Tensor reshape(const Shape& shape) const;
    // A view of rows [start, end) of axis 0, sharing storage (contiguous).
    Tensor rows(int64_t start, int64_t end) const;
    bool shares_storage_with(const Tensor& other) const { return storage_ == other.storage_; }

    // ---- versions --------------------------------------------------------
    // How many mutable accesses the storage has had since an op first saved
    // it for a backward pass (0 before; shared by every Tensor on the
    // storage, as PyTorch's _version). save_version() marks it saved and
    // returns the version: autograd records it and, at backward(), refuses a
    // storage whose version has moved since (it was changed in place).
    uint64_t version() const { return storage_ ? storage_->version() : 0; }
    uint64_t save_version() const { return storage_ ? storage_->watch() : 0; }

    // ---- in place --------------------------------------------------------
    Tensor& fill_(real value);
    Tensor& copy_(const Tensor& src);  // same shape required

    // "tensor(2×3, [[1, 2, 3], [4, 5, 6]])"; long axes are elided with "...".
    std::string str() const;

private:
    // at()'s flat index, bounds-checked.
    int64_t flat_index(std::initializer_list<int64_t> index) const;
    Tensor(std::shared_ptr<Storage> storage, int64_t offset, const Shape& shape)
        : storage_(std::move(storage)), offset_(offset), shape_(shape) {}

    std::shared_ptr<Storage> storage_;
    int64_t offset_ = 0;
    Shape shape_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);
std::ostream& operator<<(std::ostream& os, const Shape& s);

}  // namespace attn
