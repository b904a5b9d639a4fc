// examples/common/training_loop: every kind of stop (--steps inside an epoch
// and at its end, --time-budget, Ctrl-C) resumed in a fresh model and
// optimiser ends exactly where the run that never stopped ends: the same
// weights, optimiser state, best checkpoint and metrics records, bit for bit.
// And: a second Ctrl-C exits at once, a non-finite loss keeps the last good
// checkpoint, early stopping survives a resume, a stale best is not used.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/ops.hpp"
#include "examples/common/metrics.hpp"
#include "examples/common/training_loop.hpp"
#include "nn/dropout.hpp"
#include "nn/linear.hpp"
#include "nn/loss.hpp"
#include "io/safetensors.hpp"
#include "nn/schedule.hpp"
#include "nn/sequential.hpp"
#include "tensor/ops.hpp"
#include "tests/helpers.hpp"

using namespace attn;
using namespace attn::testing;

namespace {

constexpr uint64_t seed = 11;
constexpr int64_t n_train = 36, batch = 8;  // 5 batches an epoch, the last one of 4
constexpr int64_t batches = (n_train + batch - 1) / batch;
// The batch size the trainer below uses: another one cuts an epoch differently.
int64_t run_batch = batch;

// A regression 4 → 1 with dropout, so that a step also draws random numbers.
struct Regressor : Sequential {
    Generator dropout;
    explicit Regressor(Generator& init) : dropout(0) {
        emplace<Linear>(4, 6, init);
        emplace<Dropout>(0.25f, dropout);
        emplace<Linear>(6, 1, init);
    }
};

struct Data {
    Tensor x, y;
};
Data make_data(int64_t n, uint64_t data_seed) {
    Generator g(data_seed);
    Data d{Tensor::normal({n, 4}, 0, 1, g), Tensor::empty({n, 1})};
    for (int64_t i = 0; i < n; ++i) d.y.at({i, 0}) = d.x.at({i, 0}) - 2 * d.x.at({i, 2}) + static_cast<real>(0.1 * g.normal());
    return d;
}

// Early-stopping test: every epoch's validation scores the same.
bool constant_validation = false;
// Ctrl-C test: a SIGINT arrives while the first epoch is being validated.
bool interrupt_in_validation = false;
// --ema test: the optimiser averages the weights with this decay.
double ema_decay = 0;

// What a run leaves behind, with everything that may differ between a
// straight run and a resumed one (wall-clock seconds) taken out.
struct Outcome {
    std::map<std::string, Tensor> last, best;
    std::map<std::string, std::string> last_extra;
    std::vector<std::string> records;
    std::vector<std::string> snapshots;  // attention.jsonl
    LoopResult result;
};

std::map<std::string, Tensor> tensors(const std::string& path) {
    std::map<std::string, Tensor> out;
    if (!std::filesystem::exists(path)) return out;
    for (auto& [name, t] : load_safetensors(path).tensors) out.emplace(name, t);
    return out;
}

// One invocation of a trainer: a fresh model and optimiser (as a new process
// would have), the loop with `options`; `on_step` may interfere with step k.
LoopResult invoke(LoopOptions options, const std::function<void(int64_t step, Var& loss)>& on_step = {}) {
    Generator init(seed);
    Regressor model(init);
    Adam optimizer(model.named_parameters(), AdamOptions{.lr = 0.05});
    optimizer.set_average(ema_decay);
    const Data train = make_data(n_train, 1), valid = make_data(16, 2);
    const CosineAnnealing schedule(0.05, options.epochs * batches, 0.005);
    std::vector<int64_t> order;
    int64_t task_counter = 0;  // the task's own state (steps seen), through the checkpoint
    std::ostringstream quiet;
    options.log = &quiet;
    options.seed = seed;

    TrainerParts parts;
    parts.begin_epoch = [&](int64_t epoch) {
        Generator shuffle(seed * 1000003 + static_cast<uint64_t>(epoch));
        order.resize(n_train);
        std::iota(order.begin(), order.end(), int64_t{0});
        for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[shuffle.randint(i)]);
        return (n_train + run_batch - 1) / run_batch;
    };
    parts.step = [&](int64_t, int64_t b, int64_t step) {
        const int64_t first = b * run_batch, count = std::min(run_batch, n_train - first);
        Tensor x = Tensor::empty({count, 4}), y = Tensor::empty({count, 1});
        for (int64_t i = 0; i < count; ++i) {
            const int64_t row = order[static_cast<size_t>(first + i)];
            for (int64_t j = 0; j < 4; ++j) x.at({i, j}) = train.x.at({row, j});
            y.at({i, 0}) = train.y.at({row, 0});
        }
        model.dropout.manual_seed(seed * 7919 + static_cast<uint64_t>(step));
        const Var prediction = model(Var(x));
        Var loss = loss::mse(prediction, y);
        const double abs_error = sum(abs(prediction.value() - y)).item() / static_cast<double>(count);
        if (on_step) on_step(step, loss);
        ++task_counter;
        const double signed_error = sum(prediction.value() - y).item() / static_cast<double>(count);
        // two named terms, not in alphabetical order: a resumed run must list them as the straight run
        return StepLoss{loss, static_cast<double>(count), {{"signed", signed_error}, {"abs", abs_error}}};
    };
    parts.validate = [&] {
        if (interrupt_in_validation) std::raise(SIGINT);
        model.eval();
        const double mse = loss::mse(model(Var(valid.x)), valid.y).item();
        return Validation{constant_validation ? 0.0 : -mse, Json::object({{"valid_mse", mse}}), {{"valid_mse", mse}}};
    };
    // The snapshot (what a trainer keeps for the report's epoch slider): the
    // model's first weight (all its digits: JSON numbers round-trip).
    parts.snapshot = [&] {
        model.eval();
        return Json::object({{"w", static_cast<double>(model.parameters()[0].value()[0])}});
    };
    parts.learning_rate = [&](int64_t step) { return schedule.lr(step); };
    parts.save_extra = [&](std::map<std::string, std::string>& extra) { extra["task.counter"] = std::to_string(task_counter); };
    parts.load_extra = [&](const TrainingState& s) { task_counter = static_cast<int64_t>(s.number("task.counter")); };
    return train_loop(options, model, optimizer, parts);
}

