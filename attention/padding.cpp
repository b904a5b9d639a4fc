// The padding rule (attention/padding.hpp): the rows of a mechanism's inputs
// that no query may attend, hidden before its formula reads them, and the
// NaN that scaled dot-product attention gives to a query that may see a
// non-finite key or value.
#include "attention/padding.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "attention/general.hpp"
#include "tensor/ops.hpp"

namespace attn {

// ±∞ and NaN are the values whose exponent bits are all ones. The test runs
// over blocks without leaving a block early, so that the compiler vectorises
// it (a loop that may stop at any element stays scalar); a block of 1024
// still stops soon after the first bad value.
bool finite_everywhere(const Tensor& t) {
    using Bits = std::conditional_t<sizeof(real) == 4, uint32_t, uint64_t>;
    constexpr Bits exponent = sizeof(real) == 4 ? Bits(0x7F800000u) : Bits(0x7FF0000000000000ull);
    constexpr int64_t kBlock = 1024;
    const real* p = t.data();
    const int64_t n = t.numel();
    for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
        const int64_t i1 = std::min(n, i0 + kBlock);
        Bits bad = 0;
        for (int64_t i = i0; i < i1; ++i) bad |= Bits((std::bit_cast<Bits>(p[i]) & exponent) == exponent);
        if (bad != 0) return false;
    }
    return true;
}

Var hide_unseen_keys(const Var& x, const Tensor& keep) {
    if (!keep.defined() || finite_everywhere(x.value())) return x;
    const std::string shapes = "keys " + x.shape().str() + " and mask " + keep.shape().str();
    if (x.rank() < 2 || keep.rank() < 1 || keep.rank() > x.rank())
        throw std::invalid_argument("hide_unseen_keys: " + shapes +
                                    ": need keys …×n×d and a mask …×m×n of no higher rank");
    // seen_j = 1 when some query may attend key j: the mask's maximum over the
    // queries (its axis −2) of keep ≠ 0                                 …×n
    Tensor seen = sub(Tensor::scalar(1), eq(keep, Tensor::scalar(0)));
    if (seen.rank() >= 2) seen = max(seen, -2);
    if (seen.numel() == 0 || min(seen).item() != 0) return x;  // every key is seen by someone
    // …×n → …×n×1, a column that selects whole rows of x               …×n×1
    Shape column = seen.shape();
    column.push_back(1);
    seen = seen.reshape(column);
    if (broadcast_shapes(column, x.shape(), "hide_unseen_keys") != x.shape())
        throw std::invalid_argument("hide_unseen_keys: " + shapes + " do not fit: the mask's key axis must be n");
    // x_j ← seen_j ? x_j : 0, a selection (0·x_j would keep a NaN)          …×n×d
    return where(seen, x, Var(Tensor::scalar(0)));
}

Var hide_fully_masked_queries(const Var& x, const Tensor& keep) {
    if (!keep.defined() || finite_everywhere(x.value())) return x;
    const std::string shapes = "queries " + x.shape().str() + " and mask " + keep.shape().str();
    if (x.rank() < 2 || keep.rank() < 1 || keep.rank() > x.rank())
        throw std::invalid_argument("hide_fully_masked_queries: " + shapes +
                                    ": need queries …×m×d and a mask …×m×n of no higher rank");
    // alive_i = 1 when query i may attend some key: the maximum over the keys
    // (the mask's last axis) of keep ≠ 0                                  …×m×1
    Tensor alive = max(sub(Tensor::scalar(1), eq(keep, Tensor::scalar(0))), -1, /*keepdim=*/true);
    if (alive.rank() == 1) alive = alive.reshape(Shape{1, 1});  // a mask of keys only: one verdict for all
    if (alive.numel() == 0 || min(alive).item() != 0) return x;  // every query sees some key
    if (broadcast_shapes(alive.shape(), x.shape(), "hide_fully_masked_queries") != x.shape())
        throw std::invalid_argument("hide_fully_masked_queries: " + shapes +
                                    " do not fit: the mask's query axis must be m");
    // x_i ← alive_i ? x_i : 0, a selection                                 …×m×d
    return where(alive, x, Var(Tensor::scalar(0)));
}

VisibleInputs visible(const Var& queries, const Var& keys, const Var& values, const Tensor& keep) {
    return {hide_fully_masked_queries(queries, keep), hide_unseen_keys(keys, keep), hide_unseen_keys(values, keep)};
}

