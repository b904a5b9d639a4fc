// The zoo's sequence-variant tasks (catalog entries 54, 57–60):
//   sort    pointer_attention            output the permutation that sorts 6 numbers
//   stream  neural_transducer_attention  reverse each 4-token block of a stream, online
//   ifthen  latent_attention             the trigger is the word after "from"
//   span    area_attention               the digit sum of the marked run of 1–3 items
//   rating  dual_local_global_attention  a rating from a user's and an item's review
// docs/examples/zoo.md; targets in docs/attention/pointer.md, sequence_more.md and area.md.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "attention/alignments.hpp"
#include "attention/area.hpp"
#include "attention/pointer.hpp"
#include "attention/scores.hpp"
#include "attention/sequence_more.hpp"
#include "examples/common/svg.hpp"
#include "examples/zoo/zoo.hpp"
#include "nn/embedding.hpp"
#include "nn/linear.hpp"
#include "nn/loss.hpp"
#include "nn/optim.hpp"
#include "nn/rnn.hpp"
#include "nn/rnn_cell.hpp"
#include "tensor/ops.hpp"

using namespace attn;
using namespace attn::zoo;

namespace {

int64_t argmax_row(const Tensor& t, int64_t row, int64_t n) {
    int64_t best = 0;
    for (int64_t j = 1; j < n; ++j)
        if (t[row * n + j] > t[row * n + best]) best = j;
    return best;
}


// Rows of x B×n×h picked by index (one per batch row) → B×h
Var pick_rows(const Var& x, const std::vector<int64_t>& index) {
    const int64_t B = x.size(0), h = x.size(2);
    Tensor idx = Tensor::empty(Shape{B, 1, h});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t k = 0; k < h; ++k) idx.at({b, 0, k}) = real(index[static_cast<size_t>(b)]);
    return reshape(gather(x, 1, idx), {B, h});
}

// ---- sort: pointer_attention ------------------------------------------------------------------
// A Pointer Network: the encoder embeds each number, a GRU decoder reads the
// number it pointed at last, and pointer attention with a "not chosen yet"
// mask points at the next one.
struct Sorter : Module {
    static constexpr int64_t h = 32;
    Linear embed;
    GRUCell decoder;
    PointerAttention pointer;
    Var start;
    explicit Sorter(Generator& gen) : embed(1, h, gen), decoder(h, h, gen), pointer(h, h, h, gen) {
        register_module("embed", embed);
        register_module("decoder", decoder);
        register_module("pointer", pointer);
        start = register_parameter("start", Tensor::zeros(Shape{1, h}));
    }
    // x B×n; chosen: teacher forcing (targets) or greedy (empty) → p B×n×n, picks
    Var run(const Tensor& x, const Tensor& targets, std::vector<std::vector<int64_t>>* picks) {
        const int64_t B = x.size(0), n = x.size(1);
        const Var e = tanh(embed.forward(Var(x.reshape(Shape{B, n, 1}))));  // B×n×h
        const Var projected = pointer.project(e);
        Var state = expand(start, Shape{B, h}), input = state;
        Tensor keep = Tensor::ones(Shape{B, 1, n});
        std::vector<Var> steps;
        picks->assign(static_cast<size_t>(B), {});
        for (int64_t i = 0; i < n; ++i) {
            state = decoder.forward(input, state);
            const Var p = masked_softmax(pointer.scores(unsqueeze(state, 1), projected), keep.clone());  // B×1×n (a copy: keep changes below)
            steps.push_back(p);
            std::vector<int64_t> chosen(static_cast<size_t>(B));
            for (int64_t b = 0; b < B; ++b) {
                chosen[static_cast<size_t>(b)] =
                    targets.defined() ? static_cast<int64_t>(targets.at({b, i})) : argmax_row(p.value(), b, n);
                keep.at({b, 0, chosen[static_cast<size_t>(b)]}) = 0;  // cannot be chosen again
                (*picks)[static_cast<size_t>(b)].push_back(chosen[static_cast<size_t>(b)]);
            }
            input = pick_rows(e, chosen);
        }
        return concat(steps, 1);
    }
};

