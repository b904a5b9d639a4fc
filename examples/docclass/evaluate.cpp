#include "examples/docclass/evaluate.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "autograd/ops.hpp"
#include "examples/common/metrics.hpp"
#include "examples/common/report.hpp"
#include "examples/common/svg.hpp"
#include "nn/loss.hpp"
#include "tensor/ops.hpp"

namespace attn {

Evaluation evaluate(DocModel& model, const std::vector<Document>& docs, int64_t num_classes, const Vocabulary& vocab,
                    int64_t max_sentences, int64_t max_words, int64_t batch_size) {
    NoGradGuard no_grad;
    model.eval();
    Evaluation e;
    e.confusion = ConfusionMatrix(num_classes);
    double loss_sum = 0;
    const int64_t n = static_cast<int64_t>(docs.size());
    for (int64_t start = 0; start < n; start += batch_size) {
        std::vector<int64_t> idx(static_cast<size_t>(std::min(batch_size, n - start)));
        std::iota(idx.begin(), idx.end(), start);
        const DocBatch batch = make_doc_batch(docs, idx, vocab, max_sentences, max_words);
        const DocOutput out = model.forward(batch);
        loss_sum += loss::cross_entropy(out.logits, batch.labels, {.fast = model.is_fast()}).item() *
                    static_cast<double>(idx.size());
        const Tensor pred = argmax(out.logits.value(), 1);
        const int64_t S = batch.ids.size(1), W = batch.ids.size(2);
        for (int64_t b = 0; b < batch.batch(); ++b) {
            const auto p = static_cast<int64_t>(pred[b]);
            e.predicted.push_back(p);
            e.confusion.add(static_cast<int64_t>(batch.labels[b]), p);
            if (!out.sentence_weights.defined()) continue;
            Tensor sw = Tensor::zeros({S}), ww = Tensor::zeros({S, W});
            int64_t best = 0;
            for (int64_t s = 0; s < S; ++s) {
                sw[s] = out.sentence_weights[b * S + s];
                if (sw[s] > sw[best]) best = s;
                for (int64_t w = 0; w < W; ++w) ww[s * W + w] = out.word_weights[(b * S + s) * W + w];
            }
            e.sentence_weights.push_back(sw);
            e.word_weights.push_back(ww);
            const int64_t key = batch.key_sentence[static_cast<size_t>(b)];
            if (key >= 0) {
                ++e.key_total;
                e.key_hits += best == key ? 1 : 0;
            }
        }
    }
    e.loss = n > 0 ? loss_sum / static_cast<double>(n) : 0.0;
    model.train();
    return e;
}

namespace {

std::string percent(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f%%", 100 * x);
    return buf;
}

}  // namespace

DocclassCharts docclass_charts(const std::vector<Json>& records) {
    DocclassCharts c;
    c.loss = line_chart_svg({chart_series(records, "train", "train_loss", "epoch"), chart_series(records, "valid", "valid_loss", "epoch")},
                            {.title = "loss", .x_label = "epoch", .y_label = "cross-entropy", .log_y = true,
                             .width = 420, .height = 300});
    std::vector<Series> valid{chart_series(records, "valid accuracy", "valid_acc", "epoch")};
    if (!metric_series(records, "valid_key_sentence_precision", "epoch").empty())
        valid.push_back(chart_series(records, "valid key-sentence precision", "valid_key_sentence_precision", "epoch"));
    c.valid = line_chart_svg(valid, {.title = "validation", .x_label = "epoch", .y_label = "fraction",
                                     .width = 420, .height = 300});
    return c;
}

void write_docclass_report(const ReportInputs& in) {
    const Corpus& corpus = *in.corpus;
    const Evaluation& test = *in.test;
    const std::string dir = in.out + "/docclass";
    HtmlReport report("docclass");
    report.set_anchor_prefix("docclass-");
    report.section("docclass: " + in.model_name + " on " + in.data_name);
    report.paragraph(
        "A hierarchical attention network (Yang et al., 2016) reads each document as sentences of words: a word "
        "bi-GRU and word attention make one vector per sentence, a sentence bi-GRU and sentence attention make the "
        "document vector, and a linear layer classifies it. Model '" + in.model_name + "', " +
        std::to_string(in.params) + " parameters, trained in " + std::to_string(static_cast<int64_t>(in.train_seconds)) +
        " s.");
    report.code(in.command);
    std::vector<std::vector<Cell>> rows{{"test accuracy", percent(test.confusion.accuracy())},
                                        {"test macro-F1", percent(test.confusion.macro_f1())}};
    if (test.key_total > 0)
        rows.push_back({"key-sentence precision", percent(test.key_sentence_precision())});
    rows.push_back({"test documents", static_cast<int64_t>(corpus.test.size())});
    report.table({"metric", "value"}, rows);
    const DocclassCharts charts = docclass_charts(read_metrics(in.metrics_path));
    write_svg(dir + "/loss.svg", charts.loss);
    write_svg(dir + "/valid.svg", charts.valid);
    report.figure_row({charts.loss, charts.valid},
                      {"training and validation loss per epoch", "validation accuracy per epoch"});

    report.subsection("confusion matrix (test; rows = true class, each row divided by its total)");
    const std::string cm = heatmap_svg(test.confusion.counts(true), corpus.class_names, corpus.class_names,
                                       {.title = "", .x_label = "predicted", .y_label = "true", .show_values = true,
                                        .cell_size = 40});
    write_svg(dir + "/confusion.svg", cm);
    report.svg(cm);

    if (!test.sentence_weights.empty()) {
        report.subsection("what the model attended to (test documents)");
        report.paragraph("Each sentence is shaded at its left edge by its sentence weight p_s, each word by "
                         "√p_s · p_w, its weight within the sentence p_w scaled by its sentence's weight, as in "
                         "the paper's Figure 5: the words of a sentence the model ignores stay pale, however their "
                         "weight is shared out within it. Hover for the numbers." +
                         std::string(test.key_total > 0 ? " ▶ marks the key sentence the generator planted." : ""));
        const int64_t k = std::min<int64_t>(in.examples, static_cast<int64_t>(corpus.test.size()));
        for (int64_t i = 0; i < k; ++i) {
            const Document& d = corpus.test[static_cast<size_t>(i)];
            const Tensor& sw = test.sentence_weights[static_cast<size_t>(i)];
            const Tensor& ww = test.word_weights[static_cast<size_t>(i)];
            const int64_t W = ww.size(1);
            std::vector<std::vector<std::string>> sentences;
            std::vector<double> s_weights;
            std::vector<std::vector<double>> w_weights;
            const int64_t ns = std::min<int64_t>(static_cast<int64_t>(d.sentences.size()), in.max_sentences);
            for (int64_t s = 0; s < ns; ++s) {
                const Sentence& sent = d.sentences[static_cast<size_t>(s)];
                const int64_t nw = std::min<int64_t>(static_cast<int64_t>(sent.size()), in.max_words);
                std::vector<std::string> words(sent.begin(), sent.begin() + nw);
                if (s == d.key_sentence) words.insert(words.begin(), "▶");
                std::vector<double> weights;
                if (s == d.key_sentence) weights.push_back(0);
                for (int64_t w = 0; w < nw; ++w) weights.push_back(ww[s * W + w]);
                sentences.push_back(std::move(words));
                s_weights.push_back(sw[s]);
                w_weights.push_back(std::move(weights));
            }
            const int64_t p = test.predicted[static_cast<size_t>(i)];
            report.paragraph("document " + std::to_string(i + 1) + ": true class '" +
                             corpus.class_names[static_cast<size_t>(d.label)] + "', predicted '" +
                             corpus.class_names[static_cast<size_t>(p)] + "'" + (p == d.label ? "" : " (wrong)"));
            report.highlighted_document(sentences, s_weights, w_weights);
        }
    }
    write_report_part(in.out, "docclass", report);
}

}  // namespace attn
