// Self-attention, double build: catalog entries 37 (qkv_self_attention) and
// 38 (plain_self_attention), attention/self_attention.hpp: their independent
// references and registry entries (tests/grad/catalog.hpp), then the catalog's
// reference values and properties. Relative-position self-attention (48) and
// the Synthesizer (50) are in test_transformer.cpp, the position encodings
// (46, 47) in test_position.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "attention/self_attention.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/catalog.hpp"
#include "tests/grad/helpers.hpp"
#include "tests/grad/transformer_reference.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

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