void sort_batch(Generator& gen, int64_t B, int64_t n, Tensor* x, Tensor* order) {
    *x = Tensor::uniform(Shape{B, n}, 0, 1, gen);
    *order = Tensor::empty(Shape{B, n});
    for (int64_t b = 0; b < B; ++b) {
        std::vector<int64_t> idx(static_cast<size_t>(n));
        std::iota(idx.begin(), idx.end(), 0);
        std::sort(idx.begin(), idx.end(), [&](int64_t i, int64_t j) { return x->at({b, i}) < x->at({b, j}); });
        for (int64_t i = 0; i < n; ++i) order->at({b, i}) = real(idx[static_cast<size_t>(i)]);
    }
}

ZooResult train_sort(ZooContext& ctx) {
    const int64_t n = 6, B = 64, steps = ctx.steps(1500);
    Sorter model(ctx.gen);
    Adam opt(model.parameters(), {.lr = 3e-3});
    std::vector<std::vector<int64_t>> picks;
    for (int64_t s = 0; s < steps; ++s) {
        Tensor x, order;
        sort_batch(ctx.gen, B, n, &x, &order);
        const Var p = model.run(x, order, &picks);
        Var loss = neg(mean(categorical_log_prob(p, order)));
        opt.zero_grad();
        loss.backward();
        opt.step();
    }
    Generator test_gen(static_cast<uint64_t>(ctx.seed) + 1000);
    Tensor x, order;
    sort_batch(test_gen, 500, n, &x, &order);
    NoGradGuard no_grad;
    const Var p = model.run(x, Tensor(), &picks);
    int64_t exact = 0;
    for (int64_t b = 0; b < 500; ++b) {
        bool ok = true;
        for (int64_t i = 0; i < n; ++i) ok = ok && picks[static_cast<size_t>(b)][static_cast<size_t>(i)] == order.at({b, i});
        exact += ok ? 1 : 0;
    }
    std::vector<std::string> steps_l, inputs_l;
    for (int64_t i = 0; i < n; ++i) steps_l.push_back("step " + std::to_string(i + 1));
    for (int64_t j = 0; j < n; ++j) inputs_l.push_back(fmt(x.at({0, j})));
    ctx.report.subsection("sort: pointer_attention");
    ctx.report.paragraph("Pointer attention over 6 numbers; row i is p(C_i = j): the decoder points at the inputs "
                         "in increasing order (greedy decoding, already chosen positions masked).");
    ctx.report.figure_row({heatmap_svg(slice(p.value(), 0, 0, 1).reshape(Shape{n, n}), steps_l, inputs_l)},
                          {"test sequence 1: pointer distribution per step"});
    return {"exact-sequence accuracy (n = 6)", static_cast<double>(exact) / 500, 0.80, true, steps,
            "input order unchanged 1/720 = 0.001"};
}

// ---- stream: neural_transducer_attention ---------------------------------------------------------
// A stream of 12 tokens arrives in blocks of 4; for each block the transducer
// emits the block reversed, then <e>, before reading the next block.
struct Transducer : Module {
    static constexpr int64_t V = 6, W = 4, h = 32, EOB = V, START = V + 1;
    Embedding tokens, frame_pos, out_tokens, count;
    GRU encoder;
    GRUCell decoder;
    NeuralTransducerAttention attention;
    Linear out;
    explicit Transducer(Generator& gen)
        : tokens(V, h, gen), frame_pos(W, h, gen), out_tokens(V + 2, h, gen), count(W + 1, h, gen),
          encoder(h, h, gen), decoder(3 * h, h, gen),
          attention(std::make_unique<AdditiveScore>(h, h, h, gen), W), out(2 * h, V + 1, gen) {
        for (auto [name, m] : std::vector<std::pair<const char*, Module*>>{
                 {"tokens", &tokens}, {"frame_pos", &frame_pos}, {"out_tokens", &out_tokens}, {"count", &count},
                 {"encoder", &encoder}, {"decoder", &decoder}, {"attention", &attention}, {"out", &out}})
            register_module(name, *m);
    }
    // The causal encoder: token + position-in-block embeddings, a GRU      B×T×h
    Var encode(const Tensor& x) {
        const int64_t T = x.size(1);
        Tensor pos = Tensor::empty(Shape{1, T});
        for (int64_t t = 0; t < T; ++t) pos[t] = real(t % W);
        return encoder.forward(add(tokens.forward(x), frame_pos.forward(pos))).output;
    }
    // One decoder step: previous output token and the count emitted in this block
    struct Step {
        Var state, logits, weights;
    };
    Step step(const Var& frames, int64_t block, const Var& state, const Tensor& prev, const Tensor& k, const Var& ctx) {
        const Var input = concat({out_tokens.forward(prev), count.forward(k), ctx}, 1);
        const Var s = decoder.forward(input, state);
        const AttentionOutput a = attention.forward(frames, block, unsqueeze(s, 1));
        const Var c = squeeze(a.output, 1);
        return {s, out.forward(concat({s, c}, 1)), squeeze(a.weights, 1)};
    }
};

