// Pooling, set functions and gating, catalog entries 74–80 (attention/pooling.hpp):
// the registry entries (tests/grad/catalog.hpp), whose independent references
// are in test_pooling_reference.cpp, and the catalog's hand-computed values,
// tie rules and statistical test in double precision (atol 1e-6).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/pooling.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/catalog.hpp"
#include "tests/grad/helpers.hpp"
#include "tests/grad/test_pooling_reference.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

SetPool set_pool(SetAggregate how) {
    switch (how) {
        case SetAggregate::sum: return SetPool::sum;
        case SetAggregate::mean: return SetPool::mean;
        case SetAggregate::max: return SetPool::max;
    }
    return SetPool::sum;
}

// stochastic_pooling draws from a generator: the case holds it in a module,
// which the framework reseeds with the case's noise_seed before every run.
class StochasticPool : public Module {
public:
    StochasticPool(Generator& gen, Size2 kernel, Size2 stride) : gen_(gen), kernel_(kernel), stride_(stride) {}
    Var forward(const Var& U) { return stochastic_pooling(U, kernel_, stride_, gen_, is_training()); }

private:
    Generator& gen_;
    Size2 kernel_, stride_;
};

// ---- inputs and properties of the registry cases ------------------------------------------

// Small integers 0, 1, 2: many ties, for the tie rules (no gradient check there).
Draw ties(Shape s) {
    return [=](Generator& gen) {
        Tensor t = Tensor::zeros(s);
        for (int64_t i = 0; i < t.numel(); ++i) t[i] = real(gen.randint(3));
        return std::vector<Tensor>{t};
    };
}

// Activations after a ReLU: U(0.1, 2), or with zero_windows the first 2×2
// window of every plane and one more element set to 0.
Draw activations(Shape s, bool zero_windows = false) {
    return [=](Generator& gen) {
        Tensor t = Tensor::uniform(s, 0.1, 2, gen);
        if (zero_windows) {
            const int64_t H = s[2], W = s[3];
            for (int64_t q = 0; q < s[0] * s[1]; ++q) {
                for (int64_t i : {int64_t{0}, int64_t{1}, W, W + 1}) t[q * H * W + i] = 0;
                t[q * H * W + W + 3] = 0;
            }
        }
        return std::vector<Tensor>{t};
    };
}

// x with its rows (axis 1) reversed.
Tensor reverse_rows(const Tensor& x) {
    const int64_t B = x.size(0), n = x.size(1), inner = x.numel() / (B * n);
    Tensor out = Tensor::zeros(x.shape());
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < n; ++i)
            for (int64_t k = 0; k < inner; ++k) out[(b * n + n - 1 - i) * inner + k] = x[(b * n + i) * inner + k];
    return out;
}

// The equivariant layer: reversing the rows of X (and of its mask) reverses the rows of `output`.
Property rows_move_with_input(const std::string& output) {
    return {"reversing the set's rows reverses " + output + "'s rows", [output](const PropertyContext& c) {
                std::vector<Tensor> x = c.inputs, m = c.masks;
                x[0] = reverse_rows(x[0]);
                if (!m.empty()) m[0] = reverse_rows(m[0]);
                return differs(output + " of the reversed set", reverse_rows(c.run(c.inputs, c.masks)[output]),
                               c.run(x, m)[output]);
            }};
}

// 75: k = 1 is max pooling.
Property k_of_one_is_max() {
    return {"k = 1 is max pooling", [](const PropertyContext& c) {
                const Var X(c.inputs[0]);
                const Tensor mask = c.masks.empty() ? Tensor() : c.masks[0];
                const Tensor top = max_pooling(X, mask).value();
                return differs("k_max_pooling with k = 1", top, k_max_pooling(X, 1, mask).value().reshape(top.shape()));
            }};
}

