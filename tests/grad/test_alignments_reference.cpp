// The alignments, catalog entries 22–28 (attention/alignments.hpp): their
// registry entries (tests/grad/catalog.hpp), checked against the plain-loop
// references of tests/grad/alignments_reference.hpp. Each case feeds scores
// B×m×n (x[0]; plus the queries of local-p, the tokens of ReSA, the values of
// the hard context) and a B×n key mask (masks[0]) to one alignment. The
// stochastic ones draw from the case's generator, reseeded before every run,
// and their references replay the same draws. Hand-computed catalog values,
// the statistical tests and the estimators are in test_alignments.cpp and
// test_alignments_stochastic.cpp.
#include <cmath>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "attention/alignments.hpp"
#include "tests/function.hpp"
#include "tests/grad/alignments_reference.hpp"
#include "tests/grad/catalog.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

// ---- shared pieces -----------------------------------------------------------------------------

// The case's B×n key mask as a B×1×n keep mask (undefined when the case has none).
Tensor key_mask_of(Masks masks) { return masks.empty() ? Tensor() : key_mask(masks[0]); }

// The reference's B×m×n keep mask for the scores E.
Array keep_of_case(const Ref& r, const Array& E) {
    return keep_keys(r.masks.empty() ? Array() : r.masks[0], E.size(0), E.size(1), E.size(2));
}

Outputs weights_only(const Var& a) { return {{"weights", a}}; }
std::vector<Expected> expect_weights(Array A) { return {{"weights", std::move(A)}}; }

std::string fail_at(const std::string& what, int64_t flat, double got, double want) {
    std::ostringstream os;
    os << what << " at flat index " << flat << ": " << got << ", expected " << want;
    return os.str();
}

// Changing the scores of masked keys (x[scores][b, :, l] with mask[b, l] = 0)
// changes no output, and those scores get exactly zero gradient.
Property masked_scores_inert(Run run, int scores = 0) {
    return {"the scores of masked keys change nothing and get no gradient",
            [=](const PropertyContext& c) -> std::string {
                const Tensor& mask = c.masks.at(0);
                const Tensor& e = c.inputs[static_cast<size_t>(scores)];
                const int64_t B = e.size(0), m = e.size(1), n = e.size(2);
                auto masked = [&](int64_t f) { return mask[(f / (m * n)) * n + f % n] == 0; };
                std::vector<Tensor> changed = c.inputs;
                Tensor& t = changed[static_cast<size_t>(scores)] = e.clone();
                for (int64_t f = 0; f < B * m * n; ++f)
                    if (masked(f)) t[f] += real(4 + f % 3);
                const Evaluation before = c.run(c.inputs, c.masks), after = c.run(changed, c.masks);
                for (size_t k = 0; k < before.outputs.size(); ++k) {
                    const Tensor &x = before.outputs[k].value.value(), &y = after.outputs[k].value.value();
                    for (int64_t f = 0; f < x.numel(); ++f)
                        if (std::abs(x[f] - y[f]) > 1e-12 * (1 + std::abs(x[f])))
                            return fail_at(before.outputs[k].name + " after changing masked scores", f, y[f], x[f]);
                }
                std::vector<Var> x;
                for (const Tensor& in : c.inputs) x.emplace_back(in, true);
                Var loss;
                for (const Named& o : run(c.module, x, c.masks))
                    if (o.differentiable) {
                        const Var term = sum(o.value * o.value);
                        loss = loss.defined() ? loss + term : term;
                    }
                if (!loss.defined()) return "";  // nothing differentiable (a straight-through forward)
                loss.backward();
                const Tensor& g = x[static_cast<size_t>(scores)].grad();
                if (!g.defined()) return "";  // the scores reach no differentiable output
                for (int64_t f = 0; f < g.numel(); ++f) {
                    if (!std::isfinite(g[f])) return fail_at("the scores' gradient", f, g[f], 0);
                    if (masked(f) && g[f] != 0) return fail_at("the gradient to a masked score", f, g[f], 0);
                }
                return "";
            }};
}

