// Hierarchical attention, catalog entry 12 (attention/hierarchical.hpp):
// gradient-check cases in the attention registry, and the catalog's property
// tests in double precision.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "attention/hierarchical.hpp"
#include "nn/linear.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/attention_registry.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

Var all_of(const HierarchicalAttention::Output& o) {
    return concat({flat(o.document), flat(o.word_weights), flat(o.sentence_weights)}, 0);
}

// Document 0: sentences of 3, 1 and 0 words; document 1: 2, 3 and 2 words.
Tensor word_mask() { return Tensor::from({1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 0, 1, 1, 1, 1, 1, 0}, {2, 3, 3}); }

// The way a model uses the hook: it owns the sentence encoder (here a Linear
// and tanh for HAN's BiGRU) and registers it beside the attention.
struct WithEncoder : Module {
    Linear encoder;
    HierarchicalAttention han;
    WithEncoder(Generator& gen) : encoder(3, 2, gen), han(3, 4, 2, 3, gen) {
        register_module("encoder", encoder);
        register_module("han", han);
        han.set_sentence_encoder([this](const Var& sentences, const Tensor&) { return tanh(encoder(sentences)); });
    }
};

const RegisterMechanisms hierarchical_cases({
    {"hierarchical_attention",
     "2 documents × 3 sentences × 3 words, word and sentence padding",
     {Shape{2, 3, 3, 3}},
     [](Generator& g) { return std::make_unique<HierarchicalAttention>(3, 4, g); },
     [](Module* m, const std::vector<Var>& x) {
         return all_of(static_cast<HierarchicalAttention*>(m)->forward(x[0], word_mask()));
     }},
    {"hierarchical_attention",
     "with a sentence encoder of width 2",
     {Shape{2, 3, 3, 3}},
     [](Generator& g) { return std::make_unique<WithEncoder>(g); },
     [](Module* m, const std::vector<Var>& x) {
         return all_of(static_cast<WithEncoder*>(m)->han.forward(x[0], word_mask()));
     }},
});

Tensor normal(const Shape& s, Generator& gen) { return Tensor::normal(s, 0, 1, gen); }

// words B×n_S×n_max×d with row (b, s, t) taken from `content` where the mask
// keeps it, and garbage elsewhere.
Tensor padded(const Tensor& content, const Tensor& mask, Generator& gen) {
    Tensor out = normal(content.shape(), gen);
    const int64_t d = content.size(-1);
    for (int64_t r = 0; r < mask.numel(); ++r)
        if (mask[r] != 0)
            for (int64_t j = 0; j < d; ++j) out[r * d + j] = content[r * d + j];
    return out;
}

}  // namespace

TEST_CASE("hierarchical_attention: padded words and sentences get weight 0 and change nothing") {
    Generator gen(12);
    HierarchicalAttention han(3, 4, gen);
    const Tensor content = normal({2, 3, 3, 3}, gen);
    const Tensor mask = word_mask();
    const auto a = han.forward(Var(padded(content, mask, gen)), mask);
    const auto b = han.forward(Var(padded(content, mask, gen)), mask);  // other garbage in the padding
    CHECK(allclose(a.document.value(), b.document.value(), 0, 1e-12));
    for (int64_t r = 0; r < mask.numel(); ++r)
        if (mask[r] == 0) CHECK(a.word_weights.value()[r] == 0);
    CHECK(a.sentence_weights.value().at({0, 2}) == 0);  // document 0's third sentence is empty

    // The same documents padded less: 2 sentences per document would drop
    // document 1's third sentence, so compare document 0 alone, cut to 2×3.
    const Tensor tight_mask = slice(slice(mask, 0, 0, 1), 1, 0, 2);
    const Tensor tight = slice(slice(content, 0, 0, 1), 1, 0, 2);
    const auto c = han.forward(Var(padded(tight, tight_mask, gen)), tight_mask);
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
}

TEST_CASE("hierarchical_attention: without a sentence encoder the order of sentences does not matter") {
    Generator gen(14);
    HierarchicalAttention han(3, 4, gen);
    const Tensor words = normal({2, 3, 3, 3}, gen);
    const Tensor mask = word_mask();
    const std::vector<int64_t> perm{2, 0, 1};
    const auto a = han.forward(Var(words), mask);
    const auto b = han.forward(Var(index_select(words, 1, perm)), index_select(mask, 1, perm));
    CHECK(allclose(a.document.value(), b.document.value(), 0, 1e-12));
    CHECK(allclose(index_select(a.sentence_weights.value(), 1, perm), b.sentence_weights.value(), 0, 1e-12));
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
}
