// examples/common/explorer: the data of the report's attention explorers
// (what the page's script reads), its checks, and how the page carries it.
// The script itself is checked in a browser by scripts/check-report.sh.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "examples/common/explorer.hpp"
#include "examples/common/report.hpp"
#include "tests/helpers.hpp"

using namespace attn;
using namespace attn::testing;

namespace {

// Two output tokens over three input tokens, two frames.
Explorer two_by_three() {
    Explorer e;
    e.title = "a test";
    for (int epoch = 1; epoch <= 2; ++epoch) {
        ExplorerFrame f;
        f.label = "epoch " + std::to_string(epoch);
        f.rows = {"x", "y"};
        f.cols = {"a", "b", "c"};
        AttentionMap& m = f.maps.emplace_back();
        m.label = "head 1";
        m.weights = {{0.12345, 0.5, 0.37655}, {0.9996, 0.0004, 0}};
        f.maps.push_back(m);
        f.maps.back().label = "head 2";
        e.frames.push_back(f);
    }
    return e;
}

std::string error_of(const Explorer& e) {
    try {
        explorer_json(e);
    } catch (const std::invalid_argument& err) {
        return err.what();
    }
    return "";
}

}  // namespace

TEST_CASE("explorer: the JSON holds every frame and map, weights to 3 decimals") {
    const Json j = explorer_json(two_by_three());
    CHECK(j["title"].as_string() == "a test");
    CHECK(j["initial_frame"].as_int() == 1);  // -1: the last frame
    CHECK(j["initial_map"].as_int() == 0);
    REQUIRE(j["frames"].as_array().size() == 2);
    const Json& f = j["frames"][1];
    CHECK(f["label"].as_string() == "epoch 2");
    CHECK(f["rows"][1].as_string() == "y");
    CHECK(f["cols"][2].as_string() == "c");
    REQUIRE(f["maps"].as_array().size() == 2);
    CHECK(f["maps"][1]["label"].as_string() == "head 2");
    const Json& w = f["maps"][0]["weights"];
    // rounded by hand: 0.12345 → 0.123, 0.37655 → 0.377, 0.9996 → 1, 0.0004 → 0
    CHECK(w[0][0].as_double() == 0.123);
    CHECK(w[0][1].as_double() == 0.5);
    CHECK(w[0][2].as_double() == 0.377);
    CHECK(w[1][0].as_double() == 1.0);
    CHECK(w[1][1].as_double() == 0.0);
    CHECK_FALSE(f["maps"][0].contains("marks"));
    CHECK_FALSE(j.contains("image"));
}

TEST_CASE("explorer: a frame round-trips through JSON (what attention.jsonl keeps)") {
    ExplorerFrame f = two_by_three().frames[0];
    f.maps[1].rows = {"p", "q"};
    f.maps[1].marks = {2, -1};
    const ExplorerFrame back = frame_from_json(parse_json(frame_json(f).dump()));
    CHECK(back.label == "epoch 1");
    CHECK(back.rows == f.rows);
    CHECK(back.cols == f.cols);
    REQUIRE(back.maps.size() == 2);
    CHECK(back.maps[0].rows.empty());
    CHECK(back.maps[1].rows == std::vector<std::string>{"p", "q"});
    CHECK(back.maps[1].marks == std::vector<int64_t>{2, -1});
    CHECK(back.maps[0].weights[0] == std::vector<double>{0.123, 0.5, 0.377});
    CHECK_THROWS_WITH_AS(frame_from_json(parse_json("[1, 2]")), doctest::Contains("expected an object"),
                         std::invalid_argument);
}

TEST_CASE("explorer: an item's frames from a run's attention.jsonl, labelled by epoch") {
    const ExplorerFrame f = two_by_three().frames[0];
    std::vector<Json> records;
    for (int64_t epoch = 0; epoch <= 2; ++epoch) {
        Json items = Json::array();
        items.push_back(frame_json(f));
        if (epoch != 1) items.push_back(frame_json(f));  // item 1 is missing from epoch 1's record
        records.push_back(Json::object({{"epoch", epoch}, {"step", 10 * epoch}, {"snapshot", std::move(items)}}));
    }
    const std::vector<ExplorerFrame> first = history_frames(records, 0), second = history_frames(records, 1);
    REQUIRE(first.size() == 3);
    CHECK(first[0].label == "before training");
    CHECK(first[2].label == "epoch 2");
    CHECK(first[1].rows == f.rows);
    REQUIRE(second.size() == 2);
    CHECK(second[1].label == "epoch 2");
    CHECK(history_frames(records, 2).empty());
}

