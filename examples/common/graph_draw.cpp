// Drawing the autograd graph: DOT text, and an SVG with a layered layout of
// our own (Sugiyama's scheme, kept small: layers, ordering, coordinates).
#include "examples/common/graph_draw.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <utility>

#include "examples/common/svg.hpp"
#include "io/atomic_file.hpp"

namespace attn {

namespace {

// Monospace text, so that a box's width follows from its number of characters.
constexpr double kFontSize = 12;
constexpr double kCharWidth = 0.6 * kFontSize;  // DejaVu Sans Mono, Menlo, Consolas: 0.6 em
constexpr double kLineHeight = 15;
constexpr double kPadX = 8, kPadY = 6;   // inside a box
constexpr double kColumnGap = 64;        // between layers left to right, where edges bend
constexpr double kLayerGap = 44;         // between layers top to bottom
constexpr double kRowGap = 14;           // between boxes (or edge points) of a layer
constexpr double kMargin = 16;
constexpr double kHeaderHeight = 34;     // the title line and the legend
constexpr double kArrowRoom = 10;        // the straight end of an edge, for its arrowhead

const char* const kOpFill = "#dbeafe";
const char* const kOpStroke = "#2563eb";
const char* const kLeafFill = "#dcfce7";
const char* const kLeafStroke = "#16a34a";
const char* const kConstFill = "#f3f4f6";
const char* const kConstStroke = "#6b7280";
const char* const kRootStroke = "#d97706";

// A coordinate with at most two decimals: "12.5", "3". (std::to_chars: a
// picture of thousands of nodes writes hundreds of thousands of these. On
// macOS before 13.3 the library has no to_chars for double, as io/json.cpp
// says; snprintf writes '.' there too, in the "C" locale programs start in.)
std::string num(double v) {
    char buf[64];
#if defined(__APPLE__) && defined(__ENVIRONMENT_MAC_OS_X_VERSION_MIN_REQUIRED__) && \
    __ENVIRONMENT_MAC_OS_X_VERSION_MIN_REQUIRED__ < 130300
    const int n = std::snprintf(buf, sizeof buf, "%.2f", v);
    std::string s(buf, n > 0 && n < int(sizeof buf) ? static_cast<size_t>(n) : 0);
#else
    const auto [end, error] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 2);
    std::string s(buf, error == std::errc() ? end : buf);
#endif
    while (!s.empty() && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s.empty() || s == "-0" ? "0" : s;
}

// Characters, not bytes, of a UTF-8 string (×, ‖ take one column each).
double text_width(const std::string& s) {
    double n = 0;
    for (unsigned char c : s) n += (c & 0xc0) != 0x80;
    return n * kCharWidth;
}

// ‖g‖₂ = √(Σ g²), accumulated in double.
double l2_norm(const Tensor& g) {
    double sum = 0;
    for (int64_t i = 0; i < g.numel(); ++i) sum += double(g[i]) * double(g[i]);
    return std::sqrt(sum);
}

std::string fill_of(const Var& v) { return v.is_leaf() ? (v.requires_grad() ? kLeafFill : kConstFill) : kOpFill; }
std::string stroke_of(const Var& v) {
    return v.is_leaf() ? (v.requires_grad() ? kLeafStroke : kConstStroke) : kOpStroke;
}

// A string inside DOT's double quotes: \ and " escaped, a line break as \n.
std::string dot_quoted(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '\\' || c == '"') out += '\\';
        if (c == '\n') out += "\\n";
        else out += c;
    }
    return out + "\"";
}

// ---- layout ----------------------------------------------------------------------
//
// Layers run along the flow (left to right, or top to bottom); within a layer
// items are stacked across it. Everything below works in these two axes,
// "flow" and "stack", and only the SVG output turns them into x and y.

// Where an edge meets an item: an offset from the item's centre along the
// stack axis, here and at the item at the other end.
struct Link {
    int item;
    double here, there;
};