Outcome outcome(const std::string& dir, const LoopResult& result) {
    Outcome o{tensors(dir + "/last.safetensors"), tensors(dir + "/best.safetensors"), {}, {}, {}, result};
    o.last_extra = load_safetensors(dir + "/last.safetensors").metadata;
    o.last_extra.erase("loop.train_seconds");
    for (Json r : read_metrics(dir + "/metrics.jsonl")) {
        if (r.contains("seconds")) r.set("seconds", 0.0);
        o.records.push_back(r.dump());
    }
    for (const Json& r : read_metrics(dir + "/attention.jsonl")) o.snapshots.push_back(r.dump());
    return o;
}

void check_same(const Outcome& a, const Outcome& b) {
    REQUIRE(a.last.size() == b.last.size());
    for (const auto& entry : a.last) {  // not a structured binding: clang 14 cannot capture one in INFO
        INFO("last.safetensors: " << entry.first);
        CHECK(allclose(entry.second, b.last.at(entry.first), 0, 0));  // bit for bit
    }
    REQUIRE(a.best.size() == b.best.size());
    for (const auto& entry : a.best) {
        INFO("best.safetensors: " << entry.first);
        CHECK(allclose(entry.second, b.best.at(entry.first), 0, 0));
    }
    CHECK(a.last_extra == b.last_extra);
    CHECK(a.records == b.records);
    CHECK(a.snapshots == b.snapshots);
    CHECK(a.result.state.step == b.result.state.step);
    CHECK(a.result.state.epoch == b.result.state.epoch);
}

LoopOptions base(const std::string& dir) {
    return LoopOptions{.dir = dir, .epochs = 3, .curve_every = 4};
}

Outcome straight(const TempDir& dir) { return outcome(dir.path, invoke(base(dir.path))); }

}  // namespace

