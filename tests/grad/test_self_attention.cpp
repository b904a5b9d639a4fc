// Self-attention, double build: catalog entries 37 (qkv_self_attention), 38
// (plain_self_attention), 48 (relative_position_self_attention) and 50
// (random_synthesizer_attention): their independent references and registry
// entries (tests/grad/catalog.hpp), then the catalog's reference values and
// properties. The position encodings (46, 47) are in test_position.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attention/self_attention.hpp"
#include "attention/transformer.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/catalog.hpp"
#include "tests/grad/helpers.hpp"
#include "tests/grad/transformer_reference.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

// The keys each query of a self-attention case sees: its padding, and the causal rule.
Visible visible_keys(const Ref& r, bool causal) {
    Visible v;
    if (!r.masks.empty()) v.padding = r.masks[0];
    v.causal = causal;
    return v;
}

// ---- the independent references: the catalog's formulas in plain loops ------------------

// 37: q_i = W_Q x_i, k_i = W_K x_i, v_i = W_V x_i   (W_Q, W_K d_k×d; W_V d_v×d)
//     y_i = Σ_j softmax_j(q_i·k_j / √d_k + M_ij) v_j
//     x'_i = y_i, or x'_i = LayerNorm(x_i + W_O y_i)   (W_O d×d_v; γ, β "norm.weight", "norm.bias")
//   X B×n×d → X' B×n×d_v (B×n×d with the residual), weights B×n×n.
std::vector<Expected> qkv_self_attention_reference(const Ref& r, bool causal, bool residual_norm) {
    const Array& X = r.x[0];
    const Array W_Q = r.p["W_Q"], W_K = r.p["W_K"], W_V = r.p["W_V"];
    const int64_t B = X.size(0), n = X.size(1), d_k = W_Q.size(0);
    const Visible visible = visible_keys(r, causal);
    Array Y({B, n, residual_norm ? X.size(2) : W_V.size(0)}), A({B, n, n});
    for (int64_t b = 0; b < B; ++b) {
        std::vector<Vec> q, k, v;
        for (const Vec& x : rows_of(X, b)) {
            q.push_back(matvec(W_Q, x));
            k.push_back(matvec(W_K, x));
            v.push_back(matvec(W_V, x));
        }
        for (int64_t i = 0; i < n; ++i) {
            const Attended a = one_query_attention(q[static_cast<size_t>(i)], k, v, visible.keep(b, i, n, n),
                                                   std::sqrt(double(d_k)));
            set_row(A, b, i, a.weights);
            if (!residual_norm) {
                set_row(Y, b, i, a.output);
                continue;
            }
            const Vec residual = add(row(X, b, i), matvec(r.p["W_O"], a.output));
            set_row(Y, b, i, layer_norm_row(residual, vec(r.p["norm.weight"]), vec(r.p["norm.bias"])));
        }
    }
    return {{"output", Y}, {"weights", A}};
}

// 38: y_i = Σ_j softmax_j(x_i·x_j / τ + M_ij) x_j,  τ = √d or 1
//   X B×n×d → Y B×n×d, weights B×n×n.
std::vector<Expected> plain_self_attention_reference(const Ref& r, bool scaled, bool causal) {
    const Array& X = r.x[0];
    const int64_t B = X.size(0), n = X.size(1);
    const double tau = scaled ? std::sqrt(double(X.size(2))) : 1.0;
    const Visible visible = visible_keys(r, causal);
    Array Y({B, n, X.size(2)}), A({B, n, n});
    for (int64_t b = 0; b < B; ++b) {
        const std::vector<Vec> x = rows_of(X, b);
        for (int64_t i = 0; i < n; ++i) {
            const Attended a = one_query_attention(x[static_cast<size_t>(i)], x, x, visible.keep(b, i, n, n), tau);
            set_row(Y, b, i, a.output);
            set_row(A, b, i, a.weights);
        }
    }
    return {{"output", Y}, {"weights", A}};
}

