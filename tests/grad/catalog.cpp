#include "tests/grad/catalog.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace attn::testing {

// ---- the registry ----------------------------------------------------------------------------

namespace {
std::vector<Entry>& entries() {
    static std::vector<Entry> all;
    return all;
}
}  // namespace

const std::vector<Entry>& catalog_registry() { return entries(); }

const Entry* find_entry(const std::string& id) {
    for (const Entry& e : entries())
        if (e.id == id) return &e;
    return nullptr;
}

RegisterEntry::RegisterEntry(int number, std::string id, std::vector<Case> cases) {
    for (Entry& e : entries()) {
        if (e.id != id) continue;
        if (e.number != number)
            throw std::logic_error("catalog registry: " + id + " registered as entry " + std::to_string(e.number) +
                                   " and as entry " + std::to_string(number));
        for (Case& c : cases) e.cases.push_back(std::move(c));
        return;
    }
    entries().push_back(Entry{number, std::move(id), std::move(cases)});
}

Array Params::operator[](const std::string& name) const {
    if (!module_) throw std::invalid_argument("reference: parameter " + name + " asked of a case without a module");
    std::string names;
    for (const auto& [n, v] : module_->named_parameters()) {
        if (n == name) return Array(v.value());
        names += (names.empty() ? "" : ", ") + n;
    }
    for (const auto& [n, t] : module_->state_dict()) {  // buffers too
        if (n == name) return Array(t);
    }
    throw std::invalid_argument("reference: the module has no parameter '" + name + "' (it has: " + names + ")");
}

const Tensor& Evaluation::operator[](const std::string& name) const {
    for (const Named& o : outputs)
        if (o.name == name) return o.value.value();
    throw std::invalid_argument("property: the case has no output '" + name + "'");
}

Array mask_or_all(const Ref& r, size_t i) { return i < r.masks.size() ? r.masks[i] : Array(); }

Tensor keep_first(const std::vector<int64_t>& lengths, int64_t n) {
    Tensor mask = Tensor::zeros(Shape{static_cast<int64_t>(lengths.size()), n});
    for (size_t b = 0; b < lengths.size(); ++b)
        for (int64_t l = 0; l < lengths[b] && l < n; ++l) mask[static_cast<int64_t>(b) * n + l] = 1;
    return mask;
}

// ---- ready-made properties ---------------------------------------------------------------------

namespace {

std::string where(const Array& a, int64_t flat) {
    std::string s = "[";
    int64_t rest = flat;
    std::vector<int64_t> idx(static_cast<size_t>(a.rank()));
    for (int axis = a.rank() - 1; axis >= 0; --axis) {
        idx[static_cast<size_t>(axis)] = rest % a.size(axis);
        rest /= a.size(axis);
    }
    for (size_t i = 0; i < idx.size(); ++i) s += (i ? ", " : "") + std::to_string(idx[i]);
    return s + "]";
}

// Sums over the axis `axis` (−1 or −2) of `a`: fails unless each is 1 or 0.
std::string sums_to_one(const std::string& name, const Array& a, int axis) {
    const int r = a.rank();
    const int ax = axis + r;
    const int64_t len = a.size(ax);
    int64_t inner = 1;
    for (int k = ax + 1; k < r; ++k) inner *= a.size(k);
    const int64_t outer = a.numel() / (len * inner);
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t in = 0; in < inner; ++in) {
            double s = 0;
            for (int64_t l = 0; l < len; ++l) s += a[(o * len + l) * inner + in];
            if (std::abs(s - 1) > 1e-9 && std::abs(s) > 1e-12) {
                std::ostringstream os;
                os << name << ": the slice at " << where(a, o * len * inner + in) << " along axis " << axis
                   << " sums to " << s << ", not 1 (or 0 when fully masked)";
                return os.str();
            }
        }
    return "";
}

// x with its rows (axis 1) reversed.
Tensor reversed_rows(const Tensor& x) {
    if (x.rank() < 2) return x.clone();
    Array a(x), out(x);
    const int64_t B = a.size(0), n = a.size(1), inner = a.numel() / (B * n);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t l = 0; l < n; ++l)
            for (int64_t k = 0; k < inner; ++k) out[(b * n + (n - 1 - l)) * inner + k] = a[(b * n + l) * inner + k];
    return out.tensor();
}

// x with its last axis reversed.
Tensor reversed_last(const Tensor& x) {
    Array a(x), out(x);
    const int64_t n = a.size(-1);
    for (int64_t o = 0; o < a.numel() / n; ++o)
        for (int64_t l = 0; l < n; ++l) out[o * n + (n - 1 - l)] = a[o * n + l];
    return out.tensor();
}

std::string compare(const std::string& what, const Tensor& expected, const Tensor& actual, double atol = 1e-9) {
    if (!(expected.shape() == actual.shape()))
        return what + ": shape " + actual.shape().str() + ", expected " + expected.shape().str();
    for (int64_t i = 0; i < expected.numel(); ++i)
        if (!(std::abs(expected[i] - actual[i]) <= atol + 1e-9 * std::abs(expected[i]))) {
            std::ostringstream os;
            os << what << " at " << where(Array(expected), i) << ": " << actual[i] << ", expected " << expected[i];
            return os.str();
        }
    return "";
}

}  // namespace

Property rows_sum_to_one(const std::string& weights) {
    return {"rows of " + weights + " sum to 1",
            [weights](const PropertyContext& c) {
                return sums_to_one(weights, Array(c.run(c.inputs, c.masks)[weights]), -1);
            }};
}

Property columns_sum_to_one(const std::string& weights) {
    return {"columns of " + weights + " sum to 1",
            [weights](const PropertyContext& c) {
                return sums_to_one(weights, Array(c.run(c.inputs, c.masks)[weights]), -2);
            }};
}

