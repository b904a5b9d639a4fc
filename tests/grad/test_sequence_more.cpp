// Sequence variants, part 2, double build: catalog entries 57
// (latent_attention), 58 (neural_transducer_attention) and 60
// (dual_local_global_attention), all in attention/sequence_more.hpp: their
// independent references and registry entries (tests/grad/catalog.hpp), then
// the hand-computed tests. Entries 54 and 59 have their own files
// (test_pointer.cpp, test_area.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/scores.hpp"
#include "attention/sequence_more.hpp"
#include "tensor/ops.hpp"
#include "tests/function.hpp"
#include "tests/grad/catalog.hpp"
#include "tests/grad/helpers.hpp"
#include "tests/grad/scores_reference.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

// ---- 57. latent_attention -----------------------------------------------------------------

// 57 (Chen et al. 2016):  l = softmax_j(D_1[j]·u),  A[:, j] = softmax_i(D_2[i]·V[:, j]),
//   w = A l (w_i = Σ_j A_ij l_j),  o = Σ_i w_i D_3[i]; both softmaxes over the kept tokens
// D_1, D_2, D_3 B×J×d, u d, V d×J → o B×d, l B×J, A B×J×J, w B×J
std::vector<Expected> latent_reference(const Ref& r) {
    const Array &D1 = r.x[0], &D2 = r.x[1], &D3 = r.x[2];
    const Vec u = vec(r.p["u"]);
    const Array V = r.p["V"];
    const int64_t B = D1.size(0), J = D1.size(1), d = D1.size(2);
    Array o({B, d}), l({B, J}), A({B, J, J}), w({B, J});
    for (int64_t b = 0; b < B; ++b) {
        const Vec keep = keep_row(mask_or_all(r, 0), b, J);
        Vec e(static_cast<size_t>(J));
        for (int64_t j = 0; j < J; ++j) e[static_cast<size_t>(j)] = dot(row(D1, b, j), u);
        const Vec lat = softmax(e, keep);
        set_row(l, b, lat);
        for (int64_t j = 0; j < J; ++j) {
            Vec s(static_cast<size_t>(J));
            for (int64_t i = 0; i < J; ++i) {
                double v = 0;
                for (int64_t c = 0; c < d; ++c) v += D2(b, i, c) * V(c, j);
                s[static_cast<size_t>(i)] = v;
            }
            const Vec column = softmax(s, keep);
            for (int64_t i = 0; i < J; ++i) A(b, i, j) = column[static_cast<size_t>(i)];
        }
        Vec out(static_cast<size_t>(d), 0.0);
        for (int64_t i = 0; i < J; ++i) {
            double wi = 0;
            for (int64_t j = 0; j < J; ++j) wi += A(b, i, j) * lat[static_cast<size_t>(j)];
            w(b, i) = wi;
            out = add(out, scale(row(D3, b, i), wi));
        }
        set_row(o, b, out);
    }
    return {{"output", o}, {"latent", l}, {"active", A}, {"weights", w}};
}

Outputs run_latent(Module* m, In x, Masks masks) {
    const auto o = as<LatentAttention>(m).forward(x[0], x[1], x[2], mask_or_none(masks, 0));
    return {{"output", o.output}, {"latent", o.latent}, {"active", o.active}, {"weights", o.weights}};
}

std::vector<Property> latent_properties() {
    return {rows_sum_to_one("weights"), rows_sum_to_one("latent"), columns_sum_to_one("active")};
}

const KeySet tokens_masked{
    .mask = 0, .inputs = {0, 1, 2}, .weights = {"latent", "weights"}, .zero_when_empty = {"output", "active"}};

