#include "examples/seq2seq/task.hpp"

#include <cctype>
#include <filesystem>
#include <stdexcept>

namespace attn::seq2seq {

std::vector<std::string> source_symbols(const std::string& text, bool g2p) {
    if (!g2p) return characters(text);
    std::vector<std::string> out;
    for (std::string c : characters(text)) {
        if (c.size() == 1 && std::isspace(static_cast<unsigned char>(c[0]))) continue;
        if (c.size() == 1) c[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(c[0])));
        out.push_back(std::move(c));
    }
    return out;
}

std::string find_cmudict(const std::string& data_dir) {
    for (const std::string& p : {data_dir + "/cmudict-en-us.dict", std::string("/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict")})
        if (std::filesystem::exists(p)) return p;
    return "";
}

namespace {

std::vector<EvalItem> eval_items(const Lexicon& lexicon, const Vocab& source_vocab) {
    std::vector<EvalItem> out;
    for (const auto& e : lexicon) out.push_back({e.word, source_vocab.encode(source_symbols(e.word, true)), e.pronunciations});
    return out;
}

TaskData load_dates(const TaskOptions& o) {
    TaskData t;
    t.name = "dates";
    const auto train = generate_dates(o.train_size, 0, 1), dev = generate_dates(o.dev_size, 1, 1),
               test = generate_dates(o.test_size, 2, 1);
    for (const auto& d : train) {
        for (const auto& s : characters(d.text)) t.source_vocab.add(s);
        for (const auto& s : characters(d.iso)) t.target_vocab.add(s);
    }
    for (const auto& d : train) t.train.push_back({t.source_vocab.encode(characters(d.text)), t.target_vocab.encode(characters(d.iso))});
    auto items = [&](const std::vector<DateExample>& v) {
        std::vector<EvalItem> out;
        for (const auto& d : v) out.push_back({d.text, t.source_vocab.encode(characters(d.text)), {characters(d.iso)}});
        return out;
    };
    t.dev = items(dev);
    t.test = items(test);
    t.description = "date normalisation: " + std::to_string(train.size()) + " train, " + std::to_string(dev.size()) +
                    " dev, " + std::to_string(test.size()) + " test pairs (dates split by a hash of the day; " +
                    std::to_string(date_format_count()) + " formats)";
    return t;
}

// A lexicon file the user named: a clear error before the loader's if it is missing.
Lexicon read_lexicon(const std::string& path, const char* flag) {
    if (!std::filesystem::exists(path))
        throw std::runtime_error(std::string("seq2seq: ") + flag + " " + path + ": no such file" +
                                 (path == kG2P2007Train ? " (run the trainer from the repository's root)" : ""));
    return load_lexicon(path);
}

TaskData load_lexicons(const TaskOptions& o) {
    TaskData t;
    t.g2p = true;
    LexiconSplit split;
    std::string how;  // how the parts were made, for the description
    const std::string train_file = o.data == "g2p-2007" && o.train_file.empty() ? kG2P2007Train : o.train_file;
    if (!train_file.empty()) {
        if (o.dev_file.empty()) {
            split = split_train_dev(read_lexicon(train_file, "--train"), o.dev_percent);
            how = "dev = " + std::to_string(o.dev_percent) + "% of the training list by a hash of the word";
        } else {
            split.train = read_lexicon(train_file, "--train");
            split.dev = read_lexicon(o.dev_file, "--dev");
        }
        if (!o.test_file.empty()) split.test = read_lexicon(o.test_file, "--test");
        t.name = o.data == "g2p-2007" ? o.data : train_file;
        if (split.train.empty() || split.dev.empty())
            throw std::runtime_error(train_file + ": " + std::to_string(split.train.size()) + " training and " +
                                     std::to_string(split.dev.size()) +
                                     " dev words; both must be non-empty (give a larger list, or --dev FILE)");
    } else {
        if (!o.dev_file.empty() || !o.test_file.empty())
            throw std::invalid_argument("seq2seq: --dev and --test need --train");
        std::string path = o.data;
        if (o.data == "cmudict") {
            path = find_cmudict();
            if (path.empty())
                throw std::runtime_error(
                    "seq2seq: cmudict-en-us.dict is in neither data/ nor /usr/share/pocketsphinx/model/en-us/; "
                    "run `make data` to fetch it");
        }
        split = split_lexicon(read_lexicon(path, "--data"));
        t.name = o.data;
        how = "split 90/5/5 by a hash of the word";
        // The hash split of a tiny lexicon can leave a part empty: no words to train or score on.
        for (const auto& [part, words] : {std::pair<const char*, const Lexicon*>{"training", &split.train},
                                          {"dev", &split.dev}, {"test", &split.test}})
            if (words->empty())
                throw std::runtime_error(path + ": " + std::to_string(split.train.size() + split.dev.size() +
                                                                      split.test.size()) +
                                         " words leave the " + part +
                                         " split empty (90/5/5 by a hash of the word); give --train, --dev and "
                                         "--test files instead");
    }
    for (const auto& e : split.train)
        for (const auto& p : e.pronunciations) {
            for (const auto& s : source_symbols(e.word, true)) t.source_vocab.add(s);
            for (const auto& s : p) t.target_vocab.add(s);
        }
    for (const auto& e : split.train)
        for (const auto& p : e.pronunciations)
            t.train.push_back({t.source_vocab.encode(source_symbols(e.word, true)), t.target_vocab.encode(p)});
    t.dev = eval_items(split.dev, t.source_vocab);
    t.test = eval_items(split.test, t.source_vocab);
    t.description = "G2P on " + t.name + ": " + std::to_string(split.train.size()) + " train words (" +
                    std::to_string(t.train.size()) + " pronunciations), " + std::to_string(t.dev.size()) + " dev, " +
                    (t.test.empty() ? std::string("no test") : std::to_string(t.test.size()) + " test") +
                    " words; " + std::to_string(t.target_vocab.size() - 4) + " phonemes" +
                    (how.empty() ? "" : " (" + how + ")");
    return t;
}

}  // namespace

TaskData load_task(const TaskOptions& options) {
    if (options.data == "dates" && options.train_file.empty()) {
        if (!options.dev_file.empty() || !options.test_file.empty())
            throw std::invalid_argument("seq2seq: --dev and --test need --train (dates are generated)");
        return load_dates(options);
    }
    return load_lexicons(options);
}

}  // namespace attn::seq2seq
