// Query types, catalog entries 31–36 (attention/query_types.hpp): their
// independent references and registry entries (tests/grad/catalog.hpp), and
// each entry's hand-made property tests in double precision.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/query_types.hpp"
#include "tensor/ops.hpp"
#include "tests/function.hpp"
#include "tests/grad/catalog.hpp"
#include "tests/grad/helpers.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

// ---- the independent references: the catalog's formulas in plain loops ------------------

// The soft context of one query: c = Σ_l a_l v_l over the rows of V[b].
Vec context(const Vec& a, const Array& V, int64_t b) {
    Vec c(static_cast<size_t>(V.size(2)), 0.0);
    for (int64_t l = 0; l < V.size(1); ++l) c = add(c, scale(row(V, b, l), a[static_cast<size_t>(l)]));
    return c;
}

// 31. bahdanau_attention, queries S B×m×d_s, encoder states H B×n×d_h:
//   e_ij = v_aᵀ tanh(W_a s_i + U_a h_j),  α_ij = softmax_j(e_ij),  c_i = Σ_j α_ij h_j
// with W_a = score.W_1 (d_w×d_s), U_a = score.W_2 (d_w×d_h), v_a = score.w.
std::vector<Expected> bahdanau_attention_reference(const Ref& r) {
    const Array &S = r.x[0], &H = r.x[1];
    const Array W_a = r.p["score.W_1"], U_a = r.p["score.W_2"];
    const Vec v_a = vec(r.p["score.w"]);
    const int64_t B = S.size(0), m = S.size(1), n = H.size(1);
    Array c({B, m, H.size(2)}), alpha({B, m, n});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < m; ++i) {
            Vec e(static_cast<size_t>(n));
            for (int64_t j = 0; j < n; ++j)
                e[static_cast<size_t>(j)] =
                    dot(v_a, each(add(matvec(W_a, row(S, b, i)), matvec(U_a, row(H, b, j))), std::tanh));
            const Vec a = softmax(e, keep_row(r.masks.empty() ? Array() : r.masks[0], b, n));
            set_row(alpha, b, i, a);
            set_row(c, b, i, context(a, H, b));
        }
    return {{"output", c}, {"weights", alpha}};
}

// 32. luong_attention, queries h_t B×m×d_s, encoder states H̄ B×n×d_h:
//   e_ts = score(h_t, h̄_s);  a_t = align(e_t);  c_t = Σ_s a_ts h̄_s;  h̃_t = tanh(W_c [c_t; h_t])
enum class LuongScore { dot, scaled, general, concat, location };
enum class LuongAlign { soft, local_m, local_p };
struct LuongCase {
    LuongScore score;
    LuongAlign align;
    int64_t D = 1;    // the local windows' half-width
    int64_t t = -1;   // a decoder step (local-m centre p = t), or −1: query i sits at i
};

double luong_score(const Ref& r, LuongScore kind, const Vec& h, const Vec& k, int64_t l) {
    switch (kind) {
        case LuongScore::dot: return dot(h, k);                                       // h_tᵀ h̄_s
        case LuongScore::scaled: return dot(h, k) / std::sqrt(double(k.size()));     // h_tᵀ h̄_s / √d
        case LuongScore::general: return dot(k, matvec(r.p["score.W"], h));           // h̄_sᵀ W h_t
        case LuongScore::concat: {                                                    // vᵀ tanh(W_1 h + W_2 h̄ + b)
            const Vec pre = add(add(matvec(r.p["score.W_1"], h), matvec(r.p["score.W_2"], k)), vec(r.p["score.b"]));
            return dot(vec(r.p["score.w"]), each(pre, std::tanh));
        }
        case LuongScore::location: return matvec(r.p["score.W_a"], h)[static_cast<size_t>(l)];  // (W_a h_t)_s
    }
    return 0;
}

Vec luong_align(const Ref& r, const LuongCase& lc, const Vec& e, const Vec& keep, const Vec& h, int64_t i) {
    const int64_t n = static_cast<int64_t>(e.size());
    if (lc.align == LuongAlign::soft) return softmax(e, keep);
    if (lc.align == LuongAlign::local_m) {  // the window |l − p| ≤ D around p = t (or i)
        const double p = lc.t >= 0 ? double(lc.t) : double(i);
        Vec window(keep);
        for (int64_t l = 0; l < n; ++l)
            if (std::abs(double(l) - p) > double(lc.D)) window[static_cast<size_t>(l)] = 0;
        return softmax(e, window);
    }
    // local-p: p_t = S·σ(v_pᵀ tanh(W_p h_t)), S the number of keys kept;
    // a_l = softmax_{|l − p_t| ≤ D}(e_l) · exp(−(l − p_t)² / 2σ²), σ = D/2
    const double S = sum(keep);
    const double p_t = S * sigmoid(dot(vec(r.p["align.v_p"]), each(matvec(r.p["align.W_p"], h), std::tanh)));
    Vec window(keep);
    for (int64_t l = 0; l < n; ++l)
        if (std::abs(double(l) - p_t) > double(lc.D)) window[static_cast<size_t>(l)] = 0;
    Vec a = softmax(e, window);
    const double sigma = double(lc.D) / 2;
    for (int64_t l = 0; l < n; ++l)
        a[static_cast<size_t>(l)] *= std::exp(-(double(l) - p_t) * (double(l) - p_t) / (2 * sigma * sigma));
    return a;
}