const RegisterEntry latent_entry(57, "latent_attention", {
    {.variant = "J 4 of d 3, lengths 4 and 2",
     .inputs = {Shape{2, 4, 3}, Shape{2, 4, 3}, Shape{2, 4, 3}},
     .masks = {keep_first({4, 2}, 4)},
     .make = [](Generator& g) { return std::make_unique<LatentAttention>(3, 4, g); },
     .run = run_latent,
     .reference = latent_reference,
     .masking = {tokens_masked},
     .properties = latent_properties()},
    {.variant = "square: d = J = 4 (a transposed V is shape-valid), no mask, batch 3",
     .inputs = {Shape{3, 4, 4}, Shape{3, 4, 4}, Shape{3, 4, 4}},
     .make = [](Generator& g) { return std::make_unique<LatentAttention>(4, 4, g); },
     .run = run_latent,
     .reference = latent_reference,
     .properties = latent_properties()},
    {.variant = "J 5 of d 2, lengths 3 and 5",
     .inputs = {Shape{2, 5, 2}, Shape{2, 5, 2}, Shape{2, 5, 2}},
     .masks = {keep_first({3, 5}, 5)},
     .make = [](Generator& g) { return std::make_unique<LatentAttention>(2, 5, g); },
     .run = run_latent,
     .reference = latent_reference,
     .masking = {tokens_masked},
     .properties = latent_properties()},
});

// ---- 58. neural_transducer_attention ------------------------------------------------------

// f_att(s, h) of the transducer's score, read from the module under "score.".
using ScoreRef = Function<double(const Vec& s, const Vec& h)>;
ScoreRef additive_f_att(const Ref& r) {
    const AdditiveRef f(r, "score.", true);
    return [f](const Vec& s, const Vec& h) { return f(s, h); };
}
ScoreRef dot_f_att(const Ref&) {
    return [](const Vec& s, const Vec& h) { return dot(s, h); };
}
// e = hᵀ W s (entry 18), W d×d_s
ScoreRef general_f_att(const Ref& r) {
    const Array W = r.p["score.W"];
    return [W](const Vec& s, const Vec& h) { return dot(h, matvec(W, s)); };
}

// 58 (Jaitly et al. 2016): block b (0-based) holds frames bW .. bW + W − 1; past T
// they are padding (zero, masked).
//   e_{m,j} = f_att(s_m, h_{bW+j}),  α_m = softmax_j(e_m) over the real kept frames,
//   c_m = Σ_j α_{m,j} h_{bW+j}
// H B×T×d, S B×m×d_s, mask B×T → c B×m×d, α B×m×W
std::vector<Expected> transducer_reference(const Ref& r, int64_t block, int64_t W, const ScoreRef& f_att) {
    const Array &H = r.x[0], &S = r.x[1];
    const int64_t B = H.size(0), T = H.size(1), d = H.size(2), m = S.size(1);
    Array c({B, m, d}), alpha({B, m, W});
    for (int64_t b = 0; b < B; ++b) {
        const Vec mask = keep_row(mask_or_all(r, 0), b, T);
        Vec keep(static_cast<size_t>(W), 0.0);
        for (int64_t j = 0; j < W; ++j)
            if (block * W + j < T) keep[static_cast<size_t>(j)] = mask[static_cast<size_t>(block * W + j)];
        for (int64_t i = 0; i < m; ++i) {
            Vec e(static_cast<size_t>(W), 0.0);
            for (int64_t j = 0; j < W; ++j) {
                const Vec h = block * W + j < T ? row(H, b, block * W + j) : Vec(static_cast<size_t>(d), 0.0);
                e[static_cast<size_t>(j)] = f_att(row(S, b, i), h);
            }
            const Vec a = softmax(e, keep);
            set_row(alpha, b, i, a);
            Vec ctx(static_cast<size_t>(d), 0.0);
            for (int64_t j = 0; j < W && block * W + j < T; ++j)
                ctx = add(ctx, scale(row(H, b, block * W + j), a[static_cast<size_t>(j)]));
            set_row(c, b, i, ctx);
        }
    }
    return {{"output", c}, {"weights", alpha}};
}

