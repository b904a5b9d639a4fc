// The seq2seq example's data: date generation, the lexicon loader, the hash
// split, batching, and Sequitur-style WER/PER.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>

#include "examples/seq2seq/edit_distance.hpp"
#include "examples/seq2seq/predict.hpp"
#include "examples/seq2seq/seq2seq_data.hpp"
#include "examples/seq2seq/task.hpp"
#include "io/json.hpp"
#include "tests/helpers.hpp"

using namespace attn;
using attn::testing::TempDir;
using namespace attn::seq2seq;

TEST_CASE("seq2seq dates: generation is deterministic and the splits are disjoint") {
    const auto a = generate_dates(200, 0, 7), b = generate_dates(200, 0, 7);
    REQUIRE(a.size() == 200);
    for (size_t i = 0; i < a.size(); ++i) {
        CHECK(a[i].text == b[i].text);
        CHECK(a[i].iso == b[i].iso);
        const int y = std::stoi(a[i].iso.substr(0, 4)), m = std::stoi(a[i].iso.substr(5, 2)),
                  d = std::stoi(a[i].iso.substr(8, 2));
        CHECK(date_split(y, m, d) == 0);
        CHECK(y >= 1950);
        CHECK(y <= 2049);
    }
    for (const auto& t : generate_dates(100, 2, 7)) {
        const int y = std::stoi(t.iso.substr(0, 4)), m = std::stoi(t.iso.substr(5, 2)), d = std::stoi(t.iso.substr(8, 2));
        CHECK(date_split(y, m, d) == 2);
    }
    CHECK(generate_dates(5, 0, 8)[0].text != a[0].text);
}

TEST_CASE("seq2seq dates: formats and weekdays") {
    Generator gen(1);
    CHECK(day_of_week(2026, 11, 22) == 6);  // a Sunday
    CHECK(day_of_week(2000, 1, 1) == 5);    // a Saturday
    CHECK(format_date(2026, 11, 22, 6, gen) == "11/22/26");
    CHECK(format_date(2026, 11, 22, 8, gen) == "22.11.2026");
    CHECK(format_date(2026, 11, 22, 10, gen) == "2026/11/22");
    CHECK(format_date(2026, 11, 3, 9, gen) == "3.11.26");
    const std::string s = format_date(2026, 11, 22, 4, gen);  // Sunday, Nov 22 2026 in some case
    CHECK(s.size() == std::string("Sunday, Nov 22 2026").size());
    CHECK_THROWS_AS(format_date(2026, 11, 22, date_format_count(), gen), std::invalid_argument);
}

TEST_CASE("seq2seq lexicon: both forms, alternates merged, words case-folded") {
    const Lexicon lex = parse_lexicon(
        ";;; a comment\n"
        "abandon AH B AE N D AH N\n"
        "either IY DH ER\n"
        "either(2) AY DH ER\n"
        "\n"
        "READ\tR IY D\tR EH D\n"
        "Read\tR EH D\r\n",
        "mem");
    REQUIRE(lex.size() == 3);
    CHECK(lex[0].word == "abandon");
    CHECK(lex[0].pronunciations[0].size() == 7);
    CHECK(lex[1].word == "either");
    REQUIRE(lex[1].pronunciations.size() == 2);
    CHECK(lex[1].pronunciations[1][0] == "AY");
    CHECK(lex[2].word == "read");
    CHECK(lex[2].pronunciations.size() == 3);
}

