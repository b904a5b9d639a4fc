// Sequence variants, part 2: the independent references and registry entries
// (tests/grad/catalog.hpp) of catalog entries 54 (attention/pointer.hpp), 57, 58,
// 60 (attention/sequence_more.hpp) and 59 (attention/area.hpp), and the
// bias-free case of entry 15 that the pointer uses. Property tests and
// hand-computed values are in test_area.cpp.
#include <cmath>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "attention/area.hpp"
#include "attention/pointer.hpp"
#include "attention/scores.hpp"
#include "attention/sequence_more.hpp"
#include "tests/grad/catalog.hpp"
#include "tests/grad/helpers.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

// ---- shared by the references: masks and two score functions, in plain loops ------------

// e = wᵀ tanh(W_1 q + W_2 k [+ b]), the additive score of entry 15, with the
// module's parameters under `prefix` (W_1 d_w×d_q, W_2 d_w×d_k, b and w d_w).
struct AdditiveRef {
    Array W_1, W_2;
    Vec b, w;
    AdditiveRef(const Ref& r, const std::string& prefix, bool bias)
        : W_1(r.p[prefix + "W_1"]), W_2(r.p[prefix + "W_2"]), w(vec(r.p[prefix + "w"])) {
        b = bias ? vec(r.p[prefix + "b"]) : Vec(w.size(), 0.0);
    }
    double operator()(const Vec& q, const Vec& k) const {
        return dot(w, testing::each(add(add(matvec(W_1, q), matvec(W_2, k)), b), tanh_));
    }
};

// ---- 15. additive_score without a bias --------------------------------------------------------

// e_l = wᵀ tanh(W_1 q + W_2 k_l): Q B×m×d_q, K B×n×d_k → E B×m×n
std::vector<Expected> additive_no_bias_reference(const Ref& r) {
    const Array &Q = r.x[0], &K = r.x[1];
    const AdditiveRef f(r, "", false);
    Array E({Q.size(0), Q.size(1), K.size(1)});
    for (int64_t b = 0; b < Q.size(0); ++b)
        for (int64_t i = 0; i < Q.size(1); ++i)
            for (int64_t l = 0; l < K.size(1); ++l) E(b, i, l) = f(row(Q, b, i), row(K, b, l));
    return {{"scores", E}};
}

const RegisterEntry additive_no_bias_entry(15, "additive_score", {
    {.variant = "bias = false (Pointer Networks, Bahdanau's decoder): d_q 3, d_k 5, d_w 4",
     .inputs = {Shape{2, 3, 3}, Shape{2, 4, 5}},
     .make = [](Generator& g) { return std::make_unique<AdditiveScore>(3, 5, 4, g, Activation::tanh, false); },
     .run = [](Module* m, In x, Masks) { return Outputs{{"scores", as<AdditiveScore>(m).score(x[0], x[1])}}; },
     .reference = additive_no_bias_reference},
});

// ---- 54. pointer_attention ----------------------------------------------------------------

// 54 (Vinyals et al. 2015):  u^i_j = wᵀ tanh(W_1 d_i + W_2 e_j),  p_i = softmax_j(u^i) over the kept j
// (the paper's vᵀ tanh(W_1 e_j + W_2 d_i): its W_1 is score.W_2 here, its W_2 score.W_1)
// E B×n×d_e, D B×m×d_d; score.W_1 d_w×d_d, score.W_2 d_w×d_e, score.w d_w;
// mask B×n or B×m×n (a step's own mask) → p B×m×n, u B×m×n
std::vector<Expected> pointer_reference(const Ref& r, bool with_scores) {
    const Array &E = r.x[0], &D = r.x[1];
    const Array mask = mask_or_all(r, 0);
    const AdditiveRef f(r, "score.", false);
    const int64_t B = E.size(0), n = E.size(1), m = D.size(1);
    Array u({B, m, n}), p({B, m, n});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < m; ++i) {
            Vec e(static_cast<size_t>(n));
            for (int64_t j = 0; j < n; ++j) e[static_cast<size_t>(j)] = u(b, i, j) = f(row(D, b, i), row(E, b, j));
            set_row(p, b, i, softmax(e, mask.rank() == 3 ? row(mask, b, i) : keep_row(mask, b, n)));
        }
    if (with_scores) return {{"weights", p}, {"scores", u}};
    return {{"weights", p}};
}

