// The autograd graph as data (autograd/graph.hpp) and as a picture
// (examples/common/graph_draw.hpp): the DOT of z = x*y + x node by node and
// edge by edge, as computed by hand; gradient norms after backward; an SVG
// that is well-formed XML, shows every label, escapes names, has boxes that
// do not overlap and one arrow per input, from the input's box to the op's.
#include <doctest/doctest.h>

#include <algorithm>
#include <ctime>
#include <time.h>  // clock_gettime, CLOCK_THREAD_CPUTIME_ID (POSIX)
#include <cstdio>
#include <cmath>
#include <map>
// GCC 12's <regex> trips -Wmaybe-uninitialized inside std::function when
// built with the sanitizers at -O1 (a false positive in the library header,
// reported at the instantiation here); clang does not know the option.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <regex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "attention/multi_head.hpp"
#include "autograd/graph.hpp"
#include "autograd/ops.hpp"
#include "examples/common/graph_draw.hpp"
#include "examples/common/svg.hpp"
#include "tests/helpers.hpp"

using namespace attn;

namespace {

using Edge = std::tuple<int, int, int>;  // (input node, op node, argument)

// ---- reading DOT -------------------------------------------------------------------

// `n3 [label="..."` → {3: the label as written, with its \n escapes}.
std::map<int, std::string> dot_labels(const std::string& dot) {
    std::map<int, std::string> labels;
    static const std::regex node(R"re(^  n(\d+) \[label="((?:[^"\\]|\\.)*)")re");
    std::istringstream in(dot);
    for (std::string line; std::getline(in, line);) {
        std::smatch m;
        if (std::regex_search(line, m, node)) labels[std::stoi(m[1])] = m[2];
    }
    return labels;
}

std::vector<Edge> dot_edges(const std::string& dot) {
    std::vector<Edge> edges;
    static const std::regex edge(R"re(^  n(\d+) -> n(\d+) \[tooltip="argument (\d+)"\];$)re");
    std::istringstream in(dot);
    for (std::string line; std::getline(in, line);) {
        std::smatch m;
        if (std::regex_search(line, m, edge)) edges.emplace_back(std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3]));
    }
    std::sort(edges.begin(), edges.end());
    return edges;
}

// ---- reading SVG -------------------------------------------------------------------

struct Box {
    double x, y, w, h;
};

std::map<int, Box> svg_boxes(const std::string& svg) {
    std::map<int, Box> boxes;
    static const std::regex box(
        R"re(<g class="node" id="n(\d+)">.*?<rect class="box" x="([-0-9.]+)" y="([-0-9.]+)" width="([0-9.]+)" height="([0-9.]+)")re");
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), box); it != std::sregex_iterator(); ++it) {
        const std::smatch& m = *it;
        boxes[std::stoi(m[1])] = {std::stod(m[2]), std::stod(m[3]), std::stod(m[4]), std::stod(m[5])};
    }
    return boxes;
}

struct SvgEdge {
    int from, to, arg;
    double x0, y0, x1, y1;  // where the path starts and ends
};

std::vector<SvgEdge> svg_edges(const std::string& svg) {
    std::vector<SvgEdge> edges;
    static const std::regex edge(R"re(<path class="edge" data-from="n(\d+)" data-to="n(\d+)" data-arg="(\d+)" d="([^"]*)")re");
    static const std::regex number(R"re(-?[0-9.]+)re");
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), edge); it != std::sregex_iterator(); ++it) {
        const std::smatch& m = *it;
        const std::string d = m[4];
        std::vector<double> xy;
        for (auto n = std::sregex_iterator(d.begin(), d.end(), number); n != std::sregex_iterator(); ++n)
            xy.push_back(std::stod(n->str()));
        REQUIRE(xy.size() >= 4);
        edges.push_back({std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3]), xy[0], xy[1], xy[xy.size() - 2],
                         xy.back()});
    }
    return edges;
}

