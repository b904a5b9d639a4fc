// examples/caption/caption_model: the Show-Attend-Tell captioner, its REINFORCE
// estimator, decoding and metrics.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "autograd/ops.hpp"
#include "examples/caption/caption_model.hpp"
#include "nn/optim.hpp"
#include "tensor/ops.hpp"
#include "tests/helpers.hpp"

using namespace attn;

namespace {
bool has_parameter(const Module& m, const std::string& name) {
    for (const auto& [n, v] : m.named_parameters())
        if (n == name) return true;
    return false;
}
}  // namespace

// ---- the soft captioner written out from Xu et al. (2015), §3, in plain loops ----------

namespace {

using attn::testing::affine, attn::testing::join, attn::testing::parameter_values, attn::testing::sigma, attn::testing::Vec;

// conv 3×3 (padding 1) → ReLU → max-pool 2×2 over maps C_in×H×W → C_out×H/2×W/2.
Vec conv_relu_pool(const Module& m, const std::string& conv, const Vec& x, int64_t C_in, int64_t H, int64_t W) {
    const Vec w = parameter_values(m, conv + ".weight"), bias = parameter_values(m, conv + ".bias");
    const auto C_out = static_cast<int64_t>(bias.size());
    Vec y(static_cast<size_t>(C_out * H * W));
    for (int64_t o = 0; o < C_out; ++o)
        for (int64_t i = 0; i < H; ++i)
            for (int64_t j = 0; j < W; ++j) {
                double s = bias[static_cast<size_t>(o)];
                for (int64_t c = 0; c < C_in; ++c)
                    for (int64_t di = -1; di <= 1; ++di)
                        for (int64_t dj = -1; dj <= 1; ++dj) {
                            if (i + di < 0 || i + di >= H || j + dj < 0 || j + dj >= W) continue;
                            s += w[static_cast<size_t>(((o * C_in + c) * 3 + di + 1) * 3 + dj + 1)] *
                                 x[static_cast<size_t>((c * H + i + di) * W + j + dj)];
                        }
                y[static_cast<size_t>((o * H + i) * W + j)] = std::max(0.0, s);
            }
    Vec pooled(static_cast<size_t>(C_out * (H / 2) * (W / 2)));
    for (int64_t o = 0; o < C_out; ++o)
        for (int64_t i = 0; i < H / 2; ++i)
            for (int64_t j = 0; j < W / 2; ++j) {
                double best = -1e300;
                for (int64_t di = 0; di < 2; ++di)
                    for (int64_t dj = 0; dj < 2; ++dj)
                        best = std::max(best, y[static_cast<size_t>((o * H + 2 * i + di) * W + 2 * j + dj)]);
                pooled[static_cast<size_t>((o * (H / 2) + i) * (W / 2) + j)] = best;
            }
    return pooled;
}

}  // namespace

