// Zoo tasks of the CNN attention family (CV, entries 61–66) and of the image
// pooling operators (RO 77, 78): one small CNN classifies Fashion-MNIST items
// (14×14, from the t10k file of `make data`; the built-in drawn shapes when
// data/ is missing), with one mechanism inserted after its last convolution.
// The same CNN without any mechanism is the baseline. docs/examples/zoo.md.
#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attention/pooling.hpp"
#include "attention/vision.hpp"
#include "examples/caption/caption_data.hpp"
#include "examples/common/svg.hpp"
#include "examples/zoo/zoo.hpp"
#include "nn/optim.hpp"
#include "tensor/ops.hpp"

namespace attn::zoo {
namespace {

// ---- data -----------------------------------------------------------------------------------

struct Images {
    Tensor train_x, test_x;  // N×1×14×14 in [0, 1]
    std::vector<int64_t> train_y, test_y;
    std::vector<std::string> classes;
    std::string source;
};

constexpr int64_t kTrain = 4000, kTest = 1000;

// 28×28 bytes → 14×14 reals: the mean of each 2×2 block.
void put_downsampled(Tensor& dst, int64_t index, const uint8_t* pixels) {
    for (int64_t i = 0; i < 14; ++i)
        for (int64_t j = 0; j < 14; ++j) {
            const int sum = pixels[(2 * i) * 28 + 2 * j] + pixels[(2 * i) * 28 + 2 * j + 1] +
                            pixels[(2 * i + 1) * 28 + 2 * j] + pixels[(2 * i + 1) * 28 + 2 * j + 1];
            dst[index * 196 + i * 14 + j] = real(sum) / (4 * 255);
        }
}

// Fashion-MNIST: training items 0..3999 (of the train file, or of t10k when
// only t10k is there), test items: the last 1000 of t10k.
std::optional<Images> load_fashion() {
    const std::string dir = "data/fashion-mnist";
    // (A path made from a std::string temporary here trips a false
    // -Warray-bounds in GCC 12's libstdc++ at -O2: the path is built from the
    // C string instead.)
    if (!std::filesystem::exists(std::filesystem::path((dir + "/t10k-images-idx3-ubyte").c_str()))) return std::nullopt;
    // One label per image, or an error naming both files (a short label
    // file was read past its end).
    const IdxDataset test = read_idx_dataset(dir + "/t10k-images-idx3-ubyte", dir + "/t10k-labels-idx1-ubyte");
    const bool has_train = std::filesystem::exists(dir + "/train-images-idx3-ubyte");
    const IdxDataset train =
        has_train ? read_idx_dataset(dir + "/train-images-idx3-ubyte", dir + "/train-labels-idx1-ubyte") : test;
    const IdxImages &test_images = test.images, &train_images = train.images;
    const std::vector<uint8_t> &test_labels = test.labels, &train_labels = train.labels;
    if (test_images.rows != 28 || test_images.cols != 28 || train_images.rows != 28 || train_images.cols != 28 ||
        test_images.count < kTrain + kTest || train_images.count < kTrain)
        return std::nullopt;
    Images d;
    d.train_x = Tensor::zeros({kTrain, 1, 14, 14});
    d.test_x = Tensor::zeros({kTest, 1, 14, 14});
    for (int64_t i = 0; i < kTrain; ++i) {
        put_downsampled(d.train_x, i, &train_images.pixels[static_cast<size_t>(i * 784)]);
        d.train_y.push_back(train_labels[static_cast<size_t>(i)]);
    }
    const int64_t first_test = test_images.count - kTest;
    for (int64_t i = 0; i < kTest; ++i) {
        put_downsampled(d.test_x, i, &test_images.pixels[static_cast<size_t>((first_test + i) * 784)]);
        d.test_y.push_back(test_labels[static_cast<size_t>(first_test + i)]);
    }
    d.classes = fashion_class_names();
    d.source = "Fashion-MNIST";
    return d;
}

// The fallback: one drawn shape per 14×14 image, jittered, with noise.
Images draw_shapes(Generator& gen) {
    Images d;
    d.classes = shape_names();
    const auto K = static_cast<int64_t>(d.classes.size());
    auto fill = [&](Tensor& x, std::vector<int64_t>& y, int64_t n) {
        x = Tensor::zeros({n, 1, 14, 14});
        for (int64_t i = 0; i < n; ++i) {
            Tensor image = Tensor::zeros({14, 14});
            const auto shape = static_cast<int64_t>(gen.randint(static_cast<uint64_t>(K)));
            draw_shape(image, shape, gen.uniform(5, 9), gen.uniform(5, 9), gen.uniform(3.5, 5.5), gen.uniform(0.6, 1));
            for (int64_t p = 0; p < 196; ++p) x[i * 196 + p] = std::clamp(image[p] + 0.05 * gen.normal(), 0.0, 1.0);
            y.push_back(shape);
        }
    };
    fill(d.train_x, d.train_y, kTrain);
    fill(d.test_x, d.test_y, kTest);
    d.source = "built-in shapes (data/fashion-mnist missing: run make data)";
    return d;
}

Images load_images(Generator& gen) {
    if (auto d = load_fashion()) return *d;
    return draw_shapes(gen);
}

// ---- the model ------------------------------------------------------------------------------

enum class Block { none, se, cbam, danet, pyramid, stochastic, spp };

// conv 3×3 (1→8), ReLU, 2×2 pool → 8×7×7; conv 3×3 (8→16), ReLU → 16×7×7;
// the block; global mean pooling (or the block's own descriptor); Linear → classes.
struct FashionNet : Module {
    static constexpr int64_t C = 16;
    Block block;
    Generator& gen;
    Conv2d conv1, conv2;
    std::unique_ptr<SqueezeExcitation> se;
    std::unique_ptr<Cbam> cbam;
    std::unique_ptr<DanetPositionAttention> pam;
    std::unique_ptr<DanetChannelAttention> cam;
    std::unique_ptr<PyramidAggregationAttention> pyramid;
    std::unique_ptr<Linear> head;

