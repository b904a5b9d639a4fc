// Pointer attention, catalog entry 54 (attention/pointer.hpp), double build:
// its independent reference and registry entry (tests/grad/catalog.hpp), then
// the hand-computed tests. The bias-free additive score it holds has its own
// registry case under entry 15, in test_scores.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/pointer.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/catalog.hpp"
#include "tests/grad/helpers.hpp"
#include "tests/grad/scores_reference.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

// ---- 54. pointer_attention ----------------------------------------------------------------

// 54 (Vinyals et al. 2015):  u^i_j = wᵀ tanh(W_1 d_i + W_2 e_j),  p_i = softmax_j(u^i) over the kept j
// (the paper's vᵀ tanh(W_1 e_j + W_2 d_i): its W_1 is score.W_2 here, its W_2 score.W_1)
// E B×n×d_e, D B×m×d_d; score.W_1 d_w×d_d, score.W_2 d_w×d_e, score.w d_w;
// mask B×n or B×m×n (a step's own mask) → p B×m×n, u B×m×n
std::vector<Expected> pointer_reference(const Ref& r, bool with_scores) {
    const Array &E = r.x[0], &D = r.x[1];
    const Array mask = mask_or_all(r, 0);
    const AdditiveRef f(r, "score.", false);
    const int64_t B = E.size(0), n = E.size(1), m = D.size(1);
    Array u({B, m, n}), p({B, m, n});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < m; ++i) {
            Vec e(static_cast<size_t>(n));
            for (int64_t j = 0; j < n; ++j) e[static_cast<size_t>(j)] = u(b, i, j) = f(row(D, b, i), row(E, b, j));
            set_row(p, b, i, softmax(e, mask.rank() == 3 ? row(mask, b, i) : keep_row(mask, b, n)));
        }
    if (with_scores) return {{"weights", p}, {"scores", u}};
    return {{"weights", p}};
}

// Rows [0, n) of x B×N×… (and of a B×N mask).
Tensor first_rows(const Tensor& x, int64_t n) {
    const Array a(x);
    const int64_t B = a.size(0), N = a.size(1), inner = a.numel() / (B * N);
    std::vector<int64_t> shape = a.shape();
    shape[1] = n;
    Array out(shape);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t k = 0; k < n * inner; ++k) out[b * n * inner + k] = a[b * N * inner + k];
    return out.tensor();
}

// 54: one module points into inputs of any length: with the first n − 2
// positions only, p is B×m×(n − 2) and every row sums to 1 (0 if all masked).
Property points_into_any_length() {
    return {"the same module gives a distribution over n − 2 positions", [](const PropertyContext& c) -> std::string {
                const int64_t n = c.inputs[0].size(1) - 2;
                std::vector<Tensor> x = c.inputs, masks = c.masks;
                x[0] = first_rows(x[0], n);
                if (!masks.empty()) masks[0] = first_rows(masks[0], n);
                const Array p(c.run(x, masks)["weights"]);
                if (p.size(2) != n) return "weights " + p.shape_str() + " for " + std::to_string(n) + " positions";
                for (int64_t k = 0; k < p.numel() / n; ++k) {
                    double s = 0;
                    for (int64_t j = 0; j < n; ++j) s += p[k * n + j];
                    if (std::abs(s - 1) > 1e-9 && s != 0) return "a row over n − 2 positions sums to " + std::to_string(s);
                }
                return "";
            }};
}

Outputs run_pointer(Module* m, In x, Masks masks) {
    return {{"weights", as<PointerAttention>(m).forward(x[0], x[1], mask_or_none(masks, 0)).weights}};
}

