// The toy task the seq2seq example's tests train and decode on:
// reverse-and-shift (source ids a b c → target ids (c−1) (b−1) (a−1)), a
// handful of pairs of different lengths, so that a batch of them is padded;
// and the check that a model's greedy decoding agrees with its teacher forcing.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "autograd/ops.hpp"
#include "tensor/ops.hpp"
#include "examples/seq2seq/decoding.hpp"
#include "examples/seq2seq/seq2seq_data.hpp"

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
            const int64_t argmax = std::max_element(row, row + V) - row;
            CHECK(argmax == (t < greedy[i].tokens.size() ? greedy[i].tokens[t] : seq2seq::kEos));
            log_prob += row[argmax];
        }
        CHECK(greedy[i].log_prob == doctest::Approx(log_prob).epsilon(1e-4));
    }
}

}  // namespace attn::testing
