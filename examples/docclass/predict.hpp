// docclass --predict: classify a text with a trained checkpoint and show
// why — the class probabilities, each sentence's weight and, inside each
// sentence, each word's weight (the two levels of a hierarchical attention
// network).
//
//   build/examples/docclass --predict "The match went to extra time. What a goal!"
//   echo "one text per line" | build/examples/docclass --predict --svg doc.svg
#pragma once

#include <map>
#include <string>
#include <vector>

#include "examples/docclass/docclass_data.hpp"
#include "examples/docclass/docclass_models.hpp"

namespace attn {

// What a checkpoint needs for --predict beyond the weights: the model's name
// and sizes, the vocabulary, the class names and the cut of each document.
struct DocclassSetup {
    std::string model_name;
    DocModelConfig config;
    Vocabulary vocab;
    std::vector<std::string> class_names;
    int64_t max_sentences = 8, max_words = 16;
};
void save_setup(const DocclassSetup& setup, std::map<std::string, std::string>& metadata);
// Throws std::runtime_error naming `path` and the key that is missing or wrong.
DocclassSetup load_setup(const std::map<std::string, std::string>& metadata, const std::string& path);

// One classified text: the probabilities of every class, and the attention
// (weights empty for a model without attention).
struct Prediction {
    std::vector<Sentence> sentences;              // as the model saw them (cut to max_sentences × max_words)
    std::vector<double> probabilities;            // per class
    int64_t label = 0;                            // the most probable class
    std::vector<double> sentence_weights;         // per sentence
    std::vector<std::vector<double>> word_weights;  // per sentence, per word
};
Prediction classify(DocModel& model, const DocclassSetup& setup, const std::string& text);

// The prediction as text: the label and the top classes, then one line per
// sentence with its weight and its words shaded by their weight.
std::string prediction_text(const Prediction& p, const std::vector<std::string>& class_names, bool colour);
// The same as a self-contained SVG: a bar per sentence for its weight, and
// its words on a background whose opacity is the word's weight scaled by
// the sentence's (a word counts only as much as its sentence does).
std::string prediction_svg(const Prediction& p, const std::vector<std::string>& class_names, const std::string& title);

struct PredictOptions {
    std::string checkpoint;   // a docclass best.safetensors or last.safetensors
    std::vector<std::string> inputs;  // empty: one text per line of standard input
    std::string svg;          // write each picture here (numbered when several)
    bool show = false;        // draw the weights also when stdout is not a terminal
};
int predict_documents(const PredictOptions& options);

// --dump-reference: runs the model of `model_path` on three fixed documents
// of the vocabulary's words (padded sentences, padded words, a document cut
// to max_sentences × max_words, an unknown word) in evaluation mode and
// writes to `out_path` (safetensors, F32):
//   input.ids                 B×S×W  word ids (0 = <pad>, 1 = <unk>)
//   input.word_mask           B×S×W  1 = a real word
//   input.sentence_mask       B×S    1 = a real sentence
//   output.logits             B×C
//   output.word_attention     B×S×W  each word's weight in its sentence (models with attention)
//   output.sentence_attention B×S    each sentence's weight in the document (models with attention)
// metadata: example = docclass, model = model_path.
void dump_docclass_reference(const std::string& model_path, const std::string& out_path);

}  // namespace attn