// 58: online causality — changing every frame outside block b (earlier or
// later) leaves the block's context and weights exactly as they were.
Property only_block_frames_matter(int64_t block, int64_t W) {
    return {"frames outside the block change nothing", [=](const PropertyContext& c) -> std::string {
                std::vector<Tensor> x = c.inputs;
                Array H(x[0]);
                const int64_t B = H.size(0), T = H.size(1), d = H.size(2);
                for (int64_t b = 0; b < B; ++b)
                    for (int64_t t = 0; t < T; ++t)
                        if (t < block * W || t >= (block + 1) * W)
                            for (int64_t k = 0; k < d; ++k) H(b, t, k) = 2 * H(b, t, k) + 1;
                x[0] = H.tensor();
                const Evaluation before = c.run(c.inputs, c.masks), after = c.run(x, c.masks);
                for (const char* name : {"output", "weights"}) {
                    const Tensor &a = before[name], &z = after[name];
                    for (int64_t i = 0; i < a.numel(); ++i)
                        if (a[i] != z[i])
                            return std::string(name) + " moved at flat index " + std::to_string(i) +
                                   " when frames outside the block changed";
                }
                return "";
            }};
}

Make transducer(int64_t W, Function<std::unique_ptr<ScoreFunction>(Generator&)> score) {
    return [=](Generator& g) { return std::make_unique<NeuralTransducerAttention>(score(g), W); };
}

Outputs run_transducer(Module* m, In x, Masks masks, int64_t block) {
    const AttentionOutput o = as<NeuralTransducerAttention>(m).forward(x[0], block, x[1], mask_or_none(masks, 0));
    return {{"output", o.output}, {"weights", o.weights}};
}

const KeySet frames_masked{.mask = 0, .inputs = {0}, .weights = {"weights"}, .zero_when_empty = {"output"}};

std::unique_ptr<AdditiveScore> additive(Generator& g, int64_t q, int64_t k, int64_t w) {
    return std::make_unique<AdditiveScore>(q, k, w, g);
}

const RegisterEntry transducer_entry(58, "neural_transducer_attention", {
    {.variant = "additive f_att (d_s 3, d 2, d_w 4), W 3, T 8, block 1 (frames 3–5), m 2, lengths 8 and 5",
     .inputs = {Shape{2, 8, 2}, Shape{2, 2, 3}},
     .masks = {keep_first({8, 5}, 8)},
     .make = transducer(3, [](Generator& g) { return additive(g, 3, 2, 4); }),
     .run = [](Module* m, In x, Masks k) { return run_transducer(m, x, k, 1); },
     .reference = [](const Ref& r) { return transducer_reference(r, 1, 3, additive_f_att(r)); },
     .masking = {frames_masked},
     .properties = {rows_sum_to_one("weights"), only_block_frames_matter(1, 3)}},
    {.variant = "additive f_att, W 3, T 7: the last block 2 holds frame 6 and two padded slots",
     .inputs = {Shape{2, 7, 2}, Shape{2, 2, 3}},
     .make = transducer(3, [](Generator& g) { return additive(g, 3, 2, 4); }),
     .run = [](Module* m, In x, Masks k) { return run_transducer(m, x, k, 2); },
     .reference = [](const Ref& r) { return transducer_reference(r, 2, 3, additive_f_att(r)); },
     .properties = {rows_sum_to_one("weights"), only_block_frames_matter(2, 3)}},
    {.variant = "square additive f_att (d_s = d = d_w = 3), W 4, T 8, the first block 0, lengths 8 and 2",
     .inputs = {Shape{2, 8, 3}, Shape{2, 3, 3}},
     .masks = {keep_first({8, 2}, 8)},
     .make = transducer(4, [](Generator& g) { return additive(g, 3, 3, 3); }),
     .run = [](Module* m, In x, Masks k) { return run_transducer(m, x, k, 0); },
     .reference = [](const Ref& r) { return transducer_reference(r, 0, 4, additive_f_att(r)); },
     .masking = {frames_masked},
     .properties = {rows_sum_to_one("weights"), only_block_frames_matter(0, 4)}},
    {.variant = "dot f_att, W 2, T 6, the middle block 1, no mask",
     .inputs = {Shape{2, 6, 3}, Shape{2, 2, 3}},
     .make = transducer(2, [](Generator&) { return std::make_unique<DotScore>(); }),
     .run = [](Module* m, In x, Masks k) { return run_transducer(m, x, k, 1); },
     .reference = [](const Ref& r) { return transducer_reference(r, 1, 2, dot_f_att(r)); },
     .properties = {rows_sum_to_one("weights"), only_block_frames_matter(1, 2)}},
    {.variant = "general f_att (d_s 3 ≠ d 2), W 2, T 5, the partial block 2, lengths 5 and 4",
     .inputs = {Shape{2, 5, 2}, Shape{2, 2, 3}},
     .masks = {keep_first({5, 4}, 5)},
     .make = transducer(2, [](Generator& g) { return std::make_unique<GeneralScore>(3, 2, g); }),
     .run = [](Module* m, In x, Masks k) { return run_transducer(m, x, k, 2); },
     .reference = [](const Ref& r) { return transducer_reference(r, 2, 2, general_f_att(r)); },
     .masking = {frames_masked},
     .properties = {rows_sum_to_one("weights"), only_block_frames_matter(2, 2)}},
});

