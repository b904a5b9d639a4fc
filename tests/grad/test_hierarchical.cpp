// Hierarchical attention, catalog entry 12 (attention/hierarchical.hpp): its
// independent reference and registry entry (tests/grad/catalog.hpp), and the
// catalog's property tests in double precision.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "attention/hierarchical.hpp"
#include "nn/linear.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/catalog.hpp"
#include "tests/grad/helpers.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

// The way a model uses the hook: it owns the sentence encoder (here a Linear
// and tanh for HAN's BiGRU, zero on padded sentences as a GRU run to each
// document's length leaves them) and registers it beside the attention.
struct WithEncoder : Module {
    Linear encoder;
    HierarchicalAttention han;
    explicit WithEncoder(Generator& gen) : encoder(3, 2, gen), han(3, 4, 2, 3, gen) {
        register_module("encoder", encoder);
        register_module("han", han);
        han.set_sentence_encoder([this](const Var& sentences, const Tensor& mask) {
            const Var states = tanh(encoder(sentences));
            return mask.defined() ? states * Var(unsqueeze(mask, -1)) : states;
        });
    }
};

// ---- the independent reference: the catalog's formula in plain loops ----------------------

// One constant-query read (entry 35) by the level `prefix` ("word.", "sentence."):
//   a = softmax_l(uᵀ tanh(W h_l + b)) over the kept rows,  c = Σ_l a_l h_l
// H: the rows h_l, keep: 1 = real → (a, c)
struct Read {
    Vec weights, context;
};
Read constant_query_read(const Ref& r, const std::string& prefix, const std::vector<Vec>& H, const Vec& keep) {
    const Array W = r.p[prefix + "W"];
    const Vec b = vec(r.p[prefix + "b"]), u = vec(r.p[prefix + "w"]);
    Vec e(H.size());
    for (size_t l = 0; l < H.size(); ++l) e[l] = dot(u, testing::each(add(matvec(W, H[l]), b), tanh_));
    Read out{softmax(e, keep), Vec(H[0].size(), 0.0)};
    for (size_t l = 0; l < H.size(); ++l) out.context = add(out.context, scale(H[l], out.weights[l]));
    return out;
}

// Is word (b, s, t) real, is sentence (b, s) real? masks[0] is the word mask
// B×n_S×n_max, masks[1] the sentence mask B×n_S (either may be absent). A
// sentence is real when the sentence mask says so or, without one, when it
// has a real word.
struct Keep {
    Array words, sentences;
    double word(int64_t b, int64_t s, int64_t t) const { return words.numel() ? words(b, s, t) : 1.0; }
    double sentence(int64_t b, int64_t s) const {
        if (sentences.numel()) return sentences(b, s);
        if (!words.numel()) return 1.0;
        double any = 0;
        for (int64_t t = 0; t < words.size(2); ++t) any = std::max(any, words(b, s, t));
        return any;
    }
};
Keep keep_of(const std::vector<Array>& masks) {
    return {masks.size() > 0 ? masks[0] : Array(), masks.size() > 1 ? masks[1] : Array()};
}

// 12: word level, for each sentence s:  α_t = softmax_t(u_wᵀ tanh(W_w h_t + b_w)),  c^(s) = Σ_t α_t h_t
//     (with a sentence encoder: c^(s) ← tanh(W_e c^(s) + b_e), 0 for a padded sentence: the test's
//     stand-in for HAN's BiGRU)
//     sentence level:  β_s = softmax_s(u_Sᵀ tanh(W_s c^(s) + b_s)),  c^(D) = Σ_s β_s c^(s)
// words B×n_S×n_max×d → document B×d', word weights B×n_S×n_max, sentence weights B×n_S,
// sentences B×n_S×d'. `prefix` names the attention inside the model ("han." or "").
std::vector<Expected> hierarchical_attention_reference(const Ref& r, const std::string& prefix, bool encoder) {
    const Array& X = r.x[0];
    const Keep keep = keep_of(r.masks);
    const int64_t B = X.size(0), n_S = X.size(1), n_max = X.size(2);
    const int64_t d_out = encoder ? r.p["encoder.weight"].size(0) : X.size(3);
    Array document({B, d_out}), alpha({B, n_S, n_max}), beta({B, n_S}), sentences({B, n_S, d_out});
    for (int64_t b = 0; b < B; ++b) {
        std::vector<Vec> C;
        Vec sentence_keep;
        for (int64_t s = 0; s < n_S; ++s) {
            std::vector<Vec> H;
            Vec word_keep;
            for (int64_t t = 0; t < n_max; ++t) {
                H.push_back(row(X, b, s, t));
                word_keep.push_back(keep.word(b, s, t));
            }
            const Read words = constant_query_read(r, prefix + "word.", H, word_keep);
            set_row(alpha, b, s, words.weights);
            Vec c = words.context;
            if (encoder)
                c = scale(testing::each(add(matvec(r.p["encoder.weight"], c), vec(r.p["encoder.bias"])), tanh_),
                          keep.sentence(b, s));
            set_row(sentences, b, s, c);
            C.push_back(c);
            sentence_keep.push_back(keep.sentence(b, s));
        }
        const Read doc = constant_query_read(r, prefix + "sentence.", C, sentence_keep);
        set_row(beta, b, doc.weights);
        set_row(document, b, doc.context);
    }
    return {{"document", document}, {"word_weights", alpha}, {"sentence_weights", beta}, {"sentences", sentences}};
}

