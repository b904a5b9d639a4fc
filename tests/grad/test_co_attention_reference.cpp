// The independent references of co-attention and rotatory attention, catalog
// entries 3–9 (attention/co_attention.hpp): each catalog formula written again
// in plain loops with tests/grad/reference.hpp, reading the module's parameters
// by name; and the properties of the catalog's "Test:" lines that the ready-made
// ones of catalog.hpp do not cover. Their registry entries are in test_co_attention.cpp.
//
// Every reference works one example b at a time, over the rows, with the masks
// as keep vectors (1 = a real row):
//   F1 B×n1×d1, F2 B×n2×d2, mask1 B×n1, mask2 B×n2 → contexts B×d_i, weights B×n_i.
#include "tests/function.hpp"
#include "tests/grad/test_co_attention_reference.hpp"

#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace attn::testing {

namespace {

// ---- helpers of the references (plain loops, nothing from attention/) ---------------------

// tanh of every element
Vec tanh_of(const Vec& v) {
    Vec y(v.size());
    for (size_t i = 0; i < v.size(); ++i) y[i] = std::tanh(v[i]);
    return y;
}

// Σ_l a_l f_l over the rows of F[b]
Vec weighted_sum(const Array& F, int64_t b, const Vec& a) {
    Vec c(static_cast<size_t>(F.size(2)), 0.0);
    for (int64_t l = 0; l < F.size(1); ++l) c = add(c, scale(row(F, b, l), a[static_cast<size_t>(l)]));
    return c;
}

// (1/n) Σ_l f_l over the kept rows of F[b]; 0 when none is kept
Vec masked_mean(const Array& F, int64_t b, const Vec& keep) {
    const double kept = sum(keep);
    return scale(weighted_sum(F, b, keep), 1.0 / std::max(kept, 1.0));
}

// One attention over the rows of F[b]: a = softmax(e) over the kept rows, c = Σ_l a_l f_l.
struct Pooled {
    Vec context, weights;
};
Pooled pool(const Array& F, int64_t b, const Vec& e, const Vec& keep) {
    const Vec a = softmax(e, keep);
    return {weighted_sum(F, b, a), a};
}

// Per-example results by name, stacked into B×(shape) arrays in the order first added.
class Results {
public:
    // example b's `name`: a vector, or an array of `shape` flattened
    void add(const std::string& name, const Vec& v, std::vector<int64_t> shape = {}) {
        if (!rows_.count(name)) {
            names_.push_back(name);
            shapes_[name] = shape.empty() ? std::vector<int64_t>{static_cast<int64_t>(v.size())} : shape;
        }
        rows_[name].push_back(v);
    }
    std::vector<Expected> done() const {
        std::vector<Expected> out;
        for (const std::string& name : names_) {
            const std::vector<Vec>& rows = rows_.at(name);
            std::vector<int64_t> shape{static_cast<int64_t>(rows.size())};
            for (int64_t s : shapes_.at(name)) shape.push_back(s);
            Array A(shape);
            int64_t k = 0;
            for (const Vec& v : rows)
                for (double x : v) A[k++] = x;
            out.push_back({name, A});
        }
        return out;
    }

private:
    std::vector<std::string> names_;
    std::map<std::string, std::vector<Vec>> rows_;
    std::map<std::string, std::vector<int64_t>> shapes_;
};

// ---- the score functions the mechanisms use, for one (query, key) pair ---------------------
using Score = Function<double(const Vec& q, const Vec& k)>;

// entry 20: tanh(kᵀ W q + b), W d_k×d_q, b a scalar
Score activated_general(const Params& p, const std::string& name) {
    const Array W = p[name + ".W"];
    const double bias = p[name + ".b"][0];
    return [W, bias](const Vec& q, const Vec& k) { return std::tanh(dot(k, matvec(W, q)) + bias); };
}
// entry 18: kᵀ W q
Score general(const Params& p, const std::string& name) {
    const Array W = p[name + ".W"];
    return [W](const Vec& q, const Vec& k) { return dot(k, matvec(W, q)); };
}
// entry 19: kᵀ (W q + b), b d_k
Score biased_general(const Params& p, const std::string& name) {
    const Array W = p[name + ".W"];
    const Vec bias = vec(p[name + ".b"]);
    return [W, bias](const Vec& q, const Vec& k) { return dot(k, add(matvec(W, q), bias)); };
}
// entry 15: wᵀ tanh(W_1 q + W_2 k + b)
Score additive(const Params& p, const std::string& name) {
    const Array W_1 = p[name + ".W_1"], W_2 = p[name + ".W_2"];
    const Vec bias = vec(p[name + ".b"]), w = vec(p[name + ".w"]);
    return [=](const Vec& q, const Vec& k) { return dot(w, tanh_of(add(add(matvec(W_1, q), matvec(W_2, k)), bias))); };
}

Score score_of(const Params& p, const std::string& name, CoScore kind) {
    switch (kind) {
        case CoScore::activated_general: return activated_general(p, name);
        case CoScore::additive: return additive(p, name);
        case CoScore::biased_general: return biased_general(p, name);
        case CoScore::general: return general(p, name);
    }
    throw std::invalid_argument("interactive_co_attention_reference: unknown score");
}

// ---- 3. alternating_co_attention ---------------------------------------------------------------
// Lu et al.'s operator A(X; g) on example b, with the parameters of `score`:
//   e_l = wᵀ tanh(W_q g + W x_l + b)     W = score.W_2 d_w×d, W_q = score.W_1 d_w×d_g, b, w d_w
// without the W_q g term when there is no guide (step 1: e_l = wᵀ tanh(W x_l + b));
// a = softmax(e) over the kept rows, x̂ = Σ_l a_l x_l.
Pooled guided_pool(const Ref& r, const std::string& score, const Array& X, int64_t b, const Vec& keep,
                   const Vec* guide) {
    const Array W = r.p[score + ".W_2"], W_q = r.p[score + ".W_1"];
    const Vec bias = vec(r.p[score + ".b"]), w = vec(r.p[score + ".w"]);
    Vec e(static_cast<size_t>(X.size(1)));
    for (int64_t l = 0; l < X.size(1); ++l) {
        Vec pre = add(matvec(W, row(X, b, l)), bias);
        if (guide) pre = add(pre, matvec(W_q, *guide));
        e[static_cast<size_t>(l)] = dot(w, tanh_of(pre));
    }
    return pool(X, b, e, keep);
}

}  // namespace