TEST_CASE("seq2seq lexicon: malformed lines name the file, the line and the reason") {
    auto message = [](const std::string& text) {
        try {
            parse_lexicon(text, "lex.dict");
        } catch (const std::runtime_error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    CHECK(message("ok OW K\nlonely\n") == "lex.dict:2: 'lonely' has no pronunciation (expected WORD PH PH ...)");
    CHECK(message("word(x) W ER D\n").find("lex.dict:1: 'word(x)': an alternate must be written word(N)") == 0);
    CHECK(message("word(2 W ER D\n").find("lex.dict:1:") == 0);
    CHECK(message("(2) W ER D\n").find("lex.dict:1:") == 0);
    CHECK(message("\tW ER D\n") == "lex.dict:1: the word is empty");
    CHECK(message("ok OW K\n" + std::string(1000000, 'a') + " EY\n") == "lex.dict:2: a word of 1000000 characters (at most 256)");
    std::string long_pronunciation = "ok";
    for (int i = 0; i < 300; ++i) long_pronunciation += " K";
    CHECK(message(long_pronunciation + "\n") == "lex.dict:1: a pronunciation of 300 phonemes (at most 256)");
    // The limits at their ends, in characters, not bytes: "é" is two bytes of UTF-8, one character.
    auto repeat = [](const std::string& part, int n) {
        std::string s;
        for (int i = 0; i < n; ++i) s += part;
        return s;
    };
    CHECK(message(repeat("a", 256) + " EY\n") == "no error");
    CHECK(message(repeat("a", 257) + " EY\n") == "lex.dict:1: a word of 257 characters (at most 256)");
    CHECK(message(repeat("\xc3\xa9", 256) + " EY\n") == "no error");  // 512 bytes
    CHECK(message(repeat("\xc3\xa9", 257) + " EY\n") == "lex.dict:1: a word of 257 characters (at most 256)");
    CHECK(message("ok" + repeat(" K", 256) + "\n") == "no error");
    CHECK(message("ok" + repeat(" K", 257) + "\n") == "lex.dict:1: a pronunciation of 257 phonemes (at most 256)");
    CHECK(parse_lexicon("\xEF\xBB\xBFok OW K\r\n", "bom.dict").at(0).word == "ok");  // no mark in the first word
    CHECK(message("a\x01 B\n").find("lex.dict:1: control character") == 0);
    CHECK(message("a b\tB\n").find("lex.dict:1:") == 0);
    CHECK(message("ok OW K\ncaf\xc3 K AE F\n") ==
          "lex.dict:2: invalid UTF-8 continuation byte at byte 4 (expected UTF-8 text)");
    CHECK(message("\xff K\n") == "lex.dict:1: invalid UTF-8 byte at byte 1 (expected UTF-8 text)");
    // An empty file or a directory scored "exact 1.0000" on 0 items and exited 0.
    TempDir dir("lexicon");
    std::ofstream(dir / "empty.dict") << ";;; only a comment\n\n";
    CHECK_THROWS_WITH_AS(load_lexicon(dir / "empty.dict"),
                         (dir / "empty.dict" + ": no entries (expected lines WORD PH PH ...)").c_str(), std::runtime_error);
    CHECK_THROWS_WITH_AS(load_lexicon(dir.path), (dir.path + ": is a directory, expected a lexicon file").c_str(),
                         std::runtime_error);
    CHECK_THROWS_WITH_AS(load_lexicon("/nonexistent/lex.dict"),
                         "/nonexistent/lex.dict: cannot open: no such file (expected a lexicon file)", std::runtime_error);
    // a FIFO once made the trainer wait forever, /dev/zero grew without bound
    const std::string fifo = dir / "pipe.dict";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CHECK_THROWS_WITH_AS(load_lexicon(fifo),
                         (fifo + ": not a regular file (a device or a pipe), expected a lexicon file").c_str(),
                         std::runtime_error);
    CHECK_THROWS_WITH_AS(load_lexicon("/dev/zero"),
                         "/dev/zero: not a regular file (a device or a pipe), expected a lexicon file", std::runtime_error);
}

TEST_CASE("seq2seq lexicon: the hash split is deterministic, about 90/5/5, and keeps a word's pronunciations together") {
    Lexicon lex;
    for (int i = 0; i < 4000; ++i) lex.push_back({"w" + std::to_string(i), {{"A"}, {"B"}}});
    const LexiconSplit s = split_lexicon(lex);
    CHECK(s.train.size() + s.dev.size() + s.test.size() == lex.size());
    CHECK(s.train.size() > 3500);
    CHECK(s.dev.size() > 120);
    CHECK(s.test.size() > 120);
    for (const auto& e : s.test) {
        CHECK(word_split(e.word) == 2);
        CHECK(e.pronunciations.size() == 2);
    }
    CHECK(word_split("abandon") == word_split("abandon"));
}

TEST_CASE("seq2seq lexicon: the 2007 CMUdict training list in the tree reads as documented") {
    // examples/seq2seq/g2p-2007/README.md: 106,837 words, 113,438 pronunciations, 39 phonemes.
    const Lexicon lex = load_lexicon("examples/seq2seq/g2p-2007/g014b2b.train");
    CHECK(lex.size() == 106837);
    size_t pronunciations = 0;
    std::set<std::string> phonemes;
    for (const auto& e : lex)
        for (const auto& p : e.pronunciations) {
            ++pronunciations;
            phonemes.insert(p.begin(), p.end());
        }
    CHECK(pronunciations == 113438);
    CHECK(phonemes.size() == 39);
    CHECK(lex.front().word == "aaa");  // case-folded
}

TEST_CASE("seq2seq lexicon: --data g2p-2007 keeps 5% of the training list's words for dev, by their hash") {
    // The buckets by hand (FNV-1a, 64 bits, mod 100), worked out with Python's
    // integers: "a" 96, "abbott" 37, "aaa" 94.
    CHECK(word_bucket("a") == 96);
    CHECK(word_bucket("abbott") == 37);
    CHECK(word_bucket("aaa") == 94);
    const Lexicon tiny = parse_lexicon("a\tAH\na\tEY\nabbott\tAE B AH T\naaa\tT R IH P AH L EY\n", "tiny");
    const LexiconSplit s = split_train_dev(tiny);
    REQUIRE(s.dev.size() == 1);
    CHECK(s.dev[0].word == "a");
    CHECK(s.dev[0].pronunciations.size() == 2);  // both of its pronunciations on the dev side
    CHECK(s.train.size() == 2);
    CHECK(s.test.empty());
    CHECK_THROWS_WITH_AS(split_train_dev(tiny, 0), "split_train_dev: dev_percent 0 is outside [1, 50]",
                         std::invalid_argument);

    // The whole list, counted independently by a Python script (a dict of
    // case-folded words, the same hash): 5,400 dev words with 5,720
    // pronunciations; 101,437 training words with 107,718.
    TaskOptions o;
    o.data = "g2p-2007";
    const TaskData t = load_task(o);
    CHECK(t.g2p);
    CHECK(t.dev.size() == 5400);
    CHECK(t.train.size() == 107718);
    CHECK(t.test.empty());
    CHECK(&t.shown() == &t.dev);
    size_t dev_pronunciations = 0;
    for (const auto& item : t.dev) {
        CHECK(word_bucket(item.text) >= 95);
        dev_pronunciations += item.references.size();
    }
    CHECK(dev_pronunciations == 5720);
    CHECK(t.target_vocab.size() == 39 + 4);  // the phonemes and <pad> <s> </s> <unk>

    // A test file beside it is read as it is; --dev/--test without --train is an error.
    o.data = "dates";
    o.dev_file = "x.dict";
    CHECK_THROWS_WITH_AS(load_task(o), "seq2seq: --dev and --test need --train (dates are generated)",
                         std::invalid_argument);
    o = {};
    o.train_file = "no/such/file.dict";
    CHECK_THROWS_WITH_AS(load_task(o), "seq2seq: --train no/such/file.dict: no such file", std::runtime_error);
}

TEST_CASE("seq2seq batches: padding, teacher-forcing shift, bucketing covers every pair once") {
    std::vector<Pair> pairs;
    for (int i = 0; i < 50; ++i) pairs.push_back({std::vector<int64_t>(1 + i % 7, 5), std::vector<int64_t>(1 + i % 3, 6)});
    Generator gen(3);
    const auto batches = make_batches(pairs, 8, &gen);
    std::vector<int> seen(50, 0);
    for (const auto& b : batches) {
        for (size_t r = 0; r < b.index.size(); ++r) {
            ++seen[b.index[r]];
            const Pair& p = pairs[b.index[r]];
            const int64_t T = b.target_in.size(1);
            CHECK(b.source_lengths[r] == static_cast<int64_t>(p.source.size()));
            CHECK(b.target_in[static_cast<int64_t>(r) * T] == kBos);
            CHECK(b.target_out[static_cast<int64_t>(r) * T + static_cast<int64_t>(p.target.size())] == kEos);
        }
    }
    for (int c : seen) CHECK(c == 1);
}

TEST_CASE("seq2seq scoring: edit distance, closest reference, WER and PER by hand") {
    using V = std::vector<std::string>;
    CHECK(edit_distance(V{"K", "AE", "T"}, V{"K", "AE", "T"}) == 0);
    CHECK(edit_distance(V{"K", "AE", "T"}, V{"K", "AH", "T"}) == 1);
    CHECK(edit_distance(V{}, V{"A", "B"}) == 2);
    CHECK(edit_distance(V{"A", "B", "C"}, V{"B", "C", "D"}) == 2);
    // deletions after the first symbol (every one costs 1 wherever it falls)
    CHECK(edit_distance(V{"A", "B", "C"}, V{"A"}) == 2);
    CHECK(edit_distance(V{"K", "AE", "T", "S"}, V{"K", "T"}) == 2);
    CHECK(edit_distance(V{"K", "T"}, V{"K", "AE", "T", "S"}) == 2);  // and the insertions the other way
    ErrorRates e;
    e.add(V{"IY", "DH", "ER"}, {V{"AY", "DH", "ER"}, V{"IY", "DH", "ER"}});  // matches the 2nd: 0 errors
    e.add(V{"K", "AE"}, {V{"K", "AE", "T"}});                                 // one deletion of 3
    e.add(V{"R", "AH", "D"}, {V{"R", "IY", "D", "Z"}, V{"R", "EH", "D"}});    // closest: R EH D, 1 of 3
    CHECK(e.words == 3);
    CHECK(e.word_errors == 2);
    CHECK(e.wer() == doctest::Approx(2.0 / 3));
    CHECK(e.per() == doctest::Approx(2.0 / 9));  // (0 + 1 + 1) / (3 + 3 + 3)
}

// A lexicon with "café" trained, then every checkpoint it wrote was rejected by
// the project's own reader: the vocabulary held the two bytes of "é" as two
// symbols, and half a character is not valid UTF-8 in the JSON header.
TEST_CASE("seq2seq lexicon: a word in UTF-8 gives whole characters, and its vocabulary survives a JSON header") {
    const Lexicon lex = parse_lexicon("CAFÉ K AE F EY\nNAÏVE N AY IY V\n", "lex.dict");
    REQUIRE(lex.size() == 2);
    CHECK(characters(lex[0].word) == std::vector<std::string>{"c", "a", "f", "É"});  // ASCII is case-folded
    CHECK(characters("naïve€😀") == std::vector<std::string>{"n", "a", "ï", "v", "e", "€", "😀"});
    CHECK_THROWS_WITH_AS(characters("caf\xc3"), "'caf\xc3' is not valid UTF-8: truncated UTF-8 character at byte 3",
                         std::invalid_argument);

    Vocab vocab;
    for (const auto& entry : lex)
        for (const auto& c : characters(entry.word)) vocab.add(c);
    Json::Array symbols;
    for (int64_t i = 0; i < vocab.size(); ++i) symbols.push_back(Json(vocab.symbol(i)));
    const Json back = parse_json(Json::array(symbols).dump());
    REQUIRE(back.as_array().size() == symbols.size());
    for (size_t i = 0; i < symbols.size(); ++i) CHECK(back.as_array()[i].as_string() == symbols[i].as_string());

    // Half a character can no longer reach a file: the writer refuses it.
    std::string out;
    CHECK_THROWS_WITH_AS(append_json_string(out, "caf\xc3"), doctest::Contains("not valid UTF-8 (byte 3"),
                         std::invalid_argument);
}

// --predict once answered "Mon, 4 July 1776" with 1976-07-04 and "hello
// world" with a date, without a word: what it now says beside the answer.
TEST_CASE("seq2seq --predict: an input outside the training data, or an answer the model doubts, is said so") {
    Seq2SeqSetup setup;
    setup.g2p = false;
    std::vector<std::string> seen;  // the symbols of 2,000 training dates
    for (const DateExample& d : generate_dates(2000, 0, 1))
        for (const std::string& c : characters(d.text)) seen.push_back(c);
    setup.source_vocab = Vocab(seen);
    auto warnings = [&](const std::string& text, double probability) {
        return prediction_warnings(text, setup.source_vocab.encode(source_symbols(text, false)), setup, probability);
    };
    CHECK(warnings("Sunday, Nov 22 2026", 0.98).empty());
    CHECK(warnings("22.11.26", 0.9).empty());
    CHECK(warnings("1 January 1950", 0.9).empty());  // the ends of the range
    CHECK(warnings("31 December 2049", 0.9).empty());
    const auto old = warnings("Mon, 4 July 1776", 0.9);
    REQUIRE(old.size() == 1);
    CHECK(old[0] == "the year 1776 lies outside the years the model was trained on (1950–2049): it has never "
                    "written it, and its answer is a guess");
    CHECK(warnings("4 July 2050", 0.9).size() == 1);
    const auto words = warnings("hello world", 0.9);
    CHECK(std::count_if(words.begin(), words.end(),
                        [](const std::string& w) { return w.find("the input holds no number") == 0; }) == 1);
    const auto doubt = warnings("Sunday, Nov 22 2026", 0.31);
    REQUIRE(doubt.size() == 1);
    CHECK(doubt[0] == "the model gives its own answer a probability of only 0.31");
    const auto strange = warnings("22 Nov 2026 §", 0.9);
    REQUIRE(strange.size() == 1);
    CHECK(strange[0] == "the training data never held '§': the model reads it as an unknown symbol");
    // a G2P model has no years: a number is just an unknown symbol there
    setup.g2p = true;
    setup.source_vocab = Vocab(characters("abcdefghijklmnopqrstuvwxyz'"));
    CHECK(warnings("attention", 0.9).empty());
    CHECK(warnings("r2d2", 0.9).size() == 1);
}
