// The charts the three trainers put in their reports, drawn from metrics
// records written here by hand (the fields examples/common/training_loop.cpp
// and each trainer's validation write), so no training runs: every chart
// names its y axis, counts epochs and steps in whole numbers, and keeps its
// legend off the curves; the captioner's loss shows its terms apart.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "examples/caption/report.hpp"
#include "examples/common/metrics.hpp"
#include "examples/common/svg.hpp"
#include "examples/docclass/evaluate.hpp"
#include "examples/seq2seq/report.hpp"
#include "tests/chart_checks.hpp"
#include "tests/helpers.hpp"

using namespace attn;
using namespace attn::testing;

namespace {

// What every chart of a report must have: the y label it was given, the x
// label, whole-number x ticks (epochs, steps), a legend off the curves.
void check_chart(const std::string& svg, const std::string& what, const std::string& y_label) {
    INFO(what);
    const ChartParts c = parse_chart(svg);
    CHECK(c.y_label == xml_escape(y_label));
    CHECK(!c.x_label.empty());
    REQUIRE(!c.xticks.empty());
    for (const std::string& t : c.xticks) CHECK_MESSAGE(whole_number_label(t), "x tick " << t);
    REQUIRE(c.legend.found);
    CHECK(legend_covers_curve(c) == "");
    CHECK(!c.pieces.empty());  // the curves are there
}

// The names in a chart's legend, in order (each a <text> after the legend's box).
std::vector<std::string> legend_names(const std::string& svg) {
    std::vector<std::string> names;
    size_t at = svg.find("<rect class=\"legend\"");
    REQUIRE(at != std::string::npos);
    for (at = svg.find("<text", at); at != std::string::npos; at = svg.find("<text", at + 1)) {
        const size_t start = svg.find('>', at) + 1;
        names.push_back(svg.substr(start, svg.find("</text>", start) - start));
    }
    return names;
}

// A soft-attention caption run: the loss near 56 because of the penalty, the
// cross-entropy falling from 1.8 to 0.1.
std::vector<Json> caption_records(bool hard) {
    const double ce[] = {1.8, 1.2, 0.6, 0.3, 0.15, 0.1}, penalty[] = {54.6, 54.5, 54.45, 54.42, 54.41, 54.4};
    std::vector<Json> records;
    for (int e = 0; e < 6; ++e) {
        Json r = Json::object({{"epoch", e + 1}, {"step", 94 * (e + 1)}, {"train_loss", ce[e] + penalty[e]},
                               {"train_ce", ce[e]}, {"train_penalty", penalty[e]}});
        if (hard) {
            r.set("train_reinforce", 0.02 - 0.01 * e).set("train_entropy_bonus", -0.03 + 0.002 * e);
            r.set("train_reward", -5.0 + 0.8 * e);
        }
        r.set("valid_word_acc", 0.135 + 0.17 * e).set("valid_exact", 0.05 + 0.15 * e);
        r.set("valid_bleu4", 0.1 * e).set("valid_localization", std::min(1.0, 0.65 + 0.2 * e));
        records.push_back(r);
    }
    return records;
}

}  // namespace

TEST_CASE("trainer charts: seq2seq's loss and dev error, each with its own y axis") {
    std::vector<Json> records;
    double loss = 1.6;
    for (int step = 25; step <= 375; step += 25, loss *= 0.6) {
        records.push_back(Json::object({{"step", step}, {"recent_train_loss", loss}}));
        if (step % 125 == 0)  // an epoch is 125 steps
            records.push_back(Json::object({{"epoch", step / 125}, {"step", step}, {"train_loss", loss},
                                            {"dev_wer", 0.3 / step * 25}, {"dev_per", 0.1 / step * 25}}));
    }
    for (bool g2p : {false, true}) {
        const seq2seq::Seq2SeqCharts c = seq2seq::seq2seq_charts(records, g2p);
        check_chart(c.loss, "seq2seq loss", "cross-entropy per output symbol");
        check_chart(c.dev, "seq2seq dev error", g2p ? "word error rate" : "1 − exact match");
    }
}

TEST_CASE("trainer charts: docclass's loss and validation") {
    std::vector<Json> records;
    for (int e = 1; e <= 2; ++e)
        records.push_back(Json::object({{"epoch", e}, {"step", 63 * e}, {"train_loss", 2.0 / (e * e)},
                                        {"valid_loss", 1.4 / (e * e * e * e)}, {"valid_acc", 0.33 + 0.32 * e},
                                        {"valid_key_sentence_precision", 0.56 + 0.22 * e}}));
    const DocclassCharts c = docclass_charts(records);
    check_chart(c.loss, "docclass loss", "cross-entropy");
    check_chart(c.valid, "docclass validation", "fraction");
    CHECK(joined(parse_chart(c.valid).xticks) == "1 | 2");
}