// ---- 60. dual_local_global_attention ---------------------------------------------------------

// tanh of a width-k convolution over time, then the max over time, for each filter:
// f_o = max_t tanh(bias_o + Σ_{u<k, c} weight[o, 0, u, c] x̂_{t+u, c})    weight f×1×k×d, x̂ n×d (no padding)
Vec conv_tanh_max_reference(const Ref& r, const std::string& conv, const std::vector<Vec>& X) {
    const Array weight = r.p[conv + ".weight"];
    const Vec bias = vec(r.p[conv + ".bias"]);
    const int64_t filters = weight.size(0), k = weight.size(2), d = weight.size(3), n = static_cast<int64_t>(X.size());
    Vec f;
    for (int64_t o = 0; o < filters; ++o) {
        double best = -INFINITY;
        for (int64_t t = 0; t + k <= n; ++t) {
            double e = bias[static_cast<size_t>(o)];
            for (int64_t u = 0; u < k; ++u)
                for (int64_t c = 0; c < d; ++c) e += weight(o, 0, u, c) * X[static_cast<size_t>(t + u)][static_cast<size_t>(c)];
            best = std::max(best, std::tanh(e));
        }
        f.push_back(best);
    }
    return f;
}

// 60 (Seo et al. 2017, D-Attn):
//   local   s_i = σ(Σ_{k=−(w−1)/2}^{(w−1)/2} ⟨W_L[k + (w−1)/2], x_{i+k}⟩ + b_L)  (x = 0 outside 0..n−1)
//           f_L = conv_tanh_max(local_conv, s_i x_i)
//   global  g = σ(Σ_{t,c} W_G[t, c] x_{t, c} + b_G),  f_G = [conv_tanh_max(global_conv{2,3,4}, g X)]
//   z = fc.weight [f_L; f_G] + fc.bias
// X B×n×d, W_L w×d, W_G n×d → z B×out, s B×n, g B
std::vector<Expected> dual_reference(const Ref& r) {
    const Array& X = r.x[0];
    const Array W_L = r.p["W_L"], W_G = r.p["W_G"];
    const double b_L = r.p["b_L"][0], b_G = r.p["b_G"][0];
    const int64_t B = X.size(0), n = X.size(1), w = W_L.size(0), half = (w - 1) / 2;
    const Array fc = r.p["fc.weight"];
    Array z({B, fc.size(0)}), s({B, n}), g({B});
    for (int64_t b = 0; b < B; ++b) {
        std::vector<Vec> local, global;
        double gate = b_G;
        for (int64_t i = 0; i < n; ++i) {
            double e = b_L;
            for (int64_t k = -half; k <= half; ++k)
                if (i + k >= 0 && i + k < n) e += dot(row(W_L, k + half), row(X, b, i + k));
            s(b, i) = sigmoid(e);
            local.push_back(scale(row(X, b, i), s(b, i)));
            gate += dot(row(W_G, i), row(X, b, i));
        }
        g(b) = sigmoid(gate);
        for (int64_t i = 0; i < n; ++i) global.push_back(scale(row(X, b, i), g(b)));
        Vec features = conv_tanh_max_reference(r, "local_conv", local);
        for (const char* conv : {"global_conv2", "global_conv3", "global_conv4"})
            features = concat(features, conv_tanh_max_reference(r, conv, global));
        set_row(z, b, add(matvec(fc, features), vec(r.p["fc.bias"])));
    }
    return {{"output", z}, {"local_scores", s}, {"global_gate", g}};
}

