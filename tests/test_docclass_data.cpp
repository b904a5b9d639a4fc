// docclass data: tokenizer, sentence splitter, vocabulary, batches and masks,
// the needle corpus, the fortunes and TSV loaders, classification metrics.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "examples/docclass/classification_metrics.hpp"
#include "examples/docclass/docclass_data.hpp"
#include "tests/helpers.hpp"

using namespace attn;
using Tokens = std::vector<std::string>;

TEST_CASE("docclass tokenize: lower-case words, punctuation apart, numbers and contractions whole") {
    CHECK(tokenize("Hello, World! Don't PANIC.") == Tokens{"hello", ",", "world", "!", "don't", "panic", "."});
    CHECK(tokenize("pi is 3.14; e is 2.718...") == Tokens{"pi", "is", "3.14", ";", "e", "is", "2.718", ".", ".", "."});
    CHECK(tokenize("  (tabs\tand\nnewlines)  ") == Tokens{"(", "tabs", "and", "newlines", ")"});
    CHECK(tokenize("rock'n'roll 'quoted'") == Tokens{"rock'n'roll", "'", "quoted", "'"});
    CHECK(tokenize("naïve café") == Tokens{"naïve", "café"});  // UTF-8 stays whole
    CHECK(tokenize("").empty());
}

TEST_CASE("docclass split_sentences: terminators, abbreviations, quotes, blank lines") {
    const auto s = split_sentences("Mr. Smith went home. He slept!? Yes.");
    REQUIRE(s.size() == 3);
    CHECK(s[0] == Tokens{"mr", ".", "smith", "went", "home", "."});
    CHECK(s[1] == Tokens{"he", "slept", "!", "?"});
    CHECK(s[2] == Tokens{"yes", "."});

    const auto q = split_sentences("He said \"stop.\" Then he left");
    REQUIRE(q.size() == 2);
    CHECK(q[0].back() == "\"");
    CHECK(q[1] == Tokens{"then", "he", "left"});

    const auto p = split_sentences("a line without a stop\n\nanother paragraph\nstill the same");
    REQUIRE(p.size() == 2);
    CHECK(p[1] == Tokens{"another", "paragraph", "still", "the", "same"});

    CHECK(split_sentences("See e.g. the manual. Done.").size() == 2);
    CHECK(split_sentences("J. R. R. Tolkien wrote it.").size() == 1);
    CHECK(split_sentences("...").size() == 1);
    CHECK(split_sentences(" \n\n ").empty());
}

TEST_CASE("docclass Vocabulary: <pad> 0, <unk> 1, min count, most frequent first") {
    std::vector<Document> docs(1);
    docs[0].sentences = {{"b", "a", "b", "c"}, {"a", "b", "d"}};
    const Vocabulary v = Vocabulary::build(docs, 2);
    REQUIRE(v.size() == 4);
    CHECK(v.word(Vocabulary::pad) == "<pad>");
    CHECK(v.word(Vocabulary::unk) == "<unk>");
    CHECK(v.word(2) == "b");  // 3 times
    CHECK(v.word(3) == "a");  // 2 times
    CHECK(v.id("c") == Vocabulary::unk);  // once: below min count
    CHECK(v.id("never") == Vocabulary::unk);
    CHECK(Vocabulary::build(docs, 1, 3).size() == 3);
    CHECK_THROWS_AS(v.word(9), std::out_of_range);
}

TEST_CASE("docclass make_doc_batch: padding, masks, lengths, flat view, truncation") {
    std::vector<Document> docs(2);
    docs[0] = {0, {{"a", "b", "c"}, {"d"}}, 1};
    docs[1] = {1, {{"a"}, {"b", "b"}, {"c", "d", "a", "b", "c"}}, -1};
    const Vocabulary v = Vocabulary::build(docs, 1);
    const DocBatch b = make_doc_batch(docs, {0, 1}, v, 8, 4);
    CHECK(b.ids.shape() == Shape{2, 3, 4});  // 3 sentences, the 5-word one cut to 4
    CHECK(b.sentence_mask.to_vector() == std::vector<real>{1, 1, 0, 1, 1, 1});
    CHECK(b.word_lengths == std::vector<int64_t>{3, 1, 0, 1, 2, 4});
    CHECK(b.sentence_counts == std::vector<int64_t>{2, 3});
    CHECK(b.flat_lengths == std::vector<int64_t>{4, 7});
    CHECK(b.flat_ids.shape() == Shape{2, 7});
    CHECK(b.key_sentence == std::vector<int64_t>{1, -1});
    CHECK(b.labels.to_vector() == std::vector<real>{0, 1});
    for (int64_t i = 0; i < b.ids.numel(); ++i) {
        CHECK((b.word_mask[i] == 1) == (b.ids[i] != Vocabulary::pad));
    }
    CHECK(b.ids.at({0, 0, 0}) == v.id("a"));
    CHECK(b.flat_ids.at({1, 6}) == v.id("b"));
    const DocBatch cut = make_doc_batch(docs, {1}, v, 2, 16);
    CHECK(cut.ids.shape() == Shape{1, 2, 2});
    CHECK_THROWS_AS(make_doc_batch(docs, {}, v, 8, 8), std::invalid_argument);
}

