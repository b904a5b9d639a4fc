// The GRU's and the LSTM's gates as single ops with hand-written backward
// (gru_gates_fused, lstm_gates_fused), the fast twins of gru_gates and
// lstm_gates in nn/rnn_cell.cpp, which are the formulas to read; a cell or
// layer chooses them after set_fast. tests/test_rnn.cpp checks that the two
// agree, value and gradient.
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/ops.hpp"
#include "autograd/record.hpp"
#include "nn/rnn_cell.hpp"
#include "tensor/fast_math.hpp"
#include "tensor/ops.hpp"
#include "tensor/parallel.hpp"
#include "tensor/profile.hpp"

namespace attn {

// ---- GRU gates ---------------------------------------------------------------------------

// One row of the fused gates (the vector kernels of tensor/fast_math.hpp run
// over a whole row at once): rzn ← [r | z | n], out ← h'.
void detail::gru_gates_row(const real* gi, const real* gh, const real* h, int64_t H, real* rzn, real* out) {
    for (int64_t j = 0; j < 2 * H; ++j) rzn[j] = gi[j] + gh[j];  // [r | z] = σ(gi + gh)
    sigmoid_into(rzn, rzn, 2 * H);
    for (int64_t j = 0; j < H; ++j) rzn[2 * H + j] = gi[2 * H + j] + rzn[j] * gh[2 * H + j];
    tanh_into(rzn + 2 * H, rzn + 2 * H, H);  // n = tanh(gi_n + r ⊙ gh_n)
    for (int64_t j = 0; j < H; ++j) {
        const real z = rzn[H + j], n = rzn[2 * H + j];
        out[j] = (1 - z) * n + z * h[j];
    }
}

// Its backward, g = ∂L/∂h' (formulas below, at gru_gates_fused).
void detail::gru_gates_row_backward(const real* g, const real* rzn, const real* gh_n, const real* h, int64_t H,
                                    real* dgi, real* dgh, real* dh) {
    for (int64_t j = 0; j < H; ++j) {
        const real r = rzn[j], z = rzn[H + j], n = rzn[2 * H + j];
        const real dn = g[j] * (1 - z) * (1 - n * n);
        const real dz = g[j] * (h[j] - n) * z * (1 - z);
        const real dr = dn * gh_n[j] * r * (1 - r);
        dgi[j] = dgh[j] = dr;
        dgi[H + j] = dgh[H + j] = dz;
        dgi[2 * H + j] = dn;
        dgh[2 * H + j] = dn * r;
        dh[j] = g[j] * z;
    }
}

// The same in one op. Forward keeps r, z, n (B×3H) for backward, which is,
// with g = ∂L/∂h':
//   ∂L/∂h     = g ⊙ z
//   δn = g ⊙ (1 − z) ⊙ (1 − n²)              (through tanh)
//   δz = g ⊙ (h − n) ⊙ z ⊙ (1 − z)           (through σ)
//   δr = δn ⊙ gh_n ⊙ r ⊙ (1 − r)
//   ∂L/∂gi = [δr | δz | δn]      ∂L/∂gh = [δr | δz | δn ⊙ r]
Var gru_gates_fused(const Var& gi, const Var& gh, const Var& h) {
    const ProfileScope scope("gru_gates");
    detail::check_gate_inputs("gru_gates_fused", &gi, &gh, h, 3);
    const int64_t B = h.size(0), H = h.size(1);
    Tensor rzn = Tensor::empty(Shape{B, 3 * H});
    Tensor out = Tensor::empty(Shape{B, H});
    const real *gi_v = gi.value().data(), *gh_v = gh.value().data(), *h_v = h.value().data();
    real *rzn_v = rzn.data(), *out_v = out.data();
    // Rows in parallel (each reads and writes only its own row); the same
    // split as the product that wrote gh, so at 2 threads each core mostly
    // reads rows it wrote itself (docs/performance.md, "W3 on two threads").
    parallel_for(0, B, parallel_grain(3 * H), [=](int64_t b_begin, int64_t b_end) {
        for (int64_t b = b_begin; b < b_end; ++b)
            detail::gru_gates_row(gi_v + b * 3 * H, gh_v + b * 3 * H, h_v + b * H, H, rzn_v + b * 3 * H, out_v + b * H);
    });
    return record("gru_gates", std::move(out), {gi, gh, h},
                  [rzn, gh = gh.value(), h = h.value(), B, H](Backward& bw) {
                      Tensor dgi = Tensor::empty(Shape{B, 3 * H}), dgh = Tensor::empty(Shape{B, 3 * H});
                      Tensor dh = Tensor::empty(Shape{B, H});
                      const real *g_rows = bw.grad().data(), *rzn_rows = rzn.data(), *gh_rows = gh.data(), *h_rows = h.data();
                      real *dgi_rows = dgi.data(), *dgh_rows = dgh.data(), *dh_rows = dh.data();
                      parallel_for(0, B, parallel_grain(3 * H), [=](int64_t b_begin, int64_t b_end) {
                          for (int64_t b = b_begin; b < b_end; ++b)
                              detail::gru_gates_row_backward(g_rows + b * H, rzn_rows + b * 3 * H,
                                                             gh_rows + b * 3 * H + 2 * H, h_rows + b * H, H,
                                                             dgi_rows + b * 3 * H, dgh_rows + b * 3 * H,
                                                             dh_rows + b * H);
                      });
                      if (bw.needs(0)) bw.accumulate(0, std::move(dgi));
                      if (bw.needs(1)) bw.accumulate(1, std::move(dgh));
                      if (bw.needs(2)) bw.accumulate(2, std::move(dh));
                  });
}

// ---- LSTM gates --------------------------------------------------------------------------

// The same in one op, whose output is h' and c' stacked (2×B×H), then
// unbound into two views (no copy).
// Forward keeps i, f, g, o (B×4H) and tanh(c') (B×H). Backward, with
// g_h = ∂L/∂h' and g_c = ∂L/∂c':
//   δc = g_c + g_h ⊙ o ⊙ (1 − tanh²c')        (c' reaches L directly and through h')
//   ∂L/∂c = δc ⊙ f
//   ∂L/∂pre = [δc ⊙ g ⊙ i(1−i) | δc ⊙ c ⊙ f(1−f) | δc ⊙ i ⊙ (1−g²) | g_h ⊙ tanh c' ⊙ o(1−o)]
LSTMState lstm_gates_fused(const Var& pre, const Var& c) {
    const ProfileScope scope("lstm_gates");
    detail::check_gate_inputs("lstm_gates_fused", &pre, nullptr, c, 4);
    const int64_t B = c.size(0), H = c.size(1);
    Tensor ifgo = Tensor::empty(Shape{B, 4 * H});
    Tensor tanh_c = Tensor::empty(Shape{B, H});
    Tensor out = Tensor::empty(Shape{2, B, H});  // [h'; c']
    for (int64_t b = 0; b < B; ++b) {
        const real* p = pre.value().data() + b * 4 * H;
        const real* cv = c.value().data() + b * H;
        real* a = ifgo.data() + b * 4 * H;
        real* t = tanh_c.data() + b * H;
        real* o = out.data() + b * H;  // h' row b; c' row b is B·H further
        // [i | f] = σ(·), g = tanh(·), o = σ(·), each a whole row at once
        sigmoid_into(p, a, 2 * H);
        tanh_into(p + 2 * H, a + 2 * H, H);
        sigmoid_into(p + 3 * H, a + 3 * H, H);
        for (int64_t j = 0; j < H; ++j) o[B * H + j] = a[H + j] * cv[j] + a[j] * a[2 * H + j];  // c' = f c + i g
        tanh_into(o + B * H, t, H);
        for (int64_t j = 0; j < H; ++j) o[j] = a[3 * H + j] * t[j];  // h' = o ⊙ tanh c'

    }
    Var hc = record("lstm_gates", std::move(out), {pre, c}, [ifgo, tanh_c, c = c.value(), B, H](Backward& bw) {
        Tensor dpre = Tensor::empty(Shape{B, 4 * H}), dc_prev = Tensor::empty(Shape{B, H});
        for (int64_t b = 0; b < B; ++b) {
            const real* gh = bw.grad().data() + b * H;
            const real* gc = gh + B * H;
            const real* a = ifgo.data() + b * 4 * H;
            const real* t = tanh_c.data() + b * H;
            const real* cv = c.data() + b * H;
            real* d = dpre.data() + b * 4 * H;
            for (int64_t j = 0; j < H; ++j) {
                const real i = a[j], f = a[H + j], g = a[2 * H + j], o = a[3 * H + j];
                const real dc = gc[j] + gh[j] * o * (1 - t[j] * t[j]);
                d[j] = dc * g * i * (1 - i);
                d[H + j] = dc * cv[j] * f * (1 - f);
                d[2 * H + j] = dc * i * (1 - g * g);
                d[3 * H + j] = gh[j] * t[j] * o * (1 - o);
                dc_prev.data()[b * H + j] = dc * f;
            }
        }
        if (bw.needs(0)) bw.accumulate(0, std::move(dpre));
        if (bw.needs(1)) bw.accumulate(1, std::move(dc_prev));
    });
    const std::vector<Var> h_c = detail::unbind_rows(hc);
    return {h_c[0], h_c[1]};
}

}  // namespace attn