std::vector<Expected> luong_attention_reference(const Ref& r, const LuongCase& lc) {
    // Queries B×m×d_s, or one decoder step B×d_s (then m = 1 and the outputs drop that axis).
    const bool one_step = r.x[0].rank() == 2;
    const Array& X = r.x[0];
    const Array& Hbar = r.x[1];
    const Array W_c = r.p["W_c"];
    const int64_t B = Hbar.size(0), n = Hbar.size(1), m = one_step ? 1 : X.size(1), d_h = Hbar.size(2);
    const int64_t d_s = X.size(-1);
    Array out(one_step ? std::vector<int64_t>{B, d_s} : std::vector<int64_t>{B, m, d_s});
    Array ctx(one_step ? std::vector<int64_t>{B, d_h} : std::vector<int64_t>{B, m, d_h});
    Array weights(one_step ? std::vector<int64_t>{B, n} : std::vector<int64_t>{B, m, n});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < m; ++i) {
            const Vec h = one_step ? row(X, b) : row(X, b, i);
            Vec e(static_cast<size_t>(n));
            for (int64_t l = 0; l < n; ++l) e[static_cast<size_t>(l)] = luong_score(r, lc.score, h, row(Hbar, b, l), l);
            const Vec a = luong_align(r, lc, e, keep_row(r.masks.empty() ? Array() : r.masks[0], b, n), h, i);
            const Vec c = context(a, Hbar, b);
            const Vec h_tilde = each(matvec(W_c, concat(c, h)), std::tanh);
            if (one_step) {
                set_row(out, b, h_tilde), set_row(ctx, b, c), set_row(weights, b, a);
            } else {
                set_row(out, b, i, h_tilde), set_row(ctx, b, i, c), set_row(weights, b, i, a);
            }
        }
    return {{"output", out}, {"context", ctx}, {"weights", weights}};
}

// 33. specialized_query_attention: q = build(other) (the masked mean of the
// other input's rows, optionally through tanh), then e = score(q, K),
// a = softmax(e), c = Σ_l a_l v_l. The score: general kᵀ W q or additive.
std::vector<Expected> specialized_query_attention_reference(const Ref& r, bool additive, bool tanh_query) {
    const Array &O = r.x[0], &K = r.x[1], &V = r.x[2];
    const int64_t B = K.size(0), n = K.size(1), n_other = O.size(1);
    Array c({B, 1, V.size(2)}), weights({B, 1, n});
    for (int64_t b = 0; b < B; ++b) {
        const Vec keep_other = keep_row(r.masks.size() > 1 ? r.masks[1] : Array(), b, n_other);
        Vec q(static_cast<size_t>(O.size(2)), 0.0);
        for (int64_t l = 0; l < n_other; ++l) q = add(q, scale(row(O, b, l), keep_other[static_cast<size_t>(l)]));
        q = scale(q, 1.0 / std::max(sum(keep_other), 1.0));  // mean over the kept rows; 0 with none
        if (tanh_query) q = each(q, std::tanh);
        Vec e(static_cast<size_t>(n));
        for (int64_t l = 0; l < n; ++l) {
            const Vec k = row(K, b, l);
            e[static_cast<size_t>(l)] =
                additive ? dot(vec(r.p["attention.score.w"]),
                               each(add(add(matvec(r.p["attention.score.W_1"], q), matvec(r.p["attention.score.W_2"], k)),
                                         vec(r.p["attention.score.b"])),
                                     std::tanh))
                         : dot(k, matvec(r.p["attention.score.W"], q));
        }
        const Vec a = softmax(e, keep_row(r.masks.empty() ? Array() : r.masks[0], b, n));
        set_row(weights, b, 0, a);
        set_row(c, b, 0, context(a, V, b));
    }
    return {{"output", c}, {"weights", weights}};
}