Tensor stream_targets(const Tensor& x) {  // per block: reversed tokens, then <e>
    const int64_t B = x.size(0), T = x.size(1), W = Transducer::W;
    Tensor y = Tensor::empty(Shape{B, T / W * (W + 1)});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t blk = 0; blk < T / W; ++blk) {
            for (int64_t k = 0; k < W; ++k) y.at({b, blk * (W + 1) + k}) = x.at({b, blk * W + W - 1 - k});
            y.at({b, blk * (W + 1) + W}) = real(Transducer::EOB);
        }
    return y;
}

ZooResult train_stream(ZooContext& ctx) {
    const int64_t T = 12, B = 32, W = Transducer::W, h = Transducer::h, steps = ctx.steps(600);
    Transducer model(ctx.gen);
    Adam opt(model.parameters(), {.lr = 3e-3});
    auto batch = [&](Generator& gen, int64_t n) {
        Tensor x = Tensor::empty(Shape{n, T});
        for (int64_t i = 0; i < x.numel(); ++i) x[i] = real(gen.randint(Transducer::V));
        return x;
    };
    for (int64_t s = 0; s < steps; ++s) {
        const Tensor x = batch(ctx.gen, B), y = stream_targets(x);
        const Var frames = model.encode(x);
        Var state = Var(Tensor::zeros(Shape{B, h})), c = Var(Tensor::zeros(Shape{B, h}));
        Tensor prev = Tensor::full(Shape{B}, real(Transducer::START));
        std::vector<Var> logits;
        for (int64_t blk = 0; blk < T / W; ++blk)
            for (int64_t k = 0; k <= W; ++k) {
                const auto st = model.step(frames, blk, state, prev, Tensor::full(Shape{B}, real(k)), c);
                state = st.state, logits.push_back(unsqueeze(st.logits, 1));
                c = squeeze(attend(unsqueeze(st.weights, 1), model.attention.block_frames(frames, blk)), 1);
                prev = slice(y, 1, blk * (W + 1) + k, blk * (W + 1) + k + 1).reshape(Shape{B});
            }
        Var loss = cross_entropy(concat(logits, 1), y);
        opt.zero_grad();
        loss.backward();
        opt.step();
    }
    // greedy, online: per block, emit until <e> (at most W + 2 tokens)
    Generator test_gen(static_cast<uint64_t>(ctx.seed) + 2000);
    const int64_t N = 300;
    const Tensor x = batch(test_gen, N), y = stream_targets(x);
    NoGradGuard no_grad;
    const Var frames = model.encode(x);
    int64_t exact = 0;
    Tensor picture = Tensor::zeros(Shape{T / W * (W + 1), T});
    std::vector<std::string> rows, cols;
    for (int64_t t = 0; t < T; ++t) cols.push_back(std::to_string(static_cast<int64_t>(x.at({0, t}))));
    for (int64_t b = 0; b < N; ++b) {
        const Var fb(slice(frames.value(), 0, b, b + 1));
        Var state = Var(Tensor::zeros(Shape{1, h})), c = Var(Tensor::zeros(Shape{1, h}));
        Tensor prev = Tensor::full(Shape{1}, real(Transducer::START));
        std::vector<int64_t> emitted;
        for (int64_t blk = 0; blk < T / W; ++blk)
            for (int64_t k = 0; k < W + 2; ++k) {
                const auto st = model.step(fb, blk, state, prev, Tensor::full(Shape{1}, real(std::min(k, W))), c);
                const int64_t tok = argmax_row(st.logits.value(), 0, Transducer::V + 1);
                if (b == 0 && static_cast<int64_t>(rows.size()) < picture.size(0)) {
                    for (int64_t j = 0; j < W; ++j) picture.at({static_cast<int64_t>(rows.size()), blk * W + j}) = st.weights.value()[j];
                    rows.push_back(tok == Transducer::EOB ? "<e>" : std::to_string(tok));
                }
                state = st.state, emitted.push_back(tok);
                c = squeeze(attend(unsqueeze(st.weights, 1), model.attention.block_frames(fb, blk)), 1);
                prev = Tensor::full(Shape{1}, real(tok));
                if (tok == Transducer::EOB) break;
            }
        bool ok = static_cast<int64_t>(emitted.size()) == y.size(1);
        for (int64_t i = 0; ok && i < y.size(1); ++i) ok = emitted[static_cast<size_t>(i)] == y.at({b, i});
        exact += ok ? 1 : 0;
    }
    picture = slice(picture, 0, 0, static_cast<int64_t>(rows.size()));
    ctx.report.subsection("stream: neural_transducer_attention");
    ctx.report.paragraph("The transducer reads a 12-token stream in blocks of 4 and, after each block, emits it "
                         "reversed and <e>. Rows: emitted tokens (greedy); columns: the input stream. Attention "
                         "never leaves the current block.");
    ctx.report.figure_row({heatmap_svg(picture, rows, cols)}, {"test stream 1"});
    return {"exact output accuracy (greedy, online)", static_cast<double>(exact) / N, 0.90, true, steps,
            "chance ≈ 0"};
}

