// gru_sequence_fused: one direction of a GRU layer, every time step in one op
// with a hand-written backward through time — the fast twin of the layer's
// step-by-step loop (nn/rnn.cpp, run_direction with gru_gates), which stays
// the version to read. tests/test_rnn.cpp checks that the two agree, value
// and gradient, with padding, in both directions, on one thread and two.
//
// Shape legend: T steps, B sequences, H hidden, G = 3H (the gates r, z, n).
//
// Why one op. Step by step, a layer records some ten graph nodes a step and
// splits every small product h·W_hhᵀ over the threads, so at two threads the
// two cores hand rows to each other at every step, and the weight gradient
// is T products of B rows each. Here each thread runs the whole recurrence for
// its own block of sequences (rows stay on one core from the first step to
// the last), and ∂L/∂W_hh is one product over all T·B rows.
//
// Forward, for the block's rows, s = 0 … max_len − 1, t = s (reverse: max_len − 1 − s):
//   gh_t = h_{t−1}·W_hhᵀ + b_hh                     (one small product per step)
//   h_t  = gru_gates(gi_t, gh_t, h_{t−1})           where t < length, else h_{t−1}
// kept for backward: h_{t−1} (T×B×H), [r | z | n] (T×B×G) and gh_n (T×B×H).
//
// Backward, s = max_len − 1 … 0, with δh the gradient reaching h_t:
//   δh += ∂L/∂out_t                                  (active rows)
//   [δgi_t, δgh_t, δh ⊙ z] = the gates' backward     (rows past their end: 0, 0, δh)
//   δh_{t−1} = δh ⊙ z + δgh_t·W_hh
// then ∂L/∂W_hh = Σ_t δgh_tᵀ h_{t−1} (one product), ∂L/∂b_hh = Σ_t,b δgh_t.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/ops.hpp"
#include "autograd/record.hpp"
#include "nn/rnn_cell.hpp"
#include "tensor/gemm/gemm.hpp"
#include "tensor/ops.hpp"
#include "tensor/parallel.hpp"
#include "tensor/profile.hpp"

namespace attn {

namespace {

void check_sequence_inputs(const Var& gi, const Var& w_hh, const Var& b_hh, const Var& h0,
                           const std::vector<int64_t>& lengths) {
    const std::string who = "gru_sequence_fused";
    if (gi.rank() != 3 || gi.size(2) % 3 != 0)
        throw std::invalid_argument(who + ": gate inputs " + gi.shape().str() + " must be T×B×3H");
    const int64_t T = gi.size(0), B = gi.size(1), H = gi.size(2) / 3;
    if (w_hh.shape() != Shape{3 * H, H})
        throw std::invalid_argument(who + ": W_hh " + w_hh.shape().str() + " should be " + Shape{3 * H, H}.str() +
                                    " for gate inputs " + gi.shape().str());
    if (b_hh.defined() && b_hh.shape() != Shape{3 * H})
        throw std::invalid_argument(who + ": b_hh " + b_hh.shape().str() + " should be " + Shape{3 * H}.str());
    if (h0.shape() != Shape{B, H})
        throw std::invalid_argument(who + ": h0 " + h0.shape().str() + " should be " + Shape{B, H}.str() +
                                    " for gate inputs " + gi.shape().str());
    if (!lengths.empty() && static_cast<int64_t>(lengths.size()) != B)
        throw std::invalid_argument(who + ": " + std::to_string(lengths.size()) + " lengths for " +
                                    std::to_string(B) + " sequences");
    for (int64_t len : lengths)
        if (len < 0 || len > T)
            throw std::invalid_argument(who + ": length " + std::to_string(len) + " is out of range [0, " +
                                        std::to_string(T) + "]");
}

// What the forward keeps for the backward, and the sizes.
struct Saved {
    int64_t T, B, H, max_len;
    bool reverse;
    std::vector<int64_t> lengths;  // empty: all T
    Tensor h_prev;                 // T×B×H, the state step t read (0 at steps never run)
    Tensor rzn;                    // T×B×G
    Tensor gh_n;                   // T×B×H, the n part of h_{t−1}·W_hhᵀ + b_hh
    Tensor w_hh;                   // G×H
    bool with_bias;                // b_hh is input 3

