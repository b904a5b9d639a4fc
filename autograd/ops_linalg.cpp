// Linear algebra: the matrix product, forward and backward.
//
// Shapes: a …×n×k (or …×k×n with trans_a), b …×k×m (or …×m×k with trans_b)
// → z …×n×m, the leading (batch) axes broadcast as in NumPy.
#include <stdexcept>
#include <string>

#include "autograd/kernels.hpp"
#include "autograd/ops.hpp"
#include "autograd/record.hpp"
#include "tensor/fast_math.hpp"
#include "tensor/ops.hpp"
#include "tensor/parallel.hpp"
#include "tensor/profile.hpp"
#include "tensor/row_blocks.hpp"

namespace attn {

namespace {

// The number of matrices in a batch: the product of the axes before the last
// two (not numel / rows·cols, which divides by zero when a matrix is empty).
int64_t batch_count(const Shape& s) {
    int64_t count = 1;
    for (int i = 0; i + 2 < s.rank(); ++i) count *= s[i];
    return count;
}
int64_t batch_count(const Tensor& t) { return batch_count(t.shape()); }

Shape batch_shape(const Tensor& t) {
    Shape s;
    for (int i = 0; i + 2 < t.rank(); ++i) s.push_back(t.shape()[i]);
    return s;
}

// The shape of op(x)·op(y): the broadcast batch axes, then rows × columns.
Shape product_shape(const Tensor& x, const Tensor& y, bool tx, bool ty) {
    Shape s = broadcast_shapes(batch_shape(x), batch_shape(y), "matmul");
    s.push_back(x.shape()[x.rank() - (tx ? 1 : 2)]);
    s.push_back(y.shape()[y.rank() - (ty ? 2 : 1)]);
    return s;
}

// Matrix b of a batch of matrices (a rank-2 tensor is the same matrix for every b).
Tensor batch_matrix(const Tensor& t, int64_t b) {
    if (t.rank() == 2) return t;
    const int64_t r = t.shape()[t.rank() - 2], c = t.shape()[t.rank() - 1];
    return t.reshape(Shape{batch_count(t), r, c}).rows(b, b + 1).reshape(Shape{r, c});
}

// ∂L/∂input_i += op(x)·op(y), the product being input i's gradient before the
// broadcast of the batch axes is undone. Five cases:
//  - the product has the input's shape: the GEMM adds straight into the
//    gradient buffer (beta = 1), or its fresh result becomes the buffer;
//  - the input is one matrix shared by a whole batch and the product sums
//    over rows (xᵀ·y, a weight's gradient): one GEMM of the stacked batches;
//  - the same with x a single row per batch element (x·y, the gradient of a
//    vector broadcast against a batch): one GEMM as well;
//  - the input is one matrix shared by a whole batch otherwise (n×k times
//    B×k×m, as in conv2d): Σ over the batch, one GEMM per batch element into
//    the buffer, no B×n×k temporary;
//  - otherwise (batch axes broadcast in part): the full product, then sum_to.
void accumulate_product(Backward& bw, int i, const Tensor& x, const Tensor& y, bool tx, bool ty) {
    const Shape& target = bw.input_shape(i);
    const Shape full = product_shape(x, y, tx, ty);
    if (full == target) {
        if (bw.has_grad(i))
            matmul_into(bw.grad_buffer(i), x, y, tx, ty, 1, 1);
        else
            bw.accumulate(i, matmul(x, y, tx, ty));
        return;
    }
    const int64_t batch = batch_count(full);
    auto per_batch = [batch](const Tensor& t) { return t.rank() == 2 || batch_count(t) == batch; };
    if (target.rank() == 2 && tx && !ty && x.rank() > 2 && y.rank() > 2 && batch_count(x) == batch &&
        batch_count(y) == batch) {
        // Σ_b x_bᵀ·y_b is one product of the batches stacked row-wise,
        // [x_1; …; x_B]ᵀ·[y_1; …; y_B]: a weight's gradient from a B×n×k input
        // (attention's W_q s_t, v) in one GEMM of B·n rows instead of B small ones.
        const Tensor xs = x.reshape(Shape{batch * x.size(-2), x.size(-1)});
        const Tensor ys = y.reshape(Shape{batch * y.size(-2), y.size(-1)});
        if (bw.has_grad(i))
            matmul_into(bw.grad_buffer(i), xs, ys, true, false, 1, 1);
        else
            bw.accumulate(i, matmul(xs, ys, true, false));
        return;
    }
    // Σ_b x_b·y_b with every x_b a single row (like attention's u_w): the
    // rows side by side are one 1×(B·n) row, the y_b stacked one (B·n)×d
    // matrix, and the sum is their product.
    if (target.rank() == 2 && !tx && !ty && x.rank() > 2 && y.rank() > 2 && x.size(-2) == 1 &&
        batch_count(x) == batch && batch_count(y) == batch) {
        const Tensor xs = x.reshape(Shape{1, batch * x.size(-1)});
        const Tensor ys = y.reshape(Shape{batch * y.size(-2), y.size(-1)});
        if (bw.has_grad(i))
            matmul_into(bw.grad_buffer(i), xs, ys, false, false, 1, 1);
        else
            bw.accumulate(i, matmul(xs, ys, false, false));
        return;
    }
    if (target.rank() == 2 && per_batch(x) && per_batch(y)) {
        Tensor& buffer = bw.grad_buffer(i);
        for (int64_t b = 0; b < batch; ++b)
            matmul_into(buffer, batch_matrix(x, b), batch_matrix(y, b), tx, ty, 1, 1);
        return;
    }
    bw.accumulate(i, matmul(x, y, tx, ty));
}

}  // namespace

// z = op(a)·op(b), op(x) = xᵀ if its flag is set, else x.
//   ∂L/∂op(a) = g·op(b)ᵀ          ∂L/∂op(b) = op(a)ᵀ·g
// and with a stored transposed, ∂L/∂a = (∂L/∂op(a))ᵀ = op(b)·gᵀ (likewise b).
// The transposes are the GEMM's flags: nothing is materialised.
Var matmul(const Var& a, const Var& b, bool trans_a, bool trans_b) {
    const ProfileScope scope("matmul");
    return record("matmul", matmul(a.value(), b.value(), trans_a, trans_b), {a, b},
                  [a = a.value(), b = b.value(), trans_a, trans_b](Backward& bw) {
                      const Tensor& g = bw.grad();
                      if (bw.needs(0)) {
                          if (!trans_a)
                              accumulate_product(bw, 0, g, b, false, !trans_b);  // g·op(b)ᵀ
                          else
                              accumulate_product(bw, 0, b, g, trans_b, true);  // op(b)·gᵀ
                      }
                      if (bw.needs(1)) {
                          if (!trans_b)
                              accumulate_product(bw, 1, a, g, !trans_a, false);  // op(a)ᵀ·g
                          else
                              accumulate_product(bw, 1, g, a, true, trans_a);  // gᵀ·op(a)
                      }
                  });
}

namespace {

// The sizes of x·op(w) + b, after the checks every op of the family makes:
// x …×k seen as N×k (N the product of its leading axes), op(w) k×n, bias n.
struct BiasedProduct {
    int64_t N = 1, k = 0, n = 0;
    Shape out_shape;  // x's shape with n last
};

BiasedProduct check_biased_product(const char* op, const Var& x, const Var& w, const Var& bias, bool trans_w) {
    if (!x.defined() || !w.defined() || !bias.defined())
        throw std::invalid_argument(std::string(op) + ": x, w and bias must all be defined");
    if (x.rank() < 1 || w.rank() != 2 || bias.rank() != 1 || x.size(-1) != w.size(trans_w ? 1 : 0) ||
        bias.size(0) != w.size(trans_w ? 0 : 1))
        throw std::invalid_argument(std::string(op) + ": x " + x.shape().str() + ", w " + w.shape().str() +
                                    (trans_w ? " (transposed)" : "") + " and bias " + bias.shape().str() +
                                    ": need x …×k, op(w) k×n and bias n");
    BiasedProduct p;
    p.k = x.size(-1), p.n = bias.size(0);
    for (int i = 0; i + 1 < x.rank(); ++i) p.N *= x.size(i);
    p.out_shape = x.shape();
    p.out_shape[p.out_shape.rank() - 1] = p.n;
    return p;
}

// The gradients of z = x·op(w) + b given g = ∂L/∂z (N×n), x seen as N×k:
//   ∂L/∂x = g·op(w)ᵀ      ∂L/∂op(w) = xᵀ·g      ∂L/∂b = Σ_rows g
// (bias_grad: Σ_rows g already summed by the caller; else summed here)
void biased_product_backward(Backward& bw, const Tensor& g, const Tensor& x2, const Tensor& w, bool trans_w,
                             Tensor bias_grad = {}) {
    if (bw.needs(0)) {  // g·op(w)ᵀ, N×k
        if (bw.has_grad(0)) {
            Tensor buffer = bw.grad_buffer(0).reshape(x2.shape());
            matmul_into(buffer, g, w, false, !trans_w, 1, 1);
        } else {
            bw.accumulate(0, matmul(g, w, false, !trans_w).reshape(bw.input_shape(0)));
        }
    }
    if (bw.needs(1)) {  // xᵀ·g (k×n), or gᵀ·x (n×k) for w stored transposed
        if (trans_w)
            accumulate_product(bw, 1, g, x2, true, false);
        else
            accumulate_product(bw, 1, x2, g, true, false);
    }
    if (bw.needs(2)) bw.accumulate(2, bias_grad.defined() ? std::move(bias_grad) : sum(g, 0));  // Σ over the rows
}

// Part of a row of matmul_bias_relu's backward: gz_j = g_j where y_j > 0,
// else 0 (relu's own backward, keep_or_zero), and sums_j += gz_j.
void mask_and_add_row(const real* __restrict g, const real* __restrict y, int64_t n, real* __restrict gz,
                      real* __restrict sums) {
    for (int64_t j = 0; j < n; ++j) {
        const real v = keep_or_zero(y[j] > 0, g[j]);
        gz[j] = v;
        sums[j] += v;
    }
}

// matmul_bias_relu's ∂L/∂z = g ⊙ [y > 0] (N×n) and its column sums Σ_rows ∂L/∂z
// (∂L/∂b) in one pass over the rows, in the blocks of sum(·, 0)
// (tensor/row_blocks.hpp), so the same bits, without a second pass over ∂L/∂z.
void relu_mask_and_column_sums(const real* g, const real* y, int64_t N, int64_t n, real* gz, real* sums) {
    sum_rows_in_blocks(N, n, sums, [=](int64_t r, real* block_sums) {
        mask_and_add_row(g + r * n, y + r * n, n, gz + r * n, block_sums);
    });
}

// One row of matmul_bias_relu's forward, in place: z_j ← relu(z_j + b_j),
// with relu's own arithmetic (keep_or_zero), so that the twin agrees to the
// bit. A function of its own with distinct arrays, so that it vectorises.
void add_bias_relu_row(real* __restrict z, const real* __restrict b, int64_t n) {
    for (int64_t j = 0; j < n; ++j) {
        const real v = z[j] + b[j];
        z[j] = keep_or_zero(v > 0, v);
    }
}

}  // namespace

// z = x·op(w) + b, b broadcast over the N rows of x (its leading axes flattened),
// with g, x and z seen as N×n, N×k and N×n matrices (views: no copies);
// the gradients in biased_product_backward above.
Var matmul_bias(const Var& x, const Var& w, const Var& bias, bool trans_w) {
    const ProfileScope scope("matmul_bias");
    const BiasedProduct p = check_biased_product("matmul_bias", x, w, bias, trans_w);
    // The product, then the bias added to its rows in place, while they are
    // still in cache: no second tensor written (what add would allocate).
    const Tensor x2 = x.value().reshape(Shape{p.N, p.k});
    Tensor z = matmul(x2, w.value(), false, trans_w);
    add_(z, bias.value());
    return record("matmul_bias", z.reshape(p.out_shape), {x, w, bias},
                  [x2, w = w.value(), trans_w, N = p.N, n = p.n](Backward& bw) {
                      biased_product_backward(bw, bw.grad().reshape(Shape{N, n}), x2, w, trans_w);
                  });
}

// y = relu(x·op(w) + b): the bias and the ReLU in one pass over the product's
// rows, in place. Backward: ∂L/∂z = g ⊙ [y > 0] (y > 0 exactly where z > 0),
// then the gradients of the biased product.
Var matmul_bias_relu(const Var& x, const Var& w, const Var& bias, bool trans_w) {
    const ProfileScope scope("matmul_bias_relu");
    const BiasedProduct p = check_biased_product("matmul_bias_relu", x, w, bias, trans_w);
    const Tensor x2 = x.value().reshape(Shape{p.N, p.k});
    Tensor y = matmul(x2, w.value(), false, trans_w);
    real* rows = y.data();
    const real* b = bias.value().data();
    parallel_for(0, p.N, parallel_grain(p.n), [rows, b, n = p.n](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) add_bias_relu_row(rows + r * n, b, n);
    });
    return record("matmul_bias_relu", y.reshape(p.out_shape), {x, w, bias},
                  [x2, w = w.value(), trans_w, N = p.N, n = p.n](Backward& bw) {
                      Tensor gz = Tensor::empty(Shape{N, n}), db = Tensor::empty(Shape{n});
                      relu_mask_and_column_sums(bw.grad().data(), bw.output().data(), N, n, gz.data(), db.data());
                      biased_product_backward(bw, gz, x2, w, trans_w, std::move(db));
                  });
}

}  // namespace attn
