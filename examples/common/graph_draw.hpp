// The autograd graph as a picture, as micrograd's draw_dot draws it, but
// without Graphviz: the graph behind a Var (autograd/graph.hpp) written as
// Graphviz DOT text, for those who have Graphviz, or as a self-contained SVG
// laid out by our own code.
//
//     Var x(Tensor::scalar(2), true), y(Tensor::scalar(3), true);
//     Var z = x * y + x;
//     write_graph_svg(z, "z.svg", {{"x", x}, {"y", y}});   // the graph, no gradients yet
//
//     GraphSnapshot graph(z, {{"x", x}, {"y", y}});        // before backward(), which
//     z.backward();                                         // unlinks the graph
//     write_graph_svg(graph, "z_grad.svg");                 // now with ‖∂z/∂·‖ in every box
//
// One box per node. An op node shows the op's name (`matmul`, `softmax`,
// `add`); a leaf shows its name (from GraphNames: {"x", x}, or a model's
// named_parameters()) or `leaf#3` (3: its index in GraphSnapshot::nodes()),
// and whether it requires a gradient. Every box shows the value's shape and,
// once a gradient has reached the node, its L2 norm ‖grad‖. An arrow goes
// from each input to the op that uses it; an op's inputs enter its box in
// argument order, left to right (top to bottom when the graph runs left to
// right): matmul(a, b) has a's arrow first.
//
// The SVG's layout (docs/autograd.md, "Drawing the graph"): layers by longest
// path, so that the output is the last layer and every node sits in the
// layer just before its earliest consumer (leaves included); long edges run
// through the layers between as points of their own, shared by the edges
// from one node; barycentre sweeps reduce crossings (the order with the
// fewest is kept); within a layer boxes keep their order and never overlap. Text is monospace and boxes
// are sized from it. Deterministic, and O((N + E) log N) for N nodes and E
// edges: a few thousand nodes take milliseconds.
#pragma once

#include <string>
#include <vector>

#include "autograd/graph.hpp"

namespace attn {

// The lines of text in node i's box (the DOT label and the SVG box alike):
//   title   the op (`mul`), `name = op` for a named op node, or the leaf's
//           name, else `leaf#i`
//   shape   `2×3`, `scalar`
//   leaf    `leaf, requires grad` or `leaf, no grad` (leaves only)
//   grad    `‖grad‖ = 6.403` (4 significant digits), when the node has one
std::vector<std::string> graph_node_lines(const GraphSnapshot& graph, int i);

struct GraphDrawOptions {
    // false: inputs at the top and the output at the bottom, which keeps a
    // deep graph narrow enough for a page; true: left to right, as
    // micrograd's draw_dot (DOT's rankdir=LR).
    bool left_to_right = false;
};

// Graphviz DOT: `digraph autograd { ... }`, nodes n0, n1, … in the order of
// GraphSnapshot::nodes(), edges `n0 -> n2` in consumer, then argument order.
// Render it with `dot -Tsvg graph.dot -o graph.svg`.
std::string graph_dot(const GraphSnapshot& graph, const GraphDrawOptions& options = {});
std::string graph_dot(const Var& root, const GraphNames& names = {}, const GraphDrawOptions& options = {});

// A standalone <svg> document. Each node is a <g class="node" id="nI">
// holding a <rect class="box">; each edge a <path class="edge"
// data-from="nI" data-to="nJ" data-arg="K"> with a <title> tooltip. A long
// edge starts from its input's trunk, <path class="trunk" data-from="nI">,
// drawn once for all the long edges of that input.
std::string graph_svg(const GraphSnapshot& graph, const GraphDrawOptions& options = {});
std::string graph_svg(const Var& root, const GraphNames& names = {}, const GraphDrawOptions& options = {});

// The same written to `path` (atomically: io/atomic_file.hpp). Throws
// std::runtime_error naming the path if it cannot be written.
void write_graph_dot(const GraphSnapshot& graph, const std::string& path, const GraphDrawOptions& options = {});
void write_graph_dot(const Var& root, const std::string& path, const GraphNames& names = {},
                     const GraphDrawOptions& options = {});
void write_graph_svg(const GraphSnapshot& graph, const std::string& path, const GraphDrawOptions& options = {});
void write_graph_svg(const Var& root, const std::string& path, const GraphNames& names = {},
                     const GraphDrawOptions& options = {});

}  // namespace attn
