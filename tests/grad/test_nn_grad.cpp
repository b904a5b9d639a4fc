// Every nn layer and loss against central finite differences (double build),
// to its inputs and to its parameters; and the fused LayerNorm against its
// composite twin, value and gradient.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "autograd/gradcheck.hpp"
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

using namespace attn;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

Var input(const Shape& shape, Generator& gen) { return Var(Tensor::normal(shape, 0, 1, gen), true); }

// The layer's output, checked against finite differences in the input and
// every parameter at once.
void check_layer(const std::string& name, UnaryModule& layer, const Var& x) {
    std::vector<Var> vars{x};
    for (const Var& p : layer.parameters()) vars.push_back(p);
    const GradcheckResult r = gradcheck(name, [&] { return layer(x); }, vars);
    INFO(r.message);
    CHECK_MESSAGE(r.ok, name);
    CHECK(r.checked == x.numel() + layer.num_parameters());
}

// Values away from the kinks of relu / leaky_relu / max (at least 0.1 from 0
// and from each other): |v| in [0.2, 2], sign alternating.
Tensor away_from_kinks(const Shape& shape) {
    Tensor t = Tensor::empty(shape);
    for (int64_t i = 0; i < t.numel(); ++i)
        t[i] = (i % 2 ? -1 : 1) * (0.2 + 1.8 * static_cast<double>((i * 37) % t.numel()) / static_cast<double>(t.numel()));
    return t;
}

}  // namespace

TEST_CASE("nn gradcheck: Linear over B×n×in, with and without bias") {
    Generator gen(1);
    Linear with_bias(4, 3, gen);
    check_layer("Linear", with_bias, input({2, 3, 4}, gen));
    Linear no_bias(4, 3, gen, /*bias=*/false);
    check_layer("Linear(bias=false)", no_bias, input({5, 4}, gen));
    check_layer("Linear on a vector", with_bias, input({4}, gen));
}

TEST_CASE("nn gradcheck: Embedding, with a padding index that is not looked up") {
    Generator gen(2);
    const Tensor indices = Tensor::from({0, 3, 3, 2, 4, 0}, {2, 3});
    for (std::optional<int64_t> pad : {std::optional<int64_t>{}, std::optional<int64_t>{1}}) {
        Embedding embed(5, 3, gen, pad);
        const GradcheckResult r = gradcheck("Embedding", [&] { return embed(indices); }, embed.parameters());
        INFO(r.message);
        CHECK(r.ok);
    }
}

TEST_CASE("nn gradcheck: Conv2d, MaxPool2d, AvgPool2d") {
    Generator gen(3);
    Conv2d conv(2, 3, {3, 2}, gen, /*stride=*/{2, 1}, /*padding=*/1);
    check_layer("Conv2d", conv, input({2, 2, 5, 4}, gen));
    Conv2d conv_no_bias(2, 2, 2, gen, 1, 0, /*bias=*/false);
    check_layer("Conv2d(bias=false)", conv_no_bias, input({1, 2, 3, 3}, gen));

    MaxPool2d max_pool(2, 1, 1);  // overlapping windows with padding
    check_layer("MaxPool2d", max_pool, Var(away_from_kinks({2, 2, 4, 5}), true));
    AvgPool2d avg_pool(3, 2, 1);
    check_layer("AvgPool2d", avg_pool, input({2, 2, 5, 4}, gen));
}

TEST_CASE("nn gradcheck: LayerNorm, fused and composed, with and without affine") {
    Generator gen(4);
    LayerNorm norm(6);
    // Parameters away from their init (γ = 1, β = 0) so that every term counts.
    norm.weight.value().copy_(Tensor::normal({6}, 1, 0.5, gen));
    norm.bias.value().copy_(Tensor::normal({6}, 0, 0.5, gen));
    check_layer("LayerNorm (fused)", norm, input({2, 3, 6}, gen));
    LayerNorm plain(5, 1e-5, /*elementwise_affine=*/false);
    check_layer("LayerNorm (no affine)", plain, input({4, 5}, gen));

    const Var x = input({3, 6}, gen);
    const GradcheckResult r = gradcheck(
        "layer_norm (composed)", [&] { return layer_norm(x, norm.weight, norm.bias, norm.eps()); },
        {x, norm.weight, norm.bias});
    INFO(r.message);
    CHECK(r.ok);
}

