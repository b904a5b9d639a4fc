#include "nn/module.hpp"

#include <stdexcept>
#include <unordered_map>

namespace attn {

void Module::check_name(const std::string& name) const {
    if (name.empty() || name.find('.') != std::string::npos)
        throw std::invalid_argument("Module: name \"" + name + "\" must be non-empty and contain no '.'");
    for (const auto& [n, _] : parameters_)
        if (n == name) throw std::invalid_argument("Module: \"" + name + "\" is already registered");
    for (const auto& [n, _] : buffers_)
        if (n == name) throw std::invalid_argument("Module: \"" + name + "\" is already registered");
    for (const auto& [n, _] : children_)
        if (n == name) throw std::invalid_argument("Module: \"" + name + "\" is already registered");
}

Var Module::register_parameter(const std::string& name, Tensor value) {
    check_name(name);
    Var v(std::move(value), /*requires_grad=*/true);
    parameters_.emplace_back(name, v);
    return v;
}

Tensor Module::register_buffer(const std::string& name, Tensor value) {
    check_name(name);
    buffers_.emplace_back(name, value);
    return value;
}

void Module::register_module(const std::string& name, Module& child) {
    check_name(name);
    if (&child == this) throw std::invalid_argument("Module: a module cannot contain itself");
    children_.emplace_back(name, &child);
}

// Depth first, own entries before the children's, as torch's state_dict().
void Module::collect(const std::string& prefix, std::vector<std::pair<std::string, Var>>* params,
                     StateDict* buffers) const {
    if (params)
        for (const auto& [name, v] : parameters_) params->emplace_back(prefix + name, v);
    if (buffers)
        for (const auto& [name, t] : buffers_) buffers->emplace_back(prefix + name, t);
    for (const auto& [name, child] : children_) child->collect(prefix + name + ".", params, buffers);
}

std::vector<std::pair<std::string, Var>> Module::named_parameters() const {
    std::vector<std::pair<std::string, Var>> out;
    collect("", &out, nullptr);
    return out;
}

std::vector<Var> Module::parameters() const {
    std::vector<Var> out;
    for (auto& [_, v] : named_parameters()) out.push_back(v);
    return out;
}

int64_t Module::num_parameters() const {
    int64_t n = 0;
    for (const auto& [_, v] : named_parameters()) n += v.numel();
    return n;
}

void Module::zero_grad() {
    for (auto& [_, v] : named_parameters()) v.zero_grad();
}

void Module::train(bool on) {
    training_ = on;
    for (auto& [_, child] : children_) child->train(on);
}

void Module::set_fast(bool on) {
    fast_ = on;
    on_set_fast(on);
    for (auto& [_, child] : children_) child->set_fast(on);
}

StateDict Module::state_dict() const {
    std::vector<std::pair<std::string, Var>> params;
    StateDict buffers;
    collect("", &params, &buffers);
    StateDict out;
    for (const auto& [name, v] : params) out.emplace_back(name, v.value().clone());
    for (const auto& [name, t] : buffers) out.emplace_back(name, t.clone());
    return out;
}

void Module::load_state_dict(const StateDict& state) {
    std::vector<std::pair<std::string, Var>> params;
    StateDict buffers;
    collect("", &params, &buffers);
    std::unordered_map<std::string, Tensor> targets;
    for (auto& [name, v] : params) targets.emplace(name, v.value());
    for (auto& [name, t] : buffers) targets.emplace(name, t);

    // Check everything first, so a bad checkpoint changes nothing.
    std::unordered_map<std::string, const Tensor*> given;
    for (const auto& [name, t] : state) {
        auto it = targets.find(name);
        if (it == targets.end())
            throw std::invalid_argument("load_state_dict: unexpected tensor \"" + name + "\" (" + t.shape().str() +
                                        "): the model has no parameter or buffer of that name");
        if (it->second.shape() != t.shape())
            throw std::invalid_argument("load_state_dict: " + name + " has shape " + t.shape().str() +
                                        " in the checkpoint but " + it->second.shape().str() + " in the model");
        given.emplace(name, &t);
    }
    for (const auto& [name, _] : targets)
        if (!given.count(name))
            throw std::invalid_argument("load_state_dict: missing tensor \"" + name + "\": the checkpoint has no value for it");
    for (auto& [name, t] : targets) t.copy_(*given.at(name));
}

}  // namespace attn