// Adding a constant to each row of scores changes nothing (softmax-based alignments).
Property shift_invariant(const std::string& weights) {
    return {"adding a constant to a row of scores changes nothing", [=](const PropertyContext& c) -> std::string {
                std::vector<Tensor> x = c.inputs;
                Tensor& e = x[0] = x[0].clone();
                const int64_t n = e.size(2);
                for (int64_t f = 0; f < e.numel(); ++f) e[f] += real(1.5 + (f / n) % 4);
                const Evaluation before = c.run(c.inputs, c.masks), after = c.run(x, c.masks);
                const Tensor &a = before[weights], &s = after[weights];
                for (int64_t f = 0; f < a.numel(); ++f)
                    if (std::abs(a[f] - s[f]) > 1e-12) return fail_at(weights + " after a shift", f, s[f], a[f]);
                return "";
            }};
}

// Changing one score e[0, 0, j] moves only a[0, 0, j] (σ and ReLU/{1, n}).
Property local(int64_t j) {
    return {"changing e_j leaves a_l (l ≠ j) unchanged", [=](const PropertyContext& c) -> std::string {
                std::vector<Tensor> x = c.inputs;
                x[0] = x[0].clone();
                x[0][j] = std::abs(x[0][j]) + 1;  // positive, so ReLU moves too
                const Evaluation before = c.run(c.inputs, c.masks), after = c.run(x, c.masks);
                const Tensor &a = before["weights"], &s = after["weights"];
                for (int64_t f = 0; f < a.numel(); ++f)
                    if (f != j && a[f] != s[f])
                        return fail_at("weights after changing e_" + std::to_string(j), f, s[f], a[f]);
                return a[j] == s[j] ? "a_j did not move" : "";
            }};
}

// The alignment says its rows need not sum to 1.
Property not_normalized() {
    return {"normalized() is false", [](const PropertyContext& c) -> std::string {
                return static_cast<Alignment*>(c.module)->normalized() ? "normalized() claims rows sum to 1" : "";
            }};
}

// Every row of `name` (last axis) is one-hot, or zero.
Property one_hot_rows(const std::string& name) {
    return {name + " rows are one-hot (or zero)", [=](const PropertyContext& c) -> std::string {
                const Evaluation ev = c.run(c.inputs, c.masks);
                const Tensor& a = ev[name];
                const int64_t n = a.size(-1);
                for (int64_t r = 0; r < a.numel() / n; ++r) {
                    double total = 0;
                    for (int64_t l = 0; l < n; ++l) {
                        if (a[r * n + l] != 0 && a[r * n + l] != 1) return fail_at(name, r * n + l, a[r * n + l], 1);
                        total += a[r * n + l];
                    }
                    if (total > 1) return name + ": row " + std::to_string(r) + " has several ones";
                }
                return "";
            }};
}

// The 0/1 output `name` holds both values, so the case exercises both paths.
Property takes_both_values(const std::string& name) {
    return {name + " has both 0s and 1s", [=](const PropertyContext& c) -> std::string {
                const Evaluation ev = c.run(c.inputs, c.masks);
                const Tensor& t = ev[name];
                bool zero = false, one = false;
                for (int64_t f = 0; f < t.numel(); ++f) zero = zero || t[f] == 0, one = one || t[f] == 1;
                return zero && one ? "" : name + " is constant: the case misses a path";
            }};
}

// Each row of the context equals one row of the values (x[values]) exactly, or is 0.
Property one_row_of_values(int values) {
    return {"each context is exactly one row of V", [=](const PropertyContext& c) -> std::string {
                const Evaluation ev = c.run(c.inputs, c.masks);
                const Tensor& C = ev["output"];
                const Tensor& V = c.inputs[static_cast<size_t>(values)];
                const int64_t B = V.size(0), n = V.size(1), d = V.size(2), m = C.size(1);
                for (int64_t b = 0; b < B; ++b)
                    for (int64_t i = 0; i < m; ++i) {
                        bool found = true;  // the zero context of a fully masked row
                        for (int64_t k = 0; k < d; ++k) found = found && C[(b * m + i) * d + k] == 0;
                        for (int64_t l = 0; l < n && !found; ++l) {
                            found = true;
                            for (int64_t k = 0; k < d; ++k)
                                found = found && C[(b * m + i) * d + k] == V[(b * n + l) * d + k];
                        }
                        if (!found) return "the context of query " + std::to_string(i) + " of example " +
                                           std::to_string(b) + " is no row of V";
                    }
                return "";
            }};
}

