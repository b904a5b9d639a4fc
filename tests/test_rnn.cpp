// nn/rnn_cell and nn/rnn: the properties PyTorch's reference values
// (test_rnn_reference.cpp) do not show on their own — padding is invisible
// (a padded batch = its sequences one by one, outputs, states and gradients),
// the fused gates agree with the composed ones, PyTorch's state_dict names,
// error messages that name the layer and the shapes, a 2000-step unroll.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "autograd/ops.hpp"
#include "nn/rnn.hpp"
#include "tensor/ops.hpp"
#include "tensor/parallel.hpp"
#include "tests/function.hpp"
#include "tests/helpers.hpp"

using namespace attn;
using attn::testing::Function;
using attn::testing::error_of;
using attn::testing::check_close;

namespace {

bool all_zero(const Tensor& t) {
    for (int64_t i = 0; i < t.numel(); ++i)
        if (t[i] != 0) return false;
    return true;
}

// Rows [begin, end) of axis `axis`, as a new leaf.
Tensor part(const Tensor& t, int axis, int64_t begin, int64_t end) { return slice(t, axis, begin, end).clone(); }

// What a sequence layer returns, whichever it is: output, h_n and (LSTM) c_n.
struct Run {
    Var output, h_n, c_n;
};
using Forward = Function<Run(const Var& x, const Var& h0, const Var& c0, const std::vector<int64_t>& lengths)>;

// Runs a padded batch, then each sequence alone (B = 1, T = its length), with
// the same loss L = Σ w ⊙ output + Σ v ⊙ h_n (+ Σ u ⊙ c_n), and checks that
// outputs, final states and all gradients agree. The layer: I = 3, H = 4,
// 2 layers, bidirectional.
void check_padding_is_invisible(Module& layer, const Forward& forward, bool lstm) {
    const std::vector<int64_t> lengths{5, 2, 4};
    const int64_t B = 3, T = 6, I = 3, H = 4, LD = 2 * 2, DH = 2 * H;
    Generator gen(11);
    const Tensor x = Tensor::normal(Shape{B, T, I}, 0, 1, gen), h0 = Tensor::normal(Shape{LD, B, H}, 0, 1, gen);
    const Tensor c0 = Tensor::normal(Shape{LD, B, H}, 0, 1, gen);
    const Tensor w = Tensor::normal(Shape{B, T, DH}, 0, 1, gen), v = Tensor::normal(Shape{LD, B, H}, 0, 1, gen);
    const Tensor u = Tensor::normal(Shape{LD, B, H}, 0, 1, gen);
    auto loss_of = [&](const Run& r, const Tensor& wb, const Tensor& vb, const Tensor& ub) {
        Var loss = sum(r.output * Var(wb)) + sum(r.h_n * Var(vb));
        return lstm ? loss + sum(r.c_n * Var(ub)) : loss;
    };

    // The padded batch.
    layer.zero_grad();
    const Var xb(x.clone(), true), hb(h0.clone(), true), cb(c0.clone(), true);
    const Run batch = forward(xb, hb, lstm ? cb : Var(), lengths);
    loss_of(batch, w, v, u).backward();
    std::vector<Tensor> batch_grads;
    for (const Var& p : layer.parameters()) batch_grads.push_back(p.grad().clone());

    // One sequence at a time; parameter gradients add up over the sequences.
    layer.zero_grad();
    for (int64_t b = 0; b < B; ++b) {
        INFO("sequence " << b << " of length " << lengths[b]);
        const int64_t n = lengths[static_cast<size_t>(b)];
        const Var xs(part(part(x, 0, b, b + 1), 1, 0, n), true), hs(part(h0, 1, b, b + 1), true);
        const Var cs(part(c0, 1, b, b + 1), true);
        const Run one = forward(xs, hs, lstm ? cs : Var(), {});
        loss_of(one, part(part(w, 0, b, b + 1), 1, 0, n), part(v, 1, b, b + 1), part(u, 1, b, b + 1)).backward();

        const Tensor out_b = part(batch.output.value(), 0, b, b + 1);
        check_close(part(out_b, 1, 0, n), one.output.value(), "output rows inside the sequence");
        CHECK_MESSAGE(all_zero(part(out_b, 1, n, T)), "padded output rows are zero");
        check_close(part(batch.h_n.value(), 1, b, b + 1), one.h_n.value(), "h_n");
        if (lstm) check_close(part(batch.c_n.value(), 1, b, b + 1), one.c_n.value(), "c_n");
        const Tensor gx = part(xb.grad(), 0, b, b + 1);
        check_close(part(gx, 1, 0, n), xs.grad(), "∂L/∂input");
        CHECK_MESSAGE(all_zero(part(gx, 1, n, T)), "no gradient reaches the padding");
        check_close(part(hb.grad(), 1, b, b + 1), hs.grad(), "∂L/∂h0");
        if (lstm) check_close(part(cb.grad(), 1, b, b + 1), cs.grad(), "∂L/∂c0");
    }
    const auto params = layer.named_parameters();
    for (size_t k = 0; k < params.size(); ++k)
        check_close(params[k].second.grad(), batch_grads[k], "∂L/∂" + params[k].first);
}

}  // namespace