// 1. c^(0) = A_1(F1; none)   2. c^(2) = A_2(F2; c^(0))   3. c^(1) = A_1(F1; c^(2))
// output [c^(1); c^(2)] B×(d1+d2); contexts c^(0), c^(1) B×d1, c^(2) B×d2; weights a^(0), a^(1) B×n1, a^(2) B×n2
std::vector<Expected> alternating_co_attention_reference(const Ref& r) {
    const Array &F1 = r.x[0], &F2 = r.x[1];
    Results out;
    for (int64_t b = 0; b < F1.size(0); ++b) {
        const Vec keep1 = keep_row(mask_or_all(r, 0), b, F1.size(1));
        const Vec keep2 = keep_row(mask_or_all(r, 1), b, F2.size(1));
        const Pooled s0 = guided_pool(r, "score1", F1, b, keep1, nullptr);
        const Pooled s2 = guided_pool(r, "score2", F2, b, keep2, &s0.context);
        const Pooled s1 = guided_pool(r, "score1", F1, b, keep1, &s2.context);
        out.add("output", concat(s1.context, s2.context));
        out.add("context0", s0.context);
        out.add("context1", s1.context);
        out.add("context2", s2.context);
        out.add("weights0", s0.weights);
        out.add("weights1", s1.weights);
        out.add("weights2", s2.weights);
    }
    return out.done();
}

