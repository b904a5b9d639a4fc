// io/checkpoint: model files round trip bit for bit under PyTorch's keys; a
// training run stopped, saved, loaded into a fresh model and optimiser and
// continued gives exactly the losses of the run that never stopped; bad
// files are rejected by name and change nothing.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "autograd/ops.hpp"
#include "nn/activation.hpp"
#include "io/checkpoint.hpp"
#include "nn/dropout.hpp"
#include "nn/layernorm.hpp"
#include "nn/linear.hpp"
#include "nn/loss.hpp"
#include "io/safetensors.hpp"
#include "nn/schedule.hpp"
#include "nn/sequential.hpp"
#include "tensor/ops.hpp"
#include "tests/function.hpp"
#include "tests/helpers.hpp"

using namespace attn;
using namespace attn::testing;

namespace {

// A small classifier: 4 features → 3 classes, with dropout (whose masks
// come from `gen`).
struct Classifier : Sequential {
    Classifier(Generator& init, Generator& gen) {
        emplace<Linear>(4, 8, init);
        emplace<Tanh>();
        emplace<Dropout>(0.2f, gen);
        emplace<LayerNorm>(8);
        emplace<Linear>(8, 3, init);
    }
};

bool same_state(const Module& a, const Module& b) {
    const StateDict sa = a.state_dict(), sb = b.state_dict();
    if (sa.size() != sb.size()) return false;
    for (size_t i = 0; i < sa.size(); ++i)
        if (sa[i].first != sb[i].first || !allclose(sa[i].second, sb[i].second, 0, 0)) return false;
    return true;
}

// One training step t of a run with seed `seed`: the batch and the dropout
// masks are derived from (seed, t), so a resumed run can recreate them.
real train_step(Classifier& model, Optimizer& opt, Generator& dropout_gen, const LrSchedule& schedule, uint64_t seed,
                int64_t t) {
    Generator data(seed * 1000 + static_cast<uint64_t>(t));
    dropout_gen.manual_seed(seed + static_cast<uint64_t>(t));
    const Tensor x = Tensor::normal({6, 4}, 0, 1, data);
    Tensor y = Tensor::empty({6});
    for (int64_t i = 0; i < 6; ++i) y[i] = static_cast<real>(data.randint(3));
    opt.zero_grad();
    Var loss = loss::cross_entropy(model(Var(x)), y);
    loss.backward();
    clip_grad_norm_(model.parameters(), 1.0);
    opt.set_lr(schedule.lr(t));
    opt.step();
    return loss.item();
}

}  // namespace

TEST_CASE("save_model / load_model: bit-exact round trip under PyTorch's state_dict keys") {
    TempDir dir("checkpoint");
    Generator init(1), gen(2), other_init(99);
    Classifier model(init, gen), fresh(other_init, gen);
    REQUIRE_FALSE(same_state(model, fresh));
    save_model(dir / "model.safetensors", model, {{"note", "test"}});
    load_model(dir / "model.safetensors", fresh);
    CHECK(same_state(model, fresh));

    const SafetensorsFile file = load_safetensors(dir / "model.safetensors");
    std::vector<std::string> names;
    for (const auto& [name, _] : file.tensors) names.push_back(name);
    CHECK(names == std::vector<std::string>{"0.bias", "0.weight", "3.bias", "3.weight", "4.bias", "4.weight"});
    CHECK(file.metadata.at("format") == "pt");
    CHECK(file.metadata.at("note") == "test");
    CHECK(std::vector<std::string>{"model.safetensors"} ==
          std::vector<std::string>{std::filesystem::directory_iterator(dir.path)->path().filename()});  // no temporary left

    // A model of another shape is refused, naming the tensor, and unchanged.
    Sequential wider;
    wider.emplace<Linear>(4, 9, init);
    const StateDict before = wider.state_dict();
    CHECK_THROWS_WITH_AS(load_model(dir / "model.safetensors", wider),
                         "load_state_dict: 0.bias has shape 8 in the checkpoint but 9 in the model",
                         std::invalid_argument);
    CHECK(allclose(wider.state_dict()[0].second, before[0].second, 0, 0));
}