    int64_t step(int64_t s) const { return reverse ? max_len - 1 - s : s; }
    bool active(int64_t t, int64_t b) const { return lengths.empty() || t < lengths[static_cast<size_t>(b)]; }
};

// The backward of rows [b0, b1): writes their rows of dgi, dgh (T×B×G) and dh0.
void backward_rows(const Saved& v, const real* dout, int64_t b0, int64_t b1, real* dgi, real* dgh, real* dh0) {
    const int64_t B = v.B, H = v.H, G = 3 * H, rows = b1 - b0;
    // dh: the gradient reaching h_t (first the final state's, row T of dout);
    // dh_prev: what reaches h_{t−1}.
    std::vector<real> dh(static_cast<size_t>(rows * H)), dh_prev(static_cast<size_t>(rows * H));
    std::memcpy(dh.data(), dout + (v.T * B + b0) * H, sizeof(real) * static_cast<size_t>(rows * H));
    for (int64_t s = v.max_len - 1; s >= 0; --s) {
        const int64_t t = v.step(s);
        for (int64_t r = 0; r < rows; ++r) {
            const int64_t b = b0 + r, row = t * B + b;
            real* d = dh.data() + r * H;
            real* d_prev = dh_prev.data() + r * H;
            if (!v.active(t, b)) {  // the state passed through unchanged: so does its gradient
                std::memcpy(d_prev, d, sizeof(real) * static_cast<size_t>(H));
                continue;
            }
            const real* g_out = dout + row * H;
            for (int64_t j = 0; j < H; ++j) d[j] += g_out[j];
            detail::gru_gates_row_backward(d, v.rzn.data() + row * G, v.gh_n.data() + row * H,
                                           v.h_prev.data() + row * H, H, dgi + row * G, dgh + row * G, d_prev);
        }
        // δh_{t−1} += δgh_t·W_hh for the block (rows past their end have δgh = 0)
        gemm(false, false, rows, H, G, real(1), dgh + (t * B + b0) * G, G, v.w_hh.data(), H, real(1), dh_prev.data(),
             H);
        std::swap(dh, dh_prev);
    }
    std::memcpy(dh0 + b0 * H, dh.data(), sizeof(real) * static_cast<size_t>(rows * H));
}

void backward(const Saved& v, Backward& bw) {
    const int64_t T = v.T, B = v.B, H = v.H, G = 3 * H;
    Tensor dgi = Tensor::zeros(Shape{T, B, G}), dgh = Tensor::zeros(Shape{T, B, G});
    Tensor dh0 = Tensor::empty(Shape{B, H});
    const real* dout = bw.grad().data();
    parallel_for(0, B, 1, [&](int64_t b0, int64_t b1) {
        backward_rows(v, dout, b0, b1, dgi.data(), dgh.data(), dh0.data());
    });
    if (bw.needs(1))  // ∂L/∂W_hh += Σ_t δgh_tᵀ h_{t−1}: G×(T·B) times (T·B)×H
        gemm(true, false, G, H, T * B, real(1), dgh.data(), G, v.h_prev.data(), H, real(1), bw.grad_buffer(1).data(),
             H);
    if (bw.needs(0)) bw.accumulate(0, std::move(dgi));
    if (bw.needs(2)) bw.accumulate(2, std::move(dh0));
    if (v.with_bias && bw.needs(3)) bw.accumulate(3, sum(dgh.reshape(Shape{T * B, G}), 0));
}

}  // namespace

Var gru_sequence_fused(const Var& gi, const Var& w_hh, const Var& b_hh, const Var& h0,
                       const std::vector<int64_t>& lengths, bool reverse) {
    const ProfileScope scope("gru_sequence");
    check_sequence_inputs(gi, w_hh, b_hh, h0, lengths);
    Saved v;
    v.T = gi.size(0), v.B = gi.size(1), v.H = gi.size(2) / 3;
    v.max_len = lengths.empty() ? v.T : *std::max_element(lengths.begin(), lengths.end());
    v.reverse = reverse;
    v.lengths = lengths;
    const int64_t T = v.T, B = v.B, H = v.H, G = 3 * H;
    // The backward reads rzn and gh_n only at the (step, sequence) pairs the
    // forward ran, which write them: no need to clear them first. h_prev and
    // out must read 0 where no step ran (and out where a sequence had
    // ended), unless every sequence runs all T steps, which write them whole.
    const bool all_run = std::all_of(lengths.begin(), lengths.end(), [T](int64_t len) { return len == T; });
    v.h_prev = all_run ? Tensor::empty(Shape{T, B, H}) : Tensor::zeros(Shape{T, B, H});
    v.rzn = Tensor::empty(Shape{T, B, G});
    v.gh_n = Tensor::empty(Shape{T, B, H});
    v.w_hh = w_hh.value();
    v.with_bias = b_hh.defined();
    Tensor out = all_run ? Tensor::empty(Shape{T + 1, B, H}) : Tensor::zeros(Shape{T + 1, B, H});
    const real* giv = gi.value().data();
    const real* W = v.w_hh.data();
    const real* bias = b_hh.defined() ? b_hh.value().data() : nullptr;
    const real* h0v = h0.value().data();

    // Blocks of whole sequences, at most one per thread (grain 1: even one
    // sequence is a whole recurrence of work).
    parallel_for(0, B, 1, [&](int64_t b0, int64_t b1) {
        const int64_t rows = b1 - b0;
        std::vector<real> h(static_cast<size_t>(rows * H)), gh(static_cast<size_t>(rows * G));
        std::memcpy(h.data(), h0v + b0 * H, sizeof(real) * static_cast<size_t>(rows * H));
        for (int64_t s = 0; s < v.max_len; ++s) {
            const int64_t t = v.step(s);
            // gh = h·W_hhᵀ + b_hh for the block's rows
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t j = 0; j < G; ++j) gh[static_cast<size_t>(r * G + j)] = bias ? bias[j] : 0;
            gemm(false, true, rows, G, H, real(1), h.data(), H, W, H, real(1), gh.data(), G);
            for (int64_t r = 0; r < rows; ++r) {
                const int64_t b = b0 + r, row = t * B + b;
                real* hr = h.data() + r * H;
                std::memcpy(v.h_prev.data() + row * H, hr, sizeof(real) * static_cast<size_t>(H));
                if (!v.active(t, b)) continue;  // its state kept, its output 0
                const real* ghr = gh.data() + r * G;
                real* o = out.data() + row * H;
                detail::gru_gates_row(giv + row * G, ghr, hr, H, v.rzn.data() + row * G, o);
                std::memcpy(v.gh_n.data() + row * H, ghr + 2 * H, sizeof(real) * static_cast<size_t>(H));
                std::memcpy(hr, o, sizeof(real) * static_cast<size_t>(H));
            }
        }
        std::memcpy(out.data() + (T * B + b0) * H, h.data(), sizeof(real) * static_cast<size_t>(rows * H));
    });

