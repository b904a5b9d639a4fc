// The helpers the zoo's tasks share (examples/zoo/zoo.hpp).
#include "examples/zoo/zoo.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace attn::zoo {

int64_t ZooContext::steps(int64_t stated) const {
    return std::max<int64_t>(1, std::llround(static_cast<double>(stated) * budget));
}

std::string ZooResult::verdict() const {
    if (!reaches_target()) return "NO: short of the target";
    if (!beats_baseline()) return "NO: no better than the baseline";
    return "yes";
}

std::string fmt(double v, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

double accuracy(const Tensor& logits, const Tensor& labels) {
    const int64_t B = labels.numel(), C = logits.size(-1);
    if (logits.numel() != B * C)
        throw std::invalid_argument("zoo accuracy: logits " + logits.shape().str() + " for labels " +
                                    labels.shape().str());
    int64_t right = 0;
    for (int64_t b = 0; b < B; ++b) {
        const real* row = logits.data() + b * C;
        const int64_t best = std::max_element(row, row + C) - row;  // the first maximum
        right += best == static_cast<int64_t>(labels[b]) ? 1 : 0;
    }
    return B ? static_cast<double>(right) / static_cast<double>(B) : 0;
}

double accuracy(const Tensor& logits, const std::vector<int64_t>& labels) {
    return accuracy(logits, labels_tensor(labels));
}

Tensor labels_tensor(const std::vector<int64_t>& labels) {
    Tensor t = Tensor::zeros({static_cast<int64_t>(labels.size())});
    for (size_t i = 0; i < labels.size(); ++i) t[static_cast<int64_t>(i)] = static_cast<real>(labels[i]);
    return t;
}

}  // namespace attn::zoo