TEST_CASE("caption model: soft attention's forward, and hard attention's in training and at test time, are Xu et al.'s model written out") {
    // Annotations a_i: two conv 3×3 → ReLU → pool 2×2 blocks, one row per grid
    // location, plus the location's sinusoidal code (rows then columns,
    // ω_k = 100^(−k/(D/4))). Then for each word, from h_0 = W_h ā + b, c_0 = W_c ā + b:
    //   e_ti = vᵀ tanh(W_a a_i + b_a + W_h h_{t−1}),  α_t = softmax(e_t),
    //   β_t = σ(w_βᵀ h_{t−1} + b_β),  ẑ_t = β_t Σ_i α_ti a_i,
    //   LSTM (gates i, f, g, o) on [E y_{t−1}; ẑ_t],  logits = W_o [h_t; ẑ_t; E y_{t−1}] + b_o.
    // Hard attention at test time (--hard-eval argmax) reads the one most
    // likely location instead: ẑ_t = β_t a_{argmax α_t}. In training it reads
    // a sampled location s_t, ẑ_t = β_t a_{s_t}, or with probability 1/2 the
    // expected context (§4.1); it reports log α_t[s_t] for REINFORCE (0 where
    // the expected context was used) and the entropy H(α_t) = −Σ_i α_ti log α_ti.
    // Where the model drew s_t is taken from it: which draws a generator
    // gives is the sampler's own test.
    // Every weight is redrawn from N(0, 0.5²), so that a transposed matrix, a
    // swapped gate or a part of the deep output left out changes the answer.
    enum class Mode { soft, hard_argmax, hard_sampled };
    for (const Mode mode : {Mode::soft, Mode::hard_argmax, Mode::hard_sampled}) {
    CAPTURE(static_cast<int>(mode));
    const bool hard = mode != Mode::soft, sampled = mode == Mode::hard_sampled;
    Generator gen(8);
    Captioner model({.channels1 = 2, .channels2 = 4, .hidden = 6, .embedding = 3, .attention = 5, .vocab = 5,
                     .hard = hard, .soft_probability = 0.5},
                    gen);
    for (auto& [name, p] : model.named_parameters()) {
        Tensor w = p.value();
        for (int64_t i = 0; i < w.numel(); ++i) w[i] = static_cast<real>(gen.normal(0, 0.5));
    }
    if (sampled) {
        model.train();
        model.seed_sampler(3);
    } else {
        model.eval();
    }
    model.set_hard_eval_expected(false);  // (soft attention ignores it)
    const int64_t B = 2, H = 8, W = 12, T = 4, D = 4, L = (H / 4) * (W / 4), d_h = 6, V = 5;
    const Tensor images = Tensor::uniform(Shape{B, 1, H, W}, 0, 1, gen);
    const Tensor captions = Tensor::from({2, 3, 4, 1, 4, 4, 2, 1}, Shape{B, T});
    Captioner::Forward f;
    {
        NoGradGuard no_grad;
        f = model.forward(images, captions);
    }
    const Vec E = parameter_values(model, "embed.weight"), W1 = parameter_values(model, "attention.score.W_1"),
              W2 = parameter_values(model, "attention.score.W_2"), ba = parameter_values(model, "attention.score.b"),
              v = parameter_values(model, "attention.score.w"), w_beta = parameter_values(model, "attention.w_beta"),
              b_beta = parameter_values(model, "attention.b_beta");
    const Vec no_bias(5, 0.0);
    bool drew_expected = false, drew_location = false;  // in training: both kinds of step are checked
    for (int64_t b = 0; b < B; ++b) {
        CAPTURE(b);
        const Vec pixels(images.data() + b * H * W, images.data() + (b + 1) * H * W);
        const Vec x1 = conv_relu_pool(model, "conv1", pixels, 1, H, W);
        const Vec x2 = conv_relu_pool(model, "conv2", x1, 2, H / 2, W / 2);  // D × H/4 × W/4
        std::vector<Vec> a(static_cast<size_t>(L), Vec(D));
        for (int64_t y = 0; y < H / 4; ++y)
            for (int64_t x = 0; x < W / 4; ++x) {
                Vec& ai = a[static_cast<size_t>(y * (W / 4) + x)];
                for (int64_t c = 0; c < D; ++c) ai[static_cast<size_t>(c)] = x2[static_cast<size_t>((c * (H / 4) + y) * (W / 4) + x)];
                for (int64_t k = 0; k < D / 4; ++k) {
                    const double omega = std::pow(100.0, -static_cast<double>(k) / (D / 4));
                    ai[static_cast<size_t>(2 * k)] += std::sin(static_cast<double>(y) * omega);
                    ai[static_cast<size_t>(2 * k + 1)] += std::cos(static_cast<double>(y) * omega);
                    ai[static_cast<size_t>(D / 2 + 2 * k)] += std::sin(static_cast<double>(x) * omega);
                    ai[static_cast<size_t>(D / 2 + 2 * k + 1)] += std::cos(static_cast<double>(x) * omega);
                }
            }
        Vec mean_a(D, 0);
        for (const Vec& ai : a)
            for (int64_t c = 0; c < D; ++c) mean_a[static_cast<size_t>(c)] += ai[static_cast<size_t>(c)] / static_cast<double>(L);
        Vec h = affine(parameter_values(model, "init_h.weight"), parameter_values(model, "init_h.bias"), mean_a);
        Vec c = affine(parameter_values(model, "init_c.weight"), parameter_values(model, "init_c.bias"), mean_a);
        int64_t previous = CaptionVocab::start;
        for (int64_t t = 0; t < T; ++t) {
            CAPTURE(t);
            const Vec wh = affine(W1, no_bias, h);
            Vec alpha(static_cast<size_t>(L));
            double top = -1e300, z_sum = 0;
            for (int64_t i = 0; i < L; ++i) {
                const Vec u = affine(W2, ba, a[static_cast<size_t>(i)]);
                double e = 0;
                for (size_t k = 0; k < u.size(); ++k) e += v[k] * std::tanh(u[k] + wh[k]);
                alpha[static_cast<size_t>(i)] = e, top = std::max(top, e);
            }
            for (double& e : alpha) z_sum += (e = std::exp(e - top));
            for (double& e : alpha) e /= z_sum;
            const double beta = sigma(affine(w_beta, b_beta, h)[0]);
            Vec z(D, 0);
            const bool expected = sampled && f.soft[b * T + t] == 1;  // this step drew the expected context
            if (!hard || expected) {
                for (int64_t i = 0; i < L; ++i)
                    for (int64_t k = 0; k < D; ++k)
                        z[static_cast<size_t>(k)] +=
                            beta * alpha[static_cast<size_t>(i)] * a[static_cast<size_t>(i)][static_cast<size_t>(k)];
            } else if (sampled) {
                const auto chosen = static_cast<size_t>(f.locations[b * T + t]);
                REQUIRE(chosen < static_cast<size_t>(L));
                for (int64_t k = 0; k < D; ++k) z[static_cast<size_t>(k)] = beta * a[chosen][static_cast<size_t>(k)];
            } else {
                const auto chosen = static_cast<size_t>(std::max_element(alpha.begin(), alpha.end()) - alpha.begin());
                Vec others(alpha);
                others[chosen] = -1;
                // far from a tie, so that rounding cannot choose another location
                REQUIRE(alpha[chosen] - *std::max_element(others.begin(), others.end()) > 1e-3);
                for (int64_t k = 0; k < D; ++k) z[static_cast<size_t>(k)] = beta * a[chosen][static_cast<size_t>(k)];
            }
            const Vec ey(E.begin() + previous * 3, E.begin() + (previous + 1) * 3);
            const Vec gates_x = affine(parameter_values(model, "cell.weight_ih"), parameter_values(model, "cell.bias_ih"), join(ey, z));
            const Vec gates_h = affine(parameter_values(model, "cell.weight_hh"), parameter_values(model, "cell.bias_hh"), h);
            Vec h_next(d_h), c_next(d_h);
            for (int64_t j = 0; j < d_h; ++j) {
                const auto g = [&](int64_t gate) {
                    return gates_x[static_cast<size_t>(gate * d_h + j)] + gates_h[static_cast<size_t>(gate * d_h + j)];
                };
                const double in = sigma(g(0)), forget = sigma(g(1)), cell = std::tanh(g(2)), out = sigma(g(3));
                c_next[static_cast<size_t>(j)] = forget * c[static_cast<size_t>(j)] + in * cell;
                h_next[static_cast<size_t>(j)] = out * std::tanh(c_next[static_cast<size_t>(j)]);
            }
            h = h_next, c = c_next;
            const Vec logits = affine(parameter_values(model, "out.weight"), parameter_values(model, "out.bias"), join(join(h, z), ey));
            for (int64_t k = 0; k < V; ++k)
                CHECK(f.logits.value()[(b * T + t) * V + k] == doctest::Approx(logits[static_cast<size_t>(k)]).epsilon(1e-4));
            for (int64_t i = 0; i < L; ++i)
                CHECK(f.alphas.value()[(b * T + t) * L + i] == doctest::Approx(alpha[static_cast<size_t>(i)]).epsilon(1e-4));
            if (sampled) {
                double entropy = 0;
                for (const double p : alpha) entropy -= p * std::log(p);
                const double log_prob = expected ? 0.0 : std::log(alpha[static_cast<size_t>(f.locations[b * T + t])]);
                CHECK(f.log_probs.value()[b * T + t] == doctest::Approx(log_prob).epsilon(1e-4));
                CHECK(f.entropies.value()[b * T + t] == doctest::Approx(entropy).epsilon(1e-4));
                (expected ? drew_expected : drew_location) = true;
            }
            previous = static_cast<int64_t>(captions[b * T + t]);
        }
    }
    if (sampled) CHECK((drew_expected && drew_location));
    }
}

