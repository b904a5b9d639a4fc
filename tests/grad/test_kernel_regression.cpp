// Nadaraya–Watson pooling, catalog entries 51–52 (attention/kernel_regression.hpp):
// gradient-check cases in the attention registry, and the catalog's reference
// values in double precision (atol 1e-6).
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "attention/kernel_regression.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/attention_registry.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {


// Each of the 3 queries hides one of the 4 keys (leave-one-out training).
Tensor leave_one_out() {
    Tensor keep = Tensor::ones({1, 3, 4});
    for (int64_t j = 0; j < 3; ++j) keep[j * 4 + j] = 0;
    return keep;
}

const RegisterMechanisms kernel_regression_cases({
    {"nadaraya_watson_pooling",
     "scalar points, leave-one-out mask",
     {Shape{2, 3, 1}, Shape{2, 4, 1}, Shape{2, 4, 2}},
     nullptr,
     [](Module*, const std::vector<Var>& x) {
         return both(nadaraya_watson_pooling(x[0], x[1], x[2], leave_one_out()));
     }},
    {"nadaraya_watson_pooling",
     "points in 2-D, lengths 4 and 0",
     {Shape{2, 2, 2}, Shape{2, 4, 2}, Shape{2, 4, 1}},
     nullptr,
     [](Module*, const std::vector<Var>& x) {
         return both(nadaraya_watson_pooling(x[0], x[1], x[2], length_mask({4, 0}, 4)));
     }},
    {"parametric_nadaraya_watson_pooling",
     "w = 1.3, leave-one-out mask",
     {Shape{2, 3, 1}, Shape{2, 4, 1}, Shape{2, 4, 2}},
     [](Generator&) { return std::make_unique<ParametricNadarayaWatsonPooling>(1.3); },
     [](Module* m, const std::vector<Var>& x) {
         return both(static_cast<ParametricNadarayaWatsonPooling*>(m)->forward(x[0], x[1], x[2], leave_one_out()));
     }},
});

// The catalog's data: keys (0, 1, 2), values (0, 1, 4), query 1.
struct Data {
    Var queries{Tensor::from({1}, {1, 1, 1})};
    Var keys{Tensor::from({0, 1, 2}, {1, 3, 1})};
    Var values{Tensor::from({0, 1, 4}, {1, 3, 1})};
};

void check_values(const Tensor& got, const std::vector<real>& want) {
    REQUIRE(got.numel() == static_cast<int64_t>(want.size()));
    for (int64_t i = 0; i < got.numel(); ++i) {
        INFO("index " << i << ": got " << got[i] << ", want " << want[static_cast<size_t>(i)]);
        CHECK(std::abs(got[i] - want[static_cast<size_t>(i)]) <= 1e-6);
    }
}

}  // namespace

TEST_CASE("nadaraya_watson_pooling: the catalog's reference values; constant values come back exactly") {
    const Data d;
    const AttentionOutput out = nadaraya_watson_pooling(d.queries, d.keys, d.values);
    check_values(out.weights.value(), {0.274069, 0.451863, 0.274069});
    check_values(out.output.value(), {1.548137});

    Generator gen(51);
    const Var x(Tensor::normal({2, 5, 3}, 0, 1, gen)), k(Tensor::normal({2, 6, 3}, 0, 1, gen));
    const AttentionOutput flat = nadaraya_watson_pooling(x, k, Var(Tensor::full({2, 6, 2}, 2.5)));
    for (int64_t i = 0; i < flat.output.numel(); ++i)
        CHECK(flat.output.value()[i] == doctest::Approx(2.5).epsilon(1e-15));
}

TEST_CASE("nadaraya_watson_pooling: with a leave-one-out mask a point's own target does not predict it") {
    Generator gen(52);
    const Var x(Tensor::normal({1, 4, 1}, 0, 1, gen));
    Tensor y = Tensor::normal({1, 4, 1}, 0, 1, gen);
    Tensor keep =
        sub(Tensor::ones({1, 4, 4}), Tensor::from({1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, {1, 4, 4}));
    const Tensor before = nadaraya_watson_pooling(x, x, Var(y), keep).output.value();
    y[2] += 10;  // change the target of point 2 only
    const Tensor after = nadaraya_watson_pooling(x, x, Var(y), keep).output.value();
    CHECK(after[2] == before[2]);
    CHECK(after[0] != before[0]);
}

TEST_CASE(
    "parametric_nadaraya_watson_pooling: w = 2, w = 0 and w = 1 on the catalog's data; large w is nearest-key lookup") {
    const Data d;
    ParametricNadarayaWatsonPooling pool(2);
    AttentionOutput out = pool.forward(d.queries, d.keys, d.values);
    check_values(out.weights.value(), {0.106507, 0.786986, 0.106507});
    check_values(out.output.value(), {1.213014});

    pool.w.value().fill_(0);
    check_values(pool.forward(d.queries, d.keys, d.values).output.value(), {1.666667});

    pool.w.value().fill_(1);
    const AttentionOutput one = pool.forward(d.queries, d.keys, d.values);
    const AttentionOutput plain = nadaraya_watson_pooling(d.queries, d.keys, d.values);
    CHECK(allclose(one.weights.value(), plain.weights.value(), 0, 1e-15));

    pool.w.value().fill_(30);
    const Var q(Tensor::from({1.8}, {1, 1, 1}));  // nearest key: 2, value 4
    check_values(pool.forward(q, d.keys, d.values).output.value(), {4.0});
    CHECK(pool.taxonomy().scoring == "similarity_score");
}
