// A progress bar for the trainers, on stderr.
//
// On a terminal it redraws one line in place, at most ~10 times a second:
//
//   epoch 3/10 [#####.....] 512/1024 elapsed 00:41 eta 00:40 12.3 it/s loss 1.234
//
// On a narrow terminal the bar shrinks, then the rate, eta and elapsed go
// (in that order), so the numbers at the end stay readable; the final line
// of an epoch is printed whole, even if it wraps.
//
// When stderr is not a terminal (a log file, CI, a pipe) a carriage return
// would leave garbage, so it writes plain lines instead: one when finished
// (one per epoch) and, for long epochs, one every `plain_interval` seconds.
//
//   ProgressBar bar("epoch 3/10", batches.size());
//   for (size_t i = 0; i < batches.size(); ++i) {
//       double loss = train_step(batches[i]);
//       bar.update(i + 1, {{"loss", loss}});
//   }
//   bar.finish({{"loss", mean_loss}});
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attn {

// Named numbers shown after the bar ("loss 1.234"), in the order given.
using ProgressFields = std::vector<std::pair<std::string, double>>;

struct ProgressOptions {
    std::ostream* out = nullptr;          // nullptr: std::cerr
    std::optional<bool> terminal{};       // unset: isatty(stderr)
    int bar_width = 10;                   // characters between [ and ]
    double min_interval = 0.1;            // seconds between terminal redraws
    double plain_interval = 30;           // seconds between plain lines
    int columns = 0;                      // line width on a terminal; 0: ask the terminal
    std::function<double()> clock{};      // seconds; unset: a steady clock (tests inject one)
};

class ProgressBar {
public:
    // `total` is the number of items (batches) of the epoch; 0 or less
    // means unknown, and the bar and eta are left out.
    ProgressBar(std::string label, int64_t total, ProgressOptions options = {});
    ~ProgressBar();
    ProgressBar(const ProgressBar&) = delete;
    ProgressBar& operator=(const ProgressBar&) = delete;

    // `done` items are finished. Draws only if enough time has passed.
    void update(int64_t done, const ProgressFields& fields = {});
    // Draws the final line (with `fields`, or the last ones given) and ends it
    // with a newline. Called by the destructor if the caller did not.
    void finish(const ProgressFields& fields = {});
    void finish(int64_t done, const ProgressFields& fields);

    // The line as it would be drawn now, without \r or \n: every part.
    std::string line() const;
    // The line within `columns` characters, as a terminal shows it during the
    // epoch: the bar shrinks, then the rate, eta and elapsed go; the metrics
    // are cut only when nothing else is left to drop.
    std::string fitted_line(size_t columns) const;

private:
    double now() const;
    std::string compose(int bar_width, int dropped) const;
    void draw(bool final_line);

    std::string label_;
    int64_t total_;
    ProgressOptions options_;
    bool terminal_;
    std::ostream* out_;
    double start_;
    double last_draw_ = -1e300;
    size_t last_length_ = 0;  // of the last terminal line, to blank its tail
    int64_t done_ = 0;
    ProgressFields fields_;
    bool finished_ = false;
};

// "00:41", "12:03", "1:02:03" (hours only when needed).
std::string format_duration(double seconds);

}  // namespace attn