// One thing placed in a layer: a node's box, or the point where a long edge
// (spanning several layers) crosses a layer. All long edges from one node
// share these points: a trunk that the edges leave one by one.
struct Item {
    int node = 0;        // the node's index; for a trunk point, the source node's
    bool trunk = false;  // a trunk point: no box, size 0×0
    int layer = 0;
    double span = 0;       // the box's extent along the stack axis
    double thickness = 0;  // and along the flow axis
    double start = 0;      // where the box starts along the stack axis
    double rank = 0;       // the position within the layer, for ordering
    std::vector<Link> before{}, after{};  // linked items in the previous and next layer
    double centre() const { return start + span / 2; }
};

struct Layout {
    bool left_to_right = false;
    std::vector<Item> items;                // the nodes' boxes first: item i is node i
    std::vector<std::vector<int>> layers;   // items by layer, in stacking order
    std::vector<int> trunk_start;           // node → the item of its trunk's first point, or -1
    std::vector<double> layer_start, layer_thickness;
    double flow_extent = 0, stack_min = 0, stack_extent = 0;

    // The item through which an edge from node u reaches layer c + 1: the
    // node itself next door, else its trunk point in layer c (if it has one).
    int feeder(int u, int c) const {
        const int cu = items[u].layer;
        if (c == cu || trunk_start[u] < 0) return u;
        return trunk_start[u] + (c - cu - 1);
    }
    // A box's near and far side along the flow axis (centred in its layer).
    double near_side(int i) const {
        const Item& it = items[i];
        return layer_start[it.layer] + (layer_thickness[it.layer] - it.thickness) / 2;
    }
    double far_side(int i) const { return near_side(i) + items[i].thickness; }
    double layer_end(int c) const { return layer_start[c] + layer_thickness[c]; }
    // A point (flow, stack) in the picture's x and y, and as "x,y".
    std::pair<double, double> at(double flow, double stack) const {
        const double f = flow + (left_to_right ? kMargin : kMargin + kHeaderHeight);
        const double s = stack - stack_min + (left_to_right ? kMargin + kHeaderHeight : kMargin);
        return left_to_right ? std::pair{f, s} : std::pair{s, f};
    }
    std::string point(double flow, double stack) const {
        const auto [x, y] = at(flow, stack);
        return num(x) + "," + num(y);
    }
    // The picture's size.
    std::pair<double, double> size() const {
        const double f = flow_extent + 2 * kMargin, s = stack_extent + 2 * kMargin;
        return left_to_right ? std::pair{f, s + kHeaderHeight} : std::pair{s, f + kHeaderHeight};
    }
};

// Layer of each node: the longest path from it to the root, counted from the
// end. Nodes come inputs first, so one pass from the root back suffices.
std::vector<int> layers_by_longest_path(const GraphSnapshot& graph) {
    const auto& nodes = graph.nodes();
    std::vector<int> depth(nodes.size(), 0);
    for (int v = graph.size() - 1; v >= 0; --v)
        for (const auto& in : nodes[v].inputs) depth[in.node] = std::max(depth[in.node], depth[v] + 1);
    const int deepest = *std::max_element(depth.begin(), depth.end());
    for (int& d : depth) d = deepest - d;
    return depth;
}

// The offset of argument slot k of m on a box of extent `span`: slot 0 first.
double port_offset(double span, size_t k, size_t m) {
    return span * static_cast<double>(k + 1) / static_cast<double>(m + 1) - span / 2;
}

// Orders a layer by the mean rank of each item's neighbours on one side (the
// barycentre heuristic; ports shift a neighbour by a fraction of a rank); an
// item without neighbours there keeps its rank.
void order_by_barycentre(Layout& L, std::vector<int>& layer, bool use_before) {
    for (int it : layer) {
        const Item& item = L.items[it];
        const std::vector<Link>& links = use_before ? item.before : item.after;
        if (links.empty()) continue;
        double sum = 0;
        for (const Link& l : links) {
            const Item& other = L.items[l.item];
            sum += other.rank + l.there / (other.span + kRowGap) - l.here / (item.span + kRowGap);
        }
        L.items[it].rank = sum / static_cast<double>(links.size());
    }
    std::stable_sort(layer.begin(), layer.end(), [&](int a, int b) { return L.items[a].rank < L.items[b].rank; });
    for (size_t k = 0; k < layer.size(); ++k) L.items[layer[k]].rank = static_cast<double>(k);
}

