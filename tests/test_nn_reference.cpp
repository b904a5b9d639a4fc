// nn layers, losses and optimisers against PyTorch: the values and gradients
// in tests/fixtures/nn_reference.safetensors were computed by
// tests/fixtures/make_nn_reference.py (PyTorch 1.13, float32). Every gradient
// is of L = Σ y ⊙ R with the fixture's R ("<case>.upstream").
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "autograd/ops.hpp"
#include "nn/activation.hpp"
#include "nn/conv.hpp"
#include "nn/embedding.hpp"
#include "nn/layernorm.hpp"
#include "nn/linear.hpp"
#include "nn/loss.hpp"
#include "nn/optim.hpp"
#include "io/safetensors.hpp"
#include "tests/helpers.hpp"

using namespace attn;

namespace {

const SafetensorsFile& reference() {
    static const SafetensorsFile file = [] {
        return load_safetensors(testing::fixture_path("nn_reference.safetensors"));
    }();
    return file;
}

const Tensor& fixture(const std::string& name) { return reference().at(name); }
Var leaf(const std::string& name) { return Var(fixture(name).clone(), /*requires_grad=*/true); }

// |ours − PyTorch's| <= tol·(1 + |PyTorch's|) everywhere (float32 on both sides).
void check_close(const Tensor& ours, const std::string& name, double tol = 1e-5) {
    INFO(name);
    const Tensor& theirs = fixture(name);
    REQUIRE_MESSAGE(ours.defined(), name << ": no value (no gradient reached it?)");
    REQUIRE_MESSAGE(ours.shape() == theirs.shape(),
                    name << ": shape " << ours.shape().str() << ", PyTorch's " << theirs.shape().str());
    double worst = 0;
    int64_t at = 0;
    for (int64_t i = 0; i < ours.numel(); ++i) {
        const double excess = std::fabs(double(ours[i]) - theirs[i]) / (1 + std::fabs(double(theirs[i])));
        if (!(excess <= worst)) worst = excess, at = i;  // NaN counts as the worst
    }
    CHECK_MESSAGE(worst <= tol, name << ": flat index " << at << ": ours " << ours[at] << ", PyTorch's "
                                     << theirs[at] << " (relative difference " << worst << ")");
}

// backward of L = Σ y ⊙ R.
void backward_upstream(Var y, const std::string& c) { y.backward(fixture(c + ".upstream")); }

}  // namespace

TEST_CASE("nn reference: the fixture is small") {
    CHECK(std::filesystem::file_size(reference().path) < 200 * 1024);
    CHECK(reference().tensors.size() > 100);
}

// ---- layers ---------------------------------------------------------------------------

TEST_CASE("nn reference: Linear over B×n×in, value and gradients") {
    Generator gen(1);
    Linear layer(4, 5, gen);
    layer.load_state_dict({{"weight", fixture("linear.weight")}, {"bias", fixture("linear.bias")}});
    Var x = leaf("linear.x");
    Var y = layer(x);
    check_close(y.value(), "linear.y");
    backward_upstream(y, "linear");
    check_close(x.grad(), "linear.dx");
    check_close(layer.weight.grad(), "linear.dweight");
    check_close(layer.bias.grad(), "linear.dbias");
}

TEST_CASE("nn reference: Conv2d with stride (2, 1) and padding (1, 1)") {
    Generator gen(1);
    Conv2d conv(3, 4, {3, 2}, gen, /*stride=*/{2, 1}, /*padding=*/{1, 1});
    conv.load_state_dict({{"weight", fixture("conv.weight")}, {"bias", fixture("conv.bias")}});
    Var x = leaf("conv.x");
    Var y = conv(x);
    check_close(y.value(), "conv.y");
    backward_upstream(y, "conv");
    check_close(x.grad(), "conv.dx");
    check_close(conv.weight.grad(), "conv.dweight");
    check_close(conv.bias.grad(), "conv.dbias");
}

