#include "examples/seq2seq/decoding.hpp"

#include <algorithm>
#include <cmath>

#include "autograd/ops.hpp"
#include "nn/loss.hpp"

namespace attn::seq2seq {

Var Translator::loss(const Batch& batch, double label_smoothing) {
    return loss::cross_entropy(forward(batch), batch.target_out,
                               {.ignore_index = kPad, .label_smoothing = static_cast<real>(label_smoothing), .fast = is_fast()});
}

int64_t decode_limit(int64_t source_length) { return 2 * source_length + 5; }

std::vector<int64_t> writing_order(const Translator& model, std::vector<int64_t> tokens) {
    if (model.right_to_left()) std::reverse(tokens.begin(), tokens.end());
    return tokens;
}

double normalised_score(double log_prob, size_t tokens, double length_penalty) {
    return log_prob / std::pow(static_cast<double>(tokens + 1), length_penalty);
}

namespace {

// A right-to-left model's hypothesis in reading order: its tokens reversed,
// and their attention rows with them (the row of </s>, written last, stays last).
void to_reading_order(const Translator& model, Hypothesis& h) {
    if (!model.right_to_left()) return;
    std::reverse(h.tokens.begin(), h.tokens.end());
    const size_t rows = std::min(h.tokens.size(), h.attention.size());
    std::reverse(h.attention.begin(), h.attention.begin() + static_cast<std::ptrdiff_t>(rows));
}

}  // namespace

bool writable(int64_t id) { return id != kPad && id != kBos; }

std::vector<Hypothesis> greedy_decode(Translator& model, const Tensor& source, const std::vector<int64_t>& lengths) {
    NoGradGuard no_grad;
    const std::unique_ptr<DecodingSession> session = model.start(source, lengths);
    const int64_t B = source.size(0), n = source.size(1);
    std::vector<Hypothesis> hyps(static_cast<size_t>(B));
    std::vector<bool> done(static_cast<size_t>(B), false);
    int64_t max_length = 0;
    for (int64_t len : lengths) max_length = std::max(max_length, decode_limit(len));
    Tensor previous = Tensor::full(Shape{B}, static_cast<real>(kBos));
    for (int64_t t = 0; t < max_length; ++t) {
        const NextToken next = session->step(previous);
        const Tensor &lp = next.log_probs, &w = next.weights;  // B×V, B×n
        const int64_t V = lp.size(1);
        bool all_done = true;
        for (int64_t b = 0; b < B; ++b) {
            const real* row = lp.data() + b * V;
            int64_t best = -1;  // the first maximum of the writable ids
            for (int64_t v = 0; v < V; ++v)
                if (writable(v) && (best < 0 || row[v] > row[best])) best = v;
            previous[b] = static_cast<real>(best);
            auto& h = hyps[static_cast<size_t>(b)];
            if (done[static_cast<size_t>(b)]) continue;
            h.log_prob += row[best];
            h.attention.emplace_back(w.data() + b * n, w.data() + (b + 1) * n);
            if (best == kEos) done[static_cast<size_t>(b)] = true;
            else h.tokens.push_back(best);
            if (t + 1 >= decode_limit(lengths[static_cast<size_t>(b)])) done[static_cast<size_t>(b)] = true;
            all_done = all_done && done[static_cast<size_t>(b)];
        }
        if (all_done) break;
    }
    for (Hypothesis& h : hyps) to_reading_order(model, h);
    return hyps;
}

std::vector<Hypothesis> beam_search(Translator& model, const std::vector<int64_t>& source, int64_t beam,
                                    double length_penalty) {
    NoGradGuard no_grad;
    const int64_t n = std::max<int64_t>(1, static_cast<int64_t>(source.size()));
    Tensor src = Tensor::zeros(Shape{1, n});
    for (size_t j = 0; j < source.size(); ++j) src[static_cast<int64_t>(j)] = static_cast<real>(source[j]);
    const std::unique_ptr<DecodingSession> session =
        model.start(src, {static_cast<int64_t>(std::max<size_t>(1, source.size()))});
    const int64_t max_length = decode_limit(static_cast<int64_t>(source.size()));
    std::vector<Hypothesis> alive(1), finished;
    for (int64_t t = 0; t < max_length && !alive.empty() && static_cast<int64_t>(finished.size()) < beam; ++t) {
        const int64_t K = static_cast<int64_t>(alive.size());
        Tensor previous = Tensor::empty(Shape{K});
        for (int64_t k = 0; k < K; ++k) {
            const auto& toks = alive[static_cast<size_t>(k)].tokens;
            previous[k] = static_cast<real>(toks.empty() ? kBos : toks.back());
        }
        const NextToken next = session->step(previous);
        const Tensor &lp = next.log_probs, &w = next.weights;  // K×V, K×n
        const int64_t V = lp.size(1);
        // every extension (k, v), best first; ties: the larger log p of the step, then the smaller (k, v)
        struct Candidate {
            double score;
            real step;
            int64_t k, v;
        };
        std::vector<Candidate> cands;
        for (int64_t k = 0; k < K; ++k)
            for (int64_t v = 0; v < V; ++v)
                if (writable(v)) cands.push_back({alive[static_cast<size_t>(k)].log_prob + lp[k * V + v], lp[k * V + v], k, v});
        const size_t keep = std::min(cands.size(), static_cast<size_t>(beam));
        std::partial_sort(cands.begin(), cands.begin() + static_cast<std::ptrdiff_t>(keep), cands.end(),
                          [](const Candidate& a, const Candidate& b) {
                              if (a.score != b.score) return a.score > b.score;
                              if (a.step != b.step) return a.step > b.step;
                              return a.k != b.k ? a.k < b.k : a.v < b.v;
                          });
        std::vector<Hypothesis> next_alive;
        std::vector<int64_t> parents;
        for (size_t i = 0; i < keep; ++i) {
            const Candidate& c = cands[i];
            Hypothesis h = alive[static_cast<size_t>(c.k)];
            h.log_prob = c.score;
            h.attention.emplace_back(w.data() + c.k * n, w.data() + (c.k + 1) * n);
            if (c.v == kEos) {
                finished.push_back(std::move(h));
            } else {
                h.tokens.push_back(c.v);
                next_alive.push_back(std::move(h));
                parents.push_back(c.k);
            }
        }
        alive = std::move(next_alive);
        if (!alive.empty()) session->select(parents);
    }
    for (auto& h : alive) finished.push_back(std::move(h));  // ran out of steps
    auto normalised = [&](const Hypothesis& h) { return normalised_score(h.log_prob, h.tokens.size(), length_penalty); };
    std::stable_sort(finished.begin(), finished.end(),
                     [&](const Hypothesis& a, const Hypothesis& b) { return normalised(a) > normalised(b); });
    for (Hypothesis& h : finished) to_reading_order(model, h);
    return finished;
}

Hypothesis beam_decode(Translator& model, const std::vector<int64_t>& source, int64_t beam, double length_penalty) {
    return beam_search(model, source, beam, length_penalty).at(0);
}

Hypothesis Translator::best_output(const std::vector<int64_t>& source, int64_t beam, double length_penalty) {
    return beam_decode(*this, source, beam, length_penalty);
}

std::vector<double> output_log_probs(Translator& model, const std::vector<int64_t>& source,
                                     const std::vector<std::vector<int64_t>>& outputs) {
    if (outputs.empty()) return {};
    NoGradGuard no_grad;
    std::vector<Pair> pairs;
    std::vector<size_t> index;
    for (const auto& out : outputs) {
        index.push_back(pairs.size());
        pairs.push_back({source, writing_order(model, out)});
    }
    const Batch batch = make_batch(pairs, index);
    const Tensor lp = log_softmax(model.forward(batch), -1).value();  // B×T×V
    const int64_t T = lp.size(1), V = lp.size(2);
    std::vector<double> sums(outputs.size(), 0.0);
    for (size_t b = 0; b < outputs.size(); ++b)
        for (int64_t t = 0; t < T; ++t) {
            const auto y = static_cast<int64_t>(batch.target_out[static_cast<int64_t>(b) * T + t]);
            if (y != kPad) sums[b] += lp[(static_cast<int64_t>(b) * T + t) * V + y];
        }
    return sums;
}

}  // namespace attn::seq2seq
