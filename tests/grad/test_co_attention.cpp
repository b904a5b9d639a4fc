// Co-attention and rotatory attention, catalog entries 3–9 (attention/co_attention.hpp):
// their registry entries (tests/grad/catalog.hpp), with the independent
// references of test_co_attention_reference.cpp, and the catalog's tests that
// need more than the registry's values, gradients, masks and properties:
// special parameter values, ties, empty inputs, equivalences between entries.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "attention/co_attention.hpp"
#include "attention/query_types.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/catalog.hpp"
#include "tests/grad/helpers.hpp"
#include "tests/grad/test_co_attention_reference.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

// The outputs of a run (or a reference) whose names are listed, in that order.
Outputs pick(const std::vector<std::string>& names, const Outputs& all) {
    Outputs out;
    for (const std::string& n : names)
        for (const Named& o : all)
            if (o.name == n) out.push_back(o);
    return out;
}
std::vector<Expected> pick(const std::vector<std::string>& names, const std::vector<Expected>& all) {
    std::vector<Expected> out;
    for (const std::string& n : names)
        for (const Expected& e : all)
            if (e.name == n) out.push_back(e);
    return out;
}

// ---- the registry entries ---------------------------------------------------------------------

Outputs co_outputs(const CoAttentionOutput& o) {
    return {{"output", o.output},     {"context1", o.context1}, {"context2", o.context2},
            {"weights1", o.weights1}, {"weights2", o.weights2}};
}

// Mask i covers input i: weights i+1 are zero at its padding, and context i+1
// is zero when all of input i is padding.
std::vector<KeySet> two_key_sets() {
    return {{.mask = 0, .inputs = {0}, .weights = {"weights1"}, .zero_when_empty = {"context1"}},
            {.mask = 1, .inputs = {1}, .weights = {"weights2"}, .zero_when_empty = {"context2"}}};
}

// Convex combinations of each input's kept rows (of all of them when the case has no masks).
std::vector<Property> two_sided_properties(bool masked) {
    return {rows_sum_to_one("weights1"), rows_sum_to_one("weights2"),
            convex_combination("context1", 0, masked ? 0 : -1), convex_combination("context2", 1, masked ? 1 : -1)};
}

// Padding in both inputs: example 0 keeps 3 of 4 rows and 2 of 3, example 1 2 of 4 and 3 of 3.
Tensor padded4() { return keep_first({3, 2}, 4); }
Tensor padded3() { return keep_first({2, 3}, 3); }

// ---- 3 ----
Outputs run_alternating(Module* m, In x, Masks k) {
    const AlternatingCoAttentionOutput o =
        as<AlternatingCoAttention>(m).forward(x[0], x[1], mask_or_none(k, 0), mask_or_none(k, 1));
    Outputs out = co_outputs(o);
    out.push_back({"context0", o.context0});
    out.push_back({"weights0", o.weights0});
    return out;
}

const RegisterEntry alternating_entry(3, "alternating_co_attention", {
    {.variant = "d1 4 ≠ d2 3, d_w 5, n1 4 ≠ n2 3, both inputs padded",
     .inputs = {Shape{2, 4, 4}, Shape{2, 3, 3}},
     .masks = {padded4(), padded3()},
     .make = [](Generator& g) { return std::make_unique<AlternatingCoAttention>(4, 3, 5, g); },
     .run = run_alternating,
     .reference = alternating_co_attention_reference,
     .masking = {{.mask = 0, .inputs = {0}, .weights = {"weights0", "weights1"},
                  .zero_when_empty = {"context0", "context1"}},
                 {.mask = 1, .inputs = {1}, .weights = {"weights2"}, .zero_when_empty = {"context2"}}},
     .properties = {rows_sum_to_one("weights0"), rows_sum_to_one("weights1"), rows_sum_to_one("weights2"),
                    convex_combination("context0", 0, 0), convex_combination("context1", 0, 0),
                    convex_combination("context2", 1, 1), independent_of(1, {"context0", "weights0"}),
                    depends_on(1, "context1"), zero_query_map_repeats_step_1()}},
    {.variant = "square: d1 = d2 = d_w = 3, n1 = n2 = 3, batch 3, no mask (a transposed or swapped map stays "
                "shape-valid)",
     .inputs = {Shape{3, 3, 3}, Shape{3, 3, 3}},
     .make = [](Generator& g) { return std::make_unique<AlternatingCoAttention>(3, 3, 3, g); },
     .run = run_alternating,
     .reference = alternating_co_attention_reference,
     .properties = {zero_query_map_repeats_step_1()}},
});