TEST_CASE("train_loop: the straight run trains, validates each epoch and writes what it did") {
    TempDir dir("loop_straight");
    const Outcome a = straight(dir);
    CHECK(a.result.reason == StopReason::finished);
    CHECK(a.result.state.step == 3 * batches);
    CHECK(a.result.state.epoch == 3);
    CHECK(a.result.loaded_best);
    // 15 steps, a curve point every 4 (3 of them), and 3 epoch records
    REQUIRE(a.records.size() == 6);
    const std::vector<Json> records = read_metrics(dir.path + "/metrics.jsonl");
    CHECK(records[0]["step"].as_double() == 4);
    CHECK(records[1]["epoch"].as_double() == 1);
    CHECK(records[1].contains("train_abs"));
    CHECK(records[1].contains("valid_mse"));
    // training helps: the last validation error is below the first
    CHECK(records.back()["valid_mse"].as_double() < records[1]["valid_mse"].as_double());
    CHECK(a.last_extra.at("task.counter") == std::to_string(3 * batches));
    // a snapshot before training, then one after each epoch: the epoch, the step, what it returned
    const std::vector<Json> snapshots = read_metrics(dir.path + "/attention.jsonl");
    REQUIRE(snapshots.size() == 4);
    for (int64_t e = 0; e <= 3; ++e) {
        CHECK(snapshots[static_cast<size_t>(e)]["epoch"].as_int() == e);
        CHECK(snapshots[static_cast<size_t>(e)]["step"].as_int() == e * batches);
        CHECK(snapshots[static_cast<size_t>(e)]["snapshot"].contains("w"));
    }
    CHECK(snapshots[0].dump() != snapshots[1].dump());  // the model moved
    CHECK(snapshots[1].dump() != snapshots[3].dump());
}

TEST_CASE("train_loop: --steps inside an epoch, then --resume, is the straight run") {
    TempDir straight_dir("loop_straight"), dir("loop_steps");
    const Outcome a = straight(straight_dir);
    for (int64_t stop_at : {1, 7, 5, 14}) {  // inside epochs 1 and 2, at the end of epoch 1, one step before the end
        CAPTURE(stop_at);
        LoopOptions first = base(dir.path);
        first.steps = stop_at;
        const LoopResult r1 = invoke(first);
        CHECK(r1.reason == StopReason::steps);
        CHECK(r1.state.step == stop_at);
        LoopOptions rest = base(dir.path);
        rest.resume = true;
        check_same(a, outcome(dir.path, invoke(rest)));
    }
}

TEST_CASE("train_loop: with --ema the average is validated, drawn and kept as best; training goes on with its own") {
    TempDir plain_one("loop_plain_one"), plain_three("loop_plain_three");
    LoopOptions single = base(plain_one.path);
    single.epochs = 1;
    const Outcome plain = outcome(plain_one.path, invoke(single));  // no averaging
    const Outcome plain3 = outcome(plain_three.path, invoke(base(plain_three.path)));
    ema_decay = 0.8;
    TempDir one("loop_ema_one"), straight_dir("loop_ema_straight"), dir("loop_ema_steps");
    single.dir = one.path;
    const Outcome a = outcome(one.path, invoke(single));
    // After the only epoch: last.safetensors holds the weights training goes
    // on with, those of the run without averaging, and the average in the
    // optimiser's "average" slot; best.safetensors holds the average as the model.
    const std::vector<Json> snapshots = read_metrics(one.path + "/attention.jsonl");
    REQUIRE(snapshots.size() == 2);
    for (const std::string name : {"0.weight", "0.bias", "2.weight", "2.bias"}) {
        CAPTURE(name);
        const Tensor& average = a.last.at("optimizer.state." + name + ".average");
        CHECK(allclose(a.last.at(name), plain.last.at(name), 0, 0));  // averaging changes no step
        CHECK(allclose(a.best.at(name), average, 0, 0));
        CHECK(!allclose(a.last.at(name), average, 0, 0));
        if (name == "0.weight")  // the report's epoch slider drew the average too
            CHECK(snapshots[1]["snapshot"]["w"].as_double() == static_cast<double>(average[0]));
    }
    // The validation score is the average's: the best weights, loaded into a
    // fresh model, give it again (the weights training goes on with do not).
    const std::vector<Json> records = read_metrics(one.path + "/metrics.jsonl");
    const Data valid = make_data(16, 2);
    Generator init(seed);
    Regressor fresh(init);
    fresh.eval();
    load_model(one.path + "/best.safetensors", fresh);
    CHECK(loss::mse(fresh(Var(valid.x)), valid.y).item() == doctest::Approx(records.back()["valid_mse"].as_double()).epsilon(1e-12));
    load_model(one.path + "/last.safetensors", fresh);
    CHECK(loss::mse(fresh(Var(valid.x)), valid.y).item() != doctest::Approx(records.back()["valid_mse"].as_double()).epsilon(1e-6));
    // Stopped inside an epoch and resumed, the run with an average is the
    // straight one; over three epochs its training weights are still those of
    // the run without averaging.
    const Outcome whole = outcome(straight_dir.path, invoke(base(straight_dir.path)));
    for (const std::string name : {"0.weight", "2.weight"}) {
        CAPTURE(name);
        CHECK(allclose(whole.last.at(name), plain3.last.at(name), 0, 0));
    }
    LoopOptions first = base(dir.path);
    first.steps = 7;
    invoke(first);
    LoopOptions rest = base(dir.path);
    rest.resume = true;
    check_same(whole, outcome(dir.path, invoke(rest)));
    ema_decay = 0;
}

