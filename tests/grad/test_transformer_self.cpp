// Self-attention and position encodings, double build: catalog entries 37
// (qkv_self_attention), 38 (plain_self_attention), 46
// (sinusoidal_position_encoding), 47 (learned_position_embedding), 48
// (relative_position_self_attention) and 50 (random_synthesizer_attention):
// their registry cases for the generic gradient check, then the catalog's
// properties and reference values.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "attention/position.hpp"
#include "attention/self_attention.hpp"
#include "attention/transformer.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/attention_registry.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

Var output_and_weights(const AttentionOutput& a) {
    return concat({reshape(a.output, {-1}), reshape(a.weights, {-1})}, 0);
}

Tensor padding(const std::vector<int64_t>& lengths, int64_t n) { return key_mask(length_mask(lengths, n)); }

const RegisterMechanisms self_attention_cases({
    {"qkv_self_attention", "X' = Y, padding", {{2, 4, 5}}, [](Generator& g) { return std::make_unique<QKVSelfAttention>(5, 3, 2, g); },
     [](Module* m, const std::vector<Var>& x) {
         return output_and_weights(as<QKVSelfAttention>(m).forward(x[0], padding({4, 2}, 4)));
     }},
    {"qkv_self_attention", "X' = LayerNorm(X + Y W_Oᵀ), causal", {{2, 4, 3}},
     [](Generator& g) {
         QKVSelfAttention::Options o;
         o.residual_norm = true;
         return std::make_unique<QKVSelfAttention>(3, 2, 2, g, o);
     },
     [](Module* m, const std::vector<Var>& x) { return as<QKVSelfAttention>(m).forward(x[0], {}, true).output; }},
    {"plain_self_attention", "τ = √d, padding", {{2, 4, 3}}, nullptr,
     [](Module*, const std::vector<Var>& x) { return output_and_weights(plain_self_attention(x[0], padding({4, 3}, 4))); }},
    {"plain_self_attention", "τ = 1, causal", {{1, 5, 2}}, nullptr,
     [](Module*, const std::vector<Var>& x) { return plain_self_attention(x[0], {}, false, true).output; }},
    {"sinusoidal_position_encoding", "X + PE", {{2, 3, 4}}, nullptr,
     [](Module*, const std::vector<Var>& x) { return add_sinusoidal_position_encoding(x[0]); }},
    {"learned_position_embedding", "X + P_{0:n}, n < n_max", {{2, 3, 4}},
     [](Generator& g) { return std::make_unique<LearnedPositionEmbedding>(5, 4, g); },
     [](Module* m, const std::vector<Var>& x) { return as<LearnedPositionEmbedding>(m)(x[0]); }},
    {"relative_position_self_attention", "k = 2, n = 5, padding", {{2, 5, 4}},
     [](Generator& g) { return std::make_unique<RelativePositionSelfAttention>(4, 3, 2, g); },
     [](Module* m, const std::vector<Var>& x) {
         return output_and_weights(as<RelativePositionSelfAttention>(m).forward(x[0], padding({5, 3}, 5)));
     }},
    {"relative_position_self_attention", "k = 1, causal", {{1, 4, 3}},
     [](Generator& g) { return std::make_unique<RelativePositionSelfAttention>(3, 2, 1, g); },
     [](Module* m, const std::vector<Var>& x) { return as<RelativePositionSelfAttention>(m).forward(x[0], causal_mask(4, 4)).output; }},
    {"random_synthesizer_attention", "n = 4 < n_max, padding", {{2, 4, 3}},
     [](Generator& g) { return std::make_unique<RandomSynthesizerAttention>(6, 3, 2, g); },
     [](Module* m, const std::vector<Var>& x) {
         return output_and_weights(as<RandomSynthesizerAttention>(m).forward(x[0], padding({4, 2}, 4)));
     }},
});