TEST_CASE("save_checkpoint / load_checkpoint: names, metadata and the training state") {
    TempDir dir("checkpoint");
    Generator init(1), gen(2);
    Classifier model(init, gen);
    Adam opt(model.named_parameters(), AdamOptions{.lr = 0.003});
    ConstantSchedule schedule(1.0 / 3);  // an lr with no short decimal form
    for (int64_t t = 0; t < 2; ++t) train_step(model, opt, gen, schedule, 5, t);

    TrainingState state{.step = 2, .epoch = 1, .seed = std::numeric_limits<uint64_t>::max(), .extra = {{"best", "0.5"}}};
    save_checkpoint(dir / "run.safetensors", model, opt, state);
    const SafetensorsFile file = load_safetensors(dir / "run.safetensors");
    CHECK(file.contains("0.weight"));
    CHECK(file.contains("optimizer.state.0.weight.exp_avg"));
    CHECK(file.contains("optimizer.state.4.bias.exp_avg_sq"));
    CHECK(file.metadata.at("optimizer.type") == "Adam");
    CHECK(file.metadata.at("optimizer.state.0.weight.step") == "2");
    CHECK(file.metadata.at("seed") == "18446744073709551615");

    Generator other(7);
    Classifier fresh(other, gen);
    Adam fresh_opt(fresh.named_parameters(), AdamOptions{.lr = 0.003});
    const TrainingState loaded = load_checkpoint(dir / "run.safetensors", fresh, fresh_opt);
    CHECK(loaded.step == 2);
    CHECK(loaded.epoch == 1);
    CHECK(loaded.seed == std::numeric_limits<uint64_t>::max());
    CHECK(loaded.extra == std::map<std::string, std::string>{{"best", "0.5"}});
    CHECK(fresh_opt.lr() == 1.0 / 3);  // exactly
    CHECK(same_state(model, fresh));
    const OptimizerState a = opt.state_dict(), b = fresh_opt.state_dict();
    REQUIRE(a.tensors.size() == b.tensors.size());
    for (size_t i = 0; i < a.tensors.size(); ++i) {
        CHECK(a.tensors[i].first == b.tensors[i].first);
        CHECK(allclose(a.tensors[i].second, b.tensors[i].second, 0, 0));
    }

    // The model part of a training checkpoint loads on its own too.
    Classifier model_only(other, gen);
    load_model(dir / "run.safetensors", model_only);
    CHECK(same_state(model, model_only));

    // Learning rates whose shortest exact decimal has 15, 16 and 17 digits
    // (0.1 + 0.2 prints as 0.3 with 16: a resumed run would step with another
    // rate), each written as that decimal and read back exactly.
    for (const auto& [rate, text] : std::vector<std::pair<double, std::string>>{
             {0.1, "0.1"}, {1.0 / 3, "0.3333333333333333"}, {0.1 + 0.2, "0.30000000000000004"}}) {
        opt.set_lr(rate);
        save_checkpoint(dir / "lr.safetensors", model, opt, {});
        CHECK(load_safetensors(dir / "lr.safetensors").metadata.at("optimizer.lr") == text);
        load_checkpoint(dir / "lr.safetensors", fresh, fresh_opt);
        CHECK(fresh_opt.lr() == rate);
    }
}

TEST_CASE("a resumed run gives exactly the losses of an uninterrupted one (Adam and SGD)") {
    TempDir dir("checkpoint");
    const uint64_t seed = 11;
    const int64_t steps = 6, stop_at = 3;
    CosineAnnealing schedule(0.05, steps);
    const std::vector<Function<std::unique_ptr<Optimizer>(const Module&)>> optimizers{
        [](const Module& m) { return std::make_unique<Adam>(m.named_parameters(), AdamOptions{.weight_decay = 1e-3}); },
        [](const Module& m) {
            return std::make_unique<SGD>(m.named_parameters(), SGDOptions{.momentum = 0.9, .nesterov = true});
        },
    };
    for (const auto& make_optimizer : optimizers) {
        // Uninterrupted.
        Generator init(seed), gen(0);
        Classifier model(init, gen);
        auto opt = make_optimizer(model);
        std::vector<real> losses;
        for (int64_t t = 0; t < steps; ++t) losses.push_back(train_step(model, *opt, gen, schedule, seed, t));

        // Stopped after stop_at steps and saved...
        Generator init2(seed), gen2(0);
        auto first = std::make_unique<Classifier>(init2, gen2);
        auto first_opt = make_optimizer(*first);
        for (int64_t t = 0; t < stop_at; ++t) train_step(*first, *first_opt, gen2, schedule, seed, t);
        save_checkpoint(dir / "resume.safetensors", *first, *first_opt, {.step = stop_at, .seed = seed});
        first_opt.reset();
        first.reset();

        // ...then a new process: a fresh model (other init), a fresh optimiser, loaded.
        Generator init3(12345), gen3(0);
        Classifier resumed(init3, gen3);
        auto resumed_opt = make_optimizer(resumed);
        const TrainingState state = load_checkpoint(dir / "resume.safetensors", resumed, *resumed_opt);
        INFO(resumed_opt->type());
        for (int64_t t = state.step; t < steps; ++t) {
            const real loss = train_step(resumed, *resumed_opt, gen3, schedule, state.seed, t);
            CHECK(loss == losses[static_cast<size_t>(t)]);  // bit for bit
        }
        CHECK(same_state(model, resumed));
    }
}

