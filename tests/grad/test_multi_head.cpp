// Multi-head attention, double build: catalog entries 40
// (multi_head_attention, composite and fused heads), 41
// (narrow_wide_multi_head_attention) and 49 (head_gated_multi_head_attention):
// their independent references and registry entries (tests/grad/catalog.hpp),
// then the catalog's reference values and properties. The
// TransformerEncoderLayer built from them is tested in test_transformer.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attention/multi_head.hpp"
#include "attention/scaled_dot_product.hpp"
#include "attention/transformer.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/catalog.hpp"
#include "tests/grad/helpers.hpp"
#include "tests/grad/transformer_reference.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

MultiHeadAttention::Options mha_options(bool bias, bool fused, int64_t d_k = 0, int64_t d_v = 0) {
    MultiHeadAttention::Options o;
    o.bias = bias;
    o.fused = fused;
    o.d_k = d_k, o.d_v = d_v;
    return o;
}

// ---- the independent references: the catalog's formulas in plain loops ------------------

// 40: multi_head_reference (tests/grad/transformer_reference.hpp, shared with entries 82, 83).

// 41: X_j = columns j·c … (j+1)·c − 1 of X (narrow, c = d/h), or all of X (wide, c = d)
//     head_j = Attn(X_j W_Q[j], X_j W_K[j], X_j W_V[j])   (W_Q, W_K, W_V h×c×c, the XW form)
//     Y = [head_1, …, head_h] W_O                           (W_O (h·c)×d)
//   X B×n×d → Y B×n×d, weights B×h×n×n.
std::vector<Expected> narrow_wide_reference(const Ref& r, int64_t h, bool narrow, const Visible& visible) {
    const Array& X = r.x[0];
    const Array W_Q = r.p["W_Q"], W_K = r.p["W_K"], W_V = r.p["W_V"], W_O = r.p["W_O"];
    const int64_t B = X.size(0), n = X.size(1), d = X.size(2), c = narrow ? d / h : d;
    auto head_weight = [c](const Array& W, int64_t j) {  // W[j], c×c
        Array Wj({c, c});
        for (int64_t a = 0; a < c; ++a)
            for (int64_t o = 0; o < c; ++o) Wj(a, o) = W(j, a, o);
        return Wj;
    };
    Array Y({B, n, d}), A({B, h, n, n});
    for (int64_t b = 0; b < B; ++b) {
        std::vector<Vec> heads(static_cast<size_t>(n));  // [head_1, …, head_h] per position
        for (int64_t j = 0; j < h; ++j) {
            std::vector<Vec> q, k, v;
            for (const Vec& x : rows_of(X, b)) {
                const Vec x_j = narrow ? part(x, j * c, c) : x;
                q.push_back(times(x_j, head_weight(W_Q, j)));
                k.push_back(times(x_j, head_weight(W_K, j)));
                v.push_back(times(x_j, head_weight(W_V, j)));
            }
            for (int64_t i = 0; i < n; ++i) {
                const Attended a = one_query_attention(q[static_cast<size_t>(i)], k, v, visible.keep(b, i, n, n),
                                                       std::sqrt(double(c)));
                for (int64_t l = 0; l < n; ++l) A(b, j, i, l) = a.weights[static_cast<size_t>(l)];
                heads[static_cast<size_t>(i)] = concat(heads[static_cast<size_t>(i)], a.output);
            }
        }
        for (int64_t i = 0; i < n; ++i) set_row(Y, b, i, times(heads[static_cast<size_t>(i)], W_O));
    }
    return {{"output", Y}, {"weights", A}};
}

// 49: the Hard Concrete gates (β = 2/3, γ = −0.1, ζ = 1.1), log α = "log_alpha" (h):
//     training  u_j ~ U(1e-6, 1 − 1e-6) (the module's draws, in head order),
//               s_j = σ((log u_j − log(1 − u_j) + log α_j) / β),  g_j = min(1, max(0, s_j (ζ − γ) + γ))
//     test      g_j = min(1, max(0, σ(log α_j)(ζ − γ) + γ))
//     L_C = Σ_j σ(log α_j − β log(−γ/ζ))
constexpr double kBeta = 2.0 / 3, kGamma = -0.1, kZeta = 1.1;

