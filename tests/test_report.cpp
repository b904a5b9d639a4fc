// examples/common: the progress bar, metrics lines, SVG charts and the HTML
// report (the training utilities the trainers share).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "examples/common/metrics.hpp"
#include "examples/common/progress.hpp"
#include "examples/common/report.hpp"
#include "examples/common/svg.hpp"
#include "tests/chart_checks.hpp"
#include "tests/helpers.hpp"

using namespace attn;
using namespace attn::testing;

namespace {

// A small well-formedness check for our XML/HTML: every tag closed in order
// (void elements excepted), attribute values quoted, and every '&' starting
// one of the entities we emit; the text of <script> and <style> is raw (HTML
// reads it up to its closing tag), so it is skipped. Returns "" or what is wrong.
std::string check_markup(const std::string& s) {
    static const std::set<std::string> void_elements = {"meta", "br", "hr", "img"};
    std::vector<std::string> open;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '&') {
            bool known = false;
            for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&#39;"})
                known = known || s.compare(i, std::strlen(e), e) == 0;
            if (!known) return "bare '&' at " + std::to_string(i);
            continue;
        }
        if (s[i] == '>') return "stray '>' at " + std::to_string(i);
        if (s[i] != '<') continue;
        const size_t end = s.find('>', i);
        if (end == std::string::npos) return "unterminated tag at " + std::to_string(i);
        std::string tag = s.substr(i + 1, end - i - 1);
        i = end;
        if (tag.starts_with("?") || tag.starts_with("!")) continue;  // declarations
        if (tag.find('<') != std::string::npos) return "'<' inside a tag: " + tag;
        if (occurrences(tag, "\"") % 2 != 0) return "unbalanced quotes in: " + tag;
        if (tag.starts_with("/")) {
            const std::string name = tag.substr(1);
            if (open.empty() || open.back() != name)
                return "</" + name + "> closes <" + (open.empty() ? "nothing" : open.back()) + ">";
            open.pop_back();
            continue;
        }
        const std::string name = tag.substr(0, tag.find_first_of(" \n/"));
        if (tag.ends_with("/") || void_elements.count(name)) continue;
        if (name == "script" || name == "style") {
            const size_t close = s.find("</" + name + ">", i);
            if (close == std::string::npos) return "<" + name + "> is never closed";
            i = close + name.size() + 2;  // at the closing tag's '>'
            continue;
        }
        open.push_back(name);
    }
    return open.empty() ? "" : "<" + open.back() + "> is never closed";
}

// The alpha of the background of the first <span> whose text is `word`.
double word_shade(const std::string& html, const std::string& word) {
    const size_t at = html.find("\">" + word + "</span>");
    REQUIRE_MESSAGE(at != std::string::npos, "no word " << word);
    const size_t rgba = html.rfind("rgba(255,127,14,", at);
    return std::strtod(html.c_str() + rgba + std::strlen("rgba(255,127,14,"), nullptr);
}


}  // namespace

// ---- progress ----------------------------------------------------------------

TEST_CASE("progress: plain lines when stderr is not a terminal") {
    std::ostringstream out;
    double now = 100;
    {
        ProgressBar bar("epoch 3/10", 1024, {.out = &out, .terminal = false, .clock = [&] { return now; }});
        now = 110;
        bar.update(100, {{"loss", 2.5}});  // 10 s < 30 s: nothing yet
        CHECK(out.str().empty());
        now = 141;
        bar.update(512, {{"loss", 1.234}});
        now = 150;
        bar.update(600);  // 9 s after the last line: nothing
        now = 182;
        bar.finish(1024, {{"loss", 1.1}, {"acc", 0.9}});
    }  // the destructor adds nothing after finish
    CHECK(out.str() ==
          "epoch 3/10 [#####.....] 512/1024 elapsed 00:41 eta 00:41 12.5 it/s loss 1.234\n"
          "epoch 3/10 [##########] 1024/1024 elapsed 01:22 eta 00:00 12.5 it/s loss 1.1 acc 0.9\n");
    CHECK(out.str().find('\r') == std::string::npos);
}

