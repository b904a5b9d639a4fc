// Command-line flags for the example trainers: declare each flag with a
// pointer to the variable it sets and a line of help, then parse.
//
//     CommonFlags common{.data = "dates", .epochs = 12};
//     std::string attention = "additive";
//     FlagParser flags("seq2seq", "Trains an encoder-decoder with attention.");
//     flags.add_common(common);
//     flags.add("--attention", &attention, "additive|dot|general|concat|scaled");
//     if (!flags.parse(argc, argv)) return 0;  // --help was printed
//
// Values are written `--name value` or `--name=value`; a bool flag takes no
// value. A number flag may declare its range, checked as it is parsed, before
// any work: flags.add("--batch", &batch, "examples per step", 1). A bad flag or
// value throws std::invalid_argument naming it ("--epochs expects a whole
// number, got 'ten'", "--batch must be at least 1, got 0", "unknown flag
// --epoch; did you mean --epochs?"); the trainer prefixes its own name.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace attn {

// The flags every example trainer shares.
struct CommonFlags {
    std::string data;          // which data set: a built-in name or a path
    int64_t epochs = 10;       // passes over the training data
    int64_t steps = 0;         // if > 0: stop after this optimiser step (a stopping point, not the run's length)
    double time_budget = 0;    // if > 0: stop after this many seconds of this invocation
    int64_t patience = 0;      // if > 0: stop after this many epochs without a better validation score
    std::string schedule = "constant";  // the learning rate: constant, cosine (annealed to 5% over --epochs) or noam
    int64_t warmup = 0;        // linear warm-up steps: noam's (0: a tenth of the run), or before the cosine (0: none)
    int64_t seed = 1;          // every random choice derives from it
    int64_t threads = 0;       // 0: ATTN_NUM_THREADS or the number of cores
    std::string out = "out";   // OUT/NAME/ gets checkpoints and metrics; OUT/report.html the report
    bool save = true;          // write checkpoints (best and last)
    bool resume = false;       // continue from OUT/NAME/last.safetensors
    bool eval_only = false;    // evaluate OUT/NAME/best.safetensors, no training
    bool fast = false;         // --fast: the model's fused kernels (Module::set_fast); else the readable versions
    double ema = 0;            // > 0: validate, keep and test an exponential moving average of the weights (decay)
};

// --predict --checkpoint --svg --show: a trained model on the user's own
// input, the same four flags in every trainer; and --dump-reference, the
// model's outputs on fixed inputs for the PyTorch check (python/check_torch.py).
struct PredictFlags {
    bool on = false;          // --predict
    std::string checkpoint;   // empty: OUT/NAME/best.safetensors (--dump-reference: OUT/NAME/model.safetensors)
    std::string svg;          // write the pictures here (FILE-2.svg, ... for more inputs)
    bool show = false;        // draw on stdout also when it is not a terminal
    std::string dump_reference;  // --dump-reference FILE: write inputs, logits and attention weights there
    std::string checkpoint_or_best(const CommonFlags& common, const std::string& name) const {
        return checkpoint.empty() ? common.out + "/" + name + "/best.safetensors" : checkpoint;
    }
    // The model-only file of training (what PyTorch loads), unless --checkpoint names another.
    std::string checkpoint_or_model(const CommonFlags& common, const std::string& name) const {
        return checkpoint.empty() ? common.out + "/" + name + "/model.safetensors" : checkpoint;
    }
};

// The largest width a size flag takes (--hidden, --embedding, ...): a
// 16384×16384 float matrix is already 1 GiB; a larger value is surely a typo
// and would fail later with an out-of-memory error that names no flag.
constexpr int64_t kMaxWidth = 16384;

// What a trainer says when the sizes asked for need more memory than the
// machine has: `size_flags` names the flags that set them ("--batch,
// --hidden"); `detail` is the refusal's own words (the bytes asked for and
// in use, from the allocator), empty when the C library refused.
std::string out_of_memory_message(const std::string& program, const std::string& size_flags,
                                  const std::string& detail);

// The line a trainer prints for an error that stopped it: "program: what",
// or `what` alone when it already begins with the program's name (a message
// from the example's own code, "seq2seq --ensemble: …").
std::string error_message(const std::string& program, const std::string& what);

// Flushes standard output (std::cout and printf's buffer) and throws
// std::runtime_error if anything written to it was lost: "could not write
// `what` to standard output: No space left on device". A trainer calls it
// before it exits 0: `--predict > /dev/full` once lost every answer and
// reported success.
void check_standard_output(const std::string& what);

