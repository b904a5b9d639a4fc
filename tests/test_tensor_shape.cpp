// Tests of tensor/ops_shape.cpp: views that share storage, the copying shape
// ops against hand values and naive loops, indexing with whole-number index
// tensors and its errors, and the printed form of a tensor.
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "tensor/ops.hpp"

using namespace attn;

namespace {

void check_values(const Tensor& t, const std::vector<real>& expected) {
    INFO("tensor " << t.str());
    CHECK(t.to_vector() == expected);
}

const Tensor m23 = Tensor::from({1, 2, 3, 4, 5, 6}, Shape{2, 3});

}  // namespace

TEST_CASE("shape: printing a 2×3 tensor") {
    CHECK(m23.str() == "tensor(2×3, [[1, 2, 3],\n        [4, 5, 6]])");
    CHECK(Tensor::scalar(2.5).str() == "tensor(scalar, 2.5)");
    CHECK(Tensor::arange(10).str() == "tensor(10, [0, 1, 2, ..., 7, 8, 9])");
}

TEST_CASE("shape: a long axis of rows is elided by a line of its own") {
    // Rows 0–2 and 6–8 of 9, each with its first and last 3 of 8 entries;
    // the "..." of the rows left out on its own line, as NumPy prints it.
    CHECK(Tensor::arange(72).reshape(Shape{9, 8}).str() ==
          "tensor(9×8, [[0, 1, 2, ..., 5, 6, 7],\n"
          "        [8, 9, 10, ..., 13, 14, 15],\n"
          "        [16, 17, 18, ..., 21, 22, 23],\n"
          "        ...,\n"
          "        [48, 49, 50, ..., 53, 54, 55],\n"
          "        [56, 57, 58, ..., 61, 62, 63],\n"
          "        [64, 65, 66, ..., 69, 70, 71]])");
}

TEST_CASE("shape: reshape, squeeze and unsqueeze are views") {
    Tensor a = m23.clone();
    Tensor r = reshape(a, {3, -1});
    CHECK(r.shape() == Shape{3, 2});
    CHECK(r.shares_storage_with(a));
    Tensor u = unsqueeze(a, 1);
    CHECK(u.shape() == Shape{2, 1, 3});
    CHECK(unsqueeze(a, -1).shape() == Shape{2, 3, 1});
    CHECK(unsqueeze(a, 0).shape() == Shape{1, 2, 3});
    CHECK(unsqueeze(Tensor::scalar(1), 0).shape() == Shape{1});
    Tensor s = squeeze(u, -2);
    CHECK(s.shape() == Shape{2, 3});
    s[0] = 42;
    CHECK(a[0] == 42);
    CHECK_THROWS_WITH_AS(squeeze(a, 1), "squeeze: axis 1 of shape 2×3 has size 3, not 1", std::invalid_argument);
    CHECK_THROWS_AS(unsqueeze(a, 3), std::out_of_range);
    CHECK_THROWS_AS(reshape(a, {4, 2}), std::invalid_argument);
}

