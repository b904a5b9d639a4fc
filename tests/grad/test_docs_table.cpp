// docs/autograd.md has one row per op in its derivative table; every op of the
// registry must have one. (Tests run from the repository root.)
#include <doctest/doctest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "tests/grad/registry.hpp"

using namespace attn::testing;

namespace {

// The op names of the table: rows that start with "| `name`".
std::set<std::string> table_ops(const std::string& path) {
    std::ifstream in(path);
    std::set<std::string> ops;
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("| `", 0) != 0) continue;
        const size_t end = line.find('`', 3);
        if (end != std::string::npos) ops.insert(line.substr(3, end - 3));
    }
    return ops;
}

}  // namespace

TEST_CASE("docs: every registered op has a row in docs/autograd.md's derivative table") {
    const std::set<std::string> documented = table_ops("docs/autograd.md");
    REQUIRE_MESSAGE(!documented.empty(), "docs/autograd.md not found or has no table (run from the repository root)");
    for (const OpCase& c : op_registry()) {
        INFO("op ", c.op, " has no row `| `", c.op, "` | ...` in docs/autograd.md");
        CHECK(documented.count(c.op) == 1);
    }
}
