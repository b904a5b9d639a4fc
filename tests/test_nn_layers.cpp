// nn layers and losses: shapes, PyTorch's state_dict names and default
// inits, describe(), Embedding's padding row, Dropout's statistics,
// load_state_dict's errors, and the losses' options. Values against PyTorch
// are in test_nn_reference.cpp, gradients in tests/grad/test_nn_grad.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>
#include <utility>

#include "autograd/ops.hpp"
#include "nn/activation.hpp"
#include "nn/conv.hpp"
#include "nn/dropout.hpp"
#include "nn/embedding.hpp"
#include "nn/layernorm.hpp"
#include "nn/linear.hpp"
#include "nn/loss.hpp"
#include "nn/sequential.hpp"
#include "tensor/ops.hpp"
#include "tensor/parallel.hpp"

using namespace attn;

namespace {

std::vector<std::string> keys(const Module& m) {
    std::vector<std::string> out;
    for (const auto& [name, _] : m.state_dict()) out.push_back(name);
    return out;
}

real max_abs(const Tensor& t) {
    real m = 0;
    for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::fabs(t[i]));
    return m;
}

}  // namespace

// ---- Linear ---------------------------------------------------------------------------------

TEST_CASE("Linear: shapes over any leading axes, PyTorch's names, layout and init") {
    Generator gen(1);
    Linear layer(8, 3, gen);
    CHECK(keys(layer) == std::vector<std::string>{"weight", "bias"});
    CHECK(layer.weight.shape() == Shape{3, 8});  // out×in
    CHECK(layer.bias.shape() == Shape{3});
    // U(−1/√8, 1/√8), and not degenerate.
    CHECK(max_abs(layer.weight.value()) <= 1 / std::sqrt(8.f));
    CHECK(max_abs(layer.weight.value()) > 0.8f / std::sqrt(8.f));
    CHECK(max_abs(layer.bias.value()) <= 1 / std::sqrt(8.f));
    CHECK(layer.describe() == "Linear(in_features=8, out_features=3, bias=true)");

    const Tensor x = Tensor::normal({2, 5, 8}, 0, 1, gen);
    const Var y = layer(Var(x));
    CHECK(y.shape() == Shape{2, 5, 3});
    // Row (1, 4) by hand: y = W x + b.
    for (int64_t o = 0; o < 3; ++o) {
        double want = layer.bias.value()[o];
        for (int64_t i = 0; i < 8; ++i) want += layer.weight.value().at({o, i}) * x.at({1, 4, i});
        CHECK(y.value().at({1, 4, o}) == doctest::Approx(want).epsilon(1e-5));
    }
    CHECK(layer(Var(Tensor::ones({8}))).shape() == Shape{3});  // a single vector

    Linear no_bias(8, 3, gen, /*bias=*/false);
    CHECK(keys(no_bias) == std::vector<std::string>{"weight"});
    CHECK_FALSE(no_bias.bias.defined());
    CHECK(no_bias.describe() == "Linear(in_features=8, out_features=3, bias=false)");
}

TEST_CASE("Linear: a wrong feature count names the layer and the shapes") {
    Generator gen(1);
    Linear layer(4, 2, gen);
    CHECK_THROWS_WITH_AS(layer(Var(Tensor::zeros({2, 3, 5}))),
                         "Linear: input 2×3×5 needs 4 features on its last axis (in_features = 4)",
                         std::invalid_argument);
    CHECK_THROWS_AS(Linear(0, 2, gen), std::invalid_argument);
}