TEST_CASE("GRU: a padded batch equals its sequences run one by one") {
    for (RnnMode mode : {RnnMode::stepwise, RnnMode::fused, RnnMode::sequence}) {
        INFO("mode " << to_string(mode));
        Generator gen(3);
        GRU gru(3, 4, gen, {.num_layers = 2, .bidirectional = true});
        gru.mode = mode;
        check_padding_is_invisible(
            gru,
            [&](const Var& x, const Var& h0, const Var&, const std::vector<int64_t>& lengths) {
                const GRUOutput o = gru(x, h0, lengths);
                return Run{o.output, o.h_n, Var()};
            },
            false);
    }
}

TEST_CASE("LSTM: a padded batch equals its sequences run one by one") {
    for (RnnMode mode : {RnnMode::stepwise, RnnMode::fused}) {
        INFO("mode " << to_string(mode));
        Generator gen(4);
        LSTM lstm(3, 4, gen, {.num_layers = 2, .bidirectional = true});
        lstm.mode = mode;
        check_padding_is_invisible(
            lstm,
            [&](const Var& x, const Var& h0, const Var& c0, const std::vector<int64_t>& lengths) {
                const LSTMOutput o = lstm(x, {h0, c0}, lengths);
                return Run{o.output, o.h_n, o.c_n};
            },
            true);
    }
}

TEST_CASE("rnn gates: fused and composed agree in value and gradient") {
    Generator gen(5);
    const int64_t B = 3, H = 4;
    const Tensor gi = Tensor::normal(Shape{B, 4 * H}, 0, 2, gen), gh = Tensor::normal(Shape{B, 4 * H}, 0, 2, gen);
    const Tensor h = Tensor::normal(Shape{B, H}, 0, 1, gen), w = Tensor::normal(Shape{B, 2 * H}, 0, 1, gen);
    // Each variant returns [h' | c'] (the GRU: [h' | h']) and the leaves' gradients.
    auto run = [&](bool lstm, bool fused) {
        const Var a(lstm ? gi.clone() : part(gi, 1, 0, 3 * H), true), b(part(gh, 1, 0, 3 * H), true);
        const Var s(h.clone(), true);
        Var out;
        if (lstm) {
            const LSTMState n = fused ? lstm_gates_fused(a, s) : lstm_gates(a, s);
            out = concat({n.h, n.c}, 1);
        } else {
            const Var n = fused ? gru_gates_fused(a, b, s) : gru_gates(a, b, s);
            out = concat({n, n}, 1);
        }
        sum(out * Var(w)).backward();
        return std::vector<Tensor>{out.value(), a.grad(), lstm ? Tensor::zeros(Shape{1}) : b.grad(), s.grad()};
    };
    for (bool lstm : {false, true}) {
        INFO((lstm ? "lstm_gates" : "gru_gates"));
        const std::vector<Tensor> composed = run(lstm, false), fused = run(lstm, true);
        const char* what[] = {"value", "∂L/∂gi", "∂L/∂gh", "∂L/∂state"};
        for (size_t k = 0; k < composed.size(); ++k) check_close(fused[k], composed[k], what[k], 1e-6);
    }
}

