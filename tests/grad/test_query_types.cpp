// Query types, catalog entries 31–36 (attention/query_types.hpp): their
// gradient-check cases in the attention registry, and each entry's property
// tests in double precision (atol 1e-6).
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/query_types.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/attention_registry.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {


LuongAttention::Options luong(LuongAttention::Score s, LuongAttention::Align a, int64_t window = 1) {
    LuongAttention::Options o;
    o.score = s;
    o.align = a;
    o.window = window;
    o.max_length = 6;
    o.attention_dim = 3;
    return o;
}

Var luong_run(Module* m, const std::vector<Var>& x, const Tensor& mask) {
    const LuongAttention::Output out = as<LuongAttention>(m).forward(x[0], x[1], mask);
    return concat({flat(out.output), flat(out.weights)}, 0);
}

// Lengths 3 and 0 over 4 keys: the second example is fully masked, so its
// gradient must be exactly zero (and the check would catch a NaN).
Tensor lengths_3_0() { return length_mask({3, 0}, 4); }

// ---- gradient-check cases ---------------------------------------------------------------
const RegisterMechanisms query_type_cases({
    {"bahdanau_attention",
     "2 queries of 3, 4 states of 5, d_w 6, lengths 3 and 0",
     {Shape{2, 2, 3}, Shape{2, 4, 5}},
     [](Generator& g) { return std::make_unique<BahdanauAttention>(3, 5, 6, g); },
     [](Module* m, const std::vector<Var>& x) {
         return both(as<BahdanauAttention>(m).forward(x[0], x[1], lengths_3_0()));
     }},
    {"bahdanau_attention",
     "one decoder step on a precomputed memory",
     {Shape{2, 3}, Shape{2, 4, 5}},
     [](Generator& g) { return std::make_unique<BahdanauAttention>(3, 5, 4, g); },
     [](Module* m, const std::vector<Var>& x) {
         auto& att = as<BahdanauAttention>(m);
         return both(att.step(x[0], att.precompute(x[1], length_mask({4, 2}, 4))));
     }},
    {"luong_attention",
     "dot score, global, lengths 3 and 0",
     {Shape{2, 2, 4}, Shape{2, 4, 4}},
     [](Generator& g) {
         return std::make_unique<LuongAttention>(4, 4, luong(LuongAttention::Score::dot, LuongAttention::Align::global),
                                                 g);
     },
     [](Module* m, const std::vector<Var>& x) { return luong_run(m, x, lengths_3_0()); }},
    {"luong_attention",
     "general score, local-m D = 1",
     {Shape{2, 3, 3}, Shape{2, 5, 4}},
     [](Generator& g) {
         return std::make_unique<LuongAttention>(
             3, 4, luong(LuongAttention::Score::general, LuongAttention::Align::local_m), g);
     },
     [](Module* m, const std::vector<Var>& x) { return luong_run(m, x, Tensor()); }},
    {"luong_attention",
     "concat score, global",
     {Shape{2, 2, 3}, Shape{2, 4, 2}},
     [](Generator& g) {
         return std::make_unique<LuongAttention>(
             3, 2, luong(LuongAttention::Score::concat, LuongAttention::Align::global), g);
     },
     [](Module* m, const std::vector<Var>& x) {
         return luong_run(m, x, length_mask({4, 2}, 4));
     }},
    {"luong_attention",
     "location score, global, max length 6",
     {Shape{2, 2, 3}, Shape{2, 4, 2}},
     [](Generator& g) {
         return std::make_unique<LuongAttention>(
             3, 2, luong(LuongAttention::Score::location, LuongAttention::Align::global), g);
     },
     [](Module* m, const std::vector<Var>& x) {
         return luong_run(m, x, length_mask({3, 4}, 4));
     }},
    {"luong_attention",
     "general score, local-p D = 2",
     {Shape{2, 2, 3}, Shape{2, 5, 3}},
     [](Generator& g) {
         return std::make_unique<LuongAttention>(
             3, 3, luong(LuongAttention::Score::general, LuongAttention::Align::local_p, 2), g);
     },
     [](Module* m, const std::vector<Var>& x) { return luong_run(m, x, Tensor()); }},
    {"specialized_query_attention",
     "mean of the other input, general score",
     {Shape{2, 3, 4}, Shape{2, 5, 3}, Shape{2, 5, 2}},
     [](Generator& g) {
         return std::make_unique<SpecializedQueryAttention>(
             std::make_unique<MeanQuery>(), std::make_unique<GeneralScore>(4, 3, g), std::make_unique<SoftAlignment>());
     },
     [](Module* m, const std::vector<Var>& x) {
         return both(as<SpecializedQueryAttention>(m).forward(x[0], x[1], x[2], length_mask({5, 0}, 5),
                                                              length_mask({2, 3}, 3)));
     }},
    {"specialized_query_attention",
     "a callable builder, additive score",
     {Shape{2, 3, 4}, Shape{2, 4, 3}, Shape{2, 4, 3}},
     [](Generator& g) {
         return std::make_unique<SpecializedQueryAttention>(
             [](const Var& other, const Tensor& mask) { return tanh(masked_mean(other, mask)); },
             std::make_unique<AdditiveScore>(4, 3, 5, g), std::make_unique<SoftAlignment>());
     },
     [](Module* m, const std::vector<Var>& x) {
         return both(as<SpecializedQueryAttention>(m).forward(x[0], x[1], x[2]));
     }},
    {"attention_over_attention",
     "5 document words, 3 query words, with masks",
     {Shape{2, 5, 3}, Shape{2, 3, 3}},
     nullptr,
     [](Module*, const std::vector<Var>& x) {
         const auto out = attention_over_attention(x[0], x[1], length_mask({5, 3}, 5), length_mask({2, 3}, 3));
         return concat({flat(out.output), flat(out.alpha), flat(out.beta)}, 0);
     }},
    {"attention_over_attention",
     "no masks",
     {Shape{1, 4, 2}, Shape{1, 2, 2}},
     nullptr,
     [](Module*, const std::vector<Var>& x) { return attention_over_attention(x[0], x[1]).output; }},
    {"constant_query_self_attention",
     "features 4 of 3, d_w 5, lengths 3 and 0",
     {Shape{2, 4, 3}},
     [](Generator& g) { return std::make_unique<ConstantQuerySelfAttention>(3, 5, g); },
     [](Module* m, const std::vector<Var>& x) {
         return both(as<ConstantQuerySelfAttention>(m).forward(x[0], lengths_3_0()));
     }},
    {"constant_query_self_attention",
     "separate keys and values, sigmoid",
     {Shape{2, 4, 3}, Shape{2, 4, 2}},
     [](Generator& g) { return std::make_unique<ConstantQuerySelfAttention>(3, 4, g, Activation::sigmoid); },
     [](Module* m, const std::vector<Var>& x) { return both(as<ConstantQuerySelfAttention>(m).forward(x[0], x[1])); }},
    {"learned_query_self_attention",
     "dot, lengths 3 and 0",
     {Shape{2, 4, 3}, Shape{2, 4, 2}},
     [](Generator& g) { return std::make_unique<LearnedQuerySelfAttention>(3, g); },
     [](Module* m, const std::vector<Var>& x) {
         return both(as<LearnedQuerySelfAttention>(m).forward(x[0], x[1], lengths_3_0()));
     }},
    {"learned_query_self_attention",
     "scaled dot",
     {Shape{2, 4, 3}},
     [](Generator& g) { return std::make_unique<LearnedQuerySelfAttention>(3, g, /*scaled=*/true); },
     [](Module* m, const std::vector<Var>& x) { return both(as<LearnedQuerySelfAttention>(m).forward(x[0])); }},
});

void check_close(const Tensor& got, const Tensor& want, double atol = 1e-6) {
    REQUIRE(got.shape() == want.shape());
    for (int64_t i = 0; i < got.numel(); ++i) {
        INFO("index " << i << ": got " << got[i] << ", want " << want[i]);
        CHECK(std::abs(got[i] - want[i]) <= atol);
    }
}

Tensor normal(const Shape& s, Generator& gen) { return Tensor::normal(s, 0, 1, gen); }

}  // namespace