// 48: q_i = x_iᵀ W^Q, k_j = x_jᵀ W^K, v_j = x_jᵀ W^V      (W^Q, W^K, W^V d×d_z: the paper's XW form)
//     a^K_ij = w^K[clip(j − i, k) + k],  a^V_ij = w^V[clip(j − i, k) + k],  clip(x, k) = max(−k, min(k, x))
//     e_ij = q_i·(k_j + a^K_ij) / √d_z,  α_ij = softmax_j(e_ij + M_ij),  z_i = Σ_j α_ij (v_j + a^V_ij)
//   X B×n×d → Z B×n×d_z, weights B×n×n.
std::vector<Expected> relative_position_reference(const Ref& r, int64_t k, bool causal) {
    const Array& X = r.x[0];
    const Array W_Q = r.p["W_Q"], W_K = r.p["W_K"], W_V = r.p["W_V"], w_K = r.p["w_K"], w_V = r.p["w_V"];
    const int64_t B = X.size(0), n = X.size(1), d_z = W_Q.size(1);
    const Visible visible = visible_keys(r, causal);
    auto table_row = [k](int64_t i, int64_t j) { return std::max(-k, std::min(k, j - i)) + k; };
    Array Z({B, n, d_z}), A({B, n, n});
    for (int64_t b = 0; b < B; ++b) {
        const std::vector<Vec> x = rows_of(X, b);
        for (int64_t i = 0; i < n; ++i) {
            const Vec q = times(x[static_cast<size_t>(i)], W_Q);
            Vec e(static_cast<size_t>(n));
            for (int64_t j = 0; j < n; ++j) {
                const Vec key = add(times(x[static_cast<size_t>(j)], W_K), row(w_K, table_row(i, j)));
                e[static_cast<size_t>(j)] = dot(q, key) / std::sqrt(double(d_z));
            }
            const Vec alpha = softmax(e, visible.keep(b, i, n, n));
            Vec z(static_cast<size_t>(d_z), 0.0);
            for (int64_t j = 0; j < n; ++j) {
                const Vec value = add(times(x[static_cast<size_t>(j)], W_V), row(w_V, table_row(i, j)));
                z = add(z, scale(value, alpha[static_cast<size_t>(j)]));
            }
            set_row(Z, b, i, z);
            set_row(A, b, i, alpha);
        }
    }
    return {{"output", Z}, {"weights", A}};
}

// 50: y_i = Σ_j softmax_j(R_ij + M_ij) W_V x_j   (R n_max×n_max, its top-left n×n block; W_V d_v×d)
//   X B×n×d → Y B×n×d_v, weights B×n×n (the same for every input).
std::vector<Expected> random_synthesizer_reference(const Ref& r, bool causal) {
    const Array& X = r.x[0];
    const Array R = r.p["R"], W_V = r.p["W_V"];
    const int64_t B = X.size(0), n = X.size(1);
    const Visible visible = visible_keys(r, causal);
    Array Y({B, n, W_V.size(0)}), A({B, n, n});
    for (int64_t b = 0; b < B; ++b) {
        std::vector<Vec> v;
        for (const Vec& x : rows_of(X, b)) v.push_back(matvec(W_V, x));
        for (int64_t i = 0; i < n; ++i) {
            Vec e(static_cast<size_t>(n));
            for (int64_t j = 0; j < n; ++j) e[static_cast<size_t>(j)] = R(i, j);
            const Vec a = softmax(e, visible.keep(b, i, n, n));
            Vec y(static_cast<size_t>(W_V.size(0)), 0.0);
            for (int64_t j = 0; j < n; ++j) y = add(y, scale(v[static_cast<size_t>(j)], a[static_cast<size_t>(j)]));
            set_row(Y, b, i, y);
            set_row(A, b, i, a);
        }
    }
    return {{"output", Y}, {"weights", A}};
}

// ---- what the self-attention cases check ------------------------------------------------------

// The generic checks of a self-attention case on X = input 0 (its keys are its
// queries: KeySet::self), and the properties its options allow: rows of the
// weights summing to 1, permutation equivariance without a causal rule (where
// nothing tells the positions apart), the causal rule with one.
void self_attention_checks(Case& c, bool causal, bool positions_known) {
    const bool padded = !c.masks.empty();
    if (padded) c.masking = {{0, {0}, {"weights"}, {}, true}};
    c.properties.push_back(rows_sum_to_one("weights"));
    if (!causal && !positions_known)
        c.properties.push_back(self_permutation_equivariant(0, padded ? 0 : -1, {"output"}, {"weights"}));
    if (causal) c.properties.push_back(causal_rows({0}, {{"output", 1}, {"weights", -2}}));
}

// ---- entry 37 -----------------------------------------------------------------------------------