TEST_CASE("gru_gates_fused split over two threads: the composed gates' values and gradients, and the same bits as one thread") {
    // 256 rows of 3·50 gate values (W3's word GRU): large enough that the
    // fused op's forward and backward split the rows over the threads.
    Generator gen(8);
    const int64_t B = 256, H = 50;
    const Tensor gi = Tensor::normal(Shape{B, 3 * H}, 0, 2, gen), gh = Tensor::normal(Shape{B, 3 * H}, 0, 2, gen);
    const Tensor h = Tensor::normal(Shape{B, H}, 0, 1, gen), w = Tensor::normal(Shape{B, H}, 0, 1, gen);
    auto run = [&](bool fused, int threads) {
        set_num_threads(threads);
        const Var a(gi.clone(), true), b(gh.clone(), true), s(h.clone(), true);
        const Var n = fused ? gru_gates_fused(a, b, s) : gru_gates(a, b, s);
        sum(n * Var(w)).backward();
        return std::vector<Tensor>{n.value(), a.grad(), b.grad(), s.grad()};
    };
    const int before = num_threads();
    const std::vector<Tensor> composed = run(false, 1), one = run(true, 1), two = run(true, 2);
    set_num_threads(before);
    const char* what[] = {"value", "∂L/∂gi", "∂L/∂gh", "∂L/∂h"};
    for (size_t k = 0; k < composed.size(); ++k) {
        INFO(what[k]);
        check_close(two[k], composed[k], what[k], 1e-6);
        CHECK(std::equal(one[k].data(), one[k].data() + one[k].numel(), two[k].data()));
    }
}

TEST_CASE("GRU sequence mode: the step-by-step layer's values and gradients, padded, on one thread and two") {
    // W3's word GRU in size (B = 256, H = 50), 2 layers, both directions,
    // lengths from 0 to T, with and without biases. gru_sequence_fused splits
    // the batch over the threads: each block of sequences runs every step on
    // one thread, so two threads give one thread's bits.
    Generator gen(11);
    const int64_t B = 256, T = 7, I = 6, H = 50;
    std::vector<int64_t> lengths(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b) lengths[static_cast<size_t>(b)] = (b * 5) % (T + 1);  // 0 … T
    const Tensor x = Tensor::normal(Shape{B, T, I}, 0, 1, gen), h0 = Tensor::normal(Shape{4, B, H}, 0, 1, gen);
    const Tensor w_out = Tensor::normal(Shape{B, T, 2 * H}, 0, 1, gen), w_last = Tensor::normal(Shape{4, B, H}, 0, 1, gen);
    for (bool bias : {true, false}) {
        INFO("bias " << bias);
        auto run = [&](RnnMode mode, int threads) {
            set_num_threads(threads);
            Generator g(5);
            GRU gru(I, H, g, {.num_layers = 2, .bias = bias, .bidirectional = true});
            gru.mode = mode;
            const Var xv(x.clone(), true), hv(h0.clone(), true);
            const GRUOutput o = gru(xv, hv, lengths);
            (sum(o.output * Var(w_out)) + sum(o.h_n * Var(w_last))).backward();
            std::vector<Tensor> all{o.output.value(), o.h_n.value(), xv.grad(), hv.grad()};
            for (const auto& [name, p] : gru.named_parameters()) all.push_back(p.grad());
            return all;
        };
        const int before = num_threads();
        const std::vector<Tensor> steps = run(RnnMode::fused, 1), one = run(RnnMode::sequence, 1),
                                  two = run(RnnMode::sequence, 2);
        set_num_threads(before);
        REQUIRE(steps.size() == two.size());
        for (size_t k = 0; k < steps.size(); ++k) {
            INFO("tensor " << k << " (output, h_n, ∂x, ∂h0, then the parameters' gradients)");
            check_close(one[k], steps[k], "sequence vs steps", 1e-5);
            CHECK(std::equal(one[k].data(), one[k].data() + one[k].numel(), two[k].data()));
        }
        // the padded outputs are exactly 0; the empty sequence (b = 0) keeps h0
        for (int64_t t = 0; t < T; ++t)
            for (int64_t j = 0; j < 2 * H; ++j) CHECK(one[0][t * 2 * H + j] == 0);
        for (int64_t j = 0; j < H; ++j) CHECK(one[1][j] == h0[j]);
    }
}

