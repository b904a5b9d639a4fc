// The seq2seq part of out/report.html: the learning curves and the attention
// heatmaps of a few test inputs (rows: output symbols, columns: input symbols).
#pragma once

#include <string>

#include "examples/seq2seq/edit_distance.hpp"
#include "examples/seq2seq/seq2seq_model.hpp"
#include "examples/seq2seq/task.hpp"

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

void write_seq2seq_report(const std::string& out_dir, const TaskData& task, Seq2SeqModel& model,
                          const std::string& run_dir, const ErrorRates& test, double train_seconds, int64_t beam);

}  // namespace attn::seq2seq