Vec hard_concrete_gates(const Ref& r) {
    const Vec log_alpha = vec(r.p["log_alpha"]);
    Vec g(log_alpha.size());
    for (size_t j = 0; j < g.size(); ++j) {
        double s = sigmoid(log_alpha[j]);
        if (r.training) {
            const double u = r.noise.uniform(1e-6, 1 - 1e-6);
            s = sigmoid((std::log(u) - std::log(1 - u) + log_alpha[j]) / kBeta);
        }
        g[j] = std::min(1.0, std::max(0.0, s * (kZeta - kGamma) + kGamma));
    }
    return g;
}

Array l0_penalty_reference(const Ref& r) {
    double L = 0;
    for (double a : vec(r.p["log_alpha"])) L += sigmoid(a - kBeta * std::log(-kGamma / kZeta));
    Array out(std::vector<int64_t>{});
    out[0] = L;
    return out;
}

// ---- what the cases check --------------------------------------------------------------------

// The shapes and options of a case of entries 40 and 49: one input X (self-attention:
// queries = keys = values = X) or three (queries, keys, values); masks[0] a B×n
// padding mask, masks[1] an m×n mask of holes (each optional).
struct HeadsCase {
    std::string variant;
    std::vector<Shape> inputs;
    int64_t h = 2, d_k = 0, d_v = 0;
    bool bias = false, fused = false, causal = false;
    std::vector<Tensor> masks = {};
    bool need_weights = true;  // with fused
};

bool is_self(const HeadsCase& s) { return s.inputs.size() == 1; }

// The keep mask the module gets: the padding B×1×n, times the holes (→ B×m×n).
Tensor heads_mask(Masks masks) {
    const Tensor pad = !masks.empty() && masks[0].defined() ? key_mask(masks[0]) : Tensor();
    return combine_masks(pad, masks.size() > 1 ? masks[1] : Tensor());
}

// Generic tests 3 and 4 as the options allow: a KeySet for the padding (self
// when X is the keys), rows summing to 1, invariance to the order of the keys
// (cross-attention) or permutation equivariance (self-attention), and the causal rule.
void heads_checks(Case& c, const HeadsCase& s, bool output_zero_when_empty) {
    const bool pad = !s.masks.empty() && s.masks[0].defined(), holes = s.masks.size() > 1;
    std::vector<std::string> weights;
    if (s.need_weights) weights = {"weights"};
    if (pad && is_self(s)) c.masking = {{0, {0}, weights, {}, true}};
    if (pad && !is_self(s))
        c.masking = {{0, {1, 2}, weights, output_zero_when_empty ? std::vector<std::string>{"output"}
                                                                 : std::vector<std::string>{}}};
    if (s.need_weights) c.properties.push_back(rows_sum_to_one("weights"));
    if (s.causal) {
        std::vector<QueryRows> rows = {{"output", 1}};
        if (s.need_weights) rows.push_back({"weights", -2});
        c.properties.push_back(causal_rows({0}, rows));
    } else if (!holes && is_self(s)) {
        c.properties.push_back(self_permutation_equivariant(0, pad ? 0 : -1, {"output"}, weights));
    } else if (!holes) {
        const std::vector<int> masks_of_keys = pad ? std::vector<int>{0} : std::vector<int>{};
        c.properties.push_back(permutation_invariant({1, 2}, masks_of_keys, {"output"}));
        if (s.need_weights) c.properties.push_back(permutation_equivariant_keys({1, 2}, masks_of_keys, weights));
    }
}

// ---- entry 40 -----------------------------------------------------------------------------------