TEST_CASE("nn reference: MaxPool2d(2) and AvgPool2d(3, stride 2, padding 1)") {
    MaxPool2d max_pool(2);
    Var x = leaf("maxpool.x");
    Var y = max_pool(x);
    check_close(y.value(), "maxpool.y");
    backward_upstream(y, "maxpool");
    check_close(x.grad(), "maxpool.dx");

    AvgPool2d avg_pool(3, 2, 1);
    Var x2 = leaf("avgpool.x");
    Var y2 = avg_pool(x2);
    check_close(y2.value(), "avgpool.y");
    backward_upstream(y2, "avgpool");
    check_close(x2.grad(), "avgpool.dx");
}

TEST_CASE("nn reference: LayerNorm, fused and composed") {
    for (bool fused : {true, false}) {
        INFO("fused = " << fused);
        LayerNorm norm(6);
        norm.load_state_dict({{"weight", fixture("layernorm.weight")}, {"bias", fixture("layernorm.bias")}});
        Var x = leaf("layernorm.x");
        Var y = fused ? norm(x) : layer_norm(x, norm.weight, norm.bias, norm.eps());
        check_close(y.value(), "layernorm.y");
        backward_upstream(y, "layernorm");
        check_close(x.grad(), "layernorm.dx");
        check_close(norm.weight.grad(), "layernorm.dweight");
        check_close(norm.bias.grad(), "layernorm.dbias");
    }
}

TEST_CASE("nn reference: Embedding with padding_idx") {
    Generator gen(1);
    Embedding embed(6, 3, gen, /*padding_idx=*/1);
    embed.load_state_dict({{"weight", fixture("embedding.weight")}});
    Var y = embed(fixture("embedding.indices"));
    check_close(y.value(), "embedding.y");
    backward_upstream(y, "embedding");
    check_close(embed.weight.grad(), "embedding.dweight");
}

TEST_CASE("nn reference: activation modules") {
    ReLU relu_layer;
    LeakyReLU leaky(0.2f);
    Tanh tanh_layer;
    Sigmoid sigmoid_layer;
    GELU gelu_layer;
    const std::vector<std::pair<std::string, UnaryModule*>> layers{
        {"relu", &relu_layer}, {"leaky_relu", &leaky}, {"tanh", &tanh_layer},
        {"sigmoid", &sigmoid_layer}, {"gelu", &gelu_layer}};
    for (const auto& [name, layer] : layers) {
        Var x = leaf("act.x");
        Var y = (*layer)(x);
        check_close(y.value(), "act." + name + ".y");
        backward_upstream(y, "act." + name);
        check_close(x.grad(), "act." + name + ".dx");
    }
}

// ---- losses -------------------------------------------------------------------------------

TEST_CASE("nn reference: cross_entropy, every reduction, smoothing and weights") {
    // PyTorch's class weights are per-position weights w_r = class_weight[t_r].
    const Tensor& targets = fixture("loss.targets");
    Tensor weight = Tensor::zeros(targets.shape());
    for (int64_t r = 0; r < targets.numel(); ++r)
        if (targets[r] >= 0) weight[r] = fixture("loss.class_weight")[static_cast<int64_t>(targets[r])];

    using loss::Reduction;
    const std::vector<std::pair<std::string, loss::CrossEntropyOptions>> cases{
        {"ce_mean", {}},
        {"ce_mean", {.fast = true}},
        {"ce_sum", {.reduction = Reduction::sum}},
        {"ce_smooth", {.label_smoothing = 0.1f}},
        {"ce_smooth", {.label_smoothing = 0.1f, .fast = true}},
        {"ce_weighted", {.weight = weight}},
        {"ce_none", {.reduction = Reduction::none}},
    };
    for (const auto& [name, options] : cases) {
        Var logits = leaf("loss.logits");
        Var l = loss::cross_entropy(logits, targets, options);
        check_close(l.value(), "loss." + name + ".value");
        if (options.reduction == Reduction::none)
            backward_upstream(l, "loss." + name);
        else
            l.backward();
        check_close(logits.grad(), "loss." + name + ".dlogits");
    }
}