TEST_CASE("shape: transpose and permute copy into the new order") {
    Tensor t = transpose(m23, 0, 1);
    CHECK(t.shape() == Shape{3, 2});
    check_values(t, {1, 4, 2, 5, 3, 6});
    CHECK_FALSE(t.shares_storage_with(m23));
    check_values(transpose(m23, -1, -2), {1, 4, 2, 5, 3, 6});

    const Tensor c = Tensor::arange(24).reshape(Shape{2, 3, 4});
    const std::vector<std::vector<int>> orders = {{2, 0, 1}, {0, 2, 1}, {1, 0, 2}, {0, 1, 2}, {-1, -3, -2}};
    for (const auto& order : orders) {
        Tensor p = permute(c, order);
        int ax[3];
        for (int i = 0; i < 3; ++i) ax[i] = order[static_cast<size_t>(i)] < 0 ? order[static_cast<size_t>(i)] + 3
                                                                              : order[static_cast<size_t>(i)];
        REQUIRE(p.shape() == Shape{c.shape()[ax[0]], c.shape()[ax[1]], c.shape()[ax[2]]});
        // out[i0, i1, i2] = in[j] with j[ax[d]] = i_d.
        for (int64_t i0 = 0; i0 < p.shape()[0]; ++i0)
            for (int64_t i1 = 0; i1 < p.shape()[1]; ++i1)
                for (int64_t i2 = 0; i2 < p.shape()[2]; ++i2) {
                    int64_t j[3];
                    j[ax[0]] = i0;
                    j[ax[1]] = i1;
                    j[ax[2]] = i2;
                    REQUIRE(p.at({i0, i1, i2}) == c.at({j[0], j[1], j[2]}));
                }
    }
    // Larger permutes of rank 3 and 4, leading axes kept or moved, the last
    // axis read with a stride: each element checked against its source.
    const Tensor big = Tensor::arange(3 * 37 * 2 * 21).reshape(Shape{3, 37, 2, 21});
    const Tensor square = Tensor::arange(2 * 32 * 48).reshape(Shape{2, 32, 48});
    const std::vector<std::pair<Tensor, std::vector<int>>> tiled = {
        {big, {0, 1, 3, 2}}, {big, {2, 0, 3, 1}}, {big, {0, 2, 3, 1}}, {square, {0, 2, 1}}, {square, {2, 1, 0}}};
    for (const auto& item : tiled) {
        const Tensor& in = item.first;
        const std::vector<int>& order = item.second;
        INFO(in.shape().str());
        const Tensor p = permute(in, order);
        const int r = in.rank();
        std::vector<int64_t> idx(static_cast<size_t>(r), 0), src(static_cast<size_t>(r), 0);
        for (int64_t e = 0; e < p.numel(); ++e) {
            int64_t rest = e;
            for (int d = r - 1; d >= 0; --d) {
                idx[static_cast<size_t>(d)] = rest % p.shape()[d];
                rest /= p.shape()[d];
            }
            for (int d = 0; d < r; ++d) src[static_cast<size_t>(order[static_cast<size_t>(d)])] = idx[static_cast<size_t>(d)];
            int64_t flat = 0;
            for (int d = 0; d < r; ++d) flat = flat * in.shape()[d] + src[static_cast<size_t>(d)];
            REQUIRE(p[e] == in[flat]);
        }
    }
    CHECK_THROWS_WITH_AS(permute(c, {0, 0, 1}), "permute: axes [0, 0, 1] are not a permutation of the 3 axes of shape 2×3×4",
                         std::invalid_argument);
    CHECK_THROWS_AS(permute(c, {0, 1}), std::invalid_argument);
    CHECK_THROWS_AS(transpose(c, 0, 3), std::out_of_range);
}

TEST_CASE("shape: slice with negative indices, steps and clamping") {
    const Tensor v = Tensor::arange(10);
    check_values(slice(v, 0, 2, 5), {2, 3, 4});
    check_values(slice(v, 0, -3, 10), {7, 8, 9});
    check_values(slice(v, 0, 1, -1, 3), {1, 4, 7});
    check_values(slice(v, 0, 0, 100, 4), {0, 4, 8});
    check_values(slice(v, 0, -100, 2), {0, 1});
    CHECK(slice(v, 0, 5, 2).shape() == Shape{0});
    Tensor cols = slice(m23, 1, 1, 3);
    CHECK(cols.shape() == Shape{2, 2});
    check_values(cols, {2, 3, 5, 6});
    check_values(slice(m23, -1, 0, 3, 2), {1, 3, 4, 6});
    check_values(slice(m23, 0, 1, 2), {4, 5, 6});
    CHECK_FALSE(slice(m23, 0, 0, 2).shares_storage_with(m23));
    CHECK_THROWS_WITH_AS(slice(v, 0, 0, 5, 0), "slice: step must be positive, got 0", std::invalid_argument);
    CHECK_THROWS_AS(slice(v, 1, 0, 5), std::out_of_range);
}