TEST_CASE("caption model: the W4 sizes give 496,017 parameters") {
    Generator gen(1);
    Captioner model(CaptionerConfig{}, gen);
    CHECK(model.num_parameters() == 496017);
    Captioner hard(CaptionerConfig{.hard = true}, gen);
    CHECK(hard.num_parameters() == 496017);
    CHECK(!has_parameter(model, "context.0.weight"));  // W4's names are unchanged
}

TEST_CASE("caption model: context layers widen the encoder, same annotation shape") {
    Generator gen(1);
    Captioner model(CaptionerConfig{.context_layers = 2}, gen);
    CHECK(model.num_parameters() == 496017 + 2 * (9 * 64 * 64 + 64));  // two 3×3 convs D→D with bias
    CHECK(has_parameter(model, "context.0.weight"));
    CHECK(has_parameter(model, "context.2.bias"));  // Sequential names: 0 conv, 1 ReLU, 2 conv, 3 ReLU
    CHECK(model.encode(Var(Tensor::zeros(Shape{2, 1, 16, 24}))).shape() == Shape{2, 4 * 6, 64});
    // Grid location x sees pixels 4x−3 … 4x+6 without context layers (two 3×3
    // convs, two pools: 10 pixels), and each layer adds one location (4 pixels)
    // on either side. So the top-left pixel reaches location (0, 2) only
    // through the context layers.
    for (int64_t layers : {0, 2}) {
        Generator g(5);
        Captioner m(CaptionerConfig{.position_code = false, .context_layers = layers}, g);
        Tensor image = Tensor::zeros(Shape{1, 1, 32, 32});
        const Tensor before = m.encode(Var(image)).value().clone();
        image[0] = 1;  // the top-left pixel
        const Tensor after = m.encode(Var(image)).value();
        double change = 0;
        for (int64_t c = 0; c < 64; ++c) change += std::abs(after[2 * 64 + c] - before[2 * 64 + c]);
        if (layers == 0) CHECK(change == 0);
        else CHECK(change > 0);
    }
    CHECK_THROWS_WITH_AS(Captioner(CaptionerConfig{.context_layers = -1}, gen),
                         "Captioner: context_layers must be ≥ 0, got -1", std::invalid_argument);
}

TEST_CASE("caption model: forward shapes, soft and hard") {
    Generator gen(2);
    const CaptionDataset d = make_shape_dataset({.rows = 1, .cols = 2, .cell_size = 8, .num_shapes = 2}, 3, 1, 1);
    const CaptionBatch batch = make_caption_batch(d.train, {0, 1, 2});
    for (bool hard : {false, true}) {
        Captioner model({.channels1 = 2, .channels2 = 4, .hidden = 6, .embedding = 3, .attention = 5, .vocab = 4,
                         .hard = hard}, gen);
        const Captioner::Forward f = model.forward(batch.images, batch.captions);
        CHECK(f.logits.shape() == Shape{3, 3, 4});
        CHECK(f.alphas.shape() == Shape{3, 3, 8});  // 2×4 grid over 8×16 pixels
        for (int64_t r = 0; r < 9; ++r) {
            real total = 0;
            for (int64_t l = 0; l < 8; ++l) total += f.alphas.value()[r * 8 + l];
            CHECK(total == doctest::Approx(1.0).epsilon(1e-5));
        }
        CHECK(f.log_probs.defined() == hard);
        MovingAverageBaseline baseline;
        CaptionLoss loss = caption_loss(f, batch.captions, {}, hard, baseline);
        CHECK(std::isfinite(loss.total.item()));
        if (hard) {
            CHECK(loss.mean_reward < 0);  // a log-likelihood
            REQUIRE(baseline.values.size() == 1);
            CHECK(baseline.values[0] == doctest::Approx(loss.mean_reward));  // the first batch sets b
            CHECK(loss.baseline == doctest::Approx(loss.mean_reward));
            CHECK(loss.entropy > 0);
        }
        loss.total.backward();
        CHECK(model.attention.score.W_2.grad().defined());
    }
}

