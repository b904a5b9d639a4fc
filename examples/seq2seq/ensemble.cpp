#include "examples/seq2seq/ensemble.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "autograd/ops.hpp"
#include "tensor/ops.hpp"

namespace attn::seq2seq {

Var mean_of_distributions(const std::vector<Var>& log_probs) {
    const real log_m = static_cast<real>(std::log(static_cast<double>(log_probs.size())));
    return logsumexp(stack(log_probs, 0), 0) - log_m;
}

namespace {

// One decoding step of every member, on the same prefixes.
class EnsembleSession : public DecodingSession {
public:
    explicit EnsembleSession(std::vector<std::unique_ptr<DecodingSession>> sessions)
        : sessions_(std::move(sessions)) {}

    NextToken step(const Tensor& previous) override {
        std::vector<Var> log_probs;
        std::vector<Tensor> weights;
        for (auto& s : sessions_) {
            NextToken next = s->step(previous);
            log_probs.emplace_back(std::move(next.log_probs));
            weights.push_back(std::move(next.weights));
        }
        return {mean_of_distributions(log_probs).value(), mean(stack(weights, 0), 0)};
    }
    void select(const std::vector<int64_t>& rows) override {
        for (auto& s : sessions_) s->select(rows);
    }

private:
    std::vector<std::unique_ptr<DecodingSession>> sessions_;
};

// Members that write in one direction, decoding as one: the mean of their
// distributions at every step. Points to models the Ensemble owns.
class Mixture : public Translator {
public:
    explicit Mixture(std::vector<Translator*> models) : models_(std::move(models)) {}

    Var forward(const Batch& batch, Tensor* weights) override {
        std::vector<Var> log_probs;
        std::vector<Tensor> member_weights;
        for (Translator* m : models_) {
            Tensor w;
            log_probs.push_back(log_softmax(m->forward(batch, weights ? &w : nullptr), -1));
            if (weights) member_weights.push_back(std::move(w));
        }
        if (weights) *weights = mean(stack(member_weights, 0), 0);
        return mean_of_distributions(log_probs);
    }
    std::unique_ptr<DecodingSession> start(const Tensor& source, const std::vector<int64_t>& lengths) override {
        std::vector<std::unique_ptr<DecodingSession>> sessions;
        for (Translator* m : models_) sessions.push_back(m->start(source, lengths));
        return std::make_unique<EnsembleSession>(std::move(sessions));
    }
    bool right_to_left() const override { return models_.front()->right_to_left(); }
    std::string config_text() const override { return {}; }

private:
    std::vector<Translator*> models_;
};

}  // namespace

Ensemble::Ensemble(std::vector<Member> members) : members_(std::move(members)) {
    if (members_.empty()) throw std::invalid_argument("Ensemble: needs at least one model");
    std::vector<Translator*> by_direction[2];
    for (size_t m = 0; m < members_.size(); ++m) {
        if (!members_[m].model) throw std::invalid_argument("Ensemble: member " + std::to_string(m) + " has no model");
        register_module("member" + std::to_string(m), *members_[m].model);
        by_direction[members_[m].model->right_to_left() ? 1 : 0].push_back(members_[m].model.get());
    }
    for (auto& models : by_direction)
        if (!models.empty()) directions_.push_back(std::make_unique<Mixture>(std::move(models)));
}

namespace {
[[noreturn]] void refuse_both_directions(const char* what) {
    throw std::logic_error(std::string("Ensemble::") + what +
                           ": its members write in both directions, so no one prefix can be read by all; "
                           "decode it with best_output (proposals rescored)");
}
}  // namespace

Var Ensemble::forward(const Batch& batch, Tensor* weights) {
    if (directions_.size() != 1) refuse_both_directions("forward");
    return directions_[0]->forward(batch, weights);
}

std::unique_ptr<DecodingSession> Ensemble::start(const Tensor& source, const std::vector<int64_t>& lengths) {
    if (directions_.size() != 1) refuse_both_directions("start");
    return directions_[0]->start(source, lengths);
}

bool Ensemble::right_to_left() const { return directions_.size() == 1 && directions_[0]->right_to_left(); }

Hypothesis Ensemble::best_output(const std::vector<int64_t>& source, int64_t beam, double length_penalty) {
    if (directions_.size() == 1) return beam_decode(*directions_[0], source, beam, length_penalty);
    // Each direction proposes its beam's outputs (reading order; the first
    // proposal of an output keeps its attention)…
    std::vector<Hypothesis> proposals;
    for (auto& direction : directions_)
        for (Hypothesis& h : beam_search(*direction, source, beam, length_penalty)) {
            const bool seen = std::any_of(proposals.begin(), proposals.end(),
                                          [&](const Hypothesis& p) { return p.tokens == h.tokens; });
            if (!seen) proposals.push_back(std::move(h));
        }
    // …and every member scores every proposal.
    std::vector<std::vector<int64_t>> outputs;
    for (const Hypothesis& h : proposals) outputs.push_back(h.tokens);
    std::vector<double> mean_log_p(outputs.size(), 0.0);
    for (Member& m : members_) {
        const std::vector<double> lp = output_log_probs(*m.model, source, outputs);
        for (size_t i = 0; i < lp.size(); ++i) mean_log_p[i] += lp[i] / static_cast<double>(members_.size());
    }
    size_t best = 0;
    for (size_t i = 1; i < proposals.size(); ++i)
        if (normalised_score(mean_log_p[i], outputs[i].size(), length_penalty) >
            normalised_score(mean_log_p[best], outputs[best].size(), length_penalty))
            best = i;
    Hypothesis answer = std::move(proposals[best]);
    answer.log_prob = mean_log_p[best];
    return answer;
}

// The members are not sub-modules (an ensemble has no parameters of its
// own to save), so set_fast reaches them here.
void Ensemble::on_set_fast(bool on) {
    for (Member& m : members_) m.model->set_fast(on);
}

std::string Ensemble::config_text() const {
    std::string text;
    for (const Member& m : members_) text += (text.empty() ? "" : " | ") + m.model->config_text();
    return text;
}

std::string Ensemble::describe() const {
    std::string text = "Ensemble(" + std::to_string(members_.size()) + " models" +
                       (directions_.size() == 2 ? ", both directions: proposals rescored" : "") + ":";
    for (const Member& m : members_) text += " " + m.model->describe() + ";";
    text.back() = ')';
    return text;
}

}  // namespace attn::seq2seq