// ---- ifthen: latent_attention ---------------------------------------------------------------------
// Templated recipes of 8 tokens: "from X" names the trigger channel, "to Y" the
// action channel, in any order among filler words. The label is X: the word
// after the cue "from". A bag of words sees X and Y but not which is which.
constexpr int64_t kChannels = 6, kFrom = 6, kTo = 7, kFillers = 6, kVocab = 14, kJ = 8;

void recipe_batch(Generator& gen, int64_t B, Tensor* x, Tensor* y) {
    *x = Tensor::empty(Shape{B, kJ});
    *y = Tensor::empty(Shape{B});
    for (int64_t b = 0; b < B; ++b) {
        for (int64_t j = 0; j < kJ; ++j) x->at({b, j}) = real(kFrom + 2 + static_cast<int64_t>(gen.randint(kFillers)));
        // two non-overlapping (cue, channel) pairs at random slots 0, 2, 4 or 6
        const int64_t p1 = 2 * static_cast<int64_t>(gen.randint(4));
        int64_t p2 = 2 * static_cast<int64_t>(gen.randint(3));
        if (p2 >= p1) p2 += 2;
        const int64_t c1 = static_cast<int64_t>(gen.randint(kChannels));
        const int64_t c2 = (c1 + 1 + static_cast<int64_t>(gen.randint(kChannels - 1))) % kChannels;
        x->at({b, p1}) = kFrom, x->at({b, p1 + 1}) = real(c1);
        x->at({b, p2}) = kTo, x->at({b, p2 + 1}) = real(c2);
        y->at({b}) = real(c1);
    }
}

struct RecipeModel : Module {
    static constexpr int64_t d = 16;
    Embedding e1, e2, e3, pos;
    LatentAttention latent;
    Linear classify;
    explicit RecipeModel(Generator& gen)
        : e1(kVocab, d, gen), e2(kVocab, d, gen), e3(kVocab, d, gen), pos(kJ, d, gen), latent(d, kJ, gen),
          classify(d, kChannels, gen) {
        for (auto [name, m] : std::vector<std::pair<const char*, Module*>>{
                 {"e1", &e1}, {"e2", &e2}, {"e3", &e3}, {"pos", &pos}, {"latent", &latent}, {"classify", &classify}})
            register_module(name, *m);
    }
    // D_1, D_3: token embeddings; D_2 also knows the position (so a column of A can say "the next word")
    LatentAttention::Output forward(const Tensor& x) {
        const Var D2 = add(e2.forward(x), pos.forward(Tensor::arange(kJ).reshape(Shape{1, kJ})));
        return latent.forward(e1.forward(x), D2, e3.forward(x));
    }
};

// The baseline: mean of the token embeddings, then the same classifier.
struct BagOfWords : Module {
    Embedding e;
    Linear classify;
    explicit BagOfWords(Generator& gen) : e(kVocab, RecipeModel::d, gen), classify(RecipeModel::d, kChannels, gen) {
        register_module("e", e);
        register_module("classify", classify);
    }
    Var logits(const Tensor& x) { return classify.forward(mean(e.forward(x), 1)); }
};

