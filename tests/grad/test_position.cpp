// Position encodings, double build: catalog entries 46
// (sinusoidal_position_encoding) and 47 (learned_position_embedding): their
// independent references and registry entries (tests/grad/catalog.hpp), then
// the catalog's reference values and properties.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "attention/position.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/catalog.hpp"
#include "tests/grad/helpers.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

// ---- the independent references: the catalog's formulas in plain loops ------------------

// 46: PE_{t,2i} = sin(t / 10000^{2i/D}),  PE_{t,2i+1} = cos(t / 10000^{2i/D}),  t = 0..n−1
//   n, D → PE n×D.
Array sinusoidal_table(int64_t n, int64_t D) {
    Array PE({n, D});
    for (int64_t t = 0; t < n; ++t)
        for (int64_t i = 0; i < D / 2; ++i) {
            const double omega = 1.0 / std::pow(10000.0, 2.0 * double(i) / double(D));
            PE(t, 2 * i) = std::sin(double(t) * omega);
            PE(t, 2 * i + 1) = std::cos(double(t) * omega);
        }
    return PE;
}

// 46: X ← X + PE   X …×n×D (one sequence n×D, or a batch B×n×D) → the same shape, and PE n×D.
std::vector<Expected> sinusoidal_position_encoding_reference(const Ref& r) {
    const Array& X = r.x[0];
    const int64_t n = X.size(-2), D = X.size(-1);
    const Array PE = sinusoidal_table(n, D);
    Array Y = X;
    for (int64_t f = 0; f < X.numel(); ++f) Y[f] = X[f] + PE[f % (n * D)];  // row t of every example gets PE_t
    return {{"output", Y}, {"pe", PE}};
}

// 47: X ← X + P_{0:n}   P n_max×d, X …×n×d → the same shape: row t gets P[t, :].
std::vector<Expected> learned_position_embedding_reference(const Ref& r) {
    const Array& X = r.x[0];
    const Array P = r.p["P"];
    const int64_t n = X.size(-2), d = X.size(-1);
    Array Y = X;
    for (int64_t f = 0; f < X.numel(); ++f) {
        const int64_t t = (f / d) % n, c = f % d;
        Y[f] = X[f] + P(t, c);
    }
    return {{"output", Y}};
}

// ---- entry 46 --------------------------------------------------------------------------------

// Each (sin, cos) pair of PE has unit norm.
Property pairs_have_unit_norm() {
    return {"each (sin, cos) pair of PE has unit norm", [](const PropertyContext& c) -> std::string {
                const Tensor PE = c.run(c.inputs, c.masks)["pe"];  // a copy: the map is a temporary
                for (int64_t k = 0; k + 1 < PE.numel(); k += 2) {
                    const double norm2 = PE[k] * PE[k] + PE[k + 1] * PE[k + 1];
                    if (std::abs(norm2 - 1) > 1e-12)
                        return "the pair at flat index " + std::to_string(k) + " has squared norm " +
                               std::to_string(norm2);
                }
                return "";
            }};
}

Case sinusoidal_case(std::string variant, Shape x) {
    Case c;
    c.variant = std::move(variant);
    c.inputs = {x};
    c.run = [](Module*, In in, Masks) -> Outputs {
        const int64_t n = in[0].size(-2), D = in[0].size(-1);
        return {{"output", add_sinusoidal_position_encoding(in[0])},
                {"pe", Var(sinusoidal_position_encoding(n, D)), false}};
    };
    c.reference = sinusoidal_position_encoding_reference;
    c.properties = {pairs_have_unit_norm()};
    return c;
}

const RegisterEntry sinusoidal_entry(46, "sinusoidal_position_encoding", {
    sinusoidal_case("B 2, n 3, D 4", {2, 3, 4}),
    sinusoidal_case("n 9, D 6: three frequencies, angles past 2π", {2, 9, 6}),
    sinusoidal_case("D 2: one pair", {1, 5, 2}),
    sinusoidal_case("one sequence n×D (rank 2), n 4, D 8", {4, 8}),
});

// ---- entry 47 --------------------------------------------------------------------------------

Case learned_case(std::string variant, Shape x, int64_t n_max) {
    Case c;
    c.variant = std::move(variant);
    c.inputs = {x};
    const int64_t d = x[x.rank() - 1];
    c.make = [n_max, d](Generator& g) { return std::make_unique<LearnedPositionEmbedding>(n_max, d, g); };
    c.run = [](Module* m, In in, Masks) -> Outputs { return {{"output", as<LearnedPositionEmbedding>(m)(in[0])}}; };
    c.reference = learned_position_embedding_reference;
    return c;
}

const RegisterEntry learned_entry(47, "learned_position_embedding", {
    learned_case("n 3 < n_max 5, d 4", {2, 3, 4}, 5),
    learned_case("n = n_max = 4, d 2", {2, 4, 2}, 4),
    learned_case("one sequence n×d (rank 2), n 3 < n_max 6", {3, 4}, 6),
});

}  // namespace

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
    const Tensor W = concat({identity_matrix(d), pos.P.value()}, 0);  // (d + n_max)×d
    CHECK(max_abs_diff(pos(Var(x)).value(), matmul(inputs, W)) < 1e-12);
    CHECK(pos.id() == "learned_position_embedding");
    CHECK_THROWS_WITH_AS(pos(Var(Tensor::zeros({1, 7, d}))),
                         doctest::Contains("n = 7 positions (t up to 6) exceeds n_max = 6"), std::invalid_argument);
}