// A run resumed with another --ema than it started with was accepted
// silently: its average would change its decay midway and be neither run's.
TEST_CASE("train_loop: --resume with another --ema than the checkpoint's is refused, naming both") {
    TempDir dir("loop_ema_other");
    ema_decay = 0.8;
    LoopOptions first = base(dir.path);
    first.steps = 7;
    invoke(first);
    LoopOptions rest = base(dir.path);
    rest.resume = true;
    const std::string last = dir.path + "/last.safetensors";
    ema_decay = 0.9;
    CHECK_THROWS_WITH_AS(invoke(rest),
                         ("cannot resume " + last + ": its run used --ema 0.8, this one --ema 0.9"
                          " (0 = off); resume with --ema 0.8").c_str(),
                         std::runtime_error);
    ema_decay = 0;
    CHECK_THROWS_WITH_AS(invoke(rest),
                         ("cannot resume " + last + ": its run used --ema 0.8, this one --ema 0"
                          " (0 = off); resume with --ema 0.8").c_str(),
                         std::runtime_error);
    // and a run without averaging, resumed with it
    TempDir plain("loop_ema_plain");
    LoopOptions plain_first = base(plain.path);
    plain_first.steps = 7;
    invoke(plain_first);
    LoopOptions plain_rest = base(plain.path);
    plain_rest.resume = true;
    ema_decay = 0.5;
    CHECK_THROWS_WITH_AS(invoke(plain_rest),
                         ("cannot resume " + plain.path + "/last.safetensors: its run used --ema 0, this one "
                          "--ema 0.5 (0 = off); resume with --ema 0").c_str(),
                         std::runtime_error);
    ema_decay = 0.8;
    invoke(rest);  // the same decay resumes
    ema_decay = 0;
}

TEST_CASE("train_loop: a run killed after its checkpoint resumes to the straight run, no record twice") {
    // kill -9 leaves the files as they were at the kill: the history written
    // after the last checkpoint is there, the checkpoint is older. Made here
    // by putting back a checkpoint of step 7 after the run went on to the end.
    TempDir straight_dir("loop_straight"), dir("loop_killed");
    const Outcome a = straight(straight_dir);
    LoopOptions first = base(dir.path);
    first.steps = 7;
    invoke(first);
    std::filesystem::copy_file(dir / "last.safetensors", dir / "step7.safetensors");
    LoopOptions rest = base(dir.path);
    rest.resume = true;
    invoke(rest);  // epochs 2 and 3 in metrics.jsonl and attention.jsonl
    std::filesystem::rename(dir / "step7.safetensors", dir / "last.safetensors");
    check_same(a, outcome(dir.path, invoke(rest)));
}

TEST_CASE("train_loop: --steps N then --resume --steps M is --steps M") {
    TempDir straight_dir("loop_straight"), dir("loop_steps");
    LoopOptions whole = base(straight_dir.path);
    whole.steps = 12;
    const Outcome a = outcome(straight_dir.path, invoke(whole));
    LoopOptions first = base(dir.path);
    first.steps = 3;
    invoke(first);
    LoopOptions rest = base(dir.path);
    rest.steps = 12;
    rest.resume = true;
    check_same(a, outcome(dir.path, invoke(rest)));
}

TEST_CASE("train_loop: a time budget spent after every step, resumed each time, is the straight run") {
    TempDir straight_dir("loop_straight"), dir("loop_budget");
    const Outcome a = straight(straight_dir);
    LoopOptions options = base(dir.path);
    options.time_budget = 1e-9;  // every invocation stops after its first step
    LoopResult r = invoke(options);
    int invocations = 1;
    options.resume = true;
    while (r.reason == StopReason::time_budget && invocations < 100) {
        r = invoke(options);
        ++invocations;
    }
    CHECK(invocations == 3 * batches);
    check_same(a, outcome(dir.path, r));
}

