// Instructor-only cases (course/hidden/README.md): registered under
// "hidden:ID", graded with make grade HIDDEN=1 or make grade-student. A
// student's tree does not hold this file.
#include <cmath>
#include <memory>

#include "attention/alignments.hpp"
#include "attention/scores.hpp"
#include "tests/grad/catalog.hpp"
#include "tests/grad/helpers.hpp"

namespace attn::testing {
namespace {

// e_l = wᵀ tanh(W_1 q + W_2 k_l + b), as in tests/grad/test_scores.cpp but
// written again here (no code shared with the student's cases either).
std::vector<Expected> additive_reference(const Ref& r) {
    const Array &Q = r.x[0], &K = r.x[1];
    const Array W1 = r.p["W_1"], W2 = r.p["W_2"], b = r.p["b"], w = r.p["w"];
    const int64_t B = Q.size(0), m = Q.size(1), n = K.size(1), dw = W1.size(0);
    Array E({B, m, n});
    for (int64_t bb = 0; bb < B; ++bb)
        for (int64_t i = 0; i < m; ++i)
            for (int64_t l = 0; l < n; ++l) {
                double e = 0;
                for (int64_t a = 0; a < dw; ++a) {
                    double h = b(a);
                    for (int64_t d = 0; d < Q.size(2); ++d) h += W1(a, d) * Q(bb, i, d);
                    for (int64_t d = 0; d < K.size(2); ++d) h += W2(a, d) * K(bb, l, d);
                    e += w(a) * std::tanh(h);
                }
                E(bb, i, l) = e;
            }
    return {{"scores", E}};
}

// One key only, and d_w = 1: the shapes a student's broadcasting forgets.
const RegisterEntry hidden_additive(0, "hidden:additive_score", {
    {.variant = "one key, d_w 1 (hidden)",
     .inputs = {Shape{3, 2, 4}, Shape{3, 1, 2}},
     .make = [](Generator& g) { return std::make_unique<AdditiveScore>(4, 2, 1, g); },
     .run = [](Module* m, In x, Masks) { return Outputs{{"scores", as<AdditiveScore>(m).score(x[0], x[1])}}; },
     .reference = additive_reference},
});

// Local-m with D = 0 (the window is the aligned key alone) and a query past
// the padding: its window holds no kept key, so its row is all zeros.
std::vector<Expected> local_m_reference(const Ref& r, int64_t D) {
    const Array& E = r.x[0];
    const Array mask = mask_or_all(r, 0);
    const int64_t B = E.size(0), m = E.size(1), n = E.size(2);
    Array A({B, m, n});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < m; ++i) {
            Vec e(static_cast<size_t>(n)), keep(static_cast<size_t>(n), 0.0);
            for (int64_t l = 0; l < n; ++l) {
                e[static_cast<size_t>(l)] = E(b, i, l);
                const bool in_window = std::abs(static_cast<double>(l - i)) <= static_cast<double>(D);
                keep[static_cast<size_t>(l)] = in_window && (mask.numel() == 0 || mask(b, l) != 0) ? 1 : 0;
            }
            const Vec a = softmax(e, keep);
            for (int64_t l = 0; l < n; ++l) A(b, i, l) = a[static_cast<size_t>(l)];
        }
    return {{"weights", A}};
}

const RegisterEntry hidden_local_m(0, "hidden:local_monotonic_alignment", {
    {.variant = "D 0, a query past the padding (hidden)",
     .inputs = {Shape{2, 4, 4}},
     .masks = {keep_first({4, 2}, 4)},
     .run = [](Module*, In x, Masks masks) {
         LocalMonotonicAlignment align(0);
         return Outputs{{"weights", align.align({x[0], key_mask(masks[0]), Var(), Tensor()})}};
     },
     .reference = [](const Ref& r) { return local_m_reference(r, 0); }},
});

}  // namespace
}  // namespace attn::testing