// ---- 4. interactive_co_attention -----------------------------------------------------------------
// k̄^(i) = (1/n_i) Σ_l k^(i)_l over the kept rows
// e^(1)_l = score_12(k̄^(2), k^(1)_l),  e^(2)_l = score_21(k̄^(1), k^(2)_l)
// a^(i) = softmax(e^(i)),  c^(i) = Σ_l a^(i)_l k^(i)_l;  output [c^(1); c^(2)]
std::vector<Expected> interactive_co_attention_reference(const Ref& r, CoScore kind_12, CoScore kind_21) {
    const Array &F1 = r.x[0], &F2 = r.x[1];
    const Score score_12 = score_of(r.p, "score_12", kind_12), score_21 = score_of(r.p, "score_21", kind_21);
    Results out;
    for (int64_t b = 0; b < F1.size(0); ++b) {
        const Vec keep1 = keep_row(mask_or_all(r, 0), b, F1.size(1));
        const Vec keep2 = keep_row(mask_or_all(r, 1), b, F2.size(1));
        const Vec mean1 = masked_mean(F1, b, keep1), mean2 = masked_mean(F2, b, keep2);
        Vec e1, e2;
        for (int64_t l = 0; l < F1.size(1); ++l) e1.push_back(score_12(mean2, row(F1, b, l)));
        for (int64_t l = 0; l < F2.size(1); ++l) e2.push_back(score_21(mean1, row(F2, b, l)));
        const Pooled c1 = pool(F1, b, e1, keep1), c2 = pool(F2, b, e2, keep2);
        out.add("output", concat(c1.context, c2.context));
        out.add("context1", c1.context);
        out.add("context2", c2.context);
        out.add("weights1", c1.weights);
        out.add("weights2", c2.weights);
    }
    return out.done();
}

namespace {

// ---- 6. trilinear_affinity -----------------------------------------------------------------------
// A_ij = w_Aᵀ [k1_i; k2_j; k1_i ∘ k2_j],  w_A 3d
double trilinear(const Vec& w_A, const Vec& k1, const Vec& k2) {
    return dot(w_A, concat(concat(k1, k2), hadamard(k1, k2)));
}

// K1 B×n1×d, K2 B×n2×d → A B×n1×n2
Array trilinear_matrix(const Array& K1, const Array& K2, const Vec& w_A) {
    Array A({K1.size(0), K1.size(1), K2.size(1)});
    for (int64_t b = 0; b < K1.size(0); ++b)
        for (int64_t i = 0; i < K1.size(1); ++i)
            for (int64_t j = 0; j < K2.size(1); ++j) A(b, i, j) = trilinear(w_A, row(K1, b, i), row(K2, b, j));
    return A;
}

}  // namespace

// keys1 B×n1×d, keys2 B×n2×d, w_A 3d → "affinity" B×n1×n2
std::vector<Expected> trilinear_affinity_reference(const Ref& r) {
    return {{"affinity", trilinear_matrix(r.x[0], r.x[1], vec(r.p["w_A"]))}};
}

