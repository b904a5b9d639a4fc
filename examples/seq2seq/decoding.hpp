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

    // Mean cross-entropy per real target token (padding ignored), with label
    // smoothing ε (Szegedy et al. 2016): the target distribution is
    // (1 − ε)·onehot(y) + ε/V, as torch.nn.CrossEntropyLoss(label_smoothing=ε).
    Var loss(const Batch& batch, double label_smoothing = 0);
};

// ---- decoding ---------------------------------------------------------------------------
struct Hypothesis {
    std::vector<int64_t> tokens;                // without <s> and </s>
    std::vector<std::vector<real>> attention;   // one row of n weights per output step (incl. </s>)
    double log_prob = 0;
};
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
// hypothesis scores log p / len^length_penalty (len counts </s>); the best one
// is returned. beam = 1 gives exactly greedy_decode's output.
// At most decode_limit(source length) steps.
Hypothesis beam_decode(Translator& model, const std::vector<int64_t>& source, int64_t beam,
                       double length_penalty = 1.0);

}  // namespace attn::seq2seq
