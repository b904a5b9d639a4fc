// The training loop the trainers share (the header says what it promises).
// It reads top to bottom: one training step, which is all of the learning;
// the loop, which calls it batch after batch and epoch after epoch; then the
// run's bookkeeping, each a named step the loop calls: where to start
// (resume), the histories (metrics, snapshots), what to save and when to stop.
#include "examples/common/training_loop.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>

#include "examples/common/finite_guard.hpp"
#include "examples/common/interrupt.hpp"
#include "examples/common/metrics.hpp"
#include "io/safetensors.hpp"
#include "nn/schedule.hpp"
#include "tensor/profile.hpp"

namespace attn {

namespace {

// ---- one training step ---------------------------------------------------------------
// Step `step` (counting from 0), batch `batch` of epoch `epoch`: the task's
// forward gives the loss, backward its gradient with respect to every
// parameter, and the optimiser moves the parameters against it.
StepLoss train_step(Module& model, Optimizer& optimizer, const TrainerParts& parts, const LoopOptions& o,
                    int64_t epoch, int64_t batch, int64_t step, FiniteGuard& guard) {
    const ProfileScope profile_step("step");  // ATTN_PROFILE=1: the steps' time and parts
    if (parts.learning_rate) optimizer.set_lr(parts.learning_rate(step));  // the schedule's rate
    optimizer.zero_grad();
    StepLoss out = parts.step(epoch, batch, step);  // the task's forward: out.loss
    out.loss.backward();                            // ∂loss/∂θ into every parameter's grad
    // --clip: rescale the gradients to a norm of at most o.clip (else only measure it)
    const double norm = clip_grad_norm_(model.parameters(), o.clip > 0 ? o.clip : HUGE_VAL);
    guard.check(step, out.loss.item(), norm);  // a NaN or inf stops the run before the update
    optimizer.step();                          // θ ← θ − the optimiser's update
    return out;
}

// Every number with 17 significant digits: a double read back is the same double.
std::string exact(double x) {
    char text[40];
    std::snprintf(text, sizeof text, "%.17g", x);
    return text;
}

// A number as short as it can be written and read back the same: what a
// user typed (0.99, not 0.98999999999999999).
std::string shortest(double x) {
    char text[40];
    const auto [end, ec] = std::to_chars(text, text + sizeof text, x);
    return ec == std::errc() ? std::string(text, end) : exact(x);
}

// The checkpoint's record of the run's --ema (0: off).
const std::string kAverageKey = "loop.ema";

// Running sums over the steps of the epoch so far (and of the loss curve's window).
struct EpochSums {
    double loss = 0, weight = 0;
    ProgressFields named;  // Σ weight·value per name, in first-seen order
    double curve = 0;
    int64_t curve_steps = 0;

    void add(const StepLoss& s, double loss_value) {
        loss += s.weight * loss_value;
        weight += s.weight;
        for (const auto& [name, value] : s.sums) {
            auto it = named.begin();
            while (it != named.end() && it->first != name) ++it;
            if (it == named.end()) it = named.insert(named.end(), {name, 0.0});
            it->second += s.weight * value;
        }
        curve += loss_value;
        ++curve_steps;
    }
    double mean_loss() const { return weight > 0 ? loss / weight : 0.0; }
    ProgressFields means() const {
        ProgressFields out{{"loss", mean_loss()}};
        for (const auto& [name, sum] : named) out.push_back({name, weight > 0 ? sum / weight : 0.0});
        return out;
    }
};

const std::string sum_prefix = "loop.sum.";

// ---- the run around the steps --------------------------------------------------------
// What the loop keeps between steps and epochs, and the named steps it calls;
// defined after train_loop, in the order it calls them.
class TrainingRun {
public:
    TrainingRun(const LoopOptions& o, Module& model, Optimizer& optimizer, const TrainerParts& parts);