// ---- runs and properties ---------------------------------------------------------------

Outputs outputs_of(const HierarchicalAttention::Output& o) {
    return {{"document", o.document},
            {"word_weights", o.word_weights},
            {"sentence_weights", o.sentence_weights},
            {"sentences", o.sentences}};
}

Outputs run_han(Module* m, In x, Masks masks) {
    return outputs_of(as<HierarchicalAttention>(m).forward(x[0], mask_or_none(masks, 0), mask_or_none(masks, 1)));
}

Outputs run_with_encoder(Module* m, In x, Masks masks) {
    return outputs_of(as<WithEncoder>(m).han.forward(x[0], mask_or_none(masks, 0), mask_or_none(masks, 1)));
}

std::string differs(const std::string& name, const Tensor& a, const Tensor& b) {
    for (int64_t i = 0; i < a.numel(); ++i)
        if (std::abs(a[i] - b[i]) > 1e-12) {
            std::ostringstream os;
            os << name << " at flat index " << i << " moved from " << a[i] << " to " << b[i];
            return os.str();
        }
    return "";
}

// Padded words (word mask 0) get weight exactly 0, and what they hold changes nothing.
const Property padded_words_change_nothing{
    "padded words get weight 0 and change nothing", [](const PropertyContext& c) -> std::string {
        const Tensor& mask = c.masks[0];
        std::vector<Tensor> x = c.inputs;
        Tensor& words = x[0] = x[0].clone();
        const int64_t d = words.size(3);
        Generator g(12);
        for (int64_t w = 0; w < mask.numel(); ++w)
            if (mask[w] == 0)
                for (int64_t k = 0; k < d; ++k) words[w * d + k] += real(3 * g.normal());
        const Evaluation before = c.run(c.inputs, c.masks), after = c.run(x, c.masks);
        for (int64_t w = 0; w < mask.numel(); ++w)
            if (mask[w] == 0 && before["word_weights"][w] != 0)
                return "padded word at flat index " + std::to_string(w) + " has weight " +
                       std::to_string(before["word_weights"][w]);
        for (const char* name : {"document", "word_weights", "sentence_weights", "sentences"}) {
            const std::string err = differs(name, before[name], after[name]);
            if (!err.empty()) return err;
        }
        return "";
    }};

// Without an encoder c^(D) is a convex combination of real words: each
// coordinate lies between that coordinate's min and max over the real words.
const Property document_within_real_words{
    "the document vector lies within the range of its real words", [](const PropertyContext& c) -> std::string {
        const Array X(c.inputs[0]), D(c.run(c.inputs, c.masks)["document"]);
        std::vector<Array> masks(c.masks.begin(), c.masks.end());
        const Keep keep = keep_of(masks);
        for (int64_t b = 0; b < X.size(0); ++b)
            for (int64_t k = 0; k < X.size(3); ++k) {
                double lo = INFINITY, hi = -INFINITY;
                for (int64_t s = 0; s < X.size(1); ++s)
                    for (int64_t t = 0; t < X.size(2); ++t)
                        if (keep.sentence(b, s) != 0 && keep.word(b, s, t) != 0) {
                            lo = std::min(lo, X(b, s, t, k));
                            hi = std::max(hi, X(b, s, t, k));
                        }
                if (lo <= hi && (D(b, k) < lo - 1e-12 || D(b, k) > hi + 1e-12))
                    return "document [" + std::to_string(b) + ", " + std::to_string(k) + "] = " +
                           std::to_string(D(b, k)) + " outside [" + std::to_string(lo) + ", " + std::to_string(hi) +
                           "]";
            }
        return "";
    }};

// Document 0: sentences of 3, 1 and 0 words; document 1: 2, 3 and 2 words.
Tensor word_mask() { return Tensor::from({1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 0, 1, 1, 1, 1, 1, 0}, {2, 3, 3}); }
// Every sentence has a word: document 0 has 3, 2 and 1 words, document 1 has 1, 3 and 2.
Tensor full_word_mask() { return Tensor::from({1, 1, 1, 1, 1, 0, 1, 0, 0, 1, 0, 0, 1, 1, 1, 1, 1, 0}, {2, 3, 3}); }