// ---- 5. parallel_co_attention ----------------------------------------------------------------
// A_ij = tanh(affinity(k1_i, k2_j)) for kept rows i and columns j, else 0   (the module's choice)
// H1_i = tanh(W_1 k1_i + Σ_j A_ij W_2 k2_j),   H2_j = tanh(W_2 k2_j + Σ_i A_ij W_1 k1_i)
// e1_i = w_1ᵀ H1_i,  e2_j = w_2ᵀ H2_j;  a^(i) = softmax(e^(i)),  c^(i) = Σ_l a^(i)_l f^(i)_l
// W_1 d_w×d1, W_2 d_w×d2, w_1, w_2 d_w; affinity: bilinear k1ᵀ W_A k2 (W_A d1×d2) or trilinear.
std::vector<Expected> parallel_co_attention_reference(const Ref& r, bool trilinear_affinity) {
    const Array &F1 = r.x[0], &F2 = r.x[1];
    const Array W_1 = r.p["W_1"], W_2 = r.p["W_2"];
    const Vec w_1 = vec(r.p["w_1"]), w_2 = vec(r.p["w_2"]);
    const Score affinity = trilinear_affinity
                               ? Score([w_A = vec(r.p["affinity.w_A"])](const Vec& k1, const Vec& k2) {
                                     return trilinear(w_A, k1, k2);
                                 })
                               : Score([W_A = r.p["affinity.W_A"]](const Vec& k1, const Vec& k2) {
                                     return dot(k1, matvec(W_A, k2));
                                 });
    const int64_t n1 = F1.size(1), n2 = F2.size(1);
    Results out;
    for (int64_t b = 0; b < F1.size(0); ++b) {
        const Vec keep1 = keep_row(mask_or_all(r, 0), b, n1), keep2 = keep_row(mask_or_all(r, 1), b, n2);
        Vec A(static_cast<size_t>(n1 * n2));
        for (int64_t i = 0; i < n1; ++i)
            for (int64_t j = 0; j < n2; ++j)
                A[static_cast<size_t>(i * n2 + j)] = keep1[static_cast<size_t>(i)] * keep2[static_cast<size_t>(j)] *
                                                     std::tanh(affinity(row(F1, b, i), row(F2, b, j)));
        Vec e1, e2;
        for (int64_t i = 0; i < n1; ++i) {
            Vec h = matvec(W_1, row(F1, b, i));
            for (int64_t j = 0; j < n2; ++j)
                h = add(h, scale(matvec(W_2, row(F2, b, j)), A[static_cast<size_t>(i * n2 + j)]));
            e1.push_back(dot(w_1, tanh_of(h)));
        }
        for (int64_t j = 0; j < n2; ++j) {
            Vec h = matvec(W_2, row(F2, b, j));
            for (int64_t i = 0; i < n1; ++i)
                h = add(h, scale(matvec(W_1, row(F1, b, i)), A[static_cast<size_t>(i * n2 + j)]));
            e2.push_back(dot(w_2, tanh_of(h)));
        }
        const Pooled c1 = pool(F1, b, e1, keep1), c2 = pool(F2, b, e2, keep2);
        out.add("output", concat(c1.context, c2.context));
        out.add("context1", c1.context);
        out.add("context2", c2.context);
        out.add("weights1", c1.weights);
        out.add("weights2", c2.weights);
        out.add("affinity", A, {n1, n2});
    }
    return out.done();
}

namespace {

// ---- 7. max_affinity_co_attention --------------------------------------------------------------
// On example b of A B×n1×n2, with masked entries (row i or column j not kept) left out:
//   e1_i = max_j A_ij,  e2_j = max_i A_ij;  a row (column) with no entry left gets no weight
//   a^(i) = softmax(e^(i)),  c^(i) = Σ_l a^(i)_l v^(i)_l
struct MaxAffinity {
    Pooled side1, side2;
};
MaxAffinity max_affinity(const Array& A, const Array& V1, const Array& V2, int64_t b, const Vec& keep1,
                         const Vec& keep2) {
    const int64_t n1 = A.size(1), n2 = A.size(2);
    Vec e1(static_cast<size_t>(n1), -INFINITY), e2(static_cast<size_t>(n2), -INFINITY);
    for (int64_t i = 0; i < n1; ++i)
        for (int64_t j = 0; j < n2; ++j)
            if (keep1[static_cast<size_t>(i)] != 0 && keep2[static_cast<size_t>(j)] != 0) {
                e1[static_cast<size_t>(i)] = std::max(e1[static_cast<size_t>(i)], A(b, i, j));
                e2[static_cast<size_t>(j)] = std::max(e2[static_cast<size_t>(j)], A(b, i, j));
            }
    // the rows (columns) that saw at least one entry
    Vec alive1(e1.size()), alive2(e2.size());
    for (size_t i = 0; i < e1.size(); ++i) alive1[i] = std::isfinite(e1[i]) ? 1 : 0;
    for (size_t j = 0; j < e2.size(); ++j) alive2[j] = std::isfinite(e2[j]) ? 1 : 0;
    return {pool(V1, b, e1, alive1), pool(V2, b, e2, alive2)};
}

}  // namespace

