#include "tests/grad/helpers.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "tensor/ops.hpp"

namespace attn::testing {

// ---- inputs -------------------------------------------------------------------------------

Tensor normal(const Shape& shape, Generator& gen) { return Tensor::normal(shape, 0, 1, gen); }

Var normal_var(const Shape& shape, Generator& gen) { return Var(normal(shape, gen)); }

Draw distinct(std::vector<Shape> shapes, double scale_by) {
    return [=](Generator& gen) {
        std::vector<Tensor> out;
        for (const Shape& s : shapes)
            for (;;) {
                Tensor t = Tensor::normal(s, 0, scale_by, gen);
                std::vector<double> v(static_cast<size_t>(t.numel()));
                for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t[i];
                std::sort(v.begin(), v.end());
                bool apart = true;
                for (size_t i = 1; i < v.size(); ++i) apart = apart && v[i] - v[i - 1] >= 1e-5;
                if (!apart) continue;
                out.push_back(t);
                break;
            }
        return out;
    };
}

// ---- masks ----------------------------------------------------------------------------------

Tensor mask_or_none(Masks masks, size_t i) { return i < masks.size() ? masks[i] : Tensor(); }

Tensor padding(const std::vector<int64_t>& lengths, int64_t n) { return key_mask(length_mask(lengths, n)); }

Tensor key_padding(Masks masks) { return masks.empty() ? Tensor() : key_mask(masks[0]); }

Tensor holes(int64_t m, int64_t n, int64_t empty_row, uint64_t seed) {
    Generator gen(seed);
    Tensor mask = Tensor::empty(Shape{m, n});
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) mask[i * n + j] = i == empty_row ? 0 : (gen.uniform() < 0.7 ? 1 : 0);
    return mask;
}

// ---- outputs --------------------------------------------------------------------------------

Outputs output_and_weights(const AttentionOutput& a, bool weights_differentiable) {
    return {{"output", a.output}, {"weights", a.weights, weights_differentiable}};
}

// ---- checks ---------------------------------------------------------------------------------

void check_close(const Tensor& got, const Tensor& want, double atol) {
    REQUIRE(got.shape() == want.shape());
    for (int64_t i = 0; i < got.numel(); ++i)
        CHECK_MESSAGE(std::abs(got[i] - want[i]) <= atol, "index " << i << ": got " << got[i] << ", want " << want[i]);
}

void check_close(const Tensor& got, const std::vector<real>& want, double atol) {
    REQUIRE(got.numel() == static_cast<int64_t>(want.size()));
    for (int64_t i = 0; i < got.numel(); ++i) {
        const real w = want[static_cast<size_t>(i)];
        CHECK_MESSAGE(std::abs(got[i] - w) <= atol, "index " << i << ": got " << got[i] << ", want " << w);
    }
}

void check_max_difference(const Tensor& got, const Tensor& want, double atol, const std::string& what) {
    INFO(what << ": " << got.shape() << " vs " << want.shape());
    REQUIRE(got.shape() == want.shape());
    double worst = 0;
    int64_t not_finite = 0;
    for (int64_t i = 0; i < got.numel(); ++i) {
        not_finite += !std::isfinite(got[i]);
        worst = std::max(worst, std::abs(got[i] - want[i]));
    }
    CHECK_MESSAGE(not_finite == 0, what << ": " << not_finite << " values are not finite");
    CHECK_MESSAGE(worst <= atol, what << ": largest difference " << worst);
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
    REQUIRE(a.shape() == b.shape());
    double worst = 0;
    for (int64_t i = 0; i < a.numel(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
    return worst;
}

void check_sums_to_one(const Tensor& weights) {
    const Tensor sums = sum(weights, -1);
    for (int64_t i = 0; i < sums.numel(); ++i) CHECK(std::abs(sums[i] - 1) < 1e-12);
}

std::string differs(const std::string& what, const Tensor& want, const Tensor& got) {
    if (!(want.shape() == got.shape())) return what + ": shape " + got.shape().str() + ", expected " + want.shape().str();
    for (int64_t i = 0; i < want.numel(); ++i)
        if (!(std::abs(want[i] - got[i]) <= 1e-9 * (1 + std::abs(want[i])))) {
            std::ostringstream os;
            os << what << " at flat index " << i << ": " << got[i] << ", expected " << want[i];
            return os.str();
        }
    return "";
}

// ---- parameters -----------------------------------------------------------------------------

void set(Var& parameter, const Tensor& value) { parameter.value().copy_(value); }

Tensor identity_matrix(int64_t d) {
    Tensor t = Tensor::zeros(Shape{d, d});
    for (int64_t i = 0; i < d; ++i) t[i * d + i] = 1;
    return t;
}

}  // namespace attn::testing
