// What a student adds must be proven before it counts: every row of the
// score and alignment tables (attention/by_id.cpp, what --score and --align
// take) has a catalog registry entry with cases, and the index of
// docs/attention/README.md says "tested" exactly for the ids the registry
// holds, read from the registry itself, not from the text of tests/ (a
// registry entry put inside #if 0 still reads as one).
#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <vector>

#include "attention/by_id.hpp"
#include "tests/grad/catalog.hpp"

using namespace attn;
using namespace attn::testing;

namespace {

bool registered(const std::string& id) {
    const Entry* e = find_entry(id);
    return e != nullptr && !e->cases.empty();
}

// "| a | b |" → {"a", "b"}
std::vector<std::string> cells(const std::string& line) {
    std::vector<std::string> out;
    size_t at = 1;
    for (size_t bar = line.find('|', at); bar != std::string::npos; bar = line.find('|', at)) {
        std::string c = line.substr(at, bar - at);
        const size_t b = c.find_first_not_of(' '), e = c.find_last_not_of(' ');
        out.push_back(b == std::string::npos ? "" : c.substr(b, e - b + 1));
        at = bar + 1;
    }
    return out;
}

}  // namespace

TEST_CASE("extension rows: every score and alignment a flag can name has a registry entry with cases") {
    for (const ScoreInfo& row : score_table())
        CHECK_MESSAGE(registered(row.id), "the score table's row '" << row.id
                                                                    << "' (attention/by_id.cpp) has no registry entry: "
                                                                       "add one with its reference in tests/grad/test_scores.cpp");
    for (const AlignmentInfo& row : alignment_table())
        CHECK_MESSAGE(registered(row.id), "the alignment table's row '"
                                              << row.id
                                              << "' (attention/by_id.cpp) has no registry entry: add one with its "
                                                 "reference in tests/grad/test_alignments_reference.cpp");
}

TEST_CASE("extension rows: the index's 'tested' column is yes exactly for the ids the registry holds") {
    std::ifstream in("docs/attention/README.md");
    REQUIRE_MESSAGE(in.good(), "run the tests from the repository root");
    int rows = 0;
    for (std::string line; std::getline(in, line);) {
        // | # | `id` | group | paper | implemented | tested | documented | example | page |
        if (line.size() < 4 || line[0] != '|' || line[2] < '0' || line[2] > '9') continue;
        const std::vector<std::string> c = cells(line);
        REQUIRE(c.size() == 9);
        const std::string id = c[1].substr(1, c[1].size() - 2);
        CHECK_MESSAGE((c[5] == "yes") == registered(id),
                      "docs/attention/README.md, row " << c[0] << " " << id << ": tested says " << c[5]
                                                       << ", the registry " << (registered(id) ? "holds" : "lacks")
                                                       << " an entry");
        ++rows;
    }
    CHECK(rows >= 80);
}
