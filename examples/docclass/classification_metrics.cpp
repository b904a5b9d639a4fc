#include "examples/docclass/classification_metrics.hpp"

#include <stdexcept>
#include <string>

namespace attn {

ConfusionMatrix::ConfusionMatrix(int64_t num_classes) : C_(num_classes) {
    if (num_classes < 1)
        throw std::invalid_argument("ConfusionMatrix: need at least one class, got " + std::to_string(num_classes));
    n_.assign(static_cast<size_t>(C_ * C_), 0);
}

void ConfusionMatrix::add(int64_t truth, int64_t predicted) {
    if (truth < 0 || truth >= C_ || predicted < 0 || predicted >= C_)
        throw std::out_of_range("ConfusionMatrix::add: classes must be in [0, " + std::to_string(C_) + "), got truth " +
                                std::to_string(truth) + " and prediction " + std::to_string(predicted));
    ++n_[static_cast<size_t>(truth * C_ + predicted)];
    ++total_;
}

int64_t ConfusionMatrix::count(int64_t truth, int64_t predicted) const {
    return n_.at(static_cast<size_t>(truth * C_ + predicted));
}

double ConfusionMatrix::accuracy() const {
    int64_t right = 0;
    for (int64_t c = 0; c < C_; ++c) right += count(c, c);
    return total_ > 0 ? static_cast<double>(right) / static_cast<double>(total_) : 0.0;
}

double ConfusionMatrix::precision(int64_t c) const {
    int64_t predicted = 0;
    for (int64_t t = 0; t < C_; ++t) predicted += count(t, c);
    return predicted > 0 ? static_cast<double>(count(c, c)) / static_cast<double>(predicted) : 0.0;
}

double ConfusionMatrix::recall(int64_t c) const {
    int64_t truth = 0;
    for (int64_t p = 0; p < C_; ++p) truth += count(c, p);
    return truth > 0 ? static_cast<double>(count(c, c)) / static_cast<double>(truth) : 0.0;
}

double ConfusionMatrix::f1(int64_t c) const {
    const double p = precision(c), r = recall(c);
    return p + r > 0 ? 2 * p * r / (p + r) : 0.0;
}

double ConfusionMatrix::macro_f1() const {
    double total = 0;
    int64_t classes = 0;
    for (int64_t c = 0; c < C_; ++c) {
        int64_t seen = 0;
        for (int64_t k = 0; k < C_; ++k) seen += count(c, k) + count(k, c);
        if (seen == 0) continue;  // neither in the truth nor predicted
        total += f1(c);
        ++classes;
    }
    return classes > 0 ? total / static_cast<double>(classes) : 0.0;
}

Tensor ConfusionMatrix::counts(bool row_normalized) const {
    Tensor t = Tensor::zeros({C_, C_});
    for (int64_t r = 0; r < C_; ++r) {
        int64_t row = 0;
        for (int64_t p = 0; p < C_; ++p) row += count(r, p);
        for (int64_t p = 0; p < C_; ++p)
            t[r * C_ + p] = static_cast<real>(row_normalized ? (row > 0 ? static_cast<double>(count(r, p)) / static_cast<double>(row) : 0.0)
                                                            : static_cast<double>(count(r, p)));
    }
    return t;
}

}  // namespace attn