// ---- 4 ----
Outputs run_interactive(Module* m, In x, Masks k) {
    return co_outputs(as<InteractiveCoAttention>(m).forward(x[0], x[1], mask_or_none(k, 0), mask_or_none(k, 1)));
}
// c^(1) sees input 2 only through its mean: reordering input 2 leaves it unchanged, and conversely.
std::vector<Property> interactive_properties(bool masked) {
    std::vector<Property> p = two_sided_properties(masked);
    p.push_back(permutation_invariant({1}, masked ? std::vector<int>{1} : std::vector<int>{}, {"context1", "weights1"}));
    p.push_back(permutation_invariant({0}, masked ? std::vector<int>{0} : std::vector<int>{}, {"context2", "weights2"}));
    return p;
}

const RegisterEntry interactive_entry(4, "interactive_co_attention", {
    {.variant = "IAN's activated general scores, d1 4 ≠ d2 3, n1 4 ≠ n2 3, both inputs padded",
     .inputs = {Shape{2, 4, 4}, Shape{2, 3, 3}},
     .masks = {padded4(), padded3()},
     .make = [](Generator& g) { return std::make_unique<InteractiveCoAttention>(4, 3, g); },
     .run = run_interactive,
     .reference = [](const Ref& r) { return interactive_co_attention_reference(r); },
     .masking = two_key_sets(),
     .properties = interactive_properties(true)},
    {.variant = "IAN's scores, square: d1 = d2 = 3, n1 = n2 = 3, no mask (W_12 for W_21, or Wᵀ, stays shape-valid)",
     .inputs = {Shape{2, 3, 3}, Shape{2, 3, 3}},
     .make = [](Generator& g) { return std::make_unique<InteractiveCoAttention>(3, 3, g); },
     .run = run_interactive,
     .reference = [](const Ref& r) { return interactive_co_attention_reference(r); },
     .properties = interactive_properties(false)},
    {.variant = "any scores: additive score_12 (d_w 5), biased general score_21; both inputs padded",
     .inputs = {Shape{2, 4, 4}, Shape{2, 3, 3}},
     .masks = {padded4(), padded3()},
     .make = [](Generator& g) {
         std::unique_ptr<ScoreFunction> score_12 = std::make_unique<AdditiveScore>(3, 4, 5, g);
         std::unique_ptr<ScoreFunction> score_21 = std::make_unique<BiasedGeneralScore>(4, 3, g);
         return std::make_unique<InteractiveCoAttention>(std::move(score_12), std::move(score_21));
     },
     .run = run_interactive,
     .reference = [](const Ref& r) {
         return interactive_co_attention_reference(r, CoScore::additive, CoScore::biased_general);
     },
     .masking = two_key_sets(),
     .properties = interactive_properties(true)},
});

// ---- 5 ----
Outputs run_parallel(Module* m, In x, Masks k) {
    const CoAttentionOutput o =
        as<ParallelCoAttention>(m).forward(x[0], x[1], mask_or_none(k, 0), mask_or_none(k, 1));
    Outputs out = co_outputs(o);
    out.push_back({"affinity", o.affinity});
    return out;
}
std::vector<Property> parallel_properties(bool masked) {
    std::vector<Property> p = two_sided_properties(masked);
    p.push_back(bounded("affinity", -1, 1));
    return p;
}
// A's rows belong to input 1 and its columns (last axis) to input 2; all of A
// is zero when either input is all padding.
std::vector<KeySet> parallel_key_sets() {
    std::vector<KeySet> k = two_key_sets();
    k[0].zero_when_empty.push_back("affinity");
    k[1].weights.push_back("affinity");
    return k;
}