// {input node: the d attribute of its trunk}.
std::map<int, std::string> svg_trunks(const std::string& svg) {
    std::map<int, std::string> trunks;
    static const std::regex trunk(R"re(<path class="trunk" data-from="n(\d+)" d="([^"]*)")re");
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), trunk); it != std::sregex_iterator(); ++it)
        trunks[std::stoi((*it)[1])] = (*it)[2];
    return trunks;
}

// A coordinate as the SVG writes it: at most two decimals, no trailing zeros.
std::string number_text(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", v);
    std::string s = buf;
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
    return s;
}

// Edge crossings in a top-to-bottom picture, counted from the paths: every
// curve of an edge or trunk runs across one gap between layers, from y0 to
// y1; two curves leaving the same gap's top cross when their ends come in
// the other order at the bottom.
int64_t count_crossings(const std::string& svg) {
    static const std::regex path(R"re(<path class="(?:edge|trunk)"[^>]* d="([^"]*)")re");
    static const std::regex curve(R"re(C[-0-9.]+,[-0-9.]+ [-0-9.]+,[-0-9.]+ ([-0-9.]+),([-0-9.]+))re");
    static const std::regex point(R"re(([-0-9.]+),([-0-9.]+)\s*$)re");
    std::map<std::string, std::vector<std::pair<double, double>>> gaps;  // top y → (x at top, x at bottom)
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), path); it != std::sregex_iterator(); ++it) {
        const std::string d = (*it)[1];
        for (size_t c = d.find('C'); c != std::string::npos; c = d.find('C', c + 1)) {
            std::smatch from, to;
            const std::string before = d.substr(0, c);
            REQUIRE(std::regex_search(before, from, point));
            const std::string rest = d.substr(c);
            REQUIRE(std::regex_search(rest, to, curve));
            gaps[from[2]].emplace_back(std::stod(from[1]), std::stod(to[1]));
        }
    }
    int64_t count = 0;
    for (const auto& gap : gaps)
        for (size_t a = 0; a < gap.second.size(); ++a)
            for (size_t b = a + 1; b < gap.second.size(); ++b) {
                const auto &p = gap.second[a], &q = gap.second[b];
                count += (p.first - q.first) * (p.second - q.second) < 0;
            }
    return count;
}

// Well-formed XML, checked the simple way: every tag closed in order, one
// root element, and every & in text or attributes starting an entity.
void check_well_formed(const std::string& xml) {
    std::vector<std::string> open;
    int roots = 0;
    size_t at = 0;
    while ((at = xml.find('<', at)) != std::string::npos) {
        const size_t end = xml.find('>', at);
        REQUIRE_MESSAGE(end != std::string::npos, "a '<' without '>' at " << at);
        const std::string tag = xml.substr(at + 1, end - at - 1);
        CHECK_MESSAGE(tag.find('<') == std::string::npos, "a raw '<' inside the tag <" << tag << ">");
        if (tag[0] == '?') {
            CHECK(tag.back() == '?');
        } else if (tag[0] == '/') {
            REQUIRE_MESSAGE(!open.empty(), "</" << tag << "> closes nothing");
            CHECK_MESSAGE(tag.substr(1) == open.back(), "</" << tag.substr(1) << "> closes <" << open.back() << ">");
            open.pop_back();
        } else {
            if (open.empty()) ++roots;
            if (tag.back() != '/') open.push_back(tag.substr(0, tag.find_first_of(" \n/")));
        }
        at = end + 1;
    }
    CHECK_MESSAGE(open.empty(), open.size() << " tags left open");
    CHECK(roots == 1);
    static const std::regex bad_amp(R"re(&(?!amp;|lt;|gt;|quot;|#39;))re");
    CHECK_MESSAGE(!std::regex_search(xml, bad_amp), "an '&' that starts no entity");
}

