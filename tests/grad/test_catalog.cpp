// The generic tests of the catalog registry (tests/grad/catalog.hpp), in the
// double build. Every case of every entry:
//   1. value: every output equals the entry's independent reference;
//   2. gradient: finite differences to every input and every parameter, and
//      no parameter made where the registry cannot see it;
//   3. masking: a masked key changes nothing whatever it holds (random values,
//      NaN, +inf), a fully masked example gets zero weights, zero gradient and
//      no NaN;
//   4. the case's declared properties.
// and every catalog id has an entry. ATTN_MECHANISM=id[,id...] runs some entries.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>
#include <sstream>
#include <unordered_set>

#include "autograd/gradcheck.hpp"
#include "tests/catalog_ids.hpp"
#include "tests/grad/catalog.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

// ATTN_MECHANISM=a,b → {a, b}; empty = every entry.
std::set<std::string> selected_ids() {
    std::set<std::string> ids;
    const char* only = std::getenv("ATTN_MECHANISM");
    if (!only) return ids;
    std::stringstream ss(only);
    std::string id;
    while (std::getline(ss, id, ','))
        if (!id.empty()) ids.insert(id);
    return ids;
}

bool wanted(const std::string& id) {
    static const std::set<std::string> ids = selected_ids();
    return ids.empty() || ids.count(id);
}

// One case, ready to run: its generator (which the module may keep for its
// noise), its module on randomised parameters, its inputs.
struct Prepared {
    const Case& c;
    std::string name;
    std::unique_ptr<Generator> gen;
    std::unique_ptr<Module> module;
    std::vector<Tensor> inputs;

    Prepared(const Entry& e, const Case& c_, uint64_t seed) : c(c_), gen(std::make_unique<Generator>(seed)) {
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

    // Runs the case on variables (the noise reseeded, so every run draws the same).
    Outputs run(const std::vector<Var>& x, const std::vector<Tensor>& masks) const {
        gen->manual_seed(c.noise_seed);
        return c.run(module.get(), x, masks);
    }
    Evaluation evaluate(const std::vector<Tensor>& x, const std::vector<Tensor>& masks) const {
        std::vector<Var> vars;
        for (const Tensor& t : x) vars.emplace_back(t);
        return Evaluation{run(vars, masks)};
    }
    // The differentiable outputs as one vector.
    static Var flat_differentiable(const Outputs& outs) {
        std::vector<Var> parts;
        for (const Named& o : outs)
            if (o.differentiable) parts.push_back(reshape(o.value, {-1}));
        return parts.size() == 1 ? parts[0] : concat(parts, 0);
    }
};

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

bool all_finite(const Tensor& t) {
    for (int64_t i = 0; i < t.numel(); ++i)
        if (!std::isfinite(static_cast<double>(t[i]))) return false;
    return true;
}

// The leaves that require a gradient, reachable from `out`.
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

// Every case of every wanted entry; with `parts` > 1, only the entries of
// one part (the 1st, (parts+1)-th, ... wanted entry for part 0), so that a
// long check can be cut into test cases that separate runs share.
template <class F>
void for_each_case(F&& f, int part = 0, int parts = 1) {
    int ran = 0, wanted_entries = 0;
    for (const Entry& e : catalog_registry()) {
        if (!wanted(e.id)) continue;
        if (wanted_entries++ % parts != part) continue;
        uint64_t seed = 1000;
        for (const Case& c : e.cases) {
            Prepared p(e, c, seed++);
            CAPTURE(p.name);
            f(e, p);
            ++ran;
        }
    }
    // Part 0 always runs something (unless ATTN_MECHANISM names no entry);
    // a later part may get nothing when ATTN_MECHANISM names few entries.
    if (part == 0 || wanted_entries > part) CHECK(ran > 0);
}

}  // namespace

TEST_CASE("catalog: every catalog id has an entry, every case a reference") {
    std::set<std::string> registered;
    for (const Entry& e : catalog_registry()) {
        CAPTURE(e.id);
        registered.insert(e.id);
        CHECK_MESSAGE(!e.cases.empty(), e.id << " has no case");
        for (const Case& c : e.cases) {
            CAPTURE(c.variant);
            CHECK_MESSAGE(c.run != nullptr, e.id << " (" << c.variant << ") has no run");
            CHECK_MESSAGE(c.reference != nullptr, e.id << " (" << c.variant << ") has no reference");
        }
        if (e.number >= 1 && e.number <= static_cast<int>(kCatalogIds.size()))
            CHECK_MESSAGE(kCatalogIds[static_cast<size_t>(e.number - 1)] == e.id,
                          e.id << " registered as entry " << e.number << ", which is "
                               << kCatalogIds[static_cast<size_t>(e.number - 1)]);
    }
    if (selected_ids().empty())
        for (size_t i = 0; i < kCatalogIds.size(); ++i)
            CHECK_MESSAGE(registered.count(std::string(kCatalogIds[i])),
                          "catalog entry " << i + 1 << " " << kCatalogIds[i] << " has no registry entry");
}

