#include "examples/common/flags.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "io/atomic_file.hpp"

namespace attn {

FlagParser::FlagParser(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {}

void FlagParser::add(const std::string& name, std::string* target, const std::string& help, bool may_be_empty) {
    flags_.push_back({name, help, "TEXT",
                      [name, target, may_be_empty](const std::string& v) {
                          if (v.empty() && !may_be_empty) throw std::invalid_argument(name + " must not be empty");
                          *target = v;
                      },
                      [target] { return *target; }});
    flags_.back().default_value = flags_.back().get();  // for --help
}

void FlagParser::add(const std::string& name, int64_t* target, const std::string& help, int64_t min, int64_t max) {
    flags_.push_back({name, help, "N",
                      [name, target, min, max](const std::string& v) {
                          char* end = nullptr;
                          errno = 0;
                          const long long x = std::strtoll(v.c_str(), &end, 10);
                          if (v.empty() || *end != '\0' || errno == ERANGE)
                              throw std::invalid_argument(name + " expects a whole number, got '" + v + "'");
                          if (x < min)
                              throw std::invalid_argument(name + " must be at least " + std::to_string(min) +
                                                          ", got " + v);
                          if (x > max)
                              throw std::invalid_argument(name + " must be at most " + std::to_string(max) +
                                                          ", got " + v);
                          *target = x;
                      },
                      [target] { return std::to_string(*target); }});
    flags_.back().default_value = flags_.back().get();  // for --help
}

namespace {

std::string number_text(double x) {
    std::ostringstream os;
    os << x;
    return os.str();
}

// Levenshtein distance of two short strings, for "did you mean".
size_t distance(const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
            diagonal = up;
        }
    }
    return row[b.size()];
}

}  // namespace

void FlagParser::add(const std::string& name, double* target, const std::string& help, double min, double max) {
    flags_.push_back({name, help, "X",
                      [name, target, min, max](const std::string& v) {
                          char* end = nullptr;
                          const double x = std::strtod(v.c_str(), &end);
                          if (v.empty() || *end != '\0' || !std::isfinite(x))
                              throw std::invalid_argument(name + " expects a finite number, got '" + v + "'");
                          if (x < min)
                              throw std::invalid_argument(name + " must be at least " + number_text(min) + ", got " + v);
                          if (x > max)
                              throw std::invalid_argument(name + " must be at most " + number_text(max) + ", got " + v);
                          *target = x;
                      },
                      [target] { return number_text(*target); }});
    flags_.back().default_value = flags_.back().get();  // for --help
}

void FlagParser::add_below(const std::string& name, double* target, const std::string& help, double min,
                           double below, const std::string& note) {
    flags_.push_back({name, help, "X",
                      [name, target, min, below, note](const std::string& v) {
                          char* end = nullptr;
                          const double x = std::strtod(v.c_str(), &end);
                          if (v.empty() || *end != '\0' || !std::isfinite(x))
                              throw std::invalid_argument(name + " expects a finite number, got '" + v + "'");
                          if (!(x >= min && x < below))
                              throw std::invalid_argument(name + " must be in [" + number_text(min) + ", " +
                                                          number_text(below) + ")" +
                                                          (note.empty() ? "" : " (" + note + ")") + ", got " + v);
                          *target = x;
                      },
                      [target] { return number_text(*target); }});
    flags_.back().default_value = flags_.back().get();  // for --help
}

namespace {

// What `path` is when it exists and is not a folder: "a character device",
// ...; "" for a folder, a link to one, or nothing there yet (it is made).
std::string not_a_folder(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    switch (fs::status(path, ec).type()) {  // links followed: --out may name a link to a folder
        case fs::file_type::regular: return "a regular file";
        case fs::file_type::character: return "a character device";
        case fs::file_type::block: return "a block device";
        case fs::file_type::fifo: return "a FIFO (named pipe)";
        case fs::file_type::socket: return "a socket";
        default: return "";  // a folder, nothing there, or unreadable: creating it says
    }
}

}  // namespace

void FlagParser::add_path(const std::string& name, std::string* target, const std::string& help, PathUse use) {
    flags_.push_back({name, help, use == PathUse::output ? "FILE" : use == PathUse::output_folder ? "DIR" : "PATH",
                      [name, target, use](const std::string& v) {
                          if (v.empty()) throw std::invalid_argument(name + ": an empty path");
                          if (use == PathUse::output)
                              if (const std::string problem = special_file_problem(v); !problem.empty())
                                  throw std::invalid_argument(name + " " + v + ": " + problem);
                          if (use == PathUse::output_folder)
                              if (const std::string kind = not_a_folder(v); !kind.empty())
                                  throw std::invalid_argument(name + " " + v + ": is " + kind +
                                                              ", not a directory; give a folder");
                          *target = v;
                      },
                      [target] { return *target; }});
    flags_.back().default_value = flags_.back().get();  // for --help
}