bool overlap(const Box& a, const Box& b) {
    return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

// The edges of a snapshot, (input, op, argument), sorted.
std::vector<Edge> snapshot_edges(const GraphSnapshot& graph) {
    std::vector<Edge> edges;
    for (int v = 0; v < graph.size(); ++v)
        for (const auto& in : graph.nodes()[v].inputs) edges.emplace_back(in.node, v, in.arg);
    std::sort(edges.begin(), edges.end());
    return edges;
}

// Every property of a drawn SVG that does not depend on the graph: well-formed,
// every label shown, boxes apart and inside the picture, one arrow per input
// link, from the input's box to the op's, entering in argument order.
void check_picture(const GraphSnapshot& graph, const GraphDrawOptions& options = {}) {
    const std::string svg = graph_svg(graph, options);
    check_well_formed(svg);
    for (int i = 0; i < graph.size(); ++i)
        for (const std::string& line : graph_node_lines(graph, i))
            CHECK_MESSAGE(svg.find(">" + xml_escape(line) + "</text>") != std::string::npos,
                          "node " << i << ": no text '" << line << "'");

    const std::map<int, Box> boxes = svg_boxes(svg);
    REQUIRE(static_cast<int>(boxes.size()) == graph.size());
    static const std::regex size_re(R"re(<svg [^>]*width="([0-9.]+)" height="([0-9.]+)")re");
    std::smatch size;
    REQUIRE(std::regex_search(svg, size, size_re));
    // (No structured bindings: clang 14 cannot capture them in doctest's macros.)
    for (const auto& box_i : boxes) {
        const int i = box_i.first;
        const Box& b = box_i.second;
        CHECK_MESSAGE((b.x >= 0 && b.y >= 0 && b.x + b.w <= std::stod(size[1]) && b.y + b.h <= std::stod(size[2])),
                      "box n" << i << " leaves the picture");
        for (const auto& box_j : boxes)
            if (i < box_j.first)
                CHECK_MESSAGE(!overlap(b, box_j.second), "boxes n" << i << " and n" << box_j.first << " overlap");
    }

    const std::vector<SvgEdge> edges = svg_edges(svg);
    std::vector<Edge> drawn;
    for (const SvgEdge& e : edges) drawn.emplace_back(e.from, e.to, e.arg);
    std::sort(drawn.begin(), drawn.end());
    CHECK(drawn == snapshot_edges(graph));

    // Left to right: out of the input's right side, into the op's left side;
    // top to bottom: out of its bottom, into the op's top. Within 0.01 px.
    const bool lr = options.left_to_right;
    const auto on_side = [&](const Box& b, double x, double y, bool far) {
        if (lr) return std::abs(x - (far ? b.x + b.w : b.x)) < 0.01 && y >= b.y && y <= b.y + b.h;
        return std::abs(y - (far ? b.y + b.h : b.y)) < 0.01 && x >= b.x && x <= b.x + b.w;
    };
    std::map<int, std::vector<std::pair<int, double>>> entries;  // op → (argument, where along its side)
    const std::map<int, std::string> trunks = svg_trunks(svg);
    for (const SvgEdge& e : edges) {
        // Out of the input's box, or out of a point of the input's trunk.
        const std::string start = " L" + number_text(e.x0) + "," + number_text(e.y0);
        const bool from_trunk = trunks.count(e.from) && trunks.at(e.from).find(start) != std::string::npos;
        CHECK_MESSAGE((on_side(boxes.at(e.from), e.x0, e.y0, true) || from_trunk),
                      "edge n" << e.from << "→n" << e.to << " starts off n" << e.from << "'s box and trunk");
        CHECK_MESSAGE(on_side(boxes.at(e.to), e.x1, e.y1, false), "edge n" << e.from << "→n" << e.to << " ends off n"
                                                                         << e.to << "'s box");
        entries[e.to].emplace_back(e.arg, lr ? e.y1 : e.x1);
    }
    for (auto& entry : entries) {
        const int op = entry.first;
        std::vector<std::pair<int, double>>& at = entry.second;
        std::sort(at.begin(), at.end());
        for (size_t k = 1; k < at.size(); ++k)
            CHECK_MESSAGE(at[k - 1].second < at[k].second, "n" << op << ": argument " << at[k].first
                                                              << " enters before argument " << at[k - 1].first);
    }
}

}  // namespace