TEST_CASE("Linear fused (matmul_bias): the composed layer's value and every gradient, at 1 and 2 threads") {
    // Large enough (256 rows of 128 → 96) that the bias rows and the GEMM
    // split over the threads.
    Generator gen(4);
    const Tensor x = Tensor::normal({2, 128, 128}, 0, 1, gen), r = Tensor::normal({2, 128, 96}, 0, 1, gen);
    const int saved = num_threads();
    for (int threads : {1, 2}) {
        set_num_threads(threads);
        Generator init_a(5), init_b(5);
        Linear composed(128, 96, init_a), fused(128, 96, init_b);
        fused.fused = true;
        Var xa(x.clone(), true), xb(x.clone(), true);
        const Var ya = composed(xa), yb = fused(xb);
        CHECK(allclose(yb.value(), ya.value(), 1e-5f, 1e-5f));
        // One row by hand: y = W x + b.
        for (int64_t o = 0; o < 96; o += 19) {
            double want = std::as_const(fused.bias).value()[o];
            // read through const: a non-const access would count as a change before backward
            const Tensor& w = std::as_const(fused.weight).value();
            for (int64_t i = 0; i < 128; ++i) want += double(w.at({o, i})) * x.at({1, 77, i});
            CHECK(std::as_const(yb).value().at({1, 77, o}) == doctest::Approx(want).epsilon(1e-4));
        }
        sum(ya * Var(r)).backward();
        sum(yb * Var(r)).backward();
        CHECK(allclose(xb.grad(), xa.grad(), 1e-4f, 1e-5f));
        CHECK(allclose(fused.weight.grad(), composed.weight.grad(), 1e-4f, 1e-4f));
        CHECK(allclose(fused.bias.grad(), composed.bias.grad(), 1e-4f, 1e-4f));
    }
    set_num_threads(saved);
}

// ---- Embedding ----------------------------------------------------------------------------

TEST_CASE("Embedding: lookup, N(0, 1) init, padding row zero and never updated") {
    Generator gen(2);
    Embedding embed(50, 4, gen, /*padding_idx=*/0);
    CHECK(keys(embed) == std::vector<std::string>{"weight"});
    CHECK(embed.describe() == "Embedding(50, 4, padding_idx=0)");
    const Tensor& w = embed.weight.value();
    for (int64_t j = 0; j < 4; ++j) CHECK(w.at({0, j}) == 0);
    // N(0, 1): the sample variance of 196 values is within ±40% of 1.
    double sq = 0;
    for (int64_t i = 4; i < w.numel(); ++i) sq += w[i] * w[i];
    CHECK(sq / 196 == doctest::Approx(1).epsilon(0.4));

    const Tensor indices = Tensor::from({3, 0, 3, 0, 7, 0}, {2, 3});
    Var y = embed(indices);
    CHECK(y.shape() == Shape{2, 3, 4});
    for (int64_t j = 0; j < 4; ++j) CHECK(std::as_const(y).value().at({1, 1, j}) == w.at({7, j}));
    sum(y * y + y).backward();
    const Tensor g = embed.weight.grad();
    for (int64_t j = 0; j < 4; ++j) {
        CHECK(g.at({0, j}) == 0);                                 // padding: no gradient, though looked up 3 times
        CHECK(g.at({3, j}) == doctest::Approx(2 * (2 * w.at({3, j}) + 1)));  // looked up twice
        CHECK(g.at({5, j}) == 0);                                 // never looked up
    }
    CHECK(Embedding(10, 2, gen, -1).padding_idx() == 9);  // negative counts from the end
    CHECK_THROWS_AS(Embedding(10, 2, gen, 10), std::out_of_range);
    CHECK_THROWS_WITH_AS(embed(Tensor::from({1, 50})),
                         "embedding: index 50 at position 1 is out of range [0, 50) for weight 50×4",
                         std::out_of_range);
}

// ---- Conv2d and pooling ---------------------------------------------------------------------

TEST_CASE("Conv2d: PyTorch's shapes, names, init bounds; pools' shapes") {
    Generator gen(3);
    Conv2d conv(3, 8, {3, 2}, gen, /*stride=*/{2, 1}, /*padding=*/1);
    CHECK(keys(conv) == std::vector<std::string>{"weight", "bias"});
    CHECK(conv.weight.shape() == Shape{8, 3, 3, 2});
    const real bound = 1 / std::sqrt(real(3 * 3 * 2));  // fan_in = C·kh·kw
    CHECK(max_abs(conv.weight.value()) <= bound);
    CHECK(max_abs(conv.bias.value()) <= bound);
    CHECK(conv.describe() == "Conv2d(3, 8, kernel_size=(3, 2), stride=(2, 1), padding=(1, 1))");
    // Ho = (9 + 2 − 3)/2 + 1 = 5, Wo = (6 + 2 − 2)/1 + 1 = 7
    CHECK(conv(Var(Tensor::zeros({2, 3, 9, 6}))).shape() == Shape{2, 8, 5, 7});
    CHECK_THROWS_WITH_AS(conv(Var(Tensor::zeros({2, 4, 9, 6}))),
                         "Conv2d: input 2×4×9×6 must be B×C×H×W with C = 3 channels", std::invalid_argument);

    MaxPool2d max_pool(2);
    CHECK(max_pool.describe() == "MaxPool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))");
    CHECK(max_pool(Var(Tensor::zeros({1, 2, 7, 6}))).shape() == Shape{1, 2, 3, 3});
    AvgPool2d avg_pool(3, 2, 1);
    CHECK(avg_pool.describe() == "AvgPool2d(kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))");
    CHECK(avg_pool(Var(Tensor::ones({1, 1, 5, 5}))).shape() == Shape{1, 1, 3, 3});
    CHECK(max_pool.num_parameters() == 0);
}