    struct Out {
        Var logits;
        Var map;     // B×7×7 where the block has a spatial map
        Var gates;   // B×C (SE) or B×C×C (DANet's channel weights)
        Var pooled;  // the first layer's pooled map (stochastic pooling)
    };

    FashionNet(Block b, int64_t classes, Generator& g)
        : block(b), gen(g), conv1(1, 8, 3, g, 1, 1), conv2(8, C, 3, g, 1, 1) {
        register_module("conv1", conv1);
        register_module("conv2", conv2);
        int64_t features = C;
        if (b == Block::se) register_module("se", *(se = std::make_unique<SqueezeExcitation>(C, 4, g)));
        if (b == Block::cbam) register_module("cbam", *(cbam = std::make_unique<Cbam>(C, 4, g, 3)));
        if (b == Block::danet) {
            register_module("pam", *(pam = std::make_unique<DanetPositionAttention>(C, g)));
            register_module("cam", *(cam = std::make_unique<DanetChannelAttention>()));
        }
        if (b == Block::pyramid) {
            pyramid = std::make_unique<PyramidAggregationAttention>(C, 8, g, std::vector<int64_t>{1, 2},
                                                                   1, PyramidAggregate::concat);
            register_module("pyramid", *pyramid);
            features = C * 5;
        }
        if (b == Block::spp) features = C * (1 + 4 + 16);
        head = std::make_unique<Linear>(features, classes, g);
        register_module("head", *head);
    }

