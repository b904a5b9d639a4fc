// Documents for the docclass example (a hierarchical attention network, Yang
// et al. 2016): a document is a list of sentences, a sentence a list of words.
//
//   text ──tokenize/split_sentences──▶ Document{label, sentences}
//        ──Vocabulary (min count, <pad> = 0, <unk> = 1)──▶ word ids
//        ──make_doc_batch──▶ DocBatch: ids B×S×W, word mask B×S×W, sentence mask B×S
//
// Three sources, each giving a Corpus (class names + train/valid/test):
//   - make_needle_corpus: generated, no download. Every document has one key
//     sentence (marked by a cue word) whose two topic words carry the label;
//     distractor sentences may hold topic words of any class. The generator
//     records which sentence is the key, so attention can be scored.
//   - load_fortunes_corpus: Debian's fortunes (one file per category, entries
//     separated by "%" lines), the largest categories, a fixed stratified split.
//   - load_tsv_corpus: "label<TAB>text" lines, a fixed stratified split.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/tensor.hpp"

namespace attn {

using Sentence = std::vector<std::string>;

struct Document {
    int64_t label = 0;
    std::vector<Sentence> sentences;
    int64_t key_sentence = -1;  // the sentence that carries the label (needle corpus), or -1
};

struct Corpus {
    std::vector<std::string> class_names;
    std::vector<Document> train, valid, test;
};

// ---- tokenizer ------------------------------------------------------------------
// Lower-cases ASCII letters; a word is a run of letters, digits, non-ASCII
// bytes (UTF-8 stays whole) and inner apostrophes ("don't"); a decimal number
// ("3.14") is one word; every other printable character is a token of its own.
std::vector<std::string> tokenize(std::string_view text);
// Splits text into sentences of tokens: after ".", "!" or "?" (a run of them,
// and any closing quote or bracket after it, stays with its sentence), and at
// blank lines. A "." after a single letter or a common abbreviation ("mr.",
// "e.g.") does not end a sentence. Empty sentences are dropped.
std::vector<Sentence> split_sentences(std::string_view text);

// ---- vocabulary --------------------------------------------------------------------
class Vocabulary {
public:
    static constexpr int64_t pad = 0, unk = 1;
    // Words seen at least min_count times in `docs`, the most frequent first
    // (ties alphabetical), at most max_size entries in all (0: no limit).
    static Vocabulary build(const std::vector<Document>& docs, int64_t min_count, int64_t max_size = 0);
    // The vocabulary whose words after <pad> and <unk> are `words`, in order
    // (what a checkpoint saved); throws on a repeated or empty word.
    static Vocabulary from_words(const std::vector<std::string>& words);
    // The words after <pad> and <unk>, in id order: from_words(v.words()) is v.
    std::vector<std::string> words() const { return {words_.begin() + 2, words_.end()}; }
    int64_t id(const std::string& word) const;  // unk if unknown
    const std::string& word(int64_t id) const;
    int64_t size() const { return static_cast<int64_t>(words_.size()); }

private:
    std::vector<std::string> words_{"<pad>", "<unk>"};
    std::map<std::string, int64_t> ids_;
};

// ---- batches ---------------------------------------------------------------------
// Documents padded to the batch's longest (at most max_sentences sentences of
// at most max_words words: longer ones are cut). Masks are 1 for a real word
// or sentence, 0 for padding; padded ids are <pad>.
struct DocBatch {
    Tensor ids;            // B×S×W word ids
    Tensor word_mask;      // B×S×W
    Tensor sentence_mask;  // B×S
    Tensor labels;         // B class indices
    std::vector<int64_t> word_lengths;     // B·S: words in each sentence (0 for a padded one)
    std::vector<int64_t> sentence_counts;  // B: sentences in each document
    // The same words as one sequence per document, for the flat models.
    Tensor flat_ids;                       // B×T
    std::vector<int64_t> flat_lengths;     // B
    std::vector<int64_t> key_sentence;     // B (−1: not known)
    int64_t batch() const { return ids.size(0); }
};

DocBatch make_doc_batch(const std::vector<Document>& docs, const std::vector<int64_t>& indices,
                        const Vocabulary& vocab, int64_t max_sentences, int64_t max_words);

// ---- the built-in "needle" corpus -----------------------------------------------
struct NeedleOptions {
    int64_t num_classes = 10;  // at most 10 topics
    int64_t train = 4000, valid = 500, test = 500;
    int64_t min_sentences = 4, max_sentences = 8;
    int64_t min_words = 5, max_words = 14;  // per sentence, cue and topic words included
    double distractor_topic_rate = 0.5;     // chance that a distractor holds a topic word
    uint64_t seed = 1;
};
// The same options give the same corpus, word for word.
Corpus make_needle_corpus(const NeedleOptions& options = {});
// The cue words that mark a key sentence, and the topic words of class c.
const std::vector<std::string>& needle_cue_words();
const std::vector<std::string>& needle_topic_words(int64_t c);

// ---- files ------------------------------------------------------------------------
// Splits labelled documents into train/valid/test, stratified by class (each
// class shuffled with a fixed seed, then cut at the fractions), so the split
// never depends on the run's --seed.
void stratified_split(std::vector<Document> docs, double valid_fraction, double test_fraction, uint64_t split_seed,
                      Corpus& corpus);

// Debian's fortunes in `dir` (data/fortunes or /usr/share/games/fortunes): every
// file without a dot in its name is a category, its entries separated by lines
// holding only "%". The `max_classes` categories with the most entries become
// the classes. Throws std::runtime_error naming the directory when it holds no
// category files.
Corpus load_fortunes_corpus(const std::string& dir, int64_t max_classes = 10);
// The entries of one fortune file's text: the blocks between lines holding only "%".
std::vector<std::string> fortune_entries(const std::string& text);

// "label<TAB>text" lines; blank lines and lines starting with '#' are skipped.
// Throws std::runtime_error "FILE:LINE: ..." on a line without a tab, an empty
// label or an empty text.
Corpus load_tsv_corpus(const std::string& path);

// Reads `text` as TSV (the parsing behind load_tsv_corpus; `name` is used in errors).
std::vector<std::pair<std::string, std::string>> parse_tsv(std::string_view text, const std::string& name);

// Counts of each class in `docs` (for the README and sanity checks).
std::vector<int64_t> class_counts(const std::vector<Document>& docs, int64_t num_classes);

}  // namespace attn