// Equals what `other` gives on the same scores and masks (e.g. local-m with D ≥ n and soft).
Property same_as(const std::string& what, Function<Var(const Var&, const Tensor&)> other) {
    return {"equals " + what, [=](const PropertyContext& c) -> std::string {
                const Evaluation ev = c.run(c.inputs, c.masks);
                const Tensor& a = ev["weights"];
                const Tensor b = other(Var(c.inputs[0]), c.masks.empty() ? Tensor() : key_mask(c.masks[0])).value();
                for (int64_t f = 0; f < a.numel(); ++f)
                    if (std::abs(a[f] - b[f]) > 1e-12) return fail_at("weights vs " + what, f, a[f], b[f]);
                return "";
            }};
}

const Tensor kMask35 = keep_first({3, 5}, 5);  // example 0 keeps 3 of 5 keys
const KeySet kWeightsMasked{.mask = 0, .inputs = {}, .weights = {"weights"}};

// ---- 22. soft_alignment ------------------------------------------------------------------------

Case soft_case(std::string variant, double T, Shape scores, Tensor mask, bool causal = false) {
    const bool masked = mask.defined();
    Run run = [causal](Module* m, In x, Masks masks) {
        Tensor keep = key_mask_of(masks);
        if (causal) keep = combine_masks(keep, causal_mask(x[0].size(1), x[0].size(2)));
        return weights_only(as<SoftAlignment>(m).align({x[0], keep, Var(), Tensor()}));
    };
    Case c{.variant = std::move(variant),
           .inputs = {scores},
           .masks = masked ? std::vector<Tensor>{mask} : std::vector<Tensor>{},
           .make = [T](Generator&) { return std::make_unique<SoftAlignment>(T); },
           .run = run,
           .reference = [T, causal](const Ref& r) {
               const Array& E = r.x[0];
               Array keep = keep_of_case(r, E);
               const int64_t m = E.size(1), n = E.size(2);
               if (causal)  // query i sees key l ≤ i + (n − m)
                   for (int64_t f = 0; f < keep.numel(); ++f) keep[f] *= (f % n) <= (f / n) % m + (n - m) ? 1 : 0;
               return expect_weights(soft_alignment_reference(E, keep, T));
           },
           .properties = {rows_sum_to_one("weights"), shift_invariant("weights")}};
    if (masked) {
        c.masking = {kWeightsMasked};
        c.properties.push_back(masked_scores_inert(run));
    }
    return c;
}

const RegisterEntry soft_entry(22, "soft_alignment", {
    soft_case("T = 1, 3 queries over 5 keys", 1, Shape{2, 3, 5}, Tensor()),
    soft_case("T = 0.5 (sharper), padding", 0.5, Shape{2, 3, 5}, kMask35),
    soft_case("T = 2 (flatter), causal and padding masks combined (B×m×n)", 2, Shape{2, 4, 6}, keep_first({6, 4}, 6),
              true),
});

// ---- 23. hard_alignment ------------------------------------------------------------------------
// Outputs: the weights, the context c = onehot(m) V (x[1]), and the REINFORCE
// pieces of last(): a, m, log a_m, H[a], and which rows took the expected context.
// The context is composed as general_attention composes it: the padded values
// hidden first (attention/general.hpp), since an alignment sees only scores.

Outputs hard_outputs(Module* m, In x, Masks masks) {
    auto& hard = as<HardAlignment>(m);
    const Tensor keep = key_mask_of(masks);
    const Var w = hard.align({x[0], keep, Var(), Tensor()});
    const HardAlignment::Sample& s = hard.last();
    return {{"weights", w, false},        {"output", attend(w, hide_unseen_keys(x[1], keep))}, {"probs", s.probs},
            {"indices", Var(s.indices), false}, {"log_prob", s.log_prob}, {"entropy", s.entropy},
            {"soft", Var(s.soft), false}};
}

