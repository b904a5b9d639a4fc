#include "examples/common/progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

namespace attn {

std::string format_duration(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0) return "--:--";
    const long long total = static_cast<long long>(seconds);  // whole seconds, as a clock shows them
    const long long h = total / 3600, m = total / 60 % 60, s = total % 60;
    char buf[32];
    if (h > 0) std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", h, m, s);
    else std::snprintf(buf, sizeof buf, "%02lld:%02lld", m, s);
    return buf;
}

namespace {

// The terminal's width in columns, or 0 if unknown.
int terminal_columns() {
    winsize ws{};
    if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    return 0;
}

// Columns a line takes on a terminal: one per UTF-8 character, not per byte
// (good enough for our labels; wide CJK characters would count twice).
size_t display_width(const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xc0) != 0x80;
    return n;
}

// Cuts `s` to at most `columns` characters without splitting a UTF-8 character.
void cut_to_width(std::string& s, size_t columns) {
    size_t bytes = 0;
    for (size_t chars = 0; bytes < s.size(); ++bytes) {
        if ((static_cast<unsigned char>(s[bytes]) & 0xc0) == 0x80) continue;  // inside a character
        if (chars++ == columns) break;
    }
    s.resize(bytes);
}

}  // namespace

ProgressBar::ProgressBar(std::string label, int64_t total, ProgressOptions options)
    : label_(std::move(label)), total_(total), options_(std::move(options)) {
    terminal_ = options_.terminal.value_or(::isatty(STDERR_FILENO) == 1);
    out_ = options_.out ? options_.out : &std::cerr;
    options_.bar_width = std::max(options_.bar_width, 1);
    if (!options_.clock) {
        options_.clock = [] {
            return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
        };
    }
    start_ = now();
    // Plain lines wait a full interval; a terminal bar appears at once.
    if (!terminal_) last_draw_ = start_;
}

ProgressBar::~ProgressBar() {
    if (finished_) return;
    try {
        finish();
    } catch (...) {
        // A destructor must not throw; a lost progress line is harmless.
    }
}

double ProgressBar::now() const { return options_.clock(); }

std::string ProgressBar::line() const { return compose(options_.bar_width, 0); }

// The parts of a line, in order: the label, the bar, the count, elapsed,
// eta, the rate and the fields. `bar_width` 0 leaves the bar out; `dropped`
// leaves out the last `dropped` of (elapsed, eta, rate), the rate first.
std::string ProgressBar::compose(int bar_width, int dropped) const {
    const double elapsed = std::max(0.0, now() - start_);
    std::string s = label_;
    char buf[64];
    if (total_ > 0) {
        if (bar_width > 0) {
            const double fraction = std::clamp(static_cast<double>(done_) / static_cast<double>(total_), 0.0, 1.0);
            const int filled = static_cast<int>(fraction * bar_width);
            s += " [" + std::string(filled, '#') + std::string(bar_width - filled, '.') + "]";
        }
        s += " " + std::to_string(done_) + "/" + std::to_string(total_);
    } else {
        s += " " + std::to_string(done_);
    }
    if (dropped < 3) s += " elapsed " + format_duration(elapsed);
    if (total_ > 0 && dropped < 2) {
        // Remaining time at the average rate so far.
        const double eta = done_ > 0 ? elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_) : -1;
        s += " eta " + format_duration(done_ >= total_ ? 0 : eta);
    }
    if (elapsed > 0 && done_ > 0 && dropped < 1) {
        const double rate = static_cast<double>(done_) / elapsed;
        if (rate >= 1) std::snprintf(buf, sizeof buf, " %.1f it/s", rate);
        else std::snprintf(buf, sizeof buf, " %.1f s/it", 1 / rate);
        s += buf;
    }
    for (const auto& [name, value] : fields_) {
        std::snprintf(buf, sizeof buf, " %.4g", value);
        s += " " + name + buf;
    }
    return s;
}

// The line within `columns` characters. The metrics at the end (a loss, an
// epoch's validation score) are what a reader looks for, so they go last:
// first the bar shrinks, down to nothing, then the rate, eta and elapsed
// go, in that order; only a line that is still too long is cut.
std::string ProgressBar::fitted_line(size_t columns) const {
    std::string s = compose(options_.bar_width, 0);
    if (display_width(s) <= columns) return s;
    if (total_ > 0) {
        // " [" + bar + "]" is 3 columns more than the bar itself.
        const size_t without_bar = display_width(compose(0, 0));
        if (without_bar + 3 < columns)
            return compose(static_cast<int>(std::min<size_t>(options_.bar_width, columns - without_bar - 3)), 0);
    }
    for (int dropped = 0; dropped <= 3; ++dropped) {
        s = compose(0, dropped);
        if (display_width(s) <= columns) return s;
    }
    cut_to_width(s, columns);
    return s;
}

void ProgressBar::draw(bool final_line) {
    last_draw_ = now();
    if (!terminal_) {
        *out_ << line() << '\n' << std::flush;
        return;
    }
    // A line redrawn in place must fit the terminal: \r returns to the start
    // of the row, so a wrapped line could never be overwritten. The final line
    // is never redrawn, so it is printed whole, wrapped if need be: it is the
    // epoch's summary that stays on the screen.
    const int columns = options_.columns > 0 ? options_.columns : terminal_columns();
    std::string s = final_line || columns <= 1 ? line() : fitted_line(static_cast<size_t>(columns - 1));
    const size_t length = display_width(s);
    if (length < last_length_) s.append(last_length_ - length, ' ');  // blank the old tail
    last_length_ = length;
    *out_ << '\r' << s << (final_line ? "\n" : "") << std::flush;
}

void ProgressBar::update(int64_t done, const ProgressFields& fields) {
    if (finished_) return;
    done_ = done;
    if (!fields.empty()) fields_ = fields;
    const double interval = terminal_ ? options_.min_interval : options_.plain_interval;
    if (now() - last_draw_ >= interval) draw(false);
}

void ProgressBar::finish(const ProgressFields& fields) { finish(done_, fields); }

void ProgressBar::finish(int64_t done, const ProgressFields& fields) {
    if (finished_) return;
    finished_ = true;
    done_ = done;
    if (!fields.empty()) fields_ = fields;
    draw(true);
}

}  // namespace attn
