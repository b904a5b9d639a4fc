// Area attention, catalog entry 59 (attention/area.hpp), double build: its
// independent reference (the areas enumerated again, their features by brute
// force) and registry entry (tests/grad/catalog.hpp), then the hand-computed
// tests.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "attention/area.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/catalog.hpp"
#include "tests/grad/helpers.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

// ---- 59. area_attention -------------------------------------------------------------------

struct AreaRef {
    int64_t top, left, height, width;
};

// The areas of an H×W grid: every h ≤ A_h rows by w ≤ A_w columns rectangle,
// in the module's order (height, width, top, left).
std::vector<AreaRef> areas_reference(int64_t H, int64_t W, int64_t max_h, int64_t max_w) {
    std::vector<AreaRef> out;
    for (int64_t h = 1; h <= max_h && h <= H; ++h)
        for (int64_t w = 1; w <= max_w && w <= W; ++w)
            for (int64_t top = 0; top + h <= H; ++top)
                for (int64_t left = 0; left + w <= W; ++left) out.push_back({top, left, h, w});
    return out;
}

// Σ, mean and the standard deviation √(|mean x² − μ²| + 1e-6) of the rows of X[b]
// in the cells of area a, by brute force; `kept` whether every cell is kept.
struct AreaStats {
    Vec sum, mean, stddev;
    bool kept;
};
AreaStats area_stats(const Array& X, int64_t b, int64_t W, const AreaRef& a, const Vec& keep) {
    const int64_t d = X.size(2);
    AreaStats s{Vec(static_cast<size_t>(d), 0.0), {}, {}, true};
    Vec squares(static_cast<size_t>(d), 0.0);
    for (int64_t i = a.top; i < a.top + a.height; ++i)
        for (int64_t j = a.left; j < a.left + a.width; ++j) {
            const Vec x = row(X, b, i * W + j);
            s.sum = add(s.sum, x);
            squares = add(squares, hadamard(x, x));
            s.kept = s.kept && keep[static_cast<size_t>(i * W + j)] != 0;
        }
    const double size = static_cast<double>(a.height * a.width);
    s.mean = scale(s.sum, 1 / size);
    for (int64_t k = 0; k < d; ++k) {
        const double mu = s.mean[static_cast<size_t>(k)];
        s.stddev.push_back(std::sqrt(std::abs(squares[static_cast<size_t>(k)] / size - mu * mu) + 1e-6));
    }
    return s;
}

// 59 (Li et al. 2019), over the areas r above (cells i ∈ r, |r| = h_r·w_r):
//   μ_r = mean_i k_i,  σ_r = √(|mean_i k_i² − μ_r²| + 1e-6),  v_r = Σ_i v_i (or the mean)
//   basic: k_r = μ_r;  rich: k_r = W_d ReLU(W_m [μ_r; σ_r; E_h[h_r − 1]; E_w[w_r − 1]] + b_m)
//   a = softmax_r(q·k_r / (τ √d)) over the areas whose cells are all kept,  o = Σ_r a_r v_r
// Q B×m×d, K B×n×d, V B×n×d_v (n = H·W, row-major) → o B×m×d_v, a B×m×N_a,
// and the area keys B×N_a×d and values B×N_a×d_v.
std::vector<Expected> area_reference(const Ref& r, const AreaAttention::Options& o, bool with_areas) {
    const Array &Q = r.x[0], &K = r.x[1], &V = r.x[2];
    const int64_t B = K.size(0), n = K.size(1), d = K.size(2), dv = V.size(2), m = Q.size(1);
    const int64_t H = o.grid_height, W = n / H;
    const std::vector<AreaRef> areas = areas_reference(H, W, o.max_height, o.max_width);
    const int64_t Na = static_cast<int64_t>(areas.size());
    Array keys({B, Na, d}), values({B, Na, dv}), out({B, m, dv}), weights({B, m, Na});
    for (int64_t b = 0; b < B; ++b) {
        const Vec keep = keep_row(mask_or_all(r, 0), b, n);
        Vec area_keep;
        for (int64_t a = 0; a < Na; ++a) {
            const AreaRef& area = areas[static_cast<size_t>(a)];
            const AreaStats k = area_stats(K, b, W, area, keep), v = area_stats(V, b, W, area, keep);
            area_keep.push_back(k.kept ? 1 : 0);
            set_row(values, b, a, o.sum_values ? v.sum : v.mean);
            if (!o.rich_keys) {
                set_row(keys, b, a, k.mean);
                continue;
            }
            const Vec sizes = concat(row(r.p["E_h"], area.height - 1), row(r.p["E_w"], area.width - 1));
            const Vec features = concat(concat(k.mean, k.stddev), sizes);
            const Vec hidden = testing::each(add(matvec(r.p["W_m"], features), vec(r.p["b_m"])), relu);
            set_row(keys, b, a, matvec(r.p["W_d"], hidden));
        }
        for (int64_t i = 0; i < m; ++i) {
            Vec e;
            for (int64_t a = 0; a < Na; ++a)
                e.push_back(dot(row(Q, b, i), row(keys, b, a)) / (o.temperature * std::sqrt(double(d))));
            const Vec alpha = softmax(e, area_keep);
            set_row(weights, b, i, alpha);
            Vec ctx(static_cast<size_t>(dv), 0.0);
            for (int64_t a = 0; a < Na; ++a) ctx = add(ctx, scale(row(values, b, a), alpha[static_cast<size_t>(a)]));
            set_row(out, b, i, ctx);
        }
    }
    if (!with_areas) return {{"output", out}, {"weights", weights}};
    return {{"output", out}, {"weights", weights}, {"area_keys", keys}, {"area_values", values}};
}