// 34. attention_over_attention, document H_d B×n×d, query H_q B×m×d:
//   M = H_d H_qᵀ;  α = softmax over the document positions i (each column);
//   β = softmax over the query words j (each row);  β̄_j = (1/n) Σ_i β_ij;  s = α β̄
// Masked pairs are left out of both softmaxes; n counts the kept document words.
std::vector<Expected> attention_over_attention_reference(const Ref& r) {
    const Array &D = r.x[0], &Q = r.x[1];
    const int64_t B = D.size(0), n = D.size(1), m = Q.size(1);
    Array s({B, n}), alpha({B, n, m}), beta({B, n, m}), beta_mean({B, m});
    for (int64_t b = 0; b < B; ++b) {
        const Vec keep_d = keep_row(r.masks.empty() ? Array() : r.masks[0], b, n);
        const Vec keep_q = keep_row(r.masks.size() > 1 ? r.masks[1] : Array(), b, m);
        for (int64_t j = 0; j < m; ++j) {  // α: column j over the document positions
            Vec col(static_cast<size_t>(n)), keep(static_cast<size_t>(n));
            for (int64_t i = 0; i < n; ++i) {
                col[static_cast<size_t>(i)] = dot(row(D, b, i), row(Q, b, j));
                keep[static_cast<size_t>(i)] = keep_d[static_cast<size_t>(i)] * keep_q[static_cast<size_t>(j)];
            }
            const Vec a = softmax(col, keep);
            for (int64_t i = 0; i < n; ++i) alpha(b, i, j) = a[static_cast<size_t>(i)];
        }
        for (int64_t i = 0; i < n; ++i) {  // β: row i over the query words
            Vec e(static_cast<size_t>(m)), keep(static_cast<size_t>(m));
            for (int64_t j = 0; j < m; ++j) {
                e[static_cast<size_t>(j)] = dot(row(D, b, i), row(Q, b, j));
                keep[static_cast<size_t>(j)] = keep_d[static_cast<size_t>(i)] * keep_q[static_cast<size_t>(j)];
            }
            set_row(beta, b, i, softmax(e, keep));
        }
        const double n_doc = std::max(sum(keep_d), 1.0);
        for (int64_t j = 0; j < m; ++j) {
            double total = 0;
            for (int64_t i = 0; i < n; ++i) total += beta(b, i, j);
            beta_mean(b, j) = total / n_doc;
        }
        for (int64_t i = 0; i < n; ++i) {
            double si = 0;
            for (int64_t j = 0; j < m; ++j) si += alpha(b, i, j) * beta_mean(b, j);
            s(b, i) = si;
        }
    }
    return {{"output", s}, {"alpha", alpha}, {"beta", beta}, {"beta_mean", beta_mean}};
}

// 35 and 36: a self-attentive pooling with the score e_l of key k_l;
// a = softmax(e), c = Σ_l a_l v_l (keys = values when one input is given).
std::vector<Expected> self_pooling_reference(const Ref& r, const Function<double(const Vec&)>& score) {
    const Array& K = r.x[0];
    const Array& V = r.x.size() > 1 ? r.x[1] : r.x[0];
    const int64_t B = K.size(0), n = K.size(1);
    Array c({B, 1, V.size(2)}), weights({B, 1, n});
    for (int64_t b = 0; b < B; ++b) {
        Vec e(static_cast<size_t>(n));
        for (int64_t l = 0; l < n; ++l) e[static_cast<size_t>(l)] = score(row(K, b, l));
        const Vec a = softmax(e, keep_row(r.masks.empty() ? Array() : r.masks[0], b, n));
        set_row(weights, b, 0, a);
        set_row(c, b, 0, context(a, V, b));
    }
    return {{"output", c}, {"weights", weights}};
}

// 35. constant_query_self_attention: e_l = wᵀ act(W k_l + b)
std::vector<Expected> constant_query_self_attention_reference(const Ref& r, double (*act)(double)) {
    const Array W = r.p["W"];
    const Vec bias = vec(r.p["b"]), w = vec(r.p["w"]);
    return self_pooling_reference(r, [&](const Vec& k) { return dot(w, each(add(matvec(W, k), bias), act)); });
}

// 36. learned_query_self_attention: e_l = qᵀ k_l, or qᵀ k_l / √d_k
std::vector<Expected> learned_query_self_attention_reference(const Ref& r, bool scaled) {
    const Vec q = vec(r.p["q"]);
    return self_pooling_reference(r, [&](const Vec& k) {
        return dot(q, k) / (scaled ? std::sqrt(double(k.size())) : 1.0);
    });
}

// ---- the registry entries ---------------------------------------------------------------

Outputs luong_outputs(const LuongAttention::Output& o) {
    return {{"output", o.output}, {"context", o.context}, {"weights", o.weights}};
}
// Example 0 keeps 3 of 4 keys, example 1 all 4.
Tensor lengths_3_4() { return keep_first({3, 4}, 4); }

