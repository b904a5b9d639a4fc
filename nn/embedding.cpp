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