Case hard_case(std::string variant, bool training, HardAlignment::Options o, Shape scores, Shape values,
               std::vector<int64_t> lengths = {}) {
    if (lengths.empty()) lengths = {3, scores[2]};
    Case c{.variant = std::move(variant),
           .inputs = {scores, values},
           .masks = {keep_first(lengths, scores[2])},
           .make = [o](Generator& g) { return std::make_unique<HardAlignment>(g, o); },
           .run = hard_outputs,
           .reference = [o](const Ref& r) {
               const Array &E = r.x[0], &V = r.x[1];
               const bool sample = r.training || o.sample_in_eval;
               const HardDraw d = hard_alignment_reference(E, keep_of_case(r, E), r.noise, sample,
                                                           r.training ? o.soft_probability : 0);
               Array C({E.size(0), E.size(1), V.size(2)});  // c_i = Σ_l w_il v_l
               for (int64_t b = 0; b < E.size(0); ++b)
                   for (int64_t i = 0; i < E.size(1); ++i)
                       for (int64_t l = 0; l < E.size(2); ++l)
                           set_row(C, b, i, add(row(C, b, i), scale(row(V, b, l), d.weights(b, i, l))));
               return std::vector<Expected>{{"weights", d.weights}, {"output", C},           {"probs", d.probs},
                                            {"indices", d.indices}, {"log_prob", d.log_prob}, {"entropy", d.entropy},
                                            {"soft", d.soft}};
           },
           .masking = {{.mask = 0, .inputs = {1}, .weights = {"weights", "probs"},
                        .zero_when_empty = {"output", "log_prob", "entropy"}}},
           .properties = {rows_sum_to_one("weights"), rows_sum_to_one("probs"), masked_scores_inert(hard_outputs)},
           .training = training};
    if (!training || o.soft_probability == 0) {  // no row takes the expected context
        c.properties.push_back(one_row_of_values(1));
        c.properties.push_back(one_hot_rows("weights"));
    }
    return c;
}

const RegisterEntry hard_entry(23, "hard_alignment", {
    hard_case("training: m ~ Categorical(a), replayed", true, {}, Shape{2, 3, 5}, Shape{2, 5, 4}),
    hard_case("evaluation: m = argmax a", false, {}, Shape{2, 3, 5}, Shape{2, 5, 2}),
    hard_case("evaluation with sample_in_eval: m sampled", false, {.sample_in_eval = true}, Shape{2, 4, 5},
              Shape{2, 5, 3}),
    [] {
        Case c = hard_case("training, expected context with probability 0.5", true, {.soft_probability = 0.5},
                           Shape{2, 4, 5}, Shape{2, 5, 3});
        c.properties.push_back(takes_both_values("soft"));
        return c;
    }(),
    hard_case("training, soft_probability 1: every row takes the expected context", true, {.soft_probability = 1},
              Shape{2, 2, 5}, Shape{2, 5, 2}),
    hard_case("evaluation ignores soft_probability 0.5: argmax", false, {.soft_probability = 0.5}, Shape{2, 3, 5},
              Shape{2, 5, 2}),
    hard_case("training, example 1 fully masked: index −1, log a_m 0, a zero context", true, {.soft_probability = 0.5},
              Shape{2, 3, 4}, Shape{2, 4, 2}, {3, 0}),
});

// ---- 24. local_monotonic_alignment ----------------------------------------------------------------
// positions: B×m window centres (empty: the query's index i).

// Centres that are not one per query (B×(m+1), and B×(m−1)) are refused:
// read as they come, they would put each window in another query's place.
const Property positions_of_another_shape_refused{
    "positions not one per query (B×(m+1), B×(m−1)) are refused with an error",
    [](const PropertyContext& c) -> std::string {
        const Tensor& e = c.inputs[0];
        const int64_t B = e.size(0), m = e.size(1);
        for (const int64_t columns : {m + 1, m - 1}) {
            if (columns == 0) continue;
            const Tensor wrong = Tensor::zeros(Shape{B, columns});
            try {
                as<LocalMonotonicAlignment>(c.module).align({Var(e), Tensor(), Var(), wrong});
            } catch (const std::logic_error& error) {
                const std::string what = error.what();
                if (what.rfind("not implemented", 0) == 0) return "not written yet (" + what + ")";
                continue;
            } catch (const std::exception& error) {
                return std::string("positions ") + wrong.shape().str() + ": an error that is not a refusal: " + error.what();
            }
            return "positions " + wrong.shape().str() + " for scores " + e.shape().str() + " gave weights instead of an error";
        }
        return "";
    }};

