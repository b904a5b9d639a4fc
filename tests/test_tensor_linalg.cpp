// Tests of tensor/ops_linalg.cpp: matmul against a naive triple loop for all
// four transpose combinations and for broadcast batches (every batching path:
// folded into rows, stride-0 batches, and the walked general case),
// matmul_into's alpha/beta, the error messages, and allclose.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "tensor/ops.hpp"

using namespace attn;

namespace {

// op(x)[..., i, j] for the matrix at batch position `batch` of the broadcast
// batch shape `bshape` (x's own batch axes broadcast to it).
double element(const Tensor& x, bool trans, const Shape& bshape, int64_t batch, int64_t i, int64_t j) {
    const Shape& s = x.shape();
    const int r = s.rank();
    int64_t offset = 0;
    for (int d = bshape.rank() - 1, e = r - 3; d >= 0; --d, --e) {
        const int64_t idx = batch % bshape[d];
        batch /= bshape[d];
        if (e >= 0 && s[e] != 1) offset += idx * s.stride(e);
    }
    const int64_t cols = s[r - 1];
    return trans ? x[offset + j * cols + i] : x[offset + i * cols + j];
}

// matmul by its definition, in double.
Tensor naive_matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
    const Shape &sa = a.shape(), &sb = b.shape();
    const int64_t M = ta ? sa[sa.rank() - 1] : sa[sa.rank() - 2];
    const int64_t K = ta ? sa[sa.rank() - 2] : sa[sa.rank() - 1];
    const int64_t N = tb ? sb[sb.rank() - 2] : sb[sb.rank() - 1];
    Shape la, lb;
    for (int i = 0; i + 2 < sa.rank(); ++i) la.push_back(sa[i]);
    for (int i = 0; i + 2 < sb.rank(); ++i) lb.push_back(sb[i]);
    Shape out = broadcast_shapes(la, lb, "naive");
    const int64_t batches = out.numel();
    out.push_back(M);
    out.push_back(N);
    Tensor c = Tensor::empty(out);
    Shape bshape;
    for (int i = 0; i + 2 < out.rank(); ++i) bshape.push_back(out[i]);
    for (int64_t t = 0; t < batches; ++t)
        for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
                double s = 0;
                for (int64_t k = 0; k < K; ++k)
                    s += element(a, ta, bshape, t, i, k) * element(b, tb, bshape, t, k, j);
                c[(t * M + i) * N + j] = static_cast<real>(s);
            }
    return c;
}

// Stored shape of a matrix operand whose op() is rows×cols.
Shape stored(Shape batch, int64_t rows, int64_t cols, bool trans) {
    batch.push_back(trans ? cols : rows);
    batch.push_back(trans ? rows : cols);
    return batch;
}

void check_against_naive(const Shape& batch_a, const Shape& batch_b, int64_t M, int64_t N, int64_t K) {
    Generator gen(21);
    for (int flags = 0; flags < 4; ++flags) {
        const bool ta = flags & 1, tb = flags & 2;
        const Tensor a = Tensor::normal(stored(batch_a, M, K, ta), 0, 1, gen);
        const Tensor b = Tensor::normal(stored(batch_b, K, N, tb), 0, 1, gen);
        INFO("a " << a.shape().str() << (ta ? " (T)" : "") << ", b " << b.shape().str() << (tb ? " (T)" : ""));
        const Tensor c = matmul(a, b, ta, tb), ref = naive_matmul(a, b, ta, tb);
        REQUIRE(c.shape() == ref.shape());
        CHECK(allclose(c, ref, 1e-4, 1e-4));
    }
}

}  // namespace

TEST_CASE("matmul: a 2×3 by 3×2 product by hand") {
    const Tensor a = Tensor::from({1, 2, 3, 4, 5, 6}, Shape{2, 3});
    const Tensor b = Tensor::from({7, 8, 9, 10, 11, 12}, Shape{3, 2});
    Tensor c = matmul(a, b);
    CHECK(c.shape() == Shape{2, 2});
    CHECK(c.to_vector() == std::vector<real>{58, 64, 139, 154});
    // aᵀ·a (3×3) and a·aᵀ (2×2) through the flags, never copying a transpose.
    CHECK(matmul(a, a, true, false).to_vector() == std::vector<real>{17, 22, 27, 22, 29, 36, 27, 36, 45});
    CHECK(matmul(a, a, false, true).to_vector() == std::vector<real>{14, 32, 32, 77});
    CHECK(matmul(b, a, true, true).to_vector() == std::vector<real>{58, 139, 64, 154});  // (ab)ᵀ = bᵀaᵀ
}

TEST_CASE("matmul: all four transpose combinations match the naive loop") {
    check_against_naive(Shape{}, Shape{}, 5, 7, 3);
    check_against_naive(Shape{}, Shape{}, 1, 1, 1);
    check_against_naive(Shape{}, Shape{}, 17, 33, 20);
}

