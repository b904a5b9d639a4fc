// Progress, in a student's tree (course/progress.hpp). Every make grade
// there adds a line to course/progress.txt (record_attempt); make progress
// reads them back into a table and a page of its own, with the model the
// student's code trained (exercise 6.1) and its attention. Files read and
// written, nothing served: a student opens the page in a browser.
#include "course/progress.hpp"

#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/course_files.hpp"

namespace attn::course::grading {
namespace {

// The exercises' ids, for a sentence: "a, b, c".
std::string known_ids(const std::vector<Exercise>& all) {
    std::string words;
    for (const Exercise& e : all) words += (words.empty() ? "" : ", ") + e.id;
    return words;
}

// s as the page's text: an exercise's title or a mistake's words may hold <, > or &.
std::string html_escape(const std::string& s) {
    std::string out;
    for (const char c : s) {
        if (c == '<') out += "&lt;";
        else if (c == '>') out += "&gt;";
        else if (c == '&') out += "&amp;";
        else if (c == '"') out += "&quot;";
        else out += c;
    }
    return out;
}

// build/course/progress.html: the course's exercises in order with their
// status, the mistakes met on the way, and the model trained on the
// student's code (exercise 6.1) with its attention. A page of its own, read
// from the files (course/progress.txt, build/course/trainer/), nothing served.
void write_progress_page(const std::vector<Exercise>& all, const std::vector<std::string>& ids,
                         const std::map<std::string, int>& attempts, const std::map<std::string, std::string>& last,
                         const std::map<std::string, std::string>& best,
                         const std::map<std::string, std::vector<std::string>>& mistakes) {
    const std::string dir = "build/course", page = dir + "/progress.html";
    std::filesystem::create_directories(dir);
    std::ofstream out(page);
    int done = 0;
    for (const std::string& id : ids) done += best.count(id) ? 1 : 0;
    out << "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Your course</title>\n"
        << "<style>body{font:15px/1.45 system-ui,sans-serif;max-width:60em;margin:2em auto;padding:0 1em}"
        << "table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3em .5em;"
        << "text-align:left;vertical-align:top}.done{color:#1a7f37;font-weight:600}.progress{color:#9a6700}"
        << ".todo{color:#777}.mistake{color:#a40e26;font-size:90%}img{max-width:100%;border:1px solid #eee;"
        << "margin:.5em 0}</style></head><body>\n"
        << "<h1>Your course</h1>\n<p>" << done << " of " << ids.size()
        << " exercises done. The course, in order: <a href=\"../../docs/course/README.md\">docs/course/</a>. "
        << "Made by <code>make progress</code> from <code>course/progress.txt</code>, where every "
        << "<code>make grade</code> adds a line.</p>\n"
        << "<table><tr><th>ex</th><th>exercise</th><th>status</th><th>attempts</th><th>last graded</th></tr>\n";
    for (const std::string& id : ids) {
        const Exercise* e = attn::course::find_exercise(all, id);
        if (!e) continue;
        const bool is_done = best.count(id) > 0, started = attempts.count(id) > 0;
        const std::string link = e->read.empty() ? "" : "../../" + e->read[0];
        out << "<tr><td>" << e->number << "</td><td>";
        if (!link.empty()) out << "<a href=\"" << html_escape(link) << "\">" << html_escape(e->title) << "</a>";
        else out << html_escape(e->title);
        out << " <code>" << id << "</code>";
        if (const auto m = mistakes.find(id); m != mistakes.end())
            for (const std::string& words : m->second) out << "<div class=\"mistake\">mistake met: " << html_escape(words) << "</div>";
        out << "</td><td class=\"" << (is_done ? "done\">done" : started ? "progress\">in progress" : "todo\">not started")
            << "</td><td>" << (started ? attempts.at(id) : 0) << "</td><td>" << (last.count(id) ? last.at(id) : "-")
            << "</td></tr>\n";
    }
    out << "</table>\n<h2>Your model's attention</h2>\n";
    const std::string trainer = dir + "/trainer";
    std::string test_line;
    {
        std::ifstream log(trainer + "/train.log");
        for (std::string line; std::getline(log, line);)
            if (line.rfind("test: ", 0) == 0) test_line = line;
    }
    if (test_line.empty()) {
        out << "<p>Not trained yet: <code>make grade EX=train_dates</code> trains the date translator on your code "
            << "(exercise 6.1).</p>\n";
    } else {
        out << "<p>The date translator trained on your code by exercise 6.1: <b>" << html_escape(test_line)
            << "</b>. Every row of a picture is one output symbol, every column one input character; the brighter "
            << "(yellow), the more weight, dark purple none, as the colour bar beside each picture says. The whole report, with the learning curves and an explorer of every step: "
            << "<a href=\"trainer/report.html\">trainer/report.html</a>.</p>\n";
        for (int k = 0; k < 8; ++k) {
            const std::string svg = "trainer/seq2seq/attention_" + std::to_string(k) + ".svg";
            if (std::filesystem::exists(dir + "/" + svg)) out << "<img src=\"" << svg << "\" alt=\"attention\">\n";
        }
    }
    out << "</body></html>\n";
    std::cout << "\nThe same, with your model's attention: " << page << "\n";
}

}  // namespace

std::vector<std::string> assigned(const std::vector<Exercise>& all) {
    std::vector<std::string> ids;
    if (!std::filesystem::exists(kAssignment)) return ids;
    for (const attn::course::NamedId& n : attn::course::parse_assignment(
             attn::course::read_course_file(kAssignment, "the exercises of this tree"), kAssignment)) {
        if (!attn::course::find_exercise(all, n.id))
            throw std::runtime_error(std::string(kAssignment) + ":" + std::to_string(n.line) + ": no exercise '" + n.id +
                                     "' in " + kExerciseList + " (the exercises: " + known_ids(all) + ")");
        ids.push_back(n.id);
    }
    return ids;
}

void record_attempt(const Exercise& ex, const Verdict& v) {
    const std::time_t now = std::time(nullptr);
    char when[32];
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M", std::localtime(&now));
    attn::course::Attempt a;
    a.when = when;
    a.id = ex.id;
    a.right = v.wrong == 0 && v.checks > 0;
    a.right_checks = v.checks - v.wrong;
    a.checks = v.checks;
    for (std::string m : v.mistakes) {
        for (char& c : m)
            if (c == '\t' || c == '\n' || c == '\r') c = ' ';
        if (!m.empty()) a.mistakes.push_back(m);
    }
    try {
        attn::course::record_attempt(kProgress, a);
    } catch (const std::exception& e) {
        std::cout << "(this attempt is not recorded: " << e.what() << ".\nMove " << kProgress
                  << " away and grade again, or add this line to it yourself:\n" << attn::course::progress_line(a) << "\n)\n";
    }
}

int show_progress(const std::vector<Exercise>& all) {
    std::map<std::string, int> attempts;
    std::map<std::string, std::string> last, best;
    std::map<std::string, std::vector<std::string>> mistakes;
    std::vector<attn::course::Attempt> tried;
    if (std::filesystem::exists(kProgress) || std::filesystem::is_symlink(kProgress))
        try {
            tried = attn::course::parse_progress(attn::course::read_course_file(kProgress, "your attempts"), kProgress);
        } catch (const std::runtime_error& e) {
            throw std::runtime_error(std::string(e.what()) + "; move " + kProgress +
                                     " away (the next make grade starts a new one)");
        }
    for (const attn::course::Attempt& a : tried) {
        ++attempts[a.id];
        last[a.id] = a.when;
        if (a.right) best[a.id] = "done";
        for (const std::string& m : a.mistakes) {
            bool seen = false;
            for (const std::string& known : mistakes[a.id]) seen = seen || known == m;
            if (!seen) mistakes[a.id].push_back(m);
        }
    }
    std::vector<std::string> ids = assigned(all);
    if (ids.empty())
        for (const Exercise& e : all) ids.push_back(e.id);
    std::cout << std::left << std::setw(6) << "ex" << std::setw(22) << "id" << std::setw(13) << "status"
              << std::setw(10) << "attempts" << "last graded\n";
    for (const std::string& id : ids) {
        const Exercise* e = attn::course::find_exercise(all, id);
        if (!e) continue;
        const std::string status = best.count(id) ? "done" : attempts.count(id) ? "in progress" : "not started";
        std::cout << std::setw(6) << e->number << std::setw(22) << id << std::setw(13) << status << std::setw(10)
                  << attempts[id] << (last.count(id) ? last[id] : "-") << "\n";
        for (const std::string& m : mistakes[id]) std::cout << "        mistake met: " << m << "\n";
    }
    write_progress_page(all, ids, attempts, last, best, mistakes);
    return 0;
}

}  // namespace attn::course::grading