// 76: one chunk is max pooling; n chunks of an unmasked set are the set itself.
Property one_chunk_is_max_n_chunks_identity() {
    return {"c = 1 is max pooling, c = n the identity", [](const PropertyContext& c) {
                const Var X(c.inputs[0]);
                const Tensor mask = c.masks.empty() ? Tensor() : c.masks[0];
                const Tensor top = max_pooling(X, mask).value();
                std::string err = differs("one chunk", top, chunk_max_pooling(X, 1, mask).value().reshape(top.shape()));
                if (err.empty()) err = differs("n chunks", X.value(), chunk_max_pooling(X, X.size(1)).value());
                return err;
            }};
}

// 77, training: every output is one of its window's values.
Property one_of_its_window(Size2 kernel, Size2 stride) {
    return {"a training output is one of its window's values", [=](const PropertyContext& c) -> std::string {
                const Array U(c.inputs[0]), s(c.run(c.inputs, c.masks)["output"]);
                for (int64_t b = 0; b < s.size(0); ++b)
                    for (int64_t ch = 0; ch < s.size(1); ++ch)
                        for (int64_t i = 0; i < s.size(2); ++i)
                            for (int64_t j = 0; j < s.size(3); ++j) {
                                bool found = false;
                                for (int64_t u = 0; u < kernel.h; ++u)
                                    for (int64_t v = 0; v < kernel.w; ++v)
                                        found = found || U(b, ch, i * stride.h + u, j * stride.w + v) == s(b, ch, i, j);
                                if (!found)
                                    return "output " + std::to_string(s(b, ch, i, j)) +
                                           " is in no element of its window";
                            }
                return "";
            }};
}

// 78: the output's length does not depend on H or W.
Property length_independent_of_size() {
    return {"the same length for a larger map", [](const PropertyContext& c) -> std::string {
                const Tensor& U = c.inputs[0];
                Generator gen(78);
                const Shape larger{U.size(0), U.size(1), U.size(2) + 3, U.size(3) + 5};
                const Shape a = c.run(c.inputs, c.masks)["output"].shape();
                const Shape b = c.run({Tensor::normal(larger, 0, 1, gen)}, c.masks)["output"].shape();
                return a == b ? "" : "length " + b.str() + " on a larger map, " + a.str() + " on the case's";
            }};
}

// ---- the registry entries ---------------------------------------------------------------------

// Two sets of 5 with a mask that is not a prefix: example 0 keeps rows 0, 2, 3;
// example 1 keeps rows 1, 2, 4.
Tensor scattered_mask() { return Tensor::from({1, 0, 1, 1, 0, 0, 1, 1, 0, 1}, Shape{2, 5}); }

Outputs pooled(const SumMeanMaxPooled& p) { return {{"sum", p.sum}, {"mean", p.mean}, {"max", p.max}}; }
Outputs output(const Var& v) { return {{"output", v}}; }
std::vector<Expected> expect_output(Array a) { return {{"output", std::move(a)}}; }

// The rows of input 0 are the keys of mask 0; kSetMask's output is 0 for an empty set.
const KeySet kRowsMask{.mask = 0, .inputs = {0}, .weights = {}};
const KeySet kSetMask{.mask = 0, .inputs = {0}, .weights = {}, .zero_when_empty = {"output"}};

Case sum_mean_max_case(std::string variant, Shape shape, std::vector<Tensor> masks = {}) {
    const std::vector<std::string> all = {"sum", "mean", "max"};
    return {.variant = std::move(variant),
            .inputs = {shape},
            .masks = masks,
            .run = [](Module*, In x, Masks m) { return pooled(sum_mean_max_pooling(x[0], mask_or_none(m))); },
            .reference = sum_mean_max_pooling_reference,
            .masking = masks.empty() ? std::vector<KeySet>{}
                                     : std::vector<KeySet>{{.mask = 0, .inputs = {0}, .weights = {}, .zero_when_empty = all}},
            .properties = {permutation_invariant({0}, masks.empty() ? std::vector<int>{} : std::vector<int>{0}, all)},
            .draw = distinct({shape})};
}

const RegisterEntry sum_mean_max_entry(74, "sum_mean_max_pooling", {
    sum_mean_max_case("n 5 of 3, no mask", Shape{2, 5, 3}),
    sum_mean_max_case("lengths 4, 2 and 0 of n 4 (an empty set gives 0)", Shape{3, 4, 3}, {keep_first({4, 2, 0}, 4)}),
    sum_mean_max_case("a scattered mask (rows 0, 2, 3 and 1, 2, 4 of 5), d 6", Shape{2, 5, 6}, {scattered_mask()}),
});

