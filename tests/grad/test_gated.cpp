// Gated attention (entry 85, attention/gated.hpp): docs/extending.md's worked
// example of a whole new mechanism. Its reference in plain loops and its
// registry entry; the generic tests of test_catalog.cpp do the rest.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <string>

#include "attention/gated.hpp"
#include "attention/scaled_dot_product.hpp"
#include "tests/grad/catalog.hpp"
#include "tests/grad/helpers.hpp"

using namespace attn;
using namespace attn::testing;

namespace {

// y_i = σ(W_g q_i + b_g) ∘ Σ_l a_il v_l,  a_i = softmax over the kept keys of q_i · k_l / √d_k
std::vector<Expected> gated_attention_reference(const Ref& r) {
    const Array &Q = r.x[0], &K = r.x[1], &V = r.x[2];
    const Array mask = mask_or_all(r, 0);  // B×n, or empty: every key kept
    const Array W = r.p["W_g"], bias = r.p["b_g"];
    const int64_t B = Q.size(0), m = Q.size(1), n = K.size(1), d_k = Q.size(2), d_v = V.size(2);
    Array Y({B, m, d_v}), A({B, m, n});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < m; ++i) {
            Vec e(static_cast<size_t>(n)), keep(static_cast<size_t>(n), 1.0);
            for (int64_t l = 0; l < n; ++l) {
                e[static_cast<size_t>(l)] = dot(row(Q, b, i), row(K, b, l)) / std::sqrt(static_cast<double>(d_k));
                if (mask.numel() > 0) keep[static_cast<size_t>(l)] = mask(b, l);
            }
            const Vec a = softmax(e, keep);
            for (int64_t l = 0; l < n; ++l) A(b, i, l) = a[static_cast<size_t>(l)];
            for (int64_t c = 0; c < d_v; ++c) {
                double o = 0, g = bias(c);
                for (int64_t l = 0; l < n; ++l) o += a[static_cast<size_t>(l)] * V(b, l, c);
                for (int64_t d = 0; d < d_k; ++d) g += W(c, d) * Q(b, i, d);
                Y(b, i, c) = sigmoid(g) * o;
            }
        }
    return {{"output", Y}, {"weights", A}};
}

Outputs run_gated(Module* m, In x, Masks masks) {
    return output_and_weights(as<GatedAttention>(m).forward(x[0], x[1], x[2], key_padding(masks)));
}

// The gate lies in (0, 1): every output is the ungated attention's, scaled
// toward 0 and never past it or beyond it.
Property gated_between_zero_and_ungated() {
    return {"each output lies between 0 and the ungated attention's", [](const PropertyContext& c) -> std::string {
                const Tensor mask = c.masks.empty() ? Tensor() : key_mask(c.masks[0]);
                const Tensor ungated =
                    scaled_dot_product_attention(Var(c.inputs[0]), Var(c.inputs[1]), Var(c.inputs[2]), mask)
                        .output.value();
                const Evaluation gated = c.run(c.inputs, c.masks);  // (kept: y refers into it)
                const Tensor& y = gated["output"];
                for (int64_t k = 0; k < y.numel(); ++k) {
                    const double o = ungated[k], v = y[k];
                    const bool inside = o == 0 ? v == 0 : (v / o > 0 && v / o < 1);
                    if (!inside)
                        return "output[" + std::to_string(k) + "] = " + std::to_string(v) + ", ungated " +
                               std::to_string(o);
                }
                return "";
            }};
}

const RegisterEntry gated_entry(85, "gated_attention", {
    {.variant = "3 queries, 4 keys, d_k 5, d_v 3, padding (example 1 keeps 2 keys)",
     .inputs = {Shape{2, 3, 5}, Shape{2, 4, 5}, Shape{2, 4, 3}},
     .masks = {keep_first({4, 2}, 4)},
     .make = [](Generator& g) { return std::make_unique<GatedAttention>(5, 3, g); },
     .run = run_gated,
     .reference = gated_attention_reference,
     .masking = {{.mask = 0, .inputs = {1, 2}, .weights = {"weights"}, .zero_when_empty = {"output"}}},
     .properties = {rows_sum_to_one("weights"), gated_between_zero_and_ungated()}},
    {.variant = "no mask, 2 queries, 6 keys, d_k 2, d_v 4",
     .inputs = {Shape{2, 2, 2}, Shape{2, 6, 2}, Shape{2, 6, 4}},
     .make = [](Generator& g) { return std::make_unique<GatedAttention>(2, 4, g); },
     .run = run_gated,
     .reference = gated_attention_reference,
     .properties = {gated_between_zero_and_ungated()}},
});

}  // namespace

TEST_CASE("gated attention: its errors name the mechanism and the widths") {
    Generator gen(1);
    GatedAttention gated(4, 3, gen);
    const Var q(Tensor::zeros(Shape{1, 2, 5})), k(Tensor::zeros(Shape{1, 3, 5})), v(Tensor::zeros(Shape{1, 3, 3}));
    CHECK_THROWS_WITH(gated.forward(q, k, v), doctest::Contains("gated_attention: queries 1×2×5 and values 1×3×3 need widths d_k = 4"));
}