const RegisterEntry bahdanau_entry(31, "bahdanau_attention", {
    {.variant = "2 queries of 3, 4 states of 5, d_w 6, lengths 3 and 4",
     .inputs = {Shape{2, 2, 3}, Shape{2, 4, 5}},
     .masks = {lengths_3_4()},
     .make = [](Generator& g) { return std::make_unique<BahdanauAttention>(3, 5, 6, g); },
     .run = [](Module* m, In x, Masks k) {
         return output_and_weights(as<BahdanauAttention>(m).forward(x[0], x[1], k[0]));
     },
     .reference = bahdanau_attention_reference,
     .masking = {{.mask = 0, .inputs = {1}, .weights = {"weights"}, .zero_when_empty = {"output"}}},
     .properties = {rows_sum_to_one("weights"), convex_combination("output", 1, 0)}},
    {.variant = "one decoder step on a precomputed memory, d_s = d_h = d_w = 4",
     .inputs = {Shape{2, 1, 4}, Shape{2, 5, 4}},
     .masks = {keep_first({5, 2}, 5)},
     .make = [](Generator& g) { return std::make_unique<BahdanauAttention>(4, 4, 4, g); },
     .run = [](Module* m, In x, Masks k) {
         auto& att = as<BahdanauAttention>(m);
         const AttentionOutput o = att.step(squeeze(x[0], 1), att.precompute(x[1], k[0]));
         return Outputs{{"output", unsqueeze(o.output, 1)}, {"weights", unsqueeze(o.weights, 1)}};
     },
     .reference = bahdanau_attention_reference,
     .masking = {{.mask = 0, .inputs = {1}, .weights = {"weights"}, .zero_when_empty = {"output"}}}},
});

LuongAttention::Options luong(const std::string& score, const std::string& align, int64_t window = 1) {
    return {.score = score, .align = align, .window = window, .max_length = 6, .attention_dim = 3};
}

Case luong_case(std::string variant, int64_t d_s, int64_t d_h, int64_t m, int64_t n, std::string score,
                std::string align, LuongCase lc, Tensor mask) {
    const bool soft = lc.align != LuongAlign::local_p;
    Case c{.variant = std::move(variant),
           .inputs = {Shape{2, m, d_s}, Shape{2, n, d_h}},
           .masks = {std::move(mask)},
           .make = [=](Generator& g) { return std::make_unique<LuongAttention>(d_s, d_h, luong(score, align, lc.D), g); },
           .run = [](Module* mod, In x, Masks k) {
               return luong_outputs(as<LuongAttention>(mod).forward(x[0], x[1], k[0]));
           },
           .reference = [lc](const Ref& r) { return luong_attention_reference(r, lc); },
           .masking = {{.mask = 0, .inputs = {1}, .weights = {"weights"}, .zero_when_empty = {"context"}}},
           .properties = {bounded("output", -1, 1)}};
    if (soft) c.properties.push_back(rows_sum_to_one("weights"));
    return c;
}

const RegisterEntry luong_entry(32, "luong_attention", {
    luong_case("dot score, global, d_s = d_h = 4, lengths 3 and 4", 4, 4, 2, 4, "dot", "soft",
               {LuongScore::dot, LuongAlign::soft}, lengths_3_4()),
    luong_case("scaled dot score, global", 4, 4, 3, 5, "scaled", "soft", {LuongScore::scaled, LuongAlign::soft},
               keep_first({5, 2}, 5)),
    luong_case("general score, d_s 3 ≠ d_h 4, global", 3, 4, 2, 5, "general", "soft",
               {LuongScore::general, LuongAlign::soft}, keep_first({4, 5}, 5)),
    luong_case("general score, square W (d_s = d_h = 4), global", 4, 4, 3, 4, "general", "soft",
               {LuongScore::general, LuongAlign::soft}, lengths_3_4()),
    luong_case("general score, local-m D = 1, query i at position i", 3, 4, 3, 5, "general", "local-m",
               {LuongScore::general, LuongAlign::local_m, 1}, keep_first({5, 4}, 5)),
    luong_case("concat (additive) score, d_w 3, global", 3, 2, 2, 4, "concat", "soft",
               {LuongScore::concat, LuongAlign::soft}, lengths_3_4()),
    luong_case("location score, max length 6, global", 3, 2, 2, 4, "location", "soft",
               {LuongScore::location, LuongAlign::soft}, lengths_3_4()),
    luong_case("general score, local-p D = 2", 3, 3, 2, 6, "general", "local-p",
               {LuongScore::general, LuongAlign::local_p, 2}, keep_first({6, 5}, 6)),
    luong_case("concat score, local-p D = 1", 2, 3, 3, 5, "concat", "local-p",
               {LuongScore::concat, LuongAlign::local_p, 1}, keep_first({5, 5}, 5)),
    {.variant = "one decoder step t = 3, general score, local-m D = 1",
     .inputs = {Shape{2, 3}, Shape{2, 6, 2}},
     .masks = {keep_first({6, 5}, 6)},
     .make = [](Generator& g) { return std::make_unique<LuongAttention>(3, 2, luong("general", "local-m", 1), g); },
     .run = [](Module* m, In x, Masks k) { return luong_outputs(as<LuongAttention>(m).step(x[0], x[1], k[0], 3)); },
     .reference = [](const Ref& r) { return luong_attention_reference(r, {LuongScore::general, LuongAlign::local_m, 1, 3}); },
     .properties = {rows_sum_to_one("weights")}},
});

