// docs/attention/README.md is the index of the whole catalog, with a column
// per status. This test keeps it true: for every row it looks in the tree and
// fails when a cell says "yes" and the tree says no, or the other way round.
// Every catalog id needs its row; rows after 80 (coursework) are welcome.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/catalog_ids.hpp"
#include "tests/helpers.hpp"

namespace fs = std::filesystem;
using attn::testing::read_file;

namespace {

// The text of every source or doc file under `dir` (recursively) whose
// extension is in `exts`, except `skip`.
std::string corpus(const fs::path& dir, const std::vector<std::string>& exts, const fs::path& skip = {}) {
    std::string all;
    if (!fs::exists(dir)) return all;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
        if (!e.is_regular_file()) continue;
        if (!skip.empty() && fs::equivalent(e.path(), skip)) continue;
        const std::string ext = e.path().extension().string();
        for (const auto& x : exts)
            if (ext == x) all += read_file(e.path()) + "\n";
    }
    return all;
}

bool is_word_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }

// Does `text` contain `word` not as part of a longer identifier? With
// `then` set, the character right after it must be that one (e.g. '(').
bool names_word(const std::string& text, const std::string& word, char then = 0) {
    for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
        const size_t after = at + word.size();
        const bool starts = at == 0 || !is_word_char(text[at - 1]);
        const bool ends = then ? (after < text.size() && text[after] == then)
                               : (after == text.size() || !is_word_char(text[after]));
        if (starts && ends) return true;
    }
    return false;
}

std::string trim(const std::string& s) {
    const size_t b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// "| a | b |" → {"a", "b"}
std::vector<std::string> cells(const std::string& line) {
    std::vector<std::string> out;
    size_t at = 1;
    for (size_t bar = line.find('|', at); bar != std::string::npos; bar = line.find('|', at)) {
        out.push_back(trim(line.substr(at, bar - at)));
        at = bar + 1;
    }
    return out;
}

}  // namespace

TEST_CASE("attention index: docs/attention/README.md tells the truth about every catalog entry") {
    const fs::path index = "docs/attention/README.md";
    REQUIRE_MESSAGE(fs::exists(index), "run the tests from the repository root");
    const std::string code = corpus("attention", {".hpp", ".cpp"});
    const std::string docs = corpus("docs/attention", {".md"}, index);
    const std::string examples = corpus("examples", {".hpp", ".cpp"});

    std::ifstream in(index);
    std::string line;
    std::map<int, std::string> rows;  // number → id
    while (std::getline(in, line)) {
        // | # | `id` | group | paper | implemented | tested | documented | example | page |
        if (line.size() < 4 || line[0] != '|' || line[2] < '0' || line[2] > '9') continue;
        const std::vector<std::string> c = cells(line);
        REQUIRE_MESSAGE(c.size() == 9, "malformed row: " << line);
        const std::string id = c[1].substr(1, c[1].size() - 2);  // strip the backquotes
        CAPTURE(id);
        const int number = std::stoi(c[0]);
        CHECK_MESSAGE(rows.emplace(number, id).second, "two rows numbered " << number);
        for (int k = 4; k <= 7; ++k) REQUIRE_MESSAGE((c[k] == "yes" || c[k] == "no"), "cell " << k << ": " << c[k]);
        // A module names its id in `id()`: return "id"; a function is declared as id(...).
        const bool implemented = code.find("return \"" + id + "\";") != std::string::npos || names_word(code, id, '(');
        CHECK_MESSAGE((c[4] == "yes") == implemented, "implemented: the row says " << c[4]);
        // Tested (c[5]) is checked against the catalog registry itself, which
        // only the double build holds: tests/grad/test_extension_rows.cpp.
        CHECK_MESSAGE((c[6] == "yes") == names_word(docs, id), "documented: the row says " << c[6]);
        CHECK_MESSAGE((c[7] == "yes") == names_word(examples, id), "example: the row says " << c[7]);
        // A documented entry links its page, and the page exists: [text](file.md)
        const size_t open = c[8].find("](");
        if (open != std::string::npos) {
            const std::string page = c[8].substr(open + 2, c[8].find(')', open) - open - 2);
            CHECK_MESSAGE(fs::exists(index.parent_path() / page), "page " << page << " is missing");
        } else {
            CHECK_MESSAGE(c[6] == "no", "a documented entry needs a link to its page");
        }
    }
    for (size_t k = 0; k < attn::testing::kCatalogIds.size(); ++k) {
        const int number = static_cast<int>(k) + 1;
        const auto row = rows.find(number);
        CHECK_MESSAGE(row != rows.end(), "catalog entry " << number << " has no row");
        if (row != rows.end()) CHECK_MESSAGE(row->second == attn::testing::kCatalogIds[k], "row " << number);
    }
}
