// The zoo's sentence-pair tasks (catalog entries 67–73):
//   pairs     abcnn1/2/3, decomposable, CoDA   is every word of B in A? (one task, trained once per mechanism)
//   segment2  cosnet_co_attention              segment the object two frames have in common
//   fewshot   can_cross_attention              does the query show the support's object? (1-shot)
// docs/examples/zoo.md; targets in docs/attention/sentence_pair.md.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "attention/query_types.hpp"
#include "attention/sentence_pair.hpp"
#include "examples/common/svg.hpp"
#include "examples/zoo/zoo.hpp"
#include "nn/embedding.hpp"
#include "nn/linear.hpp"
#include "nn/optim.hpp"
#include "tensor/ops.hpp"

using namespace attn;
using namespace attn::zoo;

namespace {


// ---- pairs ------------------------------------------------------------------------------------------
// A: 6 distinct words of 20 (ids 1..20; 0 pads). B: 3 or 4 of A's words in any
// order (label 1), or the same with one word swapped for a word not in A
// (label 0). Deciding needs every word of B matched against A: co-attention.
constexpr int64_t kVocab = 21, kLen = 6;

struct Pairs {
    Tensor a, b, mask_a, mask_b, y;
};

Pairs pairs_batch(Generator& gen, int64_t B) {
    Pairs p{Tensor::zeros(Shape{B, kLen}), Tensor::zeros(Shape{B, kLen}), Tensor::ones(Shape{B, kLen}),
            Tensor::zeros(Shape{B, kLen}), Tensor::empty(Shape{B})};
    for (int64_t i = 0; i < B; ++i) {
        std::vector<int64_t> words(kVocab - 1);
        for (int64_t w = 0; w < kVocab - 1; ++w) words[static_cast<size_t>(w)] = w + 1;
        for (int64_t k = 0; k < kVocab - 2; ++k)
            std::swap(words[static_cast<size_t>(k)], words[static_cast<size_t>(k + static_cast<int64_t>(gen.randint(static_cast<uint64_t>(kVocab - 1 - k))))]);
        for (int64_t j = 0; j < kLen; ++j) p.a.at({i, j}) = real(words[static_cast<size_t>(j)]);
        const int64_t lb = 3 + static_cast<int64_t>(gen.randint(2));
        std::vector<int64_t> pick{0, 1, 2, 3, 4, 5};  // B: lb of A's positions, in random order
        for (int64_t k = 0; k < kLen - 1; ++k)
            std::swap(pick[static_cast<size_t>(k)], pick[static_cast<size_t>(k + static_cast<int64_t>(gen.randint(static_cast<uint64_t>(kLen - k))))]);
        for (int64_t j = 0; j < lb; ++j) {
            p.b.at({i, j}) = real(words[static_cast<size_t>(pick[static_cast<size_t>(j)])]);
            p.mask_b.at({i, j}) = 1;
        }
        const bool positive = gen.randint(2) == 1;
        p.y[i] = positive ? 1 : 0;
        if (!positive) p.b.at({i, static_cast<int64_t>(gen.randint(static_cast<uint64_t>(lb)))}) = real(words[static_cast<size_t>(kLen + static_cast<int64_t>(gen.randint(kVocab - 1 - kLen)))]);
    }
    return p;
}

// Σ over real tokens / count: x B×s×d, mask B×s → B×d (ABCNN's all-ap)
Var masked_average(const Var& x, const Tensor& mask) { return squeeze(masked_mean(x, mask), 1); }

// What every pairs model provides: logits B×2, and a B-row attention picture.
struct PairModel : Module {
    virtual Var logits(const Pairs& p) = 0;
    virtual Tensor picture(const Pairs& p) = 0;  // for example 0: rows = B's words, columns = A's words
};

// The classifier shared by the models: [u; v; |u − v|; u ∘ v] → ReLU layer → 2
struct PairHead : Module {
    Linear hidden, out;
    PairHead(int64_t d, Generator& gen) : hidden(4 * d, 32, gen), out(32, 2, gen) {
        register_module("hidden", hidden);
        register_module("out", out);
    }
    Var forward(const Var& u, const Var& v) {
        return out.forward(relu(hidden.forward(concat({u, v, abs(sub(u, v)), mul(u, v)}, 1))));
    }
};

struct AbcnnModel : PairModel {
    static constexpr int64_t d = 16;
    Embedding embed;
    AbcnnLayer layer;
    PairHead head;
    AbcnnModel(AbcnnLayer::Kind kind, Generator& gen)
        : embed(kVocab, d, gen, 0), layer(kind, kLen, d, d, 3, gen), head(d, gen) {
        register_module("embed", embed);
        register_module("layer", layer);
        register_module("head", head);
    }
    AbcnnLayer::Output run(const Pairs& p) {
        return layer.forward(embed.forward(p.b), embed.forward(p.a), p.mask_b, p.mask_a);
    }
    Var logits(const Pairs& p) override {
        const auto out = run(p);
        return head.forward(masked_average(out.out0, p.mask_b), masked_average(out.out1, p.mask_a));
    }
    Tensor picture(const Pairs& p) override {
        const auto out = run(p);
        const Var A = out.input_attention.defined() ? out.input_attention : out.pooling_attention;
        return slice(slice(A.value(), 0, 0, 1), 1, 0, kLen).reshape(Shape{kLen, A.size(2)});
    }
};

struct DecomposableModel : PairModel {
    static constexpr int64_t d = 16;
    Embedding embed;
    DecomposableAttention model;
    explicit DecomposableModel(Generator& gen) : embed(kVocab, d, gen, 0), model(d, 32, 2, gen) {
        register_module("embed", embed);
        register_module("model", model);
    }
    Var logits(const Pairs& p) override {
        return model.forward(embed.forward(p.b), embed.forward(p.a), p.mask_b, p.mask_a).logits;
    }
    Tensor picture(const Pairs& p) override {
        const Var w = model.forward(embed.forward(p.b), embed.forward(p.a), p.mask_b, p.mask_a).weights_a;
        return slice(w.value(), 0, 0, 1).reshape(Shape{kLen, kLen});
    }
};

// CoDA as the attend step of a compare–aggregate model: B′ = Mᵀ A composes, for
// each word of B, what A adds or subtracts; G([b_j; a′_j]) is summed over B.
struct CodaModel : PairModel {
    static constexpr int64_t d = 16;
    Embedding embed;
    CompositionalDeAttention coda;
    Linear G1, G2;
    PairHead head;
    explicit CodaModel(Generator& gen)
        : embed(kVocab, d, gen, 0), coda(d, d, gen), G1(2 * d, d, gen), G2(d, d, gen), head(d, gen) {
        register_module("embed", embed);
        register_module("coda", coda);
        register_module("G1", G1);
        register_module("G2", G2);
        register_module("head", head);
    }
    Var logits(const Pairs& p) override {
        const Var b = embed.forward(p.b), a = embed.forward(p.a);
        const CodaOutput out = coda.forward(b, a, p.mask_b, p.mask_a);  // aligned_a = M A: A composed for each b_j
        auto G = [&](const Var& x, const Var& y) { return relu(G2.forward(relu(G1.forward(concat({x, y}, -1))))); };
        return head.forward(masked_average(G(b, out.aligned_a), p.mask_b), masked_average(G(a, out.aligned_b), p.mask_a));
    }
    Tensor picture(const Pairs& p) override {
        const CodaOutput out = coda.forward(embed.forward(p.b), embed.forward(p.a), p.mask_b, p.mask_a);
        return slice(out.weights.value(), 0, 0, 1).reshape(Shape{kLen, kLen});
    }
};

struct BagModel : PairModel {
    static constexpr int64_t d = 16;
    Embedding embed;
    PairHead head;
    explicit BagModel(Generator& gen) : embed(kVocab, d, gen, 0), head(d, gen) {
        register_module("embed", embed);
        register_module("head", head);
    }
    Var logits(const Pairs& p) override {
        return head.forward(masked_average(embed.forward(p.b), p.mask_b), masked_average(embed.forward(p.a), p.mask_a));
    }
    Tensor picture(const Pairs&) override { return {}; }
};

double fit_pairs(ZooContext& ctx, PairModel& model, int64_t steps) {
    Adam opt(model.parameters(), {.lr = 3e-3});
    for (int64_t s = 0; s < steps; ++s) {
        const Pairs p = pairs_batch(ctx.gen, 32);
        Var loss = cross_entropy(model.logits(p), p.y);
        opt.zero_grad();
        loss.backward();
        opt.step();
    }
    Generator test_gen(static_cast<uint64_t>(ctx.seed) + 6000);
    const Pairs test = pairs_batch(test_gen, 1000);
    NoGradGuard no_grad;
    return accuracy(model.logits(test).value(), test.y);
}

ZooResult run_pairs(ZooContext& ctx, const std::string& id, std::unique_ptr<PairModel> model, double target,
                    const std::string& what) {
    const int64_t steps = ctx.steps(1500);
    const double acc = fit_pairs(ctx, *model, steps);
    Generator bag_gen(static_cast<uint64_t>(ctx.seed) + 6500);
    ZooContext bag_ctx{bag_gen, ctx.seed, ctx.budget, ctx.report};
    BagModel bag(bag_gen);
    const double bag_acc = fit_pairs(bag_ctx, bag, steps);
    Generator show_gen(static_cast<uint64_t>(ctx.seed) + 6001);
    const Pairs p = pairs_batch(show_gen, 1);
    NoGradGuard no_grad;
    const Tensor pic = model->picture(p);
    std::vector<std::string> rows, cols;
    for (int64_t j = 0; j < pic.size(0); ++j)
        rows.push_back(j < kLen && p.mask_b[j] != 0 ? "w" + std::to_string(static_cast<int64_t>(p.b[j])) : "·");
    for (int64_t j = 0; j < pic.size(1); ++j)
        cols.push_back(j < kLen ? "w" + std::to_string(static_cast<int64_t>(p.a[j])) : "·");
    HeatmapOptions opts;
    opts.auto_range = true;
    ctx.report.subsection("pairs: " + id);
    ctx.report.paragraph("Is every word of B (rows) in A (columns)? This example's label: " +
                         std::string(p.y[0] != 0 ? "yes" : "no") + ". " + what);
    ctx.report.figure_row({heatmap_svg(pic, rows, cols, opts)}, {id});
    return {"test accuracy (balanced)", acc, target, true, steps, "bag of words " + fmt(bag_acc), bag_acc};
}

// ---- segment2: cosnet_co_attention ----------------------------------------------------------------
// Two 6×6 frames of 8-channel features: each holds the same object (a 2×2
// patch of type t) somewhere, plus a distractor of another type. Segment, in
// each frame, the object both frames share: a pixel cannot tell from its own
// frame whether its object is the shared one.
constexpr int64_t kC = 8, kGrid = 6, kTypes = 6;

struct Frames {
    Tensor a, b, mask_a, mask_b;  // B×C×6×6 and B×6×6 (1 = the shared object)
};

Frames frames_batch(Generator& gen, const Tensor& prototypes, int64_t B) {
    Frames f{Tensor::normal(Shape{B, kC, kGrid, kGrid}, 0, real(0.3), gen), Tensor(), Tensor::zeros(Shape{B, kGrid, kGrid}),
             Tensor::zeros(Shape{B, kGrid, kGrid})};
    f.b = Tensor::normal(Shape{B, kC, kGrid, kGrid}, 0, real(0.3), gen);
    auto paint = [&](Tensor& frame, Tensor* mask, int64_t i, int64_t type, int64_t top, int64_t left) {
        for (int64_t y = top; y < top + 2; ++y)
            for (int64_t x = left; x < left + 2; ++x) {
                for (int64_t c = 0; c < kC; ++c) frame.at({i, c, y, x}) += prototypes.at({type, c});
                if (mask) mask->at({i, y, x}) = 1;
            }
    };
    for (int64_t i = 0; i < B; ++i) {
        const int64_t shared = static_cast<int64_t>(gen.randint(kTypes));
        for (auto [frame, mask] : {std::pair{&f.a, &f.mask_a}, std::pair{&f.b, &f.mask_b}}) {
            const int64_t other = (shared + 1 + static_cast<int64_t>(gen.randint(kTypes - 1))) % kTypes;
            // the shared object in the top or bottom half, the distractor in the other
            const bool shared_top = gen.randint(2) == 1;
            const int64_t row_s = shared_top ? static_cast<int64_t>(gen.randint(2)) : 3 + static_cast<int64_t>(gen.randint(2));
            const int64_t row_o = shared_top ? 3 + static_cast<int64_t>(gen.randint(2)) : static_cast<int64_t>(gen.randint(2));
            paint(*frame, mask, i, shared, row_s, static_cast<int64_t>(gen.randint(5)));
            paint(*frame, nullptr, i, other, row_o, static_cast<int64_t>(gen.randint(5)));
        }
    }
    return f;
}

struct CoSegmenter : Module {
    Conv2d encode, hidden, out;
    CosnetCoAttention co;
    bool use_co;
    CoSegmenter(Generator& gen, bool with_co_attention)
        : encode(kC, kC, 1, gen), hidden(2 * kC, 32, 1, gen), out(32, 2, 1, gen),
          co(kC, CosnetCoAttention::Variant::vanilla, gen), use_co(with_co_attention) {
        register_module("encode", encode);
        register_module("co", co);
        register_module("hidden", hidden);
        register_module("out", out);
    }
    // logits per pixel for both frames (B×6×6×2 each), and the co-attention
    std::pair<Var, Var> logits(const Frames& f, CosnetCoAttention::Output* att = nullptr) {
        CosnetCoAttention::Output o = co.forward(encode.forward(Var(f.a)), encode.forward(Var(f.b)));
        Var in_a = o.out_a, in_b = o.out_b;
        if (!use_co) {  // the baseline: the head sees [0; V], each frame alone
            const Var zeros(Tensor::zeros(Shape{f.a.size(0), kC, kGrid, kGrid}));
            in_a = concat({zeros, narrow(o.out_a, 1, kC, kC)}, 1);
            in_b = concat({zeros, narrow(o.out_b, 1, kC, kC)}, 1);
        }
        auto head = [&](const Var& x) { return permute(out.forward(relu(hidden.forward(x))), {0, 2, 3, 1}); };
        if (att) *att = o;
        return {head(in_a), head(in_b)};
    }
};

// Intersection over union of the predicted and true shared-object pixels, averaged over frames.
double mean_iou(const Tensor& logits, const Tensor& mask) {
    const int64_t B = mask.size(0), P = kGrid * kGrid;
    double total = 0;
    for (int64_t i = 0; i < B; ++i) {
        int64_t inter = 0, uni = 0;
        for (int64_t p = 0; p < P; ++p) {
            const bool pred = logits[(i * P + p) * 2 + 1] > logits[(i * P + p) * 2];
            const bool truth = mask[i * P + p] != 0;
            inter += pred && truth ? 1 : 0;
            uni += pred || truth ? 1 : 0;
        }
        total += uni > 0 ? static_cast<double>(inter) / static_cast<double>(uni) : 1.0;
    }
    return total / static_cast<double>(B);
}

double fit_segment(ZooContext& ctx, CoSegmenter& model, const Tensor& prototypes, int64_t steps) {
    Adam opt(model.parameters(), {.lr = 3e-3});
    for (int64_t s = 0; s < steps; ++s) {
        const Frames f = frames_batch(ctx.gen, prototypes, 16);
        const auto [la, lb] = model.logits(f);
        Var loss = add(cross_entropy(la, f.mask_a), cross_entropy(lb, f.mask_b));
        opt.zero_grad();
        loss.backward();
        opt.step();
    }
    Generator test_gen(static_cast<uint64_t>(ctx.seed) + 7000);
    const Frames test = frames_batch(test_gen, prototypes, 300);
    NoGradGuard no_grad;
    return mean_iou(model.logits(test).first.value(), test.mask_a);
}

ZooResult train_segment2(ZooContext& ctx) {
    const int64_t steps = ctx.steps(1500);
    const Tensor prototypes = Tensor::normal(Shape{kTypes, kC}, 0, 1, ctx.gen);
    CoSegmenter model(ctx.gen, true);
    const double iou = fit_segment(ctx, model, prototypes, steps);
    CoSegmenter alone(ctx.gen, false);
    const double iou_alone = fit_segment(ctx, alone, prototypes, steps);
    Generator show_gen(static_cast<uint64_t>(ctx.seed) + 7001);
    const Frames f = frames_batch(show_gen, prototypes, 1);
    NoGradGuard no_grad;
    CosnetCoAttention::Output att;
    const Tensor la = model.logits(f, &att).first.value();
    Tensor pred = Tensor::empty(Shape{kGrid, kGrid}), energy = Tensor::empty(Shape{kGrid, kGrid}),
           from = Tensor::zeros(Shape{kGrid, kGrid});
    int64_t probe = 0;  // a pixel of the shared object in frame a
    for (int64_t p = 0; p < kGrid * kGrid; ++p) {
        pred[p] = 1 / (1 + std::exp(la[2 * p] - la[2 * p + 1]));
        real e = 0;
        for (int64_t c = 0; c < kC; ++c) e += std::abs(f.a[c * kGrid * kGrid + p]);
        energy[p] = e;
        if (f.mask_a[p] != 0 && probe == 0) probe = p;
    }
    for (int64_t q = 0; q < kGrid * kGrid; ++q) from[q] = att.weights_a.value()[probe * kGrid * kGrid + q];
    HeatmapOptions opts;
    opts.auto_range = true;
    ctx.report.subsection("segment2: cosnet_co_attention");
    ctx.report.paragraph("Left: frame a (feature magnitude; two objects). Middle: where one pixel of the shared "
                         "object in frame a attends in frame b (a row of softmax_row(Sᵀ)). Right: the predicted "
                         "probability of the shared object in frame a.");
    ctx.report.figure_row({heatmap_svg(energy, {}, {}, opts), heatmap_svg(from, {}, {}, opts), heatmap_svg(pred, {}, {})},
                          {"frame a", "attention into frame b", "prediction"});
    return {"mean IoU of the shared object", iou, 0.75, true, steps, "no co-attention (head sees [0; V]) " + fmt(iou_alone), iou_alone};
}

// ---- fewshot: can_cross_attention -------------------------------------------------------------------
// 1-shot verification on 4×4 maps of 8-channel features: the support shows
// one object (one cell of type t) in clutter; the query shows three objects.
// Does the query contain t? Cross attention points each map at the cells that
// match the other; the classifier sees the pooled, re-weighted maps.
constexpr int64_t kSide = 4, kCells = kSide * kSide, kObjTypes = 10;

struct Episode {
    Tensor support, query, y;  // B×C×4×4 twice, B
};

Episode episode_batch(Generator& gen, const Tensor& prototypes, int64_t B) {
    Episode e{Tensor::normal(Shape{B, kC, kSide, kSide}, 0, real(0.3), gen),
              Tensor::normal(Shape{B, kC, kSide, kSide}, 0, real(0.3), gen), Tensor::empty(Shape{B})};
    auto put = [&](Tensor& map, int64_t i, int64_t type, int64_t cell) {
        for (int64_t c = 0; c < kC; ++c) map.at({i, c, cell / kSide, cell % kSide}) += prototypes.at({type, c});
    };
    for (int64_t i = 0; i < B; ++i) {
        std::vector<int64_t> types(kObjTypes), cells(kCells);
        for (int64_t k = 0; k < kObjTypes; ++k) types[static_cast<size_t>(k)] = k;
        for (int64_t k = 0; k < kCells; ++k) cells[static_cast<size_t>(k)] = k;
        for (int64_t k = 0; k < 4; ++k) {
            std::swap(types[static_cast<size_t>(k)], types[static_cast<size_t>(k + static_cast<int64_t>(gen.randint(static_cast<uint64_t>(kObjTypes - k))))]);
            std::swap(cells[static_cast<size_t>(k)], cells[static_cast<size_t>(k + static_cast<int64_t>(gen.randint(static_cast<uint64_t>(kCells - k))))]);
        }
        const bool positive = gen.randint(2) == 1;
        e.y[i] = positive ? 1 : 0;
        put(e.support, i, types[0], static_cast<int64_t>(gen.randint(kCells)));
        put(e.query, i, positive ? types[0] : types[3], cells[0]);
        put(e.query, i, types[1], cells[1]);
        put(e.query, i, types[2], cells[2]);
    }
    return e;
}

struct Verifier : Module {
    Conv2d encode;
    CanCrossAttention cross;
    Linear hidden, out;
    bool use_cross;
    Verifier(Generator& gen, bool with_cross)
        : encode(kC, kC, 1, gen), cross(kCells, 1, gen), hidden(4 * kC, 32, gen), out(32, 2, gen),
          use_cross(with_cross) {
        register_module("encode", encode);
        register_module("cross", cross);
        register_module("hidden", hidden);
        register_module("out", out);
    }
    Var logits(const Episode& e, CanCrossAttention::Output* att = nullptr) {
        const Var P = encode.forward(Var(e.support)), Q = encode.forward(Var(e.query));
        Var Pb = P, Qb = Q;
        if (use_cross) {
            const auto o = cross.forward(P, Q);
            Pb = o.P_bar, Qb = o.Q_bar;
            if (att) *att = o;
        }
        // what attention added, summed: Σ_i A_i P_i = m · GAP(P̄ − P), and likewise for Q
        const Var p = mean(Pb, std::vector<int>{2, 3}), q = mean(Qb, std::vector<int>{2, 3});
        // (the baseline has no attention: its last block is zero)
        const Var pa = mul(mean(sub(Pb, P), std::vector<int>{2, 3}), real(kCells));
        const Var qa = mul(mean(sub(Qb, Q), std::vector<int>{2, 3}), real(kCells));
        return out.forward(relu(hidden.forward(concat({p, q, mul(p, q), mul(pa, qa)}, 1))));
    }
};

double fit_fewshot(ZooContext& ctx, Verifier& model, const Tensor& prototypes, int64_t steps) {
    Adam opt(model.parameters(), {.lr = 3e-3});
    for (int64_t s = 0; s < steps; ++s) {
        const Episode e = episode_batch(ctx.gen, prototypes, 32);
        Var loss = cross_entropy(model.logits(e), e.y);
        opt.zero_grad();
        loss.backward();
        opt.step();
    }
    Generator test_gen(static_cast<uint64_t>(ctx.seed) + 8000);
    const Episode test = episode_batch(test_gen, prototypes, 1000);
    NoGradGuard no_grad;
    return accuracy(model.logits(test).value(), test.y);
}

ZooResult train_fewshot(ZooContext& ctx) {
    const int64_t steps = ctx.steps(1500);
    const Tensor prototypes = mul(Tensor::normal(Shape{kObjTypes, kC}, 0, 1, ctx.gen), Tensor::scalar(3));
    Verifier model(ctx.gen, true);
    const double acc = fit_fewshot(ctx, model, prototypes, steps);
    Verifier plain(ctx.gen, false);
    const double acc_plain = fit_fewshot(ctx, plain, prototypes, steps);
    Generator show_gen(static_cast<uint64_t>(ctx.seed) + 8001);
    Episode e = episode_batch(show_gen, prototypes, 4);
    NoGradGuard no_grad;
    CanCrossAttention::Output att;
    model.logits(e, &att);
    int64_t b = 0;
    while (b < 3 && e.y[b] == 0) ++b;  // a positive episode
    auto grid = [&](const Tensor& t) { return slice(t, 0, b, b + 1).reshape(Shape{kSide, kSide}); };
    auto energy = [&](const Tensor& map) {
        Tensor g = Tensor::zeros(Shape{kSide, kSide});
        for (int64_t c = 0; c < kC; ++c)
            for (int64_t p = 0; p < kCells; ++p) g[p] += std::abs(map[(b * kC + c) * kCells + p]);
        return g;
    };
    HeatmapOptions opts;
    opts.auto_range = true;
    ctx.report.subsection("fewshot: can_cross_attention");
    ctx.report.paragraph("Features: pooled maps p, q, their product, and the product of the attended cells "
                         "Σ A^p_i P_i ∘ Σ A^q_i Q_i. A positive episode: feature magnitude of the support and the query (objects are the "
                         "bright cells), and the cross attention A^p, A^q over their 16 cells.");
    ctx.report.figure_row({heatmap_svg(energy(e.support), {}, {}, opts), heatmap_svg(grid(att.weights_p.value()), {}, {}, opts),
                           heatmap_svg(energy(e.query), {}, {}, opts), heatmap_svg(grid(att.weights_q.value()), {}, {}, opts)},
                          {"support", "A^p", "query", "A^q"});
    return {"test accuracy (balanced)", acc, 0.8, true, steps, "no cross attention (GAP only) " + fmt(acc_plain), acc_plain};
}

}  // namespace

