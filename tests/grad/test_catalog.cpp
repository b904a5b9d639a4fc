// The generic tests of the catalog registry (tests/grad/catalog.hpp), in the
// double build. Every case of every entry:
//   1. value: every output equals the entry's independent reference;
//   2. gradient: finite differences to every input and every parameter, and
//      no parameter made where the registry cannot see it;
//   3. masking: a masked key changes nothing whatever it holds (random values,
//      NaN, +inf), a fully masked example gets zero weights, zero gradient and
//      no NaN;
//   4. the case's declared properties.
// and every catalog id has an entry. ATTN_MECHANISM=id[,id...] runs some entries.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>
#include <sstream>
#include <unordered_set>

#include "autograd/gradcheck.hpp"
#include "tests/catalog_ids.hpp"
#include "tests/grad/catalog.hpp"
#include "tests/grad/catalog_checks.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

// ATTN_MECHANISM=a,b → {a, b}; empty = every entry.
std::set<std::string> selected_ids() {
    std::set<std::string> ids;
    const char* only = std::getenv("ATTN_MECHANISM");
    if (!only) return ids;
    std::stringstream ss(only);
    std::string id;
    while (std::getline(ss, id, ','))
        if (!id.empty()) ids.insert(id);
    return ids;
}

bool wanted(const std::string& id) {
    static const std::set<std::string> ids = selected_ids();
    return ids.empty() || ids.count(id);
}

// Every case of every wanted entry; with `parts` > 1, only the entries of
// one part (the 1st, (parts+1)-th, ... wanted entry for part 0), so that a
// long check can be cut into test cases that separate runs share.
template <class F>
void for_each_case(F&& f, int part = 0, int parts = 1) {
    int ran = 0, wanted_entries = 0;
    for (const Entry& e : catalog_registry()) {
        if (!wanted(e.id)) continue;
        if (wanted_entries++ % parts != part) continue;
        uint64_t seed = kFirstCaseSeed;
        for (const Case& c : e.cases) {
            Prepared p(e, c, seed++);
            CAPTURE(p.name);
            f(e, p);
            ++ran;
        }
    }
    // Part 0 always runs something (unless ATTN_MECHANISM names no entry);
    // a later part may get nothing when ATTN_MECHANISM names few entries.
    if (part == 0 || wanted_entries > part) CHECK(ran > 0);
}

}  // namespace

TEST_CASE("catalog: every catalog id has an entry, every case a reference") {
    std::set<std::string> registered;
    for (const Entry& e : catalog_registry()) {
        CAPTURE(e.id);
        registered.insert(e.id);
        CHECK_MESSAGE(!e.cases.empty(), e.id << " has no case");
        for (const Case& c : e.cases) {
            CAPTURE(c.variant);
            CHECK_MESSAGE(c.run != nullptr, e.id << " (" << c.variant << ") has no run");
            CHECK_MESSAGE(c.reference != nullptr, e.id << " (" << c.variant << ") has no reference");
        }
        if (e.number >= 1 && e.number <= static_cast<int>(kCatalogIds.size()))
            CHECK_MESSAGE(kCatalogIds[static_cast<size_t>(e.number - 1)] == e.id,
                          e.id << " registered as entry " << e.number << ", which is "
                               << kCatalogIds[static_cast<size_t>(e.number - 1)]);
    }
    if (selected_ids().empty())
        for (size_t i = 0; i < kCatalogIds.size(); ++i)
            CHECK_MESSAGE(registered.count(std::string(kCatalogIds[i])),
                          "catalog entry " << i + 1 << " " << kCatalogIds[i] << " has no registry entry");
}

TEST_CASE("catalog 1: every output equals the independent reference") {
    for_each_case([](const Entry&, Prepared& p) {
        for (const ValueFinding& f : check_values(p)) {
            CHECK_MESSAGE(f.problem.empty(), f.problem);
            // one index per output is enough to see what is wrong
            if (f.wrong > 0)
                FAIL_CHECK(f.output << " at " << index_str(f.shape, f.first) << ": mechanism " << f.got
                                    << ", reference " << f.expected << " (" << f.wrong << " of " << f.total
                                    << " elements differ)");
        }
    });
}

// Catalog 2 is the longest check of the suites (two finite differences per
// input and parameter element of every entry): cut into four test cases, by
// entry, so that the runs of scripts/run-tests.sh share it.
namespace {

void gradients_match(const Entry&, Prepared& p) {
    const GradientFindings f = check_gradients(p, /*every_element=*/false);
    CHECK_MESSAGE(f.problem.empty(), f.problem);
    CHECK_MESSAGE(f.inputs.ok, f.inputs.message);
    CHECK_MESSAGE(f.parameters.ok, f.parameters.message);
}

}  // namespace

TEST_CASE("catalog 2 (part 1 of 4): gradients match finite differences, to inputs and parameters") {
    for_each_case(gradients_match, 0, 4);
}

TEST_CASE("catalog 2 (part 2 of 4): gradients match finite differences, to inputs and parameters") {
    for_each_case(gradients_match, 1, 4);
}

TEST_CASE("catalog 2 (part 3 of 4): gradients match finite differences, to inputs and parameters") {
    for_each_case(gradients_match, 2, 4);
}

TEST_CASE("catalog 2 (part 4 of 4): gradients match finite differences, to inputs and parameters") {
    for_each_case(gradients_match, 3, 4);
}

TEST_CASE("catalog 3: a masked key changes nothing; a fully masked example gets zero weights and gradient") {
    for_each_case([](const Entry&, Prepared& p) {
        std::vector<std::string> notes;
        for (const std::string& failure : check_masking(p, &notes)) FAIL_CHECK(failure);
        for (const std::string& note : notes) MESSAGE(note);
    });
}

TEST_CASE("catalog 4: the declared properties hold") {
    for_each_case([](const Entry&, Prepared& p) {
        for (const PropertyFinding& f : check_properties(p)) CHECK_MESSAGE(f.error.empty(), f.name << ": " << f.error);
    });
}
