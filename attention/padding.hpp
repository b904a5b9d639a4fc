// The padding rule, in one place: what a masked position may hold.
//
// Every mechanism promises that a key no query may attend (padding) takes no
// part in anything, whatever its row holds, NaN and inf included, and that a
// query that may attend no key gets zero weights, a zero output and a zero
// gradient (catalog property 3, tests/grad/test_catalog.cpp). The formulas
// alone do not keep that promise:
//
//   A mask is applied to the scores by selection (a masked score becomes −∞,
//   so its weight is exactly 0), never by adding −∞ (NaN + (−∞) = NaN). But
//   the products around it still read every key and value: a weight of 0
//   times a NaN or an inf is NaN (IEEE), and so is the gradient that
//   multiplies it (dQ = dE K with dE = 0 at a masked key).
//
// So each mechanism hands its inputs to one of the functions below where its
// mask meets its data, on its first lines, and its formula then reads
// `visible` rows only: the rows no query may attend replaced by zeros, by
// selection, whose backward sends them exactly 0. Every function here returns
// its input itself when the input is finite (a finite padded row already
// contributes exactly 0·x = 0), so the common case costs one scan and builds
// nothing; nothing in this file is part of any formula. Stepping through a
// mechanism in gdb, `skip file attention/padding.cpp` steps over all of it.
//
// A non-finite value a query may see is not hidden: it propagates as NaN
// (IEEE, as in PyTorch), and the trainers stop on the non-finite loss
// (examples/common/finite_guard.hpp). docs/attention/general.md, "Masks".
#pragma once

#include <string>

#include "autograd/ops.hpp"

namespace attn {

// Whether every value of t is finite (no NaN, no ±inf).
bool finite_everywhere(const Tensor& t);

// x …×n×d (keys, values, or the features they are projected from), keep a
// keep mask broadcastable to …×m×n (undefined = keep all; with a causal rule
// as well, pass the combined mask). Returns x with the rows of the keys whose
// mask column is 0 for every query set to 0; x itself when there are none,
// or when x is all finite.
Var hide_unseen_keys(const Var& x, const Tensor& keep);

// Its twin for the queries: x …×m×d (queries, or the features they are
// projected from) with the rows of queries that may attend no key (fully
// masked rows) set to 0, when x holds a non-finite value. Such a query gets
// zero weights and a zero output whatever it holds; without this its NaN
// would still reach the keys' gradient, dK = dSᵀQ with dS = 0.
Var hide_fully_masked_queries(const Var& x, const Tensor& keep);

// The two together, for a mechanism with queries, keys and values: what its
// formula may read. keep broadcastable to B×m×n (undefined = keep all).
struct VisibleInputs {
    Var queries, keys, values;
};
VisibleInputs visible(const Var& queries, const Var& keys, const Var& values, const Tensor& keep);
// The same for multi-head attention's inputs, before their split into heads:
// mask broadcastable to B×m×n, or per head B×h×m×n (a key is kept for a query
// when any head keeps it); `causal` adds the causal rule. Self-attention may
// pass one tensor as queries, keys and values: it is scanned once.
VisibleInputs visible_to_heads(const Var& queries, const Var& keys, const Var& values, const Tensor& mask, bool causal);

// A sequence's padded rows: x B×n×… with the rows whose B×n mask is 0 set to
// 0 (x itself when the mask is undefined or x is finite). For the mechanisms
// whose inputs are sequences with a token mask (co-attention, sentence pairs,
// set pooling). Throws naming `who` when the mask is not B×n.
Var hide_padded_rows(const std::string& who, const Var& x, const Tensor& mask);

// ---- scaled dot-product attention: a non-finite value a query may see --------
// Both SDPA versions (attention/scaled_dot_product.cpp and its fused twin,
// attention/fused_attention.cpp) go further than hiding what no query sees:
// with a causal mask, query i must not see key j > i, but query j does. So
// they compute with the finite part of K and V (each non-finite entry
// replaced by 0, by selection) and then give NaN to exactly the queries that
// may see a non-finite entry:
//
//     key row j has a non-finite entry   → NaN score e_ij for every query i   (nan_at_bad_keys;
//                                          the mask then removes the masked ones)
//     V_jc is non-finite                 → NaN output O_ic for every query i
//                                          whose mask keeps key j             (nan_at_seen_bad_values)
//
// So a key masked for a query (padding; a later key under the causal mask)
// changes neither that query's weights, output nor gradients, and a padded
// key gets a zero gradient; a query that may see a non-finite key or value
// gets NaN (IEEE would give NaN or ±inf there; we always say NaN).
struct FiniteKeysValues {
    Var keys, values;   // K and V with every non-finite entry replaced by 0 (K, V themselves if finite)
    Tensor bad_keys;    // …×1×n: 1 where row j of K has a non-finite entry; undefined if none does
    Tensor bad_values;  // …×n×d_v: 1 where V_jc is non-finite; undefined if none is
};
FiniteKeysValues finite_keys_values(const Var& keys, const Var& values);
// scores …×m×n → NaN in the columns of the bad keys (the scores themselves
// when bad_keys is undefined). Apply before the mask.
Var nan_at_bad_keys(const Var& scores, const Tensor& bad_keys);
// output …×m×d_v → NaN where query i may attend (mask and causal rule) a key j
// whose V_jc is non-finite (the output itself when bad_values is undefined).
Var nan_at_seen_bad_values(const Var& output, const Tensor& mask, bool causal, const Tensor& bad_values);

}  // namespace attn