Case k_max_case(std::string variant, Shape shape, int64_t k, std::vector<Tensor> masks = {}) {
    return {.variant = std::move(variant),
            .inputs = {shape},
            .masks = masks,
            .run = [k](Module*, In x, Masks m) { return output(k_max_pooling(x[0], k, mask_or_none(m))); },
            .reference = [k](const Ref& r) { return expect_output(k_max_pooling_reference(r, k)); },
            .masking = masks.empty() ? std::vector<KeySet>{} : std::vector<KeySet>{kSetMask},
            .properties = {k_of_one_is_max()},
            .draw = distinct({shape})};
}

Case k_max_ties() {
    Case c = k_max_case("ties (values 0, 1, 2): the earlier row wins; lengths 7 and 5", Shape{2, 7, 4}, 3,
                        {keep_first({7, 5}, 7)});
    c.draw = ties(Shape{2, 7, 4});
    c.check_gradient = false;  // a tie is a kink
    return c;
}

Case dynamic_k_case() {
    // Layer 1 of 3 on sentences of 7: k = max(2, ⌈(3 − 1)/3 · 7⌉) = 5.
    Case c = k_max_case("dynamic k for layer 1 of 3 and length 7 (k 5), n 7 of 3", Shape{2, 7, 3}, 0);
    c.run = [](Module*, In x, Masks) { return output(k_max_pooling(x[0], dynamic_k(2, 1, 3, x[0].size(1)))); };
    c.reference = [](const Ref& r) {
        return expect_output(k_max_pooling_reference(r, dynamic_k_reference(2, 1, 3, 7)));
    };
    return c;
}

const RegisterEntry k_max_entry(75, "k_max_pooling", {
    k_max_case("k 3 of n 6, d 4, no mask", Shape{2, 6, 4}, 3),
    k_max_case("k 3, lengths 6 and 2 (zero-padded at the end)", Shape{2, 6, 3}, 3, {keep_first({6, 2}, 6)}),
    k_max_case("k 4 of n 3: every column zero-padded", Shape{2, 3, 2}, 4),
    k_max_case("k 2, a scattered mask", Shape{2, 5, 3}, 2, {scattered_mask()}),
    dynamic_k_case(),
    k_max_ties(),
});

Case chunk_case(std::string variant, Shape shape, int64_t chunks, std::vector<Tensor> masks = {}) {
    return {.variant = std::move(variant),
            .inputs = {shape},
            .masks = masks,
            .run = [chunks](Module*, In x, Masks m) {
                return output(chunk_max_pooling(x[0], chunks, mask_or_none(m)));
            },
            .reference = [chunks](const Ref& r) { return expect_output(chunk_max_pooling_reference(r, chunks)); },
            .masking = masks.empty() ? std::vector<KeySet>{} : std::vector<KeySet>{kSetMask},
            .properties = {one_chunk_is_max_n_chunks_identity()},
            .draw = distinct({shape})};
}

Case boundaries_case(Shape shape, std::vector<int64_t> boundaries) {
    std::string name = "boundaries (";
    for (size_t j = 0; j < boundaries.size(); ++j) name += (j ? ", " : "") + std::to_string(boundaries[j]);
    return {.variant = name + ")",
            .inputs = {shape},
            .run = [boundaries](Module*, In x, Masks) { return output(chunk_max_pooling(x[0], boundaries)); },
            .reference = [boundaries](const Ref& r) {
                return expect_output(chunk_max_pooling_reference(r, boundaries));
            },
            .draw = distinct({shape})};
}