// Rows [0, n) of x B×N×… (and of a B×N mask).
Tensor first_rows(const Tensor& x, int64_t n) {
    const Array a(x);
    const int64_t B = a.size(0), N = a.size(1), inner = a.numel() / (B * N);
    std::vector<int64_t> shape = a.shape();
    shape[1] = n;
    Array out(shape);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t k = 0; k < n * inner; ++k) out[b * n * inner + k] = a[b * N * inner + k];
    return out.tensor();
}

// 54: one module points into inputs of any length: with the first n − 2
// positions only, p is B×m×(n − 2) and every row sums to 1 (0 if all masked).
Property points_into_any_length() {
    return {"the same module gives a distribution over n − 2 positions", [](const PropertyContext& c) -> std::string {
                const int64_t n = c.inputs[0].size(1) - 2;
                std::vector<Tensor> x = c.inputs, masks = c.masks;
                x[0] = first_rows(x[0], n);
                if (!masks.empty()) masks[0] = first_rows(masks[0], n);
                const Array p(c.run(x, masks)["weights"]);
                if (p.size(2) != n) return "weights " + p.shape_str() + " for " + std::to_string(n) + " positions";
                for (int64_t k = 0; k < p.numel() / n; ++k) {
                    double s = 0;
                    for (int64_t j = 0; j < n; ++j) s += p[k * n + j];
                    if (std::abs(s - 1) > 1e-9 && s != 0) return "a row over n − 2 positions sums to " + std::to_string(s);
                }
                return "";
            }};
}

Outputs run_pointer(Module* m, In x, Masks masks) {
    return {{"weights", as<PointerAttention>(m).forward(x[0], x[1], mask_or_none(masks, 0)).weights}};
}

const RegisterEntry pointer_entry(54, "pointer_attention", {
    {.variant = "n 5 of d_e 3, m 2 steps of d_d 4, d_w 6, lengths 5 and 3",
     .inputs = {Shape{2, 5, 3}, Shape{2, 2, 4}},
     .masks = {keep_first({5, 3}, 5)},
     .make = [](Generator& g) { return std::make_unique<PointerAttention>(3, 4, 6, g); },
     .run = run_pointer,
     .reference = [](const Ref& r) { return pointer_reference(r, false); },
     .masking = {{.mask = 0, .inputs = {0}, .weights = {"weights"}}},
     .properties = {rows_sum_to_one("weights"), bounded("weights", 0, 1),
                    permutation_equivariant_keys({0}, {0}, {"weights"}), points_into_any_length()}},
    {.variant = "square: d_e = d_d = d_w = 4, a B×m×n 'not chosen yet' mask, n 4, m 3",
     .inputs = {Shape{2, 4, 4}, Shape{2, 3, 4}},
     .masks = {not_yet_chosen_mask(Tensor::from({2, 0, 3, 1, 3, 0}, Shape{2, 3}), 4)},
     .make = [](Generator& g) { return std::make_unique<PointerAttention>(4, 4, 4, g); },
     .run = run_pointer,
     .reference = [](const Ref& r) { return pointer_reference(r, false); },
     .properties = {rows_sum_to_one("weights")}},
    {.variant = "project() once, scores() per step: u and p, n 6 of d_e 2, m 3 of d_d 3, d_w 4, no mask",
     .inputs = {Shape{2, 6, 2}, Shape{2, 3, 3}},
     .make = [](Generator& g) { return std::make_unique<PointerAttention>(2, 3, 4, g); },
     .run = [](Module* m, In x, Masks) {
         auto& ptr = as<PointerAttention>(m);
         return Outputs{{"weights", ptr.forward(x[0], x[1]).weights}, {"scores", ptr.scores(x[1], ptr.project(x[0]))}};
     },
     .reference = [](const Ref& r) { return pointer_reference(r, true); },
     .properties = {rows_sum_to_one("weights"), permutation_equivariant_keys({0}, {}, {"weights", "scores"}),
                    points_into_any_length()}},
    {.variant = "n 1: the only position gets probability 1",
     .inputs = {Shape{2, 1, 3}, Shape{2, 2, 2}},
     .make = [](Generator& g) { return std::make_unique<PointerAttention>(3, 2, 3, g); },
     .run = run_pointer,
     .reference = [](const Ref& r) { return pointer_reference(r, false); },
     .properties = {bounded("weights", 1, 1)}},
});

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
using ScoreRef = std::function<double(const Vec& s, const Vec& h)>;
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

