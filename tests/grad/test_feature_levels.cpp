// Feature levels and representations, catalog entries 11 and 14
// (attention/feature_levels.hpp): their independent references and registry
// entries (tests/grad/catalog.hpp), and each entry's property from the catalog
// in double precision.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "attention/feature_levels.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/catalog.hpp"
#include "tests/grad/helpers.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

// ---- the independent references: the catalog's formulas in plain loops ------------------

// One additive attention read of the module `prefix` ("word_score."):
//   a = softmax_l(wᵀ tanh(W_1 q + W_2 f_l + b)) over the kept f_l,  c = Σ_l a_l f_l
// q d_q, F B×n×d_f (example b), keep n → (a n, c d_f)
struct Read {
    Vec weights, context;
};
Read additive_read(const Ref& r, const std::string& prefix, const Vec& q, const Array& F, int64_t b,
                   const Vec& keep) {
    const Array W_1 = r.p[prefix + "W_1"], W_2 = r.p[prefix + "W_2"];
    const Vec bias = vec(r.p[prefix + "b"]), w = vec(r.p[prefix + "w"]);
    const int64_t n = F.size(1), d_f = F.size(2);
    Vec e(static_cast<size_t>(n));
    for (int64_t l = 0; l < n; ++l) {
        const Vec pre = add(add(matvec(W_1, q), matvec(W_2, row(F, b, l))), bias);
        e[static_cast<size_t>(l)] = dot(w, each(pre, tanh_));
    }
    Read out{softmax(e, keep), Vec(static_cast<size_t>(d_f), 0.0)};
    for (int64_t l = 0; l < n; ++l)
        out.context = add(out.context, scale(row(F, b, l), out.weights[static_cast<size_t>(l)]));
    return out;
}

// 11: c^(w) = Attn_w(q; F^(w)),  c^(c) = Attn_c([q; c^(w)]; F^(c)),  output [c^(c); c^(w)]
//     (Attn: the additive read above; Attn_c's W_1 is d_a×(d_q + d_w))
// queries B×m×d_q, characters B×n_c×d_c, words B×n_w×d_w; masks B×n_c, B×n_w
// → output B×m×(d_c + d_w), contexts B×m×d_c and B×m×d_w, weights B×m×n_c and B×m×n_w
std::vector<Expected> attention_via_attention_reference(const Ref& r) {
    const Array &Q = r.x[0], &C = r.x[1], &W = r.x[2];
    const int64_t B = Q.size(0), m = Q.size(1), n_c = C.size(1), d_c = C.size(2), n_w = W.size(1), d_w = W.size(2);
    Array output({B, m, d_c + d_w}), cc({B, m, d_c}), cw({B, m, d_w}), ac({B, m, n_c}), aw({B, m, n_w});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < m; ++i) {
            const Read word = additive_read(r, "word_score.", row(Q, b, i), W, b, keep_row(mask_or_all(r, 1), b, n_w));
            const Read character = additive_read(r, "character_score.", concat(row(Q, b, i), word.context), C, b,
                                                 keep_row(mask_or_all(r, 0), b, n_c));
            set_row(output, b, i, concat(character.context, word.context));
            set_row(cc, b, i, character.context);
            set_row(cw, b, i, word.context);
            set_row(ac, b, i, character.weights);
            set_row(aw, b, i, word.weights);
        }
    return {{"output", output}, {"character_context", cc}, {"word_context", cw},
            {"character_weights", ac}, {"word_weights", aw}};
}

// 14: x^(t_i) = W_i x^(e_i) + b_i;  a_i = softmax_i(uᵀ x^(t_i) + b);  x^(e) = Σ_i a_i x^(t_i)
// E sources B×n×d_{e_i} → output B×n×d_t, weights B×n×E
std::vector<Expected> meta_embedding_attention_reference(const Ref& r) {
    const size_t E = r.x.size();
    const Vec u = vec(r.p["u"]);
    const double b_score = r.p["b"][0];
    const int64_t B = r.x[0].size(0), n = r.x[0].size(1), d_t = static_cast<int64_t>(u.size());
    Array output({B, n, d_t}), weights({B, n, static_cast<int64_t>(E)});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < n; ++t) {
            std::vector<Vec> x(E);
            Vec e(E);
            for (size_t i = 0; i < E; ++i) {
                const std::string k = std::to_string(i);
                x[i] = add(matvec(r.p["W_" + k], row(r.x[i], b, t)), vec(r.p["b_" + k]));
                e[i] = dot(u, x[i]) + b_score;
            }
            const Vec a = softmax(e);
            Vec mixed(static_cast<size_t>(d_t), 0.0);
            for (size_t i = 0; i < E; ++i) mixed = add(mixed, scale(x[i], a[i]));
            set_row(output, b, t, mixed);
            set_row(weights, b, t, a);
        }
    return {{"output", output}, {"weights", weights}};
}

// ---- runs ---------------------------------------------------------------------------------