Case local_m_case(std::string variant, int64_t D, Shape scores, std::vector<real> positions, Tensor mask) {
    const int64_t B = scores[0], m = scores[1], n = scores[2];
    const Tensor p = positions.empty() ? Tensor() : Tensor::from(positions, Shape{B, m});
    Run run = [p](Module* mod, In x, Masks masks) {
        return weights_only(as<LocalMonotonicAlignment>(mod).align({x[0], key_mask_of(masks), Var(), p}));
    };
    Case c{.variant = std::move(variant),
           .inputs = {scores},
           .masks = {mask.defined() ? mask : keep_first(std::vector<int64_t>(static_cast<size_t>(B), n), n)},
           .make = [D](Generator&) { return std::make_unique<LocalMonotonicAlignment>(D); },
           .run = run,
           .reference = [D, p](const Ref& r) {
               return expect_weights(local_monotonic_reference(r.x[0], keep_of_case(r, r.x[0]), D, Array(p)));
           },
           .masking = {kWeightsMasked},
           .properties = {rows_sum_to_one("weights"), shift_invariant("weights"), masked_scores_inert(run),
                          positions_of_another_shape_refused}};
    if (D >= n)
        c.properties.push_back(same_as("soft_alignment", [](const Var& e, const Tensor& keep) {
            return SoftAlignment().align({e, keep, Var(), Tensor()});
        }));
    return c;
}

const RegisterEntry local_m_entry(24, "local_monotonic_alignment", {
    local_m_case("D = 1, centred on the query index, clipped at the start, padding", 1, Shape{2, 4, 6}, {},
                 keep_first({6, 3}, 6)),
    local_m_case("D = 2, given centres at both ends and between positions, padding", 2, Shape{2, 3, 6},
                 {0, 5, 2, 3, 1.5, 4}, keep_first({6, 4}, 6)),
    local_m_case("D = 0: the centre alone", 0, Shape{2, 2, 4}, {1, 3, 0, 2}, Tensor()),
    local_m_case("D = 1, more queries than keys: windows clipped at the end, or empty", 1, Shape{2, 5, 3}, {},
                 keep_first({3, 2}, 3)),
    local_m_case("D ≥ n is soft_alignment", 5, Shape{2, 3, 5}, {}, kMask35),
});

// ---- 25. local_predictive_alignment ----------------------------------------------------------------
// x[1]: the queries B×m×d_q that predict p_t (W_p d_p×d_q, v_p d_p).

Outputs local_p_outputs(Module* m, In x, Masks masks) {
    return weights_only(as<LocalPredictiveAlignment>(m).align({x[0], key_mask_of(masks), x[1], Tensor()}));
}

std::vector<Expected> local_p_reference(const Ref& r, int64_t D) {
    const Array& E = r.x[0];
    const Array keep = keep_of_case(r, E);
    const Array centres = local_predictive_centres(r.x[1], r.p["W_p"], vec(r.p["v_p"]), keep);
    return expect_weights(local_predictive_reference(E, keep, centres, D));
}

Case local_p_case(std::string variant, int64_t d_q, int64_t d_p, int64_t D, Shape scores, Tensor mask) {
    return {.variant = std::move(variant),
            .inputs = {scores, Shape{scores[0], scores[1], d_q}},
            .masks = {mask},
            .make = [=](Generator& g) { return std::make_unique<LocalPredictiveAlignment>(d_q, d_p, D, g); },
            .run = local_p_outputs,
            .reference = [D](const Ref& r) { return local_p_reference(r, D); },
            .masking = {kWeightsMasked},
            .properties = {not_normalized(), bounded("weights", 0, 1), masked_scores_inert(local_p_outputs)}};
}