TEST_CASE("caption model: set_fast switches the convolutions, the cell, the linear layers and the score") {
    Generator g(4);
    Captioner m({.channels1 = 3, .channels2 = 4, .hidden = 6, .embedding = 3, .attention = 5, .vocab = 4,
                 .context_layers = 1},
                g);
    const auto check = [&](bool on) {
        CHECK((m.conv1.fused == on && m.conv2.fused == on && m.cell.fused == on));
        CHECK(dynamic_cast<Conv2d&>(m.context[0]).fused == on);
        CHECK((m.init_h.fused == on && m.init_c.fused == on && m.out.fused == on));
        CHECK(m.attention.score.fused == on);
    };
    check(false);  // readable by default
    m.set_fast(true);
    check(true);
    m.set_fast(false);
    check(false);
}

TEST_CASE("caption model: the fast paths give the composed model's values and gradients") {
    // set_fast(true): conv2d_fused, the fused LSTM gates, additive_score_fused
    // and each max-pool before its ReLU. Random images and biases leave many
    // 2×2 windows whose values are all negative, where ReLU-then-pool and
    // pool-then-ReLU pick different positions (with zero gradient in both).
    const CaptionDataset d = make_shape_dataset({.rows = 1, .cols = 2, .cell_size = 8, .num_shapes = 2}, 3, 1, 1);
    const CaptionBatch batch = make_caption_batch(d.train, {0, 1, 2});
    Generator noise(9);
    Tensor images = batch.images.clone();
    for (int64_t i = 0; i < images.numel(); ++i) images[i] += static_cast<real>(noise.normal());
    const CaptionerConfig config{.channels1 = 3, .channels2 = 4, .hidden = 6, .embedding = 3, .attention = 5,
                                 .vocab = 4};
    Generator g1(4), g2(4);
    Captioner composed(config, g1), fused(config, g2);
    fused.set_fast(true);
    for (Captioner* m : {&composed, &fused}) {  // biases that leave some windows all negative
        for (int64_t c = 0; c < 3; ++c) m->conv1.bias.value()[c] = c == 0 ? real(-0.5) : real(0.1);
        m->conv2.bias.value()[1] = -1;
    }
    const Captioner::Forward a = composed.forward(images, batch.captions);
    const Captioner::Forward b = fused.forward(images, batch.captions);
    for (int64_t i = 0; i < a.logits.numel(); ++i)
        CHECK(b.logits.value()[i] == doctest::Approx(a.logits.value()[i]).epsilon(1e-4));
    for (int64_t i = 0; i < a.alphas.numel(); ++i)
        CHECK(b.alphas.value()[i] == doctest::Approx(a.alphas.value()[i]).epsilon(1e-4));
    // a loss that weighs every logit differently, so each gradient is specific
    Tensor weights = Tensor::empty(a.logits.shape());
    for (int64_t i = 0; i < weights.numel(); ++i) weights[i] = static_cast<real>(noise.normal());
    sum(a.logits * Var(weights)).backward();
    sum(b.logits * Var(weights)).backward();
    attn::testing::check_same_gradients(composed, fused);
    int64_t zero_in_pool = 0;
    // the windows the comment promises: conv1's first channel has all-negative ones
    const Var pre = composed.conv1.forward(Var(images));
    const int64_t H = pre.size(2), W = pre.size(3);
    for (int64_t n = 0; n < pre.size(0); ++n)
        for (int64_t y = 0; y + 1 < H; y += 2)
            for (int64_t x = 0; x + 1 < W; x += 2) {
                const real* p = pre.value().data() + n * pre.size(1) * H * W;  // channel 0
                if (p[y * W + x] <= 0 && p[y * W + x + 1] <= 0 && p[(y + 1) * W + x] <= 0 &&
                    p[(y + 1) * W + x + 1] <= 0)
                    ++zero_in_pool;
            }
    CHECK(zero_in_pool > 0);
}

TEST_CASE("caption model: hard attention in evaluation reads the expected context or the argmax location") {
    Generator gen(3);
    const CaptionDataset d = make_shape_dataset({.rows = 1, .cols = 2, .cell_size = 8, .num_shapes = 2}, 3, 1, 1);
    const CaptionBatch batch = make_caption_batch(d.train, {0, 1, 2});
    const CaptionerConfig small{.channels1 = 2, .channels2 = 4, .hidden = 6, .embedding = 3, .attention = 5, .vocab = 4};
    Captioner soft(small, gen);
    CaptionerConfig hard_config = small;
    hard_config.hard = true;
    Captioner hard(hard_config, gen);
    // the same weights in both
    auto hard_params = hard.named_parameters();
    for (const auto& [name, v] : soft.named_parameters()) {
        bool copied = false;
        for (auto& [hard_name, hv] : hard_params)
            if (hard_name == name) {
                Tensor target = hv.value();
                std::copy(v.value().data(), v.value().data() + v.value().numel(), target.data());
                copied = true;
            }
        REQUIRE(copied);
    }
    soft.eval();
    hard.eval();
    const Tensor soft_logits = soft.forward(batch.images, batch.captions).logits.value();
    hard.set_hard_eval_expected(true);
    const Tensor expected_logits = hard.forward(batch.images, batch.captions).logits.value();
    for (int64_t i = 0; i < soft_logits.numel(); ++i) CHECK(expected_logits[i] == soft_logits[i]);
    hard.set_hard_eval_expected(false);
    const Tensor argmax_logits = hard.forward(batch.images, batch.captions).logits.value();
    const Tensor argmax_again = hard.forward(batch.images, batch.captions).logits.value();
    double difference = 0;
    for (int64_t i = 0; i < soft_logits.numel(); ++i) {
        CHECK(argmax_again[i] == argmax_logits[i]);  // no sampling in evaluation
        difference += std::abs(argmax_logits[i] - soft_logits[i]);
    }
    CHECK(difference > 1e-4);  // one location is not the mean of all

    // Decoding runs in evaluation mode whatever mode it is called in (a hard
    // model in training mode would sample), and leaves the mode as it was.
    const Decoded beam_eval = beam_search(hard, d.train[0].image, 2, 3);  // hard is in eval mode here
    hard.train();
    for (int rep = 0; rep < 5; ++rep) {  // in training mode each call would draw new locations
        const Decoded beam_train = beam_search(hard, d.train[0].image, 2, 3);
        CHECK(beam_train.words == beam_eval.words);
        CHECK(beam_train.log_prob == beam_eval.log_prob);
    }
    const std::vector<Decoded> greedy_a = greedy_decode(hard, batch.images, 3), greedy_b = greedy_decode(hard, batch.images, 3);
    for (size_t i = 0; i < greedy_a.size(); ++i) CHECK(greedy_a[i].alphas == greedy_b[i].alphas);
    CHECK(hard.is_training());
    hard.eval();
    CHECK(greedy_decode(hard, batch.images, 3)[0].alphas == greedy_a[0].alphas);  // the same as in eval mode
    CHECK(!hard.is_training());
}