Case qkv_case(std::string variant, Shape x, int64_t d_k, int64_t d_v, bool residual_norm, bool causal,
              std::vector<Tensor> masks = {}) {
    Case c;
    c.variant = std::move(variant);
    const int64_t d = x[2];
    c.inputs = {x};
    c.masks = std::move(masks);
    c.make = [=](Generator& g) {
        QKVSelfAttention::Options o;
        o.residual_norm = residual_norm;
        return std::make_unique<QKVSelfAttention>(d, d_k, d_v, g, o);
    };
    c.run = [causal](Module* m, In in, Masks keep) {
        return output_and_weights(as<QKVSelfAttention>(m).forward(in[0], key_padding(keep), causal));
    };
    c.reference = [=](const Ref& r) { return qkv_self_attention_reference(r, causal, residual_norm); };
    self_attention_checks(c, causal, false);
    return c;
}

const RegisterEntry qkv_entry(37, "qkv_self_attention", {
    qkv_case("X' = Y, d 5, d_k 3, d_v 2", {2, 4, 5}, 3, 2, false, false),
    qkv_case("X' = Y, padding {3, 4}", {2, 4, 5}, 3, 2, false, false, {keep_first({3, 4}, 4)}),
    qkv_case("X' = Y, causal, square weights d = d_k = d_v = 3", {2, 4, 3}, 3, 3, false, true),
    qkv_case("X' = LayerNorm(X + Y W_Oᵀ), square weights d = d_k = d_v = 4, padding {2, 4}", {2, 4, 4}, 4, 4, true,
             false, {keep_first({2, 4}, 4)}),
    qkv_case("X' = LayerNorm(X + Y W_Oᵀ), d 4, d_k 3, d_v 2, causal and padding {3, 4}", {2, 4, 4}, 3, 2, true, true,
             {keep_first({3, 4}, 4)}),
});

// ---- entry 38 -----------------------------------------------------------------------------------

Case plain_case(std::string variant, Shape x, bool scaled, bool causal, std::vector<Tensor> masks = {}) {
    Case c;
    c.variant = std::move(variant);
    c.inputs = {x};
    c.masks = std::move(masks);
    c.run = [scaled, causal](Module*, In in, Masks keep) {
        return output_and_weights(plain_self_attention(in[0], key_padding(keep), scaled, causal));
    };
    c.reference = [scaled, causal](const Ref& r) { return plain_self_attention_reference(r, scaled, causal); };
    self_attention_checks(c, causal, false);
    c.properties.push_back(convex_combination("output", 0, c.masks.empty() ? -1 : 0));
    return c;
}

const RegisterEntry plain_entry(38, "plain_self_attention", {
    plain_case("τ = √d, d 3", {2, 4, 3}, true, false),
    plain_case("τ = √d, padding {3, 4}", {2, 4, 3}, true, false, {keep_first({3, 4}, 4)}),
    plain_case("τ = 1, causal", {2, 5, 2}, false, true),
    plain_case("τ = 1, causal and padding {4, 3}", {2, 4, 3}, false, true, {keep_first({4, 3}, 4)}),
});

// ---- entry 48 -----------------------------------------------------------------------------------

Case relative_case(std::string variant, Shape x, int64_t d_z, int64_t k, bool causal, std::vector<Tensor> masks = {}) {
    Case c;
    c.variant = std::move(variant);
    const int64_t d = x[2], n = x[1];
    c.inputs = {x};
    c.masks = std::move(masks);
    c.make = [=](Generator& g) { return std::make_unique<RelativePositionSelfAttention>(d, d_z, k, g); };
    c.run = [causal, n](Module* m, In in, Masks keep) {
        const Tensor M = combine_masks(key_padding(keep), causal ? causal_mask(n, n) : Tensor());
        return output_and_weights(as<RelativePositionSelfAttention>(m).forward(in[0], M));
    };
    c.reference = [k, causal](const Ref& r) { return relative_position_reference(r, k, causal); };
    self_attention_checks(c, causal, true);
    return c;
}

const RegisterEntry relative_entry(48, "relative_position_self_attention", {
    relative_case("k = 2, n = 5, d 4, d_z 3, padding {5, 3}", {2, 5, 4}, 3, 2, false, {keep_first({5, 3}, 5)}),
    relative_case("k = 1 (clipped from distance 2 on), causal", {2, 4, 3}, 2, 1, true),
    relative_case("k = 0: one shared relative term", {2, 3, 3}, 2, 0, false),
    relative_case("k = 6 ≥ n: nothing clipped, square weights d = d_z = 4", {2, 4, 4}, 4, 6, false),
    relative_case("k = 2, n = 6, causal and padding {6, 4}", {2, 6, 3}, 3, 2, true, {keep_first({6, 4}, 6)}),
});

