// What the seq2seq trainer needs of a model, whichever it is (the RNN
// encoder–decoder of seq2seq_model.hpp, the Transformer of
// transformer_model.hpp), and the decoders written once against it: greedy
// decoding and beam search with a length penalty.
//
// Shape legend: B sources, n source length, T target length, V target
// vocabulary, K hypotheses under way (B for greedy, the beam for beam search).
//
// A decoder asks the model for one thing: given the tokens each hypothesis has
// written so far, the log-probabilities of its next token. A DecodingSession
// answers it step by step, keeping whatever the model needs between steps
// (the RNN: its state s_t; the Transformer: the tokens so far, over which it
// runs its decoder again at every step).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "examples/seq2seq/seq2seq_data.hpp"
#include "nn/module.hpp"

namespace attn::seq2seq {

// One decoding step of every hypothesis under way.
struct NextToken {
    Tensor log_probs;  // K×V: log softmax of the next token's logits
    Tensor weights;    // K×n: what the decoder attended to for it (drawn by --predict and the report)
};

class DecodingSession {
public:
    virtual ~DecodingSession() = default;
    // Feeds `previous` (K ids as reals: <s> at the first step, then the
    // token each row wrote last) and returns the next token's distribution.
    virtual NextToken step(const Tensor& previous) = 0;
    // Keeps the rows `rows` of the hypotheses under way, in that order (a row
    // may repeat): beam search keeps the parents of its best extensions.
    virtual void select(const std::vector<int64_t>& rows) = 0;
};

// One output of a decoder.
struct Hypothesis {
    std::vector<int64_t> tokens;                // without <s> and </s>, in reading order
    std::vector<std::vector<real>> attention;   // one row of n weights per token, then one for </s>
    double log_prob = 0;
};

// The interface both seq2seq models implement.
class Translator : public Module {
public:
    // Teacher forcing over a batch: logits B×T×V; with `weights`, the
    // attention of every output step over the source, B×T×n.
    virtual Var forward(const Batch& batch, Tensor* weights = nullptr) = 0;
    // Starts decoding the sources B×n (ids, padded; `lengths` B): one row per source.
    virtual std::unique_ptr<DecodingSession> start(const Tensor& source, const std::vector<int64_t>& lengths) = 0;
    // The configuration as "key=value ..." (the checkpoint's seq2seq.config).
    virtual std::string config_text() const = 0;
    // The order the model writes its output in. A right-to-left model
    // (--right-to-left) is trained on reversed targets: it writes the last
    // phoneme first, so it sees each word from the other end, and its errors
    // differ from a left-to-right model's (Liu et al. 2016, "Agreement on
    // target-bidirectional neural machine translation"). forward() and the
    // DecodingSession work in the model's own order; greedy_decode and
    // beam_search below return the output in reading order, whichever it is.
    virtual bool right_to_left() const { return false; }
    // Whether start() gives the next token's distribution to decode with:
    // true for a model; false for an ensemble of both directions, whose
    // members cannot read one prefix (ensemble.hpp).
    virtual bool decodes_stepwise() const { return true; }
    // The output for one source (ids): beam_decode with `beam` (1: greedy);
    // an ensemble of both directions rescores its members' proposals instead.
    virtual Hypothesis best_output(const std::vector<int64_t>& source, int64_t beam, double length_penalty);

    // Mean cross-entropy per real target token (padding ignored), with label
    // smoothing ε (Szegedy et al. 2016): the target distribution is
    // (1 − ε)·onehot(y) + ε/V, as torch.nn.CrossEntropyLoss(label_smoothing=ε).
    Var loss(const Batch& batch, double label_smoothing = 0);
};

// `tokens` (in reading order) in the order `model` writes them: reversed for
// a right-to-left model, as they are otherwise. Its own inverse.
std::vector<int64_t> writing_order(const Translator& model, std::vector<int64_t> tokens);

// ---- decoding ---------------------------------------------------------------------------
// How many output symbols a source of n symbols may produce before decoding
// stops it: 2n + 5 (dates grow from 8 to 10 characters; a G2P output is
// rarely longer than its word).
int64_t decode_limit(int64_t source_length);
// Decoding writes every id but <pad> and <s>: they are no symbol of any
// output (training never has them as targets), and a Transformer reads a
// <pad> it was fed as padding, so an output with one would be scored
// differently by teacher forcing than it was written. (An untrained model
// gives them as much probability as any other id.)
bool writable(int64_t id);
// Greedy decoding of a batch (argmax over the writable ids at every step);
// row b stops at </s> or after decode_limit(lengths[b]) steps.
std::vector<Hypothesis> greedy_decode(Translator& model, const Tensor& source, const std::vector<int64_t>& lengths);
// Beam search for one source (ids), keeping `beam` hypotheses; a finished
// hypothesis scores log p / len^length_penalty (len counts </s>). The search
// stops when `beam` hypotheses have finished (one step may finish several) or
// after decode_limit(source length) steps, when those still under way count
// as finished. Returns them all, best first, ties in the order they finished.
std::vector<Hypothesis> beam_search(Translator& model, const std::vector<int64_t>& source, int64_t beam,
                                    double length_penalty = 1.0);
// The best of beam_search. beam = 1 gives exactly greedy_decode's output.
Hypothesis beam_decode(Translator& model, const std::vector<int64_t>& source, int64_t beam,
                       double length_penalty = 1.0);
// The length-normalised score beam search ranks finished hypotheses by:
// log p / len^length_penalty, len = the tokens and </s>.
double normalised_score(double log_prob, size_t tokens, double length_penalty);
// log p(output | source) under `model` by teacher forcing, for each of
// `outputs` (token ids in reading order, without <s> and </s>): the sum of
// the log-probabilities of its tokens and of </s>, in the order the model
// writes them. The outputs are scored together, one batch.
std::vector<double> output_log_probs(Translator& model, const std::vector<int64_t>& source,
                                     const std::vector<std::vector<int64_t>>& outputs);

}  // namespace attn::seq2seq
