// The toy task the seq2seq example's tests train and decode on:
// reverse-and-shift (source ids a b c → target ids (c−1) (b−1) (a−1)), a
// handful of pairs of different lengths, so that a batch of them is padded;
// and the check that a model's greedy decoding agrees with its teacher forcing.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "autograd/ops.hpp"
#include "tensor/ops.hpp"
#include "examples/seq2seq/decoding.hpp"
#include "examples/seq2seq/predict.hpp"
#include "examples/seq2seq/seq2seq_data.hpp"
#include "examples/seq2seq/seq2seq_model.hpp"
#include "io/checkpoint.hpp"

namespace attn::testing {

inline std::vector<seq2seq::Pair> toy_pairs() {
    return {{{4, 5, 6}, {5, 4, 3}}, {{7, 4}, {3, 6}}, {{5, 5, 8, 9}, {8, 7, 4, 4}}, {{9, 6, 4}, {3, 5, 8}},
            {{6}, {5}}, {{8, 7, 6, 5, 4}, {3, 4, 5, 6, 7}}};
}

// All of `pairs` as one batch, in their order.
inline seq2seq::Batch all_pairs(const std::vector<seq2seq::Pair>& pairs) {
    std::vector<size_t> index(pairs.size());
    for (size_t i = 0; i < index.size(); ++i) index[i] = i;
    return seq2seq::make_batch(pairs, index);
}

// `model` saved as a model file at `path`, with what --predict and
// --ensemble read beside the weights: its configuration and both
// vocabularies (a … e after the reserved ids). Returns that setup.
inline seq2seq::Seq2SeqSetup save_toy_model_file(const seq2seq::Seq2SeqModel& model, const std::string& path) {
    seq2seq::Seq2SeqSetup setup;
    setup.config = model.config();
    for (const char* s : {"a", "b", "c", "d", "e"}) setup.source_vocab.add(s), setup.target_vocab.add(s);
    std::map<std::string, std::string> metadata;
    seq2seq::save_setup(setup, metadata);
    save_model(path, model, metadata);
    return setup;
}

// Greedy decoding of the sources of `pairs` is the argmax of teacher forcing
// on its own output: each source's greedy tokens, fed back alone (no
// padding) as the decoder's inputs, must be predicted position by position,
// then </s> (unless decoding ran out of steps), and the hypothesis's log p
// must be the sum of those argmax log-probabilities. The decoding session
// (step by step) and forward (whole sequences) must agree for this.
inline void check_greedy_is_teacher_forcing_argmax(seq2seq::Translator& model,
                                                   const std::vector<seq2seq::Pair>& pairs) {
    const seq2seq::Batch b = all_pairs(pairs);
    const std::vector<seq2seq::Hypothesis> greedy = seq2seq::greedy_decode(model, b.source, b.source_lengths);
    for (size_t i = 0; i < pairs.size(); ++i) {
        CAPTURE(i);
        const seq2seq::Batch one = seq2seq::make_batch({{pairs[i].source, greedy[i].tokens}}, {0});
        NoGradGuard no_grad;
        const Tensor lp = attn::log_softmax(model.forward(one).value(), -1);  // 1×T×V
        const int64_t V = lp.size(2);
        const size_t written = greedy[i].attention.size();  // tokens, and </s> unless it ran out of steps
        REQUIRE(static_cast<int64_t>(written) <= lp.size(1));
        double log_prob = 0;
        for (size_t t = 0; t < written; ++t) {
            const real* row = lp.data() + static_cast<int64_t>(t) * V;
            int64_t argmax = seq2seq::kEos;  // over the ids decoding writes
            for (int64_t v = 0; v < V; ++v)
                if (seq2seq::writable(v) && row[v] > row[argmax]) argmax = v;
            CHECK(argmax == (t < greedy[i].tokens.size() ? greedy[i].tokens[t] : seq2seq::kEos));
            log_prob += row[argmax];
        }
        CHECK(greedy[i].log_prob == doctest::Approx(log_prob).epsilon(1e-4));
    }
}

// Beam search against every output: with V = 6 target ids, three of which
// decoding writes besides </s> (3, 4, 5: never <pad> or <s>), and a
// 1-symbol source, decoding stops after decode_limit(1) = 7 steps. Every
// output beam search can produce is then one of: m ∈ [0, 7) written ids
// followed by </s>, or 7 of them cut off by the limit: Σ_{m<7} 3^m + 3^7 =
// 3,280 outputs. A beam of 10^6 keeps them all, so it must return the best of
// them under its score, log p / (m + 1)^lp. Here every output's log p is
// summed from one teacher-forced forward pass over all of them, the way
// training computes it, under length penalties 0, ½, 1, 2 and 4.
// The model's weights are first multiplied by `weight_scale`, for uneven
// probabilities; the test's seed and scale must make a case where the penalty
// matters (the best output's length differs between penalties), which is
// checked: a score that counted the length wrongly, or ignored the penalty,
// would then pick another output.
inline void check_beam_finds_best_of_all_outputs(seq2seq::Translator& model, real weight_scale) {
    using seq2seq::kEos;
    for (const auto& [name, p] : model.named_parameters()) {
        Tensor w = p.value();
        for (int64_t i = 0; i < w.numel(); ++i) w[i] *= weight_scale;
    }
    model.eval();
    const std::vector<double> penalties{0.0, 0.5, 1.0, 2.0, 4.0};
    const std::vector<int64_t> source{5};
    const int64_t L = seq2seq::decode_limit(1), V = 6;
    REQUIRE(L == 7);
    std::vector<seq2seq::Pair> outputs;
    std::vector<bool> finished;
    std::vector<std::vector<int64_t>> prefixes{{}};
    for (int64_t m = 0; m <= L; ++m) {
        for (const auto& prefix : prefixes) {
            outputs.push_back({source, prefix});
            finished.push_back(m < L);
        }
        std::vector<std::vector<int64_t>> longer;
        for (const auto& prefix : prefixes)
            for (int64_t v : {3, 4, 5}) {
                longer.push_back(prefix);
                longer.back().push_back(v);
            }
        prefixes = std::move(longer);
    }
    REQUIRE(outputs.size() == 3280);
    const seq2seq::Batch b = all_pairs(outputs);  // target_in <s> y…, target_out y… </s>
    Tensor log_p;
    {
        NoGradGuard no_grad;
        log_p = attn::log_softmax(model.forward(b).value(), -1);  // 3280×(L+1)×V
    }
    REQUIRE(log_p.size(2) == V);
    const int64_t T = log_p.size(1);
    std::vector<size_t> best_lengths;
    for (const double penalty : penalties) {
        double best = -1e300;
        size_t best_i = 0;
        for (size_t i = 0; i < outputs.size(); ++i) {
            const std::vector<int64_t>& y = outputs[i].target;
            const auto r = static_cast<int64_t>(i);
            double lp = 0;
            for (size_t t = 0; t < y.size(); ++t) lp += log_p[(r * T + static_cast<int64_t>(t)) * V + y[t]];
            if (finished[i]) lp += log_p[(r * T + static_cast<int64_t>(y.size())) * V + kEos];
            const double score = lp / std::pow(static_cast<double>(y.size() + 1), penalty);
            if (score > best) best = score, best_i = i;
        }
        const seq2seq::Hypothesis found = seq2seq::beam_decode(model, source, 1000000, penalty);
        const double found_score = found.log_prob / std::pow(static_cast<double>(found.tokens.size() + 1), penalty);
        INFO("length penalty " << penalty << ", best output of " << outputs[best_i].target.size() << " ids");
        CHECK(found.tokens == outputs[best_i].target);
        CHECK(found_score == doctest::Approx(best).epsilon(1e-5));
        best_lengths.push_back(outputs[best_i].target.size());
    }
    MESSAGE("best output lengths under the penalties: " << best_lengths[0] << " " << best_lengths[1] << " "
                                                        << best_lengths[2] << " " << best_lengths[3] << " "
                                                        << best_lengths[4]);
    CHECK(*std::min_element(best_lengths.begin(), best_lengths.end()) <
          *std::max_element(best_lengths.begin(), best_lengths.end()));
}

}  // namespace attn::testing
