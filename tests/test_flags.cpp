#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "examples/common/flags.hpp"
#include "examples/common/report.hpp"

using namespace attn;

TEST_CASE("flags: common and own flags, both spellings, switches, errors") {
    CommonFlags common;
    std::string attention = "additive";
    double lr = 1e-3;
    FlagParser flags("seq2seq", "test");
    flags.add_common(common);
    flags.add("--attention", &attention, "score");
    flags.add("--lr", &lr, "learning rate");
    const char* argv[] = {"seq2seq", "--epochs", "3", "--attention=dot", "--no-save", "--resume", "--lr", "0.5", "word"};
    REQUIRE(flags.parse(9, argv));
    CHECK(common.epochs == 3);
    CHECK(attention == "dot");
    CHECK_FALSE(common.save);
    CHECK(common.resume);
    CHECK(lr == 0.5);
    REQUIRE(flags.positional().size() == 1);
    CHECK(flags.positional()[0] == "word");

    const char* bad[] = {"seq2seq", "--epochs", "ten"};
    CHECK_THROWS_WITH_AS(FlagParser(flags).parse(3, bad), "seq2seq: --epochs expects a whole number, got 'ten'",
                         std::invalid_argument);
    const char* unknown[] = {"seq2seq", "--epoch", "3"};
    CHECK_THROWS_WITH_AS(flags.parse(3, unknown), "seq2seq: unknown flag --epoch (see --help)", std::invalid_argument);
    const char* missing[] = {"seq2seq", "--seed"};
    CHECK_THROWS_WITH_AS(flags.parse(2, missing), "seq2seq: --seed needs a value", std::invalid_argument);
    CHECK(flags.usage().find("--attention TEXT") != std::string::npos);
}

TEST_CASE("report parts: each trainer adds its part; the page holds all, in a fixed order") {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / "attn_report_parts_test";
    fs::remove_all(dir);
    HtmlReport docs("docclass");
    docs.set_anchor_prefix("docclass-").section("docclass results").paragraph("accuracy 0.9");
    HtmlReport dates("seq2seq");
    dates.set_anchor_prefix("seq2seq-").section("seq2seq results").paragraph("exact 0.99");
    write_report_part(dir.string(), "docclass", docs);
    write_report_part(dir.string(), "seq2seq", dates);
    std::ifstream in(dir / "report.html");
    const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t s = page.find("seq2seq results"), d = page.find("docclass results");
    REQUIRE(s != std::string::npos);
    REQUIRE(d != std::string::npos);
    CHECK(s < d);  // seq2seq comes first whatever order they ran in
    CHECK(page.find("id=\"docclass-s1\"") != std::string::npos);
    // Running one trainer again replaces its part, not the other's.
    HtmlReport dates2("seq2seq");
    dates2.set_anchor_prefix("seq2seq-").section("seq2seq rerun");
    write_report_part(dir.string(), "seq2seq", dates2);
    std::ifstream in2(dir / "report.html");
    const std::string page2((std::istreambuf_iterator<char>(in2)), std::istreambuf_iterator<char>());
    CHECK(page2.find("seq2seq results") == std::string::npos);
    CHECK(page2.find("seq2seq rerun") != std::string::npos);
    CHECK(page2.find("docclass results") != std::string::npos);
    fs::remove_all(dir);
}