const RegisterEntry specialized_entry(33, "specialized_query_attention", {
    {.variant = "mean of the other input, general score, both masked",
     .inputs = {Shape{2, 3, 4}, Shape{2, 5, 3}, Shape{2, 5, 2}},
     .masks = {keep_first({4, 5}, 5), keep_first({2, 3}, 3)},
     .make = [](Generator& g) {
         return std::make_unique<SpecializedQueryAttention>(
             std::make_unique<MeanQuery>(), std::make_unique<GeneralScore>(4, 3, g), std::make_unique<SoftAlignment>());
     },
     .run = [](Module* m, In x, Masks k) {
         return output_and_weights(as<SpecializedQueryAttention>(m).forward(x[0], x[1], x[2], k[0], k[1]));
     },
     .reference = [](const Ref& r) { return specialized_query_attention_reference(r, false, false); },
     .masking = {{.mask = 0, .inputs = {1, 2}, .weights = {"weights"}, .zero_when_empty = {"output"}},
                 {.mask = 1, .inputs = {0}, .weights = {}}},
     .properties = {rows_sum_to_one("weights"), convex_combination("output", 2, 0),
                    permutation_invariant({0}, {1}, {"output", "weights"})}},
    {.variant = "a callable builder tanh(mean), additive score",
     .inputs = {Shape{2, 3, 4}, Shape{2, 4, 3}, Shape{2, 4, 3}},
     .masks = {lengths_3_4(), keep_first({3, 1}, 3)},
     .make = [](Generator& g) {
         return std::make_unique<SpecializedQueryAttention>(
             [](const Var& other, const Tensor& mask) { return tanh(masked_mean(other, mask)); },
             std::make_unique<AdditiveScore>(4, 3, 5, g), std::make_unique<SoftAlignment>());
     },
     .run = [](Module* m, In x, Masks k) {
         return output_and_weights(as<SpecializedQueryAttention>(m).forward(x[0], x[1], x[2], k[0], k[1]));
     },
     .reference = [](const Ref& r) { return specialized_query_attention_reference(r, true, true); },
     .masking = {{.mask = 0, .inputs = {1, 2}, .weights = {"weights"}, .zero_when_empty = {"output"}}}},
});

Outputs aoa_outputs(const AttentionOverAttentionOutput& o) {
    return {{"output", o.output}, {"alpha", o.alpha}, {"beta", o.beta}, {"beta_mean", o.beta_mean}};
}

const RegisterEntry aoa_entry(34, "attention_over_attention", {
    {.variant = "5 document words, 3 query words, both masked",
     .inputs = {Shape{2, 5, 3}, Shape{2, 3, 3}},
     .masks = {keep_first({5, 3}, 5), keep_first({2, 3}, 3)},
     .run = [](Module*, In x, Masks k) { return aoa_outputs(attention_over_attention(x[0], x[1], k[0], k[1])); },
     .reference = attention_over_attention_reference,
     .masking = {{.mask = 0, .inputs = {0}, .weights = {"output"}, .zero_when_empty = {"alpha", "beta", "beta_mean"}},
                 {.mask = 1, .inputs = {1}, .weights = {"alpha", "beta", "beta_mean"}, .zero_when_empty = {"output"}}},
     .properties = {rows_sum_to_one("output"), columns_sum_to_one("alpha"), rows_sum_to_one("beta")}},
    {.variant = "no masks, 4 document words, 2 query words",
     .inputs = {Shape{2, 4, 2}, Shape{2, 2, 2}},
     .masks = {Tensor(), Tensor()},
     .run = [](Module*, In x, Masks) { return aoa_outputs(attention_over_attention(x[0], x[1])); },
     .reference = attention_over_attention_reference,
     .properties = {rows_sum_to_one("output"), columns_sum_to_one("alpha"), rows_sum_to_one("beta_mean")}},
});