// ---- 31. bahdanau_attention -----------------------------------------------------------------

TEST_CASE("bahdanau_attention: v_a = 0 makes c_i the masked mean of H") {
    Generator gen(31);
    BahdanauAttention att(3, 4, 5, gen);
    att.v_a.value().fill_(0);
    const Tensor H = normal({2, 5, 4}, gen);
    const AttentionOutput out = att.step(Var(normal({2, 3}, gen)), att.precompute(Var(H), length_mask({2, 5}, 5)));
    // example 0: the mean of its first two states; example 1: of all five
    const Tensor want = concat({mean(slice(H, 1, 0, 2).rows(0, 1), 1), mean(H.rows(1, 2), 1)}, 0);
    check_close(out.output.value(), want);
    check_close(out.weights.value(), Tensor::from({0.5, 0.5, 0, 0, 0, 0.2, 0.2, 0.2, 0.2, 0.2}, {2, 5}));
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
    LuongAttention att(3, 4, luong(LuongAttention::Score::location, LuongAttention::Align::global), gen);
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
    for (auto score : {LuongAttention::Score::dot, LuongAttention::Score::general}) {
        LuongAttention att(4, 4, luong(score, LuongAttention::Align::global), gen);
        const Tensor w = att.forward(Var(normal({2, 3, 4}, gen)), H, length_mask({5, 4}, 5)).weights.value();
        for (int64_t q = 0; q < 3; ++q) {
            for (int64_t l = 0; l < 5; ++l) CHECK(std::abs(w.at({0, q, l}) - 0.2) < 1e-12);
            for (int64_t l = 0; l < 5; ++l) CHECK(std::abs(w.at({1, q, l}) - (l < 4 ? 0.25 : 0.0)) < 1e-12);
        }
    }
}

TEST_CASE("luong_attention: h̃_t = tanh(W_c [c_t; h_t]); local-m's step t attends only within D of t") {
    Generator gen(43);
    LuongAttention att(3, 2, luong(LuongAttention::Score::general, LuongAttention::Align::local_m, 1), gen);
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
    CHECK_THROWS_AS(LuongAttention(3, 2, luong(LuongAttention::Score::dot, LuongAttention::Align::global), gen),
                    std::invalid_argument);  // dot needs d_s = d_h
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
