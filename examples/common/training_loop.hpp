// The training loop the three trainers share: epochs of batches, one
// optimiser step per batch, validation after each epoch, best and last
// checkpoints, early stopping, a time budget, Ctrl-C, metrics and progress.
// A trainer gives what is particular to its task (its batches, its loss, its
// validation); everything below is written once, here:
//
//     TrainerParts parts;
//     parts.begin_epoch = [&](int64_t epoch) { order = shuffled(seed, epoch); return batch_count; };
//     parts.step = [&](int64_t epoch, int64_t batch, int64_t step) {
//         return StepLoss{model.loss(batch_at(order, batch))};    // forward only
//     };
//     parts.validate = [&] { double acc = accuracy(model, valid); return Validation{acc, {{"valid_acc", acc}}}; };
//     const LoopResult r = train_loop(options, model, optimizer, parts);
//
// One step is: zero the gradients, the task's forward (parts.step), backward,
// clip (or only measure) the gradient norm, stop if the loss or the norm is
// not finite (FiniteGuard), the optimiser's update.
//
// Stopping and resuming. Every stop can be resumed to exactly the run that
// never stopped — the same weights, optimiser state, best checkpoint and
// metrics, bit for bit:
//   --steps N          stops after step N; it is a stopping point, not the
//                      run's length (a learning-rate schedule spans the epochs)
//   --time-budget S    stops after the first step that ends S seconds into
//                      this invocation (each --resume gets S seconds more)
//   Ctrl-C (SIGINT) or SIGTERM
//                      finishes the step under way, saves, and the trainer
//                      goes on to its test and report; a second Ctrl-C exits
//                      at once (status 130)
//   kill -9            loses the steps since the last save; --resume repeats
//                      them exactly
// Files in OUT/NAME: best.safetensors and last.safetensors are training
// checkpoints (the model, the optimiser's state, the loop's position: what
// --resume needs), model.safetensors is the model alone — the best weights,
// written with best.safetensors, holding nothing but the model's state_dict
// and what it takes to use it (parts.model_metadata) — the file to share or
// load into PyTorch with load_state_dict(strict=True) (docs/checkpoints.md).
//
// A stop inside an epoch saves last.safetensors with the position in the
// epoch and the running sums of the epoch's loss, and writes no metrics
// record, so a resumed run writes the records the straight run writes. The
// task must make each batch a function of (seed, epoch, batch) and each
// random draw of a step a function of (seed, step): then a resumed run
// continues with the batches and draws the straight run had.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <string>

#include "autograd/variable.hpp"
#include "examples/common/flags.hpp"
#include "examples/common/progress.hpp"
#include "io/checkpoint.hpp"
#include "io/json.hpp"
#include "nn/module.hpp"
#include "nn/optim.hpp"

