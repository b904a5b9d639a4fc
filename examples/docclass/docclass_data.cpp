#include "examples/docclass/docclass_data.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>

#include "examples/common/data_file.hpp"
#include "io/json.hpp"
#include "tensor/random.hpp"

namespace attn {

// ---- tokenizer ------------------------------------------------------------------

namespace {

bool is_word_char(unsigned char c) { return std::isalnum(c) || c >= 0x80; }
bool is_terminator(const std::string& t) { return t == "." || t == "!" || t == "?"; }
bool is_closer(const std::string& t) { return t == "\"" || t == "'" || t == ")" || t == "]"; }

// Words before a "." that does not end the sentence.
bool is_abbreviation(const std::string& w) {
    static const std::set<std::string> known{"mr", "mrs", "ms", "dr", "st", "jr", "sr", "vs", "etc", "prof",
                                             "inc", "ltd", "co", "no", "e.g", "i.e", "cf", "approx"};
    return (w.size() == 1 && std::isalpha(static_cast<unsigned char>(w[0]))) || known.count(w) > 0;
}

// Tokens with a marker "\n\n" at each blank line (a paragraph break).
std::vector<std::string> tokenize_with_breaks(std::string_view text) {
    std::vector<std::string> tokens;
    size_t i = 0;
    const size_t n = text.size();
    int newlines = 0;
    while (i < n) {
        const unsigned char c = text[i];
        if (c == '\n') {
            if (++newlines == 2 && !tokens.empty() && tokens.back() != "\n\n") tokens.push_back("\n\n");
            ++i;
            continue;
        }
        if (std::isspace(c) || c < 0x20 || c == 0x7f) {
            ++i;
            continue;
        }
        newlines = 0;
        if (!is_word_char(c)) {
            tokens.emplace_back(1, static_cast<char>(c));
            ++i;
            continue;
        }
        std::string word;
        while (i < n) {
            const unsigned char d = text[i];
            const bool inner = i + 1 < n && is_word_char(static_cast<unsigned char>(text[i + 1])) && !word.empty();
            if (is_word_char(d)) {
                word += static_cast<char>(std::tolower(d));
            } else if (d == '\'' && inner) {  // don't, o'clock
                word += '\'';
            } else if ((d == '.' || d == ',') && inner && std::isdigit(static_cast<unsigned char>(word.back())) &&
                       std::isdigit(static_cast<unsigned char>(text[i + 1]))) {  // 3.14, 1,000
                word += static_cast<char>(d);
            } else if (d == '.' && inner && word.size() == 1 && std::isalpha(static_cast<unsigned char>(word[0])) &&
                       std::isalpha(static_cast<unsigned char>(text[i + 1])) && i + 2 < n && text[i + 2] == '.') {
                word += '.';  // e.g, i.e (the final "." is a token of its own)
            } else {
                break;
            }
            ++i;
        }
        tokens.push_back(std::move(word));
    }
    return tokens;
}

}  // namespace

std::vector<std::string> tokenize(std::string_view text) {
    std::vector<std::string> tokens = tokenize_with_breaks(text);
    std::erase(tokens, std::string("\n\n"));
    return tokens;
}

std::vector<Sentence> split_sentences(std::string_view text) {
    const std::vector<std::string> tokens = tokenize_with_breaks(text);
    std::vector<Sentence> sentences;
    Sentence current;
    auto end_sentence = [&] {
        if (!current.empty()) sentences.push_back(std::move(current));
        current.clear();
    };
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (tokens[i] == "\n\n") {
            end_sentence();
            continue;
        }
        current.push_back(tokens[i]);
        if (!is_terminator(tokens[i])) continue;
        if (tokens[i] == "." && current.size() >= 2 && is_abbreviation(current[current.size() - 2])) continue;
        // A run of terminators and closing quotes stays with the sentence.
        while (i + 1 < tokens.size() && (is_terminator(tokens[i + 1]) || is_closer(tokens[i + 1])))
            current.push_back(tokens[++i]);
        end_sentence();
    }
    end_sentence();
    return sentences;
}

// ---- vocabulary --------------------------------------------------------------------