TEST_CASE("shape: concat, stack and split") {
    const Tensor b = Tensor::from({7, 8}, Shape{2, 1});
    Tensor c1 = concat({m23, b}, 1);
    CHECK(c1.shape() == Shape{2, 4});
    check_values(c1, {1, 2, 3, 7, 4, 5, 6, 8});
    Tensor c0 = concat({m23, Tensor::from({9, 9, 9}, Shape{1, 3}), m23}, 0);
    CHECK(c0.shape() == Shape{5, 3});
    check_values(c0, {1, 2, 3, 4, 5, 6, 9, 9, 9, 1, 2, 3, 4, 5, 6});
    check_values(concat({m23, Tensor::zeros(Shape{2, 0})}, -1), {1, 2, 3, 4, 5, 6});
    CHECK_THROWS_WITH_AS(concat({m23, Tensor::zeros(Shape{3, 4})}, 1),
                         "concat: part 1 of shape 3×4 does not match part 0 of shape 2×3 off axis 1",
                         std::invalid_argument);
    CHECK_THROWS_AS(concat({}, 0), std::invalid_argument);
    CHECK_THROWS_AS(concat({m23, Tensor::zeros(Shape{2})}, 0), std::invalid_argument);

    const Tensor x = Tensor::from({1, 2}), y = Tensor::from({3, 4});
    Tensor s0 = stack({x, y}, 0);
    CHECK(s0.shape() == Shape{2, 2});
    check_values(s0, {1, 2, 3, 4});
    Tensor s1 = stack({x, y}, -1);
    CHECK(s1.shape() == Shape{2, 2});
    check_values(s1, {1, 3, 2, 4});
    CHECK(stack({m23, m23, m23}, 1).shape() == Shape{2, 3, 3});
    CHECK_THROWS_WITH_AS(stack({x, Tensor::from({1, 2, 3})}, 0),
                         "stack: part 1 of shape 3 differs from part 0 of shape 2 (stack needs equal shapes)",
                         std::invalid_argument);

    std::vector<Tensor> parts = split(c1, {1, 3}, 1);
    REQUIRE(parts.size() == 2);
    check_values(parts[0], {1, 4});
    check_values(parts[1], {2, 3, 7, 5, 6, 8});
    CHECK(parts[1].shape() == Shape{2, 3});
    CHECK(concat(split(c0, {2, 0, 3}, 0), 0).to_vector() == c0.to_vector());
    CHECK_THROWS_WITH_AS(split(c1, {2, 1}, 1), "split: sizes 2 + 1 do not add up to the size 4 of axis 1 of shape 2×4",
                         std::invalid_argument);
}

TEST_CASE("shape: expand materialises a broadcast") {
    Tensor e = expand(Tensor::from({1, 2, 3}), Shape{2, 3});
    check_values(e, {1, 2, 3, 1, 2, 3});
    check_values(expand(Tensor::from({1, 2}, Shape{2, 1}), Shape{2, 3}), {1, 1, 1, 2, 2, 2});
    check_values(expand(Tensor::scalar(5), Shape{2, 2}), {5, 5, 5, 5});
    Tensor big = expand(Tensor::from({1, 2}, Shape{2, 1}), Shape{3, 2, 2});
    check_values(big, {1, 1, 2, 2, 1, 1, 2, 2, 1, 1, 2, 2});
    // expand then sum_to is the identity times the number of copies.
    check_values(sum_to(big, Shape{2, 1}), {6, 12});
    CHECK_THROWS_WITH_AS(expand(m23, Shape{4, 3}), "expand: shape 2×3 does not broadcast to 4×3",
                         std::invalid_argument);
    CHECK_THROWS_AS(expand(m23, Shape{3}), std::invalid_argument);
}

TEST_CASE("shape: index_select picks slices, repeats allowed") {
    check_values(index_select(m23, 0, {1, 1, 0}), {4, 5, 6, 4, 5, 6, 1, 2, 3});
    Tensor cols = index_select(m23, -1, {2, 0});
    CHECK(cols.shape() == Shape{2, 2});
    check_values(cols, {3, 1, 6, 4});
    CHECK(index_select(m23, 1, {}).shape() == Shape{2, 0});
    CHECK_THROWS_WITH_AS(index_select(m23, 0, {2}), "index_select: index 2 is out of range [0, 2) on axis 0 of shape 2×3",
                         std::out_of_range);
    CHECK_THROWS_AS(index_select(m23, 1, {-1}), std::out_of_range);
}