Case area_case(std::string variant, std::vector<Shape> inputs, std::vector<Tensor> masks,
               AreaAttention::Options o) {
    // With a mask, the area keys and values of areas over masked cells move
    // with those cells; only the attention's outputs are compared then.
    const bool with_areas = masks.empty();
    Case c;
    c.variant = std::move(variant), c.inputs = std::move(inputs), c.masks = std::move(masks);
    c.make = [o](Generator& g) { return std::make_unique<AreaAttention>(o, g); };
    c.run = [with_areas](Module* m, In x, Masks k) {
        const auto out = as<AreaAttention>(m).forward(x[0], x[1], x[2], mask_or_none(k, 0));
        Outputs named{{"output", out.output}, {"weights", out.weights}};
        if (with_areas) named.push_back({"area_keys", out.area_keys}), named.push_back({"area_values", out.area_values});
        return named;
    };
    c.reference = [o, with_areas](const Ref& r) { return area_reference(r, o, with_areas); };
    if (!with_areas) c.masking = {{.mask = 0, .inputs = {1, 2}, .weights = {"weights"}, .zero_when_empty = {"output"}}};
    c.properties = {rows_sum_to_one("weights")};
    return c;
}

// area_features alone: x B×n×d on an H-row grid → Σ, μ, σ per area and the keep mask.
std::vector<Expected> area_features_reference(const Ref& r, int64_t H, int64_t max_h, int64_t max_w) {
    const Array& X = r.x[0];
    const int64_t B = X.size(0), n = X.size(1), d = X.size(2), W = n / H;
    const std::vector<AreaRef> areas = areas_reference(H, W, max_h, max_w);
    const int64_t Na = static_cast<int64_t>(areas.size());
    Array sum({B, Na, d}), mean({B, Na, d}), stddev({B, Na, d}), keep({B, Na});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t a = 0; a < Na; ++a) {
            const AreaStats s = area_stats(X, b, W, areas[static_cast<size_t>(a)], keep_row(r.masks[0], b, n));
            set_row(sum, b, a, s.sum), set_row(mean, b, a, s.mean), set_row(stddev, b, a, s.stddev);
            keep(b, a) = s.kept ? 1 : 0;
        }
    return {{"sum", sum}, {"mean", mean}, {"stddev", stddev}, {"keep", keep}};
}

const RegisterEntry area_entry(59, "area_attention", {
    area_case("1-D basic keys, A_w 3, n 5 of d 4, d_v 3, summed values, lengths 5 and 3",
              {Shape{2, 2, 4}, Shape{2, 5, 4}, Shape{2, 5, 3}}, {keep_first({5, 3}, 5)}, {.max_width = 3}),
    area_case("1-D basic keys, A_w 2, n 4 (7 areas), mean values, τ 2, no mask",
              {Shape{2, 3, 3}, Shape{2, 4, 3}, Shape{2, 4, 2}}, {},
              {.max_width = 2, .sum_values = false, .temperature = 2}),
    area_case("1-D rich keys, A_w 2, n 4 of d 4 (W_d 4×4 square), mean values, no mask",
              {Shape{2, 2, 4}, Shape{2, 4, 4}, Shape{2, 4, 2}}, {},
              {.max_width = 2, .rich_keys = true, .sum_values = false, .dim = 4}),
    area_case("1-D rich keys, A_w 4 wider than the sequence of 3 (widths 1–3 only), summed values, no mask",
              {Shape{2, 2, 2}, Shape{2, 3, 2}, Shape{2, 3, 3}}, {},
              {.max_width = 4, .rich_keys = true, .dim = 2, .hidden_dim = 3}),
    area_case("2-D rich keys on a 2×3 grid, areas up to 2×2, τ 0.5, d_hidden 3, summed values, no mask",
              {Shape{2, 2, 4}, Shape{2, 6, 4}, Shape{2, 6, 2}}, {},
              {.max_width = 2, .max_height = 2, .grid_height = 2, .rich_keys = true, .temperature = 0.5, .dim = 4,
               .hidden_dim = 3}),
    area_case("2-D basic keys on a 3×3 grid, areas up to 2 rows × 3 columns, lengths 9 and 5",
              {Shape{2, 2, 3}, Shape{2, 9, 3}, Shape{2, 9, 2}}, {keep_first({9, 5}, 9)},
              {.max_width = 3, .max_height = 2, .grid_height = 3}),
    area_case("2-D rich keys on a 2×2 grid, areas up to 2×2, τ 1.5, mean values, lengths 4 and 3",
              {Shape{2, 3, 4}, Shape{2, 4, 4}, Shape{2, 4, 3}}, {keep_first({4, 3}, 4)},
              {.max_width = 2, .max_height = 2, .grid_height = 2, .rich_keys = true, .sum_values = false,
               .temperature = 1.5, .dim = 4}),
    {.variant = "area_features alone: Σ, μ, σ and the keep mask on a 3×4 grid, areas up to 2×3, lengths 12 and 7",
     .inputs = {Shape{2, 12, 2}},
     .masks = {keep_first({12, 7}, 12)},
     .run = [](Module*, In x, Masks k) {
         const AreaFeatures f = area_features(x[0], 3, enumerate_areas(3, 4, 2, 3), k[0]);
         return Outputs{{"sum", f.sum}, {"mean", f.mean}, {"stddev", f.stddev}, {"keep", Var(f.keep), false}};
     },
     .reference = [](const Ref& r) { return area_features_reference(r, 3, 2, 3); }},
});

}  // namespace