// Every parameter reaches the output: the gradient of Σ output reaches each
// one. A parameter it does not reach is one the code never uses: b_K, whose
// gradient is 0 whatever the inputs (a shift common to every key moves each
// query's scores by one constant, which the softmax does not see), shows up
// in no value and no central difference, only here.
Property every_parameter_reaches_the_output(bool causal) {
    return {"every parameter reaches the output (a gradient, zero or not, for each)",
            [causal](const PropertyContext& ctx) -> std::string {
                auto& mha = as<MultiHeadAttention>(ctx.module);
                const auto params = mha.named_parameters();
                std::vector<Tensor> before;
                for (const auto& [name, v] : params) before.push_back(v.node()->grad);
                for (const auto& [name, v] : params) v.node()->grad = Tensor();
                std::vector<Var> x;
                for (const Tensor& t : ctx.inputs) x.emplace_back(t, false);
                const Var &q = x[0], &k = x.size() > 1 ? x[1] : x[0], &v = x.size() > 2 ? x[2] : k;
                sum(mha.forward(q, k, v, heads_mask(ctx.masks), causal).output).backward();
                std::string missing;
                for (size_t i = 0; i < params.size(); ++i) {
                    if (!params[i].second.grad().defined()) missing += (missing.empty() ? "" : ", ") + params[i].first;
                    params[i].second.node()->grad = before[i];
                }
                return missing.empty() ? "" : "no gradient reaches " + missing + ": the code never uses it";
            }};
}

Case multi_head_case(const HeadsCase& s) {
    Case c;
    c.variant = std::string(s.fused ? (s.need_weights ? "fused heads, " : "fused heads without weights, ") : "") +
                s.variant;
    c.inputs = s.inputs;
    c.masks = s.masks;
    const int64_t d_model = s.inputs[0][2];
    MultiHeadAttention::Options o = mha_options(s.bias, s.fused, s.d_k, s.d_v);
    o.need_weights = s.need_weights;
    c.make = [d_model, h = s.h, o](Generator& g) { return std::make_unique<MultiHeadAttention>(d_model, h, g, o); };
    c.run = [fused = s.fused, need = s.need_weights, causal = s.causal](Module* m, In x, Masks keep) -> Outputs {
        const Var &q = x[0], &k = x.size() > 1 ? x[1] : x[0], &v = x.size() > 2 ? x[2] : k;
        const AttentionOutput a = as<MultiHeadAttention>(m).forward(q, k, v, heads_mask(keep), causal);
        if (!need) return {{"output", a.output}};
        return output_and_weights(a, !fused);  // the fused weights are materialised outside the graph
    };
    c.reference = [self = is_self(s), h = s.h, bias = s.bias, causal = s.causal, need = s.need_weights](const Ref& r) {
        std::vector<Expected> e = multi_head_reference(r, {"", self, h, bias, visible_keys(r, causal)});
        if (!need) e.pop_back();
        return e;
    };
    heads_checks(c, s, !s.bias);
    if (s.bias) c.properties.push_back(every_parameter_reaches_the_output(s.causal));
    return c;
}

std::vector<HeadsCase> multi_head_variants() {
    const Shape q{2, 3, 4}, kv{2, 5, 4};
    return {
        {"h 2, d_model 4: square W_Q, W_K, W_V, W_O; cross-attention m 3, n 5, padding {3, 5}", {q, kv, kv}, 2, 0, 0,
         false, false, false, {keep_first({3, 5}, 5)}},
        {"h 2, d_k 3 ≠ d_v 5, keys ≠ values", {q, kv, kv}, 2, 3, 5},
        {"h 3, d_k 2, d_v 1, biases, causal self-attention", {{2, 4, 3}}, 3, 2, 1, true, false, true},
        {"h 2, biases, self-attention with padding {4, 2}", {{2, 4, 4}}, 2, 0, 0, true, false, false,
         {keep_first({4, 2}, 4)}},
        {"h 2, a per-query B×m×n mask: padding {4, 5} times holes", {q, kv, kv}, 2, 0, 0, false, false, false,
         {keep_first({4, 5}, 5), Tensor::from({1, 0, 1, 1, 0, 0, 1, 1, 0, 1, 0, 0, 0, 0, 0}, {3, 5})}},
    };
}

std::vector<Case> multi_head_cases() {
    std::vector<Case> cases;
    for (HeadsCase s : multi_head_variants()) {
        cases.push_back(multi_head_case(s));
        s.fused = true;
        cases.push_back(multi_head_case(s));
    }
    HeadsCase no_weights = multi_head_variants()[0];
    no_weights.fused = true, no_weights.need_weights = false;
    cases.push_back(multi_head_case(no_weights));
    return cases;
}

const RegisterEntry multi_head_entry(40, "multi_head_attention", multi_head_cases());