TEST_CASE("train_loop: Ctrl-C finishes the step, saves, and --resume is the straight run") {
    TempDir straight_dir("loop_straight"), dir("loop_interrupt");
    const Outcome a = straight(straight_dir);
    struct sigaction before {};
    sigaction(SIGINT, nullptr, &before);
    const LoopResult r1 = invoke(base(dir.path), [](int64_t step, Var&) {
        if (step == 6) std::raise(SIGINT);  // during step 6's forward: it still completes
    });
    CHECK(r1.reason == StopReason::interrupted);
    CHECK(r1.state.step == 7);
    // the handler is gone with the loop: SIGINT is back to what it was
    struct sigaction now {};
    sigaction(SIGINT, nullptr, &now);
    CHECK(reinterpret_cast<void*>(now.sa_handler) == reinterpret_cast<void*>(before.sa_handler));
    LoopOptions rest = base(dir.path);
    rest.resume = true;
    check_same(a, outcome(dir.path, invoke(rest)));
}

TEST_CASE("train_loop: Ctrl-C during validation stops after the epoch's checkpoints") {
    TempDir straight_dir("loop_straight"), dir("loop_interrupt");
    const Outcome a = straight(straight_dir);
    interrupt_in_validation = true;
    const LoopResult r1 = invoke(base(dir.path));
    interrupt_in_validation = false;
    CHECK(r1.reason == StopReason::interrupted);
    CHECK(r1.state.step == batches);
    CHECK(r1.state.epoch == 1);
    LoopOptions rest = base(dir.path);
    rest.resume = true;
    check_same(a, outcome(dir.path, invoke(rest)));
}

TEST_CASE("train_loop: a second Ctrl-C exits at once with status 130") {
    TempDir dir("loop_second_interrupt");
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        // The child never returns into the test runner: it would run the
        // rest of the suite, and hang at exit in the thread pool it shares
        // no threads with (a broken kernel once made invoke() throw here).
        try {
            invoke(base(dir.path), [](int64_t step, Var&) {
                if (step == 2) {
                    std::raise(SIGINT);
                    std::raise(SIGINT);  // does not return
                }
            });
        } catch (...) {
            _exit(2);
        }
        _exit(0);  // reached only if the second Ctrl-C did not exit
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 130);
    CHECK_FALSE(std::filesystem::exists(dir.path + "/last.safetensors"));  // it did not stop to save
}

TEST_CASE("train_loop: a non-finite loss stops the run, names the step, and keeps the last good checkpoint") {
    TempDir dir("loop_nan");
    std::string message;
    try {
        invoke(base(dir.path), [](int64_t step, Var& loss) {
            if (step == 7) loss = mul(loss, Var(Tensor::full({}, std::numeric_limits<real>::quiet_NaN())));
        });
    } catch (const std::runtime_error& e) {
        message = e.what();
    }
    CHECK(message.find("step 7: the loss is nan") != std::string::npos);
    CHECK(message.find("at step 6") != std::string::npos);
    // last.safetensors is the end of epoch 1 (step 5), all finite
    const SafetensorsFile last = load_safetensors(dir.path + "/last.safetensors");
    CHECK(last.metadata.at("step") == "5");
    for (const auto& entry : last.tensors) {
        INFO(entry.first);
        for (int64_t i = 0; i < entry.second.numel(); ++i) CHECK(std::isfinite(static_cast<double>(entry.second.data()[i])));
    }
}

TEST_CASE("train_loop: early stopping counts epochs across a resume; eval-only loads the best") {
    TempDir dir("loop_patience");
    LoopOptions options = base(dir.path);
    options.epochs = 50;
    options.patience = 1;
    constant_validation = true;  // the second epoch is no better than the first: it stops the run
    LoopResult r = invoke(options);
    CHECK(r.reason == StopReason::early_stop);
    CHECK(r.state.epoch == 2);
    options.resume = true;
    r = invoke(options);
    CHECK(r.reason == StopReason::early_stop);
    CHECK(r.state.step == 2 * batches);  // not one step more
    LoopOptions eval = base(dir.path);
    eval.eval_only = true;
    r = invoke(eval);
    constant_validation = false;
    CHECK(r.reason == StopReason::eval_only);
    CHECK(r.state.epoch == 1);  // the best was the first epoch
}