TEST_CASE("Conv2d::forward_max_pooled: pool (and ReLU) after the convolution, fused or not, the same") {
    Generator gen(5);
    Conv2d conv(2, 4, 3, gen, 1, 1);
    MaxPool2d pool(2);
    const Tensor x = Tensor::normal({2, 2, 6, 8}, 0, 1, gen);
    for (bool then_relu : {false, true}) {
        CAPTURE(then_relu);
        conv.fused = false;
        const Var pooled = pool(conv(Var(x)));
        const Tensor want = then_relu ? relu(pooled).value() : pooled.value();
        const Tensor composed = conv.forward_max_pooled(Var(x), pool, then_relu).value();
        conv.fused = true;
        const Tensor fused = conv.forward_max_pooled(Var(x), pool, then_relu).value();
        REQUIRE(want.shape() == Shape{2, 4, 3, 4});
        CHECK(allclose(composed, want, 0, 0));
        CHECK(allclose(fused, want, 1e-5, 1e-6));
        CHECK(std::any_of(want.data(), want.data() + want.numel(), [](real v) { return v < 0; }) == !then_relu);
    }
}

// ---- LayerNorm --------------------------------------------------------------------------------

TEST_CASE("LayerNorm: rows come out with mean 0 and variance 1; fused equals composed") {
    Generator gen(4);
    LayerNorm norm(16);
    CHECK(keys(norm) == std::vector<std::string>{"weight", "bias"});
    CHECK(norm.describe() == "LayerNorm((16,), eps=1e-05, elementwise_affine=true)");
    const Tensor x = Tensor::normal({3, 5, 16}, 2, 3, gen);
    const Tensor y = norm(Var(x)).value();
    for (int64_t r = 0; r < 15; ++r) {
        double m = 0, v = 0;
        for (int64_t k = 0; k < 16; ++k) m += y[r * 16 + k];
        m /= 16;
        for (int64_t k = 0; k < 16; ++k) v += (y[r * 16 + k] - m) * (y[r * 16 + k] - m);
        CHECK(std::fabs(m) < 1e-5);
        CHECK(v / 16 == doctest::Approx(1).epsilon(1e-4));
    }
    // In float the two implementations agree to rounding, value and gradient.
    norm.weight.value().copy_(Tensor::normal({16}, 1, 0.3, gen));
    Var a(x.clone(), true), b(x.clone(), true);
    Var ya = layer_norm_fused(a, norm.weight, norm.bias), yb = layer_norm(b, norm.weight, norm.bias);
    CHECK(allclose(ya.value(), yb.value(), 1e-5, 1e-5));
    const Tensor g = Tensor::normal({3, 5, 16}, 0, 1, gen);
    ya.backward(g);
    yb.backward(g);
    CHECK(allclose(a.grad(), b.grad(), 1e-4, 1e-5));

    LayerNorm plain(16, 1e-6, /*elementwise_affine=*/false);
    CHECK(plain.num_parameters() == 0);
    CHECK(plain.describe() == "LayerNorm((16,), eps=1e-06, elementwise_affine=false)");
    CHECK_THROWS_WITH_AS(norm(Var(Tensor::zeros({2, 8}))),
                         "LayerNorm: input 2×8 needs 16 features on its last axis (normalized_shape = 16)",
                         std::invalid_argument);
}