TEST_CASE("gru_sequence_fused: errors name the op and the shapes") {
    const Var gi(Tensor::zeros(Shape{4, 2, 9})), w(Tensor::zeros(Shape{9, 3})), b(Tensor::zeros(Shape{9}));
    const Var h0(Tensor::zeros(Shape{2, 3}));
    CHECK(error_of([&] { gru_sequence_fused(Var(Tensor::zeros(Shape{4, 2, 8})), w, b, h0, {}, false); }) ==
          "gru_sequence_fused: gate inputs 4×2×8 must be T×B×3H");
    CHECK(error_of([&] { gru_sequence_fused(gi, Var(Tensor::zeros(Shape{3, 9})), b, h0, {}, false); }) ==
          "gru_sequence_fused: W_hh 3×9 should be 9×3 for gate inputs 4×2×9");
    CHECK(error_of([&] { gru_sequence_fused(gi, w, Var(Tensor::zeros(Shape{3})), h0, {}, false); }) ==
          "gru_sequence_fused: b_hh 3 should be 9");
    CHECK(error_of([&] { gru_sequence_fused(gi, w, b, Var(Tensor::zeros(Shape{3, 3})), {}, false); }) ==
          "gru_sequence_fused: h0 3×3 should be 2×3 for gate inputs 4×2×9");
    CHECK(error_of([&] { gru_sequence_fused(gi, w, b, h0, {1}, false); }) ==
          "gru_sequence_fused: 1 lengths for 2 sequences");
    CHECK(error_of([&] { gru_sequence_fused(gi, w, b, h0, {1, 5}, false); }) ==
          "gru_sequence_fused: length 5 is out of range [0, 4]");
}

TEST_CASE("join_directions: a plain loop's values and gradients, batch first or not, on one thread and two") {
    // Two directions of (T+1)×B×H = 6×100×40 (500 output rows of 80: split
    // over two threads), a random upstream gradient, and direction 0 also
    // read whole by another op, so that the gradient must be added to what
    // is there, not written over it.
    Generator gen(12);
    const int64_t T = 5, B = 100, H = 40;
    const Tensor s0 = Tensor::normal(Shape{T + 1, B, H}, 0, 1, gen), s1 = Tensor::normal(Shape{T + 1, B, H}, 0, 1, gen);
    const Tensor w_all = Tensor::normal(Shape{T + 1, B, H}, 0, 1, gen);
    const int before = num_threads();
    for (bool batch_first : {false, true})
        for (int threads : {1, 2}) {
            CAPTURE(batch_first);
            CAPTURE(threads);
            set_num_threads(threads);
            const Tensor g = Tensor::normal(batch_first ? Shape{B, T, 2 * H} : Shape{T, B, 2 * H}, 0, 1, gen);
            Var v0(s0.clone(), true), v1(s1.clone(), true);
            const Var joined = join_directions({v0, v1}, T, batch_first);
            (sum(joined * Var(g)) + sum(v0 * Var(w_all))).backward();
            REQUIRE(joined.shape() == (batch_first ? Shape{B, T, 2 * H} : Shape{T, B, 2 * H}));
            const Tensor* seq[2] = {&s0, &s1};
            const Var* var[2] = {&v0, &v1};
            int64_t wrong_value = 0, wrong_grad = 0;
            for (int64_t d = 0; d < 2; ++d)
                for (int64_t t = 0; t <= T; ++t)
                    for (int64_t b = 0; b < B; ++b)
                        for (int64_t j = 0; j < H; ++j) {
                            const int64_t in = (t * B + b) * H + j;
                            const int64_t at = (batch_first ? b * T + t : t * B + b) * 2 * H + d * H + j;
                            const real want_grad = (t < T ? g[at] : real(0)) + (d == 0 ? w_all[in] : real(0));
                            if (t < T && joined.value()[at] != (*seq[d])[in]) ++wrong_value;
                            if (var[d]->grad()[in] != want_grad) ++wrong_grad;
                        }
            CHECK(wrong_value == 0);
            CHECK(wrong_grad == 0);
        }
    set_num_threads(before);
    const Var a(Tensor::zeros(Shape{4, 2, 3})), b(Tensor::zeros(Shape{4, 2, 5}));
    CHECK(error_of([&] { join_directions({a}, 4, false); }) ==
          "join_directions: direction 0 has shape 4×2×3, not 5×B×H (gru_sequence_fused's T+1 rows for T = 4)");
    CHECK(error_of([&] { join_directions({a, b}, 3, true); }) ==
          "join_directions: direction 1 has shape 4×2×5 but direction 0 has 4×2×3");
    CHECK(error_of([&] { join_directions({}, 3, true); }) == "join_directions: needs at least one direction");
}