const RegisterEntry parallel_entry(5, "parallel_co_attention", {
    {.variant = "bilinear affinity, d1 4 ≠ d2 3, d_w 5, n1 4 ≠ n2 3, both inputs padded",
     .inputs = {Shape{2, 4, 4}, Shape{2, 3, 3}},
     .masks = {padded4(), padded3()},
     .make = [](Generator& g) { return std::make_unique<ParallelCoAttention>(4, 3, 5, g); },
     .run = run_parallel,
     .reference = [](const Ref& r) { return parallel_co_attention_reference(r, false); },
     .masking = parallel_key_sets(),
     .properties = parallel_properties(true)},
    {.variant = "bilinear, square: d1 = d2 = d_w = 3, n1 = n2 = 3, no mask (A for Aᵀ, or W_Aᵀ, stays shape-valid)",
     .inputs = {Shape{2, 3, 3}, Shape{2, 3, 3}},
     .make = [](Generator& g) { return std::make_unique<ParallelCoAttention>(3, 3, 3, g); },
     .run = run_parallel,
     .reference = [](const Ref& r) { return parallel_co_attention_reference(r, false); },
     .properties = parallel_properties(false)},
    {.variant = "trilinear affinity (entry 6), d 3, d_w 2, n1 4 ≠ n2 3, both inputs padded",
     .inputs = {Shape{2, 4, 3}, Shape{2, 3, 3}},
     .masks = {padded4(), padded3()},
     .make = [](Generator& g) {
         std::unique_ptr<AffinityFunction> affinity = std::make_unique<TrilinearAffinity>(3, g);
         return std::make_unique<ParallelCoAttention>(std::move(affinity), 3, 3, 2, g);
     },
     .run = run_parallel,
     .reference = [](const Ref& r) { return parallel_co_attention_reference(r, true); },
     .masking = parallel_key_sets(),
     .properties = parallel_properties(true)},
    {.variant = "bilinear, only input 1 padded",
     .inputs = {Shape{2, 4, 4}, Shape{2, 3, 3}},
     .masks = {padded4(), Tensor()},
     .make = [](Generator& g) { return std::make_unique<ParallelCoAttention>(4, 3, 2, g); },
     .run = run_parallel,
     .reference = [](const Ref& r) { return parallel_co_attention_reference(r, false); },
     .masking = {parallel_key_sets()[0]},
     .properties = parallel_properties(true)},
});

// ---- 6 ----
Outputs run_trilinear(Module* m, In x, Masks) {
    return {{"affinity", as<TrilinearAffinity>(m).affinity(x[0], x[1])}};
}

const RegisterEntry trilinear_entry(6, "trilinear_affinity", {
    {.variant = "vectorised form, n1 3 ≠ n2 5, d 4",
     .inputs = {Shape{2, 3, 4}, Shape{2, 5, 4}},
     .make = [](Generator& g) { return std::make_unique<TrilinearAffinity>(4, g); },
     .run = run_trilinear,
     .reference = trilinear_affinity_reference},
    {.variant = "vectorised form, n1 = n2 = 3, d 3 (u for v, or K1 for K2, stays shape-valid)",
     .inputs = {Shape{2, 3, 3}, Shape{2, 3, 3}},
     .make = [](Generator& g) { return std::make_unique<TrilinearAffinity>(3, g); },
     .run = run_trilinear,
     .reference = trilinear_affinity_reference},
    {.variant = "the paper's concatenated form, n1 3 ≠ n2 5, d 4",
     .inputs = {Shape{2, 3, 4}, Shape{2, 5, 4}},
     .make = [](Generator& g) { return std::make_unique<TrilinearAffinity>(4, g); },
     .run = [](Module* m, In x, Masks) {
         return Outputs{{"affinity", as<TrilinearAffinity>(m).concatenated(x[0], x[1])}};
     },
     .reference = trilinear_affinity_reference},
});

// ---- 7 ----
// N(0, 1) affinities: no two entries of a row or column within the finite-difference step.
Outputs run_max_affinity(Module*, In x, Masks k) {
    return co_outputs(max_affinity_co_attention(x[0], x[1], x[2], mask_or_none(k, 0), mask_or_none(k, 1)));
}

