// docclass: evaluation over a split, and the report part.
#pragma once

#include <string>
#include <vector>

#include "examples/docclass/classification_metrics.hpp"
#include "examples/docclass/docclass_data.hpp"
#include "examples/docclass/docclass_models.hpp"
#include "io/json.hpp"

namespace attn {

struct Evaluation {
    ConfusionMatrix confusion{1};
    double loss = 0;
    int64_t key_hits = 0, key_total = 0;  // documents whose most-attended sentence is the key sentence
    std::vector<int64_t> predicted;
    std::vector<Tensor> word_weights;      // per document S×W (empty without attention)
    std::vector<Tensor> sentence_weights;  // per document S
    double key_sentence_precision() const {
        return key_total > 0 ? static_cast<double>(key_hits) / static_cast<double>(key_total) : 0.0;
    }
};

// Runs `model` (in eval mode, without gradients) over every document.
Evaluation evaluate(DocModel& model, const std::vector<Document>& docs, int64_t num_classes, const Vocabulary& vocab,
                    int64_t max_sentences, int64_t max_words, int64_t batch_size);

// The curves of a run, from its metrics records (one per epoch).
struct DocclassCharts {
    std::string loss, valid;
};
DocclassCharts docclass_charts(const std::vector<Json>& records);

struct ReportInputs {
    std::string out, data_name, model_name, command;
    const Corpus* corpus = nullptr;
    const Evaluation* test = nullptr;
    std::string metrics_path;  // metrics.jsonl of the run, for the curves
    int64_t examples = 4;      // highlighted test documents
    int64_t max_sentences = 8, max_words = 16;
    double train_seconds = 0;
    int64_t params = 0;
};
// Writes OUT/docclass/*.svg and the report part OUT/report-parts/docclass.html.
void write_docclass_report(const ReportInputs& in);

}  // namespace attn