TEST_CASE("progress: one line per epoch, also from the destructor; unknown totals") {
    std::ostringstream out;
    double now = 0;
    {
        ProgressBar bar("eval", 0, {.out = &out, .terminal = false, .clock = [&] { return now; }});
        now = 6.5;
        bar.update(3);
    }
    CHECK(out.str() == "eval 3 elapsed 00:06 2.2 s/it\n");
}

TEST_CASE("progress: on a terminal it redraws in place, at most every 0.1 s, within the width; the last line whole") {
    std::ostringstream out;
    double now = 0;
    ProgressBar bar("train", 100, {.out = &out, .terminal = true, .columns = 40, .clock = [&] { return now; }});
    for (int i = 1; i <= 100; ++i) {
        now += 0.01;  // 100 updates over 1 s: about 10 draws
        bar.update(i, {{"loss", 1.0 / i}});
    }
    bar.finish();
    const std::string s = out.str();
    const size_t draws = occurrences(s, "\r");
    CHECK(draws >= 9);
    CHECK(draws <= 12);
    CHECK(s.back() == '\n');
    CHECK(occurrences(s, "\n") == 1);
    // Each line redrawn in place fits in 39 columns; the final one, never
    // redrawn, is whole.
    std::vector<std::string> pieces;
    std::istringstream lines(s);
    for (std::string piece; std::getline(lines, piece, '\r');) pieces.push_back(piece);
    REQUIRE(pieces.size() >= 2);
    for (size_t i = 0; i + 1 < pieces.size(); ++i) CHECK(pieces[i].size() <= 39);
    CHECK(pieces.back() == "train [##########] 100/100 elapsed 00:01 eta 00:00 100.0 it/s loss 0.01\n");
}

// An 80-column terminal used to cut the line at the right edge, where the
// metrics are: an epoch's dev WER never appeared. Now the bar shrinks, then
// the rate, eta and elapsed go; the metrics are kept whole.
TEST_CASE("progress: on a narrow terminal the bar shrinks, then rate, eta and elapsed go, never a metric") {
    // The line drawn on an 80-column terminal 20 s into an epoch, halfway.
    const auto drawn = [](const ProgressFields& fields, const std::string& label = "epoch 3/12") {
        std::ostringstream out;
        double now = 0;
        ProgressBar bar(label, 250, {.out = &out, .terminal = true, .columns = 80, .clock = [&] { return now; }});
        now = 20;
        bar.update(125, fields);
        std::string s = out.str();
        REQUIRE(s.rfind('\r') != std::string::npos);
        s = s.substr(s.rfind('\r') + 1);
        // The last column stays free (a full row wraps on some terminals);
        // a terminal shows a character, not a byte, per column.
        size_t columns = 0;
        for (unsigned char c : s) columns += (c & 0xc0) != 0x80;
        CHECK(columns <= 79);
        return s;
    };
    // Everything fits.
    CHECK(drawn({{"loss", 0.1234}}) ==
          "epoch 3/12 [#####.....] 125/250 elapsed 00:20 eta 00:20 6.2 it/s loss 0.1234");
    // The bar shrinks to what is left ...
    CHECK(drawn({{"loss", 0.1234}, {"ce", 0.05}}) ==
          "epoch 3/12 [##...] 125/250 elapsed 00:20 eta 00:20 6.2 it/s loss 0.1234 ce 0.05");
    // ... down to nothing, then the rate goes,
    CHECK(drawn({{"loss", 0.1234}, {"ce", 0.05}, {"penalty", 54.39}}) ==
          "epoch 3/12 125/250 elapsed 00:20 eta 00:20 loss 0.1234 ce 0.05 penalty 54.39");
    // then eta,
    CHECK(drawn({{"loss", 56.11}, {"ce", 1.724}, {"penalty", 54.39}, {"reward", -3.2}}) ==
          "epoch 3/12 125/250 elapsed 00:20 loss 56.11 ce 1.724 penalty 54.39 reward -3.2");
    // then elapsed.
    CHECK(drawn({{"loss", 56.11}, {"penalty", 54.39}, {"dev_wer", 0.0412}, {"dev_per", 0.0123}}) ==
          "epoch 3/12 125/250 loss 56.11 penalty 54.39 dev_wer 0.0412 dev_per 0.0123");
    // A terminal column holds a character, however many bytes its UTF-8 takes:
    // these 79 characters (80 bytes) fit.
    CHECK(drawn({{"accuracy", 0.99}}, "époque 3/12") ==
          "époque 3/12 [#####.....] 125/250 elapsed 00:20 eta 00:20 6.2 it/s accuracy 0.99");
    // Only when nothing is left to drop is the end cut, between characters.
    CHECK(drawn({{"a_very_long_metric_name_one", 1}, {"a_very_long_metric_name_two", 2}, {"three", 3}},
                "époque 3/12") == "époque 3/12 125/250 a_very_long_metric_name_one 1 a_very_long_metric_name_two 2");

    // The epoch's last line, with the validation metrics, is printed whole:
    // it is never redrawn, so it may wrap.
    std::ostringstream out;
    double now = 0;
    {
        ProgressBar bar("epoch 3/12", 250, {.out = &out, .terminal = true, .columns = 80, .clock = [&] { return now; }});
        now = 50;
        bar.update(250, {{"loss", 0.1234}});
        bar.finish({{"loss", 0.1234}, {"ce", 0.05}, {"dev_wer", 0.0412}, {"dev_per", 0.0123}});
    }
    const std::string s = out.str();
    CHECK(s.substr(s.rfind('\r') + 1) ==
          "epoch 3/12 [##########] 250/250 elapsed 00:50 eta 00:00 5.0 it/s loss 0.1234 ce 0.05 dev_wer 0.0412 "
          "dev_per 0.0123\n");
}