// 60: s_i depends only on its w-window: changing x_j moves s_i exactly when |i − j| ≤ (w − 1)/2.
Property local_scores_see_their_window(int64_t w) {
    return {"s_i depends on x_{i−(w−1)/2} .. x_{i+(w−1)/2} only", [w](const PropertyContext& c) -> std::string {
                const Array s0(c.run(c.inputs, c.masks)["local_scores"]);
                const int64_t n = s0.size(1), half = (w - 1) / 2;
                for (int64_t j : {int64_t{0}, n / 2, n - 1}) {
                    Array X(c.inputs[0]);
                    for (int64_t k = 0; k < X.size(2); ++k) X(0, j, k) += 1.5;
                    const Array s1(c.run({X.tensor()}, c.masks)["local_scores"]);
                    for (int64_t i = 0; i < n; ++i) {
                        const bool inside = std::abs(i - j) <= half, moved = s1(0, i) != s0(0, i);
                        if (inside != moved) {
                            std::ostringstream os;
                            os << "changing x_" << j << (moved ? " moved" : " left unchanged") << " s_" << i
                               << " (window " << w << ")";
                            return os.str();
                        }
                    }
                }
                return "";
            }};
}

Case dual_case(std::string variant, Shape input, int64_t filters, int64_t out, int64_t window) {
    Case c;
    c.variant = std::move(variant), c.inputs = {input};
    const int64_t n = input[1], d = input[2];
    c.make = [=](Generator& g) { return std::make_unique<DualLocalGlobalAttention>(n, d, filters, out, g, window); };
    c.run = [](Module* m, In x, Masks) {
        const auto o = as<DualLocalGlobalAttention>(m).forward(x[0]);
        return Outputs{{"output", o.output}, {"local_scores", o.local_scores}, {"global_gate", o.global_gate}};
    };
    c.reference = dual_reference;
    c.properties = {bounded("local_scores", 0, 1), bounded("global_gate", 0, 1), local_scores_see_their_window(window)};
    return c;
}

const RegisterEntry dual_entry(60, "dual_local_global_attention", {
    dual_case("n 6 of d 3, w 5, 2 filters, out 3", Shape{2, 6, 3}, 2, 3, 5),
    dual_case("square: n = d = 4 (W_G 4×4), w 3, 1 filter, out 4 (fc 4×4)", Shape{2, 4, 4}, 1,
              4, 3),
    dual_case("w 1 (s_i sees x_i alone), n 5 of d 2, 3 filters, out 2, batch 3", Shape{3, 5, 2}, 3, 2, 1),
    dual_case("w 7 wider than half the review, n 5 of d 2, 2 filters, out 2", Shape{2, 5, 2}, 2, 2, 7),
});

}  // namespace

// ---- 57. latent_attention ------------------------------------------------------------------

TEST_CASE("latent_attention: Σ w = 1, padding gets 0, and equal columns of V make w independent of u") {
    Generator gen(57);
    LatentAttention att(3, 5, gen);
    const Var D1(normal({2, 5, 3}, gen)), D2(normal({2, 5, 3}, gen)), D3(normal({2, 5, 3}, gen));
    const Tensor mask = keep_first({5, 3}, 5);
    auto out = att.forward(D1, D2, D3, mask);
    check_sums_to_one(out.weights.value());
    CHECK(out.weights.value().at({1, 3}) == 0);
    CHECK(out.weights.value().at({1, 4}) == 0);
    // each column of A is a distribution over the tokens
    const Tensor column_sums = sum(out.active.value(), 1);
    for (int64_t i = 0; i < column_sums.numel(); ++i) CHECK(std::abs(column_sums[i] - 1) < 1e-12);

    for (int64_t r = 0; r < 3; ++r)
        for (int64_t c = 1; c < 5; ++c) att.V.value().at({r, c}) = att.V.value().at({r, 0});
    const Tensor w1 = att.forward(D1, D2, D3, mask).weights.value();
    att.u.value().copy_(Tensor::from({3, -2, 7}));
    const Tensor w2 = att.forward(D1, D2, D3, mask).weights.value();
    CHECK(allclose(w1, w2, 0, 1e-12));
}