const RegisterEntry max_affinity_entry(7, "max_affinity_co_attention", {
    {.variant = "A 4×3, values of widths 2 and 3, both inputs padded",
     .inputs = {Shape{2, 4, 3}, Shape{2, 4, 2}, Shape{2, 3, 3}},
     .masks = {padded4(), padded3()},
     .run = run_max_affinity,
     .reference = max_affinity_co_attention_reference,
     // A's rows go with input 1; its columns with input 2 (the last property)
     .masking = {{.mask = 0, .inputs = {0, 1}, .weights = {"weights1"},
                  .zero_when_empty = {"context1", "context2", "weights2"}},
                 {.mask = 1, .inputs = {2}, .weights = {"weights2"},
                  .zero_when_empty = {"context1", "context2", "weights1"}}},
     .properties = {rows_sum_to_one("weights1"), rows_sum_to_one("weights2"), convex_combination("context1", 1, 0),
                    convex_combination("context2", 2, 1), reordering_input_2_keeps_side_1(),
                    masked_columns_of_A_change_nothing()}},
    {.variant = "square: A 3×3, values of width 3, no mask (the max over the wrong axis stays shape-valid)",
     .inputs = {Shape{2, 3, 3}, Shape{2, 3, 3}, Shape{2, 3, 3}},
     .run = run_max_affinity,
     .reference = max_affinity_co_attention_reference,
     .properties = {reordering_input_2_keeps_side_1()}},
    {.variant = "only input 2 masked",
     .inputs = {Shape{2, 4, 3}, Shape{2, 4, 2}, Shape{2, 3, 3}},
     .masks = {Tensor(), keep_first({1, 2}, 3)},
     .run = run_max_affinity,
     .reference = max_affinity_co_attention_reference,
     .masking = {{.mask = 1, .inputs = {2}, .weights = {"weights2"},
                  .zero_when_empty = {"context1", "context2", "weights1"}}},
     .properties = {masked_columns_of_A_change_nothing(), reordering_input_2_keeps_side_1()}},
});

// ---- 8 ----
// The four quarters of [m_ca; m_cc; m_fa; m_fc], each branch's weights and U.
Outputs mgan_outputs(const MultiGrainedCoAttentionOutput& o, int64_t d) {
    return {{"m_ca", narrow(o.output, 1, 0, d)},     {"m_cc", narrow(o.output, 1, d, d)},
            {"m_fa", narrow(o.output, 1, 2 * d, d)}, {"m_fc", narrow(o.output, 1, 3 * d, d)},
            {"coarse_context", o.coarse_context},    {"coarse_aspect", o.coarse_aspect},
            {"fine_context", o.fine_context},        {"fine_aspect", o.fine_aspect},
            {"affinity", o.affinity}};
}

// A case over the outputs named: U, and F-C2A's rows for padded context words,
// move with the padding, so the cases with key sets leave them out.
Case mgan_case(std::string variant, std::vector<Shape> inputs, std::vector<Tensor> masks,
               std::vector<std::string> names, std::vector<KeySet> masking, std::vector<Property> properties) {
    const int64_t d = inputs[0][2];
    return {.variant = std::move(variant),
            .inputs = std::move(inputs),
            .masks = std::move(masks),
            .make = [d](Generator& g) { return std::make_unique<MultiGrainedCoAttention>(d, g); },
            .run = [names](Module* m, In x, Masks k) {
                auto& mgan = as<MultiGrainedCoAttention>(m);
                const auto o = mgan.forward(x[0], x[1], mask_or_none(k, 0), mask_or_none(k, 1));
                return pick(names, mgan_outputs(o, x[0].size(2)));
            },
            .reference = [names](const Ref& r) { return pick(names, multi_grained_co_attention_reference(r)); },
            .masking = std::move(masking),
            .properties = std::move(properties)};
}

const std::vector<std::string> kQuarters = {"m_ca", "m_cc", "m_fa", "m_fc"};
std::vector<std::string> quarters_and(std::vector<std::string> more) {
    std::vector<std::string> names = kQuarters;
    names.insert(names.end(), more.begin(), more.end());
    return names;
}

std::vector<Property> mgan_properties() {
    return {rows_sum_to_one("coarse_context"), rows_sum_to_one("coarse_aspect"), rows_sum_to_one("fine_context"),
            convex_combination("m_ca", 0, 0),  convex_combination("m_cc", 1, 1),  convex_combination("m_fa", 0, 0),
            convex_combination("m_fc", 1, 1)};
}

