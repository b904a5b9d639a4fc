// Classification metrics: accuracy, per-class precision / recall / F1,
// macro-F1 and the confusion matrix.
//
//   ConfusionMatrix cm(3);
//   cm.add(/*truth*/ 0, /*predicted*/ 2);
//   cm.accuracy(); cm.macro_f1(); cm.counts();  // C×C, rows = truth, columns = prediction
//
//   precision_c = n_cc / Σ_t n_tc    recall_c = n_cc / Σ_p n_cp
//   F1_c = 2·precision_c·recall_c / (precision_c + recall_c)  (0 when both are 0)
//   macro-F1 = the mean of F1_c over the classes that occur in the truth or
//              in the predictions (a class absent from both has no F1)
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/tensor.hpp"

namespace attn {

class ConfusionMatrix {
public:
    explicit ConfusionMatrix(int64_t num_classes);
    // Throws std::out_of_range naming the class if either is not in [0, C).
    void add(int64_t truth, int64_t predicted);
    int64_t num_classes() const { return C_; }
    int64_t total() const { return total_; }
    int64_t count(int64_t truth, int64_t predicted) const;

    double accuracy() const;  // 0 when empty
    double precision(int64_t c) const;
    double recall(int64_t c) const;
    double f1(int64_t c) const;
    double macro_f1() const;
    // C×C counts (rows = truth), for heatmap_svg; row_normalized divides each
    // row by its total (the recall of each class on the diagonal).
    Tensor counts(bool row_normalized = false) const;

private:
    int64_t C_;
    int64_t total_ = 0;
    std::vector<int64_t> n_;  // C×C, row = truth
};

}  // namespace attn
