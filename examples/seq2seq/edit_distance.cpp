#include "examples/seq2seq/edit_distance.hpp"

#include <algorithm>

namespace attn {

namespace {

// One row of the dynamic programme at a time: row[j] = d(a[0..i), b[0..j)).
template <class T>
int64_t levenshtein(const std::vector<T>& a, const std::vector<T>& b) {
    std::vector<int64_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int64_t>(j);
    for (size_t i = 1; i <= a.size(); ++i) {
        int64_t diagonal = row[0];  // d(a[0..i−1), b[0..j−1))
        row[0] = static_cast<int64_t>(i);
        for (size_t j = 1; j <= b.size(); ++j) {
            const int64_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
            diagonal = row[j];
            row[j] = std::min({substitute, row[j] + 1, row[j - 1] + 1});  // substitute, delete, insert
        }
    }
    return row[b.size()];
}

}  // namespace

int64_t edit_distance(const std::vector<std::string>& a, const std::vector<std::string>& b) {
    return levenshtein(a, b);
}
int64_t edit_distance(const std::vector<int64_t>& a, const std::vector<int64_t>& b) { return levenshtein(a, b); }

ClosestReference closest_reference(const std::vector<std::string>& hypothesis,
                                   const std::vector<std::vector<std::string>>& references) {
    ClosestReference best{static_cast<int64_t>(hypothesis.size()), 0, 0};
    for (size_t k = 0; k < references.size(); ++k) {
        const int64_t d = edit_distance(hypothesis, references[k]);
        if (k == 0 || d < best.distance) best = {d, static_cast<int64_t>(references[k].size()), k};
    }
    return best;
}

void ErrorRates::add(const std::vector<std::string>& hypothesis,
                     const std::vector<std::vector<std::string>>& references) {
    const ClosestReference c = closest_reference(hypothesis, references);
    words += 1;
    word_errors += c.distance > 0 ? 1 : 0;
    symbols += c.length;
    symbol_errors += c.distance;
}

}  // namespace attn