const RegisterEntry multi_grained_entry(8, "multi_grained_co_attention", {
    mgan_case("context n 4 ≠ aspect n_t 3, d 3, both padded: the quarters, C-A2C, C-C2A and F-A2C weights",
              {Shape{2, 4, 3}, Shape{2, 3, 3}}, {padded4(), padded3()},
              quarters_and({"coarse_context", "coarse_aspect", "fine_context"}),
              {{.mask = 0, .inputs = {0}, .weights = {"coarse_context", "fine_context"},
                .zero_when_empty = {"m_ca", "m_fa", "m_fc"}},
               {.mask = 1, .inputs = {1}, .weights = {"coarse_aspect"},
                .zero_when_empty = {"m_cc", "m_fa", "m_fc", "fine_context"}}},
              mgan_properties()),
    mgan_case("the same, with F-C2A's weights and U", {Shape{2, 4, 3}, Shape{2, 3, 3}}, {padded4(), padded3()},
              quarters_and({"fine_aspect", "affinity"}), {}, {rows_sum_to_one("fine_aspect")}),
    mgan_case("square: n = n_t = d = 3, no mask (U for Uᵀ, W_ca for W_cc stay shape-valid): every output",
              {Shape{2, 3, 3}, Shape{2, 3, 3}}, {},
              quarters_and({"coarse_context", "coarse_aspect", "fine_context", "fine_aspect", "affinity"}), {},
              {rows_sum_to_one("fine_aspect")}),
});

// ---- 9 ----
Outputs run_rotatory(Module* m, In x, Masks k) {
    const RotatoryAttentionOutput o =
        as<RotatoryAttention>(m).forward(x[0], x[1], x[2], mask_or_none(k, 0), mask_or_none(k, 1), mask_or_none(k, 2));
    return {{"output", o.output}, {"left", o.left}, {"right", o.right}, {"target_left", o.target_left},
            {"target_right", o.target_right}, {"weights_left", o.weights_left}, {"weights_right", o.weights_right},
            {"weights_target_left", o.weights_target_left}, {"weights_target_right", o.weights_target_right}};
}

// The left side never sees the right context, nor the right the left.
std::vector<Property> rotatory_properties(bool masked) {
    const int left = masked ? 0 : -1, target = masked ? 1 : -1, right = masked ? 2 : -1;
    return {rows_sum_to_one("weights_left"), rows_sum_to_one("weights_right"), rows_sum_to_one("weights_target_left"),
            rows_sum_to_one("weights_target_right"), convex_combination("left", 0, left),
            convex_combination("right", 2, right), convex_combination("target_left", 1, target),
            convex_combination("target_right", 1, target),
            independent_of(2, {"left", "target_left", "weights_left", "weights_target_left"}),
            independent_of(0, {"right", "target_right", "weights_right", "weights_target_right"})};
}

// left, target and right each masked by their own mask
const std::vector<KeySet> kRotatoryKeySets = {
    {.mask = 0, .inputs = {0}, .weights = {"weights_left"}, .zero_when_empty = {"left"}},
    {.mask = 1, .inputs = {1}, .weights = {"weights_target_left", "weights_target_right"},
     .zero_when_empty = {"target_left", "target_right"}},
    {.mask = 2, .inputs = {2}, .weights = {"weights_right"}, .zero_when_empty = {"right"}},
};

Case rotatory_case(std::string variant, std::vector<Shape> inputs, std::vector<Tensor> masks, int hops) {
    const int64_t d_l = inputs[0][2], d_t = inputs[1][2], d_r = inputs[2][2];
    const bool masked = !masks.empty();
    return {.variant = std::move(variant),
            .inputs = std::move(inputs),
            .masks = std::move(masks),
            .make = [=](Generator& g) { return std::make_unique<RotatoryAttention>(d_l, d_t, d_r, g, hops); },
            .run = run_rotatory,
            .reference = [hops](const Ref& r) { return rotatory_attention_reference(r, hops); },
            .masking = masked ? kRotatoryKeySets : std::vector<KeySet>{},
            .properties = rotatory_properties(masked)};
}

// n_l 4, n_t 3, n_r 2: example 0 keeps 3, 2, 1 of them, example 1 2, 3, 2.
std::vector<Tensor> rotatory_masks() { return {keep_first({3, 2}, 4), keep_first({2, 3}, 3), keep_first({1, 2}, 2)}; }

const RegisterEntry rotatory_entry(9, "rotatory_attention", {
    rotatory_case("one hop, widths d_l 3, d_t 2, d_r 4, n_l 4, n_t 3, n_r 2, all padded",
                  {Shape{2, 4, 3}, Shape{2, 3, 2}, Shape{2, 2, 4}}, rotatory_masks(), 1),
    rotatory_case("two hops: r^lt and r^rt query the contexts in hop 2; all padded",
                  {Shape{2, 4, 3}, Shape{2, 3, 2}, Shape{2, 2, 4}}, rotatory_masks(), 2),
    rotatory_case("three hops, square: every width and length 3, no mask (left for right, Wᵀ stay shape-valid)",
                  {Shape{2, 3, 3}, Shape{2, 3, 3}, Shape{2, 3, 3}}, {}, 3),
});

}  // namespace