ZooResult train_ifthen(ZooContext& ctx) {
    const int64_t B = 64, steps = ctx.steps(800);
    RecipeModel model(ctx.gen);
    BagOfWords bag(ctx.gen);
    Adam opt(model.parameters(), {.lr = 1e-2});
    Adam bag_opt(bag.parameters(), {.lr = 1e-2});
    for (int64_t s = 0; s < steps; ++s) {
        Tensor x, y;
        recipe_batch(ctx.gen, B, &x, &y);
        Var loss = cross_entropy(model.classify.forward(model.forward(x).output), y);
        opt.zero_grad();
        loss.backward();
        opt.step();
        Var bag_loss = cross_entropy(bag.logits(x), y);
        bag_opt.zero_grad();
        bag_loss.backward();
        bag_opt.step();
    }
    Generator test_gen(static_cast<uint64_t>(ctx.seed) + 3000);
    Tensor x, y;
    recipe_batch(test_gen, 1000, &x, &y);
    NoGradGuard no_grad;
    const auto out = model.forward(x);
    const double acc = accuracy(model.classify.forward(out.output).value(), y);
    const double bag_acc = accuracy(bag.logits(x).value(), y);
    ctx.report.subsection("ifthen: latent_attention");
    ctx.report.paragraph("The trigger is the channel word after \"from\". Top of each pair: the latent weights l "
                         "(which words are cues); below: the effective weights w = A l (where they point).");
    const char* names[kVocab] = {"gmail", "dropbox", "twitter", "slack", "lights", "sms", "from", "to",
                                 "my", "new", "the", "save", "post", "any"};
    for (int64_t b = 0; b < 3; ++b) {
        std::vector<std::string> words;
        std::vector<double> l, w;
        for (int64_t j = 0; j < kJ; ++j) {
            words.push_back(names[static_cast<int64_t>(x.at({b, j}))]);
            l.push_back(out.latent.value().at({b, j}));
            w.push_back(out.weights.value().at({b, j}));
        }
        ctx.report.highlighted_text(words, l);
        ctx.report.highlighted_text(words, w);
    }
    return {"test accuracy (6 channels)", acc, 0.95, true, steps, "bag of words " + fmt(bag_acc), bag_acc};
}

// ---- span: area_attention -----------------------------------------------------------------------
// 5–10 items (padded to 10), each a digit 0–4 with a marker bit; one run of
// 1–3 adjacent items is marked. The label is the digit sum of the marked run (0–12). The area
// whose key says "all marked, and as wide as possible" holds the answer in its
// summed value; single-item attention can only average.
constexpr int64_t kItems = 10, kDigits = 5, kSums = 13;

void span_batch(Generator& gen, int64_t B, Tensor* x, Tensor* y, Tensor* mask) {
    *x = Tensor::zeros(Shape{B, kItems});
    *y = Tensor::empty(Shape{B});
    *mask = Tensor::zeros(Shape{B, kItems});
    for (int64_t b = 0; b < B; ++b) {
        const int64_t n = 5 + static_cast<int64_t>(gen.randint(kItems - 4));  // 5..10 real items, then padding
        const int64_t length = 1 + static_cast<int64_t>(gen.randint(3));
        const int64_t start = static_cast<int64_t>(gen.randint(static_cast<uint64_t>(n - length + 1)));
        int64_t total = 0;
        for (int64_t i = 0; i < n; ++i) {
            const int64_t digit = static_cast<int64_t>(gen.randint(kDigits));
            const bool marked = i >= start && i < start + length;
            x->at({b, i}) = real((marked ? kDigits : 0) + digit);
            mask->at({b, i}) = 1;
            total += marked ? digit : 0;
        }
        y->at({b}) = real(total);
    }
}

struct SpanModel : Module {
    static constexpr int64_t d = 16;
    Embedding keys, values;
    Var query;
    AreaAttention area;
    Linear hidden, out;
    SpanModel(Generator& gen, int64_t max_width, bool rich)
        : keys(2 * kDigits, d, gen), values(2 * kDigits, d, gen),
          area({.max_width = max_width, .rich_keys = rich, .dim = d}, gen), hidden(d, 32, gen), out(32, kSums, gen) {
        register_module("keys", keys);
        register_module("values", values);
        query = register_parameter("query", Tensor::normal(Shape{1, 1, d}, 0, 1, gen));
        register_module("area", area);
        register_module("hidden", hidden);
        register_module("out", out);
    }
    AreaAttention::Output attend_areas(const Tensor& x, const Tensor& mask) {
        const Var q = expand(query, Shape{x.size(0), 1, d});
        return area.forward(q, keys.forward(x), values.forward(x), mask);
    }
    Var logits(const AreaAttention::Output& a) {
        return out.forward(relu(hidden.forward(squeeze(a.output, 1))));
    }
};