TEST_CASE("train_loop: a run that validated nothing does not test with a best checkpoint left by an earlier run") {
    TempDir dir("loop_stale");
    invoke(base(dir.path));  // leaves best.safetensors
    LoopOptions options = base(dir.path);
    options.steps = 2;
    const LoopResult r = invoke(options);
    CHECK(r.reason == StopReason::steps);
    CHECK_FALSE(r.loaded_best);
    CHECK(read_metrics(dir.path + "/metrics.jsonl").empty());  // a new run's history
    const std::vector<Json> snapshots = read_metrics(dir.path + "/attention.jsonl");  // not the earlier run's epochs
    REQUIRE(snapshots.size() == 1);
    CHECK(snapshots[0]["epoch"].as_int() == 0);
}

TEST_CASE("train_loop: resuming a checkpoint without the loop's position names the file and the key") {
    TempDir dir("loop_old");
    invoke(base(dir.path));
    SafetensorsFile f = load_safetensors(dir.path + "/last.safetensors");
    f.metadata.erase("loop.batch");
    save_safetensors(dir.path + "/last.safetensors", f.tensors, f.metadata);
    LoopOptions options = base(dir.path);
    options.resume = true;
    CHECK_THROWS_WITH(invoke(options),
                      doctest::Contains("last.safetensors': metadata \"loop.batch\" is missing"));
}

// Each of these once resumed into nonsense: --batch 4 after a run with
// --batch 8 continued "from batch 4" of another cutting of the epoch;
// loop.batch = -3 read before the epoch's order; epoch = -5 resumed at
// "epoch -4/2".
TEST_CASE("train_loop: a resume checks the checkpoint's counts, and refuses another batching by name") {
    TempDir dir("loop_counts");
    const std::string last = dir.path + "/last.safetensors";
    LoopOptions first = base(dir.path);
    first.steps = 3;  // inside epoch 1, at batch 4 of 5
    invoke(first);
    LoopOptions rest = base(dir.path);
    rest.resume = true;
    run_batch = 4;  // 9 batches an epoch
    CHECK_THROWS_WITH(invoke(rest), doctest::Contains("at batch 4 of epoch 1: its run cut the epoch into 5 batches, "
                                                      "this one into 9 (--batch or the data changed)"));
    run_batch = batch;
    const SafetensorsFile saved = load_safetensors(last);
    auto resume_with = [&](const std::string& key, const std::string& value) {
        SafetensorsFile f = saved;
        if (value.empty())
            f.metadata.erase(key);
        else
            f.metadata[key] = value;
        save_safetensors(last, f.tensors, f.metadata);
        std::string message;
        try {
            invoke(rest);
        } catch (const std::exception& e) {
            message = e.what();
        }
        return message;
    };
    for (const std::string bad : {"-3", "1e300", "2.5"}) {
        CAPTURE(bad);
        CHECK(resume_with("loop.batch", bad).find("metadata \"loop.batch\" = \"" + bad +
                                                  "\" is not a count from 0 to 1099511627776") != std::string::npos);
    }
    CHECK(resume_with("loop.bad_epochs", "-1").find("\"loop.bad_epochs\" = \"-1\" is not a count") != std::string::npos);
    CHECK(resume_with("epoch", "-5").find("last.safetensors': metadata \"epoch\" = \"-5\" is negative") !=
          std::string::npos);
    CHECK(resume_with("step", "-1").find("metadata \"step\" = \"-1\" is negative") != std::string::npos);
    // a checkpoint of before loop.epoch_batches: a position past the epoch is still refused
    SafetensorsFile old = saved;
    old.metadata.erase("loop.epoch_batches");
    old.metadata["loop.batch"] = "7";
    save_safetensors(last, old.tensors, old.metadata);
    CHECK_THROWS_WITH(invoke(rest), doctest::Contains("at batch 8 of epoch 1: this run cuts the epoch into 5 batches "
                                                      "(--batch or the data changed)"));
    // and the checkpoint as it was resumes
    save_safetensors(last, saved.tensors, saved.metadata);
    CHECK(invoke(rest).reason == StopReason::finished);
}