void FlagParser::add(const std::string& name, bool* target, const std::string& help) {
    flags_.push_back({name, help, "",
                      [name, target](const std::string& v) {
                          if (v == "true" || v == "yes" || v == "on" || v == "1") {
                              *target = true;
                          } else if (v == "false" || v == "no" || v == "off" || v == "0") {
                              *target = false;
                          } else {  // --save=no once turned saving on
                              throw std::invalid_argument(name + " is a switch: " + name + " or --no-" + name.substr(2) +
                                                          " (or " + name + "=true|false), got '" + v + "'");
                          }
                      },
                      [target] { return std::string(*target ? "true" : "false"); }});
    flags_.back().default_value = flags_.back().get();  // for --help
}

void FlagParser::add_choice(const std::string& name, std::string* target, const std::vector<std::string>& choices,
                            const std::string& help) {
    std::string list;
    for (const std::string& c : choices) list += (list.empty() ? "" : " | ") + c;
    flags_.push_back({name, help + ": " + list, "TEXT",
                      [name, target, choices, list](const std::string& v) {
                          if (std::find(choices.begin(), choices.end(), v) == choices.end())
                              throw std::invalid_argument(name + " expects " + list + ", got '" + v + "'");
                          *target = v;
                      },
                      [target] { return *target; }});
    flags_.back().default_value = flags_.back().get();  // for --help
}

void FlagParser::add_common(CommonFlags& f, const std::string& data_choices) {
    add("--data", &f.data, "the data set: " + data_choices, /*may_be_empty=*/false);
    add("--epochs", &f.epochs, "passes over the training data", 1, 1'000'000);
    add("--steps", &f.steps,
        "stop after this optimiser step (0: no limit); --resume continues. A stopping point: a learning-rate "
        "schedule spans --epochs", 0);
    add("--time-budget", &f.time_budget, "stop training after this many seconds of this run (0: no limit); --resume continues", 0);
    add("--patience", &f.patience, "stop after this many epochs without a better validation score (0: never)", 0);
    add_below("--ema", &f.ema,
              "Polyak averaging with decay X: after every step, average = X·average + (1 − X)·weights; "
              "validation, the best checkpoint and the test use the average (0: off; e.g. 0.999)",
              0, 1, "0 = off");
    add_choice("--schedule", &f.schedule, {"constant", "cosine", "noam"},
               "the learning rate over the run: constant, cosine-annealed to 5% of --lr over --epochs, or noam "
               "(Vaswani et al. 2017: linear warm-up to --lr over --warmup steps, then --lr·sqrt(warmup/step))");
    add("--warmup", &f.warmup,
        "steps of linear warm-up: noam's W (0: a tenth of the run's steps); cosine: before the annealing (0: none)", 0);
    add("--seed", &f.seed, "the seed every random choice derives from", 0, std::numeric_limits<int64_t>::max());
    add("--threads", &f.threads, "worker threads (0: ATTN_NUM_THREADS or all cores)", 0, 1024);
    add_path("--out", &f.out, "directory for checkpoints, metrics and the report", PathUse::output_folder);
    add("--save", &f.save, "write checkpoints, best and last (--no-save: don't)");
    add("--resume", &f.resume, "continue training from OUT/NAME/last.safetensors");
    add("--eval-only", &f.eval_only, "evaluate OUT/NAME/best.safetensors without training");
    add("--fast", &f.fast,
        "the fast paths (Module::set_fast): fused recurrent gates and sequences, scores, layer norms and "
        "convolutions, and Adam's update over the threads in vector registers; the same values up to rounding. "
        "Without it every layer and the optimiser run their readable versions, the ones a debugger steps into");
}

std::string out_of_memory_message(const std::string& program, const std::string& size_flags,
                                  const std::string& detail) {
    return program + ": out of memory: the sizes asked for (" + size_flags +
           ", or the data) need more memory than this machine has" + (detail.empty() ? "" : " (" + detail + ")");
}

std::string error_message(const std::string& program, const std::string& what) {
    const bool named = what.rfind(program, 0) == 0 && what.size() > program.size() &&
                       (what[program.size()] == ':' || what[program.size()] == ' ');
    return named ? what : program + ": " + what;
}