const RegisterEntry chunk_max_entry(76, "chunk_max_pooling", {
    chunk_case("3 chunks of n 7 (3, 2, 2), no mask", Shape{2, 7, 3}, 3),
    chunk_case("3 chunks of lengths 7 and 4 (2, 1, 1)", Shape{2, 7, 3}, 3, {keep_first({7, 4}, 7)}),
    chunk_case("4 chunks of lengths 5 and 2: empty chunks give 0", Shape{2, 5, 3}, 4, {keep_first({5, 2}, 5)}),
    chunk_case("2 chunks of a scattered mask", Shape{2, 5, 3}, 2, {scattered_mask()}),
    boundaries_case(Shape{2, 6, 2}, {0, 1, 4, 6}),
    boundaries_case(Shape{3, 5, 3}, {0, 3, 5}),
});

Case stochastic_case(std::string variant, Shape shape, Size2 kernel, Size2 stride, bool training,
                     bool zero_windows = false) {
    const Size2 step(stride.h ? stride.h : kernel.h, stride.w ? stride.w : kernel.w);
    Case c{.variant = std::move(variant),
           .inputs = {shape},
           .make = [=](Generator& g) { return std::make_unique<StochasticPool>(g, kernel, stride); },
           .run = [](Module* m, In x, Masks) { return output(as<StochasticPool>(m).forward(x[0])); },
           .reference = [=](const Ref& r) {
               return expect_output(stochastic_pooling_reference(r, {kernel.h, kernel.w, step.h, step.w}));
           },
           .draw = activations(shape, zero_windows),
           .training = training};
    if (training) c.properties = {one_of_its_window(kernel, step)};
    c.check_gradient = !zero_windows;  // a zero activation has no two-sided difference
    return c;
}

const RegisterEntry stochastic_entry(77, "stochastic_pooling", {
    stochastic_case("test: 2×2 windows, stride 1 (overlapping), 3×4 maps, C 2", Shape{2, 2, 3, 4}, 2, 1, false),
    stochastic_case("test: 2×3 windows, stride (1, 2), 4×7 maps, C 3", Shape{2, 3, 4, 7}, Size2(2, 3), Size2(1, 2),
                    false),
    stochastic_case("training: 2×2 windows, stride 0 (the kernel), 4×6 maps, C 3", Shape{2, 3, 4, 6}, 2, 0, true),
    stochastic_case("training: 3×2 windows, stride (1, 2), 5×4 maps, C 2", Shape{2, 2, 5, 4}, Size2(3, 2),
                    Size2(1, 2), true),
    stochastic_case("test: all-zero windows give 0, 4×5 maps", Shape{2, 3, 4, 5}, 2, 1, false, true),
    stochastic_case("training: all-zero windows give 0, 4×5 maps", Shape{2, 3, 4, 5}, 2, 1, true, true),
});

Case pyramid_case(std::string variant, Shape shape, std::vector<int64_t> levels) {
    return {.variant = std::move(variant),
            .inputs = {shape},
            .run = [levels](Module*, In x, Masks) { return output(spatial_pyramid_pooling(x[0], levels)); },
            .reference = [levels](const Ref& r) { return expect_output(spatial_pyramid_pooling_reference(r, levels)); },
            .properties = {length_independent_of_size()},
            .draw = distinct({shape})};
}

const RegisterEntry spp_entry(78, "spatial_pyramid_pooling", {
    pyramid_case("levels {1, 2, 3}, C 2, 5×4 maps (overlapping bins)", Shape{2, 2, 5, 4}, {1, 2, 3}),
    pyramid_case("levels {2, 4}, C 3, 7×6 maps", Shape{2, 3, 7, 6}, {2, 4}),
    pyramid_case("levels {3, 1} (largest first), C 2, 3×4 maps", Shape{2, 2, 3, 4}, {3, 1}),
});

Case deep_sets_case(std::string variant, Shape shape, int64_t hidden, int64_t out, SetAggregate how,
                    std::vector<Tensor> masks = {}) {
    const int64_t d = shape[2];
    return {.variant = std::move(variant),
            .inputs = {shape},
            .masks = masks,
            .make = [=](Generator& g) { return std::make_unique<DeepSetsPooling>(d, hidden, out, g, how); },
            .run = [](Module* m, In x, Masks mk) {
                return output(as<DeepSetsPooling>(m).forward(x[0], mask_or_none(mk)));
            },
            .reference = [how](const Ref& r) { return expect_output(deep_sets_pooling_reference(r, set_pool(how))); },
            .masking = masks.empty() ? std::vector<KeySet>{} : std::vector<KeySet>{kRowsMask},
            .properties = {permutation_invariant({0}, masks.empty() ? std::vector<int>{} : std::vector<int>{0},
                                                 {"output"})},
            .draw = distinct({shape})};
}