// Two runs into the same folder once interleaved metrics.jsonl ("}{{"), and
// the checkpoints were whichever saved last.
TEST_CASE("train_loop: a folder another live run trains into is refused; a stale lock is taken over") {
    TempDir dir("loop_lock");
    const std::string lock = dir.path + "/run.lock";
    std::ofstream(lock) << ::getpid() << "\n";  // a live process holds it: this one
    const std::string refused = "another run (process " + std::to_string(::getpid()) + ") is training into " + dir.path;
    CHECK_THROWS_WITH(invoke(base(dir.path)), doctest::Contains(refused.c_str()));
    CHECK_FALSE(std::filesystem::exists(dir.path + "/metrics.jsonl"));  // nothing written
    const pid_t gone = ::fork();  // a process that has ended: its lock is stale
    REQUIRE(gone >= 0);
    if (gone == 0) ::_exit(0);
    REQUIRE(::waitpid(gone, nullptr, 0) == gone);
    std::ofstream(lock) << gone << "\n";
    CHECK(invoke(base(dir.path)).reason == StopReason::finished);
    CHECK_FALSE(std::filesystem::exists(lock));  // released at the end
    LoopOptions evaluate = base(dir.path);
    evaluate.eval_only = true;  // reading the best checkpoint needs no lock
    std::ofstream(lock) << ::getpid() << "\n";
    CHECK(invoke(evaluate).reason == StopReason::eval_only);
    std::filesystem::remove(lock);
}

TEST_CASE("result_json: every trainer's RESULT line has the same top-level keys") {
    FlagParser flags("t", "test");
    CommonFlags common{.data = "x"};
    flags.add_common(common, "x");
    LoopResult r;
    r.state.epoch = 2;
    r.state.step = 30;
    r.train_seconds = 1.5;
    r.reason = StopReason::steps;
    const Json j = result_json("docclass", "needle", "han", Json::object({{"acc", 0.5}}), r, 1234, flags);
    std::vector<std::string> keys;
    for (const auto& [key, value] : j.as_object()) keys.push_back(key);
    CHECK(keys == std::vector<std::string>{"example", "data", "model", "test", "train_seconds", "params", "epochs",
                                           "steps", "stopped", "settings"});
    CHECK(j["test"]["acc"].as_double() == 0.5);
    CHECK(j["stopped"].as_string() == "--steps");
    CHECK(j["epochs"].as_int() == 2);
    CHECK(j["settings"]["data"].as_string() == "x");
}

TEST_CASE("learning_rate_schedule: --schedule noam and cosine with --warmup, by hand") {
    // noam, --lr 0.01 the peak, W = 10: 0.01 · min(s/10, √(10/s)), s = t + 1
    const auto noam = learning_rate_schedule("noam", 0.01, 1000, 10);
    CHECK(noam(0) == doctest::Approx(0.001));
    CHECK(noam(9) == doctest::Approx(0.01));
    CHECK(noam(39) == doctest::Approx(0.005));
    // W = 0: a tenth of the run, 100 steps
    CHECK(learning_rate_schedule("noam", 0.01, 1000)(99) == doctest::Approx(0.01));
    CHECK(learning_rate_schedule("noam", 0.01, 1000)(49) == doctest::Approx(0.005));
    // cosine after 10 steps of warm-up from lr/10: 0.1·(0.1 + 0.9 t/10), then the cosine over 90 steps to 5%
    const auto cosine = learning_rate_schedule("cosine", 0.1, 100, 10);
    CHECK(cosine(0) == doctest::Approx(0.01));
    CHECK(cosine(5) == doctest::Approx(0.1 * (0.1 + 0.9 * 0.5)));
    CHECK(cosine(10) == doctest::Approx(0.1));
    CHECK(cosine(55) == doctest::Approx(0.005 + 0.095 / 2));
    CHECK(cosine(100) == doctest::Approx(0.005));
    // without warm-up the cosine starts at lr
    CHECK(learning_rate_schedule("cosine", 0.1, 100)(0) == doctest::Approx(0.1));
    CHECK_THROWS_WITH_AS(learning_rate_schedule("linear", 0.1, 100), "--schedule expects constant, cosine or noam, got 'linear'",
                         std::invalid_argument);
    for (const char* kind : {"constant", "cosine", "noam"})
        CHECK_THROWS_WITH_AS(learning_rate_schedule(kind, 0.1, 100, -1), "--warmup must be >= 0, got -1",
                             std::invalid_argument);
}