// A B×n1×n2, V1 B×n1×d_v, V2 B×n2×d_v' → output [c^(1); c^(2)], contexts, weights
std::vector<Expected> max_affinity_co_attention_reference(const Ref& r) {
    const Array &A = r.x[0], &V1 = r.x[1], &V2 = r.x[2];
    Results out;
    for (int64_t b = 0; b < A.size(0); ++b) {
        const Vec keep1 = keep_row(mask_or_all(r, 0), b, A.size(1)), keep2 = keep_row(mask_or_all(r, 1), b, A.size(2));
        const MaxAffinity m = max_affinity(A, V1, V2, b, keep1, keep2);
        out.add("output", concat(m.side1.context, m.side2.context));
        out.add("context1", m.side1.context);
        out.add("context2", m.side2.context);
        out.add("weights1", m.side1.weights);
        out.add("weights2", m.side2.weights);
    }
    return out.done();
}

// ---- 8. multi_grained_co_attention -------------------------------------------------------------
// Context H B×n×d, aspect T B×n_t×d; W_ca = coarse.score_12.W, W_cc = coarse.score_21.W (d×d), w_U = fine.w_A (3d):
//   m_ca = Σ_i softmax_i(h_iᵀ W_ca t̄) h_i,   m_cc = Σ_j softmax_j(t_jᵀ W_cc h̄) t_j     (means over kept rows)
//   U_ij = w_Uᵀ [h_i; t_j; h_i ∘ t_j]
//   m_fa = Σ_i softmax_i(max_j U_ij) h_i                  (entry 7 over U)
//   q_i = Σ_j softmax_j(U_ij) t_j,   m_fc = (1/n) Σ_i q_i (over kept context words)
// output [m_ca; m_cc; m_fa; m_fc] B×4d, as its four quarters; the weights of each branch and U.
std::vector<Expected> multi_grained_co_attention_reference(const Ref& r) {
    const Array &H = r.x[0], &T = r.x[1];
    const int64_t n = H.size(1), n_t = T.size(1);
    const Score W_ca = general(r.p, "coarse.score_12"), W_cc = general(r.p, "coarse.score_21");
    const Array U = trilinear_matrix(H, T, vec(r.p["fine.w_A"]));
    Results out;
    for (int64_t b = 0; b < H.size(0); ++b) {
        const Vec keep_h = keep_row(mask_or_all(r, 0), b, n), keep_t = keep_row(mask_or_all(r, 1), b, n_t);
        const Vec h_mean = masked_mean(H, b, keep_h), t_mean = masked_mean(T, b, keep_t);
        Vec e_ca, e_cc;
        for (int64_t i = 0; i < n; ++i) e_ca.push_back(W_ca(t_mean, row(H, b, i)));
        for (int64_t j = 0; j < n_t; ++j) e_cc.push_back(W_cc(h_mean, row(T, b, j)));
        const Pooled ca = pool(H, b, e_ca, keep_h), cc = pool(T, b, e_cc, keep_t);
        const MaxAffinity fine = max_affinity(U, H, T, b, keep_h, keep_t);
        Vec m_fc(static_cast<size_t>(H.size(2)), 0.0), fine_aspect;
        for (int64_t i = 0; i < n; ++i) {
            Vec u;
            for (int64_t j = 0; j < n_t; ++j) u.push_back(U(b, i, j));
            const Pooled q = pool(T, b, u, keep_t);
            fine_aspect = concat(fine_aspect, q.weights);
            m_fc = add(m_fc, scale(q.context, keep_h[static_cast<size_t>(i)]));
        }
        m_fc = scale(m_fc, 1.0 / std::max(sum(keep_h), 1.0));
        out.add("m_ca", ca.context);
        out.add("m_cc", cc.context);
        out.add("m_fa", fine.side1.context);
        out.add("m_fc", m_fc);
        out.add("coarse_context", ca.weights);
        out.add("coarse_aspect", cc.weights);
        out.add("fine_context", fine.side1.weights);
        out.add("fine_aspect", fine_aspect, {n, n_t});
        Vec u_b;
        for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < n_t; ++j) u_b.push_back(U(b, i, j));
        out.add("affinity", u_b, {n, n_t});
    }
    return out.done();
}