TEST_CASE("nn: the fused LayerNorm equals the composed one, value and gradient") {
    Generator gen(5);
    const Tensor x0 = Tensor::normal({2, 4, 7}, 0.3, 2, gen), g = Tensor::normal({2, 4, 7}, 0, 1, gen);
    const Tensor w0 = Tensor::normal({7}, 1, 0.5, gen), b0 = Tensor::normal({7}, 0, 0.5, gen);
    Var x1(x0.clone(), true), w1(w0.clone(), true), b1(b0.clone(), true);
    Var x2(x0.clone(), true), w2(w0.clone(), true), b2(b0.clone(), true);
    Var fused = layer_norm_fused(x1, w1, b1, 1e-5);
    Var composed = layer_norm(x2, w2, b2, 1e-5);
    CHECK(allclose(fused.value(), composed.value(), 1e-12, 1e-12));
    fused.backward(g);
    composed.backward(g);
    CHECK(allclose(x1.grad(), x2.grad(), 1e-12, 1e-12));
    CHECK(allclose(w1.grad(), w2.grad(), 1e-12, 1e-12));
    CHECK(allclose(b1.grad(), b2.grad(), 1e-12, 1e-12));
}

TEST_CASE("nn: add_layer_norm_fused's gradients by finite differences, and LayerNorm::add_and_norm on both paths") {
    Generator gen(55);
    const std::vector<Tensor> inputs{Tensor::normal({2, 3, 6}, 0.3, 2, gen), Tensor::normal({2, 3, 6}, 0, 1, gen),
                                     Tensor::normal({6}, 1, 0.5, gen), Tensor::normal({6}, 0, 0.5, gen)};
    const GradcheckResult r = gradcheck(
        "add_layer_norm_fused",
        [](const std::vector<Var>& x) { return add_layer_norm_fused(x[0], x[1], x[2], x[3], 1e-5); }, inputs);
    INFO(r.message);
    CHECK(r.ok);
    // The module's add_and_norm: the composite forward(x + r) unless fused; the two agree.
    LayerNorm norm(6);
    norm.weight.value().copy_(inputs[2]);
    norm.bias.value().copy_(inputs[3]);
    Tensor out[2];
    for (bool fused : {false, true}) {
        norm.fused = fused;
        out[fused] = norm.add_and_norm(Var(inputs[0]), Var(inputs[1])).value();
    }
    CHECK(allclose(out[1], out[0], 1e-12, 1e-12));
    CHECK(allclose(out[0], layer_norm(Var(inputs[0]) + Var(inputs[1]), norm.weight, norm.bias, 1e-5).value(), 0, 0));
}

TEST_CASE("nn gradcheck: Dropout in training mode (one fixed mask) and in eval mode") {
    Generator gen(6), mask_gen(0);
    Dropout drop(0.4, mask_gen);
    const Var x = input({3, 5}, gen);
    // The same mask at every evaluation: the generator is reseeded each time.
    const GradcheckResult r = gradcheck("Dropout (train)", [&] {
        mask_gen.manual_seed(7);
        return drop(x);
    }, {x});
    INFO(r.message);
    CHECK(r.ok);
    drop.eval();
    check_layer("Dropout (eval)", drop, x);
}

TEST_CASE("nn gradcheck: activation modules and a Sequential MLP") {
    Generator gen(7);
    const Var x(away_from_kinks({3, 4}), true);
    ReLU relu_layer;
    LeakyReLU leaky(0.2);
    Tanh tanh_layer;
    Sigmoid sigmoid_layer;
    GELU gelu_layer;
    check_layer("ReLU", relu_layer, x);
    check_layer("LeakyReLU", leaky, x);
    check_layer("Tanh", tanh_layer, x);
    check_layer("Sigmoid", sigmoid_layer, x);
    check_layer("GELU", gelu_layer, x);

    Sequential mlp;
    mlp.emplace<Linear>(4, 6, gen);
    mlp.emplace<Tanh>();
    mlp.emplace<LayerNorm>(6);
    mlp.emplace<Linear>(6, 2, gen);
    check_layer("Sequential", mlp, input({5, 4}, gen));
}