TEST_CASE("progress: durations") {
    CHECK(format_duration(0) == "00:00");
    CHECK(format_duration(61) == "01:01");
    CHECK(format_duration(3599.4) == "59:59");
    CHECK(format_duration(3723) == "1:02:03");
    CHECK(format_duration(-1) == "--:--");
    CHECK(format_duration(NAN) == "--:--");
}

// ---- metrics ---------------------------------------------------------------

TEST_CASE("metrics: JSON lines, flushed, read back") {
    TempDir dir("report");
    const std::string path = dir / "metrics.jsonl";
    {
        MetricsLog log(path, MetricsLog::Mode::truncate);
        log.write({{"epoch", 1}, {"loss", 0.5}, {"model", "additive"}});
        CHECK(read_file(path) == "{\"epoch\":1,\"loss\":0.5,\"model\":\"additive\"}\n");  // already on disk
        log.write({{"epoch", 2}, {"loss", NAN}});
        CHECK_THROWS_WITH(log.write(Json(3)), "MetricsLog: a record must be a JSON object, got a number");
    }
    MetricsLog(path).write({{"epoch", 3}, {"loss", 0.25}});  // append mode keeps the history
    CHECK(read_file(path) ==
          "{\"epoch\":1,\"loss\":0.5,\"model\":\"additive\"}\n{\"epoch\":2,\"loss\":null}\n{\"epoch\":3,\"loss\":0.25}\n");
    const std::vector<Json> records = read_metrics(path);
    REQUIRE(records.size() == 3);
    CHECK(records[2]["loss"].as_double() == 0.25);
    const auto series = metric_series(records, "loss", "epoch");
    CHECK(series == std::vector<std::pair<double, double>>{{1, 0.5}, {3, 0.25}});

    std::ofstream(path, std::ios::app) << "\n{\"epoch\": 4,}\n";
    CHECK_THROWS_WITH(read_metrics(path), doctest::Contains("metrics.jsonl' line 5: json: at byte 12"));
    CHECK_THROWS_WITH(MetricsLog(dir / "no/such/dir/m.jsonl"), doctest::Contains("MetricsLog: cannot open"));
}

