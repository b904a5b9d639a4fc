// The deliberate mistakes of tests/mutations/ (run by `make mutation-check`)
// are text edits: each finds one line of the library and replaces it. When
// the library changes, a stale `find` would make the mutation an ERROR only
// when someone runs the slow check; this test, in `make test`, catches it at
// once: every mutation names a file that exists, a `find` that occurs there
// exactly once, a `replace` that differs, and ids of registry entries.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/grad/catalog.hpp"
#include "tests/helpers.hpp"

namespace {

namespace fs = std::filesystem;

// The repository root: where make test runs, else two folders above this file.
fs::path repository_root() {
    if (fs::exists("tests/grad")) return ".";
    return fs::path(__FILE__).parent_path().parent_path().parent_path();
}

struct Mutation {
    std::string where;  // "tests/mutations/scores.txt:12"
    std::string title;
    std::map<std::string, std::string> fields;
};

// The same format scripts/mutation-check.py reads: "## title", then
// "key: value" lines; blank lines and other "#" lines are comments.
std::vector<Mutation> parse(const fs::path& path, const std::string& text) {
    std::vector<Mutation> out;
    std::istringstream in(text);
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
        ++number;
        if (line.rfind("## ", 0) == 0) {
            out.push_back({path.filename().string() + ":" + std::to_string(number), line.substr(3), {}});
            continue;
        }
        if (line.find_first_not_of(" \t") == std::string::npos || line[0] == '#') continue;
        const auto colon = line.find(':');
        INFO(path.string() << ":" << number << ": " << line);
        REQUIRE_MESSAGE(!out.empty(), "a field before the first '## title' line");
        REQUIRE_MESSAGE(colon != std::string::npos, "expected 'key: value'");
        std::string value = line.substr(colon + 1);
        if (!value.empty() && value[0] == ' ') value.erase(0, 1);
        out.back().fields[line.substr(0, colon)] = value;
    }
    return out;
}

// "\n" in find and replace stands for a line break.
std::string unescape(std::string s) {
    for (size_t at = s.find("\\n"); at != std::string::npos; at = s.find("\\n", at + 1)) s.replace(at, 2, "\n");
    return s;
}

using attn::testing::occurrences;

}  // namespace

TEST_CASE("mutation lists: every mutation applies to the code as it reads now") {
    const fs::path root = repository_root();
    if (attn::testing::in_bug_tree()) return;
    std::vector<fs::path> lists;
    for (const auto& file : fs::directory_iterator(root / "tests" / "mutations"))
        if (file.path().extension() == ".txt") lists.push_back(file.path());
    REQUIRE(lists.size() >= 20);

    int total = 0;
    for (const auto& list : lists) {
        for (const Mutation& m : parse(list, attn::testing::read_file(list))) {
            ++total;
            INFO(m.where << " '" << m.title << "'");
            for (const char* key : {"file", "find", "replace", "ids"}) CHECK_MESSAGE(m.fields.count(key), "no " << key);
            for (const auto& field : m.fields) {
                const std::string& key = field.first;  // (clang 14 cannot capture a structured binding)
                CHECK_MESSAGE((key == "file" || key == "find" || key == "replace" || key == "ids" || key == "unit"),
                              "unknown field '" << key << "'");
            }
            if (!m.fields.count("file") || !m.fields.count("find") || !m.fields.count("replace")) continue;
            const std::string source = attn::testing::read_file(root / m.fields.at("file"));
            REQUIRE_MESSAGE(!source.empty(), "cannot read " << m.fields.at("file"));
            const std::string find = unescape(m.fields.at("find")), replace = unescape(m.fields.at("replace"));
            CHECK_MESSAGE(occurrences(source, find) == 1, "'find' must occur exactly once in " << m.fields.at("file"));
            CHECK_MESSAGE(find != replace, "'replace' is the same as 'find'");
            if (!m.fields.count("ids")) continue;
            std::istringstream ids(m.fields.at("ids"));
            for (std::string id; std::getline(ids, id, ',');) {
                id.erase(0, id.find_first_not_of(' '));
                id.erase(id.find_last_not_of(' ') + 1);
                CHECK_MESSAGE(attn::testing::find_entry(id) != nullptr, "no registry entry '" << id << "'");
            }
        }
    }
    CHECK(total >= 400);
}