namespace {

// The keep mask as the inputs see it before the split into heads: a per-head mask (rank 4)
// keeps a key for a query when any head does; the causal rule is folded in.
// Undefined (nothing to hide) when every input is finite: a finite padded
// row already contributes exactly 0, and the common case builds nothing.
Tensor input_keep_mask(const Tensor& mask, bool causal, const Var& queries, const Var& keys, const Var& values) {
    // Self-attention passes one tensor as queries, keys and values: it is read once.
    const Tensor &q = queries.value(), &k = keys.value(), &v = values.value();
    auto same = [](const Tensor& a, const Tensor& b) { return a.data() == b.data() && a.numel() == b.numel(); };
    if (finite_everywhere(q) && (same(k, q) || finite_everywhere(k)) &&
        (same(v, q) || same(v, k) || finite_everywhere(v)))
        return {};
    const Tensor keep =
        mask.defined() && mask.rank() == 4 ? max(sub(Tensor::scalar(1), eq(mask, Tensor::scalar(0))), 1) : mask;
    return combine_masks(keep, causal ? causal_mask(queries.size(1), keys.size(1)) : Tensor());
}

}  // namespace

VisibleInputs visible_to_heads(const Var& queries, const Var& keys, const Var& values, const Tensor& mask,
                               bool causal) {
    return visible(queries, keys, values, input_keep_mask(mask, causal, queries, keys, values));
}

Var hide_padded_rows(const std::string& who, const Var& x, const Tensor& mask) {
    if (!mask.defined()) return x;
    if (x.rank() < 2 || mask.rank() != 2 || mask.size(0) != x.size(0) || mask.size(1) != x.size(1))
        throw std::invalid_argument(who + ": mask " + mask.shape().str() + " does not fit " + x.shape().str() +
                                    ": it needs B×n, one 0/1 per row of each sequence");
    return hide_unseen_keys(x, key_mask(mask));  // B×n → B×1×n: the rows no query may attend
}

// ---- non-finite keys and values ------------------------------------------------------

namespace {

constexpr real kNaN = std::numeric_limits<real>::quiet_NaN();

// 1 where x is not finite, 0 elsewhere; undefined when x is all finite.
Tensor non_finite(const Tensor& x) {
    if (finite_everywhere(x)) return {};
    Tensor bad = Tensor::zeros(x.shape());
    const real* p = x.data();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) bad[i] = std::isfinite(p[i]) ? 0 : 1;
    return bad;
}

}  // namespace

FiniteKeysValues finite_keys_values(const Var& keys, const Var& values) {
    FiniteKeysValues out{keys, values, {}, {}};
    const Var zero(Tensor::scalar(0));
    // K ← bad ? 0 : K, a selection: its backward sends the bad entries 0
    if (const Tensor bad = non_finite(keys.value()); bad.defined()) {
        out.keys = where(bad, zero, keys);
        // any over each row: …×n×1, laid out again as …×1×n (the same order in memory)
        const Tensor any = max(bad, -1, /*keepdim=*/true);
        const int r = any.rank();
        out.bad_keys = any.reshape(any.shape().with(r - 2, 1).with(r - 1, any.size(r - 2)));
    }
    if (const Tensor bad = non_finite(values.value()); bad.defined()) {
        out.values = where(bad, zero, values);
        out.bad_values = bad;
    }
    return out;
}

Var nan_at_bad_keys(const Var& scores, const Tensor& bad_keys) {
    if (!bad_keys.defined()) return scores;
    return where(bad_keys, Var(Tensor::scalar(kNaN)), scores);  // e_ij ← NaN for bad key j   …×m×n
}

Var nan_at_seen_bad_values(const Var& output, const Tensor& mask, bool causal, const Tensor& bad_values) {
    if (!bad_values.defined()) return output;
    const int64_t m = output.size(-2), n = bad_values.size(-2);
    // sees_ij = 1 when query i may attend key j (all ones without a mask)    …×m×n
    Tensor sees = combine_masks(mask, causal ? causal_mask(m, n) : Tensor());
    sees = sees.defined() ? sub(Tensor::scalar(1), eq(sees, Tensor::scalar(0))) : Tensor::ones(Shape{m, n});
    if (sees.rank() == 1) sees = sees.reshape(Shape{1, sees.size(0)});                   // a mask of keys only
    if (sees.size(-1) != n) sees = expand(sees, sees.shape().with(sees.rank() - 1, n));  // a mask broadcast over keys
    // hit_ic = Σ_j sees_ij · bad_jc > 0: a product of 0/1 matrices, exact   …×m×d_v
    const Tensor hit = gt(matmul(sees, bad_values), Tensor::scalar(0));
    return where(hit, Var(Tensor::scalar(kNaN)), output);
}

}  // namespace attn
