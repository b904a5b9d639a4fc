#include "nn/sequential.hpp"

#include <stdexcept>

namespace attn {

UnaryModule& Sequential::push_back(std::unique_ptr<UnaryModule> layer) {
    if (!layer) throw std::invalid_argument("Sequential: cannot add a null layer");
    register_module(std::to_string(layers_.size()), *layer);
    layer->train(is_training());
    layers_.push_back(std::move(layer));
    return *layers_.back();
}

Var Sequential::forward(const Var& x) {
    Var y = x;
    for (auto& layer : layers_) y = layer->forward(y);
    return y;
}

std::string Sequential::describe() const {
    std::string s = "Sequential(\n";
    for (size_t i = 0; i < layers_.size(); ++i) {
        // Indent nested lines (a Sequential inside a Sequential) by two spaces.
        std::string inner = layers_[i]->describe(), indented;
        for (char c : inner) {
            indented += c;
            if (c == '\n') indented += "  ";
        }
        s += "  (" + std::to_string(i) + "): " + indented + "\n";
    }
    return s + ")";
}

}  // namespace attn