static ZooRegistration sentence_pair_tasks({
    {"SP", "abcnn1_attention", "pairs", "is every word of B in A? ABCNN-1 layer + all-ap",
     [](ZooContext& ctx) {
         return run_pairs(ctx, "abcnn1_attention", std::make_unique<AbcnnModel>(AbcnnLayer::Kind::one, ctx.gen), 0.95,
                          "Picture: ABCNN-1's match scores A (1 / (1 + distance)) of the learned embeddings.");
     }},
    {"SP", "abcnn2_attention", "pairs", "is every word of B in A? ABCNN-2 layer + all-ap",
     [](ZooContext& ctx) {
         return run_pairs(ctx, "abcnn2_attention", std::make_unique<AbcnnModel>(AbcnnLayer::Kind::two, ctx.gen), 0.75,
                          "Picture: ABCNN-2's match scores of the convolution outputs (8 = 6 + w − 1 per side).");
     }},
    {"SP", "abcnn3_attention", "pairs", "is every word of B in A? ABCNN-3 layer + all-ap",
     [](ZooContext& ctx) {
         return run_pairs(ctx, "abcnn3_attention", std::make_unique<AbcnnModel>(AbcnnLayer::Kind::three, ctx.gen), 0.95,
                          "Picture: ABCNN-3's input-level match scores.");
     }},
    {"SP", "decomposable_attention", "pairs", "is every word of B in A? attend, compare, aggregate",
     [](ZooContext& ctx) {
         return run_pairs(ctx, "decomposable_attention", std::make_unique<DecomposableModel>(ctx.gen), 0.95,
                          "Picture: softmax_j(e_ij), each word of B attending over A.");
     }},
    {"SP", "compositional_de_attention", "pairs", "is every word of B in A? CoDA + compare, aggregate",
     [](ZooContext& ctx) {
         return run_pairs(ctx, "compositional_de_attention", std::make_unique<CodaModel>(ctx.gen), 0.95,
                          "Picture: CoDA's M = tanh(E) ⊙ σ(N), in (−1, 1) (no softmax).");
     }},
    {"SP", "cosnet_co_attention", "segment2", "segment the object two 6×6 frames share, past a distractor",
     train_segment2},
    {"SP", "can_cross_attention", "fewshot", "1-shot: does the query map contain the support's object?",
     train_fewshot},
});
