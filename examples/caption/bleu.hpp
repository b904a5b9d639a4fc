// BLEU (Papineni, Roukos, Ward, Zhu 2002, "BLEU: a Method for Automatic
// Evaluation of Machine Translation"), corpus level, for captions and
// translations given as token sequences.
//
//   p_n  = Σ_cand Σ_{g ∈ n-grams(cand)} min(count_cand(g), max_ref count_ref(g))
//          / Σ_cand |n-grams(cand)|                       clipped n-gram precision
//   BP   = 1 if c > r, else exp(1 − r/c)                   c candidate length, r the
//                                                          reference length closest to c
//                                                          (shorter on a tie), both summed
//                                                          over the corpus
//   BLEU-N = BP · exp(Σ_{n=1..N} (1/N) log p_n)            0 if any p_n = 0 (no smoothing)
//
// Tests: tests/test_caption_bleu.cpp checks hand-computed cases.
#pragma once

#include <array>
#include <string>
#include <vector>

namespace attn {

using Tokens = std::vector<std::string>;

struct BleuScore {
    std::array<double, 4> bleu{};       // BLEU-1 .. BLEU-4
    std::array<double, 4> precision{};  // p_1 .. p_4
    double brevity_penalty = 0;
    long long candidate_length = 0, reference_length = 0;
};

// candidates[i] is scored against references[i] (one or more sequences).
// Throws std::invalid_argument if the counts differ or a candidate has no reference.
BleuScore corpus_bleu(const std::vector<Tokens>& candidates, const std::vector<std::vector<Tokens>>& references);

// One sentence: corpus_bleu of a corpus of one.
BleuScore sentence_bleu(const Tokens& candidate, const std::vector<Tokens>& references);

}  // namespace attn