Make transducer(int64_t W, std::function<std::unique_ptr<ScoreFunction>(Generator&)> score) {
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

// ---- 59. area_attention -------------------------------------------------------------------

struct AreaRef {
    int64_t top, left, height, width;
};

// The areas of an H×W grid: every h ≤ A_h rows by w ≤ A_w columns rectangle,
// in the module's order (height, width, top, left).
std::vector<AreaRef> areas_reference(int64_t H, int64_t W, int64_t max_h, int64_t max_w) {
    std::vector<AreaRef> out;
    for (int64_t h = 1; h <= max_h && h <= H; ++h)
        for (int64_t w = 1; w <= max_w && w <= W; ++w)
            for (int64_t top = 0; top + h <= H; ++top)
                for (int64_t left = 0; left + w <= W; ++left) out.push_back({top, left, h, w});
    return out;
}

// Σ, mean and the standard deviation √(|mean x² − μ²| + 1e-6) of the rows of X[b]
// in the cells of area a, by brute force; `kept` whether every cell is kept.
struct AreaStats {
    Vec sum, mean, stddev;
    bool kept;
};
AreaStats area_stats(const Array& X, int64_t b, int64_t W, const AreaRef& a, const Vec& keep) {
    const int64_t d = X.size(2);
    AreaStats s{Vec(static_cast<size_t>(d), 0.0), {}, {}, true};
    Vec squares(static_cast<size_t>(d), 0.0);
    for (int64_t i = a.top; i < a.top + a.height; ++i)
        for (int64_t j = a.left; j < a.left + a.width; ++j) {
            const Vec x = row(X, b, i * W + j);
            s.sum = add(s.sum, x);
            squares = add(squares, hadamard(x, x));
            s.kept = s.kept && keep[static_cast<size_t>(i * W + j)] != 0;
        }
    const double size = static_cast<double>(a.height * a.width);
    s.mean = scale(s.sum, 1 / size);
    for (int64_t k = 0; k < d; ++k) {
        const double mu = s.mean[static_cast<size_t>(k)];
        s.stddev.push_back(std::sqrt(std::abs(squares[static_cast<size_t>(k)] / size - mu * mu) + 1e-6));
    }
    return s;
}

// 59 (Li et al. 2019), over the areas r above (cells i ∈ r, |r| = h_r·w_r):
//   μ_r = mean_i k_i,  σ_r = √(|mean_i k_i² − μ_r²| + 1e-6),  v_r = Σ_i v_i (or the mean)
//   basic: k_r = μ_r;  rich: k_r = W_d ReLU(W_m [μ_r; σ_r; E_h[h_r − 1]; E_w[w_r − 1]] + b_m)
//   a = softmax_r(q·k_r / (τ √d)) over the areas whose cells are all kept,  o = Σ_r a_r v_r
// Q B×m×d, K B×n×d, V B×n×d_v (n = H·W, row-major) → o B×m×d_v, a B×m×N_a,
// and the area keys B×N_a×d and values B×N_a×d_v.
std::vector<Expected> area_reference(const Ref& r, const AreaAttention::Options& o, bool with_areas) {
    const Array &Q = r.x[0], &K = r.x[1], &V = r.x[2];
    const int64_t B = K.size(0), n = K.size(1), d = K.size(2), dv = V.size(2), m = Q.size(1);
    const int64_t H = o.grid_height, W = n / H;
    const std::vector<AreaRef> areas = areas_reference(H, W, o.max_height, o.max_width);
    const int64_t Na = static_cast<int64_t>(areas.size());
    Array keys({B, Na, d}), values({B, Na, dv}), out({B, m, dv}), weights({B, m, Na});
    for (int64_t b = 0; b < B; ++b) {
        const Vec keep = keep_row(mask_or_all(r, 0), b, n);
        Vec area_keep;
        for (int64_t a = 0; a < Na; ++a) {
            const AreaRef& area = areas[static_cast<size_t>(a)];
            const AreaStats k = area_stats(K, b, W, area, keep), v = area_stats(V, b, W, area, keep);
            area_keep.push_back(k.kept ? 1 : 0);
            set_row(values, b, a, o.sum_values ? v.sum : v.mean);
            if (!o.rich_keys) {
                set_row(keys, b, a, k.mean);
                continue;
            }
            const Vec sizes = concat(row(r.p["E_h"], area.height - 1), row(r.p["E_w"], area.width - 1));
            const Vec features = concat(concat(k.mean, k.stddev), sizes);
            const Vec hidden = testing::each(add(matvec(r.p["W_m"], features), vec(r.p["b_m"])), relu);
            set_row(keys, b, a, matvec(r.p["W_d"], hidden));
        }
        for (int64_t i = 0; i < m; ++i) {
            Vec e;
            for (int64_t a = 0; a < Na; ++a)
                e.push_back(dot(row(Q, b, i), row(keys, b, a)) / (o.temperature * std::sqrt(double(d))));
            const Vec alpha = softmax(e, area_keep);
            set_row(weights, b, i, alpha);
            Vec ctx(static_cast<size_t>(dv), 0.0);
            for (int64_t a = 0; a < Na; ++a) ctx = add(ctx, scale(row(values, b, a), alpha[static_cast<size_t>(a)]));
            set_row(out, b, i, ctx);
        }
    }
    if (!with_areas) return {{"output", out}, {"weights", weights}};
    return {{"output", out}, {"weights", weights}, {"area_keys", keys}, {"area_values", values}};
}

Case area_case(std::string variant, std::vector<Shape> inputs, std::vector<Tensor> masks,
               AreaAttention::Options o) {
    // With a mask, the area keys and values of areas over masked cells move
    // with those cells; only the attention's outputs are compared then.
    const bool with_areas = masks.empty();
    Case c;
    c.variant = std::move(variant), c.inputs = std::move(inputs), c.masks = std::move(masks);
    c.make = [o](Generator& g) { return std::make_unique<AreaAttention>(o, g); };
    c.run = [with_areas](Module* m, In x, Masks k) {
        const auto out = as<AreaAttention>(m).forward(x[0], x[1], x[2], mask_or_none(k, 0));
        Outputs named{{"output", out.output}, {"weights", out.weights}};
        if (with_areas) named.push_back({"area_keys", out.area_keys}), named.push_back({"area_values", out.area_values});
        return named;
    };
    c.reference = [o, with_areas](const Ref& r) { return area_reference(r, o, with_areas); };
    if (!with_areas) c.masking = {{.mask = 0, .inputs = {1, 2}, .weights = {"weights"}, .zero_when_empty = {"output"}}};
    c.properties = {rows_sum_to_one("weights")};
    return c;
}

// area_features alone: x B×n×d on an H-row grid → Σ, μ, σ per area and the keep mask.
std::vector<Expected> area_features_reference(const Ref& r, int64_t H, int64_t max_h, int64_t max_w) {
    const Array& X = r.x[0];
    const int64_t B = X.size(0), n = X.size(1), d = X.size(2), W = n / H;
    const std::vector<AreaRef> areas = areas_reference(H, W, max_h, max_w);
    const int64_t Na = static_cast<int64_t>(areas.size());
    Array sum({B, Na, d}), mean({B, Na, d}), stddev({B, Na, d}), keep({B, Na});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t a = 0; a < Na; ++a) {
            const AreaStats s = area_stats(X, b, W, areas[static_cast<size_t>(a)], keep_row(r.masks[0], b, n));
            set_row(sum, b, a, s.sum), set_row(mean, b, a, s.mean), set_row(stddev, b, a, s.stddev);
            keep(b, a) = s.kept ? 1 : 0;
        }
    return {{"sum", sum}, {"mean", mean}, {"stddev", stddev}, {"keep", keep}};
}

