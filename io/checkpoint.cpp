#include "io/checkpoint.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "io/safetensors.hpp"

namespace attn {

namespace {

const std::string kOptimizerState = "optimizer.state.";

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// A double as the shortest decimal text that reads back to the same double.
std::string exact_decimal(double x) {
    char buf[40];
    for (int digits = 15; digits <= 17; ++digits) {
        std::snprintf(buf, sizeof buf, "%.*g", digits, x);
        if (std::stod(buf) == x) break;
    }
    return buf;
}

[[noreturn]] void fail(const std::string& op, const std::string& path, const std::string& problem) {
    throw std::runtime_error(op + ": '" + path + "': " + problem);
}

const std::string& required(const SafetensorsFile& file, const std::string& key, const std::string& op) {
    auto it = file.metadata.find(key);
    if (it == file.metadata.end())
        fail(op, file.path, "metadata \"" + key + "\" is missing (not a training checkpoint written by save_checkpoint?)");
    return it->second;
}

// Whole decimal numbers only: "12" is fine, "12abc", "", "1e3" are not.
template <class T, class Parse>
T parse_number(const SafetensorsFile& file, const std::string& key, const std::string& text, const std::string& op,
               Parse parse) {
    size_t used = 0;
    T value{};
    try {
        value = static_cast<T>(parse(text, &used));
    } catch (const std::exception&) {
        used = 0;
    }
    if (text.empty() || used != text.size())
        fail(op, file.path, "metadata \"" + key + "\" = \"" + text + "\" is not a valid number");
    return value;
}

int64_t parse_int(const SafetensorsFile& f, const std::string& key, const std::string& text, const std::string& op) {
    return parse_number<int64_t>(f, key, text, op, [](const std::string& s, size_t* n) { return std::stoll(s, n); });
}

// Weights that are not numbers make every output NaN: a run that diverged
// before the trainers stopped at a non-finite loss could save them. Refused
// on loading, naming the tensor, rather than resumed from.
void check_finite(const std::string& op, const std::string& path, const StateDict& state) {
    for (const auto& [name, t] : state)
        for (int64_t i = 0; i < t.numel(); ++i)
            if (!std::isfinite(t[i]))
                fail(op, path,
                     "tensor \"" + name + "\" holds " + (std::isnan(t[i]) ? "nan" : t[i] > 0 ? "inf" : "-inf") +
                         " at flat index " + std::to_string(i) + "; the checkpoint is not usable");
}

}  // namespace

void save_model(const std::string& path, const Module& model, const std::map<std::string, std::string>& metadata) {
    std::map<std::string, std::string> meta = metadata;
    meta.emplace("format", "pt");
    save_safetensors(path, model.state_dict(), meta);
}

void load_model(const std::string& path, Module& model) {
    SafetensorsFile file = load_safetensors(path);
    const bool training = file.metadata.count("optimizer.type") > 0;
    StateDict state;
    for (auto& [name, t] : file.tensors)
        if (!(training && starts_with(name, kOptimizerState))) state.emplace_back(name, t);
    check_finite("load_model", path, state);
    model.load_state_dict(state);
}

void save_checkpoint(const std::string& path, const Module& model, const Optimizer& optimizer,
                     const TrainingState& state) {
    StateDict tensors = model.state_dict();
    for (const auto& [name, _] : tensors)
        if (starts_with(name, "optimizer."))
            throw std::invalid_argument("save_checkpoint: the model's tensor \"" + name +
                                        "\" collides with the optimiser's names (\"optimizer.*\")");
    const OptimizerState opt = optimizer.state_dict();
    for (const auto& [name, t] : opt.tensors) tensors.emplace_back(kOptimizerState + name, t);

    std::map<std::string, std::string> meta{
        {"format", "pt"},
        {"step", std::to_string(state.step)},
        {"epoch", std::to_string(state.epoch)},
        {"seed", std::to_string(state.seed)},
        {"optimizer.type", opt.type},
        {"optimizer.lr", exact_decimal(opt.lr)},
    };
    for (const auto& [name, step] : opt.steps) meta.emplace(kOptimizerState + name + ".step", std::to_string(step));
    for (const auto& [key, value] : state.extra)
        if (!meta.emplace(key, value).second)
            throw std::invalid_argument("save_checkpoint: extra metadata \"" + key +
                                        "\" collides with a key the checkpoint itself uses");
    save_safetensors(path, tensors, meta);
}

TrainingState load_checkpoint(const std::string& path, Module& model, Optimizer& optimizer) {
    const std::string op = "load_checkpoint";
    SafetensorsFile file = load_safetensors(path);
    OptimizerState opt;
    opt.type = required(file, "optimizer.type", op);
    const std::string& lr = required(file, "optimizer.lr", op);
    opt.lr = parse_number<double>(file, "optimizer.lr", lr, op,
                                  [](const std::string& s, size_t* n) { return std::stod(s, n); });

    TrainingState state;
    state.step = parse_int(file, "step", required(file, "step", op), op);
    state.epoch = parse_int(file, "epoch", required(file, "epoch", op), op);
    // (epoch = -5 once resumed at "epoch -4/2")
    for (const auto& [key, value] : {std::pair{"step", state.step}, std::pair{"epoch", state.epoch}})
        if (value < 0) fail(op, path, std::string("metadata \"") + key + "\" = \"" + std::to_string(value) + "\" is negative");
    const std::string& seed = required(file, "seed", op);
    if (!seed.empty() && seed[0] == '-') fail(op, path, "metadata \"seed\" = \"" + seed + "\" is negative");
    state.seed = parse_number<uint64_t>(file, "seed", seed, op,
                                        [](const std::string& s, size_t* n) { return std::stoull(s, n); });

    const std::string step_suffix = ".step";
    for (const auto& [key, value] : file.metadata) {
        const bool param_step = starts_with(key, kOptimizerState) && key.size() > kOptimizerState.size() + 5 &&
                                key.compare(key.size() - step_suffix.size(), step_suffix.size(), step_suffix) == 0;
        if (param_step) {
            const std::string name =
                key.substr(kOptimizerState.size(), key.size() - kOptimizerState.size() - step_suffix.size());
            opt.steps.emplace_back(name, parse_int(file, key, value, op));
        } else if (key != "format" && key != "step" && key != "epoch" && key != "seed" && key != "optimizer.type" &&
                   key != "optimizer.lr") {
            state.extra.emplace(key, value);
        }
    }
    StateDict model_state;
    for (auto& [name, t] : file.tensors) {
        if (starts_with(name, kOptimizerState))
            opt.tensors.emplace_back(name.substr(kOptimizerState.size()), t);
        else
            model_state.emplace_back(name, t);
    }
    check_finite(op, path, model_state);
    if (!std::isfinite(opt.lr) || opt.lr < 0)
        fail(op, path, "metadata \"optimizer.lr\" = \"" + lr + "\" is not a learning rate (finite, ≥ 0)");
    // Both are checked before either changes: the optimiser first on a copy
    // of its state, then the model, then the optimiser for real.
    const OptimizerState before = optimizer.state_dict();
    optimizer.load_state_dict(opt);
    try {
        model.load_state_dict(model_state);
    } catch (...) {
        optimizer.load_state_dict(before);
        throw;
    }
    state.source = path;
    return state;
}

int64_t TrainingState::count(const std::string& key, int64_t max) const {
    const double x = number(key);
    if (!(x >= 0 && x <= static_cast<double>(max) && x == std::floor(x)))
        throw std::runtime_error("checkpoint '" + source + "': metadata \"" + key + "\" = \"" + extra.at(key) +
                                 "\" is not a count from 0 to " + std::to_string(max));
    return static_cast<int64_t>(x);
}

double TrainingState::number(const std::string& key) const {
    const std::string where = "checkpoint '" + (source.empty() ? std::string("(not loaded)") : source) + "': ";
    const auto it = extra.find(key);
    if (it == extra.end()) throw std::runtime_error(where + "metadata \"" + key + "\" is missing");
    const std::string& text = it->second;
    char* end = nullptr;
    const double x = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !std::isfinite(x))
        throw std::runtime_error(where + "metadata \"" + key + "\" = \"" + text + "\" is not a finite number");
    return x;
}

}  // namespace attn