// Starts for a layer's items, in their order, as close as possible (least
// squares) to `wanted` while each keeps kRowGap from the one before:
// isotonic regression by pooling adjacent violators, O(n).
void place_layer(Layout& L, const std::vector<int>& layer, const std::vector<double>& wanted) {
    struct Block {
        double sum;
        int count;
        double mean() const { return sum / count; }
    };
    std::vector<double> offset(layer.size());
    std::vector<Block> blocks;
    double run = 0;
    for (size_t k = 0; k < layer.size(); ++k) {
        offset[k] = run;
        run += L.items[layer[k]].span + kRowGap;
        blocks.push_back({wanted[k] - offset[k], 1});
        while (blocks.size() > 1 && blocks[blocks.size() - 2].mean() > blocks.back().mean()) {
            blocks[blocks.size() - 2].sum += blocks.back().sum;
            blocks[blocks.size() - 2].count += blocks.back().count;
            blocks.pop_back();
        }
    }
    size_t k = 0;
    for (const Block& b : blocks)
        for (int j = 0; j < b.count; ++j, ++k) L.items[layer[k]].start = b.mean() + offset[k];
}

// Moves each item of a layer towards where its edges to one side run straight.
void align_layer(Layout& L, const std::vector<int>& layer, bool use_before) {
    std::vector<double> wanted(layer.size());
    for (size_t k = 0; k < layer.size(); ++k) {
        const Item& item = L.items[layer[k]];
        const std::vector<Link>& links = use_before ? item.before : item.after;
        double centre = item.centre();
        if (!links.empty()) {
            centre = 0;
            for (const Link& l : links) centre += L.items[l.item].centre() + l.there - l.here;
            centre /= static_cast<double>(links.size());
        }
        wanted[k] = centre - item.span / 2;
    }
    place_layer(L, layer, wanted);
}

// Where a link ends within the next layer, in units of positions: the rank
// of the item it enters, shifted by its port (less than half a position).
double link_key(const Layout& L, const Link& l) {
    const Item& b = L.items[l.item];
    return b.rank + l.there / (b.span + kRowGap);
}

// Pairs of links from layer c to layer c + 1 that cross: those whose ends come
// in opposite orders. An inversion count by merge sort, O(E log E).
int64_t count_crossings(const Layout& L, int c) {
    std::vector<std::pair<double, double>> links;  // (start rank, end key)
    for (int it : L.layers[c])
        for (const Link& l : L.items[it].after) links.push_back({L.items[it].rank, link_key(L, l)});
    std::sort(links.begin(), links.end());
    std::vector<double> ends(links.size()), buffer(links.size());
    for (size_t k = 0; k < links.size(); ++k) ends[k] = links[k].second;
    int64_t count = 0;
    for (size_t width = 1; width < ends.size(); width *= 2) {
        for (size_t lo = 0; lo + width < ends.size(); lo += 2 * width) {
            const size_t mid = lo + width, hi = std::min(lo + 2 * width, ends.size());
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                if (ends[j] < ends[i]) count += static_cast<int64_t>(mid - i), buffer[k++] = ends[j++];
                else buffer[k++] = ends[i++];
            }
            while (i < mid) buffer[k++] = ends[i++];
            while (j < hi) buffer[k++] = ends[j++];
            std::copy(buffer.begin() + static_cast<long>(lo), buffer.begin() + static_cast<long>(hi),
                      ends.begin() + static_cast<long>(lo));
        }
    }
    return count;
}

int64_t count_crossings(const Layout& L) {
    int64_t total = 0;
    for (int c = 0; c + 1 < static_cast<int>(L.layers.size()); ++c) total += count_crossings(L, c);
    return total;
}