// The total loss sat flat near 56 while the cross-entropy fell from 1.8 to
// 0.1: the doubly stochastic penalty, near its floor, was most of it. The
// chart now shows the terms apart, and hard attention's REINFORCE terms on a
// chart of their own.
TEST_CASE("trainer charts: caption's loss, term by term") {
    const CaptionCharts soft = caption_charts(caption_records(false));
    check_chart(soft.loss_terms, "caption loss terms", "loss term (log scale)");
    check_chart(soft.valid, "caption validation", "fraction");
    CHECK(soft.reinforce.empty());
    const std::vector<std::string> names = legend_names(soft.loss_terms);
    REQUIRE(names.size() == 2);
    CHECK_MESSAGE(names[0].starts_with("cross-entropy"), "the legend reads " << joined(names));
    CHECK_MESSAGE(names[1].starts_with("penalty"), "the legend reads " << joined(names));
    // The cross-entropy's fall takes a good part of the plot's height.
    const ChartParts c = parse_chart(soft.loss_terms);
    REQUIRE(c.pieces.size() == 2);
    const auto& ce = c.pieces[0];
    CHECK(ce.back().y - ce.front().y > 0.25 * (c.plot.y1 - c.plot.y0));

    const CaptionCharts hard = caption_charts(caption_records(true));
    check_chart(hard.reinforce, "caption REINFORCE terms", "loss term");
    CHECK(joined(legend_names(hard.reinforce)) == "REINFORCE term | entropy bonus −λ_e·H");
}

TEST_CASE("trainer charts: the caption report says what the training loss is made of") {
    TempDir dir("charts");
    // 2×2 cells of 16 pixels: a 32×32 scene, an 8×8 grid (L = 64), captions of T = 5 words.
    const CaptionDataset data = make_shape_dataset({.rows = 2, .cols = 2, .cell_size = 16, .num_shapes = 4}, 2, 1, 1);
    std::filesystem::create_directories(dir / "caption");
    {
        MetricsLog log(dir / "caption/metrics.jsonl", MetricsLog::Mode::truncate);
        for (const Json& r : caption_records(false)) log.write(r);
    }
    write_caption_report(dir.path, dir / "caption", data, {}, "soft", "caption", 1.0, {});
    const std::string part = read_file(dir / "report-parts/caption.html");
    INFO("the report part: " << part.substr(0, part.find("<svg")));
    CHECK(part.find("T = 5 words and the grid L = 64 locations") != std::string::npos);
    CHECK(part.find("λ·(L − T)²/L = 54.4 (λ = 1.00)") != std::string::npos);
    CHECK(part.find("<td>penalty</td><td class=\"num\">54.4</td>") != std::string::npos);
    CHECK(part.find("<td>cross-entropy</td><td class=\"num\">0.1</td>") != std::string::npos);
    CHECK(read_file(dir / "caption/loss.svg").find("class=\"ylabel\"") != std::string::npos);
    CHECK(part.find("dropped the penalty") == std::string::npos);

    // hard attention that dropped the penalty once it sampled (after epoch 3): said, with the epoch
    std::filesystem::create_directories(dir / "caption-hard");
    {
        MetricsLog log(dir / "caption-hard/metrics.jsonl", MetricsLog::Mode::truncate);
        for (Json r : caption_records(true)) {
            if (r["epoch"].as_int() > 3) r.set("train_penalty", 0.0);
            log.write(r);
        }
    }
    // Its scores under both evaluation contexts, each row named.
    CaptionMetrics expected, argmax, beam;
    expected.word_accuracy = 0.992, expected.exact = 0.968;
    argmax.word_accuracy = 0.981, argmax.exact = 0.934;
    beam.word_accuracy = 0.99, beam.exact = 0.95;
    write_caption_report(dir.path, dir / "caption-hard", data, {}, "hard", "caption-hard", 1.0,
                         {{"greedy, expected context", expected}, {"greedy, argmax location", argmax},
                          {"beam 3, expected context", beam}});
    const std::string hard_part = read_file(dir / "report-parts/caption-hard.html");
    CHECK(hard_part.find("This run dropped the penalty once it started sampling, after epoch 3") != std::string::npos);
    CHECK(hard_part.find("<td>greedy, expected context</td><td class=\"num\">0.992</td><td class=\"num\">0.968</td>") !=
          std::string::npos);
    CHECK(hard_part.find("<td>greedy, argmax location</td><td class=\"num\">0.981</td><td class=\"num\">0.934</td>") !=
          std::string::npos);
    CHECK(hard_part.find("<td>beam 3, expected context</td><td class=\"num\">0.99</td>") != std::string::npos);
    CHECK(hard_part.find("the one most likely location") != std::string::npos);
    CHECK(part.find("the one most likely location") == std::string::npos);  // soft attention: no such choice
}