// ---- entry 41 -----------------------------------------------------------------------------------

Case narrow_wide_case(std::string variant, Shape x, int64_t h, bool narrow, bool causal,
                      std::vector<Tensor> masks = {}) {
    using Kind = NarrowWideMultiHeadAttention::Kind;
    Case c;
    c.variant = std::string(narrow ? "narrow, " : "wide, ") + variant;
    c.inputs = {x};
    c.masks = std::move(masks);
    const int64_t d = x[2];
    c.make = [=](Generator& g) {
        return std::make_unique<NarrowWideMultiHeadAttention>(d, h, narrow ? Kind::narrow : Kind::wide, g);
    };
    c.run = [causal](Module* m, In in, Masks keep) {
        return output_and_weights(as<NarrowWideMultiHeadAttention>(m).forward(in[0], heads_mask(keep), causal));
    };
    c.reference = [=](const Ref& r) { return narrow_wide_reference(r, h, narrow, visible_keys(r, causal)); };
    HeadsCase s;
    s.inputs = c.inputs, s.masks = c.masks, s.causal = causal;
    heads_checks(c, s, false);
    return c;
}

const RegisterEntry narrow_wide_entry(41, "narrow_wide_multi_head_attention", {
    narrow_wide_case("h 2, d 4 (chunks of 2), padding {3, 4}", {2, 4, 4}, 2, true, false, {keep_first({3, 4}, 4)}),
    narrow_wide_case("h 3, d 6, causal", {2, 4, 6}, 3, true, true),
    narrow_wide_case("h 2, d 3, causal", {2, 3, 3}, 2, false, true),
    narrow_wide_case("h 3, d 2, padding {2, 4}", {2, 4, 2}, 3, false, false, {keep_first({2, 4}, 4)}),
});

// ---- entry 49 -----------------------------------------------------------------------------------

// The gated module's cases: `gates_input` runs forward_with_gates with input
// 1 (or 3) as the gates; otherwise forward, whose gates are sampled in
// training and the test gates in evaluation.
Case gated_case(HeadsCase s, bool training, bool gates_input = false) {
    Case c;
    c.variant = std::string(gates_input ? "given gates" : training ? "training (sampled gates)" : "evaluation") +
                ", " + s.variant;
    c.inputs = s.inputs;
    if (gates_input) c.inputs.push_back(Shape{s.h});
    c.masks = s.masks;
    c.training = training;
    const int64_t d_model = s.inputs[0][2];
    const MultiHeadAttention::Options o = mha_options(s.bias, s.fused, s.d_k, s.d_v);
    c.make = [d_model, h = s.h, o](Generator& g) {
        return std::make_unique<HeadGatedMultiHeadAttention>(d_model, h, g, o);
    };
    // L_C and the test gates have no batch axis: left out where the masking
    // test (which indexes outputs by example) runs.
    const bool self = is_self(s), causal = s.causal, fused = s.fused, whole = s.masks.empty();
    c.run = [self, causal, fused, gates_input, whole](Module* m, In x, Masks keep) -> Outputs {
        auto& gated = as<HeadGatedMultiHeadAttention>(m);
        const Var &q = x[0], &k = self ? x[0] : x[1], &v = self ? x[0] : x[2];
        const AttentionOutput a = gates_input ? gated.forward_with_gates(q, k, v, x.back(), heads_mask(keep), causal)
                                              : gated.forward(q, k, v, heads_mask(keep), causal);
        Outputs out = output_and_weights(a, !fused);
        if (whole) out.push_back({"l0_penalty", gated.l0_penalty()});
        if (whole && !gated.is_training()) out.push_back({"test_gates", gated.test_gates()});
        return out;
    };
    c.reference = [self, h = s.h, bias = s.bias, causal, gates_input, whole](const Ref& r) {
        Heads heads{"mha.", self, h, bias, visible_keys(r, causal)};
        heads.gates = gates_input ? vec(r.x.back()) : hard_concrete_gates(r);
        std::vector<Expected> e = multi_head_reference(r, heads);
        if (!whole) return e;
        e.push_back({"l0_penalty", l0_penalty_reference(r)});
        if (!r.training) {  // the test gates: no noise drawn
            const Vec g = hard_concrete_gates(r);
            e.push_back({"test_gates", Array(std::vector<int64_t>{h})});
            for (int64_t j = 0; j < h; ++j) e.back().value[j] = g[static_cast<size_t>(j)];
        }
        return e;
    };
    heads_checks(c, s, false);
    if (!training && c.masks.empty()) c.properties.push_back(bounded("test_gates", 0, 1));
    return c;
}

