// Data for the seq2seq example: symbol vocabularies, the built-in date
// normalisation task, pronunciation lexicons (CMUdict and WORD<TAB>P1 P2 ...),
// the deterministic hash split, and padded, length-bucketed batches.
//
// A pair is a source symbol sequence and a target symbol sequence:
//   dates  "Sunday, Nov 22 2026" → "2026-11-22"   (characters → characters)
//   G2P    "abandon" → AH B AE N D AH N           (letters → phonemes)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/random.hpp"
#include "tensor/tensor.hpp"

namespace attn::seq2seq {

// ---- vocabularies ------------------------------------------------------------------
// Ids 0–3 are reserved: <pad> (also the ignored target), <s>, </s>, <unk>.
constexpr int64_t kPad = 0, kBos = 1, kEos = 2, kUnk = 3;

class Vocab {
public:
    Vocab();  // the four reserved symbols only
    // The reserved symbols, then `symbols` in order (duplicates skipped).
    explicit Vocab(const std::vector<std::string>& symbols);
    int64_t add(const std::string& symbol);
    int64_t id(const std::string& symbol) const;  // kUnk if unknown
    const std::string& symbol(int64_t id) const;
    int64_t size() const { return static_cast<int64_t>(symbols_.size()); }
    const std::vector<std::string>& symbols() const { return symbols_; }
    std::vector<int64_t> encode(const std::vector<std::string>& symbols) const;
    // Stops at </s>; drops <pad> and <s>.
    std::vector<std::string> decode(const std::vector<int64_t>& ids) const;

private:
    std::vector<std::string> symbols_;
};

// "café" → {"c", "a", "f", "é"}: one symbol per UTF-8 character, so that a
// vocabulary never holds half a character (which no JSON header can store).
// Text that is not valid UTF-8 throws std::invalid_argument naming the byte.
std::vector<std::string> characters(const std::string& text);
std::string join(const std::vector<std::string>& symbols, const std::string& separator = "");

// ---- dates ---------------------------------------------------------------------------
struct DateExample {
    std::string text;  // "Sunday, Nov 22 2026"
    std::string iso;   // "2026-11-22"
};
// Which split a calendar date belongs to (0 train, 1 dev, 2 test), by a hash
// of the date: about 90/5/5, so test dates are never seen in training, in any format.
int date_split(int year, int month, int day);
// The date written in format `format` (0 ≤ format < date_format_count()); some
// formats choose their case or ordinal suffix with `gen`.
std::string format_date(int year, int month, int day, int format, Generator& gen);
int date_format_count();
// n examples of split `split`, dates uniform in kFirstYear–kLastYear,
// formats uniform: the same (n, split, seed) always gives the same list.
constexpr int kFirstYear = 1950, kLastYear = 2049;
std::vector<DateExample> generate_dates(int64_t n, int split, uint64_t seed);
// 0 Monday … 6 Sunday, proleptic Gregorian.
int day_of_week(int year, int month, int day);

// ---- lexicons --------------------------------------------------------------------------
// The longest word (in characters) and pronunciation (in phonemes) a lexicon
// may hold: the longest English words are about 30 letters.
constexpr int64_t kMaxLexiconSymbols = 256;

struct LexiconEntry {
    std::string word;                                   // case-folded
    std::vector<std::vector<std::string>> pronunciations;  // one or more
};
using Lexicon = std::vector<LexiconEntry>;  // in the order words first appear

// Reads a pronunciation lexicon. Each non-blank line is either
//   CMUdict form   word PH PH ...   or   word(2) PH PH ...   (an alternate)
//   tab form       WORD<TAB>P1 P2 ...[<TAB>P1 P2 ...]       (alternates as extra fields)
// Lines starting with ";;;" or "#" are comments. Words are case-folded and
// alternates merged into one entry. A malformed line throws
// std::runtime_error "FILE:LINE: reason" (no pronunciation, a bad "(n)"
// marker, an empty word, a control character).
Lexicon load_lexicon(const std::string& path);
Lexicon parse_lexicon(const std::string& text, const std::string& name);
// The word's bucket, 0–99: its FNV-1a hash (64 bits) mod 100. Every split
// below is by bucket, so all the pronunciations of a word go the same way and
// a word never changes sides when the lexicon grows.
int word_bucket(const std::string& word);
// 0 train, 1 dev, 2 test: bucket < 90, < 95, else.
int word_split(const std::string& word);
struct LexiconSplit {
    Lexicon train, dev, test;
};
// 90/5/5 by word_split (a whole dictionary: train, dev and test).
LexiconSplit split_lexicon(const Lexicon& lexicon);
// A training list only (its test words kept elsewhere): the words with
// bucket ≥ 100 − dev_percent are dev, the rest train; test stays empty.
// With dev_percent 5 the dev words are the test part of split_lexicon.
LexiconSplit split_train_dev(const Lexicon& lexicon, int64_t dev_percent = 5);

// ---- pairs and batches ------------------------------------------------------------------
struct Pair {
    std::vector<int64_t> source;  // ids, without <s> or </s>
    std::vector<int64_t> target;  // ids, without <s> or </s>
};

// Padded tensors of one batch (ids stored as reals), B rows:
//   source      B×n   n = the longest source, padded with <pad>
//   target_in   B×T   <s> y_1 … y_k, padded      (the decoder's inputs, teacher forcing)
//   target_out  B×T   y_1 … y_k </s>, padded     (what it must predict; <pad> is ignored)
struct Batch {
    Tensor source, target_in, target_out;
    std::vector<int64_t> source_lengths;
    std::vector<size_t> index;  // the pairs' positions in the data set
};
Batch make_batch(const std::vector<Pair>& pairs, const std::vector<size_t>& index);
// Length bucketing: the pairs are shuffled (if gen is given), cut into pools
// of 50 batches, each pool sorted by source length and cut into batches, and
// the batches shuffled, so a batch holds sources of similar length (little
// padding) while the order stays random.
std::vector<Batch> make_batches(const std::vector<Pair>& pairs, int64_t batch_size, Generator* gen);

}  // namespace attn::seq2seq