TEST_CASE("load_checkpoint: wrong files are named and change nothing") {
    TempDir dir("checkpoint");
    Generator init(1), gen(2);
    Classifier model(init, gen);
    Adam adam(model.named_parameters());
    save_model(dir / "model.safetensors", model);
    CHECK_THROWS_WITH_AS(load_checkpoint(dir / "model.safetensors", model, adam),
                         ("load_checkpoint: '" + (dir / "model.safetensors") +
                          "': metadata \"optimizer.type\" is missing (not a training checkpoint written by "
                          "save_checkpoint?)")
                             .c_str(),
                         std::runtime_error);

    save_safetensors(dir / "bad.safetensors", model.state_dict(),
                     {{"optimizer.type", "Adam"}, {"optimizer.lr", "0.1"}, {"step", "3x"}, {"epoch", "0"}, {"seed", "1"}});
    CHECK_THROWS_WITH_AS(load_checkpoint(dir / "bad.safetensors", model, adam),
                         ("load_checkpoint: '" + (dir / "bad.safetensors") +
                          "': metadata \"step\" = \"3x\" is not a valid number")
                             .c_str(),
                         std::runtime_error);

    // An SGD checkpoint into Adam: refused by the optimiser, the model untouched.
    Generator other(3);
    Classifier donor(other, gen);
    SGD sgd(donor.named_parameters());
    const ConstantSchedule half(0.5);
    for (int64_t t = 0; t < 2; ++t) train_step(donor, sgd, gen, half, 1, t);  // its steps: 2
    save_checkpoint(dir / "sgd.safetensors", donor, sgd, {});
    const StateDict before = model.state_dict();
    CHECK_THROWS_WITH_AS(load_checkpoint(dir / "sgd.safetensors", model, adam),
                         "Adam.load_state_dict: the state is of a SGD optimiser, not Adam", std::invalid_argument);
    CHECK(allclose(model.state_dict()[0].second, before[0].second, 0, 0));

    // A model with fewer parameters: the optimiser refuses the state of the
    // ones it does not have, before anything changes.
    Sequential small;
    small.emplace<Linear>(4, 8, other);
    SGD small_sgd(small.named_parameters());
    CHECK_THROWS_WITH_AS(load_checkpoint(dir / "sgd.safetensors", small, small_sgd),
                         doctest::Contains("state for unknown parameter"), std::invalid_argument);
    CHECK(small_sgd.steps(0) == 0);

    // The checkpoint's names but not its shapes (5 classes, not 3): the
    // optimiser's state fits and is loaded first, then the model refuses, and
    // the optimiser is put back as it was.
    Sequential five;
    five.emplace<Linear>(4, 8, other);
    five.emplace<Tanh>();
    five.emplace<Dropout>(0.2f, gen);
    five.emplace<LayerNorm>(8);
    five.emplace<Linear>(8, 5, other);
    SGD five_sgd(five.named_parameters());
    const double lr_before = five_sgd.lr();
    REQUIRE(lr_before != 0.5);
    CHECK_THROWS_AS(load_checkpoint(dir / "sgd.safetensors", five, five_sgd), std::invalid_argument);
    for (int i = 0; i < 6; ++i) CHECK(five_sgd.steps(i) == 0);  // not the checkpoint's 2
    CHECK(five_sgd.lr() == lr_before);                          // not the checkpoint's 0.5
}

