#include "tests/grad/catalog_checks.hpp"

#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <unordered_set>

namespace attn::testing {

namespace {

// Sentences built from pieces: fail.add("input ", i, " gets ", g).
struct Sentences {
    std::vector<std::string>& out;
    template <class... A>
    void add(const A&... parts) {
        std::ostringstream os;
        os.precision(10);
        (os << ... << parts);
        out.push_back(os.str());
    }
};

bool all_finite(const Tensor& t) {
    for (int64_t i = 0; i < t.numel(); ++i)
        if (!std::isfinite(static_cast<double>(t[i]))) return false;
    return true;
}

// The leaves that require a gradient, reachable from `node`.
void trainable_leaves(Node* node, std::unordered_set<Node*>& seen, std::vector<Node*>& leaves) {
    std::vector<Node*> stack{node};
    while (!stack.empty()) {
        Node* n = stack.back();
        stack.pop_back();
        if (!n || !seen.insert(n).second) continue;
        if (n->is_leaf()) {
            if (n->requires_grad) leaves.push_back(n);
            continue;
        }
        for (int i = 0; i < n->num_inputs(); ++i) stack.push_back(n->input(i));
    }
}

// The differentiable outputs as one vector.
Var flat_differentiable(const Outputs& outs) {
    std::vector<Var> parts;
    for (const Named& o : outs)
        if (o.differentiable) parts.push_back(reshape(o.value, {-1}));
    return parts.size() == 1 ? parts[0] : concat(parts, 0);
}

// The flat offsets of row l of example b (x is B×n×…: axis 1 indexes the rows).
std::vector<int64_t> row_offsets(const Tensor& x, int64_t b, int64_t l) {
    const int64_t per_row = x.numel() / (x.size(0) * x.size(1));
    std::vector<int64_t> out;
    for (int64_t k = 0; k < per_row; ++k) out.push_back((b * x.size(1) + l) * per_row + k);
    return out;
}

// Whether flat index i of `shape` has index l on `axis`.
bool at_axis(const Shape& shape, int64_t i, int axis, int64_t l) {
    const int a = axis < 0 ? shape.rank() + axis : axis;
    int64_t inner = 1;
    for (int k = a + 1; k < shape.rank(); ++k) inner *= shape[k];
    return (i / inner) % shape[a] == l;
}

// Σ of each differentiable output times fixed N(0, 1) weights (seed 5): one
// scalar whose gradient reaches everything the outputs depend on.
Var weighted_loss(const Outputs& outs) {
    Generator g(5);
    Var loss;
    for (const Named& o : outs) {
        if (!o.differentiable) continue;
        const Var term = sum(o.value * Var(Tensor::normal(o.value.shape(), 0, 1, g)));
        loss = loss.defined() ? loss + term : term;
    }
    return loss;
}

}  // namespace

Prepared::Prepared(const Entry& e, const Case& c_, uint64_t seed) : c(c_), gen(std::make_unique<Generator>(seed)) {
    name = e.id + " (" + c.variant + ")";
    if (c.make) module = c.make(*gen);
    if (module) {
        module->train(c.training);
        if (c.randomize_parameters)
            for (Var& p : module->parameters()) {
                Tensor& v = p.value();
                for (int64_t i = 0; i < v.numel(); ++i) v[i] += real(0.5 * gen->normal());
            }
    }
    if (c.draw) {
        inputs = c.draw(*gen);
    } else {
        for (const Shape& s : c.inputs) inputs.push_back(Tensor::normal(s, 0, 1, *gen));
    }
}

Outputs Prepared::run(const std::vector<Var>& x, const std::vector<Tensor>& masks) const {
    gen->manual_seed(c.noise_seed);
    return c.run(module.get(), x, masks);
}

Evaluation Prepared::evaluate(const std::vector<Tensor>& x, const std::vector<Tensor>& masks) const {
    std::vector<Var> vars;
    for (const Tensor& t : x) vars.emplace_back(t);
    return Evaluation{run(vars, masks)};
}

std::string index_str(const Shape& shape, int64_t flat) {
    std::vector<int64_t> idx(static_cast<size_t>(shape.rank()));
    for (int a = shape.rank() - 1; a >= 0; --a) {
        idx[static_cast<size_t>(a)] = flat % shape[a];
        flat /= shape[a];
    }
    std::string s = "[";
    for (size_t i = 0; i < idx.size(); ++i) s += (i ? ", " : "") + std::to_string(idx[i]);
    return s + "]";
}

// ---- 1. values ------------------------------------------------------------------------------
std::vector<ValueFinding> check_values(const Prepared& p) {
    const Outputs outs = p.evaluate(p.inputs, p.c.masks).outputs;
    std::vector<Array> x(p.inputs.begin(), p.inputs.end()), masks(p.c.masks.begin(), p.c.masks.end());
    Generator replay(p.c.noise_seed);
    const std::vector<Expected> expected =
        p.c.reference(Ref{x, masks, Params(p.module.get()), replay, p.c.training});
    std::vector<ValueFinding> findings;
    for (const Named& o : outs) {
        bool found = false;
        for (const Expected& e : expected) found = found || e.name == o.name;
        if (found) continue;
        ValueFinding f;
        f.output = o.name;
        f.problem = "the reference gives no '" + o.name + "'";
        findings.push_back(f);
    }
    for (const Expected& e : expected) {
        ValueFinding f;
        f.output = e.name;
        const Named* o = nullptr;
        for (const Named& n : outs)
            if (n.name == e.name) o = &n;
        const Tensor want = e.value.tensor();
        f.shape = want.shape();
        f.total = want.numel();
        if (!o) {
            f.problem = "the mechanism gives no '" + e.name + "'";
        } else if (!(o->value.shape() == want.shape())) {
            f.problem = e.name + ": shape " + o->value.shape().str() + ", reference " + want.shape().str();
        } else {
            const Tensor& actual = o->value.value();
            for (int64_t i = 0; i < want.numel(); ++i) {
                const double a = actual[i], r = want[i];
                if (!(std::abs(a - r) <= p.c.atol + p.c.rtol * std::abs(r))) {  // NaN is wrong
                    if (f.wrong++ == 0) f.first = i, f.expected = r, f.got = a;
                }
            }
        }
        findings.push_back(f);
    }
    return findings;
}

// ---- 2. gradients ---------------------------------------------------------------------------
GradientFindings check_gradients(const Prepared& p, bool every_element) {
    GradientFindings found;
    // Every trainable leaf of the graph is an input or a parameter of the
    // module: a parameter made inside run would escape the check below.
    {
        std::vector<Var> x;
        for (const Tensor& t : p.inputs) x.emplace_back(t, true);
        const Outputs outs = p.run(x, p.c.masks);
        std::unordered_set<Node*> known, seen;
        for (const Var& v : x) known.insert(v.node());
        if (p.module)
            for (const Var& v : p.module->parameters()) known.insert(v.node());
        std::vector<Node*> leaves;
        for (const Named& o : outs) trainable_leaves(o.value.node(), seen, leaves);
        for (Node* leaf : leaves)
            if (!known.count(leaf) && found.problem.empty())
                found.problem = "a trainable tensor of shape " + leaf->value.shape().str() +
                                " is neither an input nor a parameter of the module: build it in the case's make()";
    }
    if (!p.c.check_gradient) return found;
    found.checked = true;
    GradcheckOptions options;
    options.every_element = every_element;
    options.max_per_input = p.c.max_differences;
    auto f = [&](const std::vector<Var>& x) { return flat_differentiable(p.run(x, p.c.masks)); };
    found.inputs = gradcheck(p.name, f, p.inputs, options);
    if (p.module && p.module->num_parameters() > 0) {
        std::vector<Var> fixed;
        for (const Tensor& t : p.inputs) fixed.emplace_back(t);
        std::vector<Var> params;
        for (const auto& [name, v] : p.module->named_parameters()) {
            found.parameter_names.push_back(name);
            params.push_back(v);
        }
        found.parameters = gradcheck(
            p.name + " parameters", [&] { return flat_differentiable(p.run(fixed, p.c.masks)); }, params, options);
    }
    return found;
}

// ---- 3. masking -------------------------------------------------------------------------------
std::vector<std::string> check_masking(const Prepared& p, std::vector<std::string>* notes) {
    std::vector<std::string> out;
    Sentences fail{out};
    for (const KeySet& ks : p.c.masking) {
        const size_t mi = static_cast<size_t>(ks.mask);
        if (mi >= p.c.masks.size()) {
            fail.add("masking names mask ", ks.mask, ", the case has ", p.c.masks.size());
            continue;
        }
        if (p.c.masks[mi].rank() != 2) {
            fail.add("masking: mask ", ks.mask, " must be a B×n keep mask");
            continue;
        }
        std::vector<Tensor> masks = p.c.masks;
        Tensor& mask = masks[mi] = masks[mi].clone();
        const int64_t n = mask.size(1);
        auto is_weights = [&](const std::string& name) {
            for (const std::string& w : ks.weights)
                if (w == name) return true;
            return false;
        };

        // (a) Mask the last key of example 0 (if that leaves one), then
        // change that key's rows: nothing may move, its weight is exactly 0.
        // The rows are changed three ways: by random values, to NaN and to
        // +inf ("masked positions never leak, whatever they hold"); with
        // the non-finite ones every gradient must stay finite, and the
        // masked rows themselves must get exactly 0.
        if (n >= 2) {
            const int64_t l = n - 1;
            mask[l] = 0;
            bool any = false;
            for (int64_t k = 0; k < n; ++k) any = any || mask[k] != 0;
            if (any) {
                const Evaluation before = p.evaluate(p.inputs, masks);
                enum class Fill { random, nan, inf };
                if (!ks.finite_only.empty() && notes)
                    notes->push_back("masked rows not set to NaN or inf: " + ks.finite_only);
                for (Fill fill : {Fill::random, Fill::nan, Fill::inf}) {
                    if (fill != Fill::random && !ks.finite_only.empty()) continue;
                    const std::string what = fill == Fill::random ? "by random values"
                                             : fill == Fill::nan  ? "to NaN"
                                                                  : "to +inf";
                    std::vector<Tensor> changed = p.inputs;
                    Generator g(99);
                    for (int i : ks.inputs) {
                        Tensor& t = changed[static_cast<size_t>(i)] = changed[static_cast<size_t>(i)].clone();
                        for (int64_t o : row_offsets(t, 0, l))
                            t[o] = fill == Fill::random ? t[o] + real(3 * g.normal())
                                   : fill == Fill::nan  ? std::numeric_limits<real>::quiet_NaN()
                                                        : std::numeric_limits<real>::infinity();
                    }
                    const Evaluation after = p.evaluate(changed, masks);
                    for (size_t k = 0; k < before.outputs.size(); ++k) {
                        const Named& o = before.outputs[k];
                        const Tensor& a = o.value.value();
                        const Tensor& c = after.outputs[k].value.value();
                        const int64_t per_b = a.numel() / a.size(0);
                        // In self-attention, query l of example 0 is the changed row itself.
                        auto own_query = [&](int64_t i) {
                            return ks.self && i < per_b && at_axis(a.shape(), i, is_weights(o.name) ? -2 : 1, l);
                        };
                        for (int64_t i = 0; i < a.numel(); ++i) {
                            if (own_query(i)) continue;
                            if (!(std::abs(a[i] - c[i]) <= 1e-9 * (1 + std::abs(a[i])))) {
                                fail.add("changing masked key ", l, " of example 0 ", what, " changed ", o.name,
                                         " at ", index_str(a.shape(), i), ": ", a[i], " → ", c[i]);
                                break;
                            }
                        }
                        // (The own query of `self` holds the changed row: a
                        // NaN query's whole row of weights is NaN, IEEE.)
                        if (is_weights(o.name))
                            for (const Tensor* w : {&a, &c})
                                for (int64_t i = 0; i < per_b; ++i)
                                    if (at_axis(w->shape(), i, -1, l) && !own_query(i) && (*w)[i] != 0) {
                                        fail.add(o.name, " at ", index_str(w->shape(), i), " is ", (*w)[i],
                                                 " for a masked key", w == &c ? " changed " + what : std::string());
                                        break;
                                    }
                    }
                    // Gradients of the changed run. Not for `self`, as in
                    // (b): the masked position's own query holds the
                    // non-finite row and may attend the other keys.
                    if (fill == Fill::random || ks.self) continue;
                    std::vector<Var> xv;
                    for (const Tensor& t : changed) xv.emplace_back(t, true);
                    if (p.module) p.module->zero_grad();
                    Var loss = weighted_loss(p.run(xv, masks));
                    if (!loss.defined()) continue;
                    loss.backward();
                    for (size_t i = 0; i < xv.size(); ++i) {
                        if (!xv[i].grad().defined()) continue;
                        const Tensor gr = xv[i].grad();
                        std::set<int64_t> masked_rows;
                        for (int j : ks.inputs)
                            if (static_cast<size_t>(j) == i)
                                for (int64_t o : row_offsets(gr, 0, l)) masked_rows.insert(o);
                        for (int64_t o = 0; o < gr.numel(); ++o) {
                            const bool bad = masked_rows.count(o) ? gr[o] != 0 : !std::isfinite(gr[o]);
                            if (bad) {
                                fail.add("with masked key ", l, " of example 0 set ", what, ", input ", i,
                                         " gets gradient ", gr[o], " at ", index_str(gr.shape(), o),
                                         masked_rows.count(o) ? " (a masked row)" : "");
                                break;
                            }
                        }
                    }
                    if (p.module)
                        for (const auto& [pname, pv] : p.module->named_parameters())
                            if (pv.grad().defined() && !all_finite(pv.grad()))
                                fail.add("with masked key ", l, " of example 0 set ", what, ", parameter ", pname,
                                         " gets a NaN or inf gradient");
                }
            }
            mask[l] = p.c.masks[mi][l];
        }

        // (b) Mask every key of example 0.
        for (int64_t k = 0; k < n; ++k) mask[k] = 0;
        std::vector<Var> x;
        for (const Tensor& t : p.inputs) x.emplace_back(t, true);
        const Outputs outs = p.run(x, masks);
        for (const Named& o : outs) {
            const Tensor& a = o.value.value();
            if (!all_finite(a)) fail.add(o.name, " has a NaN or inf with every key of example 0 masked");
            const bool must_be_zero = is_weights(o.name) || [&] {
                for (const std::string& z : ks.zero_when_empty)
                    if (z == o.name) return true;
                return false;
            }();
            if (!must_be_zero) continue;
            const int64_t per_b = a.numel() / a.size(0);
            for (int64_t i = 0; i < per_b; ++i)
                if (a[i] != 0) {
                    fail.add(o.name, " at ", index_str(a.shape(), i), " is ", a[i],
                             " with every key of example 0 masked");
                    break;
                }
        }
        // Gradient: the keys of an example with nothing to attend get none.
        Var loss = weighted_loss(outs);
        if (!loss.defined() || ks.self) continue;
        loss.backward();
        for (int i : ks.inputs) {
            const Var& v = x[static_cast<size_t>(i)];
            if (!v.grad().defined()) continue;
            const Tensor& gr = v.grad();
            if (!all_finite(gr)) fail.add("input ", i, "'s gradient has a NaN or inf");
            bool reported = false;
            for (int64_t l = 0; l < n && !reported; ++l)
                for (int64_t o : row_offsets(gr, 0, l))
                    if (gr[o] != 0) {
                        fail.add("input ", i, " of example 0 gets gradient ", gr[o], " at ", index_str(gr.shape(), o),
                                 " with every key masked");
                        reported = true;
                        break;
                    }
        }
    }
    return out;
}

// ---- 4. properties ------------------------------------------------------------------------------
std::vector<PropertyFinding> check_properties(const Prepared& p) {
    std::vector<PropertyFinding> found;
    for (const Property& prop : p.c.properties) {
        const std::string err = prop.check(PropertyContext{
            p.module.get(), p.inputs, p.c.masks,
            [&](const std::vector<Tensor>& x, const std::vector<Tensor>& m) { return p.evaluate(x, m); }});
        found.push_back({prop.name, err});
    }
    return found;
}

}  // namespace attn::testing
