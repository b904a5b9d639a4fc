#include "examples/caption/report.hpp"

#include "examples/common/metrics.hpp"
#include "examples/common/report.hpp"
#include "examples/common/svg.hpp"

namespace attn {

void write_caption_report(const std::string& out_root, const std::string& dir, const CaptionDataset& data,
                          const std::vector<Decoded>& test_decoded, const std::string& attention_kind,
                          const CaptionMetrics& greedy, const CaptionMetrics& beam, int64_t beam_width) {
    HtmlReport report("caption");
    report.set_anchor_prefix("caption-");
    report.section("caption: Show, Attend and Tell (" + attention_kind + " attention)");
    report.paragraph("A CNN encodes each " + std::to_string(data.height) + "×" + std::to_string(data.width) +
                     " scene into a " + std::to_string(data.height / 4) + "×" + std::to_string(data.width / 4) +
                     " grid of annotations; an LSTM names the items in reading order, attending to one part of the "
                     "image per word. Localisation: the share of item words whose most attended location lies in "
                     "that item's cell.");

    const std::vector<Json> records = read_metrics(dir + "/metrics.jsonl");
    auto series = [&](const std::string& name, const std::string& key) {
        Series s{.name = name};
        for (const auto& [x, y] : metric_series(records, key, "epoch")) {
            s.x.push_back(x);
            s.y.push_back(y);
        }
        return s;
    };
    const std::string loss_chart = line_chart_svg({series("train loss", "train_loss"), series("train CE", "train_ce")},
                                                  {.title = "training loss", .x_label = "epoch", .log_y = true});
    const std::string valid_chart =
        line_chart_svg({series("word accuracy", "valid_word_acc"), series("exact", "valid_exact"),
                        series("localisation", "valid_localization")},
                       {.title = "validation", .x_label = "epoch"});
    write_svg(dir + "/loss.svg", loss_chart);
    write_svg(dir + "/valid.svg", valid_chart);
    report.figure_row({loss_chart, valid_chart});

    report.table({"decoding", "word accuracy", "exact", "BLEU-1", "BLEU-4", "localisation"},
                 {{"greedy", greedy.word_accuracy, greedy.exact, greedy.bleu[0], greedy.bleu[3], greedy.localization},
                  {"beam " + std::to_string(beam_width), beam.word_accuracy, beam.exact, beam.bleu[0], beam.bleu[3],
                   beam.localization}});

    report.subsection("where the model looked, word by word (test images)");
    const int64_t gh = data.height / 4, gw = data.width / 4;
    for (size_t i = 0; i < 3 && i < test_decoded.size(); ++i) {
        const Decoded& d = test_decoded[i];
        std::vector<std::string> svgs, captions;
        for (size_t t = 0; t < d.words.size(); ++t) {
            const bool known = d.words[t] >= 0 && d.words[t] < data.vocab.size();  // the model's V may exceed the data's
            const std::string word = known ? data.vocab.words[static_cast<size_t>(d.words[t])] : "<?>";
            const Tensor weights = Tensor::from(d.alphas[t], Shape{gh, gw});
            svgs.push_back(attention_overlay_svg(data.test[i].image, weights, {.title = word}));
            captions.push_back(word);
            write_svg(dir + "/overlay_" + std::to_string(i) + "_" + std::to_string(t) + ".svg", svgs.back());
            if (d.words[t] == CaptionVocab::end) break;
        }
        report.paragraph("generated \"" + data.vocab.text(d.words) + "\", reference \"" +
                         data.vocab.text(data.test[i].caption) + "\"");
        report.figure_row(svgs, captions);
    }
    write_report_part(out_root, "caption", report);
}

}  // namespace attn