std::pair<double, std::unique_ptr<SpanModel>> fit_span(ZooContext& ctx, int64_t max_width, bool rich, int64_t steps) {
    auto model = std::make_unique<SpanModel>(ctx.gen, max_width, rich);
    Adam opt(model->parameters(), {.lr = 5e-3});
    for (int64_t s = 0; s < steps; ++s) {
        Tensor x, y, mask;
        span_batch(ctx.gen, 64, &x, &y, &mask);
        Var loss = cross_entropy(model->logits(model->attend_areas(x, mask)), y);
        opt.zero_grad();
        loss.backward();
        opt.step();
    }
    Generator test_gen(static_cast<uint64_t>(ctx.seed) + 4000);
    Tensor x, y, mask;
    span_batch(test_gen, 1000, &x, &y, &mask);
    NoGradGuard no_grad;
    return {accuracy(model->logits(model->attend_areas(x, mask)).value(), y), std::move(model)};
}

ZooResult train_span(ZooContext& ctx) {
    const int64_t steps = ctx.steps(1000);
    auto [acc, model] = fit_span(ctx, 3, true, steps);
    const double single = fit_span(ctx, 1, false, steps).first;
    Generator show_gen(static_cast<uint64_t>(ctx.seed) + 4001);
    Tensor x, y, mask;
    span_batch(show_gen, 1, &x, &y, &mask);
    NoGradGuard no_grad;
    const auto a = model->attend_areas(x, mask);
    Tensor grid = Tensor::zeros(Shape{3, kItems});  // rows: area width, columns: first item
    for (size_t r = 0; r < a.areas.size(); ++r)
        grid.at({a.areas[r].width - 1, a.areas[r].left}) = a.weights.value()[static_cast<int64_t>(r)];
    std::vector<std::string> cols;
    for (int64_t i = 0; i < kItems; ++i) {
        const int64_t t = static_cast<int64_t>(x[i]);
        cols.push_back(mask[i] == 0 ? "·" : (t >= kDigits ? "*" : "") + std::to_string(t % kDigits));
    }
    ctx.report.subsection("span: area_attention");
    ctx.report.paragraph("Area attention with rich keys over spans of 1–3 items; the label is the digit sum of the "
                         "marked run (marked items shown with *). Cell (w, i): the weight of the span of width w "
                         "starting at item i. Sum of this example: " + std::to_string(static_cast<int64_t>(y[0])) + ".");
    ctx.report.figure_row({heatmap_svg(grid, {"width 1", "width 2", "width 3"}, cols)}, {"weights over areas"});
    return {"test accuracy (13 sums)", acc, 0.90, true, steps, "single-item attention (A_w = 1) " + fmt(single), single};
}

// ---- rating: dual_local_global_attention ----------------------------------------------------------
// A user's review mentions the aspects they care about (4 aspects, each twice
// if cared about) among filler words; an item's review the aspects it offers.
// The rating is the number of shared aspects, 0–4.
constexpr int64_t kAspects = 4, kReviewWords = 16, kReviewLength = 12;

void review_batch(Generator& gen, int64_t B, Tensor* users, Tensor* items, Tensor* rating) {
    *users = Tensor::empty(Shape{B, kReviewLength});
    *items = Tensor::empty(Shape{B, kReviewLength});
    *rating = Tensor::zeros(Shape{B, 1});
    for (int64_t b = 0; b < B; ++b) {
        std::vector<int> likes(kAspects), offers(kAspects);
        for (int64_t k = 0; k < kAspects; ++k) {
            likes[static_cast<size_t>(k)] = static_cast<int>(gen.randint(2));
            offers[static_cast<size_t>(k)] = static_cast<int>(gen.randint(2));
            rating->at({b, 0}) += real(likes[static_cast<size_t>(k)] * offers[static_cast<size_t>(k)]);
        }
        for (auto [doc, has] : {std::pair{users, &likes}, std::pair{items, &offers}}) {
            std::vector<int64_t> words;
            for (int64_t k = 0; k < kAspects; ++k)
                if ((*has)[static_cast<size_t>(k)]) words.insert(words.end(), {k, k});
            while (static_cast<int64_t>(words.size()) < kReviewLength)
                words.push_back(kAspects + static_cast<int64_t>(gen.randint(kReviewWords - kAspects)));
            for (int64_t i = kReviewLength - 1; i > 0; --i)
                std::swap(words[static_cast<size_t>(i)], words[gen.randint(static_cast<uint64_t>(i + 1))]);
            for (int64_t i = 0; i < kReviewLength; ++i) doc->at({b, i}) = real(words[static_cast<size_t>(i)]);
        }
    }
}