// After `kill -9` and --resume the history held the killed run's records after
// its last checkpoint twice, and one torn line made every later run in the
// directory fail at the end (read_metrics ... line 7). Continuing a history
// now drops both.
TEST_CASE("metrics: a resumed history drops a torn line and the records after the checkpoint's step") {
    TempDir dir("report");
    const std::string path = dir / "metrics.jsonl";
    {
        MetricsLog log(path, MetricsLog::Mode::truncate);
        for (int step = 25; step <= 100; step += 25) log.write({{"step", step}, {"train_loss", 1.0 / step}});
        log.write({{"epoch", 1}, {"step", 100}, {"dev_wer", 0.5}});
        log.write({{"step", 125}, {"train_loss", 0.008}});  // after the checkpoint at step 100
    }
    std::ofstream(path, std::ios::app) << "{\"step\":150,\"train_lo";  // killed mid-write
    CHECK_THROWS(read_metrics(path));

    MetricsLog resumed(path, MetricsLog::Mode::append, /*through_step=*/100);
    std::vector<Json> records = read_metrics(path);
    REQUIRE(records.size() == 5);
    CHECK(records.back()["dev_wer"].as_double() == 0.5);
    resumed.write({{"step", 125}, {"train_loss", 0.007}});
    records = read_metrics(path);
    REQUIRE(records.size() == 6);
    CHECK(metric_series(records, "train_loss", "step").back() == std::pair<double, double>{125, 0.007});

    // Appending without a step limit (evaluation only) keeps every good record.
    MetricsLog(path, MetricsLog::Mode::append).write(Json::object({{"test_wer", 0.4}}));
    CHECK(read_metrics(path).size() == 7);
}

// ---- svg ---------------------------------------------------------------------

TEST_CASE("svg: helpers") {
    CHECK(xml_escape("a<b>&\"c'\x01") == "a&lt;b&gt;&amp;&quot;c&#39;?");
    CHECK(nice_ticks(0, 1) == std::vector<double>{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1});
    CHECK(nice_ticks(-7, 23) == std::vector<double>{-10, 0, 10, 20, 30});
    CHECK(nice_ticks(3, 97, 5) == std::vector<double>{0, 20, 40, 60, 80, 100});
    const std::vector<double> flat = nice_ticks(5, 5);
    CHECK(flat.front() <= 4.5);
    CHECK(flat.back() >= 5.5);
    CHECK(viridis(0) == "#440154");
    CHECK(viridis(0.5) == "#21908d");
    CHECK(viridis(1) == "#fde725");
    CHECK(viridis(7) == "#fde725");  // clamped
}