TEST_CASE("GRU and LSTM: PyTorch's state_dict names and shapes") {
    Generator gen(0);
    GRU gru(5, 4, gen, {.num_layers = 2, .bidirectional = true});
    const std::vector<std::pair<std::string, Shape>> expected{
        {"weight_ih_l0", {12, 5}}, {"weight_hh_l0", {12, 4}}, {"bias_ih_l0", {12}}, {"bias_hh_l0", {12}},
        {"weight_ih_l0_reverse", {12, 5}}, {"weight_hh_l0_reverse", {12, 4}}, {"bias_ih_l0_reverse", {12}},
        {"bias_hh_l0_reverse", {12}}, {"weight_ih_l1", {12, 8}}, {"weight_hh_l1", {12, 4}}, {"bias_ih_l1", {12}},
        {"bias_hh_l1", {12}}, {"weight_ih_l1_reverse", {12, 8}}, {"weight_hh_l1_reverse", {12, 4}},
        {"bias_ih_l1_reverse", {12}}, {"bias_hh_l1_reverse", {12}}};
    const StateDict state = gru.state_dict();
    REQUIRE(state.size() == expected.size());
    for (size_t k = 0; k < expected.size(); ++k) {
        CHECK(state[k].first == expected[k].first);
        CHECK(state[k].second.shape() == expected[k].second);
    }
    LSTM lstm(3, 2, gen, {.bias = false});
    const StateDict ls = lstm.state_dict();
    REQUIRE(ls.size() == 2);
    CHECK(ls[0].first == "weight_ih_l0");
    CHECK(ls[0].second.shape() == Shape{8, 3});
    CHECK(ls[1].first == "weight_hh_l0");
    LSTMCell cell(3, 2, gen);
    CHECK(cell.state_dict()[0].first == "weight_ih");
    CHECK(cell.state_dict()[3].first == "bias_hh");
    CHECK(cell.state_dict()[3].second.shape() == Shape{8});
}

TEST_CASE("rnn: parameters start in U(−1/√H, 1/√H), as PyTorch's") {
    Generator gen(1);
    LSTM lstm(7, 16, gen, {.num_layers = 2});
    real lo = 1, hi = -1;
    for (const Var& p : lstm.parameters())
        for (real v : p.value().to_vector()) lo = std::min(lo, v), hi = std::max(hi, v);
    CHECK(lo >= real(-0.25));
    CHECK(hi <= real(0.25));
    CHECK(lo < real(-0.24));  // and they fill the range
    CHECK(hi > real(0.24));
}

TEST_CASE("rnn: describe() is PyTorch's repr") {
    Generator gen(0);
    CHECK(GRU(10, 16, gen, {.num_layers = 2, .bidirectional = true}).describe() ==
          "GRU(10, 16, num_layers=2, batch_first=True, bidirectional=True)");
    CHECK(LSTM(4, 8, gen, {.bias = false}).describe() == "LSTM(4, 8, bias=False, batch_first=True)");
    CHECK(GRUCell(3, 5, gen).describe() == "GRUCell(3, 5)");
    CHECK(LSTMCell(3, 5, gen, false).describe() == "LSTMCell(3, 5, bias=False)");
}

TEST_CASE("rnn: errors name the layer and the shapes") {
    Generator gen(0);
    GRU gru(12, 8, gen, {.num_layers = 2, .bidirectional = true});
    const Var x(Tensor::zeros(Shape{4, 7, 10}));
    CHECK(error_of([&] { gru(x); }) == "GRU: input 4×7×10 has 10 features but the layer expects 12");
    CHECK(error_of([&] { gru(Var(Tensor::zeros(Shape{7, 12}))); }) ==
          "GRU: input must be B×T×I (rank 3, batch first), got 7×12");
    const Var x12(Tensor::zeros(Shape{4, 7, 12}));
    CHECK(error_of([&] { gru(x12, Var(Tensor::zeros(Shape{2, 4, 8}))); }) ==
          "GRU: initial state h0 has shape 2×4×8 but the layer needs 4×4×8 (num_layers·directions × batch × hidden)");
    CHECK(error_of([&] { gru(x12, {}, {7, 7, 7}); }) == "GRU: lengths has 3 entries but the batch has 4 sequences");
    CHECK(error_of([&] { gru(x12, {}, {7, 9, 1, 1}); }) == "GRU: length 9 of sequence 1 is out of range [0, 7]");
    CHECK(error_of([&] { gru(Var(Tensor::zeros(Shape{4, 0, 12}))); }) == "GRU: input 4×0×12 is empty");

    LSTM lstm(3, 2, gen);
    CHECK(error_of([&] { lstm(Var(Tensor::zeros(Shape{2, 5, 3})), {Var(), Var(Tensor::zeros(Shape{1, 3, 2}))}); }) ==
          "LSTM: initial state c0 has shape 1×3×2 but the layer needs 1×2×2 (num_layers·directions × batch × hidden)");
    CHECK(error_of([&] { LSTM(3, 0, gen); }) == "LSTM: input_size and hidden_size must be positive, got 3 and 0");
    CHECK(error_of([&] { GRU(3, 2, gen, {.num_layers = 0}); }) == "GRU: num_layers must be at least 1, got 0");

    GRUCell cell(12, 16, gen);
    CHECK(error_of([&] { cell(Var(Tensor::zeros(Shape{4, 10}))); }) ==
          "GRUCell: input 4×10 has 10 features but the cell expects 12");
    CHECK(error_of([&] { cell(Var(Tensor::zeros(Shape{4, 12})), Var(Tensor::zeros(Shape{4, 8}))); }) ==
          "GRUCell: state h has shape 4×8 but the cell needs 4×16 (batch × hidden)");
    LSTMCell lcell(2, 3, gen);
    CHECK(error_of([&] { lcell(Var(Tensor::zeros(Shape{5, 2})), {Var(), Var(Tensor::zeros(Shape{5, 2}))}); }) ==
          "LSTMCell: state c has shape 5×2 but the cell needs 5×3 (batch × hidden)");
    CHECK(error_of([&] { gru_gates_fused(Var(Tensor::zeros(Shape{2, 9})), Var(Tensor::zeros(Shape{2, 6})),
                                         Var(Tensor::zeros(Shape{2, 3}))); }) ==
          "gru_gates_fused: gate pre-activations 2×6 should be 2×9 (batch × 3·hidden) for a state 2×3");
}