TEST_CASE("docclass needle corpus: deterministic, one cued key sentence carrying the label") {
    NeedleOptions o;
    o.train = 50;
    o.valid = 5;
    o.test = 5;
    const Corpus a = make_needle_corpus(o), b = make_needle_corpus(o);
    REQUIRE(a.train.size() == 50);
    CHECK(a.class_names.size() == 10);
    for (size_t i = 0; i < a.train.size(); ++i) {
        CHECK(a.train[i].sentences == b.train[i].sentences);
        CHECK(a.train[i].label == b.train[i].label);
        CHECK(a.train[i].key_sentence == b.train[i].key_sentence);
    }
    o.seed = 2;
    CHECK(make_needle_corpus(o).train[0].sentences != a.train[0].sentences);

    auto has = [](const Sentence& s, const std::vector<std::string>& words) {
        int n = 0;
        for (const auto& w : s) n += std::find(words.begin(), words.end(), w) != words.end() ? 1 : 0;
        return n;
    };
    for (const Document& d : a.train) {
        REQUIRE(d.key_sentence >= 0);
        REQUIRE(d.key_sentence < static_cast<int64_t>(d.sentences.size()));
        CHECK(d.sentences.size() >= 4);
        CHECK(d.sentences.size() <= 8);
        for (size_t s = 0; s < d.sentences.size(); ++s) {
            const int cues = has(d.sentences[s], needle_cue_words());
            CHECK(cues == (static_cast<int64_t>(s) == d.key_sentence ? 1 : 0));  // only the key sentence is cued
            CHECK(d.sentences[s].size() <= 14);
        }
        CHECK(has(d.sentences[static_cast<size_t>(d.key_sentence)], needle_topic_words(d.label)) == 2);
    }
    o.num_classes = 11;
    CHECK_THROWS_AS(make_needle_corpus(o), std::invalid_argument);
}

TEST_CASE("docclass TSV: parsed lines, and errors naming the file and line") {
    const auto rows = parse_tsv("# comment\npos\tGreat film.\n\nneg \t Dull. Too long.\r\n", "r.tsv");
    REQUIRE(rows.size() == 2);
    CHECK(rows[1].first == "neg");
    CHECK(rows[1].second == " Dull. Too long.");

    auto error_of = [](const std::string& text) {
        try {
            parse_tsv(text, "reviews.tsv");
        } catch (const std::runtime_error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    CHECK(error_of("pos\tok\nno tab here\n").find("reviews.tsv:2: expected 'label<TAB>text'") == 0);
    CHECK(error_of("pos\tok\n\n\tno label\n").find("reviews.tsv:3: empty label") == 0);
    CHECK(error_of("pos\t   \n").find("reviews.tsv:1: empty text after the label 'pos'") == 0);

    const attn::testing::TempDir tmp("docclass_tsv");
    const std::string path = tmp / "reviews.tsv";
    std::ofstream(path) << "a\tone.\n";
    CHECK_THROWS_WITH_AS(load_tsv_corpus(path), doctest::Contains("only one label"), std::runtime_error);
    std::ofstream(path) << "";
    CHECK_THROWS_WITH_AS(load_tsv_corpus(path), doctest::Contains("no 'label<TAB>text' lines"), std::runtime_error);
    std::ofstream out(path);
    for (int i = 0; i < 20; ++i) out << (i % 2 ? "pos" : "neg") << "\tSentence " << i << ". Another one.\n";
    out.close();
    const Corpus c = load_tsv_corpus(path);
    CHECK(c.class_names == Tokens{"neg", "pos"});
    CHECK(c.train.size() + c.valid.size() + c.test.size() == 20);
    CHECK(class_counts(c.test, 2) == std::vector<int64_t>{1, 1});  // stratified: 10% of each class
    std::filesystem::remove(path);
    CHECK_THROWS_WITH_AS(load_tsv_corpus(path), doctest::Contains("cannot open"), std::runtime_error);
}

// Each of these once went through: a byte-order mark became part of the
// first label (a third class); a Latin-1 file trained a whole epoch and
// failed at the first save, naming neither file nor line; 6 documents trained
// with 0 validation and 0 test documents and reported "accuracy 0.0000".
TEST_CASE("docclass TSV: a byte-order mark is dropped; text that is not UTF-8 and splits left empty are refused") {
    const auto rows = parse_tsv("\xEF\xBB\xBFpos\tGreat film.\r\nneg\tDull.\r\n", "r.tsv");
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].first == "pos");
    CHECK(rows[1].first == "neg");
    CHECK(rows[1].second == "Dull.");
    CHECK_THROWS_WITH_AS(parse_tsv("pos\tfine\nneg\tcaf\xE9 au lait\n", "latin1.tsv"),
                         doctest::Contains("latin1.tsv:2: "), std::runtime_error);
    CHECK_THROWS_WITH_AS(parse_tsv("pos\tfine\nneg\tcaf\xE9 au lait\n", "latin1.tsv"),
                         doctest::Contains("at byte 8 (expected UTF-8 text"), std::runtime_error);
    CHECK(parse_tsv("pos\tcaf\xC3\xA9 au lait\n", "utf8.tsv").size() == 1);

    const attn::testing::TempDir tmp("docclass_tsv_small");
    const std::string path = tmp / "six.tsv";
    {
        std::ofstream out(path);
        for (int i = 0; i < 6; ++i) out << (i % 2 ? "pos" : "neg") << "\tSentence " << i << ".\n";
    }
    CHECK_THROWS_WITH_AS(load_tsv_corpus(path),
                         doctest::Contains("six.tsv: 6 documents leave the validation split empty"), std::runtime_error);
    {
        std::ofstream out(path);
        for (int i = 0; i < 10; ++i) out << (i % 2 ? "pos" : "neg") << "\tSentence " << i << ".\n";
    }
    const Corpus c = load_tsv_corpus(path);  // 5 of each label: one of each in validation and in test
    CHECK(c.valid.size() == 2);
    CHECK(c.test.size() == 2);
}