const RegisterEntry constant_query_entry(35, "constant_query_self_attention", {
    {.variant = "features 4 of 3 (keys = values), d_w 5, lengths 3 and 4",
     .inputs = {Shape{2, 4, 3}},
     .masks = {lengths_3_4()},
     .make = [](Generator& g) { return std::make_unique<ConstantQuerySelfAttention>(3, 5, g); },
     .run = [](Module* m, In x, Masks k) {
         return output_and_weights(as<ConstantQuerySelfAttention>(m).forward(x[0], k[0]));
     },
     .reference = [](const Ref& r) { return constant_query_self_attention_reference(r, tanh_); },
     .masking = {{.mask = 0, .inputs = {0}, .weights = {"weights"}, .zero_when_empty = {"output"}}},
     .properties = {rows_sum_to_one("weights"), convex_combination("output", 0, 0),
                    permutation_invariant({0}, {0}, {"output"}), permutation_equivariant_keys({0}, {0}, {"weights"})}},
    {.variant = "separate keys (3) and values (2), sigmoid, d_w 4",
     .inputs = {Shape{2, 4, 3}, Shape{2, 4, 2}},
     .masks = {keep_first({4, 2}, 4)},
     .make = [](Generator& g) { return std::make_unique<ConstantQuerySelfAttention>(3, 4, g, Activation::sigmoid); },
     .run = [](Module* m, In x, Masks k) {
         return output_and_weights(as<ConstantQuerySelfAttention>(m).forward(x[0], x[1], k[0]));
     },
     .reference = [](const Ref& r) { return constant_query_self_attention_reference(r, sigmoid); },
     .masking = {{.mask = 0, .inputs = {0, 1}, .weights = {"weights"}, .zero_when_empty = {"output"}}},
     .properties = {convex_combination("output", 1, 0), permutation_invariant({0, 1}, {0}, {"output"})}},
    {.variant = "square W (d_k = d_w = 4), relu: a transposed W gives other values",
     .inputs = {Shape{2, 5, 4}},
     .masks = {keep_first({5, 3}, 5)},
     .make = [](Generator& g) { return std::make_unique<ConstantQuerySelfAttention>(4, 4, g, Activation::relu); },
     .run = [](Module* m, In x, Masks k) {
         return output_and_weights(as<ConstantQuerySelfAttention>(m).forward(x[0], k[0]));
     },
     .reference = [](const Ref& r) { return constant_query_self_attention_reference(r, relu); },
     .masking = {{.mask = 0, .inputs = {0}, .weights = {"weights"}, .zero_when_empty = {"output"}}}},
});

const RegisterEntry learned_query_entry(36, "learned_query_self_attention", {
    {.variant = "dot, keys of 3, values of 2, lengths 3 and 4",
     .inputs = {Shape{2, 4, 3}, Shape{2, 4, 2}},
     .masks = {lengths_3_4()},
     .make = [](Generator& g) { return std::make_unique<LearnedQuerySelfAttention>(3, g); },
     .run = [](Module* m, In x, Masks k) {
         return output_and_weights(as<LearnedQuerySelfAttention>(m).forward(x[0], x[1], k[0]));
     },
     .reference = [](const Ref& r) { return learned_query_self_attention_reference(r, false); },
     .masking = {{.mask = 0, .inputs = {0, 1}, .weights = {"weights"}, .zero_when_empty = {"output"}}},
     .properties = {rows_sum_to_one("weights"), convex_combination("output", 1, 0),
                    permutation_invariant({0, 1}, {0}, {"output"})}},
    {.variant = "scaled dot, keys = values of 5",
     .inputs = {Shape{2, 4, 5}},
     .masks = {keep_first({2, 4}, 4)},
     .make = [](Generator& g) { return std::make_unique<LearnedQuerySelfAttention>(5, g, /*scaled=*/true); },
     .run = [](Module* m, In x, Masks k) {
         return output_and_weights(as<LearnedQuerySelfAttention>(m).forward(x[0], k[0]));
     },
     .reference = [](const Ref& r) { return learned_query_self_attention_reference(r, true); },
     .masking = {{.mask = 0, .inputs = {0}, .weights = {"weights"}, .zero_when_empty = {"output"}}}},
});

}  // namespace

// ---- 31. bahdanau_attention -----------------------------------------------------------------

TEST_CASE("bahdanau_attention: v_a = 0 makes c_i the masked mean of H") {
    Generator gen(31);
    BahdanauAttention att(3, 4, 5, gen);
    att.score.w.value().fill_(0);
    const Tensor H = normal({2, 5, 4}, gen);
    const AttentionOutput out = att.step(Var(normal({2, 3}, gen)), att.precompute(Var(H), length_mask({2, 5}, 5)));
    // example 0: the mean of its first two states; example 1: of all five
    const Tensor want = concat({mean(slice(H, 1, 0, 2).rows(0, 1), 1), mean(H.rows(1, 2), 1)}, 0);
    check_close(out.output.value(), want, 1e-6);
    check_close(out.weights.value(), Tensor::from({0.5, 0.5, 0, 0, 0, 0.2, 0.2, 0.2, 0.2, 0.2}, {2, 5}), 1e-6);
}

TEST_CASE("bahdanau_attention: projecting H U_a once per sequence equals recomputing it every step") {
    Generator gen(32);
    BahdanauAttention att(4, 6, 5, gen);
    const Var H(normal({3, 7, 6}, gen));
    const Tensor mask = length_mask({7, 4, 1}, 7);
    const BahdanauAttention::Memory memory = att.precompute(H, mask);  // once
    std::vector<Var> states;
    for (int t = 0; t < 4; ++t) {
        const Var s(normal({3, 4}, gen));
        states.push_back(s);
        const AttentionOutput once = att.step(s, memory);
        const AttentionOutput every = att.step(s, att.precompute(H, mask));
        CHECK(allclose(once.output.value(), every.output.value(), 0, 0));  // bit for bit
        CHECK(allclose(once.weights.value(), every.weights.value(), 0, 0));
    }
    // and the decoder loop equals all the queries at once
    const AttentionOutput all = att.forward(stack(states, 1), H, mask);
    for (int t = 0; t < 4; ++t) {
        const AttentionOutput one = att.step(states[static_cast<size_t>(t)], memory);
        check_close(one.output.value(), squeeze(slice(all.output.value(), 1, t, t + 1), 1), 1e-12);
    }
}