TEST_CASE("shape: gather and scatter_add") {
    // out[i][j] = a[i][index[i][j]] (axis 1).
    const Tensor a = Tensor::from({10, 11, 12, 13, 14, 20, 21, 22, 23, 24}, Shape{2, 5});
    Tensor g = gather(a, 1, Tensor::from({4, 0, 1, 1}, Shape{2, 2}));
    CHECK(g.shape() == Shape{2, 2});
    check_values(g, {14, 10, 21, 21});
    // The target log-probability case: index N×1.
    check_values(gather(a, -1, Tensor::from({2, 3}, Shape{2, 1})), {12, 23});
    // Axis 0: out[i][j] = a[index[i][j]][j].
    check_values(gather(a, 0, Tensor::from({1, 0, 1}, Shape{1, 3})), {20, 11, 22});

    CHECK_THROWS_WITH_AS(gather(a, 1, Tensor::from({7}, Shape{1, 1})),
                         "gather: index 7 is out of range [0, 5) on axis 1 of shape 2×5", std::out_of_range);
    CHECK_THROWS_WITH_AS(gather(a, 1, Tensor::from({1.5}, Shape{1, 1})), "gather: index 1.5 is not a whole number",
                         std::invalid_argument);
    CHECK_THROWS_AS(gather(a, 1, Tensor::from({-1}, Shape{1, 1})), std::out_of_range);
    CHECK_THROWS_WITH_AS(gather(a, 1, Tensor::from({0, 0})),
                         "gather: index of shape 2 and tensor of shape 2×5 need the same rank", std::invalid_argument);
    CHECK_THROWS_WITH_AS(gather(a, 1, Tensor::zeros(Shape{3, 1})),
                         "gather: index of shape 3×1 is larger than tensor of shape 2×5 on axis 0",
                         std::invalid_argument);

    // scatter_add adds repeated indices.
    Tensor s = scatter_add(Shape{2, 3}, 1, Tensor::from({0, 0, 2, 1}, Shape{2, 2}), Tensor::from({1, 2, 3, 4}, Shape{2, 2}));
    CHECK(s.shape() == Shape{2, 3});
    check_values(s, {3, 0, 0, 0, 4, 3});
    CHECK_THROWS_AS(scatter_add(Shape{2, 3}, 1, Tensor::from({3}, Shape{1, 1}), Tensor::ones(Shape{1, 1})),
                    std::out_of_range);
    CHECK_THROWS_AS(scatter_add(Shape{2, 3}, 1, Tensor::zeros(Shape{1, 1}), Tensor::ones(Shape{1, 2})),
                    std::invalid_argument);

    // scatter_add is gather's adjoint: <gather(x, idx), y> = <x, scatter_add(idx, y)>.
    Generator gen(4);
    const Tensor x = Tensor::normal(Shape{3, 4, 5}, 0, 1, gen);
    for (int axis = 0; axis < 3; ++axis) {
        Shape ishape = Shape{2, 3, 4}.with(axis, 6);
        Tensor idx = Tensor::empty(ishape);
        for (int64_t i = 0; i < idx.numel(); ++i)
            idx[i] = static_cast<real>(gen.randint(static_cast<uint64_t>(x.shape()[axis])));
        const Tensor y = Tensor::normal(ishape, 0, 1, gen);
        const double lhs = sum(mul(gather(x, axis, idx), y)).item();
        const double rhs = sum(mul(x, scatter_add(x.shape(), axis, idx, y))).item();
        CHECK(lhs == doctest::Approx(rhs).epsilon(1e-5));
    }
}

TEST_CASE("shape: one_hot") {
    Tensor o = one_hot(Tensor::from({2, 0, 1, 2}, Shape{2, 2}), 3);
    CHECK(o.shape() == Shape{2, 2, 3});
    check_values(o, {0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1});
    CHECK(one_hot(Tensor::scalar(1), 2).shape() == Shape{2});
    CHECK_THROWS_WITH_AS(one_hot(Tensor::from({3}), 3), "one_hot: index 3 is out of range [0, 3) for 3 classes",
                         std::out_of_range);
    CHECK_THROWS_AS(one_hot(Tensor::from({0.5}), 3), std::invalid_argument);
    CHECK_THROWS_AS(one_hot(Tensor::from({0}), 0), std::invalid_argument);
}