TEST_CASE("docclass fortunes: '%'-separated entries, the largest categories") {
    const attn::testing::TempDir tmp("docclass_fortunes");
    const std::filesystem::path dir = tmp.path;
    std::ofstream(dir / "cats") << "Cats sleep.\n%\nA cat. Another cat.\n%\n%\nLast cat, no final percent.\n";
    std::ofstream(dir / "dogs") << "Dogs bark.\n%\nDogs run.\n%\n";
    std::ofstream(dir / "fish") << "One fish.\n%\n";
    std::ofstream(dir / "cats.dat") << "binary index, skipped";
    const Corpus c = load_fortunes_corpus(dir.string(), 2);
    CHECK(c.class_names == Tokens{"cats", "dogs"});
    const auto total = [&](int64_t k) {
        return class_counts(c.train, 2)[static_cast<size_t>(k)] + class_counts(c.valid, 2)[static_cast<size_t>(k)] +
               class_counts(c.test, 2)[static_cast<size_t>(k)];
    };
    CHECK(total(0) == 3);
    CHECK(total(1) == 2);
    CHECK_THROWS_WITH_AS(load_fortunes_corpus(dir.string(), 1), doctest::Contains("max_classes must be at least 2"),
                         std::invalid_argument);
    // One category trained a one-class model that is always right.
    std::filesystem::remove(dir / "dogs");
    std::filesystem::remove(dir / "fish");
    CHECK_THROWS_WITH_AS(load_fortunes_corpus(dir.string()),
                         (dir.string() + ": only one category ('cats'); a classifier needs two or more").c_str(),
                         std::runtime_error);
    std::filesystem::remove_all(dir);
    CHECK_THROWS_WITH_AS(load_fortunes_corpus(dir.string()), doctest::Contains("not a directory"), std::runtime_error);
}

TEST_CASE("docclass ConfusionMatrix: accuracy, per-class F1, macro-F1") {
    ConfusionMatrix cm(3);
    // truth 0: predicted 0, 0, 1;  truth 1: 1, 1;  truth 2: 0
    for (auto [t, p] : std::vector<std::pair<int, int>>{{0, 0}, {0, 0}, {0, 1}, {1, 1}, {1, 1}, {2, 0}}) cm.add(t, p);
    CHECK(cm.total() == 6);
    CHECK(cm.accuracy() == doctest::Approx(4.0 / 6));
    CHECK(cm.precision(0) == doctest::Approx(2.0 / 3));
    CHECK(cm.recall(0) == doctest::Approx(2.0 / 3));
    CHECK(cm.f1(1) == doctest::Approx(0.8));  // precision 2/3, recall 1
    CHECK(cm.f1(2) == 0);
    CHECK(cm.macro_f1() == doctest::Approx((2.0 / 3 + 0.8 + 0) / 3));
    CHECK(cm.counts().at({0, 1}) == 1);
    CHECK(cm.counts(true).at({0, 0}) == doctest::Approx(2.0 / 3));
    CHECK_THROWS_AS(cm.add(3, 0), std::out_of_range);
    ConfusionMatrix unused(4);  // a class never seen does not count in macro-F1
    unused.add(0, 0);
    CHECK(unused.macro_f1() == 1);
}
