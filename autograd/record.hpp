// How an op is recorded: the one thing to read before writing a new op.
//
// An op computes its value with the tensor kernels, then calls record() with
// its name, the value, its inputs and a backward function written right below
// the forward. The backward function captures, by name, what it needs from
// forward, and adds each input's gradient with bw.accumulate():
//
//     // z = a ⊙ b      ∂L/∂a = ∂L/∂z ⊙ b      ∂L/∂b = ∂L/∂z ⊙ a
//     Var mul(const Var& a, const Var& b) {
//         return record("mul", mul(a.value(), b.value()), {a, b},
//                       [a = a.value(), b = b.value()](Backward& bw) {
//                           if (bw.needs(0)) bw.accumulate(0, mul(bw.grad(), b));
//                           if (bw.needs(1)) bw.accumulate(1, mul(bw.grad(), a));
//                       });
//     }
//
// When no input wants a gradient, or under NoGradGuard, record() returns a
// plain leaf and the backward function is dropped unused.
//
// The backward function is stored inside the node itself (OpNode<F>): one
// allocation per op for node and closure together, no std::function.
#pragma once

#include <functional>
#include <initializer_list>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "autograd/variable.hpp"

namespace attn {

// What a backward function sees: the gradient of the op's output, and a way to
// add to the gradients of its inputs (numbered in the op's argument order).
class Backward {
public:
    explicit Backward(Node& node) : node_(node) {}

    const Tensor& grad() const { return node_.grad; }     // ∂L/∂output
    const Tensor& output() const { return node_.value; }  // the op's result
    // Does input i want a gradient? Skip computing those that do not.
    bool needs(int i) const { return node_.input(i) != nullptr; }
    const Shape& input_shape(int i) const { return node_.input(i)->value.shape(); }
    // Has input i received a gradient yet (in this pass or an earlier one)?
    bool has_grad(int i) const { return node_.input(i)->grad.defined(); }

    // ∂L/∂input_i += g. A g of a broadcast shape is summed back to the input's
    // shape (sum_to): broadcasting ops need nothing more. The first gradient an
    // input receives becomes its buffer: a temporary (an rvalue just computed)
    // is kept as it is; grad() itself, or a view of all of it (reshape's,
    // add's), is handed on to one input when this node will drop its gradient
    // after this backward anyway (no retain_grad()); anything else is copied
    // first. So no two buffers ever share storage once this backward returns,
    // and a chain of views and additions passes one buffer down, uncopied.
    void accumulate(int i, Tensor&& g) { add_gradient(i, std::move(g), true); }
    void accumulate(int i, const Tensor& g) { add_gradient(i, g, false); }
    // Input i's gradient buffer, zero-filled on first use, for kernels that add
    // into it in place (matmul_into with beta = 1, scatter loops). Only for an
    // input that needs(i).
    Tensor& grad_buffer(int i);

private:
    void add_gradient(int i, Tensor g, bool temporary);
    // Whether g, a view of all of grad(), may become an input's buffer.
    bool can_hand_on(const Tensor& g) const;
    // The input given grad()'s storage, if any: before anything is added to
    // its buffer within this backward, it gets a copy of its own, so grad()
    // reads the same values until the backward function returns.
    void take_back(Node* in);
    Node& node_;
    Node* handed_to_ = nullptr;
};

// A node made by an op: a Node plus its backward function F.
template <class F>
class OpNode final : public Node {
public:
    explicit OpNode(F&& fn) : fn_(std::move(fn)) {}
    explicit OpNode(const F& fn) : fn_(fn) {}
    void run_backward(Backward& bw) override { (*fn_)(bw); }
    void drop_backward() override { fn_.reset(); }

private:
    std::optional<F> fn_;
};

namespace detail {
bool any_requires_grad(const Var* const* inputs, int n);
[[noreturn]] void throw_too_many_inputs(const char* op);
}  // namespace detail

// Records `value` as the result of op `op` applied to `inputs`, with backward
// function `backward(Backward&)`. Returns the result as a Var.
template <class F>
Var record(const char* op, Tensor value, std::initializer_list<std::reference_wrapper<const Var>> inputs,
           F&& backward) {
    const Var* ptrs[8];  // ops listing their inputs in braces have a handful
    if (inputs.size() > 8) detail::throw_too_many_inputs(op);
    int n = 0;
    for (const Var& v : inputs) ptrs[n++] = &v;
    if (!detail::any_requires_grad(ptrs, n)) return Var(std::move(value));
    auto node = std::make_shared<OpNode<std::decay_t<F>>>(std::forward<F>(backward));
    node->op = op;
    node->value = std::move(value);
    node->requires_grad = true;
    node->set_inputs(ptrs, n);
    return Var(std::shared_ptr<Node>(std::move(node)));
}

// The same for ops with any number of inputs (concat, stack).
template <class F>
Var record(const char* op, Tensor value, const std::vector<Var>& inputs, F&& backward) {
    std::vector<const Var*> ptrs;
    ptrs.reserve(inputs.size());
    for (const Var& v : inputs) ptrs.push_back(&v);
    const int n = static_cast<int>(ptrs.size());
    if (!detail::any_requires_grad(ptrs.data(), n)) return Var(std::move(value));
    auto node = std::make_shared<OpNode<std::decay_t<F>>>(std::forward<F>(backward));
    node->op = op;
    node->value = std::move(value);
    node->requires_grad = true;
    node->set_inputs(ptrs.data(), n);
    return Var(std::shared_ptr<Node>(std::move(node)));
}

}  // namespace attn