const RegisterEntry pointer_entry(54, "pointer_attention", {
    {.variant = "n 5 of d_e 3, m 2 steps of d_d 4, d_w 6, lengths 5 and 3",
     .inputs = {Shape{2, 5, 3}, Shape{2, 2, 4}},
     .masks = {keep_first({5, 3}, 5)},
     .make = [](Generator& g) { return std::make_unique<PointerAttention>(3, 4, 6, g); },
     .run = run_pointer,
     .reference = [](const Ref& r) { return pointer_reference(r, false); },
     .masking = {{.mask = 0, .inputs = {0}, .weights = {"weights"}}},
     .properties = {rows_sum_to_one("weights"), bounded("weights", 0, 1),
                    permutation_equivariant_keys({0}, {0}, {"weights"}), points_into_any_length()}},
    {.variant = "square: d_e = d_d = d_w = 4, a B×m×n 'not chosen yet' mask, n 4, m 3",
     .inputs = {Shape{2, 4, 4}, Shape{2, 3, 4}},
     .masks = {not_yet_chosen_mask(Tensor::from({2, 0, 3, 1, 3, 0}, Shape{2, 3}), 4)},
     .make = [](Generator& g) { return std::make_unique<PointerAttention>(4, 4, 4, g); },
     .run = run_pointer,
     .reference = [](const Ref& r) { return pointer_reference(r, false); },
     .properties = {rows_sum_to_one("weights")}},
    {.variant = "project() once, scores() per step: u and p, n 6 of d_e 2, m 3 of d_d 3, d_w 4, no mask",
     .inputs = {Shape{2, 6, 2}, Shape{2, 3, 3}},
     .make = [](Generator& g) { return std::make_unique<PointerAttention>(2, 3, 4, g); },
     .run = [](Module* m, In x, Masks) {
         auto& ptr = as<PointerAttention>(m);
         return Outputs{{"weights", ptr.forward(x[0], x[1]).weights}, {"scores", ptr.scores(x[1], ptr.project(x[0]))}};
     },
     .reference = [](const Ref& r) { return pointer_reference(r, true); },
     .properties = {rows_sum_to_one("weights"), permutation_equivariant_keys({0}, {}, {"weights", "scores"}),
                    points_into_any_length()}},
    {.variant = "n 1: the only position gets probability 1",
     .inputs = {Shape{2, 1, 3}, Shape{2, 2, 2}},
     .make = [](Generator& g) { return std::make_unique<PointerAttention>(3, 2, 3, g); },
     .run = run_pointer,
     .reference = [](const Ref& r) { return pointer_reference(r, false); },
     .properties = {bounded("weights", 1, 1)}},
});

}  // namespace

// ---- 54. pointer_attention -------------------------------------------------------------------

TEST_CASE("pointer_attention: the 'not chosen yet' mask removes the earlier steps' targets") {
    // targets (2, 0): step 0 keeps all, step 1 drops 2
    const Tensor keep = not_yet_chosen_mask(Tensor::from({2, 0}, {1, 2}), 4);
    CHECK(allclose(keep, Tensor::from({1, 1, 1, 1, 1, 1, 0, 1}, {1, 2, 4}), 0, 0));
    // targets (1, 3, 0): step 2 drops 1 and 3
    const Tensor three = not_yet_chosen_mask(Tensor::from({1, 3, 0}, {1, 3}), 4);
    CHECK(allclose(three, Tensor::from({1, 1, 1, 1, 1, 0, 1, 1, 1, 0, 1, 0}, {1, 3, 4}), 0, 0));
    CHECK_THROWS_AS(not_yet_chosen_mask(Tensor::from({4, 0}, {1, 2}), 4), std::invalid_argument);
    Generator gen(54);
    PointerAttention ptr(3, 4, 5, gen);
    const auto out = ptr.forward(Var(normal({1, 4, 3}, gen)), Var(normal({1, 2, 4}, gen)), keep);
    CHECK(out.weights.value().at({0, 1, 2}) == 0);
    CHECK_THROWS_AS(ptr.forward(Var(normal({1, 4, 2}, gen)), Var(normal({1, 2, 4}, gen))), std::invalid_argument);
}

TEST_CASE("pointer_attention: its survey tags") {
    Generator gen(63);
    const Taxonomy pointer = PointerAttention(3, 4, 5, gen).taxonomy();
    CHECK(pointer.scoring == "additive_score");
    CHECK(pointer.alignment == "soft");
}
