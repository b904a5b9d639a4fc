// The charts the three trainers put in their reports, drawn from metrics
// records written here by hand (the fields examples/common/training_loop.cpp
// and each trainer's validation write), so no training runs: every chart
// names its y axis, counts epochs and steps in whole numbers, and keeps its
// legend off the curves.
#include <doctest/doctest.h>

#include <string>
#include <vector>

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