Case equivariant_case(std::string variant, Shape shape, int64_t out, SetAggregate how,
                      std::vector<Tensor> masks = {}) {
    const int64_t d = shape[2];
    return {.variant = "the equivariant layer: " + variant,
            .inputs = {shape},
            .masks = masks,
            .make = [=](Generator& g) { return std::make_unique<DeepSetsEquivariant>(d, out, g, how); },
            .run = [](Module* m, In x, Masks mk) {
                return output(as<DeepSetsEquivariant>(m).forward(x[0], mask_or_none(mk)));
            },
            .reference = [how](const Ref& r) {
                return expect_output(deep_sets_equivariant_reference(r, set_pool(how)));
            },
            .masking = masks.empty() ? std::vector<KeySet>{} : std::vector<KeySet>{kSetMask},
            .properties = {rows_move_with_input("output")},
            .draw = distinct({shape})};
}

const RegisterEntry deep_sets_entry(79, "deep_sets_pooling", {
    deep_sets_case("sum, n 5 of 3, h 4, d_out 2, lengths 5 and 3", Shape{2, 5, 3}, 4, 2, SetAggregate::sum,
                   {keep_first({5, 3}, 5)}),
    deep_sets_case("mean, a scattered mask", Shape{2, 5, 3}, 4, 2, SetAggregate::mean, {scattered_mask()}),
    deep_sets_case("max (PointNet), a scattered mask", Shape{2, 5, 3}, 4, 2, SetAggregate::max, {scattered_mask()}),
    deep_sets_case("sum, square layers (d = h = d_out = 3), no mask", Shape{2, 4, 3}, 3, 3, SetAggregate::sum),
    equivariant_case("sum, d 3 → 2, lengths 5 and 3", Shape{2, 5, 3}, 2, SetAggregate::sum, {keep_first({5, 3}, 5)}),
    equivariant_case("max, d 3 → 4, a scattered mask", Shape{2, 5, 3}, 4, SetAggregate::max, {scattered_mask()}),
    equivariant_case("sum, square Λ and Γ (3×3), no mask", Shape{2, 4, 3}, 3, SetAggregate::sum),
    equivariant_case("mean, d 3 → 2, lengths 5 and 2", Shape{2, 5, 3}, 2, SetAggregate::mean,
                     {keep_first({5, 2}, 5)}),
});

const std::vector<Property> kGatesBounded = {bounded("update_gates", 0, 1), bounded("reset_gates", 0, 1)};
Outputs gru_outputs(const GruGatingOutput& o) {
    return {{"states", o.states}, {"update_gates", o.update_gates}, {"reset_gates", o.reset_gates}};
}

const RegisterEntry gru_entry(80, "gru_gating", {
    {.variant = "5 steps, d_x 2, d_h 3, a given h_0",
     .inputs = {Shape{2, 5, 2}, Shape{2, 3}},
     .make = [](Generator& g) { return std::make_unique<GruGating>(2, 3, g); },
     .run = [](Module* m, In x, Masks) { return gru_outputs(as<GruGating>(m).forward(x[0], x[1])); },
     .reference = gru_gating_reference,
     .properties = kGatesBounded},
    {.variant = "4 steps, h_0 = 0, lengths 4 and 2, d_x 2, d_h 4",
     .inputs = {Shape{2, 4, 2}},
     .masks = {keep_first({4, 2}, 4)},
     .make = [](Generator& g) { return std::make_unique<GruGating>(2, 4, g); },
     .run = [](Module* m, In x, Masks mk) { return gru_outputs(as<GruGating>(m).forward(x[0], Var(), mk[0])); },
     .reference = gru_gating_reference,
     .masking = {{.mask = 0,
                  .inputs = {0},
                  .weights = {},
                  .zero_when_empty = {"states", "update_gates", "reset_gates"}}},
     .properties = kGatesBounded},
    {.variant = "square W and U (d_x = d_h = 3), a given h_0, a masked step in the middle",
     .inputs = {Shape{2, 4, 3}, Shape{2, 3}},
     .masks = {Tensor::from({1, 0, 1, 1, 1, 1, 0, 1}, Shape{2, 4})},
     .make = [](Generator& g) { return std::make_unique<GruGating>(3, 3, g); },
     .run = [](Module* m, In x, Masks mk) { return gru_outputs(as<GruGating>(m).forward(x[0], x[1], mk[0])); },
     .reference = gru_gating_reference,
     .masking = {{.mask = 0, .inputs = {0}, .weights = {}, .zero_when_empty = {"update_gates", "reset_gates"}}}},
});