TEST_CASE("rnn: a sequence of length 0 keeps h0 and outputs zeros") {
    Generator gen(2);
    LSTM lstm(2, 3, gen, {.bidirectional = true});
    const Tensor h0 = Tensor::normal(Shape{2, 2, 3}, 0, 1, gen), c0 = Tensor::normal(Shape{2, 2, 3}, 0, 1, gen);
    const LSTMOutput out =
        lstm(Var(Tensor::normal(Shape{2, 4, 2}, 0, 1, gen)), {Var(h0), Var(c0)}, std::vector<int64_t>{0, 3});
    CHECK(all_zero(part(out.output.value(), 0, 0, 1)));
    check_close(part(out.h_n.value(), 1, 0, 1), part(h0, 1, 0, 1), "h_n of the empty sequence");
    check_close(part(out.c_n.value(), 1, 0, 1), part(c0, 1, 0, 1), "c_n of the empty sequence");
    CHECK(all_zero(part(part(out.output.value(), 0, 1, 2), 1, 3, 4)));
}

TEST_CASE("rnn: dropout between layers only in training mode, reproducibly") {
    auto run = [](bool training) {
        Generator gen(9);
        GRU gru(3, 4, gen, {.num_layers = 2, .dropout = real(0.5)});
        gru.train(training);
        Generator data(1);
        return gru(Var(Tensor::normal(Shape{2, 5, 3}, 0, 1, data))).output.value();
    };
    const Tensor train1 = run(true), train2 = run(true), eval = run(false);
    check_close(train1, train2, "the same seed, the same masks", 0);
    CHECK_FALSE(allclose(train1, eval));
    Generator gen(9);
    GRU no_dropout(3, 4, gen, {.num_layers = 2});  // same seed: same weights
    no_dropout.eval();
    Generator data(1);
    check_close(no_dropout(Var(Tensor::normal(Shape{2, 5, 3}, 0, 1, data))).output.value(), eval,
                "eval mode = no dropout", 0);
}

TEST_CASE("rnn: a 2000-step unroll runs backward without deep recursion") {
    Generator gen(6);
    const Var x(Tensor::normal(Shape{2, 2000, 3}, 0, 1, gen), true);
    GRU gru(3, 4, gen);
    gru.mode = RnnMode::precomputed;  // the composed gates: the deepest graph, ~20 nodes a step
    sum(gru(x, {}, {2000, 1500}).h_n).backward();
    LSTM lstm(3, 4, gen);
    sum(lstm(x).output).backward();
    for (const Var& p : gru.parameters()) CHECK(std::isfinite(sum(p.grad()).item()));
    CHECK(std::isfinite(sum(x.grad()).item()));
    CHECK_FALSE(all_zero(part(part(x.grad(), 0, 1, 2), 1, 1500, 2000)));  // the GRU stops at 1500, the LSTM does not
}
