#include "examples/common/training_loop.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>

#include "examples/common/finite_guard.hpp"
#include "examples/common/metrics.hpp"
#include "nn/schedule.hpp"
#include "tensor/profile.hpp"

namespace attn {

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

namespace {

// ---- Ctrl-C ---------------------------------------------------------------------------
// The first SIGINT or SIGTERM only raises a flag that the loop reads after each
// step; the second ends the process at once. A signal handler may only touch a
// volatile sig_atomic_t and call async-signal-safe functions (write, _exit).
volatile std::sig_atomic_t interrupts = 0;

extern "C" void on_interrupt(int) {
    if (interrupts >= 1) _exit(130);
    interrupts = 1;
    const char message[] = "\ninterrupted: finishing this step, then saving (Ctrl-C again to exit at once)\n";
    const ssize_t ignored = write(STDERR_FILENO, message, sizeof message - 1);
    (void)ignored;
}

// Installs the handler for the loop's lifetime and puts back what was there.
// A signal the process was started to ignore (a background job of a script,
// nohup) stays ignored, as every Unix program leaves it.
class InterruptScope {
public:
    InterruptScope() {
        interrupts = 0;
        struct sigaction action {};
        action.sa_handler = on_interrupt;
        sigemptyset(&action.sa_mask);
        for (auto [signal, old] : {std::pair{SIGINT, &old_int_}, std::pair{SIGTERM, &old_term_}}) {
            sigaction(signal, nullptr, old);
            if (old->sa_handler != SIG_IGN) sigaction(signal, &action, nullptr);
        }
    }
    ~InterruptScope() {
        sigaction(SIGINT, &old_int_, nullptr);
        sigaction(SIGTERM, &old_term_, nullptr);
    }
    InterruptScope(const InterruptScope&) = delete;
    InterruptScope& operator=(const InterruptScope&) = delete;
    bool requested() const { return interrupts != 0; }

private:
    struct sigaction old_int_ {}, old_term_ {};
};

// ---- the loop's own state in a checkpoint ------------------------------------------------
// Every number with 17 significant digits: a double read back is the same double.
std::string exact(double x) {
    char text[40];
    std::snprintf(text, sizeof text, "%.17g", x);
    return text;
}

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

}  // namespace

LoopResult train_loop(const LoopOptions& o, Module& model, Optimizer& optimizer, const TrainerParts& parts) {
    std::ostream& log = o.log ? *o.log : std::cerr;
    std::filesystem::create_directories(o.dir);
    const std::string best_path = o.dir + "/best.safetensors", last_path = o.dir + "/last.safetensors";
    const std::string model_path = o.dir + "/model.safetensors";

    LoopResult r;
    r.state.seed = o.seed;
    r.best_score = -std::numeric_limits<double>::infinity();
    if (o.eval_only) {
        r.state = load_checkpoint(best_path, model, optimizer);
        r.reason = StopReason::eval_only;
        r.loaded_best = true;
        log << "evaluating " << best_path << " (epoch " << r.state.epoch << ", step " << r.state.step << ")\n";
        return r;
    }

    // ---- where to start ----
    TrainingState& state = r.state;
    int64_t position = 0, bad_epochs = 0;  // batches done in epoch state.epoch; epochs without a better score
    EpochSums sums;
    double seconds_before = 0;  // training time of earlier invocations
    if (o.resume) {
        state = load_checkpoint(last_path, model, optimizer);
        position = static_cast<int64_t>(state.number("loop.batch"));
        bad_epochs = static_cast<int64_t>(state.number("loop.bad_epochs"));
        seconds_before = state.number("loop.train_seconds");
        if (state.extra.count("loop.best_score")) r.best_score = state.number("loop.best_score");
        sums.loss = state.number("loop.loss_sum");
        sums.weight = state.number("loop.weight_sum");
        sums.curve = state.number("loop.curve_sum");
        sums.curve_steps = static_cast<int64_t>(state.number("loop.curve_steps"));
        for (const auto& [key, value] : state.extra)
            if (key.rfind(sum_prefix, 0) == 0) sums.named.push_back({key.substr(sum_prefix.size()), state.number(key)});
        // back in first-seen order (the metadata map is sorted by name), so a
        // resumed run's records and progress lines list the terms as the straight run's
        if (state.extra.count("loop.sum_order")) {
            const std::string& order = state.extra.at("loop.sum_order");
            auto rank = [&](const std::string& name) { return order.find("," + name + ","); };
            std::stable_sort(sums.named.begin(), sums.named.end(),
                             [&](const auto& a, const auto& b) { return rank(a.first) < rank(b.first); });
        }
        if (parts.load_extra) parts.load_extra(state);
        log << "resumed from " << last_path << " at epoch " << state.epoch + 1 << ", batch " << position << ", step "
            << state.step << "\n";
    }
    // A resumed run continues the history from its checkpoint's step (and drops
    // what a killed run wrote after it); a new run starts a new history.
    MetricsLog metrics(o.dir + "/metrics.jsonl", o.resume ? MetricsLog::Mode::append : MetricsLog::Mode::truncate,
                       state.step);
    // The attention history likewise (only for a trainer that keeps one); a
    // new run starts it with the untrained model, epoch 0.
    std::optional<MetricsLog> snapshots;
    auto take_snapshot = [&](int64_t epoch) {
        snapshots->write({{"epoch", epoch}, {"step", state.step}, {"snapshot", parts.snapshot()}});
        model.train();
    };
    if (parts.snapshot) {
        snapshots.emplace(o.dir + "/attention.jsonl", o.resume ? MetricsLog::Mode::append : MetricsLog::Mode::truncate,
                          state.step);
        if (!o.resume) take_snapshot(0);
    } else if (!o.resume) {
        std::error_code no_file;  // an earlier run's history would not be this run's
        std::filesystem::remove(o.dir + "/attention.jsonl", no_file);
    }

    const auto start = std::chrono::steady_clock::now();
    auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    auto save = [&](const std::string& path) {
        state.extra["loop.batch"] = exact(static_cast<double>(position));
        state.extra["loop.bad_epochs"] = exact(static_cast<double>(bad_epochs));
        state.extra["loop.train_seconds"] = exact(seconds_before + seconds());
        if (std::isfinite(r.best_score)) state.extra["loop.best_score"] = exact(r.best_score);
        state.extra["loop.loss_sum"] = exact(sums.loss);
        state.extra["loop.weight_sum"] = exact(sums.weight);
        state.extra["loop.curve_sum"] = exact(sums.curve);
        state.extra["loop.curve_steps"] = exact(static_cast<double>(sums.curve_steps));
        std::string order = ",";
        for (const auto& [name, sum] : sums.named) {
            state.extra[sum_prefix + name] = exact(sum);
            order += name + ",";
        }
        state.extra["loop.sum_order"] = order;
        if (parts.model_metadata) parts.model_metadata(state.extra);
        if (parts.save_extra) parts.save_extra(state.extra);
        if (o.save) save_checkpoint(path, model, optimizer, state);
    };
    // model.safetensors: the weights of best.safetensors alone (its state_dict,
    // no optimizer.* tensors, no loop.* metadata), what a user loads into
    // PyTorch with strict=True or shares; written atomically as the checkpoints.
    auto save_model_file = [&] {
        if (!o.save) return;
        std::map<std::string, std::string> metadata;
        if (parts.model_metadata) parts.model_metadata(metadata);
        save_model(model_path, model, metadata);
    };

    // ---- the loop ----
    InterruptScope interrupt;
    FiniteGuard guard;  // a non-finite loss or gradient stops the run before the update
    StopReason reason = StopReason::finished;
    if (o.steps > 0 && state.step >= o.steps) reason = StopReason::steps;
    if (o.patience > 0 && bad_epochs >= o.patience) reason = StopReason::early_stop;
    model.train();
    for (; reason == StopReason::finished && state.epoch < o.epochs;) {
        const int64_t epoch = state.epoch;
        const int64_t batches = parts.begin_epoch(epoch);
        std::string label = "epoch " + std::to_string(epoch + 1) + "/" + std::to_string(o.epochs);
        if (position > 0) label += " from batch " + std::to_string(position + 1);
        ProgressBar bar(label, batches - position, {.out = &log});
        for (int64_t first = position; position < batches;) {
            const ProfileScope profile_step("step");  // ATTN_PROFILE=1: the steps' time and parts
            if (parts.learning_rate) optimizer.set_lr(parts.learning_rate(state.step));
            optimizer.zero_grad();
            StepLoss step = parts.step(epoch, position, state.step);  // the task's forward
            step.loss.backward();
            const double norm = clip_grad_norm_(model.parameters(), o.clip > 0 ? o.clip : HUGE_VAL);
            const double loss = step.loss.item();
            guard.check(state.step, loss, norm);
            optimizer.step();
            ++state.step;
            ++position;

            sums.add(step, loss);
            if (o.curve_every > 0 && sums.curve_steps == o.curve_every) {  // a point of the training curve
                metrics.write({{"step", state.step}, {"recent_train_loss", sums.curve / static_cast<double>(o.curve_every)}});
                sums.curve = 0;
                sums.curve_steps = 0;
            }
            bar.update(position - first, sums.means());

            if (o.steps > 0 && state.step >= o.steps) reason = StopReason::steps;
            else if (o.time_budget > 0 && seconds() >= o.time_budget) reason = StopReason::time_budget;
            else if (interrupt.requested()) reason = StopReason::interrupted;
            if (reason != StopReason::finished) break;
        }
        if (position < batches) {  // stopped inside the epoch: save where, validate nothing
            bar.finish(sums.means());
            save(last_path);
            break;
        }

        // ---- the epoch is complete: validate, keep the best, maybe stop early ----
        const Validation v = parts.validate();
        model.train();
        ProgressFields shown = sums.means();
        shown.insert(shown.end(), v.shown.begin(), v.shown.end());
        bar.finish(shown);
        const bool better = v.score > r.best_score;
        if (better) r.best_score = v.score;
        bad_epochs = better ? 0 : bad_epochs + 1;

        Json record = Json::object({{"epoch", epoch + 1}, {"step", state.step}, {"train_loss", sums.mean_loss()}});
        for (const auto& [name, mean] : sums.means())
            if (name != "loss") record.set("train_" + name, mean);
        for (const auto& [key, value] : v.record.as_object()) record.set(key, value);
        record.set("seconds", seconds_before + seconds());
        metrics.write(record);
        if (parts.snapshot) take_snapshot(epoch + 1);

        state.epoch = epoch + 1;
        position = 0;
        sums.loss = sums.weight = 0;
        for (auto& named : sums.named) named.second = 0;
        if (better) {
            save(best_path);
            save_model_file();
        }
        save(last_path);
        if (o.patience > 0 && bad_epochs >= o.patience) {
            log << "early stop: no better validation score for " << o.patience << " epochs\n";
            reason = StopReason::early_stop;
        }
        if (interrupt.requested() && reason == StopReason::finished) reason = StopReason::interrupted;
    }
    // A stop that came with the last step of the last epoch stopped nothing.
    if (state.epoch >= o.epochs && reason != StopReason::early_stop) reason = StopReason::finished;
    r.reason = reason;
    r.train_seconds = seconds_before + seconds();
    if (reason == StopReason::steps || reason == StopReason::time_budget || reason == StopReason::interrupted)
        log << "stopped (" << to_string(reason) << ") at epoch " << state.epoch + 1 << ", batch " << position
            << ", step " << state.step << (o.save ? "; --resume continues from " + last_path : std::string()) << "\n";

    // The test uses the best weights of this run's history, if it has one.
    if (o.save && std::isfinite(r.best_score)) {
        load_model(best_path, model);
        r.loaded_best = true;
        // A run resumed from checkpoints written before model.safetensors
        // existed gets one now, from the best weights it just loaded.
        if (!std::filesystem::exists(model_path)) save_model_file();
    }
    return r;
}

}  // namespace attn