// ---- the hand-computed tests -------------------------------------------------------------------

// The catalog's column (3, 1, 4, 1, 5, 9, 2, 6) as a 1×8×1 set.
Var catalog_column() { return Var(Tensor::from({3, 1, 4, 1, 5, 9, 2, 6}, {1, 8, 1})); }

}  // namespace

// ---- 74. sum_mean_max_pooling -----------------------------------------------------------------

TEST_CASE("sum_mean_max_pooling: mean is attention with equal scores; an empty set gives 0") {
    Generator gen(74);
    const Tensor X = normal({2, 5, 3}, gen);
    const Tensor keep = length_mask({5, 3}, 5);
    const SumMeanMaxPooled p = sum_mean_max_pooling(Var(X), keep);

    // The mean is soft attention with all-equal scores.
    const Var weights = softmax(Var(Tensor::zeros({2, 1, 5})), -1, SoftmaxMask::keep(key_mask(keep)));
    const Tensor attended = reshape(attend(weights, Var(X)).value(), {2, 3});
    CHECK(allclose(attended, p.mean.value(), 0, 1e-12));

    // An empty set gives 0 for all three.
    const SumMeanMaxPooled empty = sum_mean_max_pooling(Var(X), length_mask({0, 0}, 5));
    for (const Var& v : {empty.sum, empty.mean, empty.max}) CHECK(allclose(v.value(), Tensor::zeros({2, 3}), 0, 0));
}

TEST_CASE("sum_mean_max_pooling: the max's gradient goes only to the arg-max row, the first on a tie") {
    const Var X(Tensor::from({1, 7, 7, 2, 7, 0}, {1, 3, 2}), true);  // column 0: (1, 7, 7), column 1: (7, 2, 0)
    sum(max_pooling(X)).backward();
    check_close(X.grad(), {0, 1, 1, 0, 0, 0});
}

// ---- 75. k_max_pooling ------------------------------------------------------------------------

TEST_CASE("k_max_pooling: the catalog's column with k = 3 gives (5, 9, 6); k = 1 is max pooling; ties; padding") {
    check_close(k_max_pooling(catalog_column(), 3).value(), {5, 9, 6});
    Generator gen(75);
    const Var X(normal({2, 6, 3}, gen));
    CHECK(allclose(reshape(k_max_pooling(X, 1).value(), {2, 3}), max_pooling(X).value(), 0, 0));

    // Column (2, 5, 2, 1) with k = 2: the tie at 2 goes to row 0.
    const Var tie(Tensor::from({2, 5, 2, 1}, {1, 4, 1}), true);
    const Var out = k_max_pooling(tie, 2);
    check_close(out.value(), {2, 5});
    sum(out).backward();
    check_close(tie.grad(), {1, 1, 0, 0});

    // Two kept rows for k = 3: zero-padded at the end (the masked row is out).
    check_close(k_max_pooling(Var(Tensor::from({4, 9, 8}, {1, 3, 1})), 3, length_mask({2}, 3)).value(), {4, 9, 0});

    CHECK(dynamic_k(3, 1, 3, 18) == 12);
    CHECK(dynamic_k(3, 2, 3, 18) == 6);
    CHECK(dynamic_k(3, 3, 3, 18) == 3);
    CHECK(dynamic_k(4, 1, 2, 5) == 4);
    CHECK_THROWS_WITH_AS(k_max_pooling(catalog_column(), 0), doctest::Contains("k = 0"), std::invalid_argument);
}