    // --eval-only: best.safetensors into the model, nothing trained.
    LoopResult load_best_for_evaluation();
    // --resume: the model, the optimiser and the loop's position from last.safetensors.
    void resume();
    // metrics.jsonl and attention.jsonl, continued from the checkpoint or started afresh.
    void open_histories();
    // Why the run would stop before its first step (a resumed run already at --steps
    // or out of patience), or StopReason::finished.
    StopReason stop_before_start() const;
    std::string epoch_label() const;  // "epoch 2/4 from batch 31"
    // An epoch of `batches` begins. A run resumed inside an epoch must cut it
    // into the batches the checkpoint's run did: else batch 31 is another
    // batch, or none (--batch changed since), and the run stops, saying so.
    void begin_epoch(int64_t batches);
    // After a step: the counts, the epoch's sums, the curve's record, the bar.
    void count_step(const StepLoss& step, ProgressBar& bar, int64_t first);
    // Why the run stops after this step (--steps, --time-budget, Ctrl-C), or finished.
    StopReason stop_after_step(const InterruptScope& interrupt) const;
    // A stop inside the epoch: save where it stopped, validate nothing.
    void stop_inside_epoch(ProgressBar& bar);
    // The epoch is complete: validate, record, keep the best. Returns why the
    // run stops: early stopping, else `reason` (the last step's), else a
    // Ctrl-C during validation.
    StopReason end_epoch(ProgressBar& bar, StopReason reason, const InterruptScope& interrupt);
    // The stop reported, and the best weights loaded for the trainer's test.
    LoopResult finish(StopReason reason);

    TrainingState& state() { return r_.state; }
    int64_t position() const { return position_; }
    std::ostream& log() { return log_; }

private:
    double seconds() const;  // of this invocation
    void save(const std::string& path);
    void save_model_file();
    void take_snapshot(int64_t epoch);
    void check_same_average() const;  // --resume with the checkpoint's --ema