// Sweeps `f(layer, use_before)` down the layers, or up.
template <class F>
void sweep(Layout& L, bool down, F f) {
    const int n = static_cast<int>(L.layers.size());
    if (down)
        for (int c = 1; c < n; ++c) f(L.layers[c], true);
    else
        for (int c = n - 2; c >= 0; --c) f(L.layers[c], false);
}

// Trunks: node u's long edges pass through the layers between u and its last
// consumer. If they would need more points than a few per node (a weight
// shared by every step of a long unrolled chain), long edges are drawn
// straight across instead, so that the layout stays linear in size.
void add_trunks(Layout& L, const GraphSnapshot& graph) {
    const int n = graph.size();
    std::vector<int> last_use(n, -1);
    for (int v = 0; v < n; ++v)
        for (const auto& in : graph.nodes()[v].inputs)
            last_use[in.node] = std::max(last_use[in.node], L.items[v].layer);
    int64_t points = 0;
    for (int u = 0; u < n; ++u) points += std::max(0, last_use[u] - L.items[u].layer - 1);
    L.trunk_start.assign(n, -1);
    if (points > std::max<int64_t>(10000, 4 * static_cast<int64_t>(n))) return;
    for (int u = 0; u < n; ++u) {
        if (last_use[u] - L.items[u].layer < 2) continue;
        L.trunk_start[u] = static_cast<int>(L.items.size());
        for (int c = L.items[u].layer + 1; c < last_use[u]; ++c) {
            const int id = static_cast<int>(L.items.size());
            const int previous = c == L.items[u].layer + 1 ? u : id - 1;
            L.items.push_back(Item{.node = u, .trunk = true, .layer = c});
            L.items[previous].after.push_back({id, 0, 0});
            L.items[id].before.push_back({previous, 0, 0});
        }
    }
}

Layout layout_graph(const GraphSnapshot& graph, const std::vector<std::vector<std::string>>& lines,
                    bool left_to_right) {
    const auto& nodes = graph.nodes();
    const int n = graph.size();
    Layout L;
    L.left_to_right = left_to_right;
    const std::vector<int> layer = layers_by_longest_path(graph);
    for (int i = 0; i < n; ++i) {
        double width = 0;
        for (const std::string& s : lines[i]) width = std::max(width, text_width(s));
        width += 2 * kPadX;
        const double height = static_cast<double>(lines[i].size()) * kLineHeight + 2 * kPadY;
        L.items.push_back(Item{.node = i,
                               .layer = layer[i],
                               .span = left_to_right ? height : width,
                               .thickness = left_to_right ? width : height});
    }
    add_trunks(L, graph);
    for (int v = 0; v < n; ++v) {
        const auto& inputs = nodes[v].inputs;
        for (size_t k = 0; k < inputs.size(); ++k) {
            if (L.trunk_start[inputs[k].node] < 0 && layer[v] - layer[inputs[k].node] > 1) continue;  // straight
            const int from = L.feeder(inputs[k].node, layer[v] - 1);
            const double port = port_offset(L.items[v].span, k, inputs.size());
            L.items[from].after.push_back({v, 0, port});
            L.items[v].before.push_back({from, port, 0});
        }
    }

    // Order: first as the search met the nodes (a trunk point after its
    // source), then barycentre sweeps down and up.
    L.layers.assign(static_cast<size_t>(*std::max_element(layer.begin(), layer.end()) + 1), {});
    std::vector<int> by_first_seen(L.items.size());
    std::iota(by_first_seen.begin(), by_first_seen.end(), 0);
    std::stable_sort(by_first_seen.begin(), by_first_seen.end(),
                     [&](int a, int b) { return L.items[a].node < L.items[b].node; });
    for (int it : by_first_seen) {
        L.items[it].rank = static_cast<double>(L.layers[L.items[it].layer].size());
        L.layers[L.items[it].layer].push_back(it);
    }
    // Eight sweeps, down and up in turn, keeping the order with the fewest crossings.
    std::vector<std::vector<int>> best = L.layers;
    int64_t fewest = count_crossings(L);
    for (int round = 0; round < 8 && fewest > 0; ++round) {
        sweep(L, round % 2 == 0, [&](std::vector<int>& l, bool use_before) { order_by_barycentre(L, l, use_before); });
        if (const int64_t crossings = count_crossings(L); crossings < fewest) fewest = crossings, best = L.layers;
    }
    L.layers = best;
    for (const auto& l : L.layers)
        for (size_t k = 0; k < l.size(); ++k) L.items[l[k]].rank = static_cast<double>(k);

    // Positions along the stack axis: packed, then pulled towards their
    // neighbours, sweeping down and up, so that most edges run nearly straight.
    for (const auto& l : L.layers) place_layer(L, l, std::vector<double>(l.size(), 0));
    for (int round = 0; round < 4; ++round)
        sweep(L, round % 2 == 0, [&](std::vector<int>& l, bool use_before) { align_layer(L, l, use_before); });
    double lo = INFINITY, hi = -INFINITY;
    for (const Item& item : L.items) lo = std::min(lo, item.start), hi = std::max(hi, item.start + item.span);
    L.stack_min = lo;
    L.stack_extent = hi - lo;

    // Layers as thick as their thickest box, one after the other.
    L.layer_thickness.assign(L.layers.size(), 0);
    for (const Item& item : L.items)
        L.layer_thickness[item.layer] = std::max(L.layer_thickness[item.layer], item.thickness);
    const double gap = left_to_right ? kColumnGap : kLayerGap;
    double f = 0;
    for (double t : L.layer_thickness) {
        L.layer_start.push_back(f);
        f += t + gap;
    }
    L.flow_extent = f - gap;
    return L;
}