// ---- entry 50 -----------------------------------------------------------------------------------

// Without masks every example gets the same weights: R does not see the input.
Property same_weights_for_every_example() {
    return {"every example has the same weights", [](const PropertyContext& c) -> std::string {
                const Tensor& A = c.run(c.inputs, c.masks)["weights"];
                const int64_t per_example = A.numel() / A.size(0);
                for (int64_t i = per_example; i < A.numel(); ++i)
                    if (A[i] != A[i % per_example])
                        return "weights at flat index " + std::to_string(i) + " differ from example 0's";
                return "";
            }};
}

Case synthesizer_case(std::string variant, Shape x, int64_t n_max, int64_t d_v, bool causal,
                      std::vector<Tensor> masks = {}) {
    Case c;
    c.variant = std::move(variant);
    const int64_t d = x[2], n = x[1];
    c.inputs = {x};
    c.masks = std::move(masks);
    c.make = [=](Generator& g) { return std::make_unique<RandomSynthesizerAttention>(n_max, d, d_v, g); };
    c.run = [causal, n](Module* m, In in, Masks keep) {
        const Tensor M = combine_masks(key_padding(keep), causal ? causal_mask(n, n) : Tensor());
        return output_and_weights(as<RandomSynthesizerAttention>(m).forward(in[0], M));
    };
    c.reference = [causal](const Ref& r) { return random_synthesizer_reference(r, causal); };
    // The queries are not the input: a masked row of X changes nothing at all,
    // and an example with every key masked gets a zero output and gradient.
    if (!c.masks.empty()) c.masking = {{0, {0}, {"weights"}, {"output"}}};
    c.properties = {rows_sum_to_one("weights"), independent_of(0, {"weights"})};
    if (c.masks.empty()) c.properties.push_back(same_weights_for_every_example());
    if (causal) c.properties.push_back(causal_rows({0}, {{"output", 1}, {"weights", -2}}));
    return c;
}

const RegisterEntry synthesizer_entry(50, "random_synthesizer_attention", {
    synthesizer_case("n = 4 < n_max = 6, d 3, d_v 2", {2, 4, 3}, 6, 2, false),
    synthesizer_case("n = 4 < n_max = 6, padding {3, 4}", {2, 4, 3}, 6, 2, false, {keep_first({3, 4}, 4)}),
    synthesizer_case("n = n_max = 5, square W_V (d = d_v = 3), causal", {2, 5, 3}, 5, 3, true),
    synthesizer_case("n = 3 < n_max = 7, causal and padding {2, 3}", {2, 3, 4}, 7, 2, true, {keep_first({2, 3}, 3)}),
});

}  // namespace

// ---- entry 37: qkv_self_attention ----------------------------------------------------------

TEST_CASE("qkv_self_attention: seed 001's column layout (A = KᵀQ/√d_k, column softmax, B = V Â) gives Yᵀ") {
    Generator gen(370);
    QKVSelfAttention attention(4, 3, 2, gen);
    const Tensor X = Tensor::normal({1, 5, 4}, 0, 1, gen);
    const Tensor Y = attention.forward(Var(X)).output.value().reshape(Shape{5, 2});
    // Columns are positions: X_col = Xᵀ (d×n), Q_col = W_Q X_col (d_k×n), likewise K_col, V_col.
    const Tensor X_col = transpose(X.reshape(Shape{5, 4}), 0, 1);
    const Tensor Q_col = matmul(attention.W_Q.value(), X_col), K_col = matmul(attention.W_K.value(), X_col);
    const Tensor V_col = matmul(attention.W_V.value(), X_col);
    const Tensor A = mul(matmul(K_col, Q_col, true, false), real(1) / std::sqrt(3.0));  // n×n, column j = query j
    const Tensor B = matmul(V_col, softmax(A, 0));                                     // d_v×n
    CHECK(max_abs_diff(B, transpose(Y, 0, 1)) < 1e-12);
}

// ---- entry 38: plain_self_attention ------------------------------------------------------------