double max_abs_diff(const Tensor& a, const Tensor& b) {
    REQUIRE(a.shape() == b.shape());
    double worst = 0;
    for (int64_t i = 0; i < a.numel(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
    return worst;
}

// Rows of x (B×n×d) in the order perm: row i of the result is row perm[i].
Tensor permute_rows(const Tensor& x, const std::vector<int64_t>& perm) { return index_select(x, 1, perm); }
// Rows and columns of weights (B×n×n) permuted together.
Tensor permute_both(const Tensor& w, const std::vector<int64_t>& perm) {
    return index_select(index_select(w, 1, perm), 2, perm);
}

void set(Var& parameter, const Tensor& value) { parameter.value().copy_(value); }

Tensor identity(int64_t d) {
    Tensor t = Tensor::zeros(Shape{d, d});
    for (int64_t i = 0; i < d; ++i) t[i * d + i] = 1;
    return t;
}

}  // namespace

// ---- entry 37: qkv_self_attention ----------------------------------------------------------

TEST_CASE("qkv_self_attention: permutation equivariance, Y(PX) = P Y(X), weights P A Pᵀ") {
    Generator gen(37);
    QKVSelfAttention attention(4, 3, 5, gen);
    const Tensor x = Tensor::normal({2, 6, 4}, 0, 1, gen);
    const std::vector<int64_t> perm = {3, 0, 5, 1, 4, 2};
    const AttentionOutput a = attention.forward(Var(x));
    const AttentionOutput b = attention.forward(Var(permute_rows(x, perm)));
    CHECK(max_abs_diff(b.output.value(), permute_rows(a.output.value(), perm)) < 1e-12);
    CHECK(max_abs_diff(b.weights.value(), permute_both(a.weights.value(), perm)) < 1e-12);
}

TEST_CASE("qkv_self_attention: with a causal mask, row i does not change when rows after i change") {
    Generator gen(3737);
    QKVSelfAttention::Options options;
    options.residual_norm = true;
    QKVSelfAttention attention(4, 3, 3, gen, options);
    const Tensor x = Tensor::normal({1, 6, 4}, 0, 1, gen);
    Tensor later = x.clone();
    for (int64_t i = 4 * 4; i < 6 * 4; ++i) later[i] += 3;  // rows 4 and 5
    const Tensor y = attention.forward(Var(x), {}, true).output.value();
    const Tensor y2 = attention.forward(Var(later), {}, true).output.value();
    for (int64_t i = 0; i < 6 * 4; ++i) {
        if (i < 4 * 4) CHECK(y2[i] == y[i]);
        else CHECK(y2[i] != y[i]);
    }
}

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
    set(qkv.W_Q, identity(d)), set(qkv.W_K, identity(d)), set(qkv.W_V, identity(d));
    const Var x(Tensor::normal({2, 5, d}, 0, 1, gen));
    const Tensor mask = padding({5, 3}, 5);
    const AttentionOutput a = plain_self_attention(x, mask), b = qkv.forward(x, mask);
    CHECK(max_abs_diff(a.output.value(), b.output.value()) < 1e-12);
    CHECK(max_abs_diff(a.weights.value(), b.weights.value()) < 1e-12);
}

TEST_CASE("plain_self_attention: equal rows give Y = X; permutation equivariance") {
    const Tensor same = expand(Tensor::from({0.5, -1, 2}, {1, 1, 3}), Shape{2, 4, 3});
    for (bool scaled : {true, false})
        CHECK(max_abs_diff(plain_self_attention(Var(same), {}, scaled).output.value(), same) < 1e-12);
    Generator gen(380);
    const Tensor x = Tensor::normal({1, 5, 3}, 0, 1, gen);
    const std::vector<int64_t> perm = {4, 2, 0, 1, 3};
    CHECK(max_abs_diff(plain_self_attention(Var(permute_rows(x, perm)), {}, false).output.value(),
                       permute_rows(plain_self_attention(Var(x), {}, false).output.value(), perm)) < 1e-12);
}

// ---- entry 46: sinusoidal_position_encoding ---------------------------------------------------

