// Helpers the float unit tests share: a temporary directory, whole-file
// reads, the path of a fixture in tests/fixtures/, the message of an error,
// and a tolerant comparison of two tensors.
#pragma once

#include <doctest/doctest.h>
#include <stdlib.h>  // mkdtemp

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "nn/module.hpp"
#include "tensor/allocator.hpp"
#include "tensor/tensor.hpp"

namespace attn::testing {

// A fresh directory /tmp/attn_<tag>_XXXXXX, removed with everything in it.
struct TempDir {
    std::string path;
    explicit TempDir(const std::string& tag) {
        std::string name = "/tmp/attn_" + tag + "_XXXXXX";
        REQUIRE(::mkdtemp(name.data()) != nullptr);
        path = name;
    }
    ~TempDir() { std::filesystem::remove_all(path); }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    std::string operator/(const std::string& file) const { return path + "/" + file; }
};

// How many times `what` occurs in `s` (overlapping occurrences counted).
inline size_t occurrences(const std::string& s, const std::string& what) {
    size_t n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
}

// The bytes of a file ("" if it cannot be read).
inline std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream os;
    os << in.rdbuf();
    return os.str();
}

// A file of the repository, PATH relative to its root: as given when the
// tests run from the root (as make test does), else found from this header's
// path as it was compiled (__FILE__: absolute when the build named it so).
inline std::string repository_path(const std::string& path) {
    if (std::filesystem::exists(path)) return path;
    return (std::filesystem::path(__FILE__).parent_path().parent_path() / path).string();
}

// A find-the-bug tree (make bug): course/bug.txt and no mutation lists,
// which scripts/bugs.py leaves out (they would name its mistake's file and
// neighbours). A test that reads the lists has nothing to read there.
inline bool in_bug_tree() {
    return std::filesystem::exists(repository_path("course/bug.txt")) &&
           !std::filesystem::exists(repository_path("tests/mutations"));
}

// tests/fixtures/NAME.
inline std::string fixture_path(const std::string& name) { return repository_path("tests/fixtures/" + name); }

// The message of what f() throws, or "(no exception)": for checking an
// error's wording.
template <class F>
std::string error_of(F f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "(no exception)";
}

// got ≈ want element by element: |got − want| ≤ tol·(1 + |want|) everywhere,
// and every value of got finite. A failure names `what`, the worst element
// and how far off it is.
inline void check_close(const Tensor& got, const Tensor& want, const std::string& what, double tol = 1e-5) {
    INFO(what);
    REQUIRE(got.defined());
    REQUIRE(want.defined());
    REQUIRE_MESSAGE(got.shape() == want.shape(),
                    what << ": shapes " << got.shape().str() << " and " << want.shape().str());
    double worst = 0;
    int64_t worst_at = 0, not_finite = 0;
    for (int64_t i = 0; i < got.numel(); ++i) {
        not_finite += !std::isfinite(got[i]);
        const double scaled = std::abs(double(got[i]) - double(want[i])) / (1 + std::abs(double(want[i])));
        if (scaled > worst) worst = scaled, worst_at = i;
    }
    CHECK_MESSAGE(not_finite == 0, what << ": " << not_finite << " values are not finite");
    CHECK_MESSAGE(worst <= tol, what << ": largest scaled difference " << worst << " at flat index " << worst_at
                                     << ": " << got[worst_at] << " vs " << want[worst_at]);
}

// Every parameter of `b` has the gradient of the same one of `a` (by position
// and name), within rel × the largest |gradient| of a's parameter: a model's
// fast path (b) against its composed twin (a), after the same backward. A
// parameter whose gradient is all zeros fails: it would compare nothing.
inline void check_same_gradients(const Module& a, const Module& b, double rel = 1e-4) {
    const auto pa = a.named_parameters(), pb = b.named_parameters();
    REQUIRE(pa.size() == pb.size());
    for (size_t k = 0; k < pa.size(); ++k) {
        CAPTURE(pa[k].first);
        REQUIRE(pa[k].first == pb[k].first);
        const Tensor ga = pa[k].second.grad(), gb = pb[k].second.grad();
        REQUIRE(ga.defined());
        REQUIRE(gb.defined());
        REQUIRE(ga.shape() == gb.shape());
        double scale = 0;
        for (int64_t i = 0; i < ga.numel(); ++i) scale = std::max(scale, std::abs(double(ga[i])));
        CHECK(scale > 0);
        for (int64_t i = 0; i < ga.numel(); ++i) CHECK(std::abs(double(gb[i]) - double(ga[i])) <= rel * scale + 1e-6);
    }
}

// ---- plain loops over doubles, for a model written out from its paper's equations ----
// (tests/test_caption_model.cpp, tests/test_docclass_models.cpp): no library op.
using Vec = std::vector<double>;

// A parameter's values, flat, in its row-major layout.
inline Vec parameter_values(const Module& m, const std::string& name) {
    for (const auto& [n, v] : m.named_parameters())
        if (n == name) return Vec(v.value().data(), v.value().data() + v.value().numel());
    FAIL("no parameter " << name);
    return {};
}
// Row r of a row-major matrix of `cols` columns.
inline Vec row_of(const Vec& W, size_t cols, size_t r) {
    return Vec(W.begin() + static_cast<std::ptrdiff_t>(r * cols), W.begin() + static_cast<std::ptrdiff_t>((r + 1) * cols));
}
// W x + b, W stored b.size() × x.size() (out × in, PyTorch's layout).
inline Vec affine(const Vec& W, const Vec& b, const Vec& x) {
    Vec y(b);
    for (size_t r = 0; r < y.size(); ++r)
        for (size_t c = 0; c < x.size(); ++c) y[r] += W[r * x.size() + c] * x[c];
    return y;
}
inline double sigma(double a) { return 1 / (1 + std::exp(-a)); }
inline Vec join(Vec a, const Vec& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// Lowers the allocator's memory limit (set_storage_memory_limit) for a
// scope, and restores the one before whatever happens, so that a failing
// check cannot leave it set for the other tests.
struct MemoryLimit {
    size_t before;
    explicit MemoryLimit(size_t bytes) : before(set_storage_memory_limit(bytes)) {}
    ~MemoryLimit() { set_storage_memory_limit(before); }
    MemoryLimit(const MemoryLimit&) = delete;
    MemoryLimit& operator=(const MemoryLimit&) = delete;
};

}  // namespace attn::testing