TEST_CASE("svg: line chart is well formed, escapes text, breaks lines at NaN") {
    const std::vector<Series> series = {
        {"train <loss> & \"more\"", {1, 2, 3, 4, 5}, {2.0, 1.0, NAN, 0.5, 0.25}},
        {"valid", {1, 2, 3, 4, 5}, {2.2, 1.3, 0.9, 0.8, 0.7}},
    };
    const std::string svg = line_chart_svg(series, {.title = "loss & accuracy", .x_label = "epoch", .y_label = "loss"});
    CHECK(check_markup(svg) == "");
    CHECK(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    CHECK(svg.find("train &lt;loss&gt; &amp; &quot;more&quot;") != std::string::npos);
    CHECK(svg.find("loss &amp; accuracy") != std::string::npos);
    CHECK(occurrences(svg, "<path") == 2);
    CHECK(occurrences(svg, " M") == 1);  // the NaN splits the first series in two pieces
    // A few points: a dot on each measured one (4 + 5), not only a line between them.
    CHECK(occurrences(svg, "<circle class=\"point\"") == 9);
    const std::string two = line_chart_svg({{"accuracy", {1, 2}, {0.5, 0.75}}});
    CHECK(occurrences(two, "<circle class=\"point\"") == 2);
    CHECK(occurrences(two, "<path class=\"series\"") == 1);
    std::vector<double> xs, ys;
    for (int i = 0; i < 40; ++i) xs.push_back(i), ys.push_back(1.0 / (1 + i));
    CHECK(occurrences(line_chart_svg({{"loss", xs, ys}}), "<circle") == 0);  // a long curve: the line alone

    const std::string log_svg = line_chart_svg(series, {.log_y = true});
    CHECK(check_markup(log_svg) == "");
    CHECK(log_svg.find(">0.1</text>") != std::string::npos);
    CHECK(log_svg.find(">1</text>") != std::string::npos);

    CHECK(check_markup(line_chart_svg({})) == "");  // no data: axes only
    CHECK(line_chart_svg({}).find("no data") != std::string::npos);
    CHECK_THROWS_WITH(line_chart_svg({{"bad", {1, 2}, {1}}}), doctest::Contains("has 2 x values but 1 y values"));
}

// The legend sat in the top-right corner whatever the data, so a rising
// accuracy curve ran under it. Each chart here puts curves in the places a
// legend might go; none may pass under the legend, checked point by point and
// along every line between points.
TEST_CASE("svg: the legend never covers a curve") {
    const std::vector<double> epochs = {1, 2, 3, 4, 5, 6};
    struct Chart {
        const char* what;
        std::vector<Series> series;
        LineChartOptions options;
        bool legend_inside;  // in a corner of the plot (else below it)
    };
    const std::vector<Chart> charts = {
        {"falling losses: the top right is free",
         {{"train", epochs, {2.0, 1.0, 0.6, 0.4, 0.3, 0.25}}, {"valid", epochs, {2.2, 1.3, 0.9, 0.8, 0.7, 0.7}}},
         {.x_label = "epoch", .y_label = "loss", .log_y = true},
         true},
        {"rising accuracy ends in the top right (where the legend used to be)",
         {{"valid accuracy", {1, 2}, {0.67, 0.985}}, {"valid key-sentence precision", {1, 2}, {0.78, 0.995}}},
         {.title = "validation", .x_label = "epoch", .y_label = "fraction", .width = 420, .height = 300},
         true},
        {"a line crosses the top-right corner between two points outside it",
         {{"a", {0, 8.5, 10}, {0, 10, 8.5}}},
         {.x_label = "x", .y_label = "y"},
         true},
        {"curves through all four corners: the legend goes below",
         {{"up", {0, 10}, {0, 10}}, {"down", {0, 10}, {10, 0}}, {"flat", {0, 10}, {5, 5}}},
         {.title = "X", .x_label = "x", .y_label = "y"},
         false},
        {"a flat penalty and a falling cross-entropy, far apart on a log axis",
         {{"cross-entropy (per word)", epochs, {1.8, 0.9, 0.4, 0.2, 0.12, 0.1}},
          {"penalty λ·Σ_i (1 − Σ_t α_ti)²", epochs, {54.6, 54.5, 54.45, 54.42, 54.41, 54.4}}},
         {.x_label = "epoch", .y_label = "loss term", .log_y = true},
         false},
        {"more series than fit in a corner of a small chart",
         {{"one long series name", epochs, {1, 2, 3, 4, 5, 6}}, {"two long series name", epochs, {6, 5, 4, 3, 2, 1}},
          {"three long series name", epochs, {3, 3, 3, 3, 3, 3}}, {"four long series name", epochs, {1, 6, 1, 6, 1, 6}}},
         {.width = 300, .height = 200},
         false},
    };
    for (const Chart& chart : charts) {
        INFO(chart.what);
        const std::string svg = line_chart_svg(chart.series, chart.options);
        CHECK(check_markup(svg) == "");
        const ChartParts parts = parse_chart(svg);
        REQUIRE(parts.plot.found);
        REQUIRE(parts.legend.found);
        CHECK(legend_covers_curve(parts) == "");
        for (const Series& s : chart.series) CHECK(svg.find(">" + xml_escape(s.name) + "</text>") != std::string::npos);
        // Within the picture, and either inside the plot or wholly below it.
        CHECK(parts.legend.x0 >= 0);
        CHECK(parts.legend.x1 <= chart.options.width);
        CHECK(parts.legend.y1 <= chart.options.height);
        const bool inside = parts.legend.x0 >= parts.plot.x0 && parts.legend.x1 <= parts.plot.x1 &&
                            parts.legend.y0 >= parts.plot.y0 && parts.legend.y1 <= parts.plot.y1;
        CHECK(inside == chart.legend_inside);
        if (!inside) CHECK(parts.legend.y0 > parts.plot.y1 + 30);  // under the tick labels and the x label
        CHECK(line_chart_svg(chart.series, chart.options) == svg);  // deterministic
    }
}

// Epochs 1 and 2 used to get ticks 1.0, 1.2, ..., 2.0: a fractional epoch
// that does not exist. When every x is a whole number, every tick is.
TEST_CASE("svg: whole-number x (epochs, steps) gets whole-number ticks") {
    const auto ticks = [](double lo, double hi, bool whole) {
        std::vector<std::string> labels;
        for (double t : nice_ticks(lo, hi, 6, whole)) labels.push_back(std::to_string(t).substr(0, 4));
        return joined(labels);
    };
    CHECK(ticks(1, 2, false) == "1.00 | 1.20 | 1.40 | 1.60 | 1.80 | 2.00");
    CHECK(ticks(1, 2, true) == "1.00 | 2.00");
    CHECK(ticks(1, 12, true) == "0.00 | 2.00 | 4.00 | 6.00 | 8.00 | 10.0 | 12.0");
    CHECK(ticks(3, 3, true) == "2.00 | 3.00 | 4.00");  // one epoch: a window around it

    const auto xticks = [](const std::vector<double>& x) {
        return parse_chart(line_chart_svg({{"s", x, std::vector<double>(x.size(), 1.0)}})).xticks;
    };
    CHECK(joined(xticks({1, 2})) == "1 | 2");
    CHECK(joined(xticks({1})) == "0 | 1 | 2");
    for (const std::vector<double>& x : {std::vector<double>{1, 2, 3}, {1, 2, 3, 4, 5, 6, 7}, {25, 50, 75, 100, 125}}) {
        const std::vector<std::string> labels = xticks(x);
        REQUIRE(!labels.empty());
        for (const std::string& t : labels) CHECK_MESSAGE(whole_number_label(t), "x tick " << t << " of " << joined(labels));
    }
    // A continuous x keeps its fractional ticks.
    CHECK(joined(xticks({0.5, 0.75, 1.0})) == "0.5 | 0.6 | 0.7 | 0.8 | 0.9 | 1.0");
}

TEST_CASE("svg: the axis labels are in the chart") {
    const ChartParts parts = parse_chart(
        line_chart_svg({{"train", {1, 2}, {1.0, 0.5}}}, {.x_label = "epoch", .y_label = "cross-entropy & more"}));
    CHECK(parts.x_label == "epoch");
    CHECK(parts.y_label == "cross-entropy &amp; more");
    CHECK(parse_chart(line_chart_svg({{"train", {1, 2}, {1.0, 0.5}}})).y_label == "");
}

TEST_CASE("svg: heatmap has one rect per cell, labels, and a legend") {
    const Tensor w = Tensor::from({0.7f, 0.2f, 0.1f, 0.0f, 0.1f, 0.1f, 0.5f, 0.3f, 0.0f, 0.0f, 0.2f, 0.8f}, Shape{3, 4});
    const std::string svg = heatmap_svg(w, {"le", "chat", "<eos>"}, {"the", "cat", "sat", "&"},
                                        {.title = "attention", .x_label = "source", .y_label = "target",
                                         .show_values = true});
    CHECK(check_markup(svg) == "");
    CHECK(occurrences(svg, "class=\"cell\"") == 12);
    CHECK(occurrences(svg, "class=\"legend\"") == 50);
    CHECK(svg.find("&lt;eos&gt;") != std::string::npos);
    CHECK(svg.find("<title>chat / sat: 0.5</title>") != std::string::npos);
    CHECK(svg.find("fill=\"#fde725\"") == std::string::npos);  // nothing reaches 1 on the [0, 1] scale
    const std::string autoscaled = heatmap_svg(w, {}, {}, {.auto_range = true});
    CHECK(autoscaled.find("fill=\"#fde725\"") != std::string::npos);  // the maximum 0.8 is the top
    CHECK(check_markup(autoscaled) == "");
    CHECK_THROWS_WITH(heatmap_svg(Tensor::zeros(Shape{4}), {}, {}), doctest::Contains("must be a 2-D tensor"));
    CHECK_THROWS_WITH(heatmap_svg(w, {"a"}, {}), "heatmap_svg: 1 row labels for 3 rows");
}

TEST_CASE("svg: attention over an image") {
    // A 4×6 image and a 2×3 weight grid concentrated on its top-left cell.
    Tensor image = Tensor::full(Shape{4, 6}, 0.5f);
    const Tensor weights = Tensor::from({1, 0, 0, 0, 0, 0}, Shape{2, 3});
    const std::string svg = attention_overlay_svg(image, weights, {.title = "a <dog>", .pixel_size = 10});
    CHECK(check_markup(svg) == "");
    CHECK(occurrences(svg, "<rect x=") == 24);
    CHECK(svg.find("a &lt;dog&gt;") != std::string::npos);
    // Top-left pixel: fully weighted, 0.3 gray + 0.7 orange = (0.85, 0.535, 0.15).
    CHECK(svg.find("<rect x=\"0\" y=\"22\" width=\"10\" height=\"10\" fill=\"#d98826\"/>") != std::string::npos);
    // Bottom-right pixel: no weight, plain gray 0.5.
    CHECK(svg.find("<rect x=\"50\" y=\"52\" width=\"10\" height=\"10\" fill=\"#808080\"/>") != std::string::npos);
    CHECK_THROWS_AS(attention_overlay_svg(Tensor::zeros(Shape{4}), weights), std::invalid_argument);
}

TEST_CASE("svg: write_svg writes a standalone document") {
    TempDir dir("report");
    write_svg(dir / "chart.svg", line_chart_svg({{"a", {0, 1}, {0, 1}}}));
    const std::string text = read_file(dir / "chart.svg");
    CHECK(text.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg"));
    CHECK(check_markup(text) == "");
}

// ---- report -------------------------------------------------------------------

TEST_CASE("report: sections, tables and shaded text, all escaped") {
    HtmlReport report("Runs <1> & 2");
    report.section("seq2seq").paragraph("5 < 6 & \"quotes\"").code("make run");
    report.svg(heatmap_svg(Tensor::zeros(Shape{1, 1}), {}, {}));
    report.table({"model", "accuracy", "epochs"}, {{"additive", 0.98251, 12}, {"dot <d>", 0.5, 3}});
    report.section("docclass");
    report.highlighted_text({"good", "<b>"}, {0.25, 0.5});
    report.highlighted_document({{"great", "film"}, {"bad", "ending"}}, {0.8, 0.2}, {{0.9, 0.1}, {0.5, 0.5}});
    report.figure_row({attention_overlay_svg(Tensor::zeros(Shape{2, 2}), Tensor::ones(Shape{1, 1}))}, {"a dog"});
    const std::string html = report.html();
    CHECK(check_markup(html) == "");
    CHECK(html.starts_with("<!DOCTYPE html>"));
    CHECK(html.find("<title>Runs &lt;1&gt; &amp; 2</title>") != std::string::npos);
    CHECK(html.find("<p>5 &lt; 6 &amp; &quot;quotes&quot;</p>") != std::string::npos);
    CHECK(html.find("<a href=\"#s2\">docclass</a>") != std::string::npos);
    CHECK(html.find("<td class=\"num\">0.9825</td><td class=\"num\">12</td>") != std::string::npos);
    CHECK(html.find("<td>dot &lt;d&gt;</td>") != std::string::npos);
    // Shaded text: each token relative to the largest weight.
    CHECK(html.find("background-color:rgba(255,127,14,1.000)\" title=\"0.500\">&lt;b&gt;</span>") !=
          std::string::npos);
    CHECK(html.find("background-color:rgba(255,127,14,0.500)\" title=\"0.250\">good</span>") != std::string::npos);
    // A document: each word by √(sentence weight) · word weight, relative to
    // the document's largest (√0.8 · 0.9): "bad" is √0.2 · 0.5 / (√0.8 · 0.9).
    CHECK(word_shade(html, "great") == 1.0);
    CHECK(word_shade(html, "bad") == 0.278);  // printed with three decimals
    CHECK(html.find("title=\"0.500\">bad</span>") != std::string::npos);
    CHECK(occurrences(html, "class=\"sent\"") == 2);
    CHECK(html.find("border-left-color:rgba(31,119,180,0.250)") != std::string::npos);  // 0.2 / 0.8
    CHECK(html.find("<figcaption>a dog</figcaption>") != std::string::npos);

    CHECK_THROWS_WITH(report.table({"a", "b"}, {{1}}), "HtmlReport::table: row 0 has 1 cells, the header 2");
    CHECK_THROWS_AS(report.highlighted_text({"a"}, {}), std::invalid_argument);
    CHECK_THROWS_AS(report.highlighted_document({{"a"}}, {1.0}, {{}}), std::invalid_argument);
}


// Word weights are shares within a sentence, so even a sentence the model
// gave weight 0.000 has words of weight 0.5 or 0.9; shaded within their
// sentence, they shone as brightly as the key sentence's. As Yang et al.'s
// Figure 5 does, a word is shaded by √p_s · p_w.
TEST_CASE("report: a HAN document shades a word by its weight scaled by its sentence's") {
    HtmlReport report("han");
    report.highlighted_document({{"ignored", "sentence"}, {"key", "words", "here"}, {"half", "weight"}},
                                {1e-6, 0.8, 0.2}, {{0.9, 0.1}, {0.6, 0.3, 0.1}, {0.5, 0.5}});
    const std::string html = report.html();
    CHECK(check_markup(html) == "");
    CHECK(word_shade(html, "ignored") < 0.01);  // weight 0.9 in a sentence of weight ~0: unshaded
    CHECK(word_shade(html, "sentence") < 0.01);
    CHECK(word_shade(html, "key") == doctest::Approx(1.0));  // √0.8 · 0.6, the largest
    CHECK(word_shade(html, "words") == doctest::Approx(0.5).epsilon(0.002));
    CHECK(word_shade(html, "half") == doctest::Approx(std::sqrt(0.2) * 0.5 / (std::sqrt(0.8) * 0.6)).epsilon(0.002));
    // Hovering still shows each word's own weight and its sentence's.
    CHECK(html.find("title=\"0.900\">ignored</span>") != std::string::npos);
    CHECK(html.find("title=\"sentence weight 0.000\">") != std::string::npos);
    // A sentence of weight 0 and a NaN weight shade nothing, and nothing divides by zero.
    HtmlReport zero("zero");
    zero.highlighted_document({{"a", "b"}}, {0.0}, {{NAN, 1.0}});
    CHECK(zero.html().find("rgba(255,127,14,0.000)\" title=\"nan\">a</span>") != std::string::npos);
    CHECK(word_shade(zero.html(), "b") == 0);
}

TEST_CASE("report: written atomically, creating the directory") {
    TempDir dir("report");
    HtmlReport report("r");
    report.paragraph("hello");
    report.write(dir / "out/report.html");
    CHECK(read_file(dir / "out/report.html") == report.html());
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir / "out")) names.push_back(e.path().filename());
    CHECK(names == std::vector<std::string>{"report.html"});
    CHECK(html_escape("<a href='x'>&</a>") == "&lt;a href=&#39;x&#39;&gt;&amp;&lt;/a&gt;");
}