const RegisterEntry gated_entry(49, "head_gated_multi_head_attention", {
    gated_case({"h 2, d_model 4, self-attention with padding {3, 2}", {{2, 3, 4}}, 2, 0, 0, false, false, false,
                {keep_first({3, 2}, 3)}},
               true),
    gated_case({"h 3, d_k 2 ≠ d_v 3, biases, cross-attention m 3, n 4", {{2, 3, 6}, {2, 4, 6}, {2, 4, 6}}, 3, 2, 3,
                true},
               true),
    gated_case({"h 2, fused heads, causal", {{2, 4, 4}}, 2, 0, 0, false, true, true}, true),
    gated_case({"h 2, causal", {{2, 4, 4}}, 2, 0, 0, false, false, true}, false),
    gated_case({"h 3, biases, cross-attention with padding {4, 2}", {{2, 3, 6}, {2, 4, 6}, {2, 4, 6}}, 3, 0, 0,
                true, false, false, {keep_first({4, 2}, 4)}},
               false),
    gated_case({"h 2, self-attention with padding {3, 4}", {{2, 4, 4}}, 2, 0, 0, false, false, false,
                {keep_first({3, 4}, 4)}},
               false, true),
});

Tensor columns(const Var& W, int64_t j, int64_t width) { return slice(W.value(), -1, j * width, (j + 1) * width); }

// The reference for entry 40: one head at a time, head_j = Attn(Q W^Q_j + b, K W^K_j + b, V W^V_j + b),
// and MH = Σ_j head_j W^O_j (W^O_j: head j's rows of W^O) + b_O. Head `skip` is left out.
Tensor per_head_loop(const MultiHeadAttention& mha, const Tensor& q, const Tensor& k, const Tensor& v,
                     const Tensor& mask, int64_t skip = -1) {
    const int64_t dk = mha.d_k(), dv = mha.d_v();
    Tensor out = Tensor::zeros(Shape{q.size(0), q.size(1), mha.d_model()});
    auto project = [&](const Tensor& x, const Var& W, const Var& b, int64_t j, int64_t w) {
        Tensor y = matmul(x, columns(W, j, w));
        return b.defined() ? add(y, columns(b, j, w)) : y;
    };
    for (int64_t j = 0; j < mha.num_heads(); ++j) {
        if (j == skip) continue;
        const Tensor head = scaled_dot_product_attention(Var(project(q, mha.W_Q, mha.b_Q, j, dk)),
                                                         Var(project(k, mha.W_K, mha.b_K, j, dk)),
                                                         Var(project(v, mha.W_V, mha.b_V, j, dv)), mask)
                                .output.value();
        add_(out, matmul(head, slice(mha.W_O.value(), 0, j * dv, (j + 1) * dv)));
    }
    return mha.b_O.defined() ? add(out, mha.b_O.value()) : out;
}

}  // namespace

// ---- entry 40: multi_head_attention --------------------------------------------------------

TEST_CASE("multi_head_attention: h = 1 with W^O = I is scaled_dot_product_attention of the projected inputs") {
    Generator gen(400);
    MultiHeadAttention mha(4, 1, gen);
    Tensor eye = Tensor::zeros(Shape{4, 4});
    for (int64_t i = 0; i < 4; ++i) eye[i * 5] = 1;
    set(mha.W_O, eye);
    const Var q(Tensor::normal({2, 3, 4}, 0, 1, gen)), k(Tensor::normal({2, 6, 4}, 0, 1, gen));
    const AttentionOutput a = mha.forward(q, k, k);
    const AttentionOutput b = scaled_dot_product_attention(matmul(q, mha.W_Q), matmul(k, mha.W_K), matmul(k, mha.W_V));
    CHECK(max_abs_diff(a.output.value(), b.output.value()) < 1e-12);
    CHECK(max_abs_diff(a.weights.value(), reshape(b.weights.value(), {2, 1, 3, 6})) < 1e-12);
    CHECK(mha.taxonomy().query_multiplicity == "multi-head");
}