void check_standard_output(const std::string& what) {
    // A write that failed before (when the buffer filled, or at std::endl)
    // left nothing for the flush below to fail on; its reason is still in
    // errno unless a later call replaced it, so it is named only if it is one
    // a write gives (a stale "No such file or directory" would mislead).
    const bool failed_before = std::cout.fail() || std::ferror(stdout);
    const int earlier = errno;
    errno = 0;
    std::cout.flush();                              // with sync_with_stdio, this is fflush(stdout)
    const bool flushed = std::fflush(stdout) == 0;  // what printf wrote, if std::cout had nothing
    int reason = errno;
    const bool write_error = earlier == ENOSPC || earlier == EDQUOT || earlier == EFBIG || earlier == EIO ||
                             earlier == EPIPE || earlier == EBADF;
    if (reason == 0 && failed_before && write_error) reason = earlier;
    if (std::cout.fail() || !flushed || std::ferror(stdout))
        throw std::runtime_error("could not write " + what + " to standard output: " +
                                 (reason != 0 ? std::strerror(reason) : "a write failed"));
}

std::string kernels_line(bool fast, const std::string& ratio, const std::string& task) {
    const std::string speedup = "about " + ratio + " faster on the " + task + " task (2 cores; docs/performance.md)";
    if (fast)
        return "kernels: fast (--fast: the fused kernels, the same values up to rounding), " + speedup +
               "; without --fast, the readable layers";
    return "kernels: readable (each layer its composed formula, to read and step through); --fast: the fused "
           "kernels, " + speedup;
}

void FlagParser::add_predict(PredictFlags& f, const std::string& what) {
    add("--predict", &f.on, what + " with a trained checkpoint, and show the attention");
    add_path("--checkpoint", &f.checkpoint, "checkpoint for --predict (default OUT/NAME/best.safetensors)",
             PathUse::input);
    add_path("--svg", &f.svg, "--predict: write the attention as SVG to this file (FILE-2.svg, ... for more inputs)",
             PathUse::output);
    add("--show", &f.show, "--predict: draw the attention also when stdout is not a terminal");
    add_path("--dump-reference", &f.dump_reference,
             "write fixed inputs and the model's logits and attention weights to this safetensors file, for the "
             "PyTorch reference (python/check_torch.py); the model is --checkpoint (default "
             "OUT/NAME/model.safetensors)",
             PathUse::output);
}

const FlagParser::Flag* FlagParser::find(const std::string& name) const {
    for (const Flag& f : flags_)
        if (f.name == name) return &f;
    return nullptr;
}

bool FlagParser::parse(int argc, const char* const* argv) {
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            std::cout << usage();
            check_standard_output("the help");
            return false;
        }
        if (arg.rfind("--", 0) != 0 || arg == "--") {
            positional_.push_back(arg);
            continue;
        }
        std::string value;
        bool has_value = false;
        if (const size_t eq = arg.find('='); eq != std::string::npos) {
            value = arg.substr(eq + 1);
            arg = arg.substr(0, eq);
            has_value = true;
        }
        const Flag* flag = find(arg);
        if (!flag && arg.rfind("--no-", 0) == 0) {  // --no-save clears the switch --save
            const Flag* sw = find("--" + arg.substr(5));
            if (sw && sw->kind.empty() && !has_value) {
                sw->set("false");
                continue;
            }
        }
        if (!flag) {
            // The closest known flag, if it is close: a typo or a missing letter.
            const Flag* nearest = nullptr;
            size_t best = 3;
            for (const Flag& f : flags_)
                if (const size_t d = distance(arg, f.name); d < best) best = d, nearest = &f;
            throw std::invalid_argument("unknown flag " + arg +
                                        (nearest ? "; did you mean " + nearest->name + "?" : " (see --help)"));
        }
        if (flag->kind.empty()) {  // a switch
            flag->set(has_value ? value : "true");
            continue;
        }
        if (!has_value) {
            if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
            value = argv[++i];
        }
        flag->set(value);
    }
    return true;
}

void FlagParser::refuse_positional(const std::string& why) const {
    if (!positional_.empty())
        throw std::invalid_argument("unexpected argument '" + positional_[0] + "' (" + why + ")");
}

void FlagParser::describe_default(const std::string& name, const std::string& text) {
    for (Flag& f : flags_)
        if (f.name == name) {
            f.default_value = text;
            return;
        }
    throw std::invalid_argument("describe_default: no flag " + name);
}

std::string FlagParser::usage() const {
    std::ostringstream os;
    os << "usage: " << program_ << " [flags]\n" << summary_ << "\n\nflags:\n";
    for (const Flag& f : flags_) {
        std::string left = f.name + (f.kind.empty() ? "" : " " + f.kind);
        os << "  " << left << std::string(left.size() < 22 ? 22 - left.size() : 1, ' ') << f.help
           << " (default: " << (f.default_value.empty() ? "none" : f.default_value) << ")\n";
    }
    os << "  --help                show this help\n";
    return os.str();
}

std::vector<std::pair<std::string, std::string>> FlagParser::values() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const Flag& f : flags_) out.emplace_back(f.name.substr(2), f.get());
    return out;
}

}  // namespace attn