Outputs run_via(Module* m, In x, Masks masks) {
    const AttentionViaAttentionOutput o =
        as<AttentionViaAttention>(m).forward(x[0], x[1], x[2], mask_or_none(masks, 0), mask_or_none(masks, 1));
    return {{"output", o.output},
            {"character_context", o.character_context},
            {"word_context", o.word_context},
            {"character_weights", o.character_weights},
            {"word_weights", o.word_weights}};
}

Outputs run_meta(Module* m, In x, Masks) {
    const AttentionOutput o = as<MetaEmbeddingAttention>(m).forward(x);
    return {{"output", o.output}, {"weights", o.weights}};
}

// The masks of entry 11: mask 0 covers the characters (input 1), mask 1 the words (input 2).
const KeySet characters_masked{.mask = 0, .inputs = {1}, .weights = {"character_weights"},
                               .zero_when_empty = {"character_context"}};
const KeySet words_masked{.mask = 1, .inputs = {2}, .weights = {"word_weights"}, .zero_when_empty = {"word_context"}};

std::vector<Property> via_properties(bool masked) {
    return {rows_sum_to_one("character_weights"), rows_sum_to_one("word_weights"),
            convex_combination("character_context", 1, masked ? 0 : -1),
            convex_combination("word_context", 2, masked ? 1 : -1),
            // the characters are a set to the character attention: reversing them reverses its weights
            permutation_equivariant_keys({1}, masked ? std::vector<int>{0} : std::vector<int>{},
                                         {"character_weights"}),
            permutation_invariant({2}, masked ? std::vector<int>{1} : std::vector<int>{}, {"output"})};
}

// 14: the scalar b is added to every source's score, so it cancels in the softmax.
const Property b_cancels{"changing the score's scalar b changes nothing", [](const PropertyContext& c) -> std::string {
                             auto& dme = *static_cast<MetaEmbeddingAttention*>(c.module);
                             const Tensor before = c.run(c.inputs, c.masks)["output"].clone();
                             const real saved = dme.b.value()[0];
                             dme.b.value()[0] = saved + 3;
                             const Tensor after = c.run(c.inputs, c.masks)["output"].clone();
                             dme.b.value()[0] = saved;
                             for (int64_t i = 0; i < before.numel(); ++i)
                                 if (std::abs(before[i] - after[i]) > 1e-12)
                                     return "output at " + std::to_string(i) + " moved from " +
                                            std::to_string(before[i]) + " to " + std::to_string(after[i]);
                             return "";
                         }};

// ---- the registry entries ---------------------------------------------------------------
const RegisterEntry attention_via_attention_entry(11, "attention_via_attention", {
    {.variant = "3 decoder steps, 5 characters of 2, 4 words of 3, d_a 4, both padded",
     .inputs = {Shape{2, 3, 3}, Shape{2, 5, 2}, Shape{2, 4, 3}},
     .masks = {keep_first({5, 3}, 5), keep_first({4, 2}, 4)},
     .make = [](Generator& g) { return std::make_unique<AttentionViaAttention>(3, 2, 3, 4, g); },
     .run = run_via,
     .reference = attention_via_attention_reference,
     .masking = {characters_masked, words_masked},
     .properties = via_properties(true)},
    {.variant = "square W_1 and W_2 of the word score (d_q = d_c = d_w = d_a = 3), no masks",
     .inputs = {Shape{2, 2, 3}, Shape{2, 4, 3}, Shape{2, 3, 3}},
     .make = [](Generator& g) { return std::make_unique<AttentionViaAttention>(3, 3, 3, 3, g); },
     .run = run_via,
     .reference = attention_via_attention_reference,
     .properties = via_properties(false)},
    {.variant = "one decoder step, 6 characters, 2 words of 4, only the characters padded",
     .inputs = {Shape{3, 1, 2}, Shape{3, 6, 3}, Shape{3, 2, 4}},
     .masks = {keep_first({6, 2, 4}, 6)},
     .make = [](Generator& g) { return std::make_unique<AttentionViaAttention>(2, 3, 4, 5, g); },
     .run = run_via,
     .reference = attention_via_attention_reference,
     .masking = {characters_masked}},
});

const RegisterEntry meta_embedding_attention_entry(14, "meta_embedding_attention", {
    {.variant = "3 sources of widths 2, 4, 3 projected to d_t 3, 4 tokens",
     .inputs = {Shape{2, 4, 2}, Shape{2, 4, 4}, Shape{2, 4, 3}},
     .make = [](Generator& g) { return std::make_unique<MetaEmbeddingAttention>(std::vector<int64_t>{2, 4, 3}, 3, g); },
     .run = run_meta,
     .reference = meta_embedding_attention_reference,
     .properties = {rows_sum_to_one("weights"), b_cancels}},
    {.variant = "2 sources of width 3 to d_t 3: square W_i, a transposed W_i gives other values",
     .inputs = {Shape{2, 3, 3}, Shape{2, 3, 3}},
     .make = [](Generator& g) { return std::make_unique<MetaEmbeddingAttention>(std::vector<int64_t>{3, 3}, 3, g); },
     .run = run_meta,
     .reference = meta_embedding_attention_reference,
     .properties = {rows_sum_to_one("weights"), b_cancels}},
    {.variant = "4 sources of widths 1, 2, 5, 2 to d_t 2, one token",
     .inputs = {Shape{3, 1, 1}, Shape{3, 1, 2}, Shape{3, 1, 5}, Shape{3, 1, 2}},
     .make = [](Generator& g) {
         return std::make_unique<MetaEmbeddingAttention>(std::vector<int64_t>{1, 2, 5, 2}, 2, g);
     },
     .run = run_meta,
     .reference = meta_embedding_attention_reference},
    {.variant = "one source: the output is its projection",
     .inputs = {Shape{2, 3, 4}},
     .make = [](Generator& g) { return std::make_unique<MetaEmbeddingAttention>(std::vector<int64_t>{4}, 3, g); },
     .run = run_meta,
     .reference = meta_embedding_attention_reference},
});

}  // namespace