const RegisterEntry local_p_entry(25, "local_predictive_alignment", {
    local_p_case("D = 2, W_p 4×3, 2 queries over 6 keys", 3, 4, 2, Shape{2, 2, 6}, keep_first({6, 6}, 6)),
    local_p_case("D = 1, square W_p 3×3, padding: S counts the kept keys", 3, 3, 1, Shape{2, 3, 7},
                 keep_first({7, 4}, 7)),
    local_p_case("D = 3, W_p 2×5, padding", 5, 2, 3, Shape{2, 3, 8}, keep_first({5, 8}, 8)),
    {.variant = "weights_at given centres p_t (x[1]): the gradient through the Gaussian",
     .inputs = {Shape{2, 3, 7}, Shape{2, 3, 1}},
     .masks = {keep_first({7, 5}, 7)},
     .run = [](Module*, In x, Masks masks) {
         Generator unused(0);  // W_p and v_p play no part once p_t is given
         const LocalPredictiveAlignment local_p(1, 1, 2, unused);
         return weights_only(local_p.weights_at(x[0], x[1], key_mask_of(masks)));
     },
     .reference = [](const Ref& r) {
         const Array& E = r.x[0];
         Array centres({E.size(0), E.size(1)});
         for (int64_t f = 0; f < centres.numel(); ++f) centres[f] = r.x[1][f];
         return expect_weights(local_predictive_reference(E, keep_of_case(r, E), centres, 2));
     },
     .masking = {kWeightsMasked},
     .properties = {bounded("weights", 0, 1)},
     .draw = [](Generator& g) {  // centres inside [0, n), away from the window's edges
         std::vector<Tensor> x{Tensor::normal(Shape{2, 3, 7}, 0, 1, g), Tensor::zeros(Shape{2, 3, 1})};
         for (int64_t f = 0; f < 6; ++f) x[1][f] = real(0.3 + 1.1 * static_cast<double>(f) + 0.2 * g.uniform());
         return x;
     }},
});

// ---- 26. reinforced_alignment -------------------------------------------------------------------------
// x[0]: the tokens B×n×d (the queries of self-attention), x[1]: scores B×n×n.
// Outputs: the weights and each sampler's π, z and log p(z). (ReSA's REINFORCE
// loss, once it exists, adds its outputs here.)

Outputs resa_outputs(Module* m, In x, Masks masks) {
    auto& resa = as<ReinforcedAlignment>(m);
    const Var w = resa.align({x[1], key_mask_of(masks), x[0], Tensor()});
    const auto &att = resa.last_attending(), &ed = resa.last_attended();
    return {{"weights", w},
            {"pi_attending", att.probs}, {"z_attending", Var(att.z), false}, {"log_prob_attending", att.log_prob},
            {"pi_attended", ed.probs},   {"z_attended", Var(ed.z), false},   {"log_prob_attended", ed.log_prob}};
}

SamplerDraw sampler_reference(const Ref& r, const std::string& name, const Array& valid) {
    return resa_sampler_reference(r.x[0], valid, r.p[name + ".W_1"], vec(r.p[name + ".b_1"]), vec(r.p[name + ".w_2"]),
                                  r.p[name + ".b_2"][0], r.noise, r.training);
}

std::vector<Expected> resa_reference(const Ref& r) {
    const Array& E = r.x[1];
    const Array valid = r.masks[0];  // a token is real if its key is kept
    const SamplerDraw att = sampler_reference(r, "attending", valid);  // drawn first
    const SamplerDraw ed = sampler_reference(r, "attended", valid);
    return {{"weights", restricted_softmax_reference(E, keep_of_case(r, E), att.z, ed.z)},
            {"pi_attending", att.probs}, {"z_attending", att.z}, {"log_prob_attending", att.log_prob},
            {"pi_attended", ed.probs},   {"z_attended", ed.z},   {"log_prob_attended", ed.log_prob}};
}

