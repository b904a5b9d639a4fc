// The two tasks of the seq2seq trainer as one shape of data: training pairs,
// and evaluation items that keep every reference (Sequitur's scoring picks
// the closest). Dates: one reference, the ISO date; G2P: every pronunciation.
#pragma once

#include <string>
#include <vector>

#include "examples/seq2seq/seq2seq_data.hpp"

namespace attn::seq2seq {

struct EvalItem {
    std::string text;                             // what the user typed
    std::vector<int64_t> source;                  // its ids
    std::vector<std::vector<std::string>> references;
};

struct TaskData {
    std::string name;        // "dates" or "cmudict" (or the lexicon file)
    bool g2p = false;        // symbols are joined with spaces and inputs case-folded
    Vocab source_vocab, target_vocab;
    std::vector<Pair> train;
    std::vector<EvalItem> dev, test;  // test may be empty (a training list without its test words)
    std::string description;  // one line for the log and the report

    // The items the report draws and keeps each epoch: the test set's, or
    // the dev set's when there is no test set.
    const std::vector<EvalItem>& shown() const { return test.empty() ? dev : test; }
};

// The 2007 CMUdict training list of Chen (2003) and Bisani & Ney (2008), in
// the tree (examples/seq2seq/g2p-2007/README.md); --data g2p-2007 reads it
// from the working directory.
inline const char* kG2P2007Train = "examples/seq2seq/g2p-2007/g014b2b.train";

struct TaskOptions {
    std::string data = "dates";  // dates | cmudict | g2p-2007 | a lexicon file
    // --train alone: its dev words split off by the word's hash (dev_percent);
    // --dev and --test are optional (no --test: no test set, the trainer
    // scores dev at the end).
    std::string train_file, dev_file, test_file;
    int64_t dev_percent = 5;
    int64_t train_size = 12000;  // dates only
    int64_t dev_size = 1000, test_size = 2000;
};
TaskData load_task(const TaskOptions& options);

// The source symbols of a typed input: characters (G2P: case-folded, no spaces).
std::vector<std::string> source_symbols(const std::string& text, bool g2p);
// Where cmudict-en-us.dict is: data/, then Debian's pocketsphinx-en-us path; "" if neither.
std::string find_cmudict(const std::string& data_dir = "data");

}  // namespace attn::seq2seq
