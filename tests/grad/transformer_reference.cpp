#include "tests/grad/transformer_reference.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace attn::testing {

// ---- which keys a query sees ---------------------------------------------------------

Vec Visible::keep(int64_t b, int64_t i, int64_t m, int64_t n) const {
    Vec k = keep_row(padding, b, n);
    for (int64_t j = 0; j < n; ++j) {
        double& kj = k[static_cast<size_t>(j)];
        if (causal && j > i + n - m) kj = 0;
        if (holes.numel() > 0 && holes(i, j) == 0) kj = 0;
        if (band >= 0 && std::abs(i - j) > band) kj = 0;
    }
    return k;
}

Visible visible_keys(const Ref& r, bool causal) {
    Visible v;
    if (!r.masks.empty()) v.padding = r.masks[0];
    if (r.masks.size() > 1) v.holes = r.masks[1];
    v.causal = causal;
    return v;
}

// ---- attention of one query --------------------------------------------------------------

Attended one_query_attention(const Vec& q, const std::vector<Vec>& keys, const std::vector<Vec>& values,
                             const Vec& keep, double tau) {
    Vec e(keys.size());
    for (size_t l = 0; l < keys.size(); ++l) e[l] = dot(q, keys[l]) / tau;  // e_l = q·k_l / τ
    Attended out;
    out.weights = softmax(e, keep);                                           // a = softmax(e)
    out.output = Vec(values.empty() ? 0 : values[0].size(), 0.0);
    for (size_t l = 0; l < values.size(); ++l)
        out.output = add(out.output, scale(values[l], out.weights[l]));  // y = Σ_l a_l v_l
    return out;
}

std::vector<Vec> rows_of(const Array& X, int64_t t) {
    const int64_t n = X.size(-2), d = X.size(-1);
    std::vector<Vec> rows(static_cast<size_t>(n), Vec(static_cast<size_t>(d)));
    for (int64_t i = 0; i < n; ++i)
        for (int64_t c = 0; c < d; ++c) rows[static_cast<size_t>(i)][static_cast<size_t>(c)] = X[(t * n + i) * d + c];
    return rows;
}

void set_flat_row(Array& X, int64_t t, int64_t i, const Vec& v) {
    const int64_t n = X.size(-2), d = X.size(-1);
    if (static_cast<int64_t>(v.size()) != d)
        throw std::invalid_argument("reference set_flat_row: a row of " + std::to_string(v.size()) + " into " +
                                    X.shape_str());
    for (int64_t c = 0; c < d; ++c) X[(t * n + i) * d + c] = v[static_cast<size_t>(c)];
}

Vec times(const Vec& x, const Array& W) {
    if (W.rank() != 2 || W.size(0) != static_cast<int64_t>(x.size()))
        throw std::invalid_argument("reference times: a vector of " + std::to_string(x.size()) + " times W " +
                                    W.shape_str());
    Vec y(static_cast<size_t>(W.size(1)), 0.0);
    for (int64_t o = 0; o < W.size(1); ++o)
        for (int64_t c = 0; c < W.size(0); ++c) y[static_cast<size_t>(o)] += x[static_cast<size_t>(c)] * W(c, o);
    return y;
}

Vec part(const Vec& x, int64_t from, int64_t count) {
    if (from < 0 || count < 0 || from + count > static_cast<int64_t>(x.size()))
        throw std::out_of_range("reference part: [" + std::to_string(from) + ", " + std::to_string(from + count) +
                                ") of a vector of " + std::to_string(x.size()));
    return Vec(x.begin() + from, x.begin() + from + count);
}

Vec layer_norm_row(const Vec& x, const Vec& gamma, const Vec& beta, double eps) {
    const double D = static_cast<double>(x.size());
    const double mu = sum(x) / D;
    double var = 0;
    for (double v : x) var += (v - mu) * (v - mu) / D;
    Vec y(x.size());
    for (size_t k = 0; k < x.size(); ++k) y[k] = gamma[k] * (x[k] - mu) / std::sqrt(var + eps) + beta[k];
    return y;
}