// ---- the catalog's tests beyond the registry ----------------------------------------------------

namespace {

void check_equal(const Tensor& got, const Tensor& want) {
    REQUIRE(got.shape() == want.shape());
    for (int64_t i = 0; i < got.numel(); ++i) {
        INFO("index " << i);
        CHECK(got[i] == want[i]);
    }
}

}  // namespace

TEST_CASE("co-attention modules report their survey tags: co-attention or rotatory, not singular (entry 2)") {
    Generator gen(2);
    auto tags = [](const Taxonomy& t) { return t.multiplicity + " " + t.scoring + " " + t.query + " " + t.query_multiplicity; };
    CHECK(tags(AlternatingCoAttention(2, 2, 2, gen).taxonomy()) == "co-attention additive_score specialized singular");
    CHECK(tags(InteractiveCoAttention(2, 2, gen).taxonomy()) ==
          "co-attention activated_general_score specialized singular");
    CHECK(tags(ParallelCoAttention(2, 2, 2, gen).taxonomy()) == "co-attention additive_score specialized singular");
    CHECK(tags(MultiGrainedCoAttention(2, gen).taxonomy()) == "co-attention general_score specialized singular");
    CHECK(tags(RotatoryAttention(2, 2, 2, gen).taxonomy()) == "rotatory activated_general_score specialized singular");
    CHECK(tags(RotatoryAttention(2, 2, 2, gen, 3).taxonomy()) ==
          "rotatory activated_general_score specialized multi-hop");
    CHECK_FALSE(singular_features_attention(InteractiveCoAttention(2, 2, gen).taxonomy()));
    CHECK(singular_features_attention(ConstantQuerySelfAttention(2, 2, gen).taxonomy()));
}

TEST_CASE("interactive_co_attention: the two directions are independent: in the other order, bit-identical") {
    Generator gen(5);
    InteractiveCoAttention attention(4, 3, gen);
    const Var F1 = normal_var({2, 4, 4}, gen), F2 = normal_var({2, 3, 3}, gen);
    const Tensor m1 = length_mask({4, 3}, 4), m2 = length_mask({3, 2}, 3);
    const auto out = attention.forward(F1, F2, m1, m2);
    // input 2's direction first, then input 1's, by hand
    const Var e2 = attention.score_21().score(masked_mean(F1, m1), F2);
    const Var e1 = attention.score_12().score(masked_mean(F2, m2), F1);
    const Var a2 = softmax(e2, -1, SoftmaxMask::keep(key_mask(m2)));
    const Var a1 = softmax(e1, -1, SoftmaxMask::keep(key_mask(m1)));
    check_equal(reshape(a1, {2, 4}).value(), out.weights1.value());
    check_equal(reshape(a2, {2, 3}).value(), out.weights2.value());
    CHECK(attention.taxonomy().scoring == "activated_general_score");
}

TEST_CASE("parallel_co_attention: W_A = 0 is query-free additive pooling; swapping the inputs swaps the outputs") {
    Generator gen(6);
    ParallelCoAttention attention(4, 3, 5, gen);
    const Var F1 = normal_var({2, 4, 4}, gen), F2 = normal_var({2, 3, 3}, gen);
    const Tensor m1 = length_mask({4, 2}, 4), m2 = length_mask({3, 1}, 3);
    const auto out = attention.forward(F1, F2, m1, m2);

    // swap: (F1, F2) → (F2, F1) with W_A → W_Aᵀ, W_1 ↔ W_2, w_1 ↔ w_2
    Generator gen2(7);
    ParallelCoAttention swapped(3, 4, 5, gen2);
    auto& W_A = static_cast<BilinearAffinity&>(attention.affinity()).W_A;
    static_cast<BilinearAffinity&>(swapped.affinity()).W_A.value().copy_(transpose(W_A.value(), 0, 1));
    swapped.W_1.value().copy_(attention.W_2.value());
    swapped.W_2.value().copy_(attention.W_1.value());
    swapped.w_1.value().copy_(attention.w_2.value());
    swapped.w_2.value().copy_(attention.w_1.value());
    const auto back = swapped.forward(F2, F1, m2, m1);
    check_close(back.context1.value(), out.context2.value());
    check_close(back.context2.value(), out.context1.value());
    check_close(back.weights1.value(), out.weights2.value());

    // W_A = 0: each side is entry 35 with b = 0 (e_l = wᵀ tanh(W k_l))
    W_A.value().fill_(0);
    const auto flat_out = attention.forward(F1, F2, m1, m2);
    ConstantQuerySelfAttention pool1(4, 5, gen), pool2(3, 5, gen);
    pool1.W.value().copy_(attention.W_1.value());
    pool1.w.value().copy_(attention.w_1.value());
    pool1.b.value().fill_(0);
    pool2.W.value().copy_(attention.W_2.value());
    pool2.w.value().copy_(attention.w_2.value());
    pool2.b.value().fill_(0);
    check_close(reshape(pool1.forward(F1, m1).output, {2, 4}).value(), flat_out.context1.value());
    check_close(reshape(pool2.forward(F2, m2).weights, {2, 3}).value(), flat_out.weights2.value());
}