Property bounded(const std::string& output, double lo, double hi) {
    std::ostringstream name;
    name << output << " lies in [" << lo << ", " << hi << "]";
    return {name.str(), [output, lo, hi](const PropertyContext& c) -> std::string {
                const Array a(c.run(c.inputs, c.masks)[output]);
                for (int64_t i = 0; i < a.numel(); ++i)
                    if (!(a[i] >= lo && a[i] <= hi)) {
                        std::ostringstream os;
                        os << output << " at " << where(a, i) << " is " << a[i] << ", outside [" << lo << ", " << hi
                           << "]";
                        return os.str();
                    }
                return "";
            }};
}

Property permutation_invariant(std::vector<int> permuted, std::vector<int> permuted_masks,
                               std::vector<std::string> unchanged) {
    return {"reversing the rows of the set leaves the outputs unchanged",
            [=](const PropertyContext& c) -> std::string {
                std::vector<Tensor> x = c.inputs, m = c.masks;
                for (int i : permuted) x[static_cast<size_t>(i)] = reversed_rows(x[static_cast<size_t>(i)]);
                for (int i : permuted_masks) m[static_cast<size_t>(i)] = reversed_rows(m[static_cast<size_t>(i)]);
                const Evaluation before = c.run(c.inputs, c.masks), after = c.run(x, m);
                for (const std::string& name : unchanged) {
                    std::string err = compare(name + " after reversing", before[name], after[name]);
                    if (!err.empty()) return err;
                }
                return "";
            }};
}

Property permutation_equivariant_keys(std::vector<int> permuted, std::vector<int> permuted_masks,
                                      std::vector<std::string> weights) {
    return {"reversing the keys reverses the weights",
            [=](const PropertyContext& c) -> std::string {
                std::vector<Tensor> x = c.inputs, m = c.masks;
                for (int i : permuted) x[static_cast<size_t>(i)] = reversed_rows(x[static_cast<size_t>(i)]);
                for (int i : permuted_masks) m[static_cast<size_t>(i)] = reversed_rows(m[static_cast<size_t>(i)]);
                const Evaluation before = c.run(c.inputs, c.masks), after = c.run(x, m);
                for (const std::string& name : weights) {
                    std::string err = compare(name + " after reversing the keys", reversed_last(before[name]),
                                              after[name]);
                    if (!err.empty()) return err;
                }
                return "";
            }};
}

Property convex_combination(const std::string& output, int values, int mask) {
    return {output + " is a convex combination of the values",
            [=](const PropertyContext& c) -> std::string {
                const Array out(c.run(c.inputs, c.masks)[output]);
                const Array V(c.inputs[static_cast<size_t>(values)]);
                const int64_t B = V.size(0), n = V.size(1), d = V.size(-1);
                const int64_t per_batch = out.numel() / B;
                for (int64_t b = 0; b < B; ++b) {
                    const Vec keep = mask < 0 ? Vec(static_cast<size_t>(n), 1.0)
                                              : keep_row(Array(c.masks[static_cast<size_t>(mask)]), b, n);
                    for (int64_t k = 0; k < d; ++k) {
                        double lo = INFINITY, hi = -INFINITY;
                        for (int64_t l = 0; l < n; ++l)
                            if (keep[static_cast<size_t>(l)] != 0) {
                                lo = std::min(lo, V[(b * n + l) * d + k]);
                                hi = std::max(hi, V[(b * n + l) * d + k]);
                            }
                        if (lo > hi) continue;  // every key masked
                        for (int64_t o = k; o < per_batch; o += d) {
                            const double v = out[b * per_batch + o];
                            if (v < lo - 1e-9 || v > hi + 1e-9) {
                                std::ostringstream os;
                                os << output << " at " << where(out, b * per_batch + o) << " is " << v
                                   << ", outside the values' range [" << lo << ", " << hi << "]";
                                return os.str();
                            }
                        }
                    }
                }
                return "";
            }};
}

Property independent_of(int changed, std::vector<std::string> unchanged) {
    return {"changing input " + std::to_string(changed) + " leaves some outputs unchanged",
            [=](const PropertyContext& c) -> std::string {
                std::vector<Tensor> x = c.inputs;
                Tensor& t = x[static_cast<size_t>(changed)];
                t = t.clone();
                for (int64_t i = 0; i < t.numel(); ++i) t[i] = t[i] * real(-1.5) + real(0.25);
                const Evaluation before = c.run(c.inputs, c.masks), after = c.run(x, c.masks);
                for (const std::string& name : unchanged) {
                    std::string err = compare(name + " after changing input " + std::to_string(changed),
                                              before[name], after[name]);
                    if (!err.empty()) return err;
                }
                return "";
            }};
}

Property refuses_wider(int input, std::string name) {
    return {"refuses " + name + " one column wider, with an error",
            [=](const PropertyContext& c) -> std::string {
                std::vector<Tensor> x = c.inputs;
                Tensor& t = x[static_cast<size_t>(input)];
                std::vector<int64_t> dims = t.shape().to_vector();
                dims.back() += 1;
                t = Tensor::zeros(Shape(dims));
                try {
                    c.run(x, c.masks);
                } catch (const std::logic_error& e) {
                    // (a stub's "not implemented" is a std::logic_error too, and refuses nothing)
                    const std::string what = e.what();
                    return what.rfind("not implemented", 0) == 0 ? "not written yet (" + what + ")" : "";
                } catch (const std::exception& e) {
                    return std::string("it threw an error that is not a refusal of the arguments: ") + e.what();
                }
                return name + " " + t.shape().str() + " (a column wider than the case's) gave a result instead of an "
                       "error: a width that broadcasts (1 against 2) is no match";
            }};
}

}  // namespace attn::testing