    std::vector<Var> inputs{gi, w_hh, h0};
    if (b_hh.defined()) inputs.push_back(b_hh);
    return record("gru_sequence", std::move(out), inputs, [v = std::move(v)](Backward& bw) { backward(v, bw); });
}

// out[row(t, b), d·H + j] = seq_d[t, b, j] for t < T, with row(t, b) = b·T + t
// batch first, else t·B + b. Backward: ∂L/∂seq_d[t, b, j] += g[row(t, b),
// d·H + j] (row T, the final state, gets nothing from here).
Var join_directions(const std::vector<Var>& sequences, int64_t T, bool batch_first) {
    const ProfileScope scope("join_directions");
    const std::string who = "join_directions";
    if (sequences.empty()) throw std::invalid_argument(who + ": needs at least one direction");
    const Shape& first = sequences[0].shape();
    if (first.rank() != 3 || first[0] != T + 1)
        throw std::invalid_argument(who + ": direction 0 has shape " + first.str() + ", not " + std::to_string(T + 1) +
                                    "×B×H (gru_sequence_fused's T+1 rows for T = " + std::to_string(T) + ")");
    for (size_t d = 1; d < sequences.size(); ++d)
        if (sequences[d].shape() != first)
            throw std::invalid_argument(who + ": direction " + std::to_string(d) + " has shape " +
                                        sequences[d].shape().str() + " but direction 0 has " + first.str());
    const int64_t B = first[1], H = first[2], D = static_cast<int64_t>(sequences.size()), W = D * H;
    // Where the output row of step t, sequence b starts.
    auto out_row = [=](int64_t t, int64_t b) { return (batch_first ? b * T + t : t * B + b) * W; };
    Tensor out = Tensor::empty(batch_first ? Shape{B, T, W} : Shape{T, B, W});
    std::vector<const real*> from;
    for (const Var& s : sequences) from.push_back(s.value().data());
    parallel_for(0, T * B, parallel_grain(W), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r)  // r = t·B + b, the rows of the inputs in order
            for (int64_t d = 0; d < D; ++d)
                std::memcpy(out.data() + out_row(r / B, r % B) + d * H, from[static_cast<size_t>(d)] + r * H,
                            sizeof(real) * static_cast<size_t>(H));
    });
    return record("join_directions", std::move(out), sequences, [=](Backward& bw) {
        const real* g = bw.grad().data();
        std::vector<real*> to(static_cast<size_t>(D), nullptr);  // null: that direction needs no gradient
        for (int64_t d = 0; d < D; ++d)
            if (bw.needs(static_cast<int>(d))) to[static_cast<size_t>(d)] = bw.grad_buffer(static_cast<int>(d)).data();
        parallel_for(0, T * B, parallel_grain(W), [&](int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1; ++r)
                for (int64_t d = 0; d < D; ++d) {
                    real* dst = to[static_cast<size_t>(d)];
                    if (!dst) continue;
                    const real* from_g = g + out_row(r / B, r % B) + d * H;
                    for (int64_t j = 0; j < H; ++j) dst[r * H + j] += from_g[j];
                }
        });
    });
}

}  // namespace attn
