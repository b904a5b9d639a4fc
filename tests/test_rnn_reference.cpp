// nn/rnn_cell and nn/rnn against PyTorch: GRUCell, LSTMCell, GRU and LSTM
// (two layers, bidirectional, unsorted lengths, an initial state; and one
// plain layer without bias) give PyTorch's outputs, final states and gradients,
// in every RnnMode. The reference values come from
// tests/fixtures/make_rnn_reference.py (PyTorch 1.13, float64, stored as F32);
// the parameters are loaded by their state_dict names, so the names are
// checked too.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "autograd/ops.hpp"
#include "nn/rnn.hpp"
#include "io/safetensors.hpp"
#include "tensor/ops.hpp"
#include "tests/helpers.hpp"

using namespace attn;

namespace {

const SafetensorsFile& reference() {
    static const SafetensorsFile file = [] {
        return load_safetensors(testing::fixture_path("rnn_reference.safetensors"));
    }();
    return file;
}

Var leaf(const std::string& name) { return Var(reference().at(name).clone(), /*requires_grad=*/true); }

// The parameters of case c, under their state_dict names.
StateDict params_of(const std::string& c) {
    const std::string prefix = c + ".param.";
    StateDict state;
    for (const auto& [name, t] : reference().tensors)
        if (name.rfind(prefix, 0) == 0) state.emplace_back(name.substr(prefix.size()), t);
    return state;
}

std::vector<int64_t> lengths_of(const std::string& c) {
    std::vector<int64_t> lengths;
    if (reference().contains(c + ".lengths"))
        for (real v : reference().at(c + ".lengths").to_vector()) lengths.push_back(static_cast<int64_t>(v));
    return lengths;
}

// |ours − PyTorch's| <= 2e-5·(1 + |PyTorch's|) everywhere (float32 against float64).
void check_close(const Tensor& ours, const std::string& name) {
    INFO(name);
    const Tensor& theirs = reference().at(name);
    REQUIRE_MESSAGE(ours.defined(), name << ": no value (no gradient reached it?)");
    REQUIRE_MESSAGE(ours.shape() == theirs.shape(),
                    name << ": shape " << ours.shape().str() << ", PyTorch's " << theirs.shape().str());
    double worst = 0;
    int64_t at = 0;
    for (int64_t i = 0; i < ours.numel(); ++i) {
        const double excess = std::fabs(double(ours[i]) - theirs[i]) / (1 + std::fabs(double(theirs[i])));
        if (!(excess <= worst)) worst = excess, at = i;  // NaN counts as the worst
    }
    CHECK_MESSAGE(worst <= 2e-5, name << ": flat index " << at << ": ours " << ours[at] << ", PyTorch's "
                                      << theirs[at] << " (relative difference " << worst << ")");
}

// L = Σ_k Σ w_k ⊙ out_k with the fixture's weights; backward; then every
// output and every gradient is compared.
void check_case(const std::string& c, const Module& layer, const std::vector<std::pair<std::string, Var>>& outputs,
                const std::vector<std::pair<std::string, Var>>& leaves) {
    Var loss;
    for (const auto& [name, out] : outputs) {
        check_close(out.value(), c + "." + name);
        const Var term = sum(out * Var(reference().at(c + ".loss." + name)));
        loss = loss.defined() ? loss + term : term;
    }
    loss.backward();
    for (const auto& [name, v] : leaves)
        if (v.defined()) check_close(v.grad(), c + ".grad." + name);
    for (const auto& [name, p] : layer.named_parameters()) check_close(p.grad(), c + ".grad." + name);
}

const RnnMode kModes[] = {RnnMode::stepwise, RnnMode::precomputed, RnnMode::fused, RnnMode::sequence};

}  // namespace

