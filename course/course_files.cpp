#include "course/course_files.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "io/atomic_file.hpp"

namespace attn::course {

namespace {

// Far more than a course's files hold (the exercise list: 20 kB; a progress
// line: about 60 bytes), far less than what would exhaust the memory.
constexpr uintmax_t kMostCourseFileBytes = 64u << 20;

std::string trim(std::string_view s) {
    const size_t a = s.find_first_not_of(" \t");
    if (a == std::string_view::npos) return "";
    return std::string(s.substr(a, s.find_last_not_of(" \t") - a + 1));
}

bool is_id_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

bool is_id(std::string_view s) {
    if (s.empty()) return false;
    for (const char c : s)
        if (!is_id_char(c)) return false;
    return true;
}

bool all_digits(std::string_view s, size_t count) {
    if (s.size() != count) return false;
    for (const char c : s)
        if (c < '0' || c > '9') return false;
    return true;
}

// "YYYY-MM-DD HH:MM", as the grader writes it.
bool is_when(std::string_view s) {
    return s.size() == 16 && all_digits(s.substr(0, 4), 4) && s[4] == '-' && all_digits(s.substr(5, 2), 2) &&
           s[7] == '-' && all_digits(s.substr(8, 2), 2) && s[10] == ' ' && all_digits(s.substr(11, 2), 2) &&
           s[13] == ':' && all_digits(s.substr(14, 2), 2);
}

// A count of checks: 1 to 9 digits.
bool read_count(std::string_view s, long& out) {
    if (s.empty() || s.size() > 9) return false;
    out = 0;
    for (const char c : s) {
        if (c < '0' || c > '9') return false;
        out = out * 10 + (c - '0');
    }
    return true;
}

[[noreturn]] void refuse(const std::string& path, int line, const std::string& expected, std::string_view got) {
    throw std::runtime_error(path + ":" + std::to_string(line) + ": expected " + expected + ", got '" + quote_line(got) + "'");
}

}  // namespace

std::string quote_line(std::string_view line) {
    std::string out;
    for (size_t i = 0; i < line.size() && i < 60; ++i) {
        const unsigned char c = static_cast<unsigned char>(line[i]);
        if (c == '\t') out += "\\t";
        else if (c < 0x20 || c == 0x7f) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02x", c);
            out += hex;
        } else out += static_cast<char>(c);
    }
    if (line.size() > 60) out += "...";
    return out;
}

std::string read_course_file(const std::string& path, const std::string& what) {
    std::error_code error;
    const auto status = std::filesystem::status(path, error);
    if (!std::filesystem::exists(status)) throw std::runtime_error(path + ": not found (" + what + ")");
    if (std::filesystem::is_directory(status)) throw std::runtime_error(path + ": is a folder, not a file (" + what + ")");
    // (A FIFO or /dev/zero would be read forever.)
    if (!std::filesystem::is_regular_file(status))
        throw std::runtime_error(path + ": is not a plain file (a device, a FIFO or a socket) (" + what + ")");
    const uintmax_t size = std::filesystem::file_size(path, error);
    if (!error && size > kMostCourseFileBytes)
        throw std::runtime_error(path + ": holds " + std::to_string(size) + " bytes, more than the " +
                                 std::to_string(kMostCourseFileBytes) + " a course file may (" + what + ")");
    std::ifstream in(path, std::ios::binary);
    std::ostringstream bytes;
    if (in) bytes << in.rdbuf();
    if (!in || in.bad()) throw std::runtime_error(path + ": cannot be read (" + what + ")");
    return bytes.str();
}

std::vector<Line> text_lines(std::string_view text, const std::string& path) {
    std::vector<Line> lines;
    int number = 0;
    for (size_t start = 0; start < text.size();) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(start, end - start);
        start = end + 1;
        ++number;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        for (size_t i = 0; i < line.size(); ++i) {
            const unsigned char c = static_cast<unsigned char>(line[i]);
            if ((c < 0x20 && c != '\t') || c == 0x7f) {
                char hex[8];
                std::snprintf(hex, sizeof hex, "0x%02x", c);
                throw std::runtime_error(path + ":" + std::to_string(number) + ": expected a line of text, got the byte " +
                                         hex + " at column " + std::to_string(i + 1) + " (is this the right file?)");
            }
        }
        lines.push_back({std::string(line), number});
    }
    return lines;
}

