// The autograd engine: variables, the graph they record, and backward().
//
// A Var is a cheap handle (one shared_ptr) to a Node. A Node holds a tensor
// value, its gradient ∂L/∂value (allocated on first use), whether it wants a
// gradient, and — when an op computed it from inputs that want gradients — the
// op's name, links to those inputs and the op's backward function.
//
//     Var x(Tensor::from({1, 2, 3}), /*requires_grad=*/true);   // a leaf
//     Var y = sum(x * x);                                         // two op nodes
//     y.backward();                                               // x.grad() = 2x
//
// backward() visits every node reachable from the output once, in reverse
// topological order (an iterative depth-first search: unrolled RNN graphs are
// far too deep for recursion), calls each op's backward function, which adds
// (+=) its contribution to its inputs' gradients, and frees the graph as it
// goes. Leaves keep their gradients (they accumulate over backward passes until
// zero_grad()); intermediate nodes drop theirs unless retain_grad() was called,
// as in PyTorch. docs/autograd.md walks through it.
//
// Ops live in autograd/ops.hpp; autograd/record.hpp is how an op is recorded;
// autograd/graph.hpp lists the graph behind a Var as data (to draw it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tensor/tensor.hpp"

namespace attn {

class Backward;
class Var;

// One node of the graph. Leaves are plain Nodes; nodes made by ops are
// OpNode<F> (autograd/record.hpp), which add the backward function F.
class Node {
public:
    Node() = default;
    Node(const Node&) = delete;
    Node& operator=(const Node&) = delete;
    // Drops the inputs without recursing through a long chain of nodes (see
    // variable.cpp): the last handle of a 100,000-node graph may drop here.
    virtual ~Node();

    Tensor value;
    Tensor grad;                 // ∂L/∂value; undefined until backward reaches it
    bool requires_grad = false;  // a leaf's choice; always true for an op node
    bool retains_grad = false;   // an op node keeps `grad` after backward
    const char* op = nullptr;    // the op that computed `value`; nullptr for a leaf
    bool freed = false;          // backward already ran through this node
    uint64_t visit = 0;          // the last backward pass that reached this node

    bool is_leaf() const { return op == nullptr; }

    // The inputs that want gradients, in the op's argument order; input(i) is
    // nullptr for an argument that does not (a constant, an index tensor).
    int num_inputs() const { return num_inputs_; }
    Node* input(int i) const { return slot(i).get(); }
    // The same as a shared handle, for code that must keep input i alive
    // after backward() unlinks the graph (GraphSnapshot, autograd/graph.hpp).
    const std::shared_ptr<Node>& input_handle(int i) const { return slot(i); }
    // Used by record(), after `value` is set: links the inputs, and saves the
    // versions of the output's and the linked inputs' storage (below).
    void set_inputs(const Var* const* inputs, int n);
    void clear_inputs();

    // Throws std::logic_error if the output's or a linked input's storage was
    // changed in place since the op was recorded (its version moved: see
    // Tensor::version()): the backward function would read the changed values
    // and compute a wrong gradient. backward() calls it before run_backward.
    void check_versions() const;

    // Calls the op's backward function; a leaf has none.
    virtual void run_backward(Backward&) {}
    // Frees the backward function and what it saved (tensors from forward).
    virtual void drop_backward() {}

private:
    static constexpr int kInlineInputs = 3;  // most ops have 1–3 inputs: no vector
    const std::shared_ptr<Node>& slot(int i) const {
        return i < kInlineInputs ? inline_inputs_[i] : more_inputs_[static_cast<size_t>(i - kInlineInputs)];
    }
    std::shared_ptr<Node>& slot(int i) {
        return i < kInlineInputs ? inline_inputs_[i] : more_inputs_[static_cast<size_t>(i - kInlineInputs)];
    }

    std::shared_ptr<Node> inline_inputs_[kInlineInputs];
    std::vector<std::shared_ptr<Node>> more_inputs_;  // concat and stack of many parts
    int num_inputs_ = 0;
    // The storage versions when the op was recorded: the output's, then the
    // first inputs' (inputs past kInlineInputs, concat's and stack's many
    // parts, go to more_versions_).
    uint64_t output_version_ = 0;
    uint64_t inline_versions_[kInlineInputs] = {};
    std::vector<uint64_t> more_versions_;
};

// A handle to a node. Copying a Var shares the node (like copying a
// torch.Tensor); there is deliberately no implicit conversion from Tensor,
// because the ops of autograd/ops.hpp share their names with tensor/ops.hpp.
class Var {
public:
    Var() = default;  // undefined: defined() is false
    // A leaf. A parameter is a leaf with requires_grad = true.
    explicit Var(Tensor value, bool requires_grad = false);
    explicit Var(std::shared_ptr<Node> node) : node_(std::move(node)) {}

    bool defined() const { return node_ != nullptr; }
    Tensor& value() { return checked()->value; }
    const Tensor& value() const { return checked()->value; }
    // ∂L/∂value after backward(): a handle sharing the gradient buffer, or an
    // undefined Tensor if no gradient has reached this variable.
    Tensor grad() const { return checked()->grad; }
    bool requires_grad() const { return checked()->requires_grad; }
    void set_requires_grad(bool on);  // leaves only
    bool is_leaf() const { return checked()->is_leaf(); }
    const char* op() const { return checked()->op; }  // nullptr for a leaf
    Node* node() const { return node_.get(); }

    const Shape& shape() const { return value().shape(); }
    int rank() const { return value().rank(); }
    int64_t numel() const { return value().numel(); }
    int64_t size(int axis) const { return value().size(axis); }
    real item() const { return value().item(); }

    // Backpropagates from this variable: from a one-element output with
    // ∂L/∂L = 1, or from any output with the given ∂L/∂output (same shape).
    // Walks the graph once and frees it: a second backward through the same
    // graph throws.
    void backward();
    void backward(const Tensor& upstream);

    // A new leaf sharing this value's storage, cut from the graph.
    Var detach() const;
    // Sets the gradient to zero, keeping its buffer (no-op if there is none).
    void zero_grad();
    // Keeps this op node's gradient after backward (leaves always keep theirs).
    void retain_grad();

    std::string str() const;

private:
    friend class Node;  // set_inputs() links to the inputs' nodes
    Node* checked() const {
        if (!node_) throw_undefined();
        return node_.get();
    }
    [[noreturn]] static void throw_undefined();

    std::shared_ptr<Node> node_;
};

// Zeroes the gradients of a list of variables (e.g. a model's parameters).
void zero_grad(const std::vector<Var>& vars);

// ---- gradient mode ---------------------------------------------------------
// While a NoGradGuard is alive, ops on this thread record nothing: results are
// plain leaves with requires_grad = false. For evaluation and for updates.
bool grad_enabled();

class NoGradGuard {
public:
    NoGradGuard();
    ~NoGradGuard();
    NoGradGuard(const NoGradGuard&) = delete;
    NoGradGuard& operator=(const NoGradGuard&) = delete;

private:
    bool previous_;
};

}  // namespace attn
