#include "course/exercises.hpp"

#include "course/course_files.hpp"

#include <stdexcept>

namespace attn::course {

namespace {

std::string trim(const std::string& s) {
    const size_t a = s.find_first_not_of(" \t\r");
    if (a == std::string::npos) return "";
    return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

// "file | opening line" → a Cut. The opening line keeps its own spaces
// after the bar's one.
Cut read_cut(const std::string& value, const std::string& where) {
    const size_t bar = value.find(" | ");
    if (bar == std::string::npos) throw std::runtime_error(where + ": expected 'FILE | OPENING LINE'");
    return {trim(value.substr(0, bar)), value.substr(bar + 3)};
}

}  // namespace

std::vector<Exercise> read_exercises(const std::string& path) {
    return parse_exercises(read_course_file(path, "the exercise list"), path);
}

std::vector<Exercise> parse_exercises(std::string_view text, const std::string& path) {
    std::vector<Exercise> all;
    std::vector<int> opened;  // the line of each exercise's heading
    for (const Line& l : text_lines(text, path)) {
        const std::string& line = l.text;
        const std::string where = path + ":" + std::to_string(l.number);
        if (trim(line).empty()) continue;
        if (line.rfind("## ", 0) == 0) {
            const std::string heading = trim(line.substr(3));
            const size_t space = heading.find(' ');
            if (space == std::string::npos) throw std::runtime_error(where + ": expected '## NUMBER TITLE'");
            Exercise e;
            e.number = heading.substr(0, space);
            e.title = trim(heading.substr(space + 1));
            all.push_back(e);
            opened.push_back(l.number);
            continue;
        }
        if (line[0] == '#') continue;  // a comment
        const size_t colon = line.find(": ");
        if (colon == std::string::npos) throw std::runtime_error(where + ": expected 'KEY: VALUE' or '## NUMBER TITLE'");
        if (all.empty()) throw std::runtime_error(where + ": expected '## NUMBER TITLE' before the first field");
        Exercise& e = all.back();
        const std::string key = line.substr(0, colon), value = line.substr(colon + 2);
        if (key == "id") e.id = trim(value);
        else if (key == "cut") e.cuts.push_back(read_cut(value, where));
        else if (key == "twin") e.twins.push_back(read_cut(value, where));
        else if (key == "grade") e.grade.push_back(trim(value));
        else if (key == "read") e.read.push_back(trim(value));
        else if (key == "hint") e.hints.push_back(trim(value));
        else if (key == "speed") e.speed = trim(value);
        else throw std::runtime_error(where + ": unknown key '" + key + "' (id, cut, twin, grade, read, hint, speed)");
    }
    // An exercise with nothing cut grades what the others built (a trainer
    // run) or what the student adds (the capstone, named in course/capstone.txt).
    if (all.empty()) throw std::runtime_error(path + ": expected exercises ('## NUMBER TITLE' blocks), found none");
    for (size_t i = 0; i < all.size(); ++i) {
        const Exercise& e = all[i];
        const std::string where = path + ":" + std::to_string(opened[i]);
        const bool uncut = !e.grade.empty() && (e.grade[0].rfind("trainer", 0) == 0 || e.grade[0].rfind("capstone", 0) == 0);
        if (e.id.empty() || (e.cuts.empty() && !uncut) || e.grade.empty())
            throw std::runtime_error(where + ": exercise " + e.number + " needs an id, a cut and a grade line");
        if (e.id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != std::string::npos)
            throw std::runtime_error(where + ": exercise " + e.number + ": expected an id of letters, digits and '_', got '" +
                                     quote_line(e.id) + "'");
        for (size_t j = 0; j < i; ++j)
            if (all[j].id == e.id || all[j].number == e.number)
                throw std::runtime_error(where + ": exercise " + e.number + " (" + e.id + "): its " +
                                         (all[j].id == e.id ? "id" : "number") + " is that of the exercise at line " +
                                         std::to_string(opened[j]));
    }
    return all;
}

const Exercise* find_exercise(const std::vector<Exercise>& all, const std::string& id_or_number) {
    for (const Exercise& e : all)
        if (e.id == id_or_number || e.number == id_or_number) return &e;
    return nullptr;
}

}  // namespace attn::course
