// Edit distance and the word/phoneme error rates of grapheme-to-phoneme
// conversion, scored as Sequitur G2P does (Bisani & Ney, 2008):
//
//   d(h, r)   Levenshtein distance: the fewest insertions, deletions and
//             substitutions turning h into r (each costs 1)
//   per word  the hypothesis h is compared with every reference r_k of the
//             word and the closest is kept: k* = argmin_k d(h, r_k)
//   WER       #{words with d(h, r_k*) > 0} / #words
//   PER       Σ_words d(h, r_k*) / Σ_words |r_k*|
//
// Ties between references go to the first (the dictionary's order).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attn {

// Levenshtein distance between two symbol sequences, O(|a|·|b|) time, O(|b|) memory.
int64_t edit_distance(const std::vector<std::string>& a, const std::vector<std::string>& b);
int64_t edit_distance(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

// The closest of several references: its distance and its length. With no
// references the distance is |h| and the length 0.
struct ClosestReference {
    int64_t distance = 0;
    int64_t length = 0;
    size_t index = 0;
};
ClosestReference closest_reference(const std::vector<std::string>& hypothesis,
                                   const std::vector<std::vector<std::string>>& references);

// Accumulates word and phoneme errors over a test set.
struct ErrorRates {
    int64_t words = 0, word_errors = 0;
    int64_t symbols = 0, symbol_errors = 0;  // Σ|r_k*| and Σ d(h, r_k*)

    void add(const std::vector<std::string>& hypothesis, const std::vector<std::vector<std::string>>& references);
    double wer() const { return words ? static_cast<double>(word_errors) / static_cast<double>(words) : 0.0; }
    double per() const { return symbols ? static_cast<double>(symbol_errors) / static_cast<double>(symbols) : 0.0; }
};

}  // namespace attn
