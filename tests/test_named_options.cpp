// Named options: how a score's or an alignment's own hyperparameter reaches
// it from a trainer's flag (attention/by_id.hpp; seq2seq --score-options).
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "attention/by_id.hpp"
#include "examples/seq2seq/seq2seq_model.hpp"
#include "tensor/ops.hpp"

using namespace attn;

TEST_CASE("named options: name=value,... read exactly, and what cannot be read is named") {
    CHECK(parse_named_options("", "--x").empty());
    const NamedOptions o = parse_named_options("beta=2.5,gamma=-1e-3", "--x");
    REQUIRE(o.size() == 2);
    CHECK(o.at("beta") == 2.5);
    CHECK(o.at("gamma") == -1e-3);
    CHECK(named_option(o, "beta", 7) == 2.5);
    CHECK(named_option(o, "delta", 7) == 7);
    for (const char* bad : {"beta", "=2", "beta=", "beta=x", "beta=2x", "beta=inf"}) {
        const std::string want = std::string("--score-options: expected name=number[,name=number...], got '") + bad + "'";
        CHECK_THROWS_WITH(parse_named_options(bad, "--score-options"), doctest::Contains(want.c_str()));
    }
    CHECK_THROWS_WITH(parse_named_options("beta=1,beta=2", "--x"), doctest::Contains("'beta' given twice"));
}

TEST_CASE("named options: the cosine score's beta scales its scores; a row refuses what it does not take") {
    Generator gen(4);
    const Var q(Tensor::normal(Shape{2, 3, 4}, 0, 1, gen)), k(Tensor::normal(Shape{2, 5, 4}, 0, 1, gen));
    Generator g1(1), g2(1);
    const Tensor plain = make_score("cosine", {.query_dim = 4, .key_dim = 4}, g1)->score(q, k).value();
    const Tensor scaled =
        make_score("cosine", {.query_dim = 4, .key_dim = 4, .options = {{"beta", 3}}}, g2)->score(q, k).value();
    // e = β qᵀk / (‖q‖ ‖k‖), written out for one pair: example 1, query 2, key 4
    double dot = 0, nq = 0, nk = 0;
    for (int64_t d = 0; d < 4; ++d) {
        const double a = q.value()[(1 * 3 + 2) * 4 + d], b = k.value()[(1 * 5 + 4) * 4 + d];
        dot += a * b, nq += a * a, nk += b * b;
    }
    CHECK(scaled[(1 * 3 + 2) * 5 + 4] == doctest::Approx(3 * dot / std::sqrt(nq * nk)).epsilon(1e-5));
    for (int64_t i = 0; i < plain.numel(); ++i) CHECK(scaled[i] == doctest::Approx(3 * plain[i]).epsilon(1e-6));

    Generator g3(1);
    CHECK_THROWS_WITH(make_score("dot", {.query_dim = 4, .key_dim = 4, .options = {{"beta", 2}}}, g3),
                      "the score dot_score (dot) takes no option 'beta' (it takes none)");
    CHECK_THROWS_WITH(make_score("cosine", {.query_dim = 4, .key_dim = 4, .options = {{"gamma", 2}}}, g3),
                      "the score similarity_score (cosine) takes no option 'gamma' (it takes: beta)");
    CHECK_THROWS_WITH(make_alignment("soft", {.options = {{"beta", 2}}}, g3),
                      "the alignment soft_alignment (soft) takes no option 'beta' (it takes none)");
}

TEST_CASE("named options: the seq2seq model keeps them in its configuration, and a bad one is refused") {
    seq2seq::ModelConfig c;
    c.attention = "luong";
    c.score = "cosine";
    c.score_options = "beta=4";
    const seq2seq::ModelConfig back = seq2seq::ModelConfig::parse(c.str());
    CHECK(back.score_options == "beta=4");
    CHECK(back.align_options.empty());
    // a configuration without them reads as before (older checkpoints)
    CHECK(c.str().find("align_options") == std::string::npos);
    c.score_options = "beta:4";
    CHECK_THROWS_WITH(c.canonical(), doctest::Contains("--score-options: expected name=number"));
}