TEST_CASE("bahdanau_attention: a fully masked source gives zero weights, zero context and zero gradient") {
    Generator gen(33);
    BahdanauAttention att(3, 4, 5, gen);
    const Var s(normal({2, 3}, gen), true);
    const Var H(normal({2, 4, 4}, gen), true);
    const AttentionOutput out = att.step(s, att.precompute(H, length_mask({0, 4}, 4)));
    sum(out.output).backward();
    for (int64_t i = 0; i < 4; ++i) CHECK(out.weights.value()[i] == 0);
    for (int64_t i = 0; i < 4; ++i) CHECK(out.output.value()[i] == 0);
    for (int64_t i = 0; i < 3; ++i) CHECK(s.grad()[i] == 0);
    for (int64_t i = 0; i < 16; ++i) CHECK(H.grad()[i] == 0);
}

TEST_CASE("bahdanau_attention: shape errors name the mechanism and the shapes") {
    Generator gen(34);
    BahdanauAttention att(16, 32, 8, gen);
    const auto memory = att.precompute(Var(Tensor::zeros({5, 7, 32})));
    try {
        att.forward(Var(Tensor::zeros({4, 1, 16})), memory);
        FAIL("expected an exception");
    } catch (const std::invalid_argument& e) {
        CHECK(std::string(e.what()) ==
              "bahdanau_attention: queries 4×1×16 and encoder states 5×7×32 need the same batch size");
    }
    CHECK_THROWS_AS(att.precompute(Var(Tensor::zeros({5, 7, 31}))), std::invalid_argument);
    CHECK_THROWS_AS(att.precompute(Var(Tensor::zeros({5, 7, 32})), length_mask({1, 2}, 7)), std::invalid_argument);
}

// ---- 32. luong_attention --------------------------------------------------------------------

TEST_CASE("luong_attention: the location score's weights ignore the encoder states") {
    Generator gen(41);
    LuongAttention att(3, 4, luong("location", "soft"), gen);
    const Var h(normal({2, 2, 3}, gen));
    const auto a = att.forward(h, Var(normal({2, 5, 4}, gen))).weights.value();
    const auto b = att.forward(h, Var(normal({2, 5, 4}, gen))).weights.value();
    CHECK(allclose(a, b, 0, 0));
    CHECK_THROWS_AS(att.forward(h, Var(normal({2, 7, 4}, gen))), std::invalid_argument);  // longer than n_max = 6
}

TEST_CASE("luong_attention: dot and general scores over identical encoder states give uniform weights") {
    Generator gen(42);
    const Tensor row = normal({1, 1, 4}, gen);
    const Var H(expand(row, {2, 5, 4}));
    for (const char* score : {"dot", "general"}) {
        LuongAttention att(4, 4, luong(score, "soft"), gen);
        const Tensor w = att.forward(Var(normal({2, 3, 4}, gen)), H, length_mask({5, 4}, 5)).weights.value();
        for (int64_t q = 0; q < 3; ++q) {
            for (int64_t l = 0; l < 5; ++l) CHECK(std::abs(w.at({0, q, l}) - 0.2) < 1e-12);
            for (int64_t l = 0; l < 5; ++l) CHECK(std::abs(w.at({1, q, l}) - (l < 4 ? 0.25 : 0.0)) < 1e-12);
        }
    }
}

TEST_CASE("luong_attention: h̃_t = tanh(W_c [c_t; h_t]); local-m's step t attends only within D of t") {
    Generator gen(43);
    LuongAttention att(3, 2, luong("general", "local-m", 1), gen);
    const Var H(normal({2, 6, 2}, gen));
    const Var h(normal({2, 3}, gen));
    const LuongAttention::Output out = att.step(h, H, Tensor(), 4);
    const Tensor want = tanh(matmul(concat({out.context.value(), h.value()}, -1), att.W_c.value(), false, true));
    check_close(out.output.value(), want, 1e-12);
    for (int64_t b = 0; b < 2; ++b) {
        real total = 0;
        for (int64_t l = 0; l < 6; ++l) {
            if (l < 3) CHECK(out.weights.value().at({b, l}) == 0);
            total += out.weights.value().at({b, l});
        }
        CHECK(std::abs(total - 1) < 1e-12);
    }
    CHECK(att.taxonomy().alignment == "local-m");
    CHECK_THROWS_WITH_AS(LuongAttention(3, 2, luong("dot", "soft"), gen),
                         "dot_score compares queries and keys by a dot product: it needs d_q = d_k, got 3 and 2",
                         std::invalid_argument);
}

// ---- 33. specialized_query_attention ------------------------------------------------------------