TEST_CASE("caption model: Gumbel straight-through reads one location and trains the attention from the cross-entropy") {
    Generator gen(4);
    const CaptionDataset d = make_shape_dataset({.rows = 1, .cols = 2, .cell_size = 8, .num_shapes = 2}, 3, 1, 1);
    const CaptionBatch batch = make_caption_batch(d.train, {0, 1, 2});
    const CaptionerConfig small{.channels1 = 2, .channels2 = 4, .hidden = 6, .embedding = 3, .attention = 5, .vocab = 4};
    CaptionerConfig gumbel_config = small, hard_config = small;
    gumbel_config.gumbel = true;
    gumbel_config.temperature = 0.5;
    hard_config.hard = true;
    hard_config.soft_probability = 0;  // every word samples
    CHECK_THROWS_AS(Captioner(CaptionerConfig{.hard = true, .gumbel = true}, gen), std::invalid_argument);

    // The cross-entropy alone (no penalty, no REINFORCE): through a sampled
    // location it gives the attention's score no gradient; through the
    // straight-through estimator it does.
    const CaptionLossOptions ce_only{.penalty = 0, .entropy_bonus = 0, .reinforce_weight = 0};
    MovingAverageBaseline baseline;
    Captioner hard(hard_config, gen);
    hard.seed_sampler(5);
    caption_loss(hard.forward(batch.images, batch.captions), batch.captions, ce_only, true, baseline).total.backward();
    const Tensor hard_grad = hard.attention.score.W_1.grad();
    CHECK((!hard_grad.defined() || max(abs(hard_grad)).item() == 0));

    Captioner gumbel(gumbel_config, gen);
    gumbel.seed_sampler(5);
    const Captioner::Forward f = gumbel.forward(batch.images, batch.captions);
    CHECK(!f.log_probs.defined());  // nothing for REINFORCE
    caption_loss(f, batch.captions, ce_only, false, baseline).total.backward();
    CHECK(max(abs(gumbel.attention.score.W_1.grad())).item() > 0);

    // One location a step: the step's context is β_t times one annotation.
    const Var annotations = gumbel.encode(Var(batch.images));
    const auto memory = gumbel.attention.precompute(annotations);
    const Captioner::Step s = gumbel.step(memory, Tensor::full(Shape{3}, CaptionVocab::start), gumbel.initial_state(annotations));
    for (int64_t b = 0; b < 3; ++b) CHECK(s.location[b] >= 0);
    // In evaluation the location is argmax α_t: no draw, the same every time.
    gumbel.eval();
    gumbel.set_hard_eval_expected(false);
    const Captioner::Step e1 = gumbel.step(memory, Tensor::full(Shape{3}, CaptionVocab::start), gumbel.initial_state(annotations));
    const Captioner::Step e2 = gumbel.step(memory, Tensor::full(Shape{3}, CaptionVocab::start), gumbel.initial_state(annotations));
    const Tensor best = argmax(e1.alpha.value(), -1);
    for (int64_t b = 0; b < 3; ++b) {
        CHECK(e1.location[b] == best[b]);
        CHECK(e2.location[b] == e1.location[b]);
    }
}

TEST_CASE("caption model: a beam wide enough to keep every caption finds the best one, with and without length penalty") {
    // V = 4 (<start>, <end>, two words), T = 3: the 15 possible captions are
    // <end>; w <end>; w w' x (x any of the three; the third word ends it).
    // A beam of 16 prunes nothing, so beam search must return the caption
    // with the best score over all 15, computed here by teacher forcing.
    Generator gen(11);
    const CaptionDataset d = make_shape_dataset({.rows = 1, .cols = 2, .cell_size = 8, .num_shapes = 2}, 1, 1, 3);
    Captioner model({.channels1 = 2, .channels2 = 4, .hidden = 6, .embedding = 3, .attention = 5, .vocab = 4}, gen);
    for (const auto& [name, p] : model.named_parameters()) {  // weights large enough for uneven probabilities
        Tensor w = p.value();
        for (int64_t i = 0; i < w.numel(); ++i) w[i] *= 4;
    }
    model.eval();
    std::vector<std::vector<int64_t>> captions = {{1}, {2, 1}, {3, 1}};
    for (int64_t w1 : {2, 3})
        for (int64_t w2 : {2, 3})
            for (int64_t x : {1, 2, 3}) captions.push_back({w1, w2, x});
    const int64_t n = static_cast<int64_t>(captions.size()), T = 3;
    for (const CaptionExample& ex : d.test) {
        Tensor images = Tensor::empty(Shape{n, 1, 8, 16}), padded = Tensor::full(Shape{n, T}, 1);
        for (int64_t c = 0; c < n; ++c) {
            std::copy(ex.image.data(), ex.image.data() + 128, images.data() + c * 128);
            for (size_t t = 0; t < captions[static_cast<size_t>(c)].size(); ++t)
                padded[c * T + static_cast<int64_t>(t)] = static_cast<real>(captions[static_cast<size_t>(c)][t]);
        }
        const Tensor log_p = log_softmax(model.forward(images, padded).logits.value(), -1);  // n×T×V
        for (double penalty : {0.0, 1.0}) {
            double best = -1e300;
            size_t best_c = 0;
            for (size_t c = 0; c < captions.size(); ++c) {
                Decoded dc;
                dc.words = captions[c];
                for (size_t t = 0; t < captions[c].size(); ++t)
                    dc.log_prob += log_p[(static_cast<int64_t>(c) * T + static_cast<int64_t>(t)) * 4 + captions[c][t]];
                if (beam_score(dc, penalty) > best) best = beam_score(dc, penalty), best_c = c;
            }
            const Decoded found = beam_search(model, ex.image, 16, T, penalty);
            INFO("length penalty " << penalty);
            CHECK(found.words == captions[best_c]);
            CHECK(beam_score(found, penalty) == doctest::Approx(best).epsilon(1e-5));
        }
    }
    CHECK_THROWS_AS(beam_search(model, d.test[0].image, 2, T, -1), std::invalid_argument);
}

