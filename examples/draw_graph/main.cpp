// draw_graph: draws the autograd graphs shown in docs/tour.md, after
// backward(), so that every box carries its gradient's norm:
//
//   graph_xy          z = x*y + x with x = 2, y = 3 (the tour's step 4)
//   graph_attention   scaled dot-product attention, one query over two keys
//                     (step 7), loss = Σ output²
//   graph_multi_head  multi-head self-attention (2 heads, d_model = 4, with
//                     biases) over 3 positions, named parameters, loss = sum
//
// each as .svg (our own layout, examples/common/graph_draw.hpp) and .dot
// (for Graphviz). `make docs-graphs` runs it into docs/images/.
//
//   usage: draw_graph [OUT_DIR]        (default: docs/images)
#include <cstdio>
#include <exception>
#include <string>

#include "attention/multi_head.hpp"
#include "attention/scaled_dot_product.hpp"
#include "autograd/ops.hpp"
#include "examples/common/graph_draw.hpp"

using namespace attn;

namespace {

// The snapshot is taken before backward(), which unlinks the graph.
void draw(Var loss, const GraphNames& names, const std::string& path_stem) {
    GraphSnapshot graph(loss, names);
    loss.backward();
    write_graph_svg(graph, path_stem + ".svg");
    write_graph_dot(graph, path_stem + ".dot");
    std::printf("%s.svg, %s.dot: %d nodes, %d edges\n", path_stem.c_str(), path_stem.c_str(), graph.size(),
                graph.num_edges());
}

}  // namespace

int main(int argc, char** argv) {
    const std::string out = argc > 1 ? argv[1] : "docs/images";
    try {
        // Step 4 of the tour: z = x*y + x.
        Var x(Tensor::scalar(2), /*requires_grad=*/true), y(Tensor::scalar(3), true);
        draw(x * y + x, {{"x", x}, {"y", y}}, out + "/graph_xy");

        // Step 7: Q = [[1, 1]], K = [[1, 1], [0, 0]], V = I, as parameters here.
        Var Q(Tensor::from({1, 1}, Shape{1, 1, 2}), true);
        Var K(Tensor::from({1, 1, 0, 0}, Shape{1, 2, 2}), true);
        Var V(Tensor::from({1, 0, 0, 1}, Shape{1, 2, 2}), true);
        const AttentionOutput att = scaled_dot_product_attention(Q, K, V);
        draw(sum(square(att.output)), {{"Q", Q}, {"K", K}, {"V", V}}, out + "/graph_attention");

        // One multi-head self-attention call, its parameters named as in its state_dict.
        Generator gen(1);
        MultiHeadAttention mha(/*d_model=*/4, /*heads=*/2, gen, MultiHeadAttention::Options{.bias = true});
        Var X(Tensor::normal(Shape{1, 3, 4}, 0, 1, gen), true);
        GraphNames names = mha.named_parameters();
        names.push_back({"X", X});
        draw(sum(mha.forward(X, X, X).output), names, out + "/graph_multi_head");
    } catch (const std::exception& e) {
        std::fprintf(stderr, "draw_graph: %s\n", e.what());
        return 1;
    }
    return 0;
}