// ---- SVG pieces ------------------------------------------------------------------

// A smooth S between two points (flow, stack), leaving and arriving along the flow.
std::string s_curve(const Layout& L, double f1, double s1, double f2, double s2) {
    const double fm = (f1 + f2) / 2;
    return " C" + L.point(fm, s1) + " " + L.point(fm, s2) + " " + L.point(f2, s2);
}

// The path of node u's trunk: out of u's far side and through its trunk
// points, one per layer, to the layer before its last consumer.
std::string trunk_path(const Layout& L, int u) {
    const Item& a = L.items[u];
    std::string d = "M" + L.point(L.far_side(u), a.centre()) + " L" + L.point(L.layer_end(a.layer), a.centre());
    double f = L.layer_end(a.layer), s = a.centre();
    for (int p = L.trunk_start[u]; p < static_cast<int>(L.items.size()) && L.items[p].trunk && L.items[p].node == u;
         ++p) {
        const Item& point = L.items[p];
        d += s_curve(L, f, s, L.layer_start[point.layer], point.start) + " L" +
             L.point(L.layer_end(point.layer), point.start);
        f = L.layer_end(point.layer), s = point.start;
    }
    return d;
}

// The path of the edge from node u into argument slot k of m of node v, into
// v's near side (slot 0 first): out of u's far side, or, for a long edge, out
// of u's trunk where it crosses the layer before v's.
std::string edge_path(const Layout& L, int u, int v, size_t k, size_t m) {
    const Item& b = L.items[v];
    const int from = L.feeder(u, b.layer - 1);
    const Item& a = L.items[from];
    const double f = L.layer_end(a.layer), s = from == u ? a.centre() : a.start;
    std::string d = from == u ? "M" + L.point(L.far_side(u), s) + " L" + L.point(f, s) : "M" + L.point(f, s);
    const double port = b.centre() + port_offset(b.span, k, m);
    return d + s_curve(L, f, s, L.layer_start[b.layer] - kArrowRoom, port) + " L" + L.point(L.near_side(v), port);
}

std::string svg_text(double x, double y, const std::string& s, const std::string& extra = "") {
    return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\"" + (extra.empty() ? "" : " " + extra) + ">" +
           xml_escape(s) + "</text>";
}

std::string legend_swatch(double x, double y, const char* fill, const char* stroke, const std::string& label) {
    return "<rect x=\"" + num(x) + "\" y=\"" + num(y - 10) + "\" width=\"14\" height=\"12\" rx=\"3\" fill=\"" + fill +
           "\" stroke=\"" + stroke + "\"/>" + svg_text(x + 19, y, label, "fill=\"#374151\"");
}
}  // namespace

