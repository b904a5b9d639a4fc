// The tour of docs/tour.md, as a test: every step of the walkthrough runs
// here with checks, so the walkthrough cannot go stale. If you change a step,
// change the doc's step of the same number.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "attention/general.hpp"
#include "attention/scaled_dot_product.hpp"
#include "autograd/graph.hpp"
#include "autograd/ops.hpp"
#include "examples/common/graph_draw.hpp"
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
    GraphSnapshot graph(z, {{"x", x}, {"y", y}});  // drawn in docs/images/graph_xy.svg
    z.backward();
    CHECK(z.item() == 8);
    CHECK(x.grad().item() == 4);  // ∂z/∂x = y + 1
    CHECK(y.grad().item() == 2);  // ∂z/∂y = x
    // The picture: x, y, mul, add; arrows x → mul, y → mul, mul → add, x → add.
    CHECK(graph.size() == 4);
    CHECK(graph.num_edges() == 4);
    CHECK(graph_node_lines(graph, 0) == std::vector<std::string>{"x", "scalar", "leaf, requires grad", "‖grad‖ = 4"});
    CHECK(graph_node_lines(graph, 2) == std::vector<std::string>{"mul", "scalar", "‖grad‖ = 1"});

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
    // Its graph (docs/images/graph_attention.svg), Q, K, V requiring gradients
    // and L = Σ output²: the ops top to bottom, and what the softmax passes on.
    Var Qg(Q.value(), true), Kg(K.value(), true), Vg(V.value(), true);
    Var L = sum(square(scaled_dot_product_attention(Qg, Kg, Vg).output));
    GraphSnapshot sdpa(L);
    L.backward();
    std::vector<std::string> ops;
    for (const auto& node : sdpa.nodes())
        if (!node.var.is_leaf()) ops.push_back(node.var.op());
    CHECK(ops == std::vector<std::string>{"mul", "matmul", "softmax", "matmul", "square", "sum"});
    REQUIRE(sdpa.nodes()[4].var.op() == std::string("softmax"));  // inputs first: Q, mul, K, matmul, softmax, …
    const Tensor softmax_out_grad = sdpa.nodes()[4].var.grad(), scores_grad = sdpa.nodes()[3].var.grad();
    CHECK(std::hypot(softmax_out_grad[0], softmax_out_grad[1]) == doctest::Approx(1.656).epsilon(1e-3));
    CHECK(std::hypot(scores_grad[0], scores_grad[1]) == doctest::Approx(0.2709).epsilon(1e-3));
    CHECK(scores_grad[0] + scores_grad[1] == doctest::Approx(0).epsilon(1e-6));  // sums to zero

    // Step 8 — a mask: hide the first key; all the weight goes to the second.
    Tensor keep = key_mask(Tensor::from({0, 1}, Shape{1, 2}));
    AttentionOutput masked = scaled_dot_product_attention(Q, K, V, keep);
    CHECK(masked.weights.value()[0] == 0);
    CHECK(masked.weights.value()[1] == 1);
}