TEST_CASE("explorer: an image's pixels become 0..255 and marks must lie on its grid") {
    Explorer e;
    e.title = "scene";
    e.image = ExplorerImage{.height = 2, .width = 2, .grid_h = 1, .grid_w = 2, .pixels = {0, 0.5, 1, 2}};
    ExplorerFrame f;
    f.rows = {"ring", "<end>"};
    AttentionMap& m = f.maps.emplace_back();
    m.weights = {{0.25, 0.75}, {1, 0}};
    m.marks = {1, 0};
    e.frames.push_back(f);
    const Json j = explorer_json(e);
    const Json& px = j["image"]["pixels"];
    CHECK(px[0].as_int() == 0);
    CHECK(px[1].as_int() == 128);  // round(127.5)
    CHECK(px[2].as_int() == 255);
    CHECK(px[3].as_int() == 255);  // clamped
    CHECK(j["image"]["grid_w"].as_int() == 2);
    CHECK(j["frames"][0]["maps"][0]["marks"][1].as_int() == 0);

    e.frames[0].maps[0].marks = {1, 2};  // the grid has locations 0 and 1
    CHECK(error_of(e).find("mark 2 outside the 2 grid locations") != std::string::npos);
    e.frames[0].maps[0].marks = {1};
    CHECK(error_of(e).find("1 marks for 2 rows") != std::string::npos);
    e.frames[0].maps[0].marks = {};
    e.frames[0].maps[0].weights = {{0.25, 0.5, 0.25}, {1, 0, 0}};  // three columns for a grid of two
    CHECK(error_of(e).find("a row of 3 weights for 2 grid locations") != std::string::npos);
    e.frames[0].maps[0].weights = {{0.25, 0.75}, {1, 0}};
    e.image->pixels.pop_back();
    CHECK(error_of(e).find("the image has 3 pixels, not 2×2") != std::string::npos);
}

TEST_CASE("explorer: sizes that do not match are named") {
    Explorer e = two_by_three();
    e.frames[1].maps[0].weights.pop_back();
    CHECK(error_of(e) == "explorer 'a test', frame 'epoch 2', map 'head 1': 1 rows of weights for 2 row tokens");
    e = two_by_three();
    e.frames[0].maps[1].weights[1].push_back(0);
    CHECK(error_of(e) == "explorer 'a test', frame 'epoch 1', map 'head 2': a row of 4 weights for 3 columns");
    e = two_by_three();
    e.frames[1].maps.pop_back();
    CHECK(error_of(e) == "explorer 'a test', frame 'epoch 2': 1 maps, the first frame has 2 (at least one)");
    e = two_by_three();
    e.initial_map = 2;
    CHECK(error_of(e) == "explorer 'a test': initial map 2 of 2");
    e = two_by_three();
    e.frames.clear();
    CHECK(error_of(e) == "explorer 'a test': no frame");
    // a map's own rows replace the frame's
    e = two_by_three();
    e.frames[0].maps[0].rows = {"only"};
    CHECK(error_of(e).find("2 rows of weights for 1 row tokens") != std::string::npos);
}

TEST_CASE("explorer: the page carries the data escaped, and the script and style once") {
    Explorer e = two_by_three();
    e.frames[0].rows[0] = "\"<b>&";  // a token that would break the attribute or the page if not escaped
    HtmlReport report("r");
    report.section("s").explorer(e).explorers({two_by_three(), two_by_three()});
    const std::string page = report.html();
    CHECK(occurrences(page, "<div class=\"explorer\" data-explorer=\"") == 3);
    CHECK(occurrences(page, "<div class=\"explorers\">") == 1);
    CHECK(page.find("&quot;\\&quot;&lt;b&gt;&amp;&quot;") != std::string::npos);  // JSON "\"<b>&", HTML-escaped
    CHECK(page.find("\"<b>") == std::string::npos);
    CHECK(occurrences(page, "function explore(root)") == 1);
    CHECK(occurrences(page, ".explorer-controls {") == 1);
    // without the script, each explorer says what it is
    CHECK(occurrences(page, "(an interactive picture: it needs JavaScript)") == 3);

    // the shared page of make run: the parts' explorers, the script once
    TempDir dir("explorer_parts");
    write_report_part(dir.path, "seq2seq", report);
    write_report_part(dir.path, "zoo", report);
    std::ifstream in(dir.path + "/report.html");
    const std::string merged((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(occurrences(merged, "<div class=\"explorer\" data-explorer=\"") == 6);
    CHECK(occurrences(merged, "function explore(root)") == 1);
}