namespace {

// A decoded caption for a test image: its reference words, each looking at
// one location (`at` + t) with weight 0.9, the rest spread evenly.
Decoded looking_at(const CaptionExample& ex, int64_t locations, int64_t at) {
    Decoded d;
    d.words = ex.caption;
    for (size_t t = 0; t < ex.caption.size(); ++t) {
        std::vector<real> alpha(static_cast<size_t>(locations), static_cast<real>(0.1 / static_cast<double>(locations - 1)));
        alpha[static_cast<size_t>(at + static_cast<int64_t>(t))] = static_cast<real>(0.9);
        d.alphas.push_back(alpha);
    }
    return d;
}

}  // namespace

TEST_CASE("trainer charts: soft and hard attention side by side, for the same test images only") {
    TempDir dir("side_by_side");
    const CaptionDataset data = make_shape_dataset({.rows = 2, .cols = 2, .cell_size = 16, .num_shapes = 4}, 2, 1, 3);
    std::vector<Decoded> soft, hard;
    for (const CaptionExample& ex : data.test) {
        soft.push_back(looking_at(ex, 64, 0));
        hard.push_back(looking_at(ex, 64, 10));
    }
    for (const char* run : {"caption", "caption-hard"}) {
        std::filesystem::create_directories(dir / run);
        MetricsLog log(dir / (std::string(run) + "/metrics.jsonl"), MetricsLog::Mode::truncate);
        for (const Json& r : caption_records(std::string(run) == "caption-hard")) log.write(r);
    }
    write_caption_report(dir.path, dir / "caption", data, soft, "soft", "caption", 1.0, {});
    const std::string soft_part = read_file(dir / "report-parts/caption.html");
    CHECK(occurrences(soft_part, "data-explorer=") == 3);  // alone: one explorer per test image
    CHECK(soft_part.find("side by side") == std::string::npos);
    CHECK(soft_part.find("an output the model can write but this data set has no word for") == std::string::npos);
    // An id past the data's vocabulary (an untrained model's): drawn as <?>, and said what it is.
    std::vector<Decoded> unknown = soft;
    unknown[1].words[0] = data.vocab.size() + 5;
    write_caption_report(dir.path, dir / "caption", data, unknown, "soft", "caption", 1.0, {});
    const std::string unknown_part = read_file(dir / "report-parts/caption.html");
    CHECK(parse_json(read_file(dir / "caption/explorers.json"))[1]["frames"][0]["rows"][0].as_string() == "<?>");
    CHECK(unknown_part.find("&lt;?&gt; is an output the model can write but this data set has no word for") !=
          std::string::npos);
    write_caption_report(dir.path, dir / "caption", data, soft, "soft", "caption", 1.0, {});

    write_caption_report(dir.path, dir / "caption-hard", data, hard, "hard", "caption-hard", 1.0, {});
    const std::string hard_part = read_file(dir / "report-parts/caption-hard.html");
    CHECK(hard_part.find("the attention kinds side by side") != std::string::npos);
    CHECK(occurrences(hard_part, "<div class=\"explorers\">") == 3);  // a row per image
    CHECK(occurrences(hard_part, "data-explorer=") == 6);             // hard, then soft, in each
    // the hard run marks each word's most likely location: 10, 11, ... (the soft run marks none)
    const Json hard_json = parse_json(read_file(dir / "caption-hard/explorers.json"));
    const Json& marks = hard_json[0]["frames"][0]["maps"][0]["marks"];
    for (size_t t = 0; t < marks.as_array().size(); ++t) CHECK(marks[t].as_int() == 10 + static_cast<int64_t>(t));
    CHECK_FALSE(parse_json(read_file(dir / "caption/explorers.json"))[0]["frames"][0]["maps"][0].contains("marks"));

    // other images (scenes of other shapes): not put beside these
    const CaptionDataset other =
        make_shape_dataset({.rows = 2, .cols = 2, .cell_size = 16, .num_shapes = 4, .first_shape = 2}, 2, 1, 3);
    std::vector<Decoded> other_soft;
    for (const CaptionExample& ex : other.test) other_soft.push_back(looking_at(ex, 64, 0));
    write_caption_report(dir.path, dir / "caption", other, other_soft, "soft", "caption", 1.0, {});
    write_caption_report(dir.path, dir / "caption-hard", data, hard, "hard", "caption-hard", 1.0, {});
    CHECK(occurrences(read_file(dir / "report-parts/caption-hard.html"), "data-explorer=") == 3);
}
