// seq2seq --predict and --dump-reference: a trained model on the user's own
// input, and the numbers a PyTorch reimplementation must reproduce.
//
//   build/examples/seq2seq --predict "Nov 22 2026"                # the answer and its alignment
//   build/examples/seq2seq --dump-reference ref.safetensors       # for python/check_torch.py
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "examples/common/flags.hpp"
#include "examples/seq2seq/seq2seq_model.hpp"
#include "examples/seq2seq/transformer_model.hpp"

namespace attn::seq2seq {

// What a model file or checkpoint needs beyond the weights to be used: which
// model, its configuration and both vocabularies.
struct Seq2SeqSetup {
    std::string model = "rnn";      // rnn | transformer: which configuration below holds
    ModelConfig config;             // --model rnn
    TransformerConfig transformer;  // --model transformer
    bool g2p = false;  // inputs are words (case-folded letters), outputs phonemes joined with spaces
    Vocab source_vocab, target_vocab;
};
// Metadata keys seq2seq.config (the RNN's ModelConfig::str(), or the
// Transformer's TransformerConfig::str(), which begins "model=transformer"),
// seq2seq.task, seq2seq.source_vocab, seq2seq.target_vocab.
void save_setup(const Seq2SeqSetup& setup, std::map<std::string, std::string>& metadata);
// Throws std::runtime_error naming `path` and the key that is missing.
Seq2SeqSetup load_setup(const std::map<std::string, std::string>& metadata, const std::string& path);
// The model a setup describes, freshly initialised from `gen` (which must
// outlive it: dropout keeps it).
std::unique_ptr<Translator> make_model(const Seq2SeqSetup& setup, Generator& gen);

// --resume and --eval-only build the model from the flags and load the
// checkpoint `path` into it: a right-to-left model's weights load into a
// left-to-right one (the shapes are the same) and would decode every word
// backwards. Throws std::invalid_argument naming `flag`, the file and the
// flag to give when the checkpoint's direction is not `right_to_left`; a
// missing file passes (the loop reports it).
void check_checkpoint_direction(const std::string& path, bool right_to_left, const std::string& flag);

// The trained models of `paths` (model files or checkpoints) as one
// Ensemble (ensemble.hpp) in evaluation mode; one path gives an ensemble of
// one, which decodes exactly as its model. `setup` receives the first file's; every other
// must have the same task and vocabularies, or this throws naming both files.
std::unique_ptr<Translator> load_models(const std::vector<std::string>& paths, Seq2SeqSetup& setup);

// What --predict says besides its answer, so that an answer outside what the
// model learned is not taken for a known one (a date model answered
// "Mon, 4 July 1776" with 1976-07-04, and "hello world" with a date, without
// a word). Warnings, each a sentence, for an input that lies outside the
// training data: a symbol the training data never held; for the date task, a
// four-digit year outside kFirstYear–kLastYear, or no number at all (every
// training input holds its day and year in digits); and for any input, an
// answer the model itself gives a probability below 0.5 (`probability`, the
// product of its symbols' probabilities under the model, </s> included).
// The ids --predict decodes for one input (the k-th, from 0), refusing an
// empty input, and an input of more than kMaxPredictSymbols symbols: the decoder writes up to
// 2n + 5 symbols, each attending over all n, so a pasted book would run for
// hours; no training input of either task is longer than a few dozen.
constexpr size_t kMaxPredictSymbols = 1000;
std::vector<int64_t> predict_source_ids(const std::string& text, size_t k, const Seq2SeqSetup& setup);

std::vector<std::string> prediction_warnings(const std::string& text, const std::vector<int64_t>& ids,
                                             const Seq2SeqSetup& setup, double probability);

// --predict: transliterates `inputs` (or the lines of standard input) with
// the model in `checkpoint` (a model file or a training checkpoint), or the
// ensemble of the models in `ensemble`.
struct Seq2SeqPredictOptions {
    std::string checkpoint;
    std::vector<std::string> ensemble;  // --ensemble: these models together instead of `checkpoint`
    std::vector<std::string> inputs;
    std::string svg;      // the alignment pictures (numbered when several)
    bool show = false;    // draw the alignment also when stdout is not a terminal
    int64_t beam = 1;
    double length_penalty = 1.0;
};
int predict_transliterations(const Seq2SeqPredictOptions& options);

// --dump-reference: runs the model of `model_path` on fixed inputs (four
// sources of different lengths, padded into one batch, each teacher-forced
// with its own greedy output) and writes to `out_path` (safetensors, F32):
//   input.source     B×n    source ids (0 = <pad>)
//   input.lengths    B      real source lengths
//   input.target_in  B×T    decoder inputs: <s>, then the greedy output (0 = <pad> after it)
//   output.logits    B×T×V  Seq2SeqModel::forward's logits, evaluation mode
//   output.attention B×T×n  α_t of every step (the Transformer: its last decoder layer's
//                           cross-attention, the mean of the heads)
// metadata: example = seq2seq, model = model_path.
void dump_seq2seq_reference(const std::string& model_path, const std::string& out_path);

}  // namespace attn::seq2seq