Vocabulary Vocabulary::build(const std::vector<Document>& docs, int64_t min_count, int64_t max_size) {
    std::map<std::string, int64_t> counts;
    for (const Document& d : docs)
        for (const Sentence& s : d.sentences)
            for (const std::string& w : s) ++counts[w];
    std::vector<std::pair<std::string, int64_t>> kept;
    for (const auto& [w, c] : counts)
        if (c >= min_count) kept.emplace_back(w, c);
    // Most frequent first; std::map order makes ties alphabetical.
    std::stable_sort(kept.begin(), kept.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    Vocabulary v;
    for (const auto& [w, c] : kept) {
        if (max_size > 0 && v.size() >= max_size) break;
        v.ids_[w] = v.size();
        v.words_.push_back(w);
    }
    return v;
}

Vocabulary Vocabulary::from_words(const std::vector<std::string>& words) {
    Vocabulary v;
    for (const std::string& w : words) {
        if (w.empty()) throw std::runtime_error("vocabulary: an empty word at id " + std::to_string(v.size()));
        if (w == v.words_[pad] || w == v.words_[unk] || !v.ids_.emplace(w, v.size()).second)
            throw std::runtime_error("vocabulary: the word '" + w + "' appears twice");
        v.words_.push_back(w);
    }
    return v;
}

int64_t Vocabulary::id(const std::string& word) const {
    const auto it = ids_.find(word);
    return it == ids_.end() ? unk : it->second;
}

const std::string& Vocabulary::word(int64_t id) const {
    if (id < 0 || id >= size())
        throw std::out_of_range("Vocabulary::word: id " + std::to_string(id) + " is not in [0, " +
                                std::to_string(size()) + ")");
    return words_[static_cast<size_t>(id)];
}

// ---- batches ---------------------------------------------------------------------

DocBatch make_doc_batch(const std::vector<Document>& docs, const std::vector<int64_t>& indices,
                        const Vocabulary& vocab, int64_t max_sentences, int64_t max_words) {
    const int64_t B = static_cast<int64_t>(indices.size());
    if (B == 0) throw std::invalid_argument("make_doc_batch: no documents");
    int64_t S = 1, W = 1, T = 1;
    for (int64_t i : indices) {
        const Document& d = docs.at(static_cast<size_t>(i));
        const int64_t ns = std::min<int64_t>(static_cast<int64_t>(d.sentences.size()), max_sentences);
        S = std::max(S, ns);
        int64_t total = 0;
        for (int64_t s = 0; s < ns; ++s) {
            const int64_t nw = std::min<int64_t>(static_cast<int64_t>(d.sentences[static_cast<size_t>(s)].size()),
                                                 max_words);
            W = std::max(W, nw);
            total += nw;
        }
        T = std::max(T, total);
    }
    DocBatch b;
    b.ids = Tensor::zeros({B, S, W});
    b.word_mask = Tensor::zeros({B, S, W});
    b.sentence_mask = Tensor::zeros({B, S});
    b.labels = Tensor::zeros({B});
    b.flat_ids = Tensor::zeros({B, T});
    b.word_lengths.assign(static_cast<size_t>(B * S), 0);
    b.sentence_counts.assign(static_cast<size_t>(B), 0);
    b.flat_lengths.assign(static_cast<size_t>(B), 0);
    b.key_sentence.assign(static_cast<size_t>(B), -1);
    for (int64_t bi = 0; bi < B; ++bi) {
        const Document& d = docs[static_cast<size_t>(indices[static_cast<size_t>(bi)])];
        b.labels[bi] = static_cast<real>(d.label);
        b.key_sentence[static_cast<size_t>(bi)] = d.key_sentence < S ? d.key_sentence : -1;
        const int64_t ns = std::min<int64_t>(static_cast<int64_t>(d.sentences.size()), max_sentences);
        int64_t t = 0;
        for (int64_t s = 0; s < ns; ++s) {
            const Sentence& sent = d.sentences[static_cast<size_t>(s)];
            const int64_t nw = std::min<int64_t>(static_cast<int64_t>(sent.size()), max_words);
            if (nw > 0) b.sentence_mask[bi * S + s] = 1;
            b.word_lengths[static_cast<size_t>(bi * S + s)] = nw;
            for (int64_t w = 0; w < nw; ++w) {
                const real id = static_cast<real>(vocab.id(sent[static_cast<size_t>(w)]));
                b.ids[(bi * S + s) * W + w] = id;
                b.word_mask[(bi * S + s) * W + w] = 1;
                b.flat_ids[bi * T + t++] = id;
            }
        }
        b.sentence_counts[static_cast<size_t>(bi)] = ns;
        b.flat_lengths[static_cast<size_t>(bi)] = t;
    }
    return b;
}

// ---- the built-in "needle" corpus -----------------------------------------------

namespace {

// The word lists are plain arrays of literals, made into vectors at start-up
// by one loop each: a vector<string> written as a braced list of literals
// compiles to one long function of string constructions, slow to compile
// (35 s under the sanitizers) for nothing.
constexpr const char* kTopicNameList[] = {"sports", "music",  "cooking",   "weather",   "space",
                                          "finance", "health", "computing", "gardening", "travel"};
constexpr const char* kTopicWordLists[][8] = {
    {"goal", "match", "team", "coach", "league", "striker", "referee", "stadium"},
    {"guitar", "melody", "concert", "album", "chorus", "drummer", "lyrics", "tempo"},
    {"oven", "recipe", "flour", "sauce", "simmer", "garlic", "pastry", "skillet"},
    {"rain", "storm", "forecast", "thunder", "drizzle", "humidity", "breeze", "frost"},
    {"orbit", "rocket", "planet", "comet", "galaxy", "astronaut", "telescope", "lunar"},
    {"stock", "bank", "loan", "budget", "interest", "dividend", "market", "invoice"},
    {"doctor", "fever", "vaccine", "clinic", "nurse", "symptom", "therapy", "pulse"},
    {"compiler", "server", "keyboard", "software", "bug", "kernel", "database", "laptop"},
    {"tulip", "soil", "compost", "seedling", "hedge", "prune", "orchard", "weeds"},
    {"airport", "passport", "luggage", "hotel", "ticket", "journey", "tourist", "ferry"}};
constexpr const char* kCueWordList[] = {"notably", "crucially", "importantly", "above", "mainly"};
constexpr const char* kFillerList[] = {
    "the",    "a",      "of",    "and",    "to",     "in",     "it",     "was",   "is",     "that",
    "we",     "they",   "he",    "she",    "this",   "with",   "on",     "for",   "as",     "at",
    "by",     "from",   "but",   "or",     "not",    "then",   "there",  "some",  "many",   "few",
    "day",    "week",   "year",  "people", "friend", "house",  "street", "town",  "city",   "morning",
    "evening", "later", "again", "still",  "quite",  "very",   "rather", "often", "never",  "always",
    "said",   "told",   "saw",   "went",   "came",   "made",   "took",   "found", "thought", "seemed",
    "good",   "new",    "old",   "long",   "small",  "large",  "early",  "late",  "other",  "same",
    "story",  "letter", "note",  "paper",  "page",   "word",   "time",   "place", "thing",  "way",
    "red",    "blue",   "green", "quiet",  "loud",   "slow",   "quick",  "warm",  "cold",   "bright"};

template <size_t N>
std::vector<std::string> words_of(const char* const (&list)[N]) {
    return {std::begin(list), std::end(list)};
}

const std::vector<std::string> kTopicNames = words_of(kTopicNameList);
const std::vector<std::vector<std::string>> kTopicWords = [] {
    std::vector<std::vector<std::string>> topics;
    for (const auto& list : kTopicWordLists) topics.push_back(words_of(list));
    return topics;
}();
const std::vector<std::string> kCueWords = words_of(kCueWordList);
const std::vector<std::string> kFiller = words_of(kFillerList);

std::string pick(const std::vector<std::string>& words, Generator& gen) {
    return words[gen.randint(words.size())];
}

// A sentence of `length` filler words with `special` words put at random
// places, ending with ".".
Sentence make_sentence(int64_t length, const std::vector<std::string>& special, Generator& gen) {
    Sentence s;
    for (int64_t i = 0; i < length - 1; ++i) s.push_back(pick(kFiller, gen));
    for (const std::string& w : special) s[gen.randint(s.size())] = w;
    s.push_back(".");
    return s;
}

Document make_needle_document(const NeedleOptions& o, Generator& gen) {
    Document d;
    d.label = static_cast<int64_t>(gen.randint(static_cast<uint64_t>(o.num_classes)));
    const int64_t n_s = o.min_sentences + static_cast<int64_t>(gen.randint(o.max_sentences - o.min_sentences + 1));
    d.key_sentence = static_cast<int64_t>(gen.randint(static_cast<uint64_t>(n_s)));
    const auto& topic = kTopicWords[static_cast<size_t>(d.label)];
    for (int64_t s = 0; s < n_s; ++s) {
        const int64_t len = o.min_words + static_cast<int64_t>(gen.randint(o.max_words - o.min_words + 1));
        std::vector<std::string> special;
        if (s == d.key_sentence) {
            // Placed in order, so the cue and both topic words land on distinct slots.
            special = {pick(kCueWords, gen), pick(topic, gen), pick(topic, gen)};
            Sentence sent;
            for (int64_t i = 0; i < len - 1; ++i) sent.push_back(pick(kFiller, gen));
            std::vector<size_t> slots(sent.size());
            std::iota(slots.begin(), slots.end(), size_t{0});
            for (size_t k = 0; k < special.size(); ++k) {  // a partial Fisher–Yates shuffle
                std::swap(slots[k], slots[k + gen.randint(slots.size() - k)]);
                sent[slots[k]] = special[k];
            }
            sent.push_back(".");
            d.sentences.push_back(std::move(sent));
            continue;
        }
        if (gen.uniform() < o.distractor_topic_rate) {
            const auto& other = kTopicWords[gen.randint(static_cast<uint64_t>(o.num_classes))];
            special.push_back(pick(other, gen));
        }
        d.sentences.push_back(make_sentence(len, special, gen));
    }
    return d;
}

}  // namespace

const std::vector<std::string>& needle_cue_words() { return kCueWords; }
const std::vector<std::string>& needle_topic_words(int64_t c) { return kTopicWords.at(static_cast<size_t>(c)); }

Corpus make_needle_corpus(const NeedleOptions& o) {
    if (o.num_classes < 2 || o.num_classes > static_cast<int64_t>(kTopicNames.size()))
        throw std::invalid_argument("make_needle_corpus: num_classes must be in [2, 10], got " +
                                    std::to_string(o.num_classes));
    if (o.min_sentences < 1 || o.max_sentences < o.min_sentences || o.min_words < 4 || o.max_words < o.min_words)
        throw std::invalid_argument("make_needle_corpus: need 1 <= min_sentences <= max_sentences and "
                                    "4 <= min_words <= max_words");
    Corpus c;
    c.class_names.assign(kTopicNames.begin(), kTopicNames.begin() + o.num_classes);
    Generator gen(o.seed);
    for (int64_t i = 0; i < o.train; ++i) c.train.push_back(make_needle_document(o, gen));
    for (int64_t i = 0; i < o.valid; ++i) c.valid.push_back(make_needle_document(o, gen));
    for (int64_t i = 0; i < o.test; ++i) c.test.push_back(make_needle_document(o, gen));
    return c;
}

// ---- files ------------------------------------------------------------------------

void stratified_split(std::vector<Document> docs, double valid_fraction, double test_fraction, uint64_t split_seed,
                      Corpus& corpus) {
    const int64_t C = static_cast<int64_t>(corpus.class_names.size());
    Generator gen(split_seed);
    for (int64_t c = 0; c < C; ++c) {
        std::vector<Document> of_class;
        for (Document& d : docs)
            if (d.label == c) of_class.push_back(std::move(d));
        for (size_t i = of_class.size(); i > 1; --i) std::swap(of_class[i - 1], of_class[gen.randint(i)]);
        const size_t n = of_class.size();
        const size_t n_test = static_cast<size_t>(static_cast<double>(n) * test_fraction + 0.5);
        const size_t n_valid = static_cast<size_t>(static_cast<double>(n) * valid_fraction + 0.5);
        for (size_t i = 0; i < n; ++i) {
            auto& part = i < n_test ? corpus.test : i < n_test + n_valid ? corpus.valid : corpus.train;
            part.push_back(std::move(of_class[i]));
        }
    }
    // Interleave the classes (deterministically) so no part is sorted by class.
    for (auto* part : {&corpus.train, &corpus.valid, &corpus.test})
        for (size_t i = part->size(); i > 1; --i) std::swap((*part)[i - 1], (*part)[gen.randint(i)]);
}

namespace {

std::string read_file_text(const std::string& path) { return read_data_file(path, "a text file"); }

}  // namespace

std::vector<std::string> fortune_entries(const std::string& text) {
    std::vector<std::string> entries;
    std::string current, line;
    std::istringstream in(text);
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line == "%") {
            if (current.find_first_not_of(" \t\n") != std::string::npos) entries.push_back(current);
            current.clear();
        } else {
            current += line + "\n";
        }
    }
    if (current.find_first_not_of(" \t\n") != std::string::npos) entries.push_back(current);
    return entries;
}