TEST_CASE("graph_dot: z = x*y + x, nodes and edges by hand, then gradient norms after backward") {
    // x = (1, 2), y = (3, −1); z = x ⊙ y + x; backward with ∂L/∂z = g = (2, 1):
    //   ∂L/∂x = g ⊙ (y + 1) = (8, 0)   ‖·‖ = 8
    //   ∂L/∂y = g ⊙ x       = (2, 2)   ‖·‖ = √8 = 2.828
    //   ∂L/∂(x⊙y) = ∂L/∂z = g          ‖·‖ = √5 = 2.236
    Var x(Tensor::from({1, 2}), true), y(Tensor::from({3, -1}), true);
    Var z = x * y + x;
    GraphSnapshot graph(z, {{"x", x}, {"y", y}});
    REQUIRE(graph.size() == 4);
    CHECK(graph.num_edges() == 4);

    // Nodes in search order: x, y, mul, add (the root last).
    const std::map<int, std::string> before = dot_labels(graph_dot(graph));
    CHECK(before == std::map<int, std::string>{{0, R"(x\n2\nleaf, requires grad)"},
                                               {1, R"(y\n2\nleaf, requires grad)"},
                                               {2, R"(mul\n2)"},
                                               {3, R"(add\n2)"}});
    // x feeds mul (argument 0) and add (argument 1); y feeds mul (argument 1).
    CHECK(dot_edges(graph_dot(graph)) == std::vector<Edge>{{0, 2, 0}, {0, 3, 1}, {1, 2, 1}, {2, 3, 0}});

    z.backward(Tensor::from({2, 1}));
    const std::string dot = graph_dot(graph);
    CHECK(dot_labels(dot) == std::map<int, std::string>{{0, R"(x\n2\nleaf, requires grad\n‖grad‖ = 8)"},
                                                        {1, R"(y\n2\nleaf, requires grad\n‖grad‖ = 2.828)"},
                                                        {2, R"(mul\n2\n‖grad‖ = 2.236)"},
                                                        {3, R"(add\n2\n‖grad‖ = 2.236)"}});
    CHECK(dot_edges(dot) == std::vector<Edge>{{0, 2, 0}, {0, 3, 1}, {1, 2, 1}, {2, 3, 0}});
    CHECK(dot.rfind("digraph autograd {\n", 0) == 0);
    CHECK(dot.find("rankdir=LR") == std::string::npos);
    CHECK(graph_dot(graph, {.left_to_right = true}).find("  rankdir=LR;\n") != std::string::npos);
    // The norms are of the gradients themselves.
    CHECK(graph.nodes()[0].var.grad().to_vector() == std::vector<real>{8, 0});
}

TEST_CASE("graph snapshot: taken before backward, it keeps the nodes and every gradient") {
    Var x(Tensor::scalar(2), true), y(Tensor::scalar(3), true);
    Var z = x * y + x;
    GraphSnapshot graph(z);
    z.backward();
    // backward() unlinked the graph: z alone is left behind the Var...
    CHECK(z.node()->num_inputs() == 0);
    CHECK_THROWS_AS(GraphSnapshot{z}, std::logic_error);
    CHECK_THROWS_WITH_AS(graph_svg(z), doctest::Contains("take the snapshot before backward()"), std::logic_error);
    // ...but the snapshot still has all four nodes, intermediate gradient included.
    REQUIRE(graph.size() == 4);
    CHECK(graph.nodes()[2].var.op() == std::string("mul"));
    REQUIRE(graph.nodes()[2].var.grad().defined());
    CHECK(graph.nodes()[2].var.grad().item() == 1);
    CHECK(graph.nodes()[0].var.grad().item() == 4);  // ∂z/∂x = y + 1, as in the tour
    // Unnamed leaves are leaf#<index>; a lone leaf with no gradient is a graph of one.
    CHECK(graph_node_lines(graph, 1) == std::vector<std::string>{"leaf#1", "scalar", "leaf, requires grad", "‖grad‖ = 2"});
    GraphSnapshot lone(Var(Tensor::zeros(Shape{2, 3})));
    CHECK(graph_node_lines(lone, 0) == std::vector<std::string>{"leaf#0", "2×3", "leaf, no grad"});
    check_picture(lone);
    CHECK_THROWS_AS(GraphSnapshot{Var()}, std::invalid_argument);
}

