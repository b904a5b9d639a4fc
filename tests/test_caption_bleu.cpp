// examples/caption/bleu: BLEU-1..4 on cases computed by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "examples/caption/bleu.hpp"

using namespace attn;

namespace {
Tokens words(const std::string& text) {
    std::istringstream in(text);
    Tokens out;
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}
}  // namespace

TEST_CASE("caption bleu: a candidate equal to its reference scores 1 at every order") {
    const BleuScore s = sentence_bleu(words("the cat sat on the mat"), {words("the cat sat on the mat")});
    for (int n = 0; n < 4; ++n) CHECK(s.bleu[n] == doctest::Approx(1.0));
    CHECK(s.brevity_penalty == doctest::Approx(1.0));
}

TEST_CASE("caption bleu: Papineni's 'the the the ...' example clips the unigram count") {
    // 7 × "the", reference with two "the": modified unigram precision 2/7; c = 7 > r = 6, BP = 1.
    const BleuScore s = sentence_bleu(words("the the the the the the the"), {words("the cat is on the mat")});
    CHECK(s.precision[0] == doctest::Approx(2.0 / 7));
    CHECK(s.bleu[0] == doctest::Approx(2.0 / 7));
    CHECK(s.bleu[1] == 0);  // no bigram "the the" in the reference
}

TEST_CASE("caption bleu: geometric means of the n-gram precisions") {
    // "a b c d" vs "a b c e": p1 = 3/4, p2 = 2/3, p3 = 1/2, p4 = 0/1; same length, BP = 1.
    const BleuScore s = sentence_bleu(words("a b c d"), {words("a b c e")});
    CHECK(s.precision[0] == doctest::Approx(0.75));
    CHECK(s.precision[1] == doctest::Approx(2.0 / 3));
    CHECK(s.precision[2] == doctest::Approx(0.5));
    CHECK(s.bleu[0] == doctest::Approx(0.75));
    CHECK(s.bleu[1] == doctest::Approx(std::sqrt(0.75 * 2.0 / 3)));       // √0.5 = 0.7071
    CHECK(s.bleu[2] == doctest::Approx(std::cbrt(0.75 * 2.0 / 3 * 0.5)));  // ∛0.25 = 0.6300
    CHECK(s.bleu[3] == 0);                                                  // p4 = 0, no smoothing
}

TEST_CASE("caption bleu: the brevity penalty exp(1 − r/c) for a short candidate") {
    // "the cat" vs a 6-word reference: p1 = p2 = 1, BP = e^(1 − 6/2) = e^−2; no trigram at all.
    const BleuScore s = sentence_bleu(words("the cat"), {words("the cat sat on the mat")});
    CHECK(s.brevity_penalty == doctest::Approx(std::exp(-2.0)));
    CHECK(s.bleu[0] == doctest::Approx(std::exp(-2.0)));
    CHECK(s.bleu[1] == doctest::Approx(std::exp(-2.0)));
    CHECK(s.bleu[2] == 0);
}

TEST_CASE("caption bleu: several references clip by the largest count and pick the closest length") {
    // "the the cat" vs {"the cat", "the the dog"}: "the" may count twice (second reference),
    // r = 3 (the reference of the candidate's length), so BP = 1.
    const BleuScore s = sentence_bleu(words("the the cat"), {words("the cat"), words("the the dog")});
    CHECK(s.precision[0] == doctest::Approx(1.0));
    CHECK(s.precision[1] == doctest::Approx(1.0));  // "the the" and "the cat" each in some reference
    CHECK(s.reference_length == 3);
    CHECK(s.brevity_penalty == doctest::Approx(1.0));
    CHECK(s.bleu[2] == 0);
}

TEST_CASE("caption bleu: the corpus score pools counts, it does not average sentence scores") {
    // "a b"|"a b" and "c d"|"c e": p1 = (2 + 1)/4, p2 = (1 + 0)/2 → BLEU-2 = √(0.75 · 0.5) = 0.6124,
    // although the second sentence alone has BLEU-2 = 0.
    const BleuScore s = corpus_bleu({words("a b"), words("c d")}, {{words("a b")}, {words("c e")}});
    CHECK(s.bleu[0] == doctest::Approx(0.75));
    CHECK(s.bleu[1] == doctest::Approx(std::sqrt(0.375)));
}

TEST_CASE("caption bleu: errors and empty candidates") {
    CHECK_THROWS_AS(corpus_bleu({words("a")}, {}), std::invalid_argument);
    CHECK_THROWS_AS(corpus_bleu({words("a")}, {{}}), std::invalid_argument);
    const BleuScore s = sentence_bleu({}, {words("a b")});
    CHECK(s.bleu[0] == 0);
    CHECK(std::isfinite(s.brevity_penalty));
}