Corpus load_fortunes_corpus(const std::string& dir, int64_t max_classes) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        throw std::runtime_error(dir + ": not a directory (run `make data` to unpack Debian's fortunes into data/)");
    std::vector<std::pair<std::string, std::vector<std::string>>> categories;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& p : files) {
        const std::string name = p.filename().string();
        if (name.find('.') != std::string::npos || !fs::is_regular_file(p, ec)) continue;
        auto entries = fortune_entries(read_file_text(p.string()));
        if (!entries.empty()) categories.emplace_back(name, std::move(entries));
    }
    if (categories.empty())
        throw std::runtime_error(dir + ": no fortune files (files named by category, entries separated by '%' lines)");
    if (categories.size() == 1)  // it trained a one-class "classifier" that is always right
        throw std::runtime_error(dir + ": only one category ('" + categories[0].first +
                                 "'); a classifier needs two or more");
    if (max_classes < 2)
        throw std::invalid_argument("load_fortunes_corpus: max_classes must be at least 2, got " +
                                    std::to_string(max_classes));
    std::stable_sort(categories.begin(), categories.end(),
                     [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
    if (static_cast<int64_t>(categories.size()) > max_classes) categories.resize(static_cast<size_t>(max_classes));
    std::sort(categories.begin(), categories.end());  // classes by name
    Corpus corpus;
    std::vector<Document> docs;
    for (size_t c = 0; c < categories.size(); ++c) {
        corpus.class_names.push_back(categories[c].first);
        for (const std::string& entry : categories[c].second) {
            Document d;
            d.label = static_cast<int64_t>(c);
            d.sentences = split_sentences(entry);
            if (!d.sentences.empty()) docs.push_back(std::move(d));
        }
    }
    stratified_split(std::move(docs), 0.1, 0.1, 2016, corpus);
    return corpus;
}

std::vector<std::pair<std::string, std::string>> parse_tsv(std::string_view text, const std::string& name) {
    std::vector<std::pair<std::string, std::string>> rows;
    // A byte-order mark (what some editors write first) is no part of the
    // first label: it once made a class of its own.
    size_t pos = text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;
    int64_t line_no = 0;
    while (pos < text.size()) {
        size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(pos, end - pos);
        pos = end + 1;
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.find_first_not_of(" \t") == std::string_view::npos || line.front() == '#') continue;
        const std::string where = name + ":" + std::to_string(line_no) + ": ";
        // UTF-8 is checked as the file is read: a Latin-1 file once trained a
        // whole epoch and failed at the first save, naming neither file nor line.
        const char* why = "";
        if (const size_t bad = first_invalid_utf8(line, &why); bad != std::string_view::npos)
            throw std::runtime_error(where + why + " at byte " + std::to_string(bad + 1) +
                                     " (expected UTF-8 text; convert the file with iconv)");
        const size_t tab = line.find('\t');
        if (tab == std::string_view::npos)
            throw std::runtime_error(where + "expected 'label<TAB>text', found no tab in '" +
                                     std::string(line.substr(0, 60)) + "'");
        std::string label(line.substr(0, tab));
        std::string body(line.substr(tab + 1));
        while (!label.empty() && label.back() == ' ') label.pop_back();
        while (!label.empty() && label.front() == ' ') label.erase(label.begin());
        if (label.empty()) throw std::runtime_error(where + "empty label before the tab");
        if (body.find_first_not_of(" \t") == std::string::npos)
            throw std::runtime_error(where + "empty text after the label '" + label + "'");
        rows.emplace_back(std::move(label), std::move(body));
    }
    return rows;
}