TEST_CASE("catalog 1: every output equals the independent reference") {
    for_each_case([](const Entry&, Prepared& p) {
        const Outputs outs = p.evaluate(p.inputs, p.c.masks).outputs;
        std::vector<Array> x(p.inputs.begin(), p.inputs.end()), masks(p.c.masks.begin(), p.c.masks.end());
        Generator replay(p.c.noise_seed);
        const std::vector<Expected> expected =
            p.c.reference(Ref{x, masks, Params(p.module.get()), replay, p.c.training});
        // The same names on both sides.
        for (const Named& o : outs) {
            bool found = false;
            for (const Expected& e : expected) found = found || e.name == o.name;
            CHECK_MESSAGE(found, "the reference gives no '" << o.name << "'");
        }
        for (const Expected& e : expected) {
            const Named* o = nullptr;
            for (const Named& n : outs)
                if (n.name == e.name) o = &n;
            CHECK_MESSAGE(o != nullptr, "the mechanism gives no '" << e.name << "'");
            if (!o) continue;
            const Tensor& actual = o->value.value();
            const Tensor want = e.value.tensor();
            CHECK_MESSAGE(actual.shape() == want.shape(),
                          e.name << ": shape " << actual.shape().str() << ", reference " << want.shape().str());
            if (!(actual.shape() == want.shape())) continue;
            for (int64_t i = 0; i < want.numel(); ++i) {
                const double a = actual[i], r = want[i];
                if (!(std::abs(a - r) <= p.c.atol + p.c.rtol * std::abs(r))) {
                    FAIL_CHECK(e.name << " at " << index_str(want.shape(), i) << ": mechanism " << a
                                      << ", reference " << r);
                    break;  // one index per output is enough to see what is wrong
                }
            }
        }
    });
}

// Catalog 2 is the longest check of the suites (two finite differences per
// input and parameter element of every entry): cut into four test cases, by
// entry, so that the runs of scripts/run-tests.sh share it.
namespace {

void check_gradients(const Entry&, Prepared& p) {
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
            CHECK_MESSAGE(known.count(leaf), "a trainable tensor of shape " << leaf->value.shape().str()
                                                 << " is neither an input nor a parameter of the module:"
                                                    " build it in the case's make()");
    }
    if (!p.c.check_gradient) return;
    auto f = [&](const std::vector<Var>& x) { return Prepared::flat_differentiable(p.run(x, p.c.masks)); };
    const GradcheckResult to_inputs = gradcheck(p.name, f, p.inputs);
    CHECK_MESSAGE(to_inputs.ok, to_inputs.message);
    if (p.module && p.module->num_parameters() > 0) {
        std::vector<Var> fixed;
        for (const Tensor& t : p.inputs) fixed.emplace_back(t);
        const GradcheckResult to_params = gradcheck(
            p.name + " parameters", [&] { return Prepared::flat_differentiable(p.run(fixed, p.c.masks)); },
            p.module->parameters());
        CHECK_MESSAGE(to_params.ok, to_params.message);
    }
}

}  // namespace

TEST_CASE("catalog 2 (part 1 of 4): gradients match finite differences, to inputs and parameters") {
    for_each_case(check_gradients, 0, 4);
}

TEST_CASE("catalog 2 (part 2 of 4): gradients match finite differences, to inputs and parameters") {
    for_each_case(check_gradients, 1, 4);
}

TEST_CASE("catalog 2 (part 3 of 4): gradients match finite differences, to inputs and parameters") {
    for_each_case(check_gradients, 2, 4);
}

TEST_CASE("catalog 2 (part 4 of 4): gradients match finite differences, to inputs and parameters") {
    for_each_case(check_gradients, 3, 4);
}

namespace {

// The slice [b, l, ...] of x (axis 1 = l) as flat offsets.
std::vector<int64_t> row_offsets(const Tensor& x, int64_t b, int64_t l) {
    const int64_t n = x.size(1), inner = x.numel() / (x.size(0) * n);
    std::vector<int64_t> out;
    for (int64_t k = 0; k < inner; ++k) out.push_back((b * n + l) * inner + k);
    return out;
}

// Whether the flat index i of an output of `shape` lies at key/query l along `axis`.
bool at_axis(const Shape& shape, int64_t i, int axis, int64_t l) {
    const int a = axis < 0 ? axis + shape.rank() : axis;
    int64_t inner = 1;
    for (int k = a + 1; k < shape.rank(); ++k) inner *= shape[k];
    return (i / inner) % shape[a] == l;
}

}  // namespace