TEST_CASE("graph_svg: well-formed, every label, names escaped, one arrow per input") {
    Var x(Tensor::from({1, 2}), true), y(Tensor::from({3, -1}), true);
    Var z = x * y + x;
    const GraphNames names = {{"a<b & \"c\"", x}, {"y", y}, {"first name", z}, {"second name", z}};
    GraphSnapshot graph(z, names);
    z.backward(Tensor::from({2, 1}));
    for (bool lr : {false, true}) {
        INFO("left_to_right = " << lr);
        check_picture(graph, {.left_to_right = lr});
        const std::string svg = graph_svg(graph, {.left_to_right = lr});
        CHECK(svg.find("a&lt;b &amp; &quot;c&quot;") != std::string::npos);
        CHECK(svg.find("a<b") == std::string::npos);
        CHECK(svg.find("first name = add") != std::string::npos);  // the first name given wins
        CHECK(svg.find("second name") == std::string::npos);
        CHECK(svg_edges(svg).size() == 4);
    }
    CHECK(dot_labels(graph_dot(graph)).at(0) == R"(a<b & \"c\"\n2\nleaf, requires grad\n‖grad‖ = 8)");
}

TEST_CASE("graph_svg: one multi-head attention call, and an unrolled recurrence with long edges") {
    Generator gen(1);
    MultiHeadAttention mha(4, 2, gen, MultiHeadAttention::Options{.bias = true});
    Var X(Tensor::normal(Shape{1, 3, 4}, 0, 1, gen), true);
    Var loss = sum(mha.forward(X, X, X).output);
    GraphSnapshot attention(loss, mha.named_parameters());
    loss.backward();
    CHECK(attention.size() == 30);  // 9 leaves (X and 8 parameters), 21 ops
    CHECK(graph_svg(attention).find(">W_Q</text>") != std::string::npos);
    for (bool lr : {false, true}) {
        INFO("attention, left_to_right = " << lr);
        check_picture(attention, {.left_to_right = lr});
    }

    // h_t = tanh(h_{t−1} W + x_t U + b): W, U, b feed every step, so their
    // edges span many layers (through shared points of their own).
    Var W(Tensor::normal(Shape{3, 3}, 0, 0.5, gen), true), U(Tensor::normal(Shape{2, 3}, 0, 0.5, gen), true);
    Var b(Tensor::zeros(Shape{3}), true), h(Tensor::zeros(Shape{1, 3}));
    for (int t = 0; t < 8; ++t) h = tanh(matmul(h, W) + matmul(Var(Tensor::normal(Shape{1, 2}, 0, 1, gen)), U) + b);
    GraphSnapshot rnn(sum(h), {{"W", W}, {"U", U}, {"b", b}});
    CHECK(rnn.size() == 3 + 8 * 5 + 1);  // W, U, b; two matmuls, two adds and tanh a step; sum
    for (bool lr : {false, true}) {
        INFO("recurrence, left_to_right = " << lr);
        check_picture(rnn, {.left_to_right = lr});
    }

    // Crossings: barycentre sweeps, keeping the best order, leave few (the
    // order in which the search met the nodes has 43 in the recurrence).
    CHECK(count_crossings(graph_svg(attention)) <= 2);
    CHECK(count_crossings(graph_svg(rnn)) <= 16);
}

// The CPU time of the calling thread: what other programs running beside
// the tests (the other suite, a build) do not add to, as they add to wall time.
static double thread_cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// A chain of `steps` scalar steps h = tanh(h·w + c), w and c shared:
// 3·steps + 2 nodes.
static Var scalar_chain(int steps) {
    Var w(Tensor::scalar(0.5), true), c(Tensor::scalar(0.1), true), h(Tensor::scalar(1));
    for (int t = 0; t < steps; ++t) h = tanh(h * w + c);
    return h;
}

