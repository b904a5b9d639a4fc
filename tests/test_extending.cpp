// docs/extending.md adds a score to the framework and shows its code. Every
// code block there starts with a comment naming its file ("// attention/scores.hpp");
// the rest of the block must be in that file word for word, so the walkthrough
// cannot drift from the code it describes. The score it adds is in the table
// the trainers read.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "attention/by_id.hpp"
#include "tests/helpers.hpp"

using attn::testing::read_file;

namespace {

struct Block {
    std::string file;  // the path named by the block's first line
    std::string body;  // the lines after it
    int line = 0;      // where the block starts in the page
};

// The fenced blocks of a markdown page whose first line is a comment naming a file.
std::vector<Block> file_blocks(const std::string& page) {
    std::vector<Block> blocks;
    std::istringstream in(page);
    std::string line;
    int number = 0;
    Block* open = nullptr;
    bool in_fence = false, first = false;
    while (std::getline(in, line)) {
        ++number;
        if (line.rfind("```", 0) == 0) {
            in_fence = !in_fence;
            first = in_fence;
            open = nullptr;
            continue;
        }
        if (!in_fence) continue;
        if (first) {
            first = false;
            if (line.rfind("// ", 0) == 0 && line.find('/', 3) != std::string::npos && line.find(' ', 3) == std::string::npos) {
                blocks.push_back({line.substr(3), "", number});
                open = &blocks.back();
            }
            continue;
        }
        if (open) open->body += line + "\n";
    }
    return blocks;
}

}  // namespace

TEST_CASE("docs/extending.md: every code block is in the file it names, word for word") {
    const std::string page = read_file("docs/extending.md");
    REQUIRE_MESSAGE(!page.empty(), "docs/extending.md not found (run the tests from the repository root)");
    const std::vector<Block> blocks = file_blocks(page);
    CHECK(blocks.size() >= 6);
    for (const Block& b : blocks) {
        if (b.file.starts_with("tests/mutations/") && attn::testing::in_bug_tree()) continue;
        CAPTURE(b.file);
        CAPTURE(b.line);
        const std::string code = read_file(b.file);
        REQUIRE_MESSAGE(!code.empty(), "docs/extending.md:" << b.line << " names " << b.file << ", which is missing");
        CHECK_MESSAGE(code.find(b.body) != std::string::npos,
                      "docs/extending.md:" << b.line << ": the block is not in " << b.file << " as written");
    }
}

TEST_CASE("docs/extending.md: the score it adds is in the table, by id and by short name") {
    attn::Generator gen(1);
    CHECK(attn::score_info("low-rank").id == "low_rank_bilinear_score");
    auto score = attn::make_score("low_rank_bilinear_score", {.query_dim = 3, .key_dim = 5, .hidden_dim = 4}, gen);
    CHECK(score->id() == "low_rank_bilinear_score");
    CHECK(score->num_parameters() == 4 * 3 + 4 * 5 + 4);
}
