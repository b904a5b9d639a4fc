// A small HTML report: one self-contained page (no external files) with
// headings, paragraphs, inline SVG charts, tables of numbers, text shaded by
// attention weights, and attention explorers (examples/common/explorer.hpp),
// drawn by a small script inside the page. `make run` writes out/report.html.
//
//   HtmlReport report("attn: what the models learned");
//   report.section("seq2seq: date normalisation");
//   report.paragraph("Bahdanau attention, 12 epochs, seed 1.");
//   report.svg(line_chart_svg(...));
//   report.table({"model", "accuracy"}, {{"additive", 0.982}, {"dot", 0.975}});
//   report.write("out/report.html");
//
// Every piece of text is HTML-escaped; only svg() takes markup, and it is
// meant for the output of examples/common/svg.hpp.
#pragma once

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "examples/common/explorer.hpp"

namespace attn {

// A table cell: text (left-aligned) or a number (right-aligned, 4
// significant digits; integers in full).
struct Cell {
    Cell(std::string s) : text(std::move(s)) {}
    Cell(const char* s) : text(s) {}
    Cell(double v);
    template <std::integral T>
    Cell(T v) : text(std::to_string(v)), numeric(true) {}

    std::string text;
    bool numeric = false;
};

class HtmlReport {
public:
    explicit HtmlReport(std::string title);

    // A top-level section (<h2>, listed in the contents at the top) and a
    // heading inside it (<h3>).
    HtmlReport& section(const std::string& heading);
    HtmlReport& subsection(const std::string& heading);
    HtmlReport& paragraph(const std::string& text);
    // Preformatted text (a command, a sample of output), in a monospace box.
    HtmlReport& code(const std::string& text);
    // An SVG element, inlined as is (trusted markup, not escaped).
    HtmlReport& svg(const std::string& svg_markup);
    // Several SVG elements side by side, each with an optional caption below
    // (e.g. one image overlay per generated word); captions may be empty.
    HtmlReport& figure_row(const std::vector<std::string>& svgs, const std::vector<std::string>& captions = {});
    // A table: one header row, then rows of cells (each row as long as the header).
    HtmlReport& table(const std::vector<std::string>& header, const std::vector<std::vector<Cell>>& rows);
    // Tokens on a line, each shaded by its weight (orange; the largest weight
    // is fully shaded, others in proportion); hovering shows the weight.
    HtmlReport& highlighted_text(const std::vector<std::string>& tokens, const std::vector<double>& weights);
    // A document as a hierarchical attention network sees it: each sentence a
    // line shaded (blue, at its left edge and faintly behind) by its sentence
    // weight p_s, each word (orange) by √p_s · p_w, its weight within the
    // sentence scaled by the sentence's weight as in Yang et al.'s Figure 5,
    // relative to the document's largest: the words of a sentence the model
    // ignores stay unshaded. Hovering shows p_s and p_w.
    HtmlReport& highlighted_document(const std::vector<std::vector<std::string>>& sentences,
                                     const std::vector<double>& sentence_weights,
                                     const std::vector<std::vector<double>>& word_weights);

    // An attention explorer: click a row token, move through the frames,
    // choose a map or a view (examples/common/explorer.hpp). Several in one
    // call are laid side by side (e.g. soft and hard attention on one image).
    HtmlReport& explorer(const Explorer& explorer);
    HtmlReport& explorers(const std::vector<Explorer>& explorers);
    // The same from explorer_json's output (e.g. read back from another run).
    HtmlReport& explorers_json(const std::vector<Json>& explorers);

    // The complete page.
    std::string html() const;
    // The sections alone (no page head), for a page made of several reports.
    const std::string& body() const { return body_; }
    const std::vector<std::string>& headings() const { return sections_; }
    // Section anchors are "<prefix>s1", "<prefix>s2", ...; a report that will
    // be merged into a shared page sets a prefix so anchors stay unique.
    HtmlReport& set_anchor_prefix(std::string prefix);

    // Writes the page to `path` atomically (temporary file, then rename),
    // creating the parent directory if needed.
    void write(const std::string& path) const;

private:
    std::string title_;
    std::string anchor_prefix_;
    std::vector<std::string> sections_;  // headings, for the contents
    std::string body_;
};

// The shared report of `make run`: each example trainer contributes one part
// (its report's sections), stored as DIR/report-parts/NAME.html, and the page
// DIR/report.html is rebuilt from every part present, in the order seq2seq,
// caption, docclass, zoo, then any others by name. So the trainers can run in
// any order, or alone, and the page always shows the latest run of each.
void write_report_part(const std::string& dir, const std::string& name, const HtmlReport& part);

// Escapes & < > " ' for HTML text and attribute values (control characters
// other than tab and newlines become '?', as in xml_escape).
std::string html_escape(std::string_view text);

}  // namespace attn