// Snapshots and draws the graph of h, checks the picture has every node and
// edge, and returns the CPU seconds it took.
static double seconds_to_draw(const Var& h) {
    const double start = thread_cpu_seconds();
    GraphSnapshot graph(h, {}, false);
    const std::string svg = graph_svg(graph);
    const double seconds = thread_cpu_seconds() - start;
    const auto count = [&](const std::string& what) {
        int64_t n = 0;
        for (size_t at = svg.find(what); at != std::string::npos; at = svg.find(what, at + 1)) ++n;
        return n;
    };
    CHECK(count("<g class=\"node\"") == graph.size());
    CHECK(count("<path class=\"edge\"") == graph.num_edges());
    return seconds;
}

TEST_CASE("graph_svg: thousands of nodes in linear time") {
    // Ten times the nodes: linear work takes about ten times as long,
    // quadratic work (a pair of nodes at a time: 1.8·10⁹ pairs at 60,002
    // nodes) a hundred times. The check allows 40×: caches, page faults and a
    // busy neighbour have made linear work look up to twice as slow at the
    // larger size, and any pass over pairs costing more than ~3 ns a pair
    // still fails it. CPU times of this thread, best of several tries
    // taken in turn, and a ratio rather than a time limit, so that a slow
    // or busy machine or an emulator (the aarch64 tests run under qemu)
    // measures the same. The large graph is drawn a second time only if the
    // first time fails the check (under the sanitizers one drawing of it
    // takes half a minute).
    const Var small_chain = scalar_chain(2000), large_chain = scalar_chain(20000);
    double small = 1e30, large = 1e30;
    for (int attempt = 0; attempt < 2; ++attempt) {
        for (int k = 0; k < 3; ++k) small = std::min(small, seconds_to_draw(small_chain));
        large = std::min(large, seconds_to_draw(large_chain));
        if (large / small < 40) break;
    }
    MESSAGE("6,002 nodes drawn in " << small << " s, 60,002 in " << large << " s: " << large / small << "×");
    CHECK(large / small < 40);
}

TEST_CASE("write_graph_svg and write_graph_dot: files, and an error naming a path that cannot be written") {
    Var x(Tensor::scalar(2), true), y(Tensor::scalar(3), true);
    Var z = x * y + x;
    attn::testing::TempDir dir("graph_draw");
    write_graph_svg(z, dir / "z.svg", {{"x", x}});
    write_graph_dot(z, dir / "z.dot");
    const std::string svg = attn::testing::read_file(dir / "z.svg");
    CHECK(svg.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg ", 0) == 0);
    check_well_formed(svg);
    CHECK(attn::testing::read_file(dir / "z.dot") == graph_dot(z));
    const std::string missing = dir / "no such folder/z.svg";
    CHECK_THROWS_WITH_AS(write_graph_svg(z, missing), doctest::Contains(missing.c_str()), std::runtime_error);
    CHECK_THROWS_WITH_AS(write_graph_dot(GraphSnapshot(z), missing), doctest::Contains(missing.c_str()), std::runtime_error);
}

TEST_CASE("docs/images/graph_xy.svg is the picture the code draws today (make docs-graphs redraws it)") {
    // The same as examples/draw_graph/main.cpp: step 4 of docs/tour.md.
    Var x(Tensor::scalar(2), true), y(Tensor::scalar(3), true);
    Var z = x * y + x;
    GraphSnapshot graph(z, {{"x", x}, {"y", y}});
    z.backward();
    const std::string path = attn::testing::repository_path("docs/images/graph_xy.svg");
    const std::string stored = attn::testing::read_file(path);
    REQUIRE_MESSAGE(!stored.empty(), "cannot read " << path);
    const std::string drawn = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + graph_svg(graph);
    size_t at = 0;
    while (at < stored.size() && at < drawn.size() && stored[at] == drawn[at]) ++at;
    const bool same = stored == drawn;
    CHECK_MESSAGE(same, path << " is stale (it differs from byte " << at << ", line "
                             << std::count(drawn.begin(), drawn.begin() + static_cast<long>(at), '\n') + 1
                             << "): run make docs-graphs");
}
