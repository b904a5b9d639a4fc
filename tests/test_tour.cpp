// The tour of docs/tour.md, as a test: every step of the walkthrough runs
// here with checks, so the walkthrough cannot go stale. If you change a step,
// change the doc's step of the same number.
#include <doctest/doctest.h>

#include <cmath>

#include "attention/general.hpp"
#include "attention/transformer.hpp"
#include "autograd/ops.hpp"
#include "nn/linear.hpp"
#include "nn/optim.hpp"
#include "tensor/gemm/gemm.hpp"
#include "tensor/ops.hpp"

using namespace attn;

TEST_CASE("tour: 2 + 3 and one attention call through every layer") {
    // Step 1 — tensor/: values in contiguous storage, and kernels over them.
    Tensor two = Tensor::scalar(2), three = Tensor::scalar(3);
    Tensor five = add(two, three);
    CHECK(five.item() == 5);
    CHECK(five.shape() == Shape{});  // rank 0: a scalar

    // Step 2 — broadcasting: a 2×3 matrix plus a 3-vector adds the vector to each row.
    Tensor m = Tensor::from({1, 2, 3, 4, 5, 6}, Shape{2, 3});
    Tensor row = Tensor::from({10, 20, 30});
    CHECK(add(m, row).to_vector() == std::vector<real>{11, 22, 33, 14, 25, 36});

    // Step 3 — the GEMM under matmul: C = A·B with A 2×3 and B 3×2.
    Tensor B = Tensor::from({1, 0, 0, 1, 1, 1}, Shape{3, 2});
    Tensor C = matmul(m, B);
    CHECK(C.to_vector() == std::vector<real>{4, 5, 10, 11});

    // Step 4 — autograd/: the same 2 + 3 recorded as a graph, then backward.
    Var x(Tensor::scalar(2), /*requires_grad=*/true), y(Tensor::scalar(3), true);
    Var z = x * y + x;  // z = xy + x
    z.backward();
    CHECK(z.item() == 8);
    CHECK(x.grad().item() == 4);  // ∂z/∂x = y + 1
    CHECK(y.grad().item() == 2);  // ∂z/∂y = x

    // Step 5 — nn/: a Linear layer is a module with named parameters.
    Generator gen(0);
    Linear layer(3, 2, gen);
    CHECK(layer.num_parameters() == 3 * 2 + 2);
    CHECK(layer.named_parameters()[0].first == "weight");

    // Step 6 — one optimiser step lowers the loss.
    Var input(Tensor::normal(Shape{4, 3}, 0, 1, gen));
    auto loss_of = [&] { return mean(square(layer.forward(input))); };
    SGD sgd(layer.parameters(), SGDOptions{.lr = 0.1});
    Var loss = loss_of();
    const real before = loss.item();
    sgd.zero_grad();
    loss.backward();
    sgd.step();
    CHECK(loss_of().item() < before);

    // Step 7 — attention/: one query attends over two keys (catalog entry 44).
    // Q = [[1, 1]], K = [[1, 1], [0, 0]]: scores (2, 0)/√2, weights softmax of them.
    Var Q(Tensor::from({1, 1}, Shape{1, 1, 2}));
    Var K(Tensor::from({1, 1, 0, 0}, Shape{1, 2, 2}));
    Var V(Tensor::from({1, 0, 0, 1}, Shape{1, 2, 2}));
    AttentionOutput att = scaled_dot_product_attention(Q, K, V);
    CHECK(att.weights.value()[0] == doctest::Approx(0.804430).epsilon(1e-5));
    CHECK(att.weights.value()[1] == doctest::Approx(0.195570).epsilon(1e-5));
    // With V = I the output is the weights themselves.
    CHECK(att.output.value()[0] == doctest::Approx(0.804430).epsilon(1e-5));

    // Step 8 — a mask: hide the first key; all the weight goes to the second.
    Tensor keep = key_mask(Tensor::from({0, 1}, Shape{1, 2}));
    AttentionOutput masked = scaled_dot_product_attention(Q, K, V, keep);
    CHECK(masked.weights.value()[0] == 0);
    CHECK(masked.weights.value()[1] == 1);
}