TEST_CASE("specialized_query_attention: tagged specialized; the weights follow the other input") {
    Generator gen(51);
    SpecializedQueryAttention att(std::make_unique<MeanQuery>(), std::make_unique<DotScore>(),
                                  std::make_unique<SoftAlignment>());
    CHECK(att.taxonomy().query == "specialized");
    const Var keys(normal({2, 5, 3}, gen));
    const Tensor a = att.forward(Var(normal({2, 4, 3}, gen)), keys, keys).weights.value();
    const Tensor b = att.forward(Var(normal({2, 4, 3}, gen)), keys, keys).weights.value();
    CHECK_FALSE(allclose(a, b, 0, 1e-6));
    // the query is the (masked) mean of the other input
    const Tensor other = normal({1, 3, 3}, gen);
    const Tensor q = att.query(Var(other), length_mask({2}, 3)).value();
    check_close(q, mean(slice(other, 1, 0, 2), 1, true), 1e-12);
}

// ---- 34. attention_over_attention ---------------------------------------------------------------

TEST_CASE("attention_over_attention: s sums to 1; with one query word it is softmax(H_d h_q)") {
    Generator gen(61);
    const Var Hd(normal({2, 6, 4}, gen)), Hq(normal({2, 3, 4}, gen));
    const auto out = attention_over_attention(Hd, Hq, length_mask({6, 4}, 6), length_mask({3, 2}, 3));
    for (int64_t b = 0; b < 2; ++b) {
        real total = 0;
        for (int64_t i = 0; i < 6; ++i) total += out.output.value().at({b, i});
        CHECK(std::abs(total - 1) < 1e-12);
    }
    CHECK(out.output.value().at({1, 4}) == 0);  // padded document words get nothing
    CHECK(out.output.value().at({1, 5}) == 0);
    CHECK(std::abs(sum(attention_over_attention(Hd, Hq).output.value()).item() - 2) < 1e-12);

    const Var hq(normal({2, 1, 4}, gen));
    const Tensor s = attention_over_attention(Hd, hq).output.value();
    const Tensor want = softmax(squeeze(matmul(Hd.value(), hq.value(), false, true), -1), -1);
    check_close(s, want, 1e-12);
}

TEST_CASE("attention_over_attention: a candidate scores the sum of s where it occurs") {
    const Var s(Tensor::from({0.1, 0.2, 0.3, 0.4}, {1, 4}));
    const Tensor tokens = Tensor::from({5, 7, 5, 2}, {1, 4});
    const Tensor scores = candidate_scores(s, tokens, Tensor::from({5, 2, 9}, {1, 3})).value();
    check_close(scores, Tensor::from({0.4, 0.4, 0}, {1, 3}), 1e-12);
}

// ---- 35. constant_query_self_attention ---------------------------------------------------------

TEST_CASE("constant_query_self_attention: equals the additive score with q = 0; order does not matter") {
    Generator gen(71);
    ConstantQuerySelfAttention att(3, 5, gen);
    AdditiveScore additive(2, 3, 5, gen);
    additive.W_2.value().copy_(att.W.value());
    additive.b.value().copy_(att.b.value());
    additive.w.value().copy_(att.w.value());
    const Tensor K = normal({2, 4, 3}, gen);
    check_close(att.scores(Var(K)).value(), additive.score(Var(Tensor::zeros({2, 1, 2})), Var(K)).value(), 1e-12);

    const Tensor V = normal({2, 4, 2}, gen);
    const std::vector<int64_t> perm{2, 0, 3, 1};
    const AttentionOutput a = att.forward(Var(K), Var(V));
    const AttentionOutput b = att.forward(Var(index_select(K, 1, perm)), Var(index_select(V, 1, perm)));
    check_close(a.output.value(), b.output.value(), 1e-12);
    check_close(index_select(a.weights.value(), 2, perm), b.weights.value(), 1e-12);
    CHECK(att.taxonomy().query == "self");
}

// ---- 36. learned_query_self_attention ----------------------------------------------------------

TEST_CASE("learned_query_self_attention: q = 0 is mean pooling; a large q picks the arg-max key") {
    Generator gen(81);
    LearnedQuerySelfAttention att(3, gen);
    const Tensor K = normal({2, 5, 3}, gen);
    att.q.value().fill_(0);
    const AttentionOutput mean_pool = att.forward(Var(K), length_mask({5, 2}, 5));
    const Tensor want = concat({mean(K.rows(0, 1), 1), mean(slice(K.rows(1, 2), 1, 0, 2), 1)}, 0);
    check_close(squeeze(mean_pool.output.value(), 1), want, 1e-12);

    const Tensor u = Tensor::from({0.6, -0.8, 0.0});
    att.q.value().copy_(mul(u, real(60)));
    const Tensor w = att.forward(Var(K)).weights.value();
    const Tensor best = argmax(squeeze(matmul(K, u.reshape(Shape{3, 1})), -1), -1);
    for (int64_t b = 0; b < 2; ++b) CHECK(w.at({b, 0, static_cast<int64_t>(best[b])}) > 0.999);
}