// A checkpoint with NaN weights, or an Adam state no run can reach (a negative
// second moment, whose square root is NaN), was accepted, and training
// resumed into NaN. Both are refused on loading, naming the tensor, and
// neither the model nor the optimiser changes.
TEST_CASE("load_checkpoint / load_model: non-finite weights and impossible optimiser state are refused") {
    TempDir dir("checkpoint");
    Generator init(1), gen(2);
    Classifier model(init, gen);
    Adam adam(model.named_parameters());
    ConstantSchedule schedule(1e-2);
    train_step(model, adam, gen, schedule, 5, 0);
    save_checkpoint(dir / "good.safetensors", model, adam, {});
    SafetensorsFile file = load_safetensors(dir / "good.safetensors");
    Generator init2(1), gen2(2);
    Classifier snapshot(init2, gen2);
    snapshot.load_state_dict(model.state_dict());

    auto write_with = [&](const std::string& name, const std::string& tensor, int64_t index, real value) {
        NamedTensors tensors;
        for (const auto& [n, t] : file.tensors) {
            Tensor copy = t.clone();
            if (n == tensor) copy[index] = value;
            tensors.emplace_back(n, copy);
        }
        save_safetensors(dir / name, tensors, file.metadata);
        return dir / name;
    };
    const std::string weight = file.tensors.front().first;  // "0.bias", the first name in the file
    const std::string nan_path = write_with("nan.safetensors", weight, 3, std::numeric_limits<real>::quiet_NaN());
    CHECK_THROWS_WITH_AS(load_checkpoint(nan_path, model, adam),
                         ("load_checkpoint: '" + nan_path + "': tensor \"" + weight +
                          "\" holds nan at flat index 3; the checkpoint is not usable")
                             .c_str(),
                         std::runtime_error);
    CHECK_THROWS_WITH_AS(load_model(nan_path, model), doctest::Contains("holds nan at flat index 3"),
                         std::runtime_error);
    const std::string inf_path = write_with("inf.safetensors", weight, 0, -std::numeric_limits<real>::infinity());
    CHECK_THROWS_WITH_AS(load_model(inf_path, model), doctest::Contains("holds -inf at flat index 0"),
                         std::runtime_error);

    const std::string sq_path = write_with("sq.safetensors", "optimizer.state." + weight + ".exp_avg_sq", 1, -0.5f);
    CHECK_THROWS_WITH_AS(load_checkpoint(sq_path, model, adam),
                         doctest::Contains(("\"" + weight + ".exp_avg_sq\" holds -0.5 at flat index 1 (a second "
                                            "moment must be finite and ≥ 0)")
                                               .c_str()),
                         std::invalid_argument);
    const std::string avg_path = write_with("avg.safetensors", "optimizer.state." + weight + ".exp_avg", 2, NAN);
    CHECK_THROWS_WITH_AS(load_checkpoint(avg_path, model, adam),
                         doctest::Contains(("\"" + weight + ".exp_avg\" holds nan at flat index 2 (must be finite)").c_str()),
                         std::invalid_argument);
    CHECK(same_state(model, snapshot));
    CHECK_NOTHROW(load_checkpoint(dir / "good.safetensors", model, adam));
}

// A trainer reading its own numbers back from a checkpoint said "stod" or
// "map::at" when one was missing or mangled.
TEST_CASE("TrainingState::number: a missing or mangled number names the file and the key") {
    TempDir dir("checkpoint");
    Generator init(1), gen(2);
    Classifier model(init, gen);
    Adam adam(model.named_parameters());
    const std::string path = dir / "c.safetensors";
    save_checkpoint(path, model, adam, {.extra = {{"best", "0.25"}, {"bad", "0.2.5"}, {"inf", "inf"}}});
    const TrainingState state = load_checkpoint(path, model, adam);
    CHECK(state.number("best") == 0.25);
    CHECK_THROWS_WITH_AS(state.number("missing"), ("checkpoint '" + path + "': metadata \"missing\" is missing").c_str(),
                         std::runtime_error);
    CHECK_THROWS_WITH_AS(state.number("bad"),
                         ("checkpoint '" + path + "': metadata \"bad\" = \"0.2.5\" is not a finite number").c_str(),
                         std::runtime_error);
    CHECK_THROWS_AS(state.number("inf"), std::runtime_error);
}
