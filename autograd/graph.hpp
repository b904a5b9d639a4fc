// The graph behind a Var, as data: every node its value was computed from,
// each listed after its inputs, and which node feeds which argument of which
// op. examples/common/graph_draw.hpp draws it (Graphviz DOT, or an SVG).
//
//     Var x(Tensor::scalar(2), true), y(Tensor::scalar(3), true);
//     Var z = x * y + x;
//     GraphSnapshot graph(z, {{"x", x}, {"y", y}});  // x, y, mul, add; 4 edges
//     z.backward();                                  // unlinks the graph, but
//     graph.nodes()[0].var.grad();                   // the snapshot still has x: 4
//
// Why a snapshot: backward() frees the graph as it walks it — it cuts the
// links between nodes and drops the gradients of intermediate nodes. A
// snapshot taken before backward() holds every node (a Var each) and their
// links, and by default asks each op node to keep its gradient (as
// Var::retain_grad() does), so that after backward() every node of the
// picture can show ∂L/∂value.
//
// Only inputs that want gradients are linked in the graph (Node::input), so a
// constant argument — a mask, an index tensor, the scale of `x * 0.5` — has
// no node of its own.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "autograd/variable.hpp"

namespace attn {

// Names for nodes, e.g. {{"x", x}, {"y", y}}, or a model's
// named_parameters() ("encoder.rnn.weight_ih_l0"). A Var carries no name of
// its own; the first name given to a node is the one kept.
using GraphNames = std::vector<std::pair<std::string, Var>>;

class GraphSnapshot {
public:
    // One linked input of an op: the index of the input's node in nodes(),
    // and which argument of the op it is (0 for the first). `x * x` has two
    // inputs, both the node of x, arguments 0 and 1.
    struct Input {
        int node;
        int arg;
    };
    struct Entry {
        Var var;                    // the node itself, kept alive
        std::string name;           // from GraphNames, or ""
        std::vector<Input> inputs;  // in argument order; empty for a leaf
    };

    // Walks the graph from `root` (an iterative depth-first search: deep
    // unrolled graphs do not overflow the stack). Throws std::invalid_argument
    // for an undefined root, and std::logic_error for a root whose graph
    // backward() has already freed (take the snapshot before backward()).
    explicit GraphSnapshot(const Var& root, const GraphNames& names = {}, bool retain_grads = true);

    // Every node, each after all of its inputs (the post-order of the search,
    // inputs visited in argument order); the root is the last.
    const std::vector<Entry>& nodes() const { return nodes_; }
    int size() const { return static_cast<int>(nodes_.size()); }
    // The number of input links (an input used twice counts twice).
    int num_edges() const { return num_edges_; }
    const Var& root() const { return nodes_.back().var; }

private:
    std::vector<Entry> nodes_;
    int num_edges_ = 0;
};

}  // namespace attn
