#include "examples/caption/bleu.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <stdexcept>

namespace attn {

namespace {

// n-gram → how often it occurs in `tokens`.
std::map<Tokens, long long> ngram_counts(const Tokens& tokens, size_t n) {
    std::map<Tokens, long long> counts;
    for (size_t i = 0; i + n <= tokens.size(); ++i)
        ++counts[Tokens(tokens.begin() + static_cast<std::ptrdiff_t>(i), tokens.begin() + static_cast<std::ptrdiff_t>(i + n))];
    return counts;
}

}  // namespace

BleuScore corpus_bleu(const std::vector<Tokens>& candidates, const std::vector<std::vector<Tokens>>& references) {
    if (candidates.size() != references.size())
        throw std::invalid_argument("corpus_bleu: " + std::to_string(candidates.size()) + " candidates but " +
                                    std::to_string(references.size()) + " reference sets");
    std::array<long long, 4> matched{}, total{};
    BleuScore s;
    for (size_t i = 0; i < candidates.size(); ++i) {
        const Tokens& cand = candidates[i];
        const std::vector<Tokens>& refs = references[i];
        if (refs.empty()) throw std::invalid_argument("corpus_bleu: candidate " + std::to_string(i) + " has no reference");
        for (size_t n = 1; n <= 4; ++n) {
            // Clipping: an n-gram counts at most as often as in the reference that has it most.
            std::map<Tokens, long long> max_ref;
            for (const Tokens& ref : refs)
                for (const auto& [g, c] : ngram_counts(ref, n)) max_ref[g] = std::max(max_ref[g], c);
            for (const auto& [g, c] : ngram_counts(cand, n)) {
                const auto it = max_ref.find(g);
                matched[n - 1] += std::min(c, it == max_ref.end() ? 0LL : it->second);
                total[n - 1] += c;
            }
        }
        // r: the reference length closest to the candidate's (the shorter on a tie).
        const auto c = static_cast<long long>(cand.size());
        long long best = static_cast<long long>(refs[0].size());
        for (const Tokens& ref : refs) {
            const auto r = static_cast<long long>(ref.size());
            if (std::llabs(r - c) < std::llabs(best - c) || (std::llabs(r - c) == std::llabs(best - c) && r < best)) best = r;
        }
        s.candidate_length += c;
        s.reference_length += best;
    }
    const double c = static_cast<double>(s.candidate_length), r = static_cast<double>(s.reference_length);
    s.brevity_penalty = c == 0 ? 0 : (c > r ? 1 : std::exp(1 - r / c));
    double log_sum = 0;
    bool zero = false;
    for (size_t n = 0; n < 4; ++n) {
        s.precision[n] = total[n] == 0 ? 0 : static_cast<double>(matched[n]) / static_cast<double>(total[n]);
        if (s.precision[n] == 0) zero = true;
        if (!zero) log_sum += std::log(s.precision[n]);
        // BLEU-N = BP · exp((1/N) Σ_{k≤N} log p_k)
        s.bleu[n] = zero ? 0 : s.brevity_penalty * std::exp(log_sum / static_cast<double>(n + 1));
    }
    return s;
}

BleuScore sentence_bleu(const Tokens& candidate, const std::vector<Tokens>& references) {
    return corpus_bleu({candidate}, {references});
}

}  // namespace attn