// The score-function estimator on a tiny categorical problem: s ~ softmax(θ)
// over K = 4 outcomes with rewards f(s). The exact gradient of J(θ) = Σ_k p_k f_k
// is ∂J/∂θ_j = p_j (f_j − J). REINFORCE's average of (f(s) − b) ∇ log p(s) over
// many samples must match it, with or without a baseline b (the baseline only
// changes the variance, not the expectation).
TEST_CASE("caption model: the REINFORCE gradient matches the exact expected gradient") {
    const std::vector<real> theta0 = {0.3f, -0.5f, 1.0f, 0.1f}, f = {1, -2, 0.5f, 3};
    const int64_t K = 4, N = 40000;
    // exact
    std::vector<double> p(K), exact(K);
    double z = 0, J = 0;
    for (int64_t k = 0; k < K; ++k) z += std::exp(theta0[static_cast<size_t>(k)]);
    for (int64_t k = 0; k < K; ++k) p[static_cast<size_t>(k)] = std::exp(theta0[static_cast<size_t>(k)]) / z;
    for (int64_t k = 0; k < K; ++k) J += p[static_cast<size_t>(k)] * f[static_cast<size_t>(k)];
    for (int64_t k = 0; k < K; ++k) exact[static_cast<size_t>(k)] = p[static_cast<size_t>(k)] * (f[static_cast<size_t>(k)] - J);

    for (double baseline : {0.0, 1.0, J}) {
        Generator gen(11);
        HardAlignment hard(gen);  // training mode: samples
        Var theta(Tensor::from(theta0, Shape{1, 1, K}), true);
        AlignmentInput in;
        in.scores = expand(theta, Shape{N, 1, K});  // N independent draws from the same θ
        const HardAlignment::Sample s = hard.sample(in);
        Tensor rewards = Tensor::empty(Shape{N});
        for (int64_t i = 0; i < N; ++i) rewards[i] = f[static_cast<size_t>(s.indices[i])];
        // loss = −mean[(R − b) log p(s)], so −∇loss estimates ∇J
        Tensor advantages = Tensor::empty(Shape{N, 1});
        for (int64_t i = 0; i < N; ++i) advantages[i] = rewards[i] - static_cast<real>(baseline);
        reinforce_loss(s.log_prob, advantages).backward();
        for (int64_t k = 0; k < K; ++k) {
            INFO("baseline " << baseline << ", θ_" << k);
            CHECK(-theta.grad()[k] == doctest::Approx(exact[static_cast<size_t>(k)]).epsilon(0).scale(0).epsilon(0.04));
        }
    }
}

// How the rewards credit each sampled location: the gradient of the loss
// with respect to log α_t[s_t] is −λ_r·A_bt / B, with A = reward − baseline. On
// the first batch the baseline is the batch mean of each credited reward.
TEST_CASE("caption model: the caption reward, the reward-to-go and the word reward credit the samples as documented") {
    const int64_t B = 2, T = 3, V = 4, L = 5;
    Generator gen(7);
    const Tensor logits = Tensor::normal(Shape{B, T, V}, 0, 1, gen);
    const Tensor captions = Tensor::from({1, 2, 3, 0, 3, 1}, Shape{B, T});
    const Tensor log_p = log_softmax(logits, -1);
    auto r = [&](int64_t b, int64_t t) { return static_cast<double>(log_p[(b * T + t) * V + static_cast<int64_t>(captions[b * T + t])]); };
    for (const auto& setting : {std::pair{CaptionReward::caption, 1.0}, std::pair{CaptionReward::to_go, 1.0},
                                std::pair{CaptionReward::caption, 0.25}, std::pair{CaptionReward::word, 0.5}}) {
        const CaptionReward kind = setting.first;  // named copies: lambdas below capture them
        const double weight = setting.second;
        INFO("reward " << static_cast<int>(kind) << " (0 caption, 1 to-go, 2 word), λ_r " << weight);
        Captioner::Forward f;
        f.logits = Var(logits);
        f.alphas = Var(Tensor::full(Shape{B, T, L}, 1.0 / L));
        f.log_probs = Var(Tensor::full(Shape{B, T}, -1.0), true);
        f.entropies = Var(Tensor::zeros(Shape{B, T}));
        MovingAverageBaseline baseline;
        caption_loss(f, captions, {.penalty = 0, .entropy_bonus = 0, .reinforce_weight = weight, .reward = kind}, true,
                     baseline).total.backward();
        // the expected reward of (b, t), and the baseline of column t (batch mean)
        auto reward = [&](int64_t b, int64_t t) {
            if (kind == CaptionReward::word) return r(b, t);
            double g = 0;
            for (int64_t u = kind == CaptionReward::to_go ? t : 0; u < T; ++u) g += r(b, u);
            return g;
        };
        for (int64_t b = 0; b < B; ++b)
            for (int64_t t = 0; t < T; ++t) {
                const double mean_t = (reward(0, t) + reward(1, t)) / 2;
                CHECK(f.log_probs.grad()[b * T + t] == doctest::Approx(-weight * (reward(b, t) - mean_t) / B).epsilon(1e-5));
            }
        CHECK(baseline.values.size() == (kind == CaptionReward::caption ? size_t(1) : size_t(T)));
        // the baseline survives a checkpoint's text form exactly
        CHECK(MovingAverageBaseline::parse(baseline.str()).values == baseline.values);
    }
}