TEST_CASE("nn gradcheck: losses, every option") {
    Generator gen(8);
    const Tensor logits = Tensor::normal({2, 3, 5}, 0, 1.5, gen);
    const Tensor targets = Tensor::from({1, 4, -100, 0, 2, 4}, {2, 3});
    const Tensor weight = Tensor::from({0.5, 2, 1, 0, 1.5, 0.25}, {2, 3});
    using loss::Reduction;
    const std::vector<std::pair<std::string, loss::CrossEntropyOptions>> ce_cases{
        {"mean", {}},
        {"mean, smoothing", {.label_smoothing = 0.2}},
        {"mean (fast)", {.fast = true}},
        {"mean, smoothing (fast)", {.label_smoothing = 0.2, .fast = true}},
        {"sum", {.reduction = Reduction::sum}},
        {"none, smoothing", {.label_smoothing = 0.1, .reduction = Reduction::none}},
        {"weighted mean, smoothing", {.label_smoothing = 0.1, .weight = weight}},
    };
    for (const auto& c : ce_cases) {
        const loss::CrossEntropyOptions& options = c.second;
        const GradcheckResult r = gradcheck(
            "loss::cross_entropy " + c.first,
            [&](const std::vector<Var>& v) { return loss::cross_entropy(v[0], targets, options); }, {logits});
        INFO(r.message);
        CHECK_MESSAGE(r.ok, c.first);
    }

    const Tensor log_probs = log_softmax(logits, -1);
    const GradcheckResult nll = gradcheck(
        "loss::nll",
        [&](const std::vector<Var>& v) { return loss::nll(v[0], targets, {.weight = weight}); }, {log_probs});
    INFO(nll.message);
    CHECK(nll.ok);

    const Tensor a = Tensor::normal({3, 4}, 0, 1, gen), b = Tensor::normal({3, 4}, 0, 1, gen);
    for (Reduction red : {Reduction::mean, Reduction::sum, Reduction::none}) {
        const GradcheckResult mse = gradcheck(
            "loss::mse", [&](const std::vector<Var>& v) { return loss::mse(v[0], v[1], red); }, {a, b});
        INFO(mse.message);
        CHECK(mse.ok);
    }

    const Tensor probs = Tensor::uniform({3, 4}, 0, 1, gen), pos_weight = Tensor::uniform({4}, 0.5, 2, gen);
    const Tensor bce_logits = mul(Tensor::normal({3, 4}, 0, 1, gen), real(4));
    for (const loss::BceOptions& options :
         {loss::BceOptions{}, loss::BceOptions{.weight = pos_weight, .reduction = Reduction::sum}}) {
        const GradcheckResult bce = gradcheck(
            "loss::bce_with_logits",
            [&](const std::vector<Var>& v) { return loss::bce_with_logits(v[0], probs, options); }, {bce_logits});
        INFO(bce.message);
        CHECK(bce.ok);
    }
}

TEST_CASE("nn: cross_entropy's fast op and its default composition agree, value and gradient") {
    Generator gen(9);
    const Tensor logits = Tensor::normal({4, 6}, 0, 2, gen);
    const Tensor targets = Tensor::from({5, -100, 0, 3}, {4});
    for (real smoothing : {0.0, 0.15}) {
        Var fused_in(logits.clone(), true), composed_in(logits.clone(), true), weighed_in(logits.clone(), true);
        Var fused = loss::cross_entropy(fused_in, targets, {.label_smoothing = smoothing, .fast = true});
        Var composed = loss::cross_entropy(composed_in, targets, {.label_smoothing = smoothing});
        // A weight of ones: the composition too, with the same mean.
        Var weighed = loss::cross_entropy(weighed_in, targets,
                                          {.label_smoothing = smoothing, .weight = Tensor::ones({4})});
        CHECK(std::string(fused.node()->op) == "cross_entropy");  // the one op
        CHECK(std::string(composed.node()->op) != "cross_entropy");  // readable by default: the composition
        CHECK(fused.item() == doctest::Approx(composed.item()).epsilon(1e-12));
        CHECK(weighed.item() == doctest::Approx(composed.item()).epsilon(1e-12));
        fused.backward();
        composed.backward();
        weighed.backward();
        CHECK(allclose(fused_in.grad(), composed_in.grad(), 1e-12, 1e-12));
        CHECK(allclose(weighed_in.grad(), composed_in.grad(), 1e-12, 1e-12));
    }
}
