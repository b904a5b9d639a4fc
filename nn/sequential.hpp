// Sequential: unary modules applied one after another, torch.nn.Sequential.
//
//   y = f_k(… f_2(f_1(x)))
//
//   Sequential mlp;
//   mlp.emplace<Linear>(4, 16, gen);
//   mlp.emplace<ReLU>();
//   mlp.emplace<Linear>(16, 3, gen);
//   Var y = mlp(x);                    // x B×4 → y B×3
//
// The layers are named "0", "1", … as in PyTorch, so the parameters are
// "0.weight", "0.bias", "2.weight", "2.bias", PyTorch's state_dict keys for
// the same nn.Sequential. Shapes: whatever the chain of layers makes of them.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/unary_module.hpp"

namespace attn {

class Sequential : public UnaryModule {
public:
    Sequential() = default;

    // Appends a layer, which the Sequential then owns; returns it.
    UnaryModule& push_back(std::unique_ptr<UnaryModule> layer);
    // Constructs a layer of type T in place: mlp.emplace<Linear>(4, 16, gen).
    template <class T, class... Args>
    T& emplace(Args&&... args) {
        auto layer = std::make_unique<T>(std::forward<Args>(args)...);
        T& ref = *layer;
        push_back(std::move(layer));
        return ref;
    }

    Var forward(const Var& x) override;
    // PyTorch's layout:
    //   Sequential(
    //     (0): Linear(in_features=4, out_features=16, bias=true)
    //     (1): ReLU()
    //   )
    std::string describe() const override;

    size_t size() const { return layers_.size(); }
    UnaryModule& operator[](size_t i) const { return *layers_.at(i); }

private:
    std::vector<std::unique_ptr<UnaryModule>> layers_;
};

}  // namespace attn