// The hard captioner's loss, every term written out from its formula with
// every weight non-zero, over three batches so that the moving-average
// baseline's order shows (batch 1 uses b = R̄₀, batch 2 uses
// 0.9·R̄₀ + 0.1·R̄₁: the b of before the batch, then updated):
//   total = CE + λ Σ_b Σ_l (1 − Σ_t α_btl)² / B − λ_r·mean_b[(R_b − b) Σ_t log α_t[s_t]] − λ_e·mean_b[Σ_t H_bt]
// and the gradients that carry the learning signal: ∂total/∂log α_bt[s_t] =
// −λ_r (R_b − b)/B and ∂total/∂H_bt = −λ_e/B (the bonus rewards entropy).
TEST_CASE("caption model: the hard loss is its formula term by term, and the baseline is the one of before each batch") {
    const int64_t B = 2, T = 3, V = 4, L = 5;
    const double lambda = 0.7, lambda_e = 0.3, lambda_r = 0.5, momentum = 0.9;
    const Tensor captions = Tensor::from({1, 2, 3, 0, 3, 1}, Shape{B, T});
    Generator gen(29);
    MovingAverageBaseline baseline;
    std::vector<double> batch_means;  // R̄ of each batch so far
    for (int batch = 0; batch < 3; ++batch) {
        CAPTURE(batch);
        const Tensor logits = Tensor::normal(Shape{B, T, V}, 0, 1, gen);
        const Tensor alphas = softmax(Tensor::normal(Shape{B, T, L}, 0, 1, gen), -1);
        const Tensor sampled = Tensor::uniform(Shape{B, T}, -3, -0.5, gen);  // log α_t[s_t]
        const Tensor entropies = Tensor::uniform(Shape{B, T}, 0.2, 1.5, gen);
        Captioner::Forward f;
        f.logits = Var(logits);
        f.alphas = Var(alphas);
        f.log_probs = Var(sampled, true);
        f.entropies = Var(entropies, true);
        CaptionLoss got = caption_loss(
            f, captions, {.penalty = lambda, .entropy_bonus = lambda_e, .reinforce_weight = lambda_r}, true, baseline);
        got.total.backward();

        // by hand, in double
        double ce = 0, penalty = 0, reinforce = 0, entropy = 0;
        std::vector<double> R(B, 0);
        for (int64_t b = 0; b < B; ++b)
            for (int64_t t = 0; t < T; ++t) {
                double z = 0;
                for (int64_t v = 0; v < V; ++v) z += std::exp(static_cast<double>(logits[(b * T + t) * V + v]));
                const int64_t y = static_cast<int64_t>(captions[b * T + t]);
                const double log_p = logits[(b * T + t) * V + y] - std::log(z);
                ce -= log_p / (B * T);
                R[static_cast<size_t>(b)] += log_p;  // R_b, the caption's log-likelihood
                entropy += entropies[b * T + t] / static_cast<double>(B);
            }
        for (int64_t b = 0; b < B; ++b)
            for (int64_t l = 0; l < L; ++l) {
                double column = 0;
                for (int64_t t = 0; t < T; ++t) column += alphas[(b * T + t) * L + l];
                penalty += lambda * (1 - column) * (1 - column) / B;
            }
        const double mean_R = (R[0] + R[1]) / 2;
        double b_used = mean_R;  // the first batch: its own mean
        if (batch == 1) b_used = batch_means[0];
        if (batch == 2) b_used = momentum * batch_means[0] + (1 - momentum) * batch_means[1];
        batch_means.push_back(mean_R);
        for (int64_t b = 0; b < B; ++b) {
            double sum_log = 0;
            for (int64_t t = 0; t < T; ++t) sum_log += sampled[b * T + t];
            reinforce -= lambda_r * (R[static_cast<size_t>(b)] - b_used) * sum_log / B;
        }
        const double total = ce + penalty + reinforce - lambda_e * entropy;

        CHECK(got.cross_entropy == doctest::Approx(ce).epsilon(1e-5));
        CHECK(got.penalty == doctest::Approx(penalty).epsilon(1e-5));
        CHECK(got.baseline == doctest::Approx(b_used).epsilon(1e-5));
        CHECK(got.reinforce == doctest::Approx(reinforce).epsilon(1e-4));
        CHECK(got.entropy == doctest::Approx(entropy).epsilon(1e-5));
        CHECK(got.total.item() == doctest::Approx(total).epsilon(1e-4));
        for (int64_t b = 0; b < B; ++b)
            for (int64_t t = 0; t < T; ++t) {
                CAPTURE(b);
                CAPTURE(t);
                CHECK(f.log_probs.grad()[b * T + t] ==
                      doctest::Approx(-lambda_r * (R[static_cast<size_t>(b)] - b_used) / B).epsilon(1e-4));
                CHECK(f.entropies.grad()[b * T + t] == doctest::Approx(-lambda_e / B).epsilon(1e-5));
            }
    }
}