// The line a trainer prints first about its kernels: which ones run, and what
// the other choice would buy or cost: --fast's speed-up `ratio` ("1.8×") as
// measured on `task`, make run's data, on 2 cores (docs/performance.md).
std::string kernels_line(bool fast, const std::string& ratio, const std::string& task);

class FlagParser {
public:
    FlagParser(std::string program, std::string summary);

    // A text flag; with may_be_empty = false an empty value is refused.
    void add(const std::string& name, std::string* target, const std::string& help, bool may_be_empty = true);
    // A file path: an empty value is refused ("--checkpoint: an empty path":
    // an empty --svg once drew nothing, and an empty --checkpoint quietly
    // became the default). An output path (one the program writes) that
    // names a device, a FIFO, a directory or a symbolic link is refused too,
    // before any work, by the rule of every writer (io/atomic_file.hpp):
    // "--svg /dev/null: is a character device, not a regular file; give a file path".
    // An output folder (--out) that exists must be a folder, or a link to one:
    // "--out /dev/null: is a character device, not a directory; give a folder".
    enum class PathUse { input, output, output_folder };
    void add_path(const std::string& name, std::string* target, const std::string& help, PathUse use);
    // A whole number in [min, max]. Unless declared otherwise, at most a
    // billion either way: a count like --epochs multiplied by the batches of
    // an epoch must not overflow (--epochs 9223372036854775807 once did).
    void add(const std::string& name, int64_t* target, const std::string& help, int64_t min = -kMaxWhole,
             int64_t max = kMaxWhole);
    static constexpr int64_t kMaxWhole = 1'000'000'000;
    // A finite number in [min, max] (nan and inf are always refused).
    void add(const std::string& name, double* target, const std::string& help,
             double min = -std::numeric_limits<double>::max(), double max = std::numeric_limits<double>::max());
    // A finite number in [min, below), the half-open range of a decay or a
    // rate that must stay under 1; `note` says what a value means at the edge
    // ("0 = off") in the refusal: "--ema must be in [0, 1) (0 = off), got 1".
    void add_below(const std::string& name, double* target, const std::string& help, double min, double below,
                   const std::string& note = "");
    // A switch: --NAME sets it, --no-NAME clears it; --NAME=true|false (also
    // yes|no, on|off, 1|0) says which, and any other value is refused.
    void add(const std::string& name, bool* target, const std::string& help);
    // One of `choices`; anything else is refused with the list.
    void add_choice(const std::string& name, std::string* target, const std::vector<std::string>& choices,
                    const std::string& help);
    // --data (help: `data_choices`, e.g. "dates | cmudict | a lexicon file") --epochs --steps
    // --time-budget --patience --schedule --warmup --seed --threads --out --save/--no-save --resume --eval-only
    // --fast
    void add_common(CommonFlags& flags, const std::string& data_choices);
    // --predict (help: `what`, e.g. "classify the arguments (or stdin lines)"),
    // --checkpoint, --svg, --show
    void add_predict(PredictFlags& flags, const std::string& what);

    // Parses argv. Returns false after printing the usage for --help (the
    // caller should exit 0). Arguments that are not flags are kept in
    // positional(). Throws std::invalid_argument on an unknown flag or a bad value.
    bool parse(int argc, const char* const* argv);
    const std::vector<std::string>& positional() const { return positional_; }
    // For a run that reads no inputs from the command line: throws, naming
    // the first argument that is not a flag and `why` ("--epochs 1 5" once
    // trained one epoch and ignored the 5).
    void refuse_positional(const std::string& why) const;
    // What --help prints as a flag's default, where the declared value means
    // something else (--epochs 0: "the task's: 7 dates, 30 G2P").
    void describe_default(const std::string& name, const std::string& text);
    std::string usage() const;
    // "--epochs 12 --seed 1 ...": every flag's current value, for the RESULT line.
    std::vector<std::pair<std::string, std::string>> values() const;

private:
    struct Flag {
        std::string name, help, kind;
        std::function<void(const std::string&)> set;  // parses and stores a value
        std::function<std::string()> get;              // the current value as text
        std::string default_value{};                   // the value when declared, for --help
    };
    const Flag* find(const std::string& name) const;

    std::string program_, summary_;
    std::vector<Flag> flags_;
    std::vector<std::string> positional_;
};

}  // namespace attn