// ---- multi-head attention ------------------------------------------------------------------

std::vector<Expected> multi_head_reference(const Ref& r, const Heads& heads) {
    const Array &Xq = r.x[0], &Xk = heads.self ? r.x[0] : r.x[1];
    const Array& Xv = heads.self ? r.x[0] : r.x.size() > 2 ? r.x[2] : r.x[1];
    const Array W_Q = r.p[heads.prefix + "W_Q"], W_K = r.p[heads.prefix + "W_K"], W_V = r.p[heads.prefix + "W_V"];
    const Array W_O = r.p[heads.prefix + "W_O"];
    const int64_t B = Xq.size(0), m = Xq.size(1), n = Xk.size(1), d_model = Xq.size(2), h = heads.h;
    const int64_t d_k = W_Q.size(1) / h, d_v = W_V.size(1) / h;
    auto project = [&](const Vec& x, const Array& W, const char* b) {  // xᵀ W (+ b), all heads side by side
        const Vec y = times(x, W);
        return heads.bias ? add(y, vec(r.p[heads.prefix + b])) : y;
    };
    Array O({B, m, d_model}), A({B, h, m, n});
    for (int64_t b = 0; b < B; ++b) {
        std::vector<Vec> q, k, v;
        for (const Vec& x : rows_of(Xq, b)) q.push_back(project(x, W_Q, "b_Q"));
        for (const Vec& x : rows_of(Xk, b)) k.push_back(project(x, W_K, "b_K"));
        for (const Vec& x : rows_of(Xv, b)) v.push_back(project(x, W_V, "b_V"));
        for (int64_t i = 0; i < m; ++i) {
            Vec concat_heads;  // [g_1 head_1, …, g_h head_h] at query i
            for (int64_t j = 0; j < h; ++j) {
                std::vector<Vec> k_j, v_j;
                for (const Vec& key : k) k_j.push_back(part(key, j * d_k, d_k));
                for (const Vec& value : v) v_j.push_back(part(value, j * d_v, d_v));
                const Attended a = one_query_attention(part(q[static_cast<size_t>(i)], j * d_k, d_k), k_j, v_j,
                                                       heads.visible.keep(b, i, m, n), std::sqrt(double(d_k)));
                for (int64_t l = 0; l < n; ++l) A(b, j, i, l) = a.weights[static_cast<size_t>(l)];
                const double g = heads.gates.empty() ? 1.0 : heads.gates[static_cast<size_t>(j)];
                concat_heads = concat(concat_heads, scale(a.output, g));
            }
            Vec y = times(concat_heads, W_O);
            if (heads.bias) y = add(y, vec(r.p[heads.prefix + "b_O"]));
            set_row(O, b, i, y);
        }
    }
    return {{"output", O}, {"weights", A}};
}

// ---- properties -----------------------------------------------------------------------------

namespace {

// x with the entries along `axis` reversed (axis counted from the front).
Tensor reversed(const Tensor& x, int axis) {
    const int a = axis < 0 ? axis + x.rank() : axis;
    int64_t inner = 1;
    for (int k = a + 1; k < x.rank(); ++k) inner *= x.size(k);
    const int64_t len = x.size(a), outer = x.numel() / (len * inner);
    Tensor out = x.clone();
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t l = 0; l < len; ++l)
            for (int64_t k = 0; k < inner; ++k)
                out[(o * len + (len - 1 - l)) * inner + k] = x[(o * len + l) * inner + k];
    return out;
}

std::string differ(const std::string& what, const Tensor& expected, const Tensor& actual, int64_t i) {
    std::ostringstream os;
    os << what << " at flat index " << i << " of " << actual.shape().str() << ": " << actual[i] << ", expected "
       << expected[i];
    return os.str();
}

// Whether flat index i of a tensor of `shape` has its index along `axis` below p.
bool before(const Shape& shape, int64_t i, int axis, int64_t p) {
    const int a = axis < 0 ? axis + shape.rank() : axis;
    int64_t inner = 1;
    for (int k = a + 1; k < shape.rank(); ++k) inner *= shape[k];
    return (i / inner) % shape[a] < p;
}

}  // namespace

