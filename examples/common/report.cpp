#include "examples/common/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <tuple>
#include <stdexcept>

#include "examples/common/svg.hpp"
#include "io/atomic_file.hpp"

namespace attn {

namespace {

const char* const kStyle = R"(body { font-family: sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em; color: #222; }
h1 { border-bottom: 2px solid #ddd; padding-bottom: .3em; }
h2 { margin-top: 2em; border-bottom: 1px solid #eee; }
table { border-collapse: collapse; margin: 1em 0; }
.table-wrap { max-width: 100%; overflow-x: auto; }
th, td { border: 1px solid #ddd; padding: .3em .7em; }
td { overflow-wrap: break-word; }
th { background: #f4f4f4; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
pre { background: #f6f6f6; padding: .7em; overflow-x: auto; }
.tokens { line-height: 1.9; margin: .6em 0; }
.tok { padding: .1em .15em; border-radius: 3px; }
.sent { border-left: 6px solid; padding: .1em .5em; margin: .25em 0; line-height: 1.9; }
.figures { display: flex; flex-wrap: wrap; gap: 1em; align-items: flex-end; }
figure { margin: 0; text-align: center; }
svg { max-width: 100%; height: auto; }
)";

// An RGBA colour with the alpha of `weight / peak` (0 when undefined).
std::string shade(const char* rgb, double weight, double peak, double scale = 1) {
    const double a = (peak > 0 && std::isfinite(weight)) ? std::clamp(weight / peak, 0.0, 1.0) * scale : 0;
    char buf[64];
    std::snprintf(buf, sizeof buf, "rgba(%s,%.3f)", rgb, a);
    return buf;
}

double finite_max(const std::vector<double>& v) {
    double m = 0;
    for (double x : v)
        if (std::isfinite(x)) m = std::max(m, x);
    return m;
}

std::string weight_title(double w) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", w);
    return buf;
}

// The tokens as <span>s separated by spaces, each shaded by scale · weight
// relative to `peak` and titled with its weight.
std::string token_spans(const std::vector<std::string>& tokens, const std::vector<double>& weights, double scale,
                        double peak) {
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (i) out += ' ';
        out += "<span class=\"tok\" style=\"background-color:" + shade("255,127,14", scale * weights[i], peak) +
               "\" title=\"" + weight_title(weights[i]) + "\">" + html_escape(tokens[i]) + "</span>";
    }
    return out;
}

}  // namespace

// HTML text and attributes need the same five escapes as XML (and the same
// control characters are not allowed), so this is svg.hpp's xml_escape.
std::string html_escape(std::string_view s) { return xml_escape(s); }

Cell::Cell(double v) : numeric(true) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", v);
    text = buf;
}

HtmlReport::HtmlReport(std::string title) : title_(std::move(title)) {}

HtmlReport& HtmlReport::section(const std::string& heading) {
    sections_.push_back(heading);
    body_ += "<h2 id=\"" + anchor_prefix_ + "s" + std::to_string(sections_.size()) + "\">" + html_escape(heading) +
             "</h2>\n";
    return *this;
}

HtmlReport& HtmlReport::set_anchor_prefix(std::string prefix) {
    anchor_prefix_ = std::move(prefix);
    return *this;
}

HtmlReport& HtmlReport::subsection(const std::string& heading) {
    body_ += "<h3>" + html_escape(heading) + "</h3>\n";
    return *this;
}

HtmlReport& HtmlReport::paragraph(const std::string& text) {
    body_ += "<p>" + html_escape(text) + "</p>\n";
    return *this;
}

HtmlReport& HtmlReport::code(const std::string& text) {
    body_ += "<pre>" + html_escape(text) + "</pre>\n";
    return *this;
}

HtmlReport& HtmlReport::svg(const std::string& svg_markup) {
    body_ += "<div>" + svg_markup + "</div>\n";
    return *this;
}

HtmlReport& HtmlReport::figure_row(const std::vector<std::string>& svgs, const std::vector<std::string>& captions) {
    if (!captions.empty() && captions.size() != svgs.size())
        throw std::invalid_argument("HtmlReport::figure_row: " + std::to_string(captions.size()) + " captions for " +
                                    std::to_string(svgs.size()) + " figures");
    body_ += "<div class=\"figures\">\n";
    for (size_t i = 0; i < svgs.size(); ++i) {
        body_ += "<figure>" + svgs[i];
        if (!captions.empty() && !captions[i].empty())
            body_ += "<figcaption>" + html_escape(captions[i]) + "</figcaption>";
        body_ += "</figure>\n";
    }
    body_ += "</div>\n";
    return *this;
}

HtmlReport& HtmlReport::table(const std::vector<std::string>& header, const std::vector<std::vector<Cell>>& rows) {
    // In a box of the page's width that scrolls sideways if it must: a wide
    // table no longer runs off the page.
    std::string t = "<div class=\"table-wrap\"><table>\n<tr>";
    for (const std::string& h : header) t += "<th>" + html_escape(h) + "</th>";
    t += "</tr>\n";
    for (size_t r = 0; r < rows.size(); ++r) {
        if (rows[r].size() != header.size())
            throw std::invalid_argument("HtmlReport::table: row " + std::to_string(r) + " has " +
                                        std::to_string(rows[r].size()) + " cells, the header " +
                                        std::to_string(header.size()));
        t += "<tr>";
        for (const Cell& c : rows[r]) t += (c.numeric ? "<td class=\"num\">" : "<td>") + html_escape(c.text) + "</td>";
        t += "</tr>\n";
    }
    body_ += t + "</table></div>\n";
    return *this;
}

HtmlReport& HtmlReport::highlighted_text(const std::vector<std::string>& tokens, const std::vector<double>& weights) {
    if (tokens.size() != weights.size())
        throw std::invalid_argument("HtmlReport::highlighted_text: " + std::to_string(tokens.size()) + " tokens but " +
                                    std::to_string(weights.size()) + " weights");
    body_ += "<div class=\"tokens\">" + token_spans(tokens, weights, 1, finite_max(weights)) + "</div>\n";
    return *this;
}

HtmlReport& HtmlReport::highlighted_document(const std::vector<std::vector<std::string>>& sentences,
                                             const std::vector<double>& sentence_weights,
                                             const std::vector<std::vector<double>>& word_weights) {
    if (sentence_weights.size() != sentences.size() || word_weights.size() != sentences.size())
        throw std::invalid_argument("HtmlReport::highlighted_document: " + std::to_string(sentences.size()) +
                                    " sentences, " + std::to_string(sentence_weights.size()) +
                                    " sentence weights and " + std::to_string(word_weights.size()) +
                                    " word-weight lists (they must match)");
    for (size_t s = 0; s < sentences.size(); ++s)
        if (sentences[s].size() != word_weights[s].size())
            throw std::invalid_argument("HtmlReport::highlighted_document: sentence " + std::to_string(s) + " has " +
                                        std::to_string(sentences[s].size()) + " words but " +
                                        std::to_string(word_weights[s].size()) + " weights");
    // A word's weight p_w is its share within its sentence: every sentence's
    // words sum to 1, even a sentence the model ignores. So, as Yang et al.
    // (2016) do for their Figure 5, a word is shaded by √p_s · p_w, its
    // weight scaled by its sentence's weight p_s, relative to the largest
    // such product in the document: only important words of important
    // sentences stand out, and a sentence of weight 0 shows no shaded word.
    // (The square root keeps the words of a sentence with a middling weight
    // visible.)
    const auto scale = [](double p_s) { return std::isfinite(p_s) ? std::sqrt(std::max(p_s, 0.0)) : 0.0; };
    double word_peak = 0;
    for (size_t s = 0; s < sentences.size(); ++s)
        for (double p_w : word_weights[s])
            if (std::isfinite(p_w)) word_peak = std::max(word_peak, scale(sentence_weights[s]) * p_w);
    const double sentence_peak = finite_max(sentence_weights);
    std::string doc = "<div class=\"document\">\n";
    for (size_t s = 0; s < sentences.size(); ++s) {
        const double w = sentence_weights[s];
        doc += "<div class=\"sent\" style=\"border-left-color:" + shade("31,119,180", w, sentence_peak) +
               ";background-color:" + shade("31,119,180", w, sentence_peak, 0.15) + "\" title=\"sentence weight " +
               weight_title(w) + "\">" + token_spans(sentences[s], word_weights[s], scale(w), word_peak) + "</div>\n";
    }
    body_ += doc + "</div>\n";
    return *this;
}

namespace {

std::string explorer_div(const Json& e) {
    return "<div class=\"explorer\" data-explorer=\"" + html_escape(e.dump()) + "\"><p>" +
           html_escape(e.contains("title") ? e["title"].as_string() : std::string()) +
           " (an interactive picture: it needs JavaScript)</p></div>\n";
}

}  // namespace

HtmlReport& HtmlReport::explorer(const Explorer& e) {
    body_ += explorer_div(explorer_json(e));
    return *this;
}

HtmlReport& HtmlReport::explorers(const std::vector<Explorer>& es) {
    std::vector<Json> json;
    for (const Explorer& e : es) json.push_back(explorer_json(e));
    return explorers_json(json);
}

HtmlReport& HtmlReport::explorers_json(const std::vector<Json>& es) {
    body_ += "<div class=\"explorers\">\n";
    for (const Json& e : es) body_ += explorer_div(e);
    body_ += "</div>\n";
    return *this;
}

std::string HtmlReport::html() const {
    std::string page = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
                       html_escape(title_) + "</title>\n<style>\n" + kStyle + explorer_style() +
                       "</style>\n<script>" + explorer_script() + "</script>\n</head>\n<body>\n<h1>" +
                       html_escape(title_) + "</h1>\n";
    if (sections_.size() > 1) {
        page += "<ul class=\"contents\">\n";
        for (size_t i = 0; i < sections_.size(); ++i)
            page += "<li><a href=\"#" + anchor_prefix_ + "s" + std::to_string(i + 1) + "\">" + html_escape(sections_[i]) + "</a></li>\n";
        page += "</ul>\n";
    }
    return page + body_ + "</body>\n</html>\n";
}

void HtmlReport::write(const std::string& path) const {
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec)
        throw std::runtime_error("HtmlReport::write: cannot create the directory '" + parent.string() +
                                 "': " + ec.message());
    write_file_atomic(path, html(), "HtmlReport::write");
}

// ---- the shared report of make run -----------------------------------------------

namespace {

// A trainer's runs of other kinds (caption-hard beside caption) follow its own.
int part_rank(const std::string& name) {
    const char* order[] = {"seq2seq", "caption", "docclass", "zoo"};
    for (int i = 0; i < 4; ++i)
        if (name == order[i] || name.rfind(std::string(order[i]) + "-", 0) == 0) return i;
    return 4;
}

}  // namespace

void write_report_part(const std::string& dir, const std::string& name, const HtmlReport& part) {
    namespace fs = std::filesystem;
    const fs::path parts = fs::path(dir) / "report-parts";
    std::error_code ec;
    fs::create_directories(parts, ec);
    if (ec) throw std::runtime_error("write_report_part: cannot create '" + parts.string() + "': " + ec.message());
    write_file_atomic((parts / (name + ".html")).string(), part.body(), "write_report_part");

    // by rank, then by name ("caption" before "caption-hard": not by file name,
    // where "caption-hard.html" sorts before "caption.html")
    std::vector<std::tuple<int, std::string, fs::path>> files;
    for (const auto& e : fs::directory_iterator(parts))
        if (e.path().extension() == ".html")
            files.emplace_back(part_rank(e.path().stem().string()), e.path().stem().string(), e.path());
    std::sort(files.begin(), files.end());

    std::string contents, body;
    for (const auto& [rank, stem, file] : files) {
        std::ifstream in(file, std::ios::binary);
        const std::string part_body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        contents += "<li><a href=\"#" + stem + "\">" + html_escape(stem) + "</a></li>\n";
        body += "<div id=\"" + stem + "\">\n" + part_body + "</div>\n";
    }
    HtmlReport page("attn: what the models learned");
    const std::string html = page.html();
    // Insert the parts' list and bodies before </body>.
    const size_t end = html.rfind("</body>");
    const std::string merged = html.substr(0, end) + "<ul class=\"contents\">\n" + contents + "</ul>\n" + body +
                               html.substr(end);
    write_file_atomic((fs::path(dir) / "report.html").string(), merged, "write_report_part");
}

}  // namespace attn