std::vector<NamedId> parse_assignment(std::string_view text, const std::string& path) {
    std::vector<NamedId> ids;
    for (const Line& l : text_lines(text, path)) {
        const std::string word = trim(l.text);
        if (word.empty() || word[0] == '#') continue;
        if (!is_id(word)) refuse(path, l.number, "one exercise id a line (letters, digits, '_'; or its number, 2.1)", l.text);
        ids.push_back({word, l.number});
    }
    return ids;
}

std::vector<NamedId> parse_capstone_entries(std::string_view text, const std::string& path) {
    std::vector<NamedId> ids;
    for (const Line& l : text_lines(text, path)) {
        if (trim(l.text).empty() || l.text[0] == '#') continue;
        const size_t colon = l.text.find(": ");
        if (colon == std::string::npos) refuse(path, l.number, "'KEY: VALUE' (paper, entry, code, file)", l.text);
        const std::string key = l.text.substr(0, colon), value = trim(l.text.substr(colon + 2));
        if (key == "entry") {
            if (!is_id(value)) refuse(path, l.number, "'entry: ID', the id of a registry entry", l.text);
            ids.push_back({value, l.number});
        } else if (key == "code") {
            if (value.find(" | ") == std::string::npos) refuse(path, l.number, "'code: FILE | OPENING LINE'", l.text);
        } else if (key != "paper" && key != "file") {
            refuse(path, l.number, "'KEY: VALUE' with KEY one of paper, entry, code, file", l.text);
        }
    }
    return ids;
}

std::vector<Attempt> parse_progress(std::string_view text, const std::string& path) {
    static const std::string kForm =
        "'WHEN<TAB>ID<TAB>right or wrong<TAB>RIGHT/CHECKS[<TAB>MISTAKE]...' with WHEN as YYYY-MM-DD HH:MM (a line make grade writes)";
    std::vector<Attempt> attempts;
    for (const Line& l : text_lines(text, path)) {
        if (l.text.empty()) continue;
        std::vector<std::string> f;
        for (size_t start = 0;;) {
            const size_t tab = l.text.find('\t', start);
            f.push_back(l.text.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
            if (tab == std::string::npos) break;
            start = tab + 1;
        }
        Attempt a;
        const size_t slash = f.size() >= 4 ? f[3].find('/') : std::string::npos;
        const bool ok = f.size() >= 4 && is_when(f[0]) && is_id(f[1]) && (f[2] == "right" || f[2] == "wrong") &&
                        slash != std::string::npos && read_count(std::string_view(f[3]).substr(0, slash), a.right_checks) &&
                        read_count(std::string_view(f[3]).substr(slash + 1), a.checks) && a.right_checks <= a.checks;
        if (!ok) refuse(path, l.number, kForm, l.text);
        a.when = f[0];
        a.id = f[1];
        a.right = f[2] == "right";
        for (size_t i = 4; i < f.size(); ++i) {
            if (f[i].empty()) refuse(path, l.number, kForm + " (an empty MISTAKE)", l.text);
            a.mistakes.push_back(f[i]);
        }
        attempts.push_back(std::move(a));
    }
    return attempts;
}

std::string progress_line(const Attempt& a) {
    std::string line = a.when + "\t" + a.id + "\t" + (a.right ? "right" : "wrong") + "\t" +
                       std::to_string(a.right_checks) + "/" + std::to_string(a.checks);
    for (const std::string& m : a.mistakes) line += "\t" + m;
    return line;
}

// The folder holding the progress file, locked (flock(2)) while its file is
// read, added to and renamed: two graders at once (run outside make grade's
// lock) each add their line. Released when closed, the process killed too.
class FolderLock {
public:
    explicit FolderLock(const std::string& file) {
        const std::string folder = std::filesystem::path(file).parent_path().string();
        fd_ = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd_ >= 0)
            while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
            }
    }
    ~FolderLock() {
        if (fd_ >= 0) ::close(fd_);
    }
    FolderLock(const FolderLock&) = delete;
    FolderLock& operator=(const FolderLock&) = delete;

private:
    int fd_ = -1;  // none: the folder cannot be opened, and the write says why
};

void record_attempt(const std::string& path, const Attempt& a) {
    const FolderLock lock(path);
    std::string text;
    if (std::filesystem::exists(path) || std::filesystem::is_symlink(path)) {
        text = read_course_file(path, "your attempts");
        (void)parse_progress(text, path);
        if (!text.empty() && text.back() != '\n') text += '\n';
    }
    write_file_atomic(path, text + progress_line(a) + "\n", "make grade");
}

}  // namespace attn::course