TEST_CASE("trilinear_affinity: u = v = 0 and z = 1 give the dot product K1 K2ᵀ") {
    Generator gen(8);
    TrilinearAffinity trilinear(3, gen);
    const Var K1 = normal_var({2, 4, 3}, gen), K2 = normal_var({2, 5, 3}, gen);
    trilinear.w_A.value().copy_(Tensor::from({0, 0, 0, 0, 0, 0, 1, 1, 1}));
    check_close(trilinear.affinity(K1, K2).value(), matmul(K1, K2, false, true).value());
    check_close(trilinear.concatenated(K1, K2).value(), matmul(K1, K2, false, true).value());
    CHECK_THROWS_AS(trilinear.affinity(K1, normal_var({2, 5, 4}, gen)), std::invalid_argument);
}

TEST_CASE("max_affinity_co_attention: the gradient reaches A only at the arg-max, ties going to the lowest index") {
    Generator gen(9);
    const Var V1 = normal_var({1, 3, 2}, gen), V2 = normal_var({1, 4, 2}, gen);
    // a tie in row 0 (columns 1 and 3): the gradient goes to column 1
    const Var T(Tensor::from({0.1, 0.9, -0.3, 0.9, 0.5, -1.0, 0.2, 0.4, -0.6, 0.3, 0.8, 0.0}, {1, 3, 4}), true);
    sum(max_affinity_co_attention(T, V1, V2).context1).backward();
    const Tensor g = T.grad();
    const std::vector<int64_t> argmax{1, 0, 2};  // per row
    for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 4; ++j) {
            INFO("row " << i << " column " << j);
            if (j == argmax[static_cast<size_t>(i)]) CHECK(g[i * 4 + j] != 0);
            else CHECK(g[i * 4 + j] == 0);
        }
}

TEST_CASE("multi_grained_co_attention: coarse quarters are entry 4 with bilinear scores, F-A2C is entry 7") {
    Generator gen(11);
    MultiGrainedCoAttention mgan(3, gen);
    const Var H = normal_var({2, 4, 3}, gen), T = normal_var({2, 2, 3}, gen);
    const Tensor mh = length_mask({4, 3}, 4), mt = length_mask({2, 1}, 2);
    const auto out = mgan.forward(H, T, mh, mt);
    CHECK(out.output.shape() == Shape{2, 12});
    const Tensor y = out.output.value();

    Generator gen2(12);
    auto s12 = std::make_unique<GeneralScore>(3, 3, gen2);
    auto s21 = std::make_unique<GeneralScore>(3, 3, gen2);
    s12->W.value().copy_(static_cast<GeneralScore&>(mgan.coarse().score_12()).W.value());
    s21->W.value().copy_(static_cast<GeneralScore&>(mgan.coarse().score_21()).W.value());
    InteractiveCoAttention ian(std::move(s12), std::move(s21));
    const Tensor coarse = ian.forward(H, T, mh, mt).output.value();  // B×2d
    const Tensor fine =
        max_affinity_co_attention(mgan.fine().affinity(H, T), H, T, mh, mt).context1.value();  // B×d
    for (int64_t b = 0; b < 2; ++b)
        for (int64_t k = 0; k < 3; ++k) {
            CHECK(y[b * 12 + k] == doctest::Approx(coarse[b * 6 + k]).epsilon(1e-12));
            CHECK(y[b * 12 + 3 + k] == doctest::Approx(coarse[b * 6 + 3 + k]).epsilon(1e-12));
            CHECK(y[b * 12 + 6 + k] == doctest::Approx(fine[b * 3 + k]).epsilon(1e-12));
        }

}