namespace {

// ---- 9. rotatory_attention ---------------------------------------------------------------------
// Attn(q; F) = Σ_i softmax_i(tanh(f_iᵀ W q + b)) f_i over the kept rows of F[b], (W, b) = score's
Pooled rotatory_attn(const Ref& r, const std::string& score, const Vec& q, const Array& F, int64_t b,
                     const Vec& keep) {
    const Score s = activated_general(r.p, score);
    Vec e;
    for (int64_t i = 0; i < F.size(1); ++i) e.push_back(s(q, row(F, b, i)));
    return pool(F, b, e, keep);
}

}  // namespace

// r^t = (1/n_t) Σ_i f^t_i;  q_l = q_r = r^t; then `hops` times:
//   r^l = Attn_l(q_l; F^l),  r^r = Attn_r(q_r; F^r),  r^lt = Attn_tl(r^l; F^t),  r^rt = Attn_tr(r^r; F^t)
//   q_l = r^lt,  q_r = r^rt
// output [r^l; r^r; r^lt; r^rt] B×(d_l + d_r + 2 d_t); the last hop's four weight vectors.
std::vector<Expected> rotatory_attention_reference(const Ref& r, int hops) {
    const Array &L = r.x[0], &T = r.x[1], &R = r.x[2];
    Results out;
    for (int64_t b = 0; b < T.size(0); ++b) {
        const Vec keep_l = keep_row(mask_or_all(r, 0), b, L.size(1));
        const Vec keep_t = keep_row(mask_or_all(r, 1), b, T.size(1));
        const Vec keep_r = keep_row(mask_or_all(r, 2), b, R.size(1));
        Vec q_l = masked_mean(T, b, keep_t), q_r = q_l;
        Pooled left, right, target_left, target_right;
        for (int hop = 0; hop < hops; ++hop) {
            left = rotatory_attn(r, "score_left", q_l, L, b, keep_l);
            right = rotatory_attn(r, "score_right", q_r, R, b, keep_r);
            target_left = rotatory_attn(r, "score_target_left", left.context, T, b, keep_t);
            target_right = rotatory_attn(r, "score_target_right", right.context, T, b, keep_t);
            q_l = target_left.context;
            q_r = target_right.context;
        }
        out.add("output", concat(concat(left.context, right.context), concat(target_left.context, target_right.context)));
        out.add("left", left.context);
        out.add("right", right.context);
        out.add("target_left", target_left.context);
        out.add("target_right", target_right.context);
        out.add("weights_left", left.weights);
        out.add("weights_right", right.weights);
        out.add("weights_target_left", target_left.weights);
        out.add("weights_target_right", target_right.weights);
    }
    return out.done();
}

// ---- properties of the catalog's "Test:" lines --------------------------------------------------

namespace {

// "" when want and got agree to 1e-12, else where they differ.
std::string differ(const std::string& what, const Tensor& want, const Tensor& got) {
    if (!(want.shape() == got.shape()))
        return what + ": shape " + got.shape().str() + ", expected " + want.shape().str();
    for (int64_t i = 0; i < want.numel(); ++i)
        if (!(std::abs(want[i] - got[i]) <= 1e-12)) {
            std::ostringstream os;
            os << what << " at flat index " << i << ": " << got[i] << ", expected " << want[i];
            return os.str();
        }
    return "";
}

}  // namespace

