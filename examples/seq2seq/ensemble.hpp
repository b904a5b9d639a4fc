// Several trained seq2seq models decoding as one (--ensemble A,B,…). At every
// step the next token's distribution is the mean of the members':
//
//     p(y_t | y_<t, x) = (1/M) Σ_m p_m(y_t | y_<t, x)
//
// so each member reads the same prefix, keeps its own state (an RNN its s_t,
// a Transformer its tokens), and the decoders of decoding.hpp (greedy, beam
// search) run unchanged on the mixture. The members may differ in kind and
// size (an RNN beside a Transformer); they must share both vocabularies, so
// that an id means the same symbol to each of them.
//
// In log space, what the decoders use:
//     log p = logsumexp_m(log p_m) − log M
// and forward() returns these log-probabilities as the logits of teacher
// forcing (softmax of them gives p back), so the ensemble's loss is the
// cross-entropy of the mixture.
//
// Members that write in different directions (--right-to-left among
// left-to-right ones) cannot read one prefix: the one ends a word where the
// other begins it. Such an ensemble decodes by proposing and rescoring (as
// Liu et al. 2016 rescore one direction's n-best with the other): the members
// of each direction, mixed as above, propose the outputs of their beam
// search; every member scores every proposal by teacher forcing in its own
// order; the proposal with the best mean log-probability,
//     score(y) = (1/M) Σ_m log p_m(y | x),
// divided by |y|^α as beam search divides (|y| counts </s>), is the answer.
// Its log_prob is that mean: the log of the geometric mean of the members'
// probabilities of y.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "examples/seq2seq/decoding.hpp"
#include "tensor/random.hpp"

namespace attn::seq2seq {

class Ensemble : public Translator {
public:
    // One member: a trained model and the generator it was built with (which
    // must outlive it; the ensemble keeps both).
    struct Member {
        std::unique_ptr<Generator> gen;
        std::unique_ptr<Translator> model;
    };
    // At least one member; throws std::invalid_argument otherwise.
    explicit Ensemble(std::vector<Member> members);

    // log of the members' mean distribution, B×T×V, in their order of
    // writing; `weights`: the mean of the members' attention weights, B×T×n.
    // Members of both directions: throws std::logic_error (there is no one
    // order to teacher-force in), as start() does.
    Var forward(const Batch& batch, Tensor* weights = nullptr) override;
    std::unique_ptr<DecodingSession> start(const Tensor& source, const std::vector<int64_t>& lengths) override;
    // The members' direction; false for members of both.
    bool right_to_left() const override;
    bool decodes_stepwise() const override { return directions_.size() == 1; }
    // One direction: beam search over the mixture. Both: the best of the
    // proposals, rescored (above).
    Hypothesis best_output(const std::vector<int64_t>& source, int64_t beam, double length_penalty) override;
    // The members' configurations, " | " between them.
    std::string config_text() const override;
    std::string describe() const override;

protected:
    void on_set_fast(bool on) override;

private:
    std::vector<Member> members_;
    // The members of each direction mixed (one or two), each a Translator
    // that decodes as above; they point into members_.
    std::vector<std::unique_ptr<Translator>> directions_;
};

// The mixture of M distributions given as log-probabilities (each of the
// same shape, the distribution along the last axis): logsumexp over the
// members − log M. Both forward() (B×T×V) and decoding (K×V) use it.
Var mean_of_distributions(const std::vector<Var>& log_probs);

}  // namespace attn::seq2seq