TEST_CASE("multi_head_attention: the biases start at zero (as torch.nn.MultiheadAttention)") {
    Generator gen(403);
    MultiHeadAttention mha(6, 3, gen, mha_options(true, false));
    for (const Var* b : {&mha.b_Q, &mha.b_K, &mha.b_V, &mha.b_O})
        CHECK(max_abs_diff(b->value(), Tensor::zeros(b->shape())) == 0);
}

TEST_CASE("multi_head_attention: W^V_j = 0 removes exactly head j's contribution") {
    Generator gen(401);
    MultiHeadAttention mha(6, 3, gen);
    const Tensor x = Tensor::normal({2, 4, 6}, 0, 1, gen);
    const int64_t j = 1;
    for (int64_t r = 0; r < 6; ++r)
        for (int64_t c = j * 2; c < (j + 1) * 2; ++c) mha.W_V.value()[r * 6 + c] = 0;
    const Tensor out = mha.forward(Var(x), Var(x), Var(x)).output.value();
    CHECK(max_abs_diff(out, per_head_loop(mha, x, x, x, {}, j)) < 1e-12);
}

TEST_CASE("multi_head_attention: fused heads equal composite heads, value and parameter gradients") {
    Generator gen(402);
    MultiHeadAttention composite(8, 2, gen, mha_options(true, false)), fused(8, 2, gen, mha_options(true, true));
    fused.load_state_dict(composite.state_dict());
    const Tensor x = Tensor::normal({3, 70, 8}, 0, 1, gen), G = Tensor::normal({3, 70, 8}, 0, 1, gen);
    const Tensor mask = padding({70, 40, 1}, 70);
    Var y1 = composite.forward(Var(x), Var(x), Var(x), mask, true).output;
    Var y2 = fused.forward(Var(x), Var(x), Var(x), mask, true).output;
    CHECK(max_abs_diff(y1.value(), y2.value()) < 1e-12);
    y1.backward(G), y2.backward(G);
    const auto p1 = composite.parameters(), p2 = fused.parameters();
    for (size_t i = 0; i < p1.size(); ++i) CHECK(max_abs_diff(p1[i].grad(), p2[i].grad()) < 1e-11);
}

// ---- entry 41: narrow_wide_multi_head_attention ---------------------------------------------

TEST_CASE("narrow_wide_multi_head_attention: Q, K, V parameters narrow 3d²/h, standard 3d², wide 3hd²") {
    Generator gen(41);
    const int64_t d = 8, h = 4;
    using Kind = NarrowWideMultiHeadAttention::Kind;
    NarrowWideMultiHeadAttention narrow(d, h, Kind::narrow, gen), wide(d, h, Kind::wide, gen);
    MultiHeadAttention standard(d, h, gen);
    auto qkv = [](const Var& a, const Var& b, const Var& c) { return a.numel() + b.numel() + c.numel(); };
    CHECK(qkv(narrow.W_Q, narrow.W_K, narrow.W_V) == 3 * d * d / h);  // 48
    CHECK(qkv(standard.W_Q, standard.W_K, standard.W_V) == 3 * d * d);  // 192
    CHECK(qkv(wide.W_Q, wide.W_K, wide.W_V) == 3 * h * d * d);  // 768
    CHECK(narrow.W_O.shape() == Shape{d, d});
    CHECK(wide.W_O.shape() == Shape{h * d, d});
}

TEST_CASE("narrow_wide_multi_head_attention: h = 1 makes narrow = wide = a single head") {
    Generator gen(410);
    using Kind = NarrowWideMultiHeadAttention::Kind;
    NarrowWideMultiHeadAttention narrow(5, 1, Kind::narrow, gen), wide(5, 1, Kind::wide, gen);
    MultiHeadAttention single(5, 1, gen);
    wide.load_state_dict(narrow.state_dict());
    set(single.W_Q, narrow.W_Q.value().reshape(Shape{5, 5})), set(single.W_K, narrow.W_K.value().reshape(Shape{5, 5}));
    set(single.W_V, narrow.W_V.value().reshape(Shape{5, 5})), set(single.W_O, narrow.W_O.value());
    const Var x(Tensor::normal({2, 4, 5}, 0, 1, gen));
    const Tensor a = narrow.forward(x).output.value();
    CHECK(max_abs_diff(a, wide.forward(x).output.value()) < 1e-12);
    CHECK(max_abs_diff(a, single.forward(x, x, x).output.value()) < 1e-12);
}