TEST_CASE("sinusoidal_position_encoding: the catalog's values for D = 4, unit pairs, PE_{t+k} = R_k PE_t") {
    const Tensor pe = sinusoidal_position_encoding(3, 4);
    const std::vector<double> expected = {0, 1, 0, 1,                               // PE_0
                                          0.841471, 0.540302, 0.010000, 0.999950,   // PE_1
                                          0.909297, -0.416147, 0.019999, 0.999800};  // PE_2
    for (int64_t i = 0; i < 12; ++i) {
        CAPTURE(i);
        CHECK(std::abs(pe[i] - expected[static_cast<size_t>(i)]) < 1e-6);
    }
    // Each (sin, cos) pair has unit norm; R_k rotates pair i by the angle k·ω_i, whatever t.
    const int64_t n = 20, D = 8, k = 5;
    const Tensor big = sinusoidal_position_encoding(n, D);
    for (int64_t t = 0; t + k < n; ++t)
        for (int64_t i = 0; i < D / 2; ++i) {
            const double s = big[t * D + 2 * i], c = big[t * D + 2 * i + 1];
            CHECK(std::abs(s * s + c * c - 1) < 1e-12);
            const double angle = k / std::pow(10000.0, 2.0 * i / D);  // R_k's block i: [[cos, sin], [−sin, cos]]
            CHECK(std::abs(big[(t + k) * D + 2 * i] - (std::cos(angle) * s + std::sin(angle) * c)) < 1e-12);
            CHECK(std::abs(big[(t + k) * D + 2 * i + 1] - (-std::sin(angle) * s + std::cos(angle) * c)) < 1e-12);
        }
    CHECK_THROWS_WITH_AS(sinusoidal_position_encoding(3, 5), doctest::Contains("even width D"), std::invalid_argument);
}

// ---- entry 47: learned_position_embedding ----------------------------------------------------

TEST_CASE("learned_position_embedding: equals the concat-one-hot form [x_t; onehot(t)]·[I; P]; t >= n_max throws") {
    Generator gen(47);
    const int64_t n_max = 6, d = 3, B = 2, n = 4;
    LearnedPositionEmbedding pos(n_max, d, gen);
    const Tensor x = Tensor::normal({B, n, d}, 0, 1, gen);
    // [x_t; onehot(t)] is B×n×(d + n_max); W = [W_x W_p] with W_x = I and W_p = Pᵀ, applied as rows: · [I; P].
    const Tensor onehot = expand(one_hot(Tensor::arange(n), n_max).reshape(Shape{1, n, n_max}), Shape{B, n, n_max});
    const Tensor inputs = concat({x, onehot}, 2);
    const Tensor W = concat({identity(d), pos.P.value()}, 0);  // (d + n_max)×d
    CHECK(max_abs_diff(pos(Var(x)).value(), matmul(inputs, W)) < 1e-12);
    CHECK(pos.id() == "learned_position_embedding");
    CHECK_THROWS_WITH_AS(pos(Var(Tensor::zeros({1, 7, d}))),
                         doctest::Contains("n = 7 positions (t up to 6) exceeds n_max = 6"), std::invalid_argument);
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

TEST_CASE("random_synthesizer_attention: the weights do not depend on the input; the gradient to R is nonzero") {
    Generator gen(50);
    RandomSynthesizerAttention synth(6, 3, 2, gen);
    const AttentionOutput a = synth.forward(Var(Tensor::normal({2, 5, 3}, 0, 1, gen)));
    const AttentionOutput b = synth.forward(Var(Tensor::normal({2, 5, 3}, 0, 5, gen)));
    CHECK(max_abs_diff(a.weights.value(), b.weights.value()) == 0);
    for (int64_t i = 0; i < 25; ++i) CHECK(a.weights.value()[i] == a.weights.value()[25 + i]);  // every example
    sum(a.output).backward();
    double grad_norm = 0;
    for (int64_t i = 0; i < synth.R.numel(); ++i) grad_norm += std::abs(synth.R.grad()[i]);
    CHECK(grad_norm > 1e-3);
    CHECK_THROWS_WITH_AS(synth.forward(Var(Tensor::zeros({1, 7, 3}))), doctest::Contains("at most n_max = 6"),
                         std::invalid_argument);
}