namespace attn {

struct LoopOptions {
    std::string dir;                 // OUT/NAME: best.safetensors, last.safetensors, model.safetensors, metrics.jsonl
    uint64_t seed = 0;
    int64_t epochs = 1;
    int64_t steps = 0;               // stop after this step (0: no limit)
    int64_t patience = 0;            // stop after this many epochs without a better score (0: never)
    double time_budget = 0;          // seconds of this invocation (0: no limit)
    double clip = 0;                 // gradient-norm clipping (0: only measure the norm)
    bool save = true;                // write best.safetensors, last.safetensors and model.safetensors
    bool resume = false;             // continue from last.safetensors
    bool eval_only = false;          // load best.safetensors, train nothing
    int64_t curve_every = 0;         // every N steps a metrics record {"step", "recent_train_loss"} (0: none)
    std::ostream* log = nullptr;     // progress and messages; nullptr: std::cerr
};

// What one step's forward gives the loop.
struct StepLoss {
    Var loss;                        // the loop calls loss.backward()
    double weight = 1;               // the epoch's mean loss weighs each step by this (e.g. the batch size)
    ProgressFields sums{};           // more per-step numbers averaged over the epoch the same way ("ce", ...)
};

// What validation after an epoch gives the loop.
struct Validation {
    double score = 0;                // higher is better: picks best.safetensors, drives early stopping
    Json record = Json::object();    // fields for the epoch's metrics record ("valid_acc": ...)
    ProgressFields shown{};          // what the epoch's progress line ends with
};

struct TrainerParts {
    // Prepares epoch `epoch` (its order, from the seed and the epoch alone)
    // and returns how many batches it has.
    std::function<int64_t(int64_t epoch)> begin_epoch;
    // The forward of batch `batch` of the epoch; `step` counts the optimiser
    // steps before it (seed dropout and sampling from it).
    std::function<StepLoss(int64_t epoch, int64_t batch, int64_t step)> step;
    // Evaluates the model after an epoch (the loop restores training mode).
    std::function<Validation()> validate;
    // The learning rate of step `step` (unset: the optimiser's own, unchanged).
    std::function<double(int64_t step)> learning_rate{};
    // What it takes to use the model, by key (its configuration, its
    // vocabulary): the metadata of model.safetensors, and of every checkpoint.
    std::function<void(std::map<std::string, std::string>& metadata)> model_metadata{};
    // The task's own training state in checkpoints (e.g. a reward baseline), by
    // key; never in model.safetensors.
    std::function<void(std::map<std::string, std::string>& extra)> save_extra{};
    std::function<void(const TrainingState& state)> load_extra{};
    // What the report's epoch slider shows (e.g. the attention of a few fixed
    // test items, as frames of examples/common/explorer.hpp), taken before
    // training (epoch 0) and after each epoch's validation. Each is one line
    // {"epoch", "step", "snapshot"} of DIR/attention.jsonl, kept consistent on
    // resume as metrics.jsonl is. It must draw no random number (the run
    // would change); the loop restores training mode after it.
    std::function<Json()> snapshot{};
};

// The options the common flags set: OUT/NAME, the seed, --epochs, --steps,
// --time-budget, --patience, --save, --resume, --eval-only.
LoopOptions loop_options(const CommonFlags& flags, const std::string& name);

// --schedule: "constant" (unset: the optimiser keeps --lr), "cosine" (lr
// annealed to 5% of lr over total_steps, the steps of --epochs; with
// warmup_steps W > 0, first a linear warm-up from lr/W to lr over W steps,
// then the cosine over the rest) or "noam" (Vaswani et al. 2017: a linear
// warm-up to lr over W steps, then lr·√(W/s); W = 0: a tenth of total_steps;
// nn/schedule.hpp's InverseSqrtWarmup).
std::function<double(int64_t step)> learning_rate_schedule(const std::string& kind, double lr, int64_t total_steps,
                                                           int64_t warmup_steps = 0);

enum class StopReason { finished, early_stop, steps, time_budget, interrupted, eval_only };
const char* to_string(StopReason reason);

struct LoopResult {
    TrainingState state;             // where training ended (epoch, step, the extra keys saved)
    StopReason reason = StopReason::finished;
    double train_seconds = 0;        // all invocations together, validation included
    double best_score = 0;           // -inf if no epoch was validated
    bool loaded_best = false;        // the model now holds best.safetensors (else the last weights)
};

// Trains (or, with eval_only, only loads best.safetensors), then leaves the
// best weights in the model for the trainer's test when a best checkpoint
// exists. Throws std::runtime_error on a non-finite loss or gradient (the
// checkpoints already written are kept) and on an unreadable checkpoint.
LoopResult train_loop(const LoopOptions& options, Module& model, Optimizer& optimizer, const TrainerParts& parts);

// The last line a trainer prints, the same keys for every trainer:
//   RESULT {"example":"docclass","data":"needle","model":"han","test":{"acc":0.99,...},
//           "train_seconds":12.3,"params":178210,"epochs":4,"steps":252,"stopped":"finished",
//           "settings":{"data":"needle","epochs":"4",...}}
Json result_json(const std::string& example, const std::string& data, const std::string& model, Json test,
                 const LoopResult& trained, int64_t params, const FlagParser& flags);
// Its "settings": every flag's value as given or defaulted, by name.
Json flag_settings(const FlagParser& flags);

}  // namespace attn
