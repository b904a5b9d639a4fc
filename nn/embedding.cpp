#include "nn/embedding.hpp"

#include <cmath>
#include <stdexcept>
#include <vector>

#include "autograd/kernels.hpp"
#include "autograd/ops.hpp"
#include "autograd/record.hpp"
#include "nn/init.hpp"
#include "tensor/ops.hpp"

namespace attn {

// y[…, :] = W[indices[…], :]        ∂L/∂W[v, :] += Σ_{… : indices[…] = v ≠ p} g[…, :]
Var embedding(const Var& weight, const Tensor& indices, std::optional<int64_t> padding_idx) {
    if (!padding_idx) return embedding(weight, indices);
    if (weight.rank() != 2)
        throw std::invalid_argument("embedding: weight must be V×D (rank 2), got " + weight.shape().str());
    const int64_t rows = weight.size(0), width = weight.size(1), pad = *padding_idx;
    if (pad < 0 || pad >= rows)
        throw std::out_of_range("embedding: padding_idx " + std::to_string(pad) + " is out of range [0, " +
                                std::to_string(rows) + ") for weight " + weight.shape().str());
    std::vector<int64_t> picked(static_cast<size_t>(indices.numel()));
    for (int64_t p = 0; p < indices.numel(); ++p) {
        const real v = indices[p];
        if (!(v >= 0 && v < static_cast<real>(rows)) || v != std::floor(v))
            throw std::out_of_range("embedding: index " + format_index(v) + " at position " + std::to_string(p) +
                                    " is out of range [0, " + std::to_string(rows) + ") for weight " +
                                    weight.shape().str());
        picked[static_cast<size_t>(p)] = static_cast<int64_t>(v);
    }
    Shape out_shape = indices.shape();
    out_shape.push_back(width);
    Tensor y = index_select(weight.value(), 0, picked).reshape(out_shape);
    return record("embedding", std::move(y), {weight}, [picked = std::move(picked), width, pad](Backward& bw) {
        const real* g = bw.grad().data();
        real* dw = bw.grad_buffer(0).data();
        for (size_t k = 0; k < picked.size(); ++k) {
            if (picked[k] == pad) continue;  // the padding row receives nothing
            const real* from = g + static_cast<int64_t>(k) * width;
            real* to = dw + picked[k] * width;
            for (int64_t j = 0; j < width; ++j) to[j] += from[j];
        }
    });
}

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim, Generator& gen,
                     std::optional<int64_t> padding_idx)
    : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {
    if (num_embeddings <= 0 || embedding_dim <= 0)
        throw std::invalid_argument("Embedding: num_embeddings and embedding_dim must be positive, got " +
                                    std::to_string(num_embeddings) + " and " + std::to_string(embedding_dim));
    if (padding_idx) {
        const int64_t p = *padding_idx < 0 ? *padding_idx + num_embeddings : *padding_idx;
        if (p < 0 || p >= num_embeddings)
            throw std::out_of_range("Embedding: padding_idx " + std::to_string(*padding_idx) +
                                    " is out of range for " + std::to_string(num_embeddings) + " embeddings");
        padding_idx_ = p;
    }
    Tensor w = Tensor::empty({num_embeddings, embedding_dim});
    init::normal_(w, 0, 1, gen);
    if (padding_idx_) w.rows(*padding_idx_, *padding_idx_ + 1).fill_(0);
    weight = register_parameter("weight", w);
}

Var Embedding::forward(const Tensor& indices) const { return embedding(weight, indices, padding_idx_); }

std::string Embedding::describe() const {
    std::string s = "Embedding(" + std::to_string(num_embeddings_) + ", " + std::to_string(embedding_dim_);
    if (padding_idx_) s += ", padding_idx=" + std::to_string(*padding_idx_);
    return s + ")";
}

}  // namespace attn
