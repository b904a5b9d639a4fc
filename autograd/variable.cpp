// The engine: the topological order, the backward pass, freeing the graph.
#include "autograd/variable.hpp"

#include <atomic>
#include <sstream>
#include <stdexcept>

#include "autograd/record.hpp"
#include "tensor/ops.hpp"
#include "tensor/profile.hpp"

namespace attn {

namespace {

thread_local bool t_grad_enabled = true;
std::atomic<uint64_t> g_backward_passes{0};

[[noreturn]] void throw_freed(const Node& node) {
    throw std::runtime_error(std::string("backward: the graph through '") + node.op +
                             "' was already freed by an earlier backward(); a graph can be walked once, so compute "
                             "the output again");
}

// The search's stack, kept per thread between passes so that a training loop
// does not reallocate it every step.
struct SearchFrame {
    Node* node;
    int next_input;
};
thread_local std::vector<SearchFrame> t_search_stack;

// Every node reachable from `root` through inputs that want gradients, each
// after all of its inputs: the post-order of a depth-first search, run with an
// explicit stack so that a 100,000-node chain needs no deep recursion. A node
// is marked with the pass number when first reached, so nothing is visited
// twice and no set or map is needed.
void inputs_first_order(Node* root, uint64_t pass, std::vector<Node*>& order) {
    std::vector<SearchFrame>& stack = t_search_stack;
    stack.clear();
    root->visit = pass;
    stack.push_back({root, 0});
    while (!stack.empty()) {
        SearchFrame& top = stack.back();
        if (top.next_input < top.node->num_inputs()) {
            Node* in = top.node->input(top.next_input++);
            if (in && in->visit != pass) {
                if (in->freed) throw_freed(*in);
                in->visit = pass;
                stack.push_back({in, 0});  // `top` is not used after this
            }
        } else {
            order.push_back(top.node);
            stack.pop_back();
        }
    }
}

// The backward pass proper, from a root whose gradient is seeded with `seed`
// (∂L/∂root, a tensor we own).
void backpropagate(Node* root, Tensor seed) {
    if (root->freed) throw_freed(*root);
    const uint64_t pass = ++g_backward_passes;
    // The order's buffer is kept per thread between passes (moved out and back
    // in, so a pass started inside another one simply gets a fresh vector).
    thread_local std::vector<Node*> t_order_buffer;
    std::vector<Node*> order = std::move(t_order_buffer);
    order.clear();
    inputs_first_order(root, pass, order);

    // Every saved tensor is checked before any gradient is touched: a graph
    // refused for an in-place change leaves the gradients as they were.
    for (const Node* node : order)
        if (!node->is_leaf()) node->check_versions();

    if (root->grad.defined())
        add_(root->grad, seed);
    else
        root->grad = std::move(seed);

    // Reverse topological order: a node runs once every node that used it has
    // added its share to node->grad. A backward function may run ops; they
    // must not record (there is no double backward).
    {
        NoGradGuard no_grad;
        const ProfileBackwardPhase backward_phase;  // the profiler's "backward" column
        for (auto it = order.rbegin(); it != order.rend(); ++it) {
            Node* node = *it;
            if (node->is_leaf()) continue;
            if (node->grad.defined()) {  // undefined: no gradient reached it
                const ProfileScope scope(node->op);
                Backward bw(*node);
                node->run_backward(bw);
            }
            node->drop_backward();  // frees what forward saved, right away
            node->freed = true;
            if (!node->retains_grad) node->grad = Tensor();
        }
    }

    // Unlink the graph, inputs first: a node's inputs have already lost their
    // own inputs when it drops them, so no destructor cascades down the chain.
    // (Nodes still alive are kept alive by a later node in `order` or by the
    // caller's handle on the root.)
    for (Node* node : order) node->clear_inputs();
    order.clear();
    t_order_buffer = std::move(order);
}

// Inputs that would be destroyed with their own inputs still attached go
// here, and are destroyed by a loop instead of by recursion.
thread_local std::vector<std::shared_ptr<Node>>* t_graveyard = nullptr;

}  // namespace

// ---- Node ------------------------------------------------------------------

Node::~Node() { clear_inputs(); }

void Node::set_inputs(const Var* const* inputs, int n) {
    clear_inputs();
    if (n > kInlineInputs) {
        more_inputs_.resize(static_cast<size_t>(n - kInlineInputs));
        more_versions_.resize(static_cast<size_t>(n - kInlineInputs));
    }
    for (int i = 0; i < n; ++i)
        if (inputs[i]->requires_grad()) {
            slot(i) = inputs[i]->node_;
            const uint64_t v = slot(i)->value.save_version();
            if (i < kInlineInputs)
                inline_versions_[i] = v;
            else
                more_versions_[static_cast<size_t>(i - kInlineInputs)] = v;
        }
    output_version_ = value.save_version();
    num_inputs_ = n;
}

// PyTorch's rule ("one of the variables needed for gradient computation has
// been modified by an inplace operation"), for the tensors a graph links: the
// op's output and the inputs that want gradients. Inputs that do not (a
// constant Var, a mask Tensor) are not linked, and not checked.
void Node::check_versions() const {
    const auto refuse = [this](const std::string& which, uint64_t now, uint64_t saved) {
        throw std::logic_error(std::string(op) + "'s " + which + " was changed in place after the forward (version " +
                               std::to_string(now) + ", saved at " + std::to_string(saved) +
                               "): its backward would read the changed values and give a wrong gradient; change a "
                               "clone(), or change it after backward() (a non-const data(), [] or at() counts as a "
                               "change: read through a const Tensor& or const_data())");
    };
    if (value.version() != output_version_) refuse("output", value.version(), output_version_);
    for (int i = 0; i < num_inputs_; ++i) {
        const Node* in = input(i);
        if (!in) continue;
        const uint64_t saved =
            i < kInlineInputs ? inline_versions_[i] : more_versions_[static_cast<size_t>(i - kInlineInputs)];
        if (in->value.version() != saved) refuse("input " + std::to_string(i), in->value.version(), saved);
    }
}

void Node::clear_inputs() {
    if (num_inputs_ == 0) return;
    std::vector<std::shared_ptr<Node>> graveyard;
    const bool owner = t_graveyard == nullptr;
    if (owner) t_graveyard = &graveyard;
    for (int i = 0; i < num_inputs_; ++i) {
        std::shared_ptr<Node>& in = slot(i);
        if (in && in.use_count() == 1 && in->num_inputs_ > 0)
            t_graveyard->push_back(std::move(in));  // would cascade: defer
        else
            in.reset();  // shared, or has no inputs: dropping it cannot recurse
    }
    more_inputs_.clear();
    num_inputs_ = 0;
    if (owner) {
        while (!graveyard.empty()) {
            std::shared_ptr<Node> node = std::move(graveyard.back());
            graveyard.pop_back();
            node.reset();  // its destructor moves its own inputs into the graveyard
        }
        t_graveyard = nullptr;
    }
}

// ---- Backward --------------------------------------------------------------

void Backward::add_gradient(int i, Tensor g, bool temporary) {
    Node* in = node_.input(i);
    if (!in) return;
    const Shape& shape = in->value.shape();
    Tensor summed = g.shape() == shape ? g : sum_to(g, shape);
    take_back(in);
    if (in->grad.defined()) {
        add_(in->grad, summed);
        return;
    }
    // Keep `summed` as the buffer only if nobody else can see its storage.
    const bool made_by_sum_to = !summed.shares_storage_with(g);
    const bool ours = made_by_sum_to || (temporary && !g.shares_storage_with(node_.grad));
    if (!ours && can_hand_on(summed)) {
        in->grad = std::move(summed);  // shared with node_.grad until the engine drops that
        handed_to_ = in;
        return;
    }
    in->grad = ours ? std::move(summed) : summed.clone();
}

bool Backward::can_hand_on(const Tensor& g) const {
    // Once only (two inputs must not share a buffer), never a gradient the
    // node keeps, and only a view of the whole buffer: a part of it would
    // leave the rest to be copied by someone else anyway.
    const Tensor& own = node_.grad;
    if (handed_to_ || node_.retains_grad || !g.shares_storage_with(own)) return false;
    return g.data() == own.data() && g.numel() == own.numel();
}

void Backward::take_back(Node* in) {
    if (in != handed_to_) return;
    in->grad = in->grad.clone();
    handed_to_ = nullptr;
}

Tensor& Backward::grad_buffer(int i) {
    Node* in = node_.input(i);
    take_back(in);
    if (!in->grad.defined()) in->grad = Tensor::zeros(in->value.shape());
    return in->grad;
}

namespace detail {

bool any_requires_grad(const Var* const* inputs, int n) {
    if (!t_grad_enabled) return false;
    for (int i = 0; i < n; ++i)
        if (inputs[i]->requires_grad()) return true;
    return false;
}

void throw_too_many_inputs(const char* op) {
    throw std::invalid_argument(std::string(op) + ": record() takes at most 8 inputs in braces; pass a std::vector<Var>");
}

}  // namespace detail

// ---- Var -------------------------------------------------------------------

Var::Var(Tensor value, bool requires_grad) {
    if (!value.defined()) throw std::invalid_argument("Var: the value tensor is undefined");
    node_ = std::make_shared<Node>();
    node_->value = std::move(value);
    node_->requires_grad = requires_grad;
}

void Var::throw_undefined() {
    throw std::logic_error("Var: this variable is undefined (default-constructed)");
}

void Var::set_requires_grad(bool on) {
    Node* node = checked();
    if (!node->is_leaf())
        throw std::logic_error(std::string("set_requires_grad: only a leaf's flag can be set; this variable was "
                                           "computed by '") +
                               node->op + "' (use detach() for a leaf copy)");
    node->requires_grad = on;
}

void Var::backward() {
    Node* node = checked();
    if (!node->requires_grad)
        throw std::logic_error(
            "backward: this variable does not require a gradient (no input of the ops that computed it has "
            "requires_grad = true, or it was computed under NoGradGuard)");
    if (node->value.numel() != 1)
        throw std::invalid_argument("backward: the output has shape " + node->value.shape().str() +
                                    "; backward() without an upstream gradient needs a one-element output such "
                                    "as a loss; pass ∂L/∂output as backward(grad)");
    backpropagate(node, Tensor::ones(node->value.shape()));
}

void Var::backward(const Tensor& upstream) {
    Node* node = checked();
    if (!node->requires_grad)
        throw std::logic_error(
            "backward: this variable does not require a gradient (no input of the ops that computed it has "
            "requires_grad = true, or it was computed under NoGradGuard)");
    if (!upstream.defined() || upstream.shape() != node->value.shape())
        throw std::invalid_argument("backward: the upstream gradient has shape " +
                                    (upstream.defined() ? upstream.shape().str() : std::string("undefined")) +
                                    " but the output has shape " + node->value.shape().str());
    backpropagate(node, upstream.clone());
}

Var Var::detach() const { return Var(checked()->value, false); }

void Var::zero_grad() {
    Node* node = checked();
    if (node->grad.defined()) node->grad.fill_(0);
}

void Var::retain_grad() {
    Node* node = checked();
    if (!node->is_leaf()) node->retains_grad = true;
}

std::string Var::str() const {
    if (!node_) return "Var(undefined)";
    std::ostringstream os;
    os << "Var(" << node_->value.str();
    if (node_->requires_grad) os << ", requires_grad";
    if (node_->op) os << ", op=" << node_->op;
    os << ')';
    return os.str();
}

void zero_grad(const std::vector<Var>& vars) {
    for (Var v : vars) v.zero_grad();
}

// ---- gradient mode ---------------------------------------------------------

bool grad_enabled() { return t_grad_enabled; }

NoGradGuard::NoGradGuard() : previous_(t_grad_enabled) { t_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { t_grad_enabled = previous_; }

}  // namespace attn
