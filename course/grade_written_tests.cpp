// The grade kinds "write-test N ID…" (exercise 7.1) and "capstone SHARE"
// (7.2), the student's tests graded on right and on wrong code
// (course/grade_kinds.hpp): the checks graded are the student's own
// registry entries (their references, cases, masking and properties). They
// must pass on the library as it is, and on each correct variant listed for
// the entry (course/wheats.txt); then each known mistake is built into the
// library in turn (scripts/exercises.py mistakes: tests/mutations/ for 7.1,
// mistakes made from the student's own code for 7.2), and the student's
// checks must fail on at least N of them, or on that share. The grader says
// which mistakes got through, as Brown's Examplar does with its "chaffs".
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/course_files.hpp"
#include "course/grade_kinds.hpp"
#include "tests/grad/catalog.hpp"

using namespace attn::testing;

namespace attn::course::grading {

bool g_checks_only = false;  // --checks-only: the entries' checks alone (what each built mistake runs)

// The entries course/capstone.txt names ("entry: ID" lines); none without
// the file. A line of the wrong form throws, naming it.
std::vector<std::string> capstone_ids() {
    std::vector<std::string> ids;
    if (!std::filesystem::exists(kCapstone)) return ids;
    for (const attn::course::NamedId& n : attn::course::parse_capstone_entries(
             attn::course::read_course_file(kCapstone, "the capstone's entries"), kCapstone))
        ids.push_back(n.id);
    return ids;
}

// The same, saying what is missing or wrong as a failed check.
std::vector<std::string> capstone_entries(Report& r) {
    if (!std::filesystem::exists(kCapstone)) {
        r.fail(kCapstone, std::string("not found: not written yet (docs/course/7-write-the-test.md says what it holds)"));
        return {};
    }
    std::vector<std::string> ids;
    try {
        ids = capstone_ids();
    } catch (const std::runtime_error& e) {
        r.fail(kCapstone, e.what());
        return {};
    }
    if (ids.empty())
        r.fail(kCapstone, "names no entry ('entry: ID'): not written yet");
    return ids;
}

// need: how many of the mistakes the checks must catch (write-test), or
// what share of them (capstone).
void grade_written_tests(Report& r, const Exercise& ex, bool capstone, double need,
                         const std::vector<std::string>& ids, uint64_t seed) {
    // What the entries lack (a property, a masked case) is said, and the
    // mistakes still run: the student sees which ones that lets through.
    int too_few = 0;
    for (const std::string& id : ids) {
        const Entry* e = find_entry(id);
        if (!e || e->cases.empty()) {
            r.fail("registry entry '" + id + "'", "no cases registered: not written yet");
            continue;
        }
        int masked = 0, properties = 0;
        for (const Case& c : e->cases) {
            masked += c.masking.empty() ? 0 : 1;
            properties += static_cast<int>(c.properties.size());
        }
        const std::string what = id + ": " + std::to_string(e->cases.size()) +
                                 (e->cases.size() == 1 ? " case, " : " cases, ") + std::to_string(masked) +
                                 " with a masked-key check, " + std::to_string(properties) + " properties";
        // (Not in a mistake's run, whose exit status says only whether the checks failed.)
        if (!g_checks_only) {
            if (capstone && e->number <= 80)
                ++too_few, r.fail(id, "is entry " + std::to_string(e->number) + " of the catalog: the capstone is a "
                                      "mechanism the catalog does not have, numbered 81 or more");
            if (properties == 0) ++too_few, r.fail(what, "declare at least one property the mechanism guarantees");
            else if (!capstone && masked == 0)
                ++too_few, r.fail(what, "the mechanism takes a key mask: check it (a KeySet)");
            else r.right(what);
        }
        uint64_t s = seed;
        for (const Case& c : e->cases) grade_case(r, *e, c, s++);
    }
    if (r.wrong > too_few || g_checks_only) {
        if (r.wrong > too_few)
            std::cout << "\n(your checks must pass on code that is right before they meet the mistakes)\n";
        return;
    }
    std::cout << "\nyour checks against code that is wrong: each mistake built into the library in turn\n";
    std::cout.flush();
    const std::string command = "python3 scripts/exercises.py mistakes " + ex.id + " 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    if (!pipe) {
        r.fail("running " + command, "could not start it");
        return;
    }
    int caught = 0, total = 0;
    std::vector<std::string> missed;
    char buffer[4096];
    std::string printed;
    while (std::fgets(buffer, sizeof buffer, pipe)) {
        std::string line = buffer;
        if (!line.empty() && line.back() == '\n') line.pop_back();
        const size_t tab = line.find('\t');
        const std::string kind = line.substr(0, tab), words = tab == std::string::npos ? "" : line.substr(tab + 1);
        if (kind == "caught") ++caught, ++total, std::cout << "  caught  " << words << "\n";
        else if (kind == "missed") missed.push_back(words), ++total, std::cout << "  MISSED  " << words << "\n";
        else if (kind == "accepted") r.right("your checks accept a correct variant: " + words);
        else if (kind == "rejected")
            r.fail("your checks accept a correct variant: " + words,
                   "they fail on it, yet it is right: they ask for more than the formula (a tolerance too "
                   "tight, an order of operations)");
        else if (kind == "unbuilt") std::cout << "  (left out: " << words << ")\n";
        else if (kind == "equivalent")
            std::cout << "  (left out, the same as your code on every draw of its inputs: " << words << ")\n";
        else printed += line + "\n";
        std::cout.flush();
    }
    const int status = pclose(pipe);
    if (status != 0 || total == 0) {
        r.fail("building the mistakes", "scripts/exercises.py mistakes " + ex.id + " stopped:\n" + printed);
        return;
    }
    const int required = capstone ? static_cast<int>(std::ceil(need * total - 1e-9))
                                  : std::min(total, static_cast<int>(need));
    const std::string what = "your checks catch " + std::to_string(caught) + " of " + std::to_string(total) +
                             " mistakes (" + std::to_string(required) + " needed)";
    if (caught >= required) {
        r.right(what);
    } else {
        std::string detail = "these got through:";
        for (const std::string& m : missed) detail += "\n           - " + m;
        r.fail(what, detail);
    }
}

}  // namespace attn::course::grading
