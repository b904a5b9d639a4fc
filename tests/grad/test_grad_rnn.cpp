// Gradients of the recurrent layers against central finite differences
// (double build): the gate functions (composed and fused), the two cells, and
// a small 2-layer bidirectional GRU and LSTM with lengths, in every mode, with
// respect to their inputs, initial states and every parameter.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "autograd/gradcheck.hpp"
#include "autograd/ops.hpp"
#include "nn/rnn.hpp"
#include "tensor/ops.hpp"

using namespace attn;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

void check(const GradcheckResult& r, const std::string& what) {
    INFO(r.message);
    CHECK_MESSAGE(r.ok, what);
    CHECK(r.checked > 0);
}

// The layer's parameters followed by the given leaves.
std::vector<Var> with_params(const Module& m, std::vector<Var> leaves) {
    std::vector<Var> all = m.parameters();
    all.insert(all.end(), leaves.begin(), leaves.end());
    return all;
}

// Everything a layer returns, flattened into one vector for the checker.
Var flat(const std::vector<Var>& parts) {
    std::vector<Var> rows;
    for (const Var& p : parts) rows.push_back(reshape(p, {-1}));
    return concat(rows, 0);
}

const RnnMode kModes[] = {RnnMode::stepwise, RnnMode::precomputed, RnnMode::fused, RnnMode::sequence};

}  // namespace

TEST_CASE("gradcheck rnn gates: gru_gates and lstm_gates, composed and fused") {
    Generator gen(1);
    const int64_t B = 2, H = 3;
    auto normal = [&](int64_t rows, int64_t cols) { return Tensor::normal(Shape{rows, cols}, 0, 1, gen); };
    const std::vector<Tensor> gru_in{normal(B, 3 * H), normal(B, 3 * H), normal(B, H)};  // gi, gh, h
    const std::vector<Tensor> lstm_in{normal(B, 4 * H), normal(B, H)};                   // pre, c
    using In = const std::vector<Var>&;
    check(gradcheck("gru_gates", [](In x) { return gru_gates(x[0], x[1], x[2]); }, gru_in), "gru_gates");
    check(gradcheck("gru_gates_fused", [](In x) { return gru_gates_fused(x[0], x[1], x[2]); }, gru_in),
          "gru_gates_fused");
    check(gradcheck("lstm_gates",
                    [](In x) {
                        const LSTMState s = lstm_gates(x[0], x[1]);
                        return flat({s.h, s.c});
                    },
                    lstm_in),
          "lstm_gates");
    check(gradcheck("lstm_gates_fused",
                    [](In x) {
                        const LSTMState s = lstm_gates_fused(x[0], x[1]);
                        return flat({s.h, s.c});
                    },
                    lstm_in),
          "lstm_gates_fused");
    // Only h' or only c' used downstream: the other half of the fused output gets no gradient.
    check(gradcheck("lstm_gates_fused h' only", [](In x) { return lstm_gates_fused(x[0], x[1]).h; }, lstm_in),
          "lstm_gates_fused h' only");
    check(gradcheck("lstm_gates_fused c' only", [](In x) { return lstm_gates_fused(x[0], x[1]).c; }, lstm_in),
          "lstm_gates_fused c' only");
    // The views the sequence layers read their steps through: rows used twice, one not at all.
    check(gradcheck("unbind_rows",
                    [](In x) {
                        const std::vector<Var> rows = detail::unbind_rows(x[0]);
                        return rows[2] * rows[0] + rows[2];
                    },
                    {Tensor::normal(Shape{4, 2, 3}, 0, 1, gen)}),
          "unbind_rows");
}

TEST_CASE("gradcheck rnn cells: GRUCell and LSTMCell, to x, the state and every parameter") {
    for (bool fused : {false, true}) {
        INFO("fused = " << fused);
        Generator gen(2);
        GRUCell gru(3, 2, gen);
        gru.fused = fused;
        const Var x(Tensor::normal(Shape{2, 3}, 0, 1, gen), true), h(Tensor::normal(Shape{2, 2}, 0, 1, gen), true);
        check(gradcheck("GRUCell", [&] { return gru(x, h); }, with_params(gru, {x, h})), "GRUCell");

        LSTMCell lstm(3, 2, gen);
        lstm.fused = fused;
        const Var c(Tensor::normal(Shape{2, 2}, 0, 1, gen), true);
        check(gradcheck("LSTMCell",
                        [&] {
                            const LSTMState s = lstm(x, {h, c});
                            return flat({s.h, s.c});
                        },
                        with_params(lstm, {x, h, c})),
              "LSTMCell");
    }
}

TEST_CASE("gradcheck rnn layers: 2-layer bidirectional GRU and LSTM with lengths, every mode") {
    const std::vector<int64_t> lengths{3, 1, 2};  // T = 4: the last step is padding for all
    for (RnnMode mode : kModes) {
        INFO("mode " << to_string(mode));
        Generator gen(3);
        const Var x(Tensor::normal(Shape{3, 4, 2}, 0, 1, gen), true);
        const Var h0(Tensor::normal(Shape{4, 3, 2}, 0, 1, gen), true);
        const Var c0(Tensor::normal(Shape{4, 3, 2}, 0, 1, gen), true);

        GRU gru(2, 2, gen, {.num_layers = 2, .bidirectional = true});
        gru.mode = mode;
        check(gradcheck("GRU",
                        [&] {
                            const GRUOutput o = gru(x, h0, lengths);
                            return flat({o.output, o.h_n});
                        },
                        with_params(gru, {x, h0})),
              "GRU");

        LSTM lstm(2, 2, gen, {.num_layers = 2, .bidirectional = true});
        lstm.mode = mode;
        check(gradcheck("LSTM",
                        [&] {
                            const LSTMOutput o = lstm(x, {h0, c0}, lengths);
                            return flat({o.output, o.h_n, o.c_n});
                        },
                        with_params(lstm, {x, h0, c0})),
              "LSTM");
    }
}