TEST_CASE("rnn reference: the fixture is small and complete") {
    CHECK(std::filesystem::file_size(reference().path) < 200 * 1024);
    for (const char* c : {"gru_cell", "lstm_cell", "gru", "lstm", "gru_plain", "lstm_plain"})
        CHECK_MESSAGE(reference().contains(std::string(c) + ".input"), c);
}

TEST_CASE("GRUCell matches PyTorch (composed and fused)") {
    for (bool fused : {false, true}) {
        INFO("fused = " << fused);
        Generator gen(0);
        GRUCell cell(5, 4, gen);
        cell.load_state_dict(params_of("gru_cell"));
        cell.fused = fused;
        const Var x = leaf("gru_cell.input"), h = leaf("gru_cell.h0");
        check_case("gru_cell", cell, {{"h_next", cell(x, h)}}, {{"input", x}, {"h0", h}});
    }
}

TEST_CASE("LSTMCell matches PyTorch (composed and fused)") {
    for (bool fused : {false, true}) {
        INFO("fused = " << fused);
        Generator gen(0);
        LSTMCell cell(5, 4, gen);
        cell.load_state_dict(params_of("lstm_cell"));
        cell.fused = fused;
        const Var x = leaf("lstm_cell.input"), h = leaf("lstm_cell.h0"), c = leaf("lstm_cell.c0");
        const LSTMState next = cell(x, {h, c});
        check_case("lstm_cell", cell, {{"h_next", next.h}, {"c_next", next.c}}, {{"input", x}, {"h0", h}, {"c0", c}});
    }
}

TEST_CASE("GRU matches PyTorch: 2 layers, bidirectional, lengths, h0, every mode") {
    for (RnnMode mode : kModes) {
        INFO("mode " << to_string(mode));
        Generator gen(0);
        GRU gru(5, 4, gen, {.num_layers = 2, .bidirectional = true});
        gru.load_state_dict(params_of("gru"));
        gru.mode = mode;
        const Var x = leaf("gru.input"), h0 = leaf("gru.h0");
        const GRUOutput out = gru(x, h0, lengths_of("gru"));
        check_case("gru", gru, {{"output", out.output}, {"h_n", out.h_n}}, {{"input", x}, {"h0", h0}});
    }
}

TEST_CASE("LSTM matches PyTorch: 2 layers, bidirectional, lengths, (h0, c0), every mode") {
    for (RnnMode mode : kModes) {
        INFO("mode " << to_string(mode));
        Generator gen(0);
        LSTM lstm(5, 4, gen, {.num_layers = 2, .bidirectional = true});
        lstm.load_state_dict(params_of("lstm"));
        lstm.mode = mode;
        const Var x = leaf("lstm.input"), h0 = leaf("lstm.h0"), c0 = leaf("lstm.c0");
        const LSTMOutput out = lstm(x, {h0, c0}, lengths_of("lstm"));
        check_case("lstm", lstm, {{"output", out.output}, {"h_n", out.h_n}, {"c_n", out.c_n}},
                   {{"input", x}, {"h0", h0}, {"c0", c0}});
    }
}

TEST_CASE("GRU and LSTM match PyTorch: one layer, no bias, no lengths, no initial state") {
    for (RnnMode mode : kModes) {
        INFO("mode " << to_string(mode));
        Generator gen(0);
        GRU gru(3, 5, gen, {.bias = false});
        gru.load_state_dict(params_of("gru_plain"));
        gru.mode = mode;
        const Var x = leaf("gru_plain.input");
        const GRUOutput g = gru(x);
        check_case("gru_plain", gru, {{"output", g.output}, {"h_n", g.h_n}}, {{"input", x}});

        LSTM lstm(3, 5, gen, {.bias = false});
        lstm.load_state_dict(params_of("lstm_plain"));
        lstm.mode = mode;
        const Var y = leaf("lstm_plain.input");
        const LSTMOutput l = lstm(y);
        check_case("lstm_plain", lstm, {{"output", l.output}, {"h_n", l.h_n}, {"c_n", l.c_n}}, {{"input", y}});
    }
}