TEST_CASE("rotatory_attention: an empty left context gives r^l = 0 and r^lt = the target's mean; identical rows return that row") {
    Generator gen(13);
    RotatoryAttention rot(3, 2, 4, gen);
    const Var L = normal_var({1, 3, 3}, gen), T = normal_var({1, 2, 2}, gen), R = normal_var({1, 4, 4}, gen);
    // n_l = 0 by padding: every left position masked
    const auto out = rot.forward(L, T, R, Tensor::zeros({1, 3}));
    for (int64_t k = 0; k < 3; ++k) CHECK(out.left.value()[k] == 0);
    const Tensor t = T.value();
    for (int64_t k = 0; k < 2; ++k)
        CHECK(out.target_left.value()[k] == doctest::Approx((t[k] + t[2 + k]) / 2).epsilon(1e-12));
    for (int64_t k = 0; k < out.output.numel(); ++k) CHECK(std::isfinite(out.output.value()[k]));

    // a left context with no rows at all
    const auto empty = rot.forward(Var(Tensor::zeros({1, 0, 3})), T, R);
    for (int64_t k = 0; k < 3; ++k) CHECK(empty.left.value()[k] == 0);
    check_close(empty.target_left.value(), out.target_left.value());

    // a context made of identical rows returns that row
    const Var same(Tensor::from({0.3, -1.2, 0.7, 0.3, -1.2, 0.7, 0.3, -1.2, 0.7}, {1, 3, 3}));
    check_close(rot.forward(same, T, R).left.value(), Tensor::from({0.3, -1.2, 0.7}, {1, 3}));
}

TEST_CASE("co-attention: shape mismatches throw, naming the mechanism and the shapes") {
    Generator gen(14);
    AlternatingCoAttention alt(4, 3, 2, gen);
    const Var F1 = normal_var({2, 3, 4}, gen), F2 = normal_var({3, 2, 3}, gen);
    try {
        alt.forward(F1, F2);
        FAIL("no exception");
    } catch (const std::invalid_argument& e) {
        const std::string what = e.what();
        CHECK(what.find("alternating_co_attention") != std::string::npos);
        CHECK(what.find(F1.shape().str()) != std::string::npos);
        CHECK(what.find(F2.shape().str()) != std::string::npos);
    }
    CHECK_THROWS_AS(ParallelCoAttention(4, 3, 2, gen).forward(F1, normal_var({2, 2, 5}, gen)), std::invalid_argument);
    CHECK_THROWS_AS(max_affinity_co_attention(normal_var({2, 3, 3}, gen), F1, normal_var({2, 2, 3}, gen)),
                    std::invalid_argument);
    CHECK_THROWS_AS(InteractiveCoAttention(4, 3, gen).forward(F1, normal_var({2, 2, 3}, gen), length_mask({1, 1}, 2)),
                    std::invalid_argument);
    // a mask that does not fit its input (B×n), for every mechanism with masks
    const Var G2 = normal_var({2, 2, 3}, gen), H = normal_var({2, 3, 3}, gen);
    const Tensor wrong = length_mask({1, 1}, 4);
    CHECK_THROWS_AS(alt.forward(F1, G2, Tensor(), wrong), std::invalid_argument);
    CHECK_THROWS_AS(ParallelCoAttention(4, 3, 2, gen).forward(F1, G2, wrong), std::invalid_argument);
    CHECK_THROWS_AS(max_affinity_co_attention(normal_var({2, 3, 2}, gen), F1, G2, Tensor(), wrong),
                    std::invalid_argument);
    CHECK_THROWS_AS(MultiGrainedCoAttention(3, gen).forward(H, G2, wrong), std::invalid_argument);
    CHECK_THROWS_AS(MultiGrainedCoAttention(3, gen).forward(H, normal_var({2, 2, 4}, gen)), std::invalid_argument);
    RotatoryAttention rot(4, 3, 3, gen);
    CHECK_THROWS_AS(rot.forward(F1, G2, H, Tensor(), Tensor(), wrong), std::invalid_argument);
    CHECK_THROWS_AS(rot.forward(F1, normal_var({2, 2, 2}, gen), H), std::invalid_argument);  // a target 2 wide, not 3
    CHECK_THROWS_AS(RotatoryAttention(2, 2, 2, gen, 0), std::invalid_argument);
}
