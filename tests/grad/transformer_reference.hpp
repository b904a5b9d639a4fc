// What the independent references of the Transformer family share (entries
// 37, 38, 40, 41, 44, 45, 48–50, 82, 83; tests/grad/test_transformer.cpp,
// test_self_attention.cpp, test_multi_head.cpp): which keys a query may see,
// one query's scaled dot-product attention, multi-head attention and a LayerNorm, written in plain
// loops over tests/grad/reference.hpp; and the properties of self-attention
// that the catalog's "Test:" lines ask for.
//
// Nothing here calls attention/, autograd/, nn/ or the tensor ops, so a
// mistake in the library cannot make a reference agree with it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tests/grad/catalog.hpp"
#include "tests/grad/reference.hpp"

namespace attn::testing {

// ---- which keys a query sees --------------------------------------------------------
// Key j of n is visible to query i of m (in example b) when every rule holds:
//   padding  the B×n keep mask of the case (empty: every key)
//   causal   j ≤ i + n − m (the last query sees every key; m = n: j ≤ i)
//   holes    an m×n keep mask (empty: none)
//   band     |i − j| ≤ band (band < 0: no band)
struct Visible {
    Array padding;
    bool causal = false;
    Array holes;
    int64_t band = -1;
    Vec keep(int64_t b, int64_t i, int64_t m, int64_t n) const;
};
// The keys a case's queries see: its masks[0] as the padding (if any), its
// masks[1] as the holes (if any), and the causal rule if asked.
Visible visible_keys(const Ref& r, bool causal);

// ---- attention of one query, in plain loops -----------------------------------------
// e_l = q·k_l / τ,  a = softmax_l(e) over the visible keys (all 0 if none),
// y = Σ_l a_l v_l.
struct Attended {
    Vec output;   // d_v
    Vec weights;  // n
};
Attended one_query_attention(const Vec& q, const std::vector<Vec>& keys, const std::vector<Vec>& values,
                             const Vec& keep, double tau);

// The rows of one example (or one head): X[t, i, :] for i = 0..n−1, t the
// flat index of the leading axes (b, or b·h + j for B×h×n×d).
std::vector<Vec> rows_of(const Array& X, int64_t t);
// Writes row i of example t: X[t, i, :] = v (leading axes flattened).
void set_flat_row(Array& X, int64_t t, int64_t i, const Vec& v);

// xᵀ W for W of shape in×out (the XW form: the weight multiplies rows from the right).
Vec times(const Vec& x, const Array& W);
// The entries x[from, from + count).
Vec part(const Vec& x, int64_t from, int64_t count);

// LayerNorm of one row (torch.nn.LayerNorm): γ ∘ (x − μ)/√(σ² + ε) + β,
// μ and the biased σ² over the row.
Vec layer_norm_row(const Vec& x, const Vec& gamma, const Vec& beta, double eps = 1e-5);

// ---- entry 40, and 82 and 83 built on it ------------------------------------------
// 40: head_j = Attn(Q W^Q_j + b^Q_j, K W^K_j + b^K_j, V W^V_j + b^V_j)     (entry 44)
//     MH = [g_1 head_1, …, g_h head_h] W^O + b^O                       (g_j = 1 but in entry 49)
//   W^Q_j, W^K_j d_model×d_k and W^V_j d_model×d_v are column block j of the
//   parameters W_Q, W_K d_model×(h·d_k), W_V d_model×(h·d_v); W_O (h·d_v)×d_model
//   (the XW form, as the module stores them); the biases only with `bias`.
//   queries B×m×d_model, keys, values B×n×d_model → output B×m×d_model, weights B×h×m×n.
struct Heads {
    std::string prefix;  // "" for entry 40, "mha." inside entry 49
    bool self = false;   // r.x[0] is the queries, keys and values (else r.x[0], r.x[1], r.x[2];
                         // r.x[0], r.x[1], r.x[1] when there are two: the memory is keys and values)
    int64_t h = 1;
    bool bias = false;
    Visible visible;
    Vec gates = {};  // one per head; empty: all 1
};

std::vector<Expected> multi_head_reference(const Ref& r, const Heads& heads);

// ---- properties -----------------------------------------------------------------------
// Self-attention without position information is permutation equivariant:
// reversing the rows of input `x` (and of the B×n mask `mask`, −1 for none)
// reverses `outputs` along axis 1, and `weights` (…×n×n) along both of
// their last two axes: Y(PX) = P Y(X), A(PX) = P A Pᵀ.
Property self_permutation_equivariant(int x, int mask, std::vector<std::string> outputs,
                                      std::vector<std::string> weights);

// An output and the axis along which its rows are the queries (1 for
// B×n×d, −2 for weights B×n×n or B×h×n×n).
struct QueryRows {
    std::string output;
    int axis;
};
// Causal attention: for every p, changing rows p, p+1, … (axis −2) of the
// `inputs` leaves the query rows before p of every output unchanged.
Property causal_rows(std::vector<int> inputs, std::vector<QueryRows> outputs);

// The generic checks of a self-attention case on X = input 0 (its keys are its
// queries: KeySet::self), and the properties its options allow: rows of the
// weights summing to 1, permutation equivariance without a causal rule (where
// nothing tells the positions apart), the causal rule with one.
void self_attention_checks(Case& c, bool causal, bool positions_known);

}  // namespace attn::testing
