// GraphSnapshot: the graph behind a Var as a list of nodes and links.
#include "autograd/graph.hpp"

#include <stdexcept>
#include <unordered_map>

namespace attn {

GraphSnapshot::GraphSnapshot(const Var& root, const GraphNames& names, bool retain_grads) {
    if (!root.defined()) throw std::invalid_argument("GraphSnapshot: the root Var is undefined");
    Node* root_node = root.node();
    if (root_node->freed)
        throw std::logic_error(std::string("GraphSnapshot: backward() has already freed the graph behind this '") +
                               root_node->op +
                               "' (it unlinks the nodes as it goes); take the snapshot before backward(): it "
                               "keeps the nodes, and their gradients for drawing afterwards");

    std::unordered_map<const Node*, std::string> name_of;
    for (const auto& [name, var] : names)
        if (var.defined()) name_of.emplace(var.node(), name);  // the first name wins

    // Depth-first search with an explicit stack, as in backward(): a node is
    // numbered when all of its inputs are, so inputs come first. A node is
    // marked (-1) when pushed so that a node reached twice is walked once.
    struct Frame {
        Var var;
        int next_input;
    };
    std::unordered_map<const Node*, int> index;
    std::vector<Frame> stack;
    index[root_node] = -1;
    stack.push_back({root, 0});
    while (!stack.empty()) {
        Frame& top = stack.back();
        Node* node = top.var.node();
        if (top.next_input < node->num_inputs()) {
            const std::shared_ptr<Node>& in = node->input_handle(top.next_input++);
            if (in && index.emplace(in.get(), -1).second) stack.push_back({Var(in), 0});  // `top` is not used after this
            continue;
        }
        Entry entry{std::move(top.var), "", {}};
        for (int i = 0; i < node->num_inputs(); ++i)
            if (const Node* in = node->input(i)) entry.inputs.push_back({index.at(in), i});
        num_edges_ += static_cast<int>(entry.inputs.size());
        if (auto it = name_of.find(node); it != name_of.end()) entry.name = it->second;
        if (retain_grads) entry.var.retain_grad();  // a no-op for leaves
        index[node] = static_cast<int>(nodes_.size());
        nodes_.push_back(std::move(entry));
        stack.pop_back();
    }
}

}  // namespace attn