    const LoopOptions& o_;
    Module& model_;
    Optimizer& optimizer_;
    const TrainerParts& parts_;
    std::ostream& log_;
    const std::string best_path_, last_path_, model_path_;
    LoopResult r_;
    int64_t position_ = 0;    // batches done in epoch state.epoch
    int64_t epoch_batches_ = 0;         // the batches of epoch state.epoch
    int64_t saved_epoch_batches_ = -1;  // a resumed checkpoint's epoch_batches_ (-1: none to check)
    int64_t bad_epochs_ = 0;  // epochs without a better validation score
    EpochSums sums_;
    double seconds_before_ = 0;  // training time of earlier invocations
    std::chrono::steady_clock::time_point start_;  // set when the histories are open
    std::optional<MetricsLog> metrics_, snapshots_;
};

}  // namespace

// ---- one run at a time in a folder ---------------------------------------------------
namespace {

// DIR/run.lock while a run trains into DIR, holding its process id: a second
// run into the same folder once interleaved metrics.jsonl ("}{{") and left
// whichever checkpoints saved last. A lock whose process is gone (a run
// killed with SIGKILL) is stale, and taken over.
class RunLock {
public:
    explicit RunLock(const std::string& dir) : path_(dir + "/run.lock") {
        for (int attempt = 0; attempt < 2; ++attempt) {
            const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
            if (fd >= 0) {
                const std::string pid = std::to_string(::getpid()) + "\n";
                const bool written = ::write(fd, pid.data(), pid.size()) == static_cast<ssize_t>(pid.size());
                ::close(fd);
                if (!written) throw std::runtime_error(path_ + ": cannot write the run's lock file");
                return;
            }
            if (errno != EEXIST) throw std::runtime_error(path_ + ": cannot create the run's lock file: " + std::strerror(errno));
            const long owner = owner_of(path_);
            if (owner > 0 && (::kill(static_cast<pid_t>(owner), 0) == 0 || errno == EPERM))
                throw std::runtime_error("another run (process " + std::to_string(owner) + ") is training into " + dir +
                                         ": wait for it to finish, or give this one another --out (if no such run "
                                         "exists, delete " + path_ + ")");
            ::unlink(path_.c_str());  // stale: its process is gone
        }
        throw std::runtime_error(path_ + ": another run took the lock file at the same moment");
    }
    ~RunLock() {
        if (owner_of(path_) == ::getpid()) ::unlink(path_.c_str());
    }
    RunLock(const RunLock&) = delete;
    RunLock& operator=(const RunLock&) = delete;

private:
    static long owner_of(const std::string& path) {
        std::ifstream in(path);
        long pid = 0;
        return in >> pid ? pid : 0;
    }
    std::string path_;
};

}  // namespace

// ---- the loop ------------------------------------------------------------------------
LoopResult train_loop(const LoopOptions& o, Module& model, Optimizer& optimizer, const TrainerParts& parts) {
    TrainingRun run(o, model, optimizer, parts);
    if (o.eval_only) return run.load_best_for_evaluation();
    const RunLock lock(o.dir);
    if (o.resume) run.resume();
    run.open_histories();

    InterruptScope interrupt;  // Ctrl-C: finish the step under way, save, stop
    FiniteGuard guard;         // a non-finite loss or gradient stops the run before the update
    TrainingState& state = run.state();
    StopReason reason = run.stop_before_start();
    model.train();
    while (reason == StopReason::finished && state.epoch < o.epochs) {
        const int64_t epoch = state.epoch;
        const int64_t batches = parts.begin_epoch(epoch);  // this epoch's order, from the seed and the epoch
        run.begin_epoch(batches);
        ProgressBar bar(run.epoch_label(), batches - run.position(), {.out = &run.log()});
        for (const int64_t first = run.position(); run.position() < batches;) {
            const StepLoss step = train_step(model, optimizer, parts, o, epoch, run.position(), state.step, guard);
            run.count_step(step, bar, first);
            reason = run.stop_after_step(interrupt);
            if (reason != StopReason::finished) break;
        }
        if (run.position() < batches) {
            run.stop_inside_epoch(bar);
            break;
        }
        reason = run.end_epoch(bar, reason, interrupt);
    }
    return run.finish(reason);
}

// ---- the run's steps, in the order the loop calls them ------------------------------

namespace {

TrainingRun::TrainingRun(const LoopOptions& o, Module& model, Optimizer& optimizer, const TrainerParts& parts)
    : o_(o),
      model_(model),
      optimizer_(optimizer),
      parts_(parts),
      log_(o.log ? *o.log : std::cerr),
      best_path_(o.dir + "/best.safetensors"),
      last_path_(o.dir + "/last.safetensors"),
      model_path_(o.dir + "/model.safetensors") {
    std::filesystem::create_directories(o.dir);
    r_.state.seed = o.seed;
    r_.best_score = -std::numeric_limits<double>::infinity();
}

LoopResult TrainingRun::load_best_for_evaluation() {
    r_.state = load_checkpoint(best_path_, model_, optimizer_);
    r_.reason = StopReason::eval_only;
    r_.loaded_best = true;
    log_ << "evaluating " << best_path_ << " (epoch " << r_.state.epoch << ", step " << r_.state.step << ")\n";
    return r_;
}

void TrainingRun::resume() {
    check_same_average();
    TrainingState& state = r_.state;
    state = load_checkpoint(last_path_, model_, optimizer_);
    // Counts read back from a file are checked before they index anything;
    // the batch position against the epoch's batches in begin_epoch().
    constexpr int64_t kMostBatches = int64_t{1} << 40;
    position_ = state.count("loop.batch", kMostBatches);
    if (state.extra.count("loop.epoch_batches")) saved_epoch_batches_ = state.count("loop.epoch_batches", kMostBatches);
    bad_epochs_ = state.count("loop.bad_epochs", kMostBatches);
    seconds_before_ = state.number("loop.train_seconds");
    if (state.extra.count("loop.best_score")) r_.best_score = state.number("loop.best_score");
    sums_.loss = state.number("loop.loss_sum");
    sums_.weight = state.number("loop.weight_sum");
    sums_.curve = state.number("loop.curve_sum");
    sums_.curve_steps = state.count("loop.curve_steps", kMostBatches);
    for (const auto& [key, value] : state.extra)
        if (key.rfind(sum_prefix, 0) == 0) sums_.named.push_back({key.substr(sum_prefix.size()), state.number(key)});
    // back in first-seen order (the metadata map is sorted by name), so a
    // resumed run's records and progress lines list the terms as the straight run's
    if (state.extra.count("loop.sum_order")) {
        const std::string& order = state.extra.at("loop.sum_order");
        auto rank = [&](const std::string& name) { return order.find("," + name + ","); };
        std::stable_sort(sums_.named.begin(), sums_.named.end(),
                         [&](const auto& a, const auto& b) { return rank(a.first) < rank(b.first); });
    }
    if (parts_.load_extra) parts_.load_extra(state);
    log_ << "resumed from " << last_path_ << " at epoch " << state.epoch + 1 << ", batch " << position_ << ", step "
         << state.step << "\n";
}

// The average's decay (--ema) is part of the run: resumed with another, the
// average would change its half-life midway and be neither run's. It is
// compared before anything loads, both values named. A checkpoint of a
// version that did not record it is compared by the optimiser alone, which
// refuses averaging turned on or off but cannot see another decay.
void TrainingRun::check_same_average() const {
    std::error_code ec;
    if (!std::filesystem::exists(last_path_, ec)) return;  // load_checkpoint says what is missing
    const std::map<std::string, std::string> metadata = load_safetensors(last_path_).metadata;
    const auto saved = metadata.find(kAverageKey);
    if (saved == metadata.end()) return;
    char* end = nullptr;
    const double decay = std::strtod(saved->second.c_str(), &end);
    if (saved->second.empty() || *end != '\0' || !(decay >= 0 && decay < 1))
        throw std::runtime_error("cannot resume " + last_path_ + ": metadata \"" + kAverageKey + "\" = \"" +
                                 saved->second + "\" is not a decay in [0, 1)");
    const double mine = optimizer_.average_decay();
    if (decay != mine)
        throw std::runtime_error("cannot resume " + last_path_ + ": its run used --ema " + shortest(decay) +
                                 ", this one --ema " + shortest(mine) +
                                 " (0 = off); resume with --ema " + shortest(decay));
}

void TrainingRun::open_histories() {
    // A resumed run continues the history from its checkpoint's step (and drops
    // what a killed run wrote after it); a new run starts a new history.
    const auto mode = o_.resume ? MetricsLog::Mode::append : MetricsLog::Mode::truncate;
    metrics_.emplace(o_.dir + "/metrics.jsonl", mode, r_.state.step);
    // The attention history likewise (only for a trainer that keeps one); a
    // new run starts it with the untrained model, epoch 0.
    if (parts_.snapshot) {
        snapshots_.emplace(o_.dir + "/attention.jsonl", mode, r_.state.step);
        if (!o_.resume) take_snapshot(0);
    } else if (!o_.resume) {
        std::error_code no_file;  // an earlier run's history would not be this run's
        std::filesystem::remove(o_.dir + "/attention.jsonl", no_file);
    }
    start_ = std::chrono::steady_clock::now();  // this invocation's training time starts here
}

StopReason TrainingRun::stop_before_start() const {
    if (o_.steps > 0 && r_.state.step >= o_.steps) return StopReason::steps;
    if (o_.patience > 0 && bad_epochs_ >= o_.patience) return StopReason::early_stop;
    return StopReason::finished;
}

void TrainingRun::begin_epoch(int64_t batches) {
    if (position_ > 0) {  // resumed inside this epoch
        const std::string at = "cannot resume " + last_path_ + " at batch " + std::to_string(position_ + 1) +
                               " of epoch " + std::to_string(r_.state.epoch + 1) + ": ";
        const std::string fix = " (--batch or the data changed); resume with the flags and data the run started with";
        if (saved_epoch_batches_ >= 0 && saved_epoch_batches_ != batches)
            throw std::runtime_error(at + "its run cut the epoch into " + std::to_string(saved_epoch_batches_) +
                                     " batches, this one into " + std::to_string(batches) + fix);
        if (position_ >= batches)
            throw std::runtime_error(at + "this run cuts the epoch into " + std::to_string(batches) + " batches" + fix);
    }
    saved_epoch_batches_ = -1;
    epoch_batches_ = batches;
}

std::string TrainingRun::epoch_label() const {
    std::string label = "epoch " + std::to_string(r_.state.epoch + 1) + "/" + std::to_string(o_.epochs);
    if (position_ > 0) label += " from batch " + std::to_string(position_ + 1);
    return label;
}

void TrainingRun::count_step(const StepLoss& step, ProgressBar& bar, int64_t first) {
    ++r_.state.step;
    ++position_;
    sums_.add(step, step.loss.item());
    if (o_.curve_every > 0 && sums_.curve_steps == o_.curve_every) {  // a point of the training curve
        metrics_->write({{"step", r_.state.step},
                         {"recent_train_loss", sums_.curve / static_cast<double>(o_.curve_every)}});
        sums_.curve = 0;
        sums_.curve_steps = 0;
    }
    bar.update(position_ - first, sums_.means());
}

StopReason TrainingRun::stop_after_step(const InterruptScope& interrupt) const {
    if (o_.steps > 0 && r_.state.step >= o_.steps) return StopReason::steps;
    if (o_.time_budget > 0 && seconds() >= o_.time_budget) return StopReason::time_budget;
    if (interrupt.requested()) return StopReason::interrupted;
    return StopReason::finished;
}

void TrainingRun::stop_inside_epoch(ProgressBar& bar) {
    bar.finish(sums_.means());
    save(last_path_);
}

StopReason TrainingRun::end_epoch(ProgressBar& bar, StopReason reason, const InterruptScope& interrupt) {
    TrainingState& state = r_.state;
    // With --ema the averaged weights are what is validated, drawn in the
    // report and kept as the best; training goes on with its own weights,
    // swapped back before last.safetensors is written.
    optimizer_.swap_average();
    const Validation v = parts_.validate();
    model_.train();
    ProgressFields shown = sums_.means();
    shown.insert(shown.end(), v.shown.begin(), v.shown.end());
    bar.finish(shown);
    const bool better = v.score > r_.best_score;
    if (better) r_.best_score = v.score;
    bad_epochs_ = better ? 0 : bad_epochs_ + 1;

    Json record = Json::object({{"epoch", state.epoch + 1}, {"step", state.step}, {"train_loss", sums_.mean_loss()}});
    for (const auto& [name, mean] : sums_.means())
        if (name != "loss") record.set("train_" + name, mean);
    for (const auto& [key, value] : v.record.as_object()) record.set(key, value);
    record.set("seconds", seconds_before_ + seconds());
    metrics_->write(record);
    if (parts_.snapshot) take_snapshot(state.epoch + 1);

    state.epoch += 1;
    position_ = 0;
    sums_.loss = sums_.weight = 0;
    for (auto& named : sums_.named) named.second = 0;
    if (better) {
        save(best_path_);
        save_model_file();
    }
    optimizer_.swap_average();
    save(last_path_);
    if (o_.patience > 0 && bad_epochs_ >= o_.patience) {
        log_ << "early stop: no better validation score for " << o_.patience << " epochs\n";
        return StopReason::early_stop;
    }
    if (reason == StopReason::finished && interrupt.requested()) return StopReason::interrupted;
    return reason;
}

LoopResult TrainingRun::finish(StopReason reason) {
    TrainingState& state = r_.state;
    // A stop that came with the last step of the last epoch stopped nothing.
    if (state.epoch >= o_.epochs && reason != StopReason::early_stop) reason = StopReason::finished;
    r_.reason = reason;
    r_.train_seconds = seconds_before_ + seconds();
    if (reason == StopReason::steps || reason == StopReason::time_budget || reason == StopReason::interrupted)
        log_ << "stopped (" << to_string(reason) << ") at epoch " << state.epoch + 1 << ", batch " << position_
             << ", step " << state.step << (o_.save ? "; --resume continues from " + last_path_ : std::string())
             << "\n";

    // The test uses the best weights of this run's history, if it has one.
    if (o_.save && std::isfinite(r_.best_score)) {
        load_model(best_path_, model_);
        r_.loaded_best = true;
        // A run resumed from checkpoints written before model.safetensors
        // existed gets one now, from the best weights it just loaded.
        if (!std::filesystem::exists(model_path_)) save_model_file();
    }
    return r_;
}

double TrainingRun::seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

// A checkpoint: the model, the optimiser, and the loop's own state (the
// position in the epoch, the running sums, the best score), so that a resumed
// run continues exactly.
void TrainingRun::save(const std::string& path) {
    TrainingState& state = r_.state;
    state.extra["loop.batch"] = exact(static_cast<double>(position_));
    state.extra["loop.epoch_batches"] = exact(static_cast<double>(epoch_batches_));
    state.extra["loop.bad_epochs"] = exact(static_cast<double>(bad_epochs_));
    state.extra["loop.train_seconds"] = exact(seconds_before_ + seconds());
    if (std::isfinite(r_.best_score)) state.extra["loop.best_score"] = exact(r_.best_score);
    state.extra["loop.loss_sum"] = exact(sums_.loss);
    state.extra["loop.weight_sum"] = exact(sums_.weight);
    state.extra["loop.curve_sum"] = exact(sums_.curve);
    state.extra["loop.curve_steps"] = exact(static_cast<double>(sums_.curve_steps));
    std::string order = ",";
    for (const auto& [name, sum] : sums_.named) {
        state.extra[sum_prefix + name] = exact(sum);
        order += name + ",";
    }
    state.extra["loop.sum_order"] = order;
    state.extra[kAverageKey] = exact(optimizer_.average_decay());  // --ema, compared by a resumed run
    if (parts_.model_metadata) parts_.model_metadata(state.extra);
    if (parts_.save_extra) parts_.save_extra(state.extra);
    if (o_.save) save_checkpoint(path, model_, optimizer_, state);
}

// model.safetensors: the weights of best.safetensors alone (its state_dict,
// no optimizer.* tensors, no loop.* metadata), what a user loads into
// PyTorch with strict=True or shares; written atomically as the checkpoints.
void TrainingRun::save_model_file() {
    if (!o_.save) return;
    std::map<std::string, std::string> metadata;
    if (parts_.model_metadata) parts_.model_metadata(metadata);
    save_model(model_path_, model_, metadata);
}

void TrainingRun::take_snapshot(int64_t epoch) {
    snapshots_->write({{"epoch", epoch}, {"step", r_.state.step}, {"snapshot", parts_.snapshot()}});
    model_.train();
}

}  // namespace

// ---- the options, the schedule and the RESULT line ----------------------------------

const char* to_string(StopReason reason) {
    switch (reason) {
        case StopReason::finished: return "finished";
        case StopReason::early_stop: return "early stop";
        case StopReason::steps: return "--steps";
        case StopReason::time_budget: return "--time-budget";
        case StopReason::interrupted: return "interrupted";
        case StopReason::eval_only: return "--eval-only";
    }
    return "?";
}

LoopOptions loop_options(const CommonFlags& f, const std::string& name) {
    return LoopOptions{.dir = f.out + "/" + name, .seed = static_cast<uint64_t>(f.seed), .epochs = f.epochs,
                       .steps = f.steps, .patience = f.patience, .time_budget = f.time_budget, .save = f.save,
                       .resume = f.resume, .eval_only = f.eval_only};
}

std::function<double(int64_t)> learning_rate_schedule(const std::string& kind, double lr, int64_t total_steps,
                                                      int64_t warmup_steps) {
    if (warmup_steps < 0) throw std::invalid_argument("--warmup must be >= 0, got " + std::to_string(warmup_steps));
    if (kind == "constant") return {};
    if (kind == "noam") {
        const InverseSqrtWarmup noam(lr, warmup_steps > 0 ? warmup_steps : std::max<int64_t>(1, total_steps / 10));
        return [noam](int64_t step) { return noam.lr(step); };
    }
    if (kind != "cosine")
        throw std::invalid_argument("--schedule expects constant, cosine or noam, got '" + kind + "'");
    // with a warm-up: linear from lr/W to lr over W steps, then the cosine over the rest
    const auto cosine =
        std::make_shared<CosineAnnealing>(lr, std::max<int64_t>(1, total_steps - warmup_steps), lr * 0.05);
    const LinearWarmup warm(warmup_steps, warmup_steps > 0 ? 1.0 / static_cast<double>(warmup_steps) : 1.0, cosine);
    return [warm](int64_t step) { return warm.lr(step); };
}

Json flag_settings(const FlagParser& flags) {
    Json settings = Json::object();
    for (const auto& [name, value] : flags.values()) settings.set(name, value);
    return settings;
}

Json result_json(const std::string& example, const std::string& data, const std::string& model, Json test,
                 const LoopResult& trained, int64_t params, const FlagParser& flags) {
    return Json::object({{"example", example}, {"data", data}, {"model", model}, {"test", std::move(test)},
                         {"train_seconds", trained.train_seconds}, {"params", params},
                         {"epochs", trained.state.epoch}, {"steps", trained.state.step},
                         {"stopped", to_string(trained.reason)}, {"settings", flag_settings(flags)}});
}

}  // namespace attn