// ---- 76. chunk_max_pooling --------------------------------------------------------------------

TEST_CASE("chunk_max_pooling: the catalog's column in 2 chunks gives (4, 9); c = 1 is max; c = n is the identity") {
    check_close(chunk_max_pooling(catalog_column(), 2).value(), {4, 9});
    check_close(chunk_max_pooling(catalog_column(), 3).value(), {4, 9, 6});  // chunks of 3, 3, 2
    check_close(chunk_max_pooling(catalog_column(), 1).value(), {9});
    check_close(chunk_max_pooling(catalog_column(), 8).value(), {3, 1, 4, 1, 5, 9, 2, 6});
    // Only the first 5 kept: (3, 1, 4 | 1, 5).
    check_close(chunk_max_pooling(catalog_column(), 2, length_mask({5}, 8)).value(), {4, 5});
    check_close(chunk_max_pooling(catalog_column(), std::vector<int64_t>{0, 5, 6, 8}).value(), {5, 9, 6});
    CHECK_THROWS_AS(chunk_max_pooling(catalog_column(), std::vector<int64_t>{0, 5, 5, 8}), std::invalid_argument);
    CHECK_THROWS_AS(chunk_max_pooling(catalog_column(), std::vector<int64_t>{0, 5, 7}), std::invalid_argument);
    CHECK_THROWS_AS(chunk_max_pooling(catalog_column(), int64_t{0}), std::invalid_argument);
}

// ---- 77. stochastic_pooling -------------------------------------------------------------------

TEST_CASE("stochastic_pooling: region (1, 2, 3, 4) gives 3.0 at test time; training picks a region value") {
    const Var U(Tensor::from({1, 2, 3, 4}, {1, 1, 2, 2}));
    Generator gen(77);
    check_close(stochastic_pooling(U, 2, 0, gen, false).value(), {3.0});
    for (int i = 0; i < 20; ++i) {
        const real s = stochastic_pooling(U, 2, 0, gen, true).item();
        CHECK((s == 1 || s == 2 || s == 3 || s == 4));
    }
    // 10⁵ training draws (one window each, side by side): the mean is within 0.01 of 3.0.
    const int64_t n = 100000;
    Tensor many = Tensor::zeros({1, 1, 2, 2 * n});
    for (int64_t w = 0; w < n; ++w) {
        many[2 * w] = 1, many[2 * w + 1] = 2;
        many[2 * n + 2 * w] = 3, many[2 * n + 2 * w + 1] = 4;
    }
    const real mean_draw = mean(stochastic_pooling(Var(many), 2, 0, gen, true).value()).item();
    CHECK(std::abs(mean_draw - 3.0) < 0.01);
    // An all-zero window gives 0 in both modes; negative activations throw.
    const Var zeros(Tensor::zeros({1, 1, 2, 2}));
    CHECK(stochastic_pooling(zeros, 2, 0, gen, true).item() == 0);
    CHECK(stochastic_pooling(zeros, 2, 0, gen, false).item() == 0);
    CHECK_THROWS_WITH_AS(stochastic_pooling(Var(Tensor::from({1, -2, 3, 4}, {1, 1, 2, 2})), 2, 0, gen, false),
                         doctest::Contains("stochastic_pooling: feature map 1×1×2×2"), std::invalid_argument);
}

// ---- 78. spatial_pyramid_pooling --------------------------------------------------------------