TEST_CASE("plain_self_attention: equals qkv_self_attention with identity projections") {
    Generator gen(38);
    const int64_t d = 4;
    QKVSelfAttention qkv(d, d, d, gen);
    set(qkv.W_Q, identity_matrix(d)), set(qkv.W_K, identity_matrix(d)), set(qkv.W_V, identity_matrix(d));
    const Var x(Tensor::normal({2, 5, d}, 0, 1, gen));
    const Tensor mask = padding({5, 3}, 5);
    const AttentionOutput a = plain_self_attention(x, mask), b = qkv.forward(x, mask);
    CHECK(max_abs_diff(a.output.value(), b.output.value()) < 1e-12);
    CHECK(max_abs_diff(a.weights.value(), b.weights.value()) < 1e-12);
}

TEST_CASE("plain_self_attention: equal rows give Y = X") {
    const Tensor same = expand(Tensor::from({0.5, -1, 2}, {1, 1, 3}), Shape{2, 4, 3});
    for (bool scaled : {true, false})
        CHECK(max_abs_diff(plain_self_attention(Var(same), {}, scaled).output.value(), same) < 1e-12);
}

// ---- entry 48: relative_position_self_attention --------------------------------------------------

TEST_CASE("relative_position_self_attention: w^K = w^V = 0 gives qkv_self_attention") {
    Generator gen(48);
    const int64_t d = 4, d_z = 3;
    RelativePositionSelfAttention shaw(d, d_z, 2, gen);
    QKVSelfAttention qkv(d, d_z, d_z, gen);
    set(shaw.w_K, Tensor::zeros(shaw.w_K.shape())), set(shaw.w_V, Tensor::zeros(shaw.w_V.shape()));
    // Shaw's XW form against entry 37's X Wᵀ: W_Q(37) = W^Qᵀ, and so on.
    set(qkv.W_Q, transpose(shaw.W_Q.value(), 0, 1)), set(qkv.W_K, transpose(shaw.W_K.value(), 0, 1));
    set(qkv.W_V, transpose(shaw.W_V.value(), 0, 1));
    const Var x(Tensor::normal({2, 5, d}, 0, 1, gen));
    const Tensor mask = padding({5, 2}, 5);
    const AttentionOutput a = shaw.forward(x, mask), b = qkv.forward(x, mask);
    CHECK(max_abs_diff(a.output.value(), b.output.value()) < 1e-12);
    CHECK(max_abs_diff(a.weights.value(), b.weights.value()) < 1e-12);
}

TEST_CASE("relative_position_self_attention: a^K is Toeplitz and constant once |j − i| >= k") {
    Generator gen(480);
    const int64_t n = 7, k = 2, d_z = 3;
    RelativePositionSelfAttention shaw(4, d_z, k, gen);
    const Tensor aK = shaw.relative_keys(n).value();  // n×n×d_z
    REQUIRE(aK.shape() == Shape{n, n, d_z});
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j)
            for (int64_t c = 0; c < d_z; ++c) {
                const real v = aK[(i * n + j) * d_z + c];
                if (i + 1 < n && j + 1 < n) CHECK(aK[((i + 1) * n + j + 1) * d_z + c] == v);  // depends on j − i only
                const int64_t clipped = std::max(-k, std::min(k, j - i));
                CHECK(v == shaw.w_K.value()[(clipped + k) * d_z + c]);  // w^K[clip(j − i, k) + k]
            }
    // Different rows of the table where |j − i| < k: the positions are told apart.
    CHECK(aK[(0 * n + 1) * d_z] != aK[(1 * n + 0) * d_z]);
}

// ---- entry 50: random_synthesizer_attention ---------------------------------------------------------

TEST_CASE("random_synthesizer_attention: the gradient to R is nonzero; n > n_max throws") {
    Generator gen(50);
    RandomSynthesizerAttention synth(6, 3, 2, gen);
    const AttentionOutput a = synth.forward(Var(Tensor::normal({2, 5, 3}, 0, 1, gen)));
    sum(a.output).backward();
    double grad_norm = 0;
    for (int64_t i = 0; i < synth.R.numel(); ++i) grad_norm += std::abs(synth.R.grad()[i]);
    CHECK(grad_norm > 1e-3);
    CHECK_THROWS_WITH_AS(synth.forward(Var(Tensor::zeros({1, 7, 3}))), doctest::Contains("at most n_max = 6"),
                         std::invalid_argument);
}