TEST_CASE("matmul: broadcast batches match the naive loop") {
    check_against_naive(Shape{4}, Shape{4}, 3, 5, 2);           // one matrix per batch
    check_against_naive(Shape{2, 3}, Shape{}, 4, 5, 6);         // B shared: folds into rows (or stride 0)
    check_against_naive(Shape{}, Shape{3}, 4, 5, 6);            // A shared: stride 0
    check_against_naive(Shape{3, 1}, Shape{4}, 2, 3, 4);        // 3×1 and 4 → 3×4: the walked case
    check_against_naive(Shape{2, 1, 3}, Shape{1, 4, 1}, 2, 2, 3);
    check_against_naive(Shape{1}, Shape{5}, 2, 3, 4);           // size-1 batch axis
    check_against_naive(Shape{2, 1, 1}, Shape{3, 2}, 3, 2, 2);  // ranks differ
    const Tensor a = Tensor::zeros(Shape{2, 3, 4, 5}), b = Tensor::zeros(Shape{3, 5, 6});
    CHECK(matmul(a, b).shape() == Shape{2, 3, 4, 6});
}

TEST_CASE("matmul: empty sizes") {
    // K = 0: an empty sum, all zeros.
    Tensor c = matmul(Tensor::zeros(Shape{2, 0}), Tensor::zeros(Shape{0, 3}));
    CHECK(c.shape() == Shape{2, 3});
    CHECK(c.to_vector() == std::vector<real>(6, 0));
    CHECK(matmul(Tensor::zeros(Shape{0, 4}), Tensor::zeros(Shape{4, 3})).shape() == Shape{0, 3});
    CHECK(matmul(Tensor::zeros(Shape{0, 2, 4}), Tensor::zeros(Shape{4, 3})).shape() == Shape{0, 2, 3});
}

TEST_CASE("matmul_into: out = alpha·a·b + beta·out") {
    const Tensor a = Tensor::from({1, 2, 3, 4, 5, 6}, Shape{2, 3});
    const Tensor b = Tensor::from({7, 8, 9, 10, 11, 12}, Shape{3, 2});
    Tensor out = Tensor::from({1, 1, 1, 1}, Shape{2, 2});
    matmul_into(out, a, b, false, false, 2, 0.5);
    CHECK(out.to_vector() == std::vector<real>{116.5, 128.5, 278.5, 308.5});
    // beta = 0 ignores whatever out held, even NaN.
    out.fill_(std::numeric_limits<real>::quiet_NaN());
    matmul_into(out, a, b, false, false, 1, 0);
    CHECK(out.to_vector() == std::vector<real>{58, 64, 139, 154});
    // Accumulating a batched gradient: dW += xᵀ·g over a batch of 2.
    Generator gen(2);
    const Tensor x = Tensor::normal(Shape{6, 3}, 0, 1, gen), g = Tensor::normal(Shape{6, 4}, 0, 1, gen);
    Tensor dw = Tensor::ones(Shape{3, 4});
    matmul_into(dw, x, g, true, false, 1, 1);
    CHECK(allclose(dw, add(naive_matmul(x, g, true, false), real(1)), 1e-4, 1e-5));

}

TEST_CASE("matmul: errors name the shapes") {
    const Tensor a = Tensor::zeros(Shape{2, 3}), b = Tensor::zeros(Shape{4, 5});
    CHECK_THROWS_WITH_AS(matmul(a, b), "matmul: 2×3 and 4×5 need a's last dimension (3) to equal b's rows (4)",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(matmul(a, b, true, true),
                         "matmul: 2×3 (transposed) and 4×5 (transposed) need a's rows (2) to equal b's last "
                         "dimension (5)",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(matmul(Tensor::zeros(Shape{3}), a), "matmul: 3 and 2×3 need rank 2 or more (matrices)",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(matmul(Tensor::zeros(Shape{2, 2, 3}), Tensor::zeros(Shape{3, 3, 1})),
                         "matmul: 2×2×3 and 3×3×1 have batch axes 2 and 3, which do not broadcast",
                         std::invalid_argument);
    Tensor out = Tensor::zeros(Shape{3, 3});
    CHECK_NOTHROW(matmul_into(out, a, a, true, false, 1, 0));  // aᵀ·a is 3×3
    Tensor wrong = Tensor::zeros(Shape{2, 2});
    CHECK_THROWS_WITH_AS(matmul_into(wrong, a, a, true, false, 1, 0),
                         "matmul_into: out has shape 2×2 but the product of 2×3 and 2×3 has shape 3×3",
                         std::invalid_argument);
    Tensor sq = Tensor::zeros(Shape{3, 3});
    CHECK_THROWS_WITH_AS(matmul_into(sq, sq, sq, false, false, 1, 0),
                         "matmul_into: out must not share storage with a or b", std::invalid_argument);
}

TEST_CASE("allclose: tolerances, shapes and NaN") {
    const Tensor a = Tensor::from({1, 2, 3});
    CHECK(allclose(a, a));
    CHECK(allclose(a, Tensor::from({1, 2, 3.00001f}), 1e-5, 1e-8));
    CHECK_FALSE(allclose(a, Tensor::from({1, 2, 3.1f})));
    CHECK(allclose(a, Tensor::from({1, 2, 3.1f}), 0, 0.11));
    CHECK_FALSE(allclose(a, a.reshape(Shape{1, 3})));
    const real nan = std::numeric_limits<real>::quiet_NaN(), inf = std::numeric_limits<real>::infinity();
    CHECK_FALSE(allclose(Tensor::from({nan}), Tensor::from({nan})));
    CHECK(allclose(Tensor::from({inf}), Tensor::from({inf})));
    CHECK_FALSE(allclose(Tensor::from({inf}), Tensor::from({-inf})));
}