TEST_CASE("catalog 3: a masked key changes nothing; a fully masked example gets zero weights and gradient") {
    for_each_case([](const Entry&, Prepared& p) {
        for (const KeySet& ks : p.c.masking) {
            const size_t mi = static_cast<size_t>(ks.mask);
            REQUIRE_MESSAGE(mi < p.c.masks.size(), "masking names mask " << ks.mask << ", the case has "
                                                                          << p.c.masks.size());
            REQUIRE_MESSAGE(p.c.masks[mi].rank() == 2, "masking: mask " << ks.mask << " must be a B×n keep mask");
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
                    if (!ks.finite_only.empty()) MESSAGE("masked rows not set to NaN or inf: " << ks.finite_only);
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
                                    FAIL_CHECK("changing masked key " << l << " of example 0 " << what << " changed "
                                                                      << o.name << " at " << index_str(a.shape(), i)
                                                                      << ": " << a[i] << " → " << c[i]);
                                    break;
                                }
                            }
                            // (The own query of `self` holds the changed row: a
                            // NaN query's whole row of weights is NaN, IEEE.)
                            if (is_weights(o.name))
                                for (const Tensor* w : {&a, &c})
                                    for (int64_t i = 0; i < per_b; ++i)
                                        if (at_axis(w->shape(), i, -1, l) && !own_query(i) && (*w)[i] != 0) {
                                            FAIL_CHECK(o.name << " at " << index_str(w->shape(), i) << " is "
                                                              << (*w)[i] << " for a masked key"
                                                              << (w == &c ? " changed " + what : std::string()));
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
                        const Outputs outs = p.run(xv, masks);
                        Generator gl(5);
                        Var loss;
                        for (const Named& o : outs) {
                            if (!o.differentiable) continue;
                            const Var term = sum(o.value * Var(Tensor::normal(o.value.shape(), 0, 1, gl)));
                            loss = loss.defined() ? loss + term : term;
                        }
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
                                    FAIL_CHECK("with masked key " << l << " of example 0 set " << what << ", input "
                                                                  << i << " gets gradient " << gr[o] << " at "
                                                                  << index_str(gr.shape(), o)
                                                                  << (masked_rows.count(o) ? std::string(" (a masked row)") : std::string()));
                                    break;
                                }
                            }
                        }
                        if (p.module)
                            for (const auto& [pname, pv] : p.module->named_parameters())
                                if (pv.grad().defined() && !all_finite(pv.grad()))
                                    FAIL_CHECK("with masked key " << l << " of example 0 set " << what
                                                                  << ", parameter " << pname
                                                                  << " gets a NaN or inf gradient");
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
                CHECK_MESSAGE(all_finite(a), o.name << " has a NaN or inf with every key of example 0 masked");
                const bool must_be_zero = is_weights(o.name) || [&] {
                    for (const std::string& z : ks.zero_when_empty)
                        if (z == o.name) return true;
                    return false;
                }();
                if (!must_be_zero) continue;
                const int64_t per_b = a.numel() / a.size(0);
                for (int64_t i = 0; i < per_b; ++i)
                    if (a[i] != 0) {
                        FAIL_CHECK(o.name << " at " << index_str(a.shape(), i) << " is " << a[i]
                                          << " with every key of example 0 masked");
                        break;
                    }
            }
            // Gradient: the keys of an example with nothing to attend get none.
            Generator g(5);
            Var loss;
            for (const Named& o : outs) {
                if (!o.differentiable) continue;
                const Var term = sum(o.value * Var(Tensor::normal(o.value.shape(), 0, 1, g)));
                loss = loss.defined() ? loss + term : term;
            }
            if (!loss.defined() || ks.self) continue;
            loss.backward();
            for (int i : ks.inputs) {
                const Var& v = x[static_cast<size_t>(i)];
                if (!v.grad().defined()) continue;
                const Tensor& gr = v.grad();
                CHECK_MESSAGE(all_finite(gr), "input " << i << "'s gradient has a NaN or inf");
                for (int64_t l = 0; l < n; ++l)
                    for (int64_t o : row_offsets(gr, 0, l))
                        if (gr[o] != 0) {
                            FAIL_CHECK("input " << i << " of example 0 gets gradient " << gr[o] << " at "
                                                << index_str(gr.shape(), o) << " with every key masked");
                            l = n;
                            break;
                        }
            }
        }
    });
}

TEST_CASE("catalog 4: the declared properties hold") {
    for_each_case([](const Entry&, Prepared& p) {
        for (const Property& prop : p.c.properties) {
            CAPTURE(prop.name);
            const std::string err = prop.check(PropertyContext{
                p.module.get(), p.inputs, p.c.masks,
                [&](const std::vector<Tensor>& x, const std::vector<Tensor>& m) { return p.evaluate(x, m); }});
            CHECK_MESSAGE(err.empty(), prop.name << ": " << err);
        }
    });
}