TEST_CASE("narrow_wide_multi_head_attention: a narrow head's output depends only on its chunk of columns") {
    Generator gen(411);
    const int64_t d = 6, h = 3, c = 2;
    NarrowWideMultiHeadAttention narrow(d, h, NarrowWideMultiHeadAttention::Kind::narrow, gen);
    const Tensor x = Tensor::normal({1, 4, d}, 0, 1, gen);
    Tensor changed = x.clone();
    for (int64_t i = 0; i < 4; ++i) changed[i * d + 2] += 1, changed[i * d + 3] -= 2;  // chunk 1 only
    const Tensor a = narrow.heads(Var(x)).output.value(), b = narrow.heads(Var(changed)).output.value();  // 1×h×4×c
    for (int64_t j = 0; j < h; ++j) {
        double diff = 0;
        for (int64_t i = 0; i < 4 * c; ++i) diff = std::max(diff, std::abs(a[j * 4 * c + i] - b[j * 4 * c + i]));
        CAPTURE(j);
        if (j == 1) CHECK(diff > 1e-3);
        else CHECK(diff == 0);
    }
}

// ---- entry 49: head_gated_multi_head_attention ----------------------------------------------

TEST_CASE("head_gated_multi_head_attention: log α = 0 gives P(g ≠ 0) = 0.831822") {
    Generator gen(49);
    HeadGatedMultiHeadAttention one(4, 1, gen), four(8, 4, gen);
    CHECK(std::abs(one.l0_penalty().item() - 0.831822) < 1e-6);
    CHECK(std::abs(four.l0_penalty().item() - 4 * 0.831822) < 4e-6);
}

TEST_CASE("head_gated_multi_head_attention: sampled gates lie in [0, 1], exactly 0 and exactly 1 both occur") {
    // 10⁴ gates (2,500 draws of 4 heads), log α = 0, seed 4900. P(g = 0) = P(g = 1) = 1 − 0.831822 = 0.168178
    // (the stretched sigmoid's two clipped tails); the sample frequencies have a standard error of 0.0037.
    Generator init(1), noise(4900);
    HeadGatedMultiHeadAttention gated(8, 4, init);
    int64_t zeros = 0, ones = 0, total = 0;
    bool inside = true;
    for (int draw = 0; draw < 2500; ++draw) {
        const Tensor g = gated.sample_gates(noise).value();
        for (int64_t j = 0; j < 4; ++j, ++total) {
            inside = inside && g[j] >= 0 && g[j] <= 1;
            zeros += g[j] == 0, ones += g[j] == 1;
        }
    }
    CHECK(inside);
    CHECK(std::abs(static_cast<double>(zeros) / total - 0.168178) < 0.02);
    CHECK(std::abs(static_cast<double>(ones) / total - 0.168178) < 0.02);
}

TEST_CASE("head_gated_multi_head_attention: all gates equal to 1 give multi_head_attention") {
    Generator gen(490);
    HeadGatedMultiHeadAttention gated(6, 3, gen);
    set(gated.log_alpha, Tensor::full(Shape{3}, 10));  // σ(10)(ζ − γ) + γ = 1.09995 → clipped to 1
    gated.eval();
    CHECK(max_abs_diff(gated.test_gates().value(), Tensor::ones(Shape{3})) == 0);
    const Var x(Tensor::normal({2, 4, 6}, 0, 1, gen));
    const Tensor mask = padding({4, 2}, 4);
    CHECK(max_abs_diff(gated.forward(x, x, x, mask).output.value(), gated.mha.forward(x, x, x, mask).output.value()) ==
          0);
    CHECK(gated.taxonomy().query_multiplicity == "multi-head");
}