TEST_CASE("LayerNorm fused: the composed version's value and every gradient, rows split over the threads") {
    // 2048 rows (W5's batch × sequence) of D = 130 (eight-wide partial sums
    // and a tail of 2), γ and β random, on one thread and on two: the same
    // bits on both (∂L/∂γ and ∂L/∂β go in blocks of rows fixed by the shape).
    Generator gen(21);
    const int64_t N = 2048, D = 130;
    const Tensor x = Tensor::normal({N, D}, 1, 2, gen), g = Tensor::normal({N, D}, 0, 1, gen);
    const Tensor gamma = Tensor::normal({D}, 1, 0.3, gen), beta = Tensor::normal({D}, 0, 0.3, gen);
    auto run = [&](bool fused, int threads) {
        set_num_threads(threads);
        Var xv(x.clone(), true), w(gamma.clone(), true), b(beta.clone(), true);
        Var y = fused ? layer_norm_fused(xv, w, b) : layer_norm(xv, w, b);
        y.backward(g);
        return std::vector<Tensor>{y.value(), xv.grad(), w.grad(), b.grad()};
    };
    const int before = num_threads();
    const std::vector<Tensor> composed = run(false, 1), one = run(true, 1), two = run(true, 2);
    set_num_threads(before);
    const char* what[] = {"y", "∂L/∂x", "∂L/∂γ", "∂L/∂β"};
    for (size_t k = 0; k < composed.size(); ++k) {
        INFO(what[k]);
        CHECK(allclose(one[k], composed[k], 1e-4, 1e-4));
        CHECK(std::equal(one[k].data(), one[k].data() + one[k].numel(), two[k].data()));  // fixed blocks of rows
    }
}

TEST_CASE("LayerNorm fused: long rows far from zero against a plain loop in double") {
    // D = 2,500: two chunks of 1,024 terms and a third of 452 (28 groups of
    // sixteen and a tail of 4), the values around 100 with spread 0.5, where a
    // one-pass E[x²] − E[x]² in float would lose the variance. The reference
    // is the formula itself, in double, row by row: y = γ(x − μ)/√(σ² + ε) + β
    // and ∂L/∂x = s(∂L/∂x̂ − mean ∂L/∂x̂ − x̂ mean(∂L/∂x̂ ⊙ x̂)) with ∂L/∂x̂ = γ ⊙ g.
    Generator gen(22);
    const int64_t N = 3, D = 2500;
    const double eps = 1e-5;
    const Tensor x = Tensor::normal({N, D}, 100, 0.5, gen), g = Tensor::normal({N, D}, 0, 1, gen);
    const Tensor gamma = Tensor::normal({D}, 1, 0.3, gen), beta = Tensor::normal({D}, 0, 0.3, gen);
    Var xv(x.clone(), true), w(gamma.clone(), true), b(beta.clone(), true);
    Var y = layer_norm_fused(xv, w, b, static_cast<real>(eps));
    y.backward(g);
    std::vector<double> dgamma(D, 0), dbeta(D, 0);
    double worst_y = 0, worst_dx = 0, worst_dgamma = 0, worst_dbeta = 0;  // largest |ours − reference|
    for (int64_t r = 0; r < N; ++r) {
        double mu = 0, var = 0, mean_dh = 0, mean_dh_h = 0;
        for (int64_t k = 0; k < D; ++k) mu += x[r * D + k];
        mu /= D;
        for (int64_t k = 0; k < D; ++k) var += (x[r * D + k] - mu) * (x[r * D + k] - mu);
        var /= D;
        const double s = 1 / std::sqrt(var + eps);
        std::vector<double> xhat(D);
        for (int64_t k = 0; k < D; ++k) {
            xhat[k] = (x[r * D + k] - mu) * s;
            mean_dh += gamma[k] * g[r * D + k] / D;
            mean_dh_h += gamma[k] * g[r * D + k] * xhat[k] / D;
            dgamma[k] += g[r * D + k] * xhat[k];
            dbeta[k] += g[r * D + k];
        }
        for (int64_t k = 0; k < D; ++k) {
            const double dx = s * (gamma[k] * g[r * D + k] - mean_dh - xhat[k] * mean_dh_h);
            worst_y = std::max(worst_y, std::fabs(y.value()[r * D + k] - (gamma[k] * xhat[k] + beta[k])));
            worst_dx = std::max(worst_dx, std::fabs(xv.grad()[r * D + k] - dx));
        }
    }
    for (int64_t k = 0; k < D; ++k) {
        worst_dgamma = std::max(worst_dgamma, std::fabs(w.grad()[k] - dgamma[k]));
        worst_dbeta = std::max(worst_dbeta, std::fabs(b.grad()[k] - dbeta[k]));
    }
    MESSAGE("largest errors: y " << worst_y << ", dx " << worst_dx << ", dgamma " << worst_dgamma << ", dbeta "
                                 << worst_dbeta);
    CHECK(worst_y < 1e-4);
    CHECK(worst_dx < 2e-5);
    CHECK(worst_dgamma < 2e-4);
    CHECK(worst_dbeta < 1e-5);
}