// Changing input `changed` changes `output`.
Property depends_on(int changed, std::string output) {
    return {output + " depends on input " + std::to_string(changed), [=](const PropertyContext& c) -> std::string {
                std::vector<Tensor> x = c.inputs;
                Tensor& t = x[static_cast<size_t>(changed)] = x[static_cast<size_t>(changed)].clone();
                for (int64_t i = 0; i < t.numel(); ++i) t[i] = t[i] * real(-1.5) + real(0.25);
                const bool same = differ(output, c.run(c.inputs, c.masks)[output], c.run(x, c.masks)[output]).empty();
                return same ? output + " did not change when input " + std::to_string(changed) + " did" : "";
            }};
}

// 3: with W_q^(1) = 0 (score1.W_1), step 3 is step 1 again: a^(1) = a^(0).
Property zero_query_map_repeats_step_1() {
    return {"W_q^(1) = 0 gives step 3 the weights of step 1", [](const PropertyContext& c) -> std::string {
                Var W_q;
                for (const auto& [name, p] : c.module->named_parameters())
                    if (name == "score1.W_1") W_q = p;
                if (!W_q.defined()) return std::string("the module has no parameter score1.W_1");
                const Tensor saved = W_q.value().clone();
                W_q.value().fill_(0);
                const Evaluation e = c.run(c.inputs, c.masks);
                W_q.value().copy_(saved);
                return differ("weights1 with W_q^(1) = 0", e["weights0"], e["weights1"]);
            }};
}

// 7: reversing input 2 (the columns of A, the rows of V2 and of mask2) leaves
// e^(1), so a^(1) and c^(1), unchanged.
Property reordering_input_2_keeps_side_1() {
    return {"reordering input 2 leaves a^(1) and c^(1) unchanged", [](const PropertyContext& c) -> std::string {
                std::vector<Tensor> x = c.inputs, m = c.masks;
                const Tensor &A = c.inputs[0], &V2 = c.inputs[2];
                const int64_t B = A.size(0), n1 = A.size(1), n2 = A.size(2), d = V2.size(2);
                x[0] = A.clone(), x[2] = V2.clone();
                for (int64_t b = 0; b < B; ++b)
                    for (int64_t j = 0; j < n2; ++j) {
                        const int64_t jr = n2 - 1 - j;
                        for (int64_t i = 0; i < n1; ++i) x[0][(b * n1 + i) * n2 + jr] = A[(b * n1 + i) * n2 + j];
                        for (int64_t k = 0; k < d; ++k) x[2][(b * n2 + jr) * d + k] = V2[(b * n2 + j) * d + k];
                    }
                if (m.size() > 1 && m[1].defined()) {
                    m[1] = c.masks[1].clone();
                    for (int64_t b = 0; b < B; ++b)
                        for (int64_t j = 0; j < n2; ++j) m[1][b * n2 + n2 - 1 - j] = c.masks[1][b * n2 + j];
                }
                const Evaluation before = c.run(c.inputs, c.masks), after = c.run(x, m);
                const std::string err = differ("weights1", before["weights1"], after["weights1"]);
                return err.empty() ? differ("context1", before["context1"], after["context1"]) : err;
            }};
}

// 7: changing the entries of A in a masked column (a padded row of input 2) changes nothing.
Property masked_columns_of_A_change_nothing() {
    return {"a masked column of A changes nothing", [](const PropertyContext& c) -> std::string {
                const Tensor& mask2 = c.masks.at(1);
                std::vector<Tensor> x = c.inputs;
                Tensor& A = x[0] = x[0].clone();
                const int64_t B = A.size(0), n1 = A.size(1), n2 = A.size(2);
                for (int64_t b = 0; b < B; ++b)
                    for (int64_t j = 0; j < n2; ++j)
                        if (mask2[b * n2 + j] == 0)
                            for (int64_t i = 0; i < n1; ++i) A[(b * n1 + i) * n2 + j] += real(5 + i);
                const Evaluation before = c.run(c.inputs, c.masks), after = c.run(x, c.masks);
                for (const char* name : {"output", "weights1", "weights2"}) {
                    const std::string err = differ(name, before[name], after[name]);
                    if (!err.empty()) return err;
                }
                return "";
            }};
}

}  // namespace attn::testing