// ---- labels and DOT ------------------------------------------------------------

std::vector<std::string> graph_node_lines(const GraphSnapshot& graph, int i) {
    const GraphSnapshot::Entry& e = graph.nodes().at(static_cast<size_t>(i));
    std::vector<std::string> lines;
    if (e.var.is_leaf())
        lines.push_back(e.name.empty() ? "leaf#" + std::to_string(i) : e.name);
    else
        lines.push_back(e.name.empty() ? std::string(e.var.op()) : e.name + " = " + e.var.op());
    lines.push_back(e.var.shape().str());
    if (e.var.is_leaf()) lines.push_back(e.var.requires_grad() ? "leaf, requires grad" : "leaf, no grad");
    const Tensor grad = e.var.grad();
    if (grad.defined()) {
        char buf[48];
        std::snprintf(buf, sizeof buf, "‖grad‖ = %.4g", l2_norm(grad));
        lines.push_back(buf);
    }
    return lines;
}

std::string graph_dot(const GraphSnapshot& graph, const GraphDrawOptions& options) {
    std::string out = "digraph autograd {\n";
    if (options.left_to_right) out += "  rankdir=LR;\n";
    out += "  node [shape=box, style=\"rounded,filled\", fontname=\"monospace\", fontsize=10];\n"
           "  edge [arrowsize=0.7, color=\"#6b7280\"];\n";
    for (int i = 0; i < graph.size(); ++i) {
        const Var& v = graph.nodes()[i].var;
        std::string label;
        for (const std::string& line : graph_node_lines(graph, i)) label += (label.empty() ? "" : "\n") + line;
        out += "  n" + std::to_string(i) + " [label=" + dot_quoted(label) + ", fillcolor=\"" + fill_of(v) +
               "\", color=\"" + (i == graph.size() - 1 ? std::string(kRootStroke) + "\", penwidth=2" : stroke_of(v) + "\"") +
               "];\n";
    }
    for (int v = 0; v < graph.size(); ++v)
        for (const auto& in : graph.nodes()[v].inputs)
            out += "  n" + std::to_string(in.node) + " -> n" + std::to_string(v) + " [tooltip=\"argument " +
                   std::to_string(in.arg) + "\"];\n";
    return out + "}\n";
}

// ---- SVG -------------------------------------------------------------------------

