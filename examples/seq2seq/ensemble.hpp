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

    // log of the members' mean distribution, B×T×V; `weights`: the mean of the
    // members' attention weights, B×T×n.
    Var forward(const Batch& batch, Tensor* weights = nullptr) override;
    std::unique_ptr<DecodingSession> start(const Tensor& source, const std::vector<int64_t>& lengths) override;
    // The members' configurations, " | " between them.
    std::string config_text() const override;
    std::string describe() const override;

protected:
    void on_set_fast(bool on) override;

private:
    std::vector<Member> members_;
};

// The mixture of M distributions given as log-probabilities (each of the
// same shape, the distribution along the last axis): logsumexp over the
// members − log M. Both forward() (B×T×V) and decoding (K×V) use it.
Var mean_of_distributions(const std::vector<Var>& log_probs);

}  // namespace attn::seq2seq
