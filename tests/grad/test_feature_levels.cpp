// Feature levels and representations, catalog entries 11 and 14
// (attention/feature_levels.hpp): gradient-check cases in the attention
// registry, and each entry's property from the catalog in double precision.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "attention/feature_levels.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/attention_registry.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {


const RegisterMechanisms feature_levels_cases({
    {"attention_via_attention",
     "2 queries, 4 characters, 3 words, padded",
     {Shape{2, 2, 3}, Shape{2, 4, 2}, Shape{2, 3, 3}},
     [](Generator& gen) { return std::make_unique<AttentionViaAttention>(3, 2, 3, 2, gen); },
     [](Module* m, const std::vector<Var>& x) {
         const auto o = static_cast<AttentionViaAttention*>(m)->forward(x[0], x[1], x[2], length_mask({4, 2}, 4),
                                                                        length_mask({3, 1}, 3));
         return concat({flat(o.output), flat(o.character_weights), flat(o.word_weights)}, 0);
     }},
    {"meta_embedding_attention",
     "3 sources of widths 2, 4, 3",
     {Shape{2, 3, 2}, Shape{2, 3, 4}, Shape{2, 3, 3}},
     [](Generator& gen) { return std::make_unique<MetaEmbeddingAttention>(std::vector<int64_t>{2, 4, 3}, 3, gen); },
     [](Module* m, const std::vector<Var>& x) {
         const auto o = static_cast<MetaEmbeddingAttention*>(m)->forward(x);
         return concat({flat(o.output), flat(o.weights)}, 0);
     }},
});

void check_close(const Tensor& got, const Tensor& want, double atol = 1e-12) {
    REQUIRE(got.shape() == want.shape());
    for (int64_t i = 0; i < got.numel(); ++i) {
        INFO("index " << i << ": got " << got[i] << ", want " << want[i]);
        CHECK(std::abs(got[i] - want[i]) <= atol);
    }
}

Var normal(const Shape& s, Generator& gen) { return Var(Tensor::normal(s, 0, 1, gen)); }

}  // namespace

TEST_CASE("attention_via_attention: output width; with the c^(w) columns of W_1 zero it is plain attention") {
    Generator gen(15);
    AttentionViaAttention ava(3, 2, 4, 5, gen);
    const Var q = normal({2, 3, 3}, gen), chars = normal({2, 6, 2}, gen), words = normal({2, 3, 4}, gen);
    const Tensor mc = length_mask({6, 4}, 6), mw = length_mask({3, 2}, 3);
    const auto out = ava.forward(q, chars, words, mc, mw);
    CHECK(out.output.shape() == Shape{2, 3, 2 + 4});
    CHECK(out.character_weights.shape() == Shape{2, 3, 6});
    CHECK(out.word_weights.shape() == Shape{2, 3, 3});
    for (int64_t i = 0; i < 3; ++i) {
        CHECK(out.character_weights.value()[18 + i * 6 + 4] == 0);  // batch 1, character 4: padding
        CHECK(out.word_weights.value()[9 + i * 3 + 2] == 0);        // batch 1, word 2: padding
    }
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
    CHECK_THROWS_AS(ava.forward(q, chars, normal({2, 3, 5}, gen)), std::invalid_argument);
}

TEST_CASE("meta_embedding_attention: E = 1 is the projection; sources permute with their parameters; b cancels") {
    Generator gen(16);
    const Var x1 = normal({2, 3, 2}, gen), x2 = normal({2, 3, 4}, gen), x3 = normal({2, 3, 3}, gen);

    // E = 1: the output is W x + b_e
    MetaEmbeddingAttention one({4}, 3, gen);
    const auto single = one.forward({x2});
    check_close(single.output.value(), add(matmul(x2, one.W[0], false, true), one.b_e[0]).value());
    check_close(single.weights.value(), Tensor::ones({2, 3, 1}));

    // each token's weights sum to 1
    MetaEmbeddingAttention dme({2, 4, 3}, 3, gen);
    const auto out = dme.forward({x1, x2, x3});
    CHECK(out.output.shape() == Shape{2, 3, 3});
    const Tensor sums = sum(out.weights.value(), -1);
    for (int64_t k = 0; k < sums.numel(); ++k) CHECK(sums[k] == doctest::Approx(1).epsilon(1e-12));

    // permuting the sources together with their parameters leaves the output unchanged
    MetaEmbeddingAttention permuted({3, 2, 4}, 3, gen);
    const std::vector<size_t> from{2, 0, 1};
    for (size_t i = 0; i < 3; ++i) {
        permuted.W[i].value().copy_(dme.W[from[i]].value());
        permuted.b_e[i].value().copy_(dme.b_e[from[i]].value());
    }
    permuted.u.value().copy_(dme.u.value());
    permuted.b.value().copy_(dme.b.value());
    check_close(permuted.forward({x3, x1, x2}).output.value(), out.output.value());

    // b is added to every source's score: its gradient is 0, and changing it changes nothing
    dme.zero_grad();
    sum(mul(dme.forward({x1, x2, x3}).output, Var(Tensor::normal({2, 3, 3}, 0, 1, gen)))).backward();
    CHECK(std::abs(dme.b.grad()[0]) <= 1e-12);
    CHECK(max(abs(dme.u.grad())).item() > 1e-6);
    dme.b.value().fill_(5);
    check_close(dme.forward({x1, x2, x3}).output.value(), out.output.value());

    CHECK(dme.taxonomy().representations == "multi");
    CHECK_FALSE(single_representational_attention(dme.taxonomy()));
    CHECK_THROWS_AS(dme.forward({x1, x2}), std::invalid_argument);
    CHECK_THROWS_AS(dme.forward({x1, x2, normal({2, 4, 3}, gen)}), std::invalid_argument);
}