// ---- 58. neural_transducer_attention ----------------------------------------------------------

TEST_CASE("neural_transducer_attention: later blocks never change the context; the partial block is masked") {
    Generator gen(58);
    NeuralTransducerAttention att(std::make_unique<DotScore>(), 3);
    Tensor H = normal({1, 8, 2}, gen);
    const Var s(normal({1, 2, 2}, gen));
    CHECK(att.num_blocks(8) == 3);
    const auto before = att.forward(Var(H), 1, s);
    for (int64_t t = 6; t < 8; ++t) H.at({0, t, 0}) += 5;  // frames of block 2 change
    const auto after = att.forward(Var(H), 1, s);
    CHECK(allclose(before.output.value(), after.output.value(), 0, 0));
    // the context is a softmax over block 1's frames only (3, 4, 5)
    const Tensor block = slice(H, 1, 3, 6);
    const Tensor alpha = softmax(matmul(s.value(), block, false, true), -1);
    CHECK(allclose(before.weights.value(), alpha, 0, 1e-12));
    CHECK(allclose(before.output.value(), matmul(alpha, block), 0, 1e-12));
    // block 2 has frames 6 and 7 only: its third slot is padding and gets weight 0
    const auto last = att.forward(Var(H), 2, s);
    CHECK(last.weights.value().at({0, 0, 2}) == 0);
    CHECK(last.weights.value().at({0, 1, 2}) == 0);
    check_sums_to_one(last.weights.value());
    CHECK_THROWS_AS(att.forward(Var(H), 3, s), std::invalid_argument);
}

// ---- 60. dual_local_global_attention ----------------------------------------------------------

TEST_CASE("dual_local_global_attention: W_L = 0, b_L = 0 gives s_i = 0.5; s_i sees only its 5-window") {
    Generator gen(62);
    DualLocalGlobalAttention att(8, 3, 2, 4, gen);
    Tensor X = normal({1, 8, 3}, gen);
    const Tensor s = att.local_scores(Var(X)).value();
    X.at({0, 5, 1}) += 3;  // x_{2+3} changes
    const Tensor s2 = att.local_scores(Var(X)).value();
    for (int64_t i = 0; i <= 2; ++i) CHECK(s2.at({0, i}) == s.at({0, i}));
    CHECK(s2.at({0, 3}) != s.at({0, 3}));  // x_5 is in the window of s_3
    att.W_L.value().fill_(0);
    att.b_L.value().fill_(0);
    const auto out = att.forward(Var(X));
    for (int64_t i = 0; i < 8; ++i) CHECK(out.local_scores.value().at({0, i}) == 0.5);
    CHECK(out.output.shape() == Shape{1, 4});
    CHECK(out.global_gate.value()[0] > 0);
    CHECK(out.global_gate.value()[0] < 1);
    CHECK_THROWS_AS(att.forward(Var(normal({1, 7, 3}, gen))), std::invalid_argument);
}

TEST_CASE("latent, neural transducer and dual local-global attention (57, 58, 60): their survey tags") {
    Generator gen(63);
    const Taxonomy latent = LatentAttention(3, 4, gen).taxonomy();
    CHECK(latent.levels == "multi");
    CHECK(latent.scoring == "dot_score");
    CHECK(latent.query == "self");
    const Taxonomy transducer = NeuralTransducerAttention(std::make_unique<GeneralScore>(3, 2, gen), 2).taxonomy();
    CHECK(transducer.scoring == "general_score");
    CHECK(transducer.alignment == "local-m");
    const Taxonomy dual = DualLocalGlobalAttention(6, 3, 2, 3, gen).taxonomy();
    CHECK(dual.levels == "multi");
    CHECK(dual.alignment == "elementwise");
    CHECK(dual.query == "self");
}
