// The toy task the seq2seq example's tests train and decode on:
// reverse-and-shift (source ids a b c → target ids (c−1) (b−1) (a−1)), a
// handful of pairs of different lengths, so that a batch of them is padded.
#pragma once

#include <vector>

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

}  // namespace attn::testing