// Pair (i, l) gets weight 0 unless z^att_i = z^ed_l = 1.
Property zero_outside_selection() {
    return {"unselected pairs get weight exactly 0", [](const PropertyContext& c) -> std::string {
                const Evaluation ev = c.run(c.inputs, c.masks);
                const Tensor &a = ev["weights"], &za = ev["z_attending"], &ze = ev["z_attended"];
                const int64_t n = a.size(2);
                for (int64_t f = 0; f < a.numel(); ++f) {
                    const int64_t b = f / (n * n), i = (f / n) % n, l = f % n;
                    if ((za[b * n + i] == 0 || ze[b * n + l] == 0) && a[f] != 0) return fail_at("weights", f, a[f], 0);
                }
                return "";
            }};
}

Case resa_case(std::string variant, bool training, Shape tokens, Tensor mask) {
    const int64_t B = tokens[0], n = tokens[1];
    Case c{.variant = std::move(variant),
           .inputs = {tokens, Shape{B, n, n}},
           .masks = {mask},
           .make = [tokens](Generator& g) { return std::make_unique<ReinforcedAlignment>(tokens[2], 4, g); },
           .run = resa_outputs,
           .reference = resa_reference,
           .masking = {{.mask = 0, .inputs = {}, .weights = {"weights"},
                        .zero_when_empty = {"z_attending", "z_attended", "log_prob_attending", "log_prob_attended"}}},
           .properties = {zero_outside_selection(), rows_sum_to_one("weights"), takes_both_values("z_attending"),
                          takes_both_values("z_attended"), masked_scores_inert(resa_outputs, 1)},
           .training = training};
    return c;
}

// restricted_softmax with the selections given (B×m and B×n constants of the case).
Case restricted_case(std::string variant, Shape scores, std::vector<real> z_att, std::vector<real> z_ed) {
    const int64_t B = scores[0], m = scores[1], n = scores[2];
    const Tensor za = Tensor::from(z_att, Shape{B, m}), ze = Tensor::from(z_ed, Shape{B, n});
    Case c{.variant = std::move(variant),
           .inputs = {scores},
           .masks = {keep_first({n, n - 1}, n)},
           .run = [za, ze](Module*, In x, Masks masks) {
               return weights_only(ReinforcedAlignment::restricted_softmax(x[0], key_mask_of(masks), za, ze));
           },
           .reference = [za, ze](const Ref& r) {
               const Array& E = r.x[0];
               return expect_weights(restricted_softmax_reference(E, keep_of_case(r, E), Array(za), Array(ze)));
           },
           .masking = {kWeightsMasked},
           .properties = {rows_sum_to_one("weights")}};
    bool all = true;
    for (real z : z_att) all = all && z == 1;
    for (real z : z_ed) all = all && z == 1;
    if (all)
        c.properties.push_back(same_as("soft_alignment", [](const Var& e, const Tensor& keep) {
            return SoftAlignment().align({e, keep, Var(), Tensor()});
        }));
    return c;
}

const RegisterEntry resa_entry(26, "reinforced_alignment", {
    resa_case("training: z ~ Bernoulli(π) for both samplers, replayed; padding", true, Shape{2, 5, 3},
              keep_first({5, 3}, 5)),
    resa_case("evaluation: z = [π > 0.5]; padding, example 1 fully masked", false, Shape{3, 6, 2},
              keep_first({6, 0, 5}, 6)),
    restricted_case("restricted softmax, 3 queries over 4 keys, a query with nothing selected", Shape{2, 3, 4},
                    {1, 0, 1, 1, 1, 0}, {1, 1, 0, 1, 0, 1, 1, 1}),
    restricted_case("restricted softmax with every z = 1 is soft_alignment", Shape{2, 3, 4}, {1, 1, 1, 1, 1, 1},
                    {1, 1, 1, 1, 1, 1, 1, 1}),
});

// ---- 27. gumbel_softmax_alignment ------------------------------------------------------------------------

