// Sequence variants, part 2: catalog entries 54 (attention/pointer.hpp),
// 57, 58, 60 (attention/sequence_more.hpp) and 59 (attention/area.hpp): each
// entry's property tests and hand-computed values in double precision. Their
// references and registry entries are in test_sequence_more.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <vector>

#include "attention/area.hpp"
#include "attention/pointer.hpp"
#include "attention/scores.hpp"
#include "attention/sequence_more.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/catalog.hpp"
#include "tests/grad/helpers.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

}  // namespace

// ---- 54. pointer_attention -------------------------------------------------------------------

TEST_CASE("pointer_attention: the 'not chosen yet' mask removes the earlier steps' targets") {
    // targets (2, 0): step 0 keeps all, step 1 drops 2
    const Tensor keep = not_yet_chosen_mask(Tensor::from({2, 0}, {1, 2}), 4);
    CHECK(allclose(keep, Tensor::from({1, 1, 1, 1, 1, 1, 0, 1}, {1, 2, 4}), 0, 0));
    // targets (1, 3, 0): step 2 drops 1 and 3
    const Tensor three = not_yet_chosen_mask(Tensor::from({1, 3, 0}, {1, 3}), 4);
    CHECK(allclose(three, Tensor::from({1, 1, 1, 1, 1, 0, 1, 1, 1, 0, 1, 0}, {1, 3, 4}), 0, 0));
    CHECK_THROWS_AS(not_yet_chosen_mask(Tensor::from({4, 0}, {1, 2}), 4), std::invalid_argument);
    Generator gen(54);
    PointerAttention ptr(3, 4, 5, gen);
    const auto out = ptr.forward(Var(normal({1, 4, 3}, gen)), Var(normal({1, 2, 4}, gen)), keep);
    CHECK(out.weights.value().at({0, 1, 2}) == 0);
    CHECK_THROWS_AS(ptr.forward(Var(normal({1, 4, 2}, gen)), Var(normal({1, 2, 4}, gen))), std::invalid_argument);
}

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

// ---- 59. area_attention ---------------------------------------------------------------------

TEST_CASE("area_attention: n 4 and A_w 2 give 7 areas; a 3×3 grid with areas up to 2×2 gives 9 + 6 + 6 + 4") {
    CHECK(enumerate_areas(1, 4, 1, 2).size() == 7);
    CHECK(enumerate_areas(3, 3, 2, 2).size() == 25);
}

TEST_CASE("area_attention: the summed-area table equals brute-force enumeration (1-D and 2-D)") {
    Generator gen(59);
    for (auto [H, W, Ah, Aw] : {std::array<int64_t, 4>{1, 6, 1, 3}, std::array<int64_t, 4>{3, 4, 2, 3}}) {
        const Tensor x = normal({2, H * W, 3}, gen);
        const auto areas = enumerate_areas(H, W, Ah, Aw);
        const AreaFeatures f = area_features(Var(x), H, areas);
        for (int64_t b = 0; b < 2; ++b)
            for (size_t r = 0; r < areas.size(); ++r)
                for (int64_t c = 0; c < 3; ++c) {
                    const Area& a = areas[r];
                    double total = 0, squares = 0;
                    for (int64_t i = a.top; i < a.top + a.height; ++i)
                        for (int64_t j = a.left; j < a.left + a.width; ++j) {
                            const double v = x.at({b, i * W + j, c});
                            total += v;
                            squares += v * v;
                        }
                    const double n = static_cast<double>(a.height * a.width), mu = total / n;
                    const auto ri = static_cast<int64_t>(r);
                    CHECK(std::abs(f.sum.value().at({b, ri, c}) - total) < 1e-12);
                    CHECK(std::abs(f.mean.value().at({b, ri, c}) - mu) < 1e-12);
                    CHECK(std::abs(f.stddev.value().at({b, ri, c}) -
                                   std::sqrt(std::abs(squares / n - mu * mu) + 1e-6)) < 1e-9);
                }
    }
}

TEST_CASE("area_attention: A_w = A_h = 1 with basic keys is ordinary scaled dot-product attention") {
    Generator gen(60);
    AreaAttention att({.max_width = 1}, gen);
    const Tensor Q = normal({2, 3, 4}, gen), K = normal({2, 5, 4}, gen), V = normal({2, 5, 2}, gen);
    const auto out = att.forward(Var(Q), Var(K), Var(V));
    const Tensor alpha = softmax(mul(matmul(Q, K, false, true), Tensor::scalar(0.5)), -1);
    CHECK(allclose(out.weights.value(), alpha, 0, 1e-12));
    CHECK(allclose(out.output.value(), matmul(alpha, V), 0, 1e-12));
}

TEST_CASE("area_attention: areas that touch padding get weight 0") {
    Generator gen(61);
    AreaAttention att({.max_width = 2, .rich_keys = true, .dim = 4}, gen);
    const auto out =
        att.forward(Var(normal({1, 2, 4}, gen)), Var(normal({1, 4, 4}, gen)), Var(normal({1, 4, 2}, gen)),
                    keep_first({3}, 4));
    // areas: [0] [1] [2] [3] [0,1] [1,2] [2,3] — [3] and [2,3] touch the padded item 3
    REQUIRE(out.areas.size() == 7);
    for (int64_t q = 0; q < 2; ++q) {
        CHECK(out.weights.value().at({0, q, 3}) == 0);
        CHECK(out.weights.value().at({0, q, 6}) == 0);
        CHECK(out.weights.value().at({0, q, 5}) > 0);
    }
    check_sums_to_one(out.weights.value());
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

TEST_CASE("sequence variants 54, 57–60: their survey tags") {
    Generator gen(63);
    const Taxonomy pointer = PointerAttention(3, 4, 5, gen).taxonomy();
    CHECK(pointer.scoring == "additive_score");
    CHECK(pointer.alignment == "soft");
    const Taxonomy latent = LatentAttention(3, 4, gen).taxonomy();
    CHECK(latent.levels == "multi");
    CHECK(latent.scoring == "dot_score");
    CHECK(latent.query == "self");
    const Taxonomy transducer = NeuralTransducerAttention(std::make_unique<GeneralScore>(3, 2, gen), 2).taxonomy();
    CHECK(transducer.scoring == "general_score");
    CHECK(transducer.alignment == "local-m");
    CHECK(AreaAttention({}, gen).taxonomy().scoring == "scaled_dot_score");
    const Taxonomy dual = DualLocalGlobalAttention(6, 3, 2, 3, gen).taxonomy();
    CHECK(dual.levels == "multi");
    CHECK(dual.alignment == "elementwise");
    CHECK(dual.query == "self");
}
