// The attention zoo: each family of the catalog trained on a small task that
// needs it, so a reader sees every mechanism learn instead of trusting it.
//
// A task is a function that builds its data (synthetic, from a seed, or a
// data set of `make data`), trains a model made of the library's modules for
// a bounded number of steps, and reports what it reached against the target
// stated in the mechanism's doc page. Each file of examples/zoo/ registers
// its family's tasks with a static ZooRegistration:
//
//     static ZooRegistration pairs_tasks({
//         {"SP", "my_pair_attention", "pairs", "entailment of two short token sequences",
//          [](ZooContext& ctx) { return train_pairs(ctx, ...); }},
//     });
//
//   build/examples/zoo                       every task
//   build/examples/zoo --only SP             one family (catalog group code)
//   build/examples/zoo --only ID             one mechanism (its catalog id)
//   make zoo                                 every task, then out/report.html
//
// Each task prints RESULT {json} with its metric, the target and whether it
// was reached; the program exits non-zero if any task missed its target.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "examples/common/report.hpp"
#include "tensor/random.hpp"
#include "tensor/tensor.hpp"

namespace attn::zoo {

// What every task receives: a seeded generator, the step budget scale and
// the report section to draw into (the task adds its own subsection with a
// table row and an attention picture).
struct ZooContext {
    Generator& gen;
    int64_t seed = 1;
    double budget = 1.0;  // multiplies every task's step count (--budget); 1.0 is the stated setting
    HtmlReport& report;

    // A task's stated step count scaled by the budget (at least 1).
    int64_t steps(int64_t stated) const;
};

// What a task reached. The target is met only when the value reaches the
// page's target and, where the task trains the same model without the
// mechanism (a baseline with a value), does better than it: a mechanism
// that a bag of words matches has not done its job, whatever the target said.
struct ZooResult {
    std::string metric;   // e.g. "test accuracy"
    double value = 0;     // what was reached
    double target = 0;    // what the doc page states
    bool higher_is_better = true;
    int64_t steps = 0;    // optimiser steps taken
    std::string baseline; // optional: what it is compared with, e.g. "mean pooling 0.61"
    // The baseline's value in the same metric, when it is the same model
    // without the mechanism (NaN: none, or only a description such as chance).
    double baseline_value = std::numeric_limits<double>::quiet_NaN();

    bool reaches_target() const { return higher_is_better ? value >= target : value <= target; }
    bool beats_baseline() const {
        return std::isnan(baseline_value) || (higher_is_better ? value > baseline_value : value < baseline_value);
    }
    bool reached() const { return reaches_target() && beats_baseline(); }
    // The summary table's "met" cell: yes, or why not.
    std::string verdict() const;
};

// A baseline a task trains: its description for the table, and its value.
struct Baseline {
    std::string text;
    double value;
};

struct ZooTask {
    std::string family;     // catalog group code: FM FL FR SV CV SP RO ...
    std::string mechanism;  // catalog id (several ids: comma-separated)
    std::string task;       // the catalog's task name: pairs, vqa, sets, ...
    std::string summary;    // one line: what the model must learn
    std::function<ZooResult(ZooContext&)> run;
};

std::vector<ZooTask>& zoo_registry();

// ---- helpers the tasks share -------------------------------------------------------

// The share of rows whose largest logit is at the label: logits B×C, labels B
// (class ids stored as reals, or as integers).
double accuracy(const Tensor& logits, const Tensor& labels);
double accuracy(const Tensor& logits, const std::vector<int64_t>& labels);
// A number with `digits` decimals, for the report's text.
std::string fmt(double v, int digits = 2);
// Class ids as a B tensor of reals (what cross_entropy takes).
Tensor labels_tensor(const std::vector<int64_t>& labels);

struct ZooRegistration {
    explicit ZooRegistration(std::vector<ZooTask> tasks);
};

}  // namespace attn::zoo