// ---- 59. area_attention ---------------------------------------------------------------------

TEST_CASE("area_attention: n 4 and A_w 2 give 7 areas; a 3×3 grid with areas up to 2×2 gives 9 + 6 + 6 + 4") {
    CHECK(enumerate_areas(1, 4, 1, 2).size() == 7);
    CHECK(enumerate_areas(3, 3, 2, 2).size() == 25);
}

TEST_CASE("area_attention: the summed-area table equals brute-force enumeration (1-D and 2-D)") {
    Generator gen(59);
    for (auto [H, W, Ah, Aw] : {std::array<int64_t, 4>{1, 6, 1, 3}, std::array<int64_t, 4>{3, 4, 2, 3}}) {
        const Tensor x = normal({2, H * W, 3}, gen);
        const auto areas = enumerate_areas(H, W, Ah, Aw);
        const AreaFeatures f = area_features(Var(x), H, areas);
        for (int64_t b = 0; b < 2; ++b)
            for (size_t r = 0; r < areas.size(); ++r)
                for (int64_t c = 0; c < 3; ++c) {
                    const Area& a = areas[r];
                    double total = 0, squares = 0;
                    for (int64_t i = a.top; i < a.top + a.height; ++i)
                        for (int64_t j = a.left; j < a.left + a.width; ++j) {
                            const double v = x.at({b, i * W + j, c});
                            total += v;
                            squares += v * v;
                        }
                    const double n = static_cast<double>(a.height * a.width), mu = total / n;
                    const auto ri = static_cast<int64_t>(r);
                    CHECK(std::abs(f.sum.value().at({b, ri, c}) - total) < 1e-12);
                    CHECK(std::abs(f.mean.value().at({b, ri, c}) - mu) < 1e-12);
                    CHECK(std::abs(f.stddev.value().at({b, ri, c}) -
                                   std::sqrt(std::abs(squares / n - mu * mu) + 1e-6)) < 1e-9);
                }
    }
}

TEST_CASE("area_attention: A_w = A_h = 1 with basic keys is ordinary scaled dot-product attention") {
    Generator gen(60);
    AreaAttention att({.max_width = 1}, gen);
    const Tensor Q = normal({2, 3, 4}, gen), K = normal({2, 5, 4}, gen), V = normal({2, 5, 2}, gen);
    const auto out = att.forward(Var(Q), Var(K), Var(V));
    const Tensor alpha = softmax(mul(matmul(Q, K, false, true), Tensor::scalar(0.5)), -1);
    CHECK(allclose(out.weights.value(), alpha, 0, 1e-12));
    CHECK(allclose(out.output.value(), matmul(alpha, V), 0, 1e-12));
}

TEST_CASE("area_attention: areas that touch padding get weight 0") {
    Generator gen(61);
    AreaAttention att({.max_width = 2, .rich_keys = true, .dim = 4}, gen);
    const auto out =
        att.forward(Var(normal({1, 2, 4}, gen)), Var(normal({1, 4, 4}, gen)), Var(normal({1, 4, 2}, gen)),
                    keep_first({3}, 4));
    // areas: [0] [1] [2] [3] [0,1] [1,2] [2,3] — [3] and [2,3] touch the padded item 3
    REQUIRE(out.areas.size() == 7);
    for (int64_t q = 0; q < 2; ++q) {
        CHECK(out.weights.value().at({0, q, 3}) == 0);
        CHECK(out.weights.value().at({0, q, 6}) == 0);
        CHECK(out.weights.value().at({0, q, 5}) > 0);
    }
    check_sums_to_one(out.weights.value());
}

TEST_CASE("area_attention: its survey tag") {
    Generator gen(63);
    CHECK(AreaAttention({}, gen).taxonomy().scoring == "scaled_dot_score");
}