TEST_CASE("nn reference: nll, mse and bce_with_logits") {
    Var log_probs = leaf("loss.log_probs");
    Var l = loss::nll(log_probs, fixture("loss.targets"));
    check_close(l.value(), "loss.nll.value");
    l.backward();
    check_close(log_probs.grad(), "loss.nll.dlog_probs");

    for (auto [name, reduction] : {std::pair{"mean", loss::Reduction::mean}, std::pair{"sum", loss::Reduction::sum}}) {
        Var input = leaf("loss.mse.input");
        Var m = loss::mse(input, fixture("loss.mse.target"), reduction);
        check_close(m.value(), std::string("loss.mse_") + name + ".value");
        m.backward();
        check_close(input.grad(), std::string("loss.mse_") + name + ".dinput");
    }

    const std::vector<std::pair<std::string, loss::BceOptions>> cases{
        {"bce_mean", {}},
        {"bce_sum", {.reduction = loss::Reduction::sum}},
        {"bce_weighted", {.weight = fixture("loss.bce.weight")}},
    };
    for (const auto& [name, options] : cases) {
        Var logits = leaf("loss.bce.logits");
        Var b = loss::bce_with_logits(logits, fixture("loss.bce.targets"), options);
        check_close(b.value(), "loss." + name + ".value");
        b.backward();
        check_close(logits.grad(), "loss." + name + ".dlogits");
    }
}

// ---- optimisers ---------------------------------------------------------------------------

namespace {

// Three steps from optim.p0 with the gradients optim.g1..g3, each compared.
template <class Make>
void check_optimizer(const std::string& name, Make make) {
    Var p(fixture("optim.p0").clone(), true);
    auto opt = make(std::vector<Var>{p});
    for (int k = 1; k <= 3; ++k) {
        p.zero_grad();
        Var grad_source(fixture("optim.g" + std::to_string(k)));
        sum(p * grad_source).backward();  // ∂/∂p = g_k
        opt->step();
        check_close(p.value(), "optim." + name + ".p" + std::to_string(k), 2e-6);
    }
}

}  // namespace

TEST_CASE("nn reference: SGD plain, with momentum, dampening and Nesterov") {
    using P = std::vector<Var>;
    check_optimizer("sgd", [](P p) { return std::make_unique<SGD>(p, SGDOptions{.lr = 0.1}); });
    check_optimizer("sgd_momentum", [](P p) {
        return std::make_unique<SGD>(p, SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01});
    });
    check_optimizer("sgd_dampening", [](P p) {
        return std::make_unique<SGD>(p, SGDOptions{.lr = 0.1, .momentum = 0.9, .dampening = 0.5});
    });
    check_optimizer("sgd_nesterov", [](P p) {
        return std::make_unique<SGD>(p,
                                     SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true});
    });
}

TEST_CASE("nn reference: Adam (plain, L2 weight decay, amsgrad) and AdamW") {
    using P = std::vector<Var>;
    check_optimizer("adam", [](P p) { return std::make_unique<Adam>(p, AdamOptions{.lr = 0.01}); });
    check_optimizer("adam_l2", [](P p) {
        return std::make_unique<Adam>(p, AdamOptions{.lr = 0.01, .beta1 = 0.8, .beta2 = 0.99, .weight_decay = 0.1});
    });
    check_optimizer("adam_amsgrad",
                    [](P p) { return std::make_unique<Adam>(p, AdamOptions{.lr = 0.01, .amsgrad = true}); });
    check_optimizer("adamw", [](P p) {
        return std::make_unique<AdamW>(p, AdamOptions{.lr = 0.01, .weight_decay = 0.1});
    });
}

TEST_CASE("nn reference: clip_grad_norm_ with the 2-norm and the ∞-norm") {
    for (auto [name, max_norm, norm_type] : {std::tuple{"clip2", 1.0, 2.0}, std::tuple{"clipinf", 0.5, std::numeric_limits<double>::infinity()}}) {
        const std::string c = std::string("optim.") + name;
        Var a(Tensor::zeros({2, 3}), true), b(Tensor::zeros({4}), true), unused(Tensor::zeros({2}), true);
        sum(a * Var(fixture(c + ".ga"))).backward();
        sum(b * Var(fixture(c + ".gc"))).backward();
        const double total = clip_grad_norm_({a, b, unused}, max_norm, norm_type);  // unused: no gradient
        CHECK(total == doctest::Approx(fixture(c + ".total").item()).epsilon(1e-6));
        check_close(a.grad(), c + ".clipped_ga", 1e-6);
        check_close(b.grad(), c + ".clipped_gc", 1e-6);
        CHECK_FALSE(unused.grad().defined());
    }
}