TEST_CASE("attention_via_attention: output width; with the c^(w) columns of W_1 zero it is plain attention") {
    Generator gen(15);
    AttentionViaAttention ava(3, 2, 4, 5, gen);
    const Var q = normal_var({2, 3, 3}, gen), chars = normal_var({2, 6, 2}, gen), words = normal_var({2, 3, 4}, gen);
    const Tensor mc = length_mask({6, 4}, 6), mw = length_mask({3, 2}, 3);
    const auto out = ava.forward(q, chars, words, mc, mw);
    CHECK(out.output.shape() == Shape{2, 3, 2 + 4});
    CHECK(out.character_weights.shape() == Shape{2, 3, 6});
    CHECK(out.word_weights.shape() == Shape{2, 3, 3});
    CHECK(ava.taxonomy().levels == "multi");
    CHECK_FALSE(single_level_attention(ava.taxonomy()));

    // Attn_c's W_1 is d_a×(d_q + d_w): zero its last d_w columns, those acting on c^(w)
    Tensor& W_1 = ava.character_score.W_1.value();
    for (int64_t r = 0; r < 5; ++r)
        for (int64_t c = 3; c < 7; ++c) W_1[r * 7 + c] = 0;
    const auto via = ava.forward(q, chars, words, mc, mw);
    AdditiveScore plain(3, 2, 5, gen);
    plain.W_1.value().copy_(slice(W_1, 1, 0, 3));
    plain.W_2.value().copy_(ava.character_score.W_2.value());
    plain.b.value().copy_(ava.character_score.b.value());
    plain.w.value().copy_(ava.character_score.w.value());
    const Var a = softmax(plain.score(q, chars), -1, SoftmaxMask::keep(key_mask(mc)));
    check_close(via.character_weights.value(), a.value());
    check_close(via.character_context.value(), attend(a, chars).value());
    // ...and the word level still changes the output: its context is the last d_w columns
    check_close(slice(via.output.value(), 2, 2, 6), via.word_context.value());
    CHECK_THROWS_AS(ava.forward(q, chars, normal_var({2, 3, 5}, gen)), std::invalid_argument);
}

TEST_CASE("meta_embedding_attention: E = 1 is the projection; sources permute with their parameters; b's gradient 0") {
    Generator gen(16);
    const Var x1 = normal_var({2, 3, 2}, gen), x2 = normal_var({2, 3, 4}, gen), x3 = normal_var({2, 3, 3}, gen);

    // E = 1: the output is W x + b_e
    MetaEmbeddingAttention one({4}, 3, gen);
    const auto single = one.forward({x2});
    check_close(single.output.value(), add(matmul(x2, one.W[0], false, true), one.b_e[0]).value());
    check_close(single.weights.value(), Tensor::ones({2, 3, 1}));

    // permuting the sources together with their parameters leaves the output unchanged
    MetaEmbeddingAttention dme({2, 4, 3}, 3, gen);
    const auto out = dme.forward({x1, x2, x3});
    MetaEmbeddingAttention permuted({3, 2, 4}, 3, gen);
    const std::vector<size_t> from{2, 0, 1};
    for (size_t i = 0; i < 3; ++i) {
        permuted.W[i].value().copy_(dme.W[from[i]].value());
        permuted.b_e[i].value().copy_(dme.b_e[from[i]].value());
    }
    permuted.u.value().copy_(dme.u.value());
    permuted.b.value().copy_(dme.b.value());
    check_close(permuted.forward({x3, x1, x2}).output.value(), out.output.value());

    // b is added to every source's score: its gradient is 0 (the registry checks that changing it changes nothing)
    dme.zero_grad();
    sum(mul(dme.forward({x1, x2, x3}).output, Var(Tensor::normal({2, 3, 3}, 0, 1, gen)))).backward();
    CHECK(std::abs(dme.b.grad()[0]) <= 1e-12);
    CHECK(max(abs(dme.u.grad())).item() > 1e-6);

    CHECK(dme.taxonomy().representations == "multi");
    CHECK_FALSE(single_representational_attention(dme.taxonomy()));
    CHECK_THROWS_AS(dme.forward({x1, x2}), std::invalid_argument);
    CHECK_THROWS_AS(dme.forward({x1, x2, normal_var({2, 4, 3}, gen)}), std::invalid_argument);
}