struct RatingModel : Module {
    static constexpr int64_t d = 8;
    Embedding words;
    DualLocalGlobalAttention user, item;
    explicit RatingModel(Generator& gen)
        : words(kReviewWords, d, gen), user(kReviewLength, d, 8, 8, gen), item(kReviewLength, d, 8, 8, gen) {
        register_module("words", words);
        register_module("user", user);
        register_module("item", item);
    }
    // r̂ = z_uᵀ z_i                                              B×1
    Var predict(const Tensor& u, const Tensor& i) {
        return sum(mul(user.forward(words.forward(u)).output, item.forward(words.forward(i)).output), 1, true);
    }
};

ZooResult train_rating(ZooContext& ctx) {
    const int64_t steps = ctx.steps(800);
    RatingModel model(ctx.gen);
    Adam opt(model.parameters(), {.lr = 5e-3});
    for (int64_t s = 0; s < steps; ++s) {
        Tensor u, i, r;
        review_batch(ctx.gen, 32, &u, &i, &r);
        Var loss = loss::mse(model.predict(u, i), r);
        opt.zero_grad();
        loss.backward();
        opt.step();
    }
    Generator test_gen(static_cast<uint64_t>(ctx.seed) + 5000);
    Tensor u, i, r;
    review_batch(test_gen, 1000, &u, &i, &r);
    NoGradGuard no_grad;
    const Tensor pred = model.predict(u, i).value();
    double se = 0, se_mean = 0;  // the mean rating is 1 (4 aspects × ¼)
    for (int64_t b = 0; b < 1000; ++b) {
        se += (pred[b] - r[b]) * (pred[b] - r[b]);
        se_mean += (1.0 - r[b]) * (1.0 - r[b]);
    }
    const double rmse = std::sqrt(se / 1000), rmse_mean = std::sqrt(se_mean / 1000);
    const auto att = model.user.forward(model.words.forward(slice(u, 0, 0, 1)));
    std::vector<std::string> words;
    std::vector<double> s;
    const char* names[kReviewWords] = {"battery", "screen", "price", "camera", "the", "a", "it", "is",
                                       "and", "was", "my", "this", "very", "for", "with", "so"};
    for (int64_t k = 0; k < kReviewLength; ++k) {
        words.push_back(names[static_cast<int64_t>(u[k])]);
        s.push_back(att.local_scores.value()[k]);
    }
    ctx.report.subsection("rating: dual_local_global_attention");
    ctx.report.paragraph("D-Attn's local attention scores s_i on a test user's review (the aspect words are the "
                         "first four of the vocabulary); global gate g = " + fmt(att.global_gate.value()[0]) + ".");
    ctx.report.highlighted_text(words, s);
    return {"test RMSE (ratings 0–4)", rmse, 0.35, false, steps, "predict the mean rating: RMSE " + fmt(rmse_mean), rmse_mean};
}

}  // namespace

static ZooRegistration sequence_tasks({
    {"SV", "pointer_attention", "sort", "output the permutation that sorts 6 numbers in [0, 1)", train_sort},
    {"SV", "neural_transducer_attention", "stream", "reverse each 4-token block of a 12-token stream, online",
     train_stream},
    {"SV", "latent_attention", "ifthen", "the trigger channel of a templated recipe is the word after \"from\"",
     train_ifthen},
    {"SV", "area_attention", "span", "the digit sum of the marked run of 1–3 adjacent items", train_span},
    {"SV", "dual_local_global_attention", "rating", "a rating from a user's and an item's synthetic review",
     train_rating},
});