Property self_permutation_equivariant(int x, int mask, std::vector<std::string> outputs,
                                      std::vector<std::string> weights) {
    return {"self-attention is permutation equivariant: Y(PX) = P Y(X), A(PX) = P A Pᵀ",
            [=](const PropertyContext& c) -> std::string {
                std::vector<Tensor> xs = c.inputs, ms = c.masks;
                xs[static_cast<size_t>(x)] = reversed(xs[static_cast<size_t>(x)], 1);
                if (mask >= 0) ms[static_cast<size_t>(mask)] = reversed(ms[static_cast<size_t>(mask)], 1);
                const Evaluation before_ = c.run(c.inputs, c.masks), after = c.run(xs, ms);
                auto check = [&](const std::string& name, const Tensor& expected) -> std::string {
                    const Tensor& actual = after[name];
                    for (int64_t i = 0; i < expected.numel(); ++i)
                        if (!(std::abs(expected[i] - actual[i]) <= 1e-9 * (1 + std::abs(expected[i]))))
                            return differ(name + " of the reversed input", expected, actual, i);
                    return "";
                };
                for (const std::string& name : outputs) {
                    const std::string err = check(name, reversed(before_[name], 1));
                    if (!err.empty()) return err;
                }
                for (const std::string& name : weights) {
                    const std::string err = check(name, reversed(reversed(before_[name], -1), -2));
                    if (!err.empty()) return err;
                }
                return "";
            }};
}

namespace {

// x with its rows p, p+1, … (axis −2) changed.
Tensor changed_from(const Tensor& x, int64_t p) {
    Tensor t = x.clone();
    for (int64_t i = 0; i < t.numel(); ++i)
        if (!before(t.shape(), i, -2, p)) t[i] = t[i] * real(-1.5) + real(0.75);
    return t;
}

// The first flat index of a row before p (along `axis`) where a and b differ, or −1.
int64_t first_moved(const Tensor& a, const Tensor& b, int axis, int64_t p) {
    for (int64_t i = 0; i < a.numel(); ++i)
        if (before(a.shape(), i, axis, p) && !(std::abs(a[i] - b[i]) <= 1e-12 * (1 + std::abs(a[i])))) return i;
    return -1;
}

}  // namespace

Property causal_rows(std::vector<int> inputs, std::vector<QueryRows> outputs) {
    return {"causal: changing rows p, p+1, … leaves the earlier query rows unchanged",
            [=](const PropertyContext& c) -> std::string {
                const int64_t n = c.inputs[static_cast<size_t>(inputs.at(0))].size(-2);
                const Evaluation original = c.run(c.inputs, c.masks);
                for (int64_t p = 1; p < n; ++p) {
                    std::vector<Tensor> xs = c.inputs;
                    for (int k : inputs) xs[static_cast<size_t>(k)] = changed_from(xs[static_cast<size_t>(k)], p);
                    const Evaluation changed = c.run(xs, c.masks);
                    for (const QueryRows& o : outputs) {
                        const int64_t i = first_moved(original[o.output], changed[o.output], o.axis, p);
                        if (i >= 0)
                            return differ(o.output + " after changing rows " + std::to_string(p) + "…",
                                          original[o.output], changed[o.output], i);
                    }
                }
                return "";
            }};
}

// ---- what the self-attention cases check ----------------------------------------------------

void self_attention_checks(Case& c, bool causal, bool positions_known) {
    const bool padded = !c.masks.empty();
    if (padded) c.masking = {{0, {0}, {"weights"}, {}, true}};
    c.properties.push_back(rows_sum_to_one("weights"));
    if (!causal && !positions_known)
        c.properties.push_back(self_permutation_equivariant(0, padded ? 0 : -1, {"output"}, {"weights"}));
    if (causal) c.properties.push_back(causal_rows({0}, {{"output", 1}, {"weights", -2}}));
}

}  // namespace attn::testing