std::string graph_svg(const GraphSnapshot& graph, const GraphDrawOptions& options) {
    const int n = graph.size();
    std::vector<std::vector<std::string>> lines(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) lines[i] = graph_node_lines(graph, i);
    const Layout L = layout_graph(graph, lines, options.left_to_right);

    const std::string title = "autograd graph of " + lines.back()[0] + " (" + graph.root().shape().str() + "): " +
                              std::to_string(n) + (n == 1 ? " node, " : " nodes, ") +
                              std::to_string(graph.num_edges()) + (graph.num_edges() == 1 ? " edge" : " edges");
    const double legend_x = kMargin + text_width(title) + 24;
    const auto [graph_width, height] = L.size();
    const double width = std::max(graph_width, legend_x + 360);
    std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width) + "\" height=\"" +
                      num(height) + "\" viewBox=\"0 0 " + num(width) + " " + num(height) +
                      "\" font-family=\"DejaVu Sans Mono, Menlo, Consolas, monospace\" font-size=\"" +
                      num(kFontSize) + "\">\n";
    out += "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" "
           "markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#6b7280\"/></marker></defs>\n";
    out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    const double header_y = kMargin + 12;
    out += svg_text(kMargin, header_y, title, "font-weight=\"bold\"") + "\n";
    out += legend_swatch(legend_x, header_y, kLeafFill, kLeafStroke, "leaf") +
           legend_swatch(legend_x + 70, header_y, kOpFill, kOpStroke, "op") +
           legend_swatch(legend_x + 126, header_y, kOpFill, kRootStroke, "output") +
           svg_text(legend_x + 210, header_y, "arrows: input → op", "fill=\"#374151\"") + "\n";

    // Edges first, so that boxes are drawn over any edge that crosses them;
    // the trunks that long edges share, then every edge from where it leaves
    // its input's box or trunk.
    for (int u = 0; u < n; ++u)
        if (L.trunk_start[u] >= 0)
            out += "<path class=\"trunk\" data-from=\"n" + std::to_string(u) + "\" d=\"" + trunk_path(L, u) +
                   "\" fill=\"none\" stroke=\"#6b7280\" stroke-width=\"1.2\"/>\n";
    for (int v = 0; v < n; ++v) {
        const auto& inputs = graph.nodes()[v].inputs;
        for (size_t k = 0; k < inputs.size(); ++k) {
            const int u = inputs[k].node;
            out += "<path class=\"edge\" data-from=\"n" + std::to_string(u) + "\" data-to=\"n" + std::to_string(v) +
                   "\" data-arg=\"" + std::to_string(inputs[k].arg) + "\" d=\"" +
                   edge_path(L, u, v, k, inputs.size()) +
                   "\" fill=\"none\" stroke=\"#6b7280\" stroke-width=\"1.2\" marker-end=\"url(#arrow)\"><title>" +
                   xml_escape(lines[u][0] + " → " + lines[v][0] + ", argument " + std::to_string(inputs[k].arg)) +
                   "</title></path>\n";
        }
    }
    for (int i = 0; i < n; ++i) {
        const Item& item = L.items[i];
        const Var& v = graph.nodes()[i].var;
        const bool is_root = i == n - 1;
        const auto [x, y] = L.at(L.near_side(i), item.start);
        const double w = options.left_to_right ? item.thickness : item.span;
        const double h = options.left_to_right ? item.span : item.thickness;
        std::string tooltip = "n" + std::to_string(i);
        for (const std::string& s : lines[i]) tooltip += ", " + s;
        out += "<g class=\"node\" id=\"n" + std::to_string(i) + "\"><title>" + xml_escape(tooltip) + "</title>";
        out += "<rect class=\"box\" x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(w) + "\" height=\"" +
               num(h) + "\" rx=\"5\" fill=\"" + fill_of(v) + "\" stroke=\"" + (is_root ? kRootStroke : stroke_of(v)) +
               "\" stroke-width=\"" + (is_root ? "2.5" : "1.2") + "\"/>";
        for (size_t k = 0; k < lines[i].size(); ++k) {
            const double baseline = y + kPadY + kLineHeight * (static_cast<double>(k) + 0.8);
            out += svg_text(x + kPadX, baseline, lines[i][k], k == 0 ? "font-weight=\"bold\"" : "fill=\"#374151\"");
        }
        out += "</g>\n";
    }
    return out + "</svg>\n";
}

// ---- from a Var, and to files ----------------------------------------------------

std::string graph_dot(const Var& root, const GraphNames& names, const GraphDrawOptions& options) {
    return graph_dot(GraphSnapshot(root, names, /*retain_grads=*/false), options);
}
std::string graph_svg(const Var& root, const GraphNames& names, const GraphDrawOptions& options) {
    return graph_svg(GraphSnapshot(root, names, /*retain_grads=*/false), options);
}

void write_graph_dot(const GraphSnapshot& graph, const std::string& path, const GraphDrawOptions& options) {
    write_file_atomic(path, graph_dot(graph, options), "write_graph_dot");
}
void write_graph_dot(const Var& root, const std::string& path, const GraphNames& names,
                     const GraphDrawOptions& options) {
    write_graph_dot(GraphSnapshot(root, names, false), path, options);
}
void write_graph_svg(const GraphSnapshot& graph, const std::string& path, const GraphDrawOptions& options) {
    write_file_atomic(path, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + graph_svg(graph, options),
                      "write_graph_svg");
}
void write_graph_svg(const Var& root, const std::string& path, const GraphNames& names,
                     const GraphDrawOptions& options) {
    write_graph_svg(GraphSnapshot(root, names, false), path, options);
}

}  // namespace attn