// ---- the registry entry -------------------------------------------------------------------
const RegisterEntry hierarchical_attention_entry(12, "hierarchical_attention", {
    {.variant = "2 documents × 3 sentences × 3 words (3, 1, 0 and 2, 3, 2 words), d 3, d_a 4, d_a' 2",
     .inputs = {Shape{2, 3, 3, 3}},
     .masks = {word_mask()},
     .make = [](Generator& g) { return std::make_unique<HierarchicalAttention>(3, 4, 3, 2, g); },
     .run = run_han,
     .reference = [](const Ref& r) { return hierarchical_attention_reference(r, "", false); },
     .properties = {rows_sum_to_one("word_weights"), rows_sum_to_one("sentence_weights"),
                    padded_words_change_nothing, document_within_real_words,
                    permutation_invariant({0}, {0}, {"document"})}},
    {.variant = "a sentence mask: document 0 keeps 2 of its 3 sentences, each with words; d 4",
     .inputs = {Shape{2, 3, 3, 4}},
     .masks = {full_word_mask(), keep_first({2, 3}, 3)},
     .make = [](Generator& g) { return std::make_unique<HierarchicalAttention>(4, 3, g); },
     .run = run_han,
     .reference = [](const Ref& r) { return hierarchical_attention_reference(r, "", false); },
     // a masked sentence's words still make its c^(s) and α (self: that row moves with its words)
     .masking = {{.mask = 1, .inputs = {0}, .weights = {"sentence_weights"}, .zero_when_empty = {"document"},
                  .self = true}},
     .properties = {rows_sum_to_one("word_weights"), rows_sum_to_one("sentence_weights"),
                    padded_words_change_nothing, document_within_real_words,
                    permutation_invariant({0}, {0, 1}, {"document"})}},
    {.variant = "no masks, square W_w and W_s (d = d_a = 3), 2 sentences of 4 words",
     .inputs = {Shape{2, 2, 4, 3}},
     .make = [](Generator& g) { return std::make_unique<HierarchicalAttention>(3, 3, g); },
     .run = run_han,
     .reference = [](const Ref& r) { return hierarchical_attention_reference(r, "", false); },
     .properties = {rows_sum_to_one("word_weights"), rows_sum_to_one("sentence_weights"),
                    document_within_real_words, permutation_invariant({0}, {}, {"document"})}},
    {.variant = "a sentence encoder of width 2 (Linear and tanh), d_a 4 and d_a' 3, padded",
     .inputs = {Shape{2, 3, 3, 3}},
     .masks = {word_mask()},
     .make = [](Generator& g) { return std::make_unique<WithEncoder>(g); },
     .run = run_with_encoder,
     .reference = [](const Ref& r) { return hierarchical_attention_reference(r, "han.", true); },
     .properties = {rows_sum_to_one("word_weights"), rows_sum_to_one("sentence_weights"),
                    padded_words_change_nothing}},
});

}  // namespace

TEST_CASE("hierarchical_attention: padding less gives the same document vector") {
    Generator gen(12);
    HierarchicalAttention han(3, 4, gen);
    const Tensor content = normal({2, 3, 3, 3}, gen);
    const Tensor mask = word_mask();
    const auto a = han.forward(Var(content), mask);
    CHECK(a.sentence_weights.value().at({0, 2}) == 0);  // document 0's third sentence is empty

    // The same documents padded less: 2 sentences per document would drop
    // document 1's third sentence, so compare document 0 alone, cut to 2×3.
    const Tensor tight_mask = slice(slice(mask, 0, 0, 1), 1, 0, 2);
    const Tensor tight = slice(slice(content, 0, 0, 1), 1, 0, 2);
    const auto c = han.forward(Var(tight), tight_mask);
    CHECK(allclose(c.document.value(), slice(a.document.value(), 0, 0, 1), 0, 1e-12));
}

TEST_CASE("hierarchical_attention: a one-sentence, one-word document is that word's vector") {
    Generator gen(13);
    HierarchicalAttention han(5, 4, gen);
    const Tensor word = normal({1, 1, 1, 5}, gen);
    const auto out = han.forward(Var(word));
    CHECK(allclose(out.document.value(), word.reshape(Shape{1, 5}), 0, 1e-15));
    CHECK(out.word_weights.value()[0] == 1);
    CHECK(out.sentence_weights.value()[0] == 1);
    CHECK(han.taxonomy().levels == "multi");
}

TEST_CASE("hierarchical_attention: W3's attention sizes give its parameter count; a document of no words is zero") {
    Generator gen(15);
    HierarchicalAttention han(100, 100, gen);  // W3: Linear(100→100) with bias and u_w, at both levels
    CHECK(han.num_parameters() == 2 * (100 * 100 + 100 + 100));

    HierarchicalAttention small(3, 4, gen);
    const Var words(normal({1, 2, 2, 3}, gen), true);
    const auto out = small.forward(words, Tensor::zeros({1, 2, 2}));
    sum(out.document).backward();
    for (int64_t i = 0; i < 3; ++i) CHECK(out.document.value()[i] == 0);
    for (int64_t i = 0; i < words.numel(); ++i) CHECK(words.grad()[i] == 0);
    CHECK_THROWS_AS(small.forward(words, Tensor::zeros({1, 2, 3})), std::invalid_argument);
    CHECK_THROWS_AS(small.forward(words, Tensor(), Tensor::ones({1, 3})), std::invalid_argument);
}