TEST_CASE("add_layer_norm_fused: the bits of layer_norm_fused(x + r), both gradients, a plain loop, errors") {
    // W5's rows (2048 × 128): the sum is made row by row with add's one float
    // addition, then the same row kernels: the very bits of the two ops
    // composed, value and every gradient, on one thread and on two. And the
    // gradient of x and of r against the formula in double.
    Generator gen(23);
    const int64_t N = 2048, D = 128;
    const Tensor x = Tensor::normal({2, N / 2, D}, 1, 2, gen), r = Tensor::normal({2, N / 2, D}, 0, 1, gen);
    const Tensor g = Tensor::normal({2, N / 2, D}, 0, 1, gen);
    const Tensor gamma = Tensor::normal({D}, 1, 0.3, gen), beta = Tensor::normal({D}, 0, 0.3, gen);
    auto run = [&](bool fused, int threads) {
        set_num_threads(threads);
        Var xv(x.clone(), true), rv(r.clone(), true), w(gamma.clone(), true), b(beta.clone(), true);
        Var y = fused ? add_layer_norm_fused(xv, rv, w, b) : layer_norm_fused(xv + rv, w, b);
        y.backward(g);
        return std::vector<Tensor>{y.value(), xv.grad(), rv.grad(), w.grad(), b.grad()};
    };
    const int before = num_threads();
    // (∂L/∂γ and ∂L/∂β sum the rows in blocks, one block per thread: their
    // bits depend on the thread count, the same way for both.)
    const std::vector<Tensor> composed = run(false, 1), one = run(true, 1);
    const std::vector<Tensor> composed_two = run(false, 2), two = run(true, 2);
    set_num_threads(before);
    const char* what[] = {"y", "∂L/∂x", "∂L/∂r", "∂L/∂γ", "∂L/∂β"};
    for (size_t k = 0; k < composed.size(); ++k) {
        INFO(std::string(what[k]));
        CHECK(std::equal(one[k].data(), one[k].data() + one[k].numel(), composed[k].data()));
        CHECK(std::equal(two[k].data(), two[k].data() + two[k].numel(), composed_two[k].data()));
    }
    double worst = 0;
    for (int64_t row = 0; row < N; row += 97) {  // a spread of rows, from the formula
        double mu = 0, var = 0, mean_dh = 0, mean_dh_h = 0;
        for (int64_t k = 0; k < D; ++k) mu += double(x[row * D + k]) + r[row * D + k];
        mu /= D;
        for (int64_t k = 0; k < D; ++k) var += std::pow(double(x[row * D + k]) + r[row * D + k] - mu, 2);
        const double s = 1 / std::sqrt(var / D + 1e-5);
        for (int64_t k = 0; k < D; ++k) {
            const double xhat = (double(x[row * D + k]) + r[row * D + k] - mu) * s;
            mean_dh += gamma[k] * g[row * D + k] / D;
            mean_dh_h += gamma[k] * g[row * D + k] * xhat / D;
        }
        for (int64_t k = 0; k < D; ++k) {
            const double xhat = (double(x[row * D + k]) + r[row * D + k] - mu) * s;
            const double y = gamma[k] * xhat + beta[k], dx = s * (gamma[k] * g[row * D + k] - mean_dh - xhat * mean_dh_h);
            worst = std::max({worst, std::fabs(one[0][row * D + k] - y), std::fabs(one[1][row * D + k] - dx),
                              std::fabs(one[2][row * D + k] - dx)});
        }
    }
    MESSAGE("largest difference from the formula in double: " << worst);
    CHECK(worst < 1e-4);

    LayerNorm norm(D);
    norm.fused = true;
    CHECK_THROWS_WITH_AS(add_layer_norm_fused(Var(x), Var(Tensor::zeros({2, D})), norm.weight, norm.bias),
                         "add_layer_norm_fused: input 2×1024×128 and residual 2×128 must have the same shape",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(norm.add_and_norm(Var(Tensor::zeros({2, 8})), Var(Tensor::zeros({2, 8}))),
                         "LayerNorm: input 2×8 needs 128 features on its last axis (normalized_shape = 128)",
                         std::invalid_argument);
}

// ---- Dropout ------------------------------------------------------------------------------------

TEST_CASE("Dropout: eval is the identity; training drops a fraction p and rescales the rest") {
    Generator gen(5);
    Dropout drop(0.3f, gen);
    CHECK(drop.describe() == "Dropout(p=0.3)");
    const Tensor x = Tensor::uniform({200, 500}, 1, 2, gen);  // no zeros of its own

    drop.eval();
    const Var same = drop(Var(x));
    CHECK(same.value().shares_storage_with(x));

    drop.train();
    const Tensor y = drop(Var(x)).value();
    int64_t dropped = 0;
    bool scaled = true;
    for (int64_t i = 0; i < y.numel(); ++i) {
        if (y[i] == 0) ++dropped;
        else scaled = scaled && std::fabs(y[i] - x[i] / real(0.7)) <= 1e-6f * y[i];
    }
    CHECK(scaled);
    // n = 100,000 Bernoulli(0.3) draws: σ = √(0.3·0.7/n) ≈ 0.00145, so the
    // rate lies within 0.0075 (over 5σ) of p except with probability < 1e-6.
    const double rate = static_cast<double>(dropped) / static_cast<double>(y.numel());
    CHECK(std::fabs(rate - 0.3) < 0.0075);

    // The same seed gives the same mask.
    Generator g1(9), g2(9);
    Dropout d1(0.5f, g1), d2(0.5f, g2);
    CHECK(allclose(d1(Var(x)).value(), d2(Var(x)).value(), 0, 0));
    CHECK_THROWS_AS(Dropout(1.5f, gen), std::invalid_argument);
}

// ---- activations and Sequential -------------------------------------------------------------------

TEST_CASE("Sequential: PyTorch's keys \"0.weight\", the chain, describe, train/eval") {
    Generator gen(6), drop_gen(7);
    Sequential mlp;
    Linear& first = mlp.emplace<Linear>(4, 8, gen);
    mlp.emplace<ReLU>();
    mlp.emplace<Dropout>(0.5f, drop_gen);
    mlp.emplace<Linear>(8, 2, gen);
    CHECK(mlp.size() == 4);
    CHECK(keys(mlp) == std::vector<std::string>{"0.weight", "0.bias", "3.weight", "3.bias"});
    CHECK(mlp.describe() ==
          "Sequential(\n"
          "  (0): Linear(in_features=4, out_features=8, bias=true)\n"
          "  (1): ReLU()\n"
          "  (2): Dropout(p=0.5)\n"
          "  (3): Linear(in_features=8, out_features=2, bias=true)\n"
          ")");

    mlp.eval();
    CHECK_FALSE(mlp[2].is_training());
    const Var x(Tensor::normal({5, 4}, 0, 1, gen));
    const Var by_hand = mlp[3](relu(first(x)));
    CHECK(allclose(mlp(x).value(), by_hand.value(), 0, 0));
    mlp.train();
    CHECK(mlp[2].is_training());

    CHECK(LeakyReLU(0.2f).describe() == "LeakyReLU(negative_slope=0.2)");
    CHECK(GELU().describe() == "GELU()");
    CHECK(Tanh().describe() == "Tanh()");
    CHECK(Sigmoid().describe() == "Sigmoid()");
}

TEST_CASE("Module::set_fast: every layer with a fast path, however deep, switches on and back off") {
    // A model of models: a Sequential inside a module, a LayerNorm and a Conv2d
    // beside it. Each layer's own switch is read back.
    struct Block : Module {
        Sequential mlp;
        LayerNorm norm{8};
        Conv2d conv;
        explicit Block(Generator& gen) : conv(1, 2, 3, gen) {
            mlp.emplace<Linear>(4, 8, gen);
            mlp.emplace<ReLU>();
            mlp.emplace<Linear>(8, 4, gen);
            register_module("mlp", mlp);
            register_module("norm", norm);
            register_module("conv", conv);
        }
    };
    struct Model : Module {
        Block inner;
        Linear head;
        explicit Model(Generator& gen) : inner(gen), head(4, 2, gen) {
            register_module("inner", inner);
            register_module("head", head);
        }
    };
    Generator gen(5);
    Model m(gen);
    const auto every_layer_is = [&](bool on) {
        CHECK(m.is_fast() == on);
        CHECK(m.inner.is_fast() == on);
        CHECK(m.inner.mlp[1].is_fast() == on);  // no fast path of its own; the flag still reaches it
        CHECK(dynamic_cast<Linear&>(m.inner.mlp[0]).fused == on);
        CHECK(dynamic_cast<Linear&>(m.inner.mlp[2]).fused == on);
        CHECK(m.inner.norm.fused == on);
        CHECK(m.inner.conv.fused == on);
        CHECK(m.head.fused == on);
    };
    every_layer_is(false);  // readable by default
    m.set_fast(true);
    every_layer_is(true);
    m.set_fast(false);
    every_layer_is(false);
    m.inner.set_fast(true);  // a sub-module alone: its parent is left as it was
    CHECK_FALSE(m.head.fused);
    CHECK(m.inner.conv.fused);
}

// ---- load_state_dict's errors -------------------------------------------------------------------------

TEST_CASE("load_state_dict: a missing, unexpected or mis-shaped tensor is named, and nothing changes") {
    Generator gen(8);
    Sequential model;
    model.emplace<Linear>(3, 2, gen);
    model.emplace<Tanh>();
    model.emplace<LayerNorm>(2);
    StateDict good = model.state_dict();
    const Tensor before = model.state_dict()[0].second;

    StateDict missing(good.begin(), good.end() - 1);
    CHECK_THROWS_WITH_AS(model.load_state_dict(missing),
                         "load_state_dict: missing tensor \"2.bias\": the checkpoint has no value for it",
                         std::invalid_argument);
    StateDict extra = good;
    extra.emplace_back("2.running_mean", Tensor::zeros({2}));
    CHECK_THROWS_WITH_AS(model.load_state_dict(extra),
                         "load_state_dict: unexpected tensor \"2.running_mean\" (2): the model has no parameter or "
                         "buffer of that name",
                         std::invalid_argument);
    StateDict misshaped = good;
    misshaped[0].second = Tensor::ones({2, 4});
    misshaped[1].second = Tensor::ones({2});
    CHECK_THROWS_WITH_AS(model.load_state_dict(misshaped),
                         "load_state_dict: 0.weight has shape 2×4 in the checkpoint but 2×3 in the model",
                         std::invalid_argument);
    CHECK(allclose(model.state_dict()[0].second, before, 0, 0));
    CHECK(allclose(model.state_dict()[1].second, good[1].second, 0, 0));  // the valid entry was not copied either
}

// ---- losses ------------------------------------------------------------------------------------------

TEST_CASE("loss::cross_entropy: label smoothing by hand, and PyTorch's value") {
    // Row 0: x = (1, 2, 3), t = 0. log p = x − log Σ e^x = (−2.407606, −1.407606, −0.407606);
    //   ℓ = −0.9 · log p_0 − (0.1 / 3) · Σ_c log p_c = 2.166845 + 0.140761 = 2.307606.
    // Row 1: x = (0.5, −1, 2), t = 2. log p = (−1.741311, −3.241311, −0.241311);
    //   ℓ = 0.9 · 0.241311 + (0.1 / 3) · 5.223933 = 0.391311.
    // torch.nn.functional.cross_entropy(x, t, label_smoothing=0.1) = 1.3494586 (the mean),
    // and 2.3076060 with ignore_index=2 (row 1 dropped).
    const Tensor x = Tensor::from({1, 2, 3, 0.5f, -1, 2}, {2, 3}), t = Tensor::from({0, 2}, {2});
    const Var fused = loss::cross_entropy(Var(x), t, {.label_smoothing = 0.1f, .fast = true});  // one op
    const Var composed = loss::cross_entropy(Var(x), t, {.label_smoothing = 0.1f});
    const Var rows = loss::cross_entropy(Var(x), t, {.label_smoothing = 0.1f, .reduction = loss::Reduction::none});
    CHECK(rows.value()[0] == doctest::Approx(2.307606).epsilon(1e-6));
    CHECK(rows.value()[1] == doctest::Approx(0.391311).epsilon(1e-5));
    CHECK(fused.item() == doctest::Approx(1.3494586).epsilon(1e-6));
    CHECK(composed.item() == doctest::Approx(1.3494586).epsilon(1e-6));
    for (bool fast : {false, true})
        CHECK(loss::cross_entropy(Var(x), t, {.ignore_index = 2, .label_smoothing = 0.1f, .fast = fast}).item() ==
              doctest::Approx(2.3076060).epsilon(1e-6));
}

TEST_CASE("loss::cross_entropy: a zero weight is the same as ignore_index; nothing counted gives 0") {
    Generator gen(10);
    const Tensor logits = Tensor::normal({2, 4, 6}, 0, 1, gen);
    const Tensor targets = Tensor::from({1, 2, 3, 4, 5, 0, 1, 2}, {2, 4});
    Tensor ignored = targets.clone(), mask = Tensor::ones({2, 4});
    ignored[2] = -100, ignored[7] = -100;
    mask[2] = 0, mask[7] = 0;
    Var a(logits.clone(), true), b(logits.clone(), true);
    Var by_ignore = loss::cross_entropy(a, ignored, {.label_smoothing = 0.1f});
    Var by_mask = loss::cross_entropy(b, targets, {.label_smoothing = 0.1f, .weight = mask});
    CHECK(by_ignore.item() == doctest::Approx(by_mask.item()).epsilon(1e-6));
    by_ignore.backward();
    by_mask.backward();
    CHECK(allclose(a.grad(), b.grad(), 1e-5, 1e-7));

    // Per position: 0 where ignored, and the sum of the rest is the sum reduction.
    const Var none = loss::cross_entropy(Var(logits), ignored, {.reduction = loss::Reduction::none});
    CHECK(none.shape() == Shape{2, 4});
    CHECK(none.value()[2] == 0);
    const Var total = loss::cross_entropy(Var(logits), ignored, {.reduction = loss::Reduction::sum});
    CHECK(sum(none.value()).item() == doctest::Approx(total.item()).epsilon(1e-6));

    Var c(logits.clone(), true);
    Var nothing = loss::cross_entropy(c, targets, {.weight = Tensor::zeros({2, 4})});
    CHECK(nothing.item() == 0);
    nothing.backward();
    CHECK(max_abs(c.grad()) == 0);

    CHECK_THROWS_WITH_AS(loss::cross_entropy(Var(logits), Tensor::from({1, 2, 3, 4, 6, 0, 1, 2}, {2, 4}),
                                             {.reduction = loss::Reduction::sum}),
                         "loss::cross_entropy: target 6 at position 4 is out of range [0, 6) (ignore_index is -100)",
                         std::out_of_range);
    CHECK_THROWS_AS(loss::cross_entropy(Var(logits), targets, {.weight = Tensor::ones({8})}), std::invalid_argument);
}

TEST_CASE("loss::bce_with_logits is finite for huge logits; mse's shapes must match") {
    Var x(Tensor::from({-200, -50, 50, 200}), true);
    const Tensor y = Tensor::from({0, 1, 0, 1});
    Var l = loss::bce_with_logits(x, y, {.reduction = loss::Reduction::none});
    // ℓ(−200, 0) = log(1 + e^−200) ≈ 0;  ℓ(−50, 1) = 50;  ℓ(50, 0) = 50;  ℓ(200, 1) ≈ 0
    CHECK(std::as_const(l).value()[0] == doctest::Approx(0));
    CHECK(std::as_const(l).value()[1] == doctest::Approx(50));
    CHECK(std::as_const(l).value()[2] == doctest::Approx(50));
    CHECK(std::as_const(l).value()[3] == doctest::Approx(0));
    sum(l).backward();  // σ(x) − y
    CHECK(x.grad()[0] == doctest::Approx(0));
    CHECK(x.grad()[1] == doctest::Approx(-1));
    CHECK(x.grad()[2] == doctest::Approx(1));
    CHECK(x.grad()[3] == doctest::Approx(0));
    CHECK_THROWS_WITH_AS(loss::mse(Var(Tensor::zeros({2, 3})), Tensor::zeros({3, 2})),
                         "loss::mse: input 2×3 and target 3×2 must have the same shape", std::invalid_argument);
}
