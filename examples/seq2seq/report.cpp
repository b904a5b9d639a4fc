#include "examples/seq2seq/report.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "tensor/ops.hpp"

#include "examples/common/explorer.hpp"
#include "examples/common/metrics.hpp"
#include "examples/common/report.hpp"
#include "examples/common/svg.hpp"
#include "examples/seq2seq/seq2seq_model.hpp"
#include "examples/seq2seq/transformer_model.hpp"

namespace attn::seq2seq {

AlignmentPicture alignment_picture(const Hypothesis& h, const std::vector<int64_t>& source, const Vocab& source_vocab,
                                   const Vocab& target_vocab) {
    const auto n = static_cast<int64_t>(source.size());
    // One row label per decoding step, by its token's own symbol: decode()
    // would drop <pad> and <s>, which an untrained model does write, and the
    // labels would no longer match the rows of weights.
    AlignmentPicture p{Tensor::zeros(Shape{static_cast<int64_t>(h.attention.size()), n}), {}, {}};
    for (int64_t id : h.tokens) p.rows.push_back(target_vocab.symbol(id));
    if (h.attention.size() > h.tokens.size()) p.rows.push_back("</s>");  // not when it ran out of steps
    for (int64_t id : source) p.cols.push_back(source_vocab.symbol(id) == " " ? "␣" : source_vocab.symbol(id));
    for (size_t r = 0; r < h.attention.size(); ++r)
        for (int64_t j = 0; j < n; ++j) p.weights[static_cast<int64_t>(r) * n + j] = h.attention[r][static_cast<size_t>(j)];
    return p;
}

namespace {

constexpr size_t kShownItems = 4;  // items drawn in the report (and kept each epoch): TaskData::shown()

// Greedy decoding of one test item, and the picture of its alignment.
AlignmentPicture item_alignment(Translator& model, const TaskData& task, const EvalItem& item) {
    const int64_t n = static_cast<int64_t>(item.source.size());
    Tensor src = Tensor::zeros(Shape{1, n});
    for (int64_t j = 0; j < n; ++j) src[j] = static_cast<real>(item.source[static_cast<size_t>(j)]);
    return alignment_picture(greedy_decode(model, src, {n})[0], item.source, task.source_vocab, task.target_vocab);
}

ExplorerFrame alignment_frame(const AlignmentPicture& p) {
    const auto n = static_cast<int64_t>(p.cols.size());
    AttentionMap map;
    for (size_t r = 0; r < p.rows.size(); ++r)
        map.weights.emplace_back(p.weights.data() + static_cast<int64_t>(r) * n,
                                 p.weights.data() + static_cast<int64_t>(r + 1) * n);
    return ExplorerFrame{.label = "", .rows = p.rows, .cols = p.cols, .maps = {std::move(map)}};
}

// One line on the model: which of the two, and its attention.
std::string model_summary(Translator& model) {
    if (const auto* rnn = dynamic_cast<const Seq2SeqModel*>(&model)) {
        const ModelConfig& c = rnn->config();
        return "bidirectional GRU encoder, GRU decoder with " + c.attention + " attention (" + c.score + ", " +
               c.align + (c.input_feeding ? ", input feeding" : "") + ")";
    }
    if (const auto* t = dynamic_cast<const TransformerSeq2Seq*>(&model)) {
        const TransformerConfig& c = t->config();
        return "Transformer, " + std::to_string(c.layers) + " encoder and " + std::to_string(c.layers) +
               " decoder layers, d_model " + std::to_string(c.d_model) + ", " + std::to_string(c.heads) +
               " heads, feed-forward " + std::to_string(c.ffn);
    }
    return model.describe();
}

// One explorer map per layer and head of `weights` (per layer: 1×h×rows×cols).
std::vector<AttentionMap> layer_head_maps(const std::vector<Tensor>& weights) {
    std::vector<AttentionMap> maps;
    for (size_t l = 0; l < weights.size(); ++l) {
        const Tensor& w = weights[l];
        if (!w.defined()) continue;
        const int64_t h = w.size(1), rows = w.size(2), cols = w.size(3);
        for (int64_t j = 0; j < h; ++j) {
            AttentionMap map;
            map.label = "layer " + std::to_string(l + 1) + ", head " + std::to_string(j + 1);
            for (int64_t r = 0; r < rows; ++r) {
                const real* row = w.data() + (j * rows + r) * cols;
                map.weights.emplace_back(row, row + cols);
            }
            maps.push_back(std::move(map));
        }
    }
    return maps;
}

// The Transformer's attention on one item, every layer and head: its greedy
// output teacher-forced, one explorer per kind of attention (Vaswani et al.
// 2017, §3.2.3), and the last layer's cross-attention heads as SVG files.
void transformer_attention(HtmlReport& rep, TransformerSeq2Seq& model, const TaskData& task, const EvalItem& item,
                           const std::string& run_dir) {
    const int64_t n = static_cast<int64_t>(item.source.size());
    Tensor src = Tensor::zeros(Shape{1, n});
    for (int64_t j = 0; j < n; ++j) src[j] = static_cast<real>(item.source[static_cast<size_t>(j)]);
    // the greedy output in the order the model wrote it (reversed for a right-to-left model)
    const std::vector<int64_t> written = writing_order(model, greedy_decode(model, src, {n})[0].tokens);
    const TransformerSeq2Seq::AttentionMaps maps = model.attention_maps(make_batch({{item.source, written}}, {0}));
    // decoder position t reads <s> y_1 … y_t and writes y_{t+1} (</s> last)
    std::vector<std::string> source, inputs = {"<s>"}, outputs;
    for (int64_t id : item.source) source.push_back(task.source_vocab.symbol(id) == " " ? "␣" : task.source_vocab.symbol(id));
    for (int64_t id : written) inputs.push_back(task.target_vocab.symbol(id)), outputs.push_back(task.target_vocab.symbol(id));
    outputs.push_back("</s>");
    auto explorer = [](std::string title, std::string rows_label, std::string cols_label, std::vector<std::string> rows,
                       std::vector<std::string> cols, const std::vector<Tensor>& weights) {
        Explorer e;
        e.title = std::move(title);
        e.rows_label = std::move(rows_label), e.cols_label = std::move(cols_label);
        e.frames.push_back(ExplorerFrame{.label = "the tested model", .rows = std::move(rows), .cols = std::move(cols),
                                         .maps = layer_head_maps(weights)});
        return e;
    };
    rep.subsection("The Transformer's attention, every layer and head");
    rep.paragraph("The first item shown above, " + item.text + ", with the model's greedy output fed back as the decoder's "
                  "input (teacher forcing). Choose a layer and head in each explorer. Cross-attention: each output "
                  "symbol over the input (queries from the decoder, keys and values from the encoder's last layer). "
                  "Decoder self-attention: each output position over the symbols written before it (causal: the "
                  "upper triangle is zero). Encoder self-attention: each input symbol over the input.");
    rep.explorers({explorer("cross-attention: " + item.text, "output", "input", outputs, source, maps.cross),
                   explorer("decoder self-attention (causal)", "output", "decoder input", outputs, inputs,
                            maps.decoder_self),
                   explorer("encoder self-attention", "input", "input", source, source, maps.encoder_self)});
    const Tensor& last = maps.cross.back();
    if (!last.defined()) return;
    std::vector<std::string> svgs, captions;
    const int64_t heads = last.size(1), T = last.size(2);
    for (int64_t j = 0; j < heads; ++j) {
        const Tensor w = slice(last, 1, j, j + 1).reshape(Shape{T, n});  // head j, T×n
        const std::string svg = heatmap_svg(w, outputs, source, {.title = "head " + std::to_string(j + 1),
                                                                 .x_label = "input", .y_label = "output", .cell_size = 14});
        write_svg(run_dir + "/cross_attention_head_" + std::to_string(j + 1) + ".svg", svg);
        svgs.push_back(svg);
        captions.push_back("last decoder layer, head " + std::to_string(j + 1));
    }
    rep.figure_row(svgs, captions);
}

}  // namespace

Json alignment_snapshot(Translator& model, const TaskData& task) {
    const bool training = model.is_training();
    model.eval();
    Json frames = Json::array();
    for (size_t i = 0; i < std::min(kShownItems, task.shown().size()); ++i)
        frames.push_back(frame_json(alignment_frame(item_alignment(model, task, task.shown()[i]))));
    if (training) model.train();
    return frames;
}

Seq2SeqCharts seq2seq_charts(const std::vector<Json>& records, bool g2p) {
    // Two charts, not one with two kinds of number on a shared y axis: the
    // loss is in nats per symbol, the error a fraction of the dev items. Both
    // are drawn against the step.
    Seq2SeqCharts c;
    c.loss = line_chart_svg({chart_series(records, "train loss (mean of 25 steps)", "recent_train_loss", "step")},
                            {.title = "training loss", .x_label = "step",
                             .y_label = "cross-entropy per output symbol", .log_y = true, .width = 480,
                             .height = 320});
    const std::string error = g2p ? "dev WER" : "dev error (1 − exact match)";
    // A linear axis for the error: 0, a perfect dev set, must stay on the chart.
    c.dev = line_chart_svg({chart_series(records, error, "dev_wer", "step")},
                           {.title = "dev error", .x_label = "step",
                            .y_label = g2p ? "word error rate" : "1 − exact match", .width = 480, .height = 320});
    return c;
}

void write_seq2seq_report(const std::string& out_dir, const TaskData& task, Translator& model,
                          const std::string& run_dir, const ErrorRates& test, double train_seconds, int64_t beam) {
    HtmlReport rep("seq2seq");
    rep.set_anchor_prefix("seq2seq-");
    rep.section(task.g2p ? "seq2seq: grapheme-to-phoneme conversion" : "seq2seq: date normalisation");
    rep.paragraph(task.description + ".");
    rep.paragraph("Model: " + model_summary(model) + ", " + std::to_string(model.num_parameters()) + " parameters.");
    char line[256];
    std::snprintf(line, sizeof line, "%s (%s): exact match %.2f%%, WER %.2f%%, PER %.2f%% on %lld items; trained %.0f s.",
                  task.test.empty() ? "Dev (no test set given)" : "Test", beam > 1 ? "beam search" : "greedy", 100 * (1 - test.wer()), 100 * test.wer(), 100 * test.per(),
                  static_cast<long long>(test.words), train_seconds);
    rep.paragraph(line);

    const Seq2SeqCharts charts = seq2seq_charts(read_metrics(run_dir + "/metrics.jsonl"), task.g2p);
    write_svg(run_dir + "/loss.svg", charts.loss);
    write_svg(run_dir + "/dev.svg", charts.dev);
    rep.subsection("Learning curves");
    rep.figure_row({charts.loss, charts.dev}, {"training loss, the mean of every 25 steps",
                                               "dev error after each epoch (greedy decoding)"});

    // The attention of a few test (or dev) inputs, greedy: one explorer each, its
    // frames the epochs of training (attention.jsonl) and then the tested
    // model, where it opens. The same pictures as SVG files in the run's folder.
    rep.subsection("What the decoder attended to");
    if (dynamic_cast<TransformerSeq2Seq*>(&model))
        rep.paragraph("The Transformer's cross-attention of its last decoder layer, the mean of its heads; "
                      "every layer and head of its three attentions is drawn in the next part.");
    rep.paragraph("Each row is one output symbol, each column one input symbol; a cell is the attention weight "
                  "the decoder gave that input when it wrote that output. Click an output symbol to see its "
                  "weights over the input, switch to lines to see every alignment at once, and move the slider "
                  "to watch the alignment emerge over the epochs of training.");
    std::vector<Json> history;
    if (std::filesystem::exists(run_dir + "/attention.jsonl")) history = read_metrics(run_dir + "/attention.jsonl");
    std::vector<Explorer> explorers;
    const size_t count = std::min(task.shown().size(), kShownItems);
    model.eval();
    for (size_t i = 0; i < count; ++i) {
        const EvalItem& item = task.shown()[i];
        Explorer e;
        e.title = item.text;
        e.frames = history_frames(history, i);
        const AlignmentPicture picture = item_alignment(model, task, item);
        write_svg(run_dir + "/attention_" + std::to_string(i) + ".svg",
                  heatmap_svg(picture.weights, picture.rows, picture.cols,
                              {.title = item.text, .x_label = "input", .y_label = "output", .cell_size = 18}));
        ExplorerFrame tested = alignment_frame(picture);
        tested.label = "the tested model (best checkpoint)";
        std::string answer;
        for (size_t r = 0; r < tested.rows.size(); ++r)
            if (tested.rows[r] != "</s>") answer += (answer.empty() || !task.g2p ? "" : " ") + tested.rows[r];
        e.title = item.text + " → " + answer;
        e.frames.push_back(std::move(tested));
        explorers.push_back(std::move(e));
    }
    rep.explorers(explorers);
    if (auto* transformer = dynamic_cast<TransformerSeq2Seq*>(&model); transformer && count > 0)
        transformer_attention(rep, *transformer, task, task.shown()[0], run_dir);
    model.train();
    write_report_part(out_dir, "seq2seq", rep);
}

}  // namespace attn::seq2seq
