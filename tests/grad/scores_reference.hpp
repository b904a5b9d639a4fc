// The additive score of catalog entry 15 written again in plain loops
// (tests/grad/reference.hpp), for one query and one key, reading the
// parameters of a module that holds an AdditiveScore: the references of
// pointer attention (entry 54, test_pointer.cpp) and of the neural
// transducer's f_att (entry 58, test_sequence_more.cpp) use it. The score's
// own registry entry has its reference in test_scores.cpp.
#pragma once

#include <string>

#include "tests/grad/catalog.hpp"
#include "tests/grad/reference.hpp"

namespace attn::testing {

// e = wᵀ tanh(W_1 q + W_2 k [+ b]), with the module's parameters under `prefix`
// ("score." inside a mechanism): W_1 d_w×d_q, W_2 d_w×d_k, b and w d_w.
struct AdditiveRef {
    Array W_1, W_2;
    Vec b, w;
    AdditiveRef(const Ref& r, const std::string& prefix, bool bias)
        : W_1(r.p[prefix + "W_1"]), W_2(r.p[prefix + "W_2"]), w(vec(r.p[prefix + "w"])) {
        b = bias ? vec(r.p[prefix + "b"]) : Vec(w.size(), 0.0);
    }
    double operator()(const Vec& q, const Vec& k) const {
        return dot(w, testing::each(add(add(matvec(W_1, q), matvec(W_2, k)), b), tanh_));
    }
};

}  // namespace attn::testing