const RegisterEntry area_entry(59, "area_attention", {
    area_case("1-D basic keys, A_w 3, n 5 of d 4, d_v 3, summed values, lengths 5 and 3",
              {Shape{2, 2, 4}, Shape{2, 5, 4}, Shape{2, 5, 3}}, {keep_first({5, 3}, 5)}, {.max_width = 3}),
    area_case("1-D basic keys, A_w 2, n 4 (7 areas), mean values, τ 2, no mask",
              {Shape{2, 3, 3}, Shape{2, 4, 3}, Shape{2, 4, 2}}, {},
              {.max_width = 2, .sum_values = false, .temperature = 2}),
    area_case("1-D rich keys, A_w 2, n 4 of d 4 (W_d 4×4 square), mean values, no mask",
              {Shape{2, 2, 4}, Shape{2, 4, 4}, Shape{2, 4, 2}}, {},
              {.max_width = 2, .rich_keys = true, .sum_values = false, .dim = 4}),
    area_case("1-D rich keys, A_w 4 wider than the sequence of 3 (widths 1–3 only), summed values, no mask",
              {Shape{2, 2, 2}, Shape{2, 3, 2}, Shape{2, 3, 3}}, {},
              {.max_width = 4, .rich_keys = true, .dim = 2, .hidden_dim = 3}),
    area_case("2-D rich keys on a 2×3 grid, areas up to 2×2, τ 0.5, d_hidden 3, summed values, no mask",
              {Shape{2, 2, 4}, Shape{2, 6, 4}, Shape{2, 6, 2}}, {},
              {.max_width = 2, .max_height = 2, .grid_height = 2, .rich_keys = true, .temperature = 0.5, .dim = 4,
               .hidden_dim = 3}),
    area_case("2-D basic keys on a 3×3 grid, areas up to 2 rows × 3 columns, lengths 9 and 5",
              {Shape{2, 2, 3}, Shape{2, 9, 3}, Shape{2, 9, 2}}, {keep_first({9, 5}, 9)},
              {.max_width = 3, .max_height = 2, .grid_height = 3}),
    area_case("2-D rich keys on a 2×2 grid, areas up to 2×2, τ 1.5, mean values, lengths 4 and 3",
              {Shape{2, 3, 4}, Shape{2, 4, 4}, Shape{2, 4, 3}}, {keep_first({4, 3}, 4)},
              {.max_width = 2, .max_height = 2, .grid_height = 2, .rich_keys = true, .sum_values = false,
               .temperature = 1.5, .dim = 4}),
    {.variant = "area_features alone: Σ, μ, σ and the keep mask on a 3×4 grid, areas up to 2×3, lengths 12 and 7",
     .inputs = {Shape{2, 12, 2}},
     .masks = {keep_first({12, 7}, 12)},
     .run = [](Module*, In x, Masks k) {
         const AreaFeatures f = area_features(x[0], 3, enumerate_areas(3, 4, 2, 3), k[0]);
         return Outputs{{"sum", f.sum}, {"mean", f.mean}, {"stddev", f.stddev}, {"keep", Var(f.keep), false}};
     },
     .reference = [](const Ref& r) { return area_features_reference(r, 3, 2, 3); }},
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
