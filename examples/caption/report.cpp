#include "examples/caption/report.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "examples/common/explorer.hpp"
#include "examples/common/metrics.hpp"
#include "examples/common/report.hpp"
#include "examples/common/svg.hpp"
#include "io/atomic_file.hpp"

namespace attn {

namespace {

std::string fixed(double v, int decimals) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

constexpr size_t kShownImages = 3;  // test images drawn in the report (and kept each epoch)

ExplorerFrame caption_frame(const Decoded& d, const CaptionVocab& vocab, const std::string& kind) {
    ExplorerFrame f;
    AttentionMap& map = f.maps.emplace_back();
    map.label = kind + " attention";
    for (size_t t = 0; t < d.words.size(); ++t) {
        const bool known = d.words[t] >= 0 && d.words[t] < vocab.size();  // the model's V may exceed the data's
        f.rows.push_back(known ? vocab.words[static_cast<size_t>(d.words[t])] : "<?>");
        map.weights.emplace_back(d.alphas[t].begin(), d.alphas[t].end());
        if (kind != "soft")  // the location hard attention reads when it takes the most likely one
            map.marks.push_back(std::max_element(d.alphas[t].begin(), d.alphas[t].end()) - d.alphas[t].begin());
        if (d.words[t] == CaptionVocab::end) break;
    }
    return f;
}

ExplorerImage explorer_image(const Tensor& image, int64_t grid_h, int64_t grid_w) {
    ExplorerImage e{.height = image.size(0), .width = image.size(1), .grid_h = grid_h, .grid_w = grid_w, .pixels = {}};
    for (int64_t k = 0; k < image.numel(); ++k) e.pixels.push_back(image[k]);
    return e;
}

}  // namespace

Json caption_snapshot(Captioner& model, const CaptionDataset& data, const std::string& kind) {
    std::vector<int64_t> idx;
    for (size_t i = 0; i < std::min(kShownImages, data.test.size()); ++i) idx.push_back(static_cast<int64_t>(i));
    Json frames = Json::array();
    if (idx.empty()) return frames;
    const CaptionBatch batch = make_caption_batch(data.test, idx);
    for (const Decoded& d : greedy_decode(model, batch.images, batch.captions.size(1)))
        frames.push_back(frame_json(caption_frame(d, data.vocab, kind)));
    return frames;
}

CaptionCharts caption_charts(const std::vector<Json>& records) {
    CaptionCharts c;
    // The terms apart, on a log scale: the penalty is tens of times the
    // cross-entropy, and their sum would look flat while the cross-entropy
    // falls tenfold.
    c.loss_terms = line_chart_svg({chart_series(records, "cross-entropy (per word)", "train_ce", "epoch"),
                                   chart_series(records, "penalty λ·Σ_i (1 − Σ_t α_ti)²", "train_penalty", "epoch")},
                                  {.title = "training loss, term by term", .x_label = "epoch",
                                   .y_label = "loss term (log scale)", .log_y = true});
    // Hard attention's two other terms can be negative: a linear axis.
    if (!metric_series(records, "train_reinforce", "epoch").empty())
        c.reinforce = line_chart_svg({chart_series(records, "REINFORCE term", "train_reinforce", "epoch"),
                                      chart_series(records, "entropy bonus −λ_e·H", "train_entropy_bonus", "epoch")},
                                     {.title = "hard attention: REINFORCE terms", .x_label = "epoch",
                                      .y_label = "loss term"});
    c.valid = line_chart_svg({chart_series(records, "word accuracy", "valid_word_acc", "epoch"),
                              chart_series(records, "exact", "valid_exact", "epoch"),
                              chart_series(records, "localisation", "valid_localization", "epoch")},
                             {.title = "validation", .x_label = "epoch", .y_label = "fraction"});
    return c;
}

void write_caption_report(const std::string& out_root, const std::string& dir, const CaptionDataset& data,
                          const std::vector<Decoded>& test_decoded, const std::string& attention_kind,
                          const std::string& run_name, double penalty, const std::vector<NamedMetrics>& scores) {
    HtmlReport report("caption");
    report.set_anchor_prefix("caption-");
    report.section("caption: Show, Attend and Tell (" + attention_kind + " attention)");
    report.paragraph("A CNN encodes each " + std::to_string(data.height) + "×" + std::to_string(data.width) +
                     " scene into a " + std::to_string(data.height / 4) + "×" + std::to_string(data.width / 4) +
                     " grid of annotations; an LSTM names the items in reading order, attending to one part of the "
                     "image per word. Localisation: the share of item words whose most attended location lies in "
                     "that item's cell.");

    // What the training loss is made of. Each of the T steps spreads one unit
    // of attention over the L locations, so Σ_i Σ_t α_ti = T, and by
    // Cauchy–Schwarz Σ_i (1 − Σ_t α_ti)² ≥ (L − T)²/L, reached when every
    // location receives T/L: with far fewer words than locations the penalty
    // cannot go below that floor.
    const std::vector<Json> records = read_metrics(dir + "/metrics.jsonl");
    const CaptionCharts charts = caption_charts(records);
    const double L = static_cast<double>((data.height / 4) * (data.width / 4));
    const double T = data.test.empty() ? 0.0 : static_cast<double>(data.test[0].caption.size());
    const bool hard = !charts.reinforce.empty();
    std::string explanation =
        "The training loss is a sum of terms (Xu et al., 2015, eq. 14): the cross-entropy of the caption's words "
        "(a mean per word) plus the doubly stochastic penalty λ·Σ_i (1 − Σ_t α_ti)², which asks each of the L "
        "locations to receive a total attention of 1 over the caption" +
        std::string(hard ? "; hard attention adds the REINFORCE term and subtracts the entropy bonus λ_e·H" : "") +
        ". Here a caption has T = " + fixed(T, 0) + " words and the grid L = " + fixed(L, 0) +
        " locations: T units of attention cannot give every location 1, and the penalty is at least "
        "λ·(L − T)²/L = " + fixed(penalty * (L - T) * (L - T) / std::max(L, 1.0), 1) + " (λ = " + fixed(penalty, 2) +
        "), reached when attention is spread evenly. So the penalty sits near its floor and dwarfs the "
        "cross-entropy: their sum looks flat while the cross-entropy falls. The chart shows each term on its own, "
        "on a log scale.";
    // Hard attention drops the penalty once it samples (--sampling-penalty 0):
    // its line then ends, which needs saying.
    int64_t dropped_after = 0;
    for (size_t r = 1; r < records.size(); ++r)
        if (records[r].contains("train_penalty") && records[r - 1].contains("train_penalty") &&
            records[r]["train_penalty"].as_double() == 0 && records[r - 1]["train_penalty"].as_double() > 0) {
            dropped_after = records[r - 1]["epoch"].as_int();
            break;
        }
    if (dropped_after > 0)
        explanation += " This run dropped the penalty once it started sampling, after epoch " +
                       std::to_string(dropped_after) +
                       " (--sampling-penalty 0: on a sampled location the penalty only spreads α over the item's "
                       "cell): from there the penalty is 0, off the log scale, and the total is the cross-entropy "
                       "plus the REINFORCE term and the entropy bonus.";
    report.paragraph(explanation);
    if (!records.empty() && records.back().contains("train_penalty")) {
        const Json& last = records.back();
        std::vector<std::vector<Cell>> rows{{"total", last["train_loss"].as_double()},
                                            {"cross-entropy", last["train_ce"].as_double()},
                                            {"penalty", last["train_penalty"].as_double()}};
        if (hard) {
            rows.push_back({"REINFORCE term", last["train_reinforce"].as_double()});
            rows.push_back({"entropy bonus −λ_e·H", last["train_entropy_bonus"].as_double()});
        }
        report.table({"training loss, last epoch's mean", "value"}, rows);
    }
    write_svg(dir + "/loss.svg", charts.loss_terms);
    write_svg(dir + "/valid.svg", charts.valid);
    std::vector<std::string> figures{charts.loss_terms};
    if (hard) {
        write_svg(dir + "/reinforce.svg", charts.reinforce);
        figures.push_back(charts.reinforce);
    }
    figures.push_back(charts.valid);
    report.figure_row(figures);

    if (hard)
        report.paragraph(
            "At test time a hard-attention decoder can read the expected context Σ_i α_ti a_i (--hard-eval "
            "expected, the default, as Xu et al.'s released code does) or the one most likely location, "
            "a_argmax α_t (--hard-eval argmax): hard attention proper, one location per word. The table gives "
            "both, named; the RESULT line too (its argmax_* or expected_* keys).");
    std::vector<std::vector<Cell>> rows;
    for (const NamedMetrics& s : scores) {
        const CaptionMetrics& m = s.metrics;
        rows.push_back({s.decoding, m.word_accuracy, m.exact, m.bleu[0], m.bleu[3], m.localization});
    }
    report.table({"decoding", "word accuracy", "exact", "BLEU-1", "BLEU-4", "localisation"}, rows);

    // Where the model looked: one explorer per test image, its frames the
    // epochs of training (attention.jsonl) and then the tested model. The
    // tested model's overlays also go to DIR as SVG files.
    const int64_t gh = data.height / 4, gw = data.width / 4;
    std::vector<Json> history;
    if (std::filesystem::exists(dir + "/attention.jsonl")) history = read_metrics(dir + "/attention.jsonl");
    Json mine = Json::array();
    for (size_t i = 0; i < kShownImages && i < test_decoded.size(); ++i) {
        const Decoded& d = test_decoded[i];
        Explorer e;
        e.title = attention_kind + " attention: \"" + data.vocab.text(d.words) + "\"";
        e.rows_label = "caption";
        e.cols_label = "image";
        e.image = explorer_image(data.test[i].image, gh, gw);
        e.frames = history_frames(history, i);
        ExplorerFrame tested = caption_frame(d, data.vocab, attention_kind);
        tested.label = "the tested model (best checkpoint)";
        e.frames.push_back(std::move(tested));
        mine.push_back(explorer_json(e));
        for (size_t t = 0; t < d.words.size(); ++t) {
            const std::string& word = e.frames.back().rows[t];
            write_svg(dir + "/overlay_" + std::to_string(i) + "_" + std::to_string(t) + ".svg",
                      attention_overlay_svg(data.test[i].image, Tensor::from(d.alphas[t], Shape{gh, gw}),
                                            {.title = word}));
            if (d.words[t] == CaptionVocab::end) break;
        }
    }
    write_file_atomic(dir + "/explorers.json", mine.dump() + "\n", "write_caption_report");

    // The other attention kinds' latest runs beside this one, when they drew
    // the same images (the same data and seed): soft and hard side by side.
    std::vector<Json> columns{mine};
    std::vector<std::string> kinds{attention_kind};
    const std::filesystem::path root(out_root);
    for (const char* other : {"caption", "caption-hard", "caption-gumbel-st"}) {
        const std::filesystem::path file = root / other / "explorers.json";
        if (other == run_name || !std::filesystem::exists(file)) continue;
        std::ifstream in(file);
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        Json theirs;
        try {
            theirs = parse_json(text);
        } catch (const std::exception&) {
            continue;  // a file a killed run left half-written: not drawn
        }
        bool same = theirs.is_array() && theirs.as_array().size() == mine.as_array().size();
        for (size_t i = 0; same && i < mine.as_array().size(); ++i)
            same = theirs[i].contains("image") && theirs[i]["image"].dump() == mine[i]["image"].dump();
        if (same) columns.push_back(std::move(theirs));
    }
    report.subsection(columns.size() > 1 ? "where the models looked, word by word: the attention kinds side by side"
                                         : "where the model looked, word by word (test images)");
    bool marked = false;  // a hard kind among the columns: its red squares need a word
    for (const Json& c : columns)
        marked = marked || (!c.as_array().empty() && c[0]["frames"][0]["maps"][0].contains("marks"));
    // An untrained model writes ids its output layer has room for but this
    // data set gives no word (the model's vocabulary may be larger than the
    // data's): shown as <?>, which needs saying where it appears.
    bool unknown = false;
    for (const Json& c : columns)
        for (const Json& explorer : c.as_array())
            for (const Json& frame : explorer["frames"].as_array())
                for (const Json& word : frame["rows"].as_array()) unknown = unknown || word.as_string() == "<?>";
    report.paragraph("Click a word of the caption to see where the model looked when it wrote it (orange: the "
                     "attention weight of each location of the grid" +
                     std::string(marked ? "; a red square: the location hard attention reads when it takes the "
                                          "most likely one"
                                        : "") +
                     "). The slider goes through the epochs of training." +
                     std::string(columns.size() > 1 ? " Each row is one test image, each column one attention kind's "
                                                      "latest run on the same images."
                                                    : "") +
                     std::string(unknown ? " <?> is an output the model can write but this data set has no word "
                                           "for (its output layer has room for more words than the data uses): an "
                                           "untrained model writes some, a trained one learns not to."
                                         : ""));
    for (size_t i = 0; i < mine.as_array().size(); ++i) {
        std::vector<Json> row;
        for (const Json& c : columns) row.push_back(c[i]);
        report.paragraph("test image " + std::to_string(i + 1) + ", reference \"" +
                         data.vocab.text(data.test[i].caption) + "\"");
        report.explorers_json(row);
    }
    write_report_part(out_root, run_name, report);
}

}  // namespace attn