TEST_CASE("spatial_pyramid_pooling: one length for 13×13 and 10×10; level {1} is global max; bins cover the map") {
    Generator gen(78);
    const std::vector<int64_t> levels = {1, 2, 3, 6};
    const Var a(normal({2, 3, 13, 13}, gen)), b(normal({2, 3, 10, 10}, gen));
    CHECK(spatial_pyramid_pooling(a, levels).shape() == Shape{2, 3 * 50});
    CHECK(spatial_pyramid_pooling(b, levels).shape() == Shape{2, 3 * 50});
    const Tensor global = max(reshape(a.value(), {2, 3, -1}), -1);
    CHECK(allclose(spatial_pyramid_pooling(a, {1}).value(), global, 0, 0));
    // 13 rows in 3 bins: [0, 5), [4, 9), [8, 13).
    CHECK(pyramid_bin(0, 3, 13).end == 5);
    CHECK(pyramid_bin(1, 3, 13).start == 4);
    CHECK(pyramid_bin(2, 3, 13).end == 13);
    // A 2×2 map at level 2 is the map itself, channel-major.
    const Var small(Tensor::from({1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 2, 2}));
    check_close(spatial_pyramid_pooling(small, {2}).value(), {1, 2, 3, 4, 5, 6, 7, 8});
    CHECK_THROWS_WITH_AS(spatial_pyramid_pooling(small, {1, 3}), doctest::Contains("level 3"), std::invalid_argument);
}

// ---- 79. deep_sets_pooling --------------------------------------------------------------------

TEST_CASE("deep_sets_pooling: the sum tells set sizes apart, the mean cannot") {
    Generator gen(79);
    // The same item twice or three times.
    const Tensor item = normal({1, 1, 3}, gen);
    const Var two(expand(item, {1, 2, 3})), three(expand(item, {1, 3, 3}));
    DeepSetsPooling by_sum(3, 8, 2, gen, SetAggregate::sum), by_mean(3, 8, 2, gen, SetAggregate::mean);
    CHECK_FALSE(allclose(by_sum.forward(two).value(), by_sum.forward(three).value(), 0, 1e-6));
    CHECK(allclose(by_mean.forward(two).value(), by_mean.forward(three).value(), 0, 1e-12));
}

// ---- 80. gru_gating ---------------------------------------------------------------------------

TEST_CASE("gru_gating: z ≡ 0 copies the state; z ≡ 1 and r ≡ 1 give a plain tanh RNN; a masked step keeps it") {
    Generator gen(81);
    GruGating gru(2, 3, gen);
    const Var X(normal({2, 5, 2}, gen)), h0(normal({2, 3}, gen));

    // σ(−1000) is exactly 0 and σ(1000) exactly 1 in double precision.
    auto force = [](Linear& Wx, Linear& Uh, real bias) {
        Wx.weight.value().fill_(0);
        Uh.weight.value().fill_(0);
        Wx.bias.value().fill_(bias);
    };
    force(gru.W_z, gru.U_z, -1000);
    GruGatingOutput out = gru.forward(X, h0);
    for (int64_t t = 0; t < 5; ++t)
        CHECK(allclose(squeeze(slice(out.states.value(), 1, t, t + 1), 1), h0.value(), 0, 0));

    force(gru.W_z, gru.U_z, 1000);
    force(gru.W_r, gru.U_r, 1000);
    out = gru.forward(X, h0);
    Tensor h = h0.value();
    for (int64_t t = 0; t < 5; ++t) {
        // h_t = tanh(W x_t + b + U h_{t−1})
        const Tensor x = squeeze(slice(X.value(), 1, t, t + 1), 1);
        h = tanh(add(add(matmul(x, gru.W.weight.value(), false, true), gru.W.bias.value()),
                     matmul(h, gru.U.weight.value(), false, true)));
        CHECK(allclose(squeeze(slice(out.states.value(), 1, t, t + 1), 1), h, 0, 1e-12));
    }

    // Sequence 1 has length 2: its state after step 2 stays put.
    GruGating fresh(2, 3, gen);
    const GruGatingOutput masked = fresh.forward(X, h0, length_mask({5, 2}, 5));
    const Tensor states = masked.states.value();
    for (int64_t t = 2; t < 5; ++t)
        for (int64_t k = 0; k < 3; ++k) {
            CHECK(states[((1 * 5) + t) * 3 + k] == states[((1 * 5) + 1) * 3 + k]);
            CHECK(masked.update_gates.value()[((1 * 5) + t) * 3 + k] == 0);
        }
    CHECK(gru.taxonomy().alignment == "sigmoid");
}