    Out forward(const Var& x) {
        Out out;
        Var h = relu(conv1.forward(x));
        if (block == Block::stochastic) {
            h = stochastic_pooling(h, 2, 0, gen, is_training());
            out.pooled = h;
        } else {
            h = max_pool2d(h, 2);
        }
        h = relu(conv2.forward(h));
        Var features;
        switch (block) {
            case Block::se: {
                const AttentionOutput o = se->forward(h);
                h = o.output, out.gates = o.weights;
                break;
            }
            case Block::cbam: {
                const CbamOutput o = cbam->forward(h);
                h = o.output, out.gates = o.channel_gates, out.map = reshape(o.spatial_map, {-1, 7, 7});
                break;
            }
            case Block::danet: {
                // DANet sums the two modules' outputs
                const AttentionOutput p = pam->forward(h), c = cam->forward(h);
                h = add(p.output, c.output);
                out.map = reshape(mean(p.weights, 1), {-1, 7, 7});  // how much each position is attended
                out.gates = c.weights;
                break;
            }
            case Block::pyramid: {
                const AttentionOutput o = pyramid->forward(h);
                features = mul(o.output, real(8));  // a unit-norm descriptor, scaled for the softmax
                out.map = o.weights;
                break;
            }
            case Block::spp: features = spatial_pyramid_pooling(h, {1, 2, 4}); break;
            default: break;
        }
        if (!features.defined()) features = mean(h, std::vector<int>{2, 3});
        out.logits = head->forward(features);
        return out;
    }
};

Tensor rows_of(const Tensor& x, const std::vector<int64_t>& idx) { return index_select(x, 0, idx); }

Tensor labels_of(const std::vector<int64_t>& y, const std::vector<int64_t>& idx) {
    Tensor t = Tensor::zeros({static_cast<int64_t>(idx.size())});
    for (size_t i = 0; i < idx.size(); ++i) t[static_cast<int64_t>(i)] = static_cast<real>(y[static_cast<size_t>(idx[i])]);
    return t;
}

struct Trained {
    double accuracy = 0;
    int64_t steps = 0;
};

Trained train(FashionNet& net, const Images& d, ZooContext& ctx, int64_t base_steps) {
    Adam opt(net.parameters(), AdamOptions{.lr = 3e-3});
    const int64_t steps = ctx.steps(base_steps);
    const int64_t batch = 32;
    net.train();
    for (int64_t s = 0; s < steps; ++s) {
        std::vector<int64_t> idx;
        for (int64_t i = 0; i < batch; ++i) idx.push_back(static_cast<int64_t>(ctx.gen.randint(kTrain)));
        opt.zero_grad();
        Var loss = cross_entropy(net.forward(Var(rows_of(d.train_x, idx))).logits, labels_of(d.train_y, idx));
        loss.backward();
        opt.step();
    }
    net.eval();
    NoGradGuard no_grad;
    int64_t correct = 0;
    for (int64_t start = 0; start < kTest; start += 250) {
        std::vector<int64_t> idx;
        for (int64_t i = start; i < std::min(start + 250, kTest); ++i) idx.push_back(i);
        const Tensor pred = argmax(net.forward(Var(rows_of(d.test_x, idx))).logits.value(), -1);
        for (size_t i = 0; i < idx.size(); ++i)
            correct += pred[static_cast<int64_t>(i)] == static_cast<real>(d.test_y[static_cast<size_t>(idx[i])]);
    }
    return {static_cast<double>(correct) / kTest, steps};
}

constexpr int64_t kSteps = 2500;

// The baseline (no block), trained once per run with the task's seed.
Baseline baseline(ZooContext& ctx, const Images& d) {
    static std::optional<double> accuracy;
    static int64_t seed = -1;
    if (!accuracy || seed != ctx.seed) {
        Generator g(static_cast<uint64_t>(ctx.seed) + 1000);
        FashionNet net(Block::none, static_cast<int64_t>(d.classes.size()), g);
        ZooContext own{g, ctx.seed, ctx.budget, ctx.report};
        accuracy = train(net, d, own, kSteps).accuracy;
        seed = ctx.seed;
    }
    return {"the same CNN without the block " + std::to_string(*accuracy).substr(0, 5), *accuracy};
}

// A few test images with a 7×7 map over them.
void overlays(ZooContext& ctx, const Images& d, FashionNet& net, const std::string& what) {
    std::vector<int64_t> idx = {0, 1, 2, 3, 4, 5};
    NoGradGuard no_grad;
    const FashionNet::Out o = net.forward(Var(rows_of(d.test_x, idx)));
    std::vector<std::string> svgs, captions;
    for (size_t i = 0; i < idx.size(); ++i) {
        const auto k = static_cast<int64_t>(i);
        const Tensor image = reshape(slice(d.test_x, 0, idx[i], idx[i] + 1), {14, 14});
        // minus its minimum, so the overlay shows where the map is higher
        Tensor map = reshape(slice(o.map.value(), 0, k, k + 1), {7, 7});
        map = add(map, -min(map).item());
        svgs.push_back(attention_overlay_svg(image, map, {.title = what}));
        captions.push_back(d.classes[static_cast<size_t>(d.test_y[i])]);
    }
    ctx.report.figure_row(svgs, captions);
    ctx.report.paragraph("The orange highlight is the " + what + " minus its minimum over the image, "
                         "scaled to its maximum.");
}

// Mean gates of the test images of each class: classes × C.
void gate_heatmap(ZooContext& ctx, const Images& d, FashionNet& net, const std::string& title) {
    const auto K = static_cast<int64_t>(d.classes.size());
    Tensor sums = Tensor::zeros({K, FashionNet::C});
    std::vector<int64_t> counts(static_cast<size_t>(K), 0), idx;
    for (int64_t i = 0; i < 500; ++i) idx.push_back(i);
    NoGradGuard no_grad;
    const Tensor gates = net.forward(Var(rows_of(d.test_x, idx))).gates.value();
    for (int64_t i = 0; i < 500; ++i) {
        const int64_t y = d.test_y[static_cast<size_t>(i)];
        ++counts[static_cast<size_t>(y)];
        for (int64_t c = 0; c < FashionNet::C; ++c) sums[y * FashionNet::C + c] += gates[i * FashionNet::C + c];
    }
    for (int64_t y = 0; y < K; ++y)
        for (int64_t c = 0; c < FashionNet::C; ++c)
            sums[y * FashionNet::C + c] /= std::max<int64_t>(1, counts[static_cast<size_t>(y)]);
    ctx.report.svg(heatmap_svg(sums, d.classes, {}, {.title = title, .x_label = "channel", .auto_range = true}));
}

ZooResult run(ZooContext& ctx, Block block, const std::string& name, double target) {
    const Images d = load_images(ctx.gen);
    const Baseline base = baseline(ctx, d);
    FashionNet net(block, static_cast<int64_t>(d.classes.size()), ctx.gen);
    const Trained t = train(net, d, ctx, kSteps);
    ctx.report.subsection(name + " on " + d.source);
    ctx.report.paragraph("A 2-layer CNN (8 and 16 channels, 14×14 input), " + std::to_string(t.steps) +
                         " Adam steps of 32 images from " + std::to_string(kTrain) + "; test accuracy " +
                         std::to_string(t.accuracy).substr(0, 5) + " on " + std::to_string(kTest) +
                         " held-out images; " + base.text + ".");
    switch (block) {
        case Block::se: gate_heatmap(ctx, d, net, "mean SE gate per class"); break;
        case Block::cbam:
            gate_heatmap(ctx, d, net, "mean CBAM channel gate per class");
            overlays(ctx, d, net, "CBAM spatial map");
            break;
        case Block::danet: {
            overlays(ctx, d, net, "PAM: attention received");
            NoGradGuard no_grad;
            const Tensor X = net.forward(Var(rows_of(d.test_x, {0}))).gates.value();
            ctx.report.svg(heatmap_svg(reshape(X, {FashionNet::C, FashionNet::C}), {}, {},
                                       {.title = "CAM channel weights X (image 0)", .x_label = "channel i",
                                        .y_label = "channel j", .auto_range = true}));
            break;
        }
        case Block::pyramid: overlays(ctx, d, net, "pyramid attention map"); break;
        case Block::stochastic: {
            NoGradGuard no_grad;
            const FashionNet::Out o = net.forward(Var(rows_of(d.test_x, {0, 1, 2})));
            std::vector<std::string> svgs;
            for (int64_t i = 0; i < 3; ++i) {
                const Tensor image = reshape(slice(d.test_x, 0, i, i + 1), {14, 14});
                const Tensor pooled = sum(reshape(slice(o.pooled.value(), 0, i, i + 1), {8, 7, 7}), 0);
                svgs.push_back(attention_overlay_svg(image, pooled, {.title = "test-mode pooled activity"}));
            }
            ctx.report.figure_row(svgs, {"", "", ""});
            break;
        }
        default: break;
    }
    return {"test accuracy (" + d.source + ")", t.accuracy, target, true, t.steps, base.text, base.value};
}

const ZooRegistration vision_tasks({
    {"CV", "squeeze_excitation", "shapes", "Fashion-MNIST items with an SE block after the last conv",
     [](ZooContext& ctx) { return run(ctx, Block::se, "squeeze_excitation", 0.65); }},
    {"CV", "cbam_channel_attention,cbam_spatial_attention", "shapes",
     "Fashion-MNIST items with a CBAM block (channel, then spatial) after the last conv",
     [](ZooContext& ctx) { return run(ctx, Block::cbam, "CBAM", 0.65); }},
    {"CV", "danet_position_attention,danet_channel_attention", "shapes",
     "Fashion-MNIST items with DANet's position and channel modules summed after the last conv",
     [](ZooContext& ctx) { return run(ctx, Block::danet, "DANet (PAM + CAM)", 0.70); }},
    {"CV", "pyramid_aggregation_attention", "shapes",
     "Fashion-MNIST items classified from the attention-weighted pyramid descriptor",
     [](ZooContext& ctx) { return run(ctx, Block::pyramid, "pyramid_aggregation_attention", 0.75); }},
    {"RO", "stochastic_pooling", "shapes", "Fashion-MNIST items with stochastic pooling after the first conv",
     [](ZooContext& ctx) { return run(ctx, Block::stochastic, "stochastic_pooling", 0.65); }},
    {"RO", "spatial_pyramid_pooling", "shapes", "Fashion-MNIST items classified from an SPP {1, 2, 4} descriptor",
     [](ZooContext& ctx) { return run(ctx, Block::spp, "spatial_pyramid_pooling", 0.78); }},
});

}  // namespace
}  // namespace attn::zoo