Case gumbel_case(std::string variant, double tau, bool straight_through, bool training, Shape scores, Tensor mask) {
    // The straight-through forward is one-hot, with no finite-difference
    // gradient: its backward is checked against the relaxed sample's Jacobian
    // in test_alignments_stochastic.cpp.
    Run run = [straight_through](Module* m, In x, Masks masks) {
        const Var y = as<GumbelSoftmaxAlignment>(m).align({x[0], key_mask_of(masks), Var(), Tensor()});
        return Outputs{{"weights", y, !straight_through}};
    };
    Case c{.variant = std::move(variant),
           .inputs = {scores},
           .masks = {mask},
           .make = [=](Generator& g) { return std::make_unique<GumbelSoftmaxAlignment>(g, tau, straight_through); },
           .run = run,
           .reference = [=](const Ref& r) {
               return expect_weights(gumbel_softmax_reference(r.x[0], keep_of_case(r, r.x[0]), r.noise, tau, r.training,
                                                              straight_through));
           },
           .masking = {kWeightsMasked},
           .properties = {rows_sum_to_one("weights"), masked_scores_inert(run)},
           .training = training,
           .check_gradient = !straight_through};
    if (straight_through) c.properties.push_back(one_hot_rows("weights"));
    if (!training)
        c.properties.push_back(same_as("soft_alignment at temperature τ", [tau](const Var& e, const Tensor& keep) {
            return SoftAlignment(tau).align({e, keep, Var(), Tensor()});
        }));
    return c;
}

const RegisterEntry gumbel_entry(27, "gumbel_softmax_alignment", {
    gumbel_case("training, τ = 0.5, noise replayed, padding", 0.5, false, true, Shape{2, 3, 5}, kMask35),
    gumbel_case("training, τ = 2, one query", 2, false, true, Shape{3, 1, 4}, keep_first({4, 4, 2}, 4)),
    gumbel_case("training, straight-through τ = 0.7: one-hot forward", 0.7, true, true, Shape{2, 3, 5}, kMask35),
    gumbel_case("evaluation, τ = 2: no noise", 2, false, false, Shape{2, 3, 5}, kMask35),
});

// ---- 28. elementwise_alignment ------------------------------------------------------------------------

Case elementwise_case(std::string variant, ElementwiseAlignment::Kind kind, ElementwiseAlignment::Normalizer norm,
                      ElementwiseRef ref, double eps, Tensor mask) {
    Run run = [](Module* m, In x, Masks masks) {
        return weights_only(as<ElementwiseAlignment>(m).align({x[0], key_mask_of(masks), Var(), Tensor()}));
    };
    Case c{.variant = std::move(variant),
           .inputs = {Shape{2, 3, 5}},
           .masks = {mask},
           .make = [=](Generator&) { return std::make_unique<ElementwiseAlignment>(kind, norm, eps); },
           .run = run,
           .reference = [=](const Ref& r) {
               return expect_weights(elementwise_reference(r.x[0], keep_of_case(r, r.x[0]), ref, eps));
           },
           .masking = {kWeightsMasked},
           .properties = {not_normalized(), masked_scores_inert(run)}};
    if (ref != ElementwiseRef::relu_sum) c.properties.push_back(local(1));
    if (ref == ElementwiseRef::sigmoid) c.properties.push_back(bounded("weights", 0, 1));
    return c;
}

using EK = ElementwiseAlignment::Kind;
using EN = ElementwiseAlignment::Normalizer;

const RegisterEntry elementwise_entry(28, "elementwise_alignment", {
    elementwise_case("σ(e), padding", EK::sigmoid, EN::one, ElementwiseRef::sigmoid, 1e-6, kMask35),
    elementwise_case("ReLU(e) / 1", EK::relu, EN::one, ElementwiseRef::relu_one, 1e-6, keep_first({5, 5}, 5)),
    elementwise_case("ReLU(e) / n, n the kept count, padding", EK::relu, EN::length, ElementwiseRef::relu_length, 1e-6,
                     kMask35),
    elementwise_case("ReLU(e) / (Σ ReLU + ε), padding", EK::relu, EN::sum, ElementwiseRef::relu_sum, 1e-6, kMask35),
    elementwise_case("ReLU(e) / (Σ ReLU + ε) with ε = 0.5", EK::relu, EN::sum, ElementwiseRef::relu_sum, 0.5,
                     keep_first({4, 2}, 5)),
});

}  // namespace
