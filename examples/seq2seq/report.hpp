// The seq2seq part of out/report.html: the learning curves and the attention
// heatmaps of a few test inputs (rows: output symbols, columns: input symbols).
#pragma once

#include <string>
#include <vector>

#include "examples/seq2seq/edit_distance.hpp"
#include "examples/seq2seq/decoding.hpp"
#include "examples/seq2seq/task.hpp"
#include "io/json.hpp"

namespace attn::seq2seq {

// What the decoder attended to while writing `h` for `source`: weights with
// one row per output symbol (and one for </s> when it was written) and one
// column per input symbol (a space shown as ␣), for heatmap_svg/heatmap_text.
struct AlignmentPicture {
    Tensor weights;
    std::vector<std::string> rows, cols;
};
AlignmentPicture alignment_picture(const Hypothesis& h, const std::vector<int64_t>& source, const Vocab& source_vocab,
                                   const Vocab& target_vocab);

// The alignments greedy decoding gives the report's test items (the first
// four) now, one explorer frame each (examples/common/explorer.hpp), as JSON:
// what the trainer keeps after every epoch for the report's epoch slider.
Json alignment_snapshot(Translator& model, const TaskData& task);

// The learning curves of a run, from its metrics records: the training loss
// every 25 steps, the dev error after each epoch.
struct Seq2SeqCharts {
    std::string loss, dev;
};
Seq2SeqCharts seq2seq_charts(const std::vector<Json>& records, bool g2p);

// With the Transformer, the report also draws every layer and head of its
// three attentions (encoder self, decoder self, cross) on the first test item.
void write_seq2seq_report(const std::string& out_dir, const TaskData& task, Translator& model,
                          const std::string& run_dir, const ErrorRates& test, double train_seconds, int64_t beam);

}  // namespace attn::seq2seq