Corpus load_tsv_corpus(const std::string& path) {
    const auto rows = parse_tsv(read_file_text(path), path);
    if (rows.empty()) throw std::runtime_error(path + ": no 'label<TAB>text' lines");
    std::set<std::string> labels;
    for (const auto& r : rows) labels.insert(r.first);
    if (labels.size() < 2)
        throw std::runtime_error(path + ": only one label ('" + *labels.begin() + "'); a classifier needs two or more");
    Corpus corpus;
    corpus.class_names.assign(labels.begin(), labels.end());
    std::vector<Document> docs;
    for (const auto& [label, body] : rows) {
        Document d;
        d.label = std::distance(labels.begin(), labels.find(label));
        d.sentences = split_sentences(body);
        if (!d.sentences.empty()) docs.push_back(std::move(d));
    }
    const size_t count = docs.size();
    stratified_split(std::move(docs), 0.1, 0.1, 2016, corpus);
    // (a 6-document file once trained and reported "accuracy 0.0000 (0 documents)")
    if (corpus.valid.empty() || corpus.test.empty())
        throw std::runtime_error(path + ": " + std::to_string(count) + " documents leave the " +
                                 (corpus.valid.empty() ? "validation" : "test") +
                                 " split empty (each split takes a tenth of every label): give at least 5 of each label");
    return corpus;
}

std::vector<int64_t> class_counts(const std::vector<Document>& docs, int64_t num_classes) {
    std::vector<int64_t> counts(static_cast<size_t>(num_classes), 0);
    for (const Document& d : docs)
        if (d.label >= 0 && d.label < num_classes) ++counts[static_cast<size_t>(d.label)];
    return counts;
}

}  // namespace attn