// --reward caption, then --resume --reward word once read past the end of the
// one-value baseline (AddressSanitizer: heap-buffer-overflow).
TEST_CASE("caption model: a baseline saved for another reward is refused before it is read") {
    const int64_t B = 2, T = 3, V = 4, L = 5;
    Generator gen(3);
    Captioner::Forward f;
    f.logits = Var(Tensor::normal(Shape{B, T, V}, 0, 1, gen));
    f.alphas = Var(Tensor::full(Shape{B, T, L}, 1.0 / L));
    f.log_probs = Var(Tensor::full(Shape{B, T}, -1.0), true);
    f.entropies = Var(Tensor::zeros(Shape{B, T}));
    const Tensor captions = Tensor::from({1, 2, 3, 0, 3, 1}, Shape{B, T});
    MovingAverageBaseline caption_baseline;
    caption_baseline.values = {-4.0};  // one value: --reward caption's
    CHECK_THROWS_WITH_AS(caption_loss(f, captions, {.reward = CaptionReward::word}, true, caption_baseline),
                         "caption_loss: the moving-average baseline holds 1 values for 3 credited positions (was it "
                         "saved with another --reward?)",
                         std::invalid_argument);
    CHECK_NOTHROW(caption_loss(f, captions, {.reward = CaptionReward::caption}, true, caption_baseline));
}

TEST_CASE("caption model: location_cell and the metrics on a hand-made case") {
    // a 4×4 grid over a 2×2 scene: location 5 = (1, 1) lies in cell 0, location 10 = (2, 2) in cell 3
    CHECK(location_cell(5, 4, 4, 2, 2) == 0);
    CHECK(location_cell(10, 4, 4, 2, 2) == 3);
    CHECK(location_cell(3, 4, 4, 2, 2) == 1);
    CHECK(location_cell(3, 2, 4, 1, 2) == 1);

    CaptionVocab vocab{{"<start>", "<end>", "a", "b"}};
    CaptionExample ex;
    ex.caption = {2, 3, 1};
    ex.cells = {0, 1, -1};
    auto one_hot_at = [](int64_t l) {
        std::vector<real> a(8, 0);
        a[static_cast<size_t>(l)] = 1;
        return a;
    };
    Decoded right{{2, 3, 1}, {one_hot_at(1), one_hot_at(6), one_hot_at(0)}, 0};  // 2×4 grid, 1×2 cells
    Decoded wrong{{2, 2, 1}, {one_hot_at(3), one_hot_at(7), one_hot_at(0)}, 0};
    const CaptionMetrics m = caption_metrics({right, wrong}, {&ex, &ex}, vocab, 2, 4, 1, 2);
    CHECK(m.word_accuracy == doctest::Approx(0.75));
    CHECK(m.exact == doctest::Approx(0.5));
    CHECK(m.localization == doctest::Approx(0.75));  // locations 1, 6, 3 → cells 0, 1, 1; 7 → cell 1 ✓
    CHECK(m.bleu[0] == doctest::Approx(0.75));
}

// A tiny captioner learns a two-cell task: an "x" or a "bar" in each of two
// cells side by side (two shapes a small CNN tells apart after soft pooling).
TEST_CASE("caption model: a tiny model learns a two-cell task; beam 1 agrees with greedy") {
    const CaptionDataset d = make_shape_dataset({.rows = 1, .cols = 2, .cell_size = 16, .num_shapes = 2, .first_shape = 6, .noise = 0.02},
                                                256, 1, 64);
    Generator gen(3);
    Captioner model({.channels1 = 8, .channels2 = 16, .hidden = 32, .embedding = 8, .attention = 8, .vocab = 4}, gen);
    Adam opt(model.named_parameters(), AdamOptions{.lr = 3e-3});
    MovingAverageBaseline baseline;
    for (int64_t step = 0; step < 300; ++step) {
        std::vector<int64_t> idx(32);
        std::iota(idx.begin(), idx.end(), (step * 32) % 256);
        const CaptionBatch b = make_caption_batch(d.train, idx);
        opt.zero_grad();
        caption_loss(model.forward(b.images, b.captions), b.captions, {.penalty = 0.1}, false, baseline).total.backward();
        opt.step();
    }
    model.eval();
    std::vector<int64_t> all(64);
    std::iota(all.begin(), all.end(), 0);
    const CaptionBatch test = make_caption_batch(d.test, all);
    const std::vector<Decoded> greedy = greedy_decode(model, test.images, 3);
    const CaptionMetrics m = caption_metrics(greedy, test.examples, d.vocab, 4, 8, 1, 2);
    MESSAGE("two-cell task: word accuracy " << m.word_accuracy << ", localization " << m.localization);
    CHECK(m.word_accuracy >= 0.9);

    for (int64_t i = 0; i < 4; ++i) {
        const Decoded beam1 = beam_search(model, d.test[static_cast<size_t>(i)].image, 1, 3);
        const Decoded& g = greedy[static_cast<size_t>(i)];
        REQUIRE(beam1.words.size() <= g.words.size());
        for (size_t t = 0; t < beam1.words.size(); ++t) CHECK(beam1.words[t] == g.words[t]);
        CHECK(beam1.log_prob == doctest::Approx(g.log_prob).epsilon(1e-4));
        const Decoded beam3 = beam_search(model, d.test[static_cast<size_t>(i)].image, 3, 3);
        CHECK(beam3.log_prob >= beam1.log_prob - 1e-5);
    }
}
