#include "examples/seq2seq/ensemble.hpp"

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

}  // namespace

Ensemble::Ensemble(std::vector<Member> members) : members_(std::move(members)) {
    if (members_.empty()) throw std::invalid_argument("Ensemble: needs at least one model");
    for (size_t m = 0; m < members_.size(); ++m) {
        if (!members_[m].model) throw std::invalid_argument("Ensemble: member " + std::to_string(m) + " has no model");
        register_module("member" + std::to_string(m), *members_[m].model);
    }
}

Var Ensemble::forward(const Batch& batch, Tensor* weights) {
    std::vector<Var> log_probs;
    std::vector<Tensor> member_weights;
    for (Member& m : members_) {
        Tensor w;
        log_probs.push_back(log_softmax(m.model->forward(batch, weights ? &w : nullptr), -1));
        if (weights) member_weights.push_back(std::move(w));
    }
    if (weights) *weights = mean(stack(member_weights, 0), 0);
    return mean_of_distributions(log_probs);
}

std::unique_ptr<DecodingSession> Ensemble::start(const Tensor& source, const std::vector<int64_t>& lengths) {
    std::vector<std::unique_ptr<DecodingSession>> sessions;
    for (Member& m : members_) sessions.push_back(m.model->start(source, lengths));
    return std::make_unique<EnsembleSession>(std::move(sessions));
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
    std::string text = "Ensemble(" + std::to_string(members_.size()) + " models:";
    for (const Member& m : members_) text += " " + m.model->describe() + ";";
    text.back() = ')';
    return text;
}

}  // namespace attn::seq2seq
