// The profiler (tensor/profile.hpp): what it counts, where it puts the time,
// and that it records nothing when off.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "autograd/ops.hpp"
#include "nn/layernorm.hpp"
#include "nn/linear.hpp"
#include "nn/optim.hpp"
#include "nn/rnn_cell.hpp"
#include "tensor/ops.hpp"
#include "tensor/parallel.hpp"
#include "tensor/profile.hpp"

using namespace attn;

namespace {

const ProfileRow* row(const ProfileSummary& s, const std::string& name) {
    for (const ProfileRow& r : s.rows)
        if (r.name == name) return &r;
    return nullptr;
}

Var leaf(Shape shape, uint64_t seed) {
    Generator gen(seed);
    return Var(Tensor::normal(shape, 0, 1, gen), true);
}

}  // namespace

TEST_CASE("profiler: a matrix product, forward and backward: calls per phase and the FLOPs of each GEMM") {
    Var a = leaf({3, 4}, 1), b = leaf({4, 5}, 2);
    Profiler profiler;
    Var loss = sum(matmul(a, b));
    loss.backward();
    profiler.stop();
    const ProfileSummary s = profiler.summary();

    const ProfileRow* mm = row(s, "matmul");
    REQUIRE(mm != nullptr);
    CHECK(mm->forward_calls == 1);
    CHECK(mm->backward_calls == 1);
    const ProfileRow* sm = row(s, "sum");
    REQUIRE(sm != nullptr);
    CHECK(sm->forward_calls == 1);
    CHECK(sm->backward_calls == 1);
    // Forward: C = A·B, 3×4 by 4×5: 2·3·5·4 = 120 FLOPs. Backward: ∂A = G·Bᵀ
    // (3×5 by 5×4) and ∂B = Aᵀ·G (4×3 by 3×5), 120 each.
    const ProfileRow* g = row(s, "gemm");
    REQUIRE(g != nullptr);
    CHECK(g->forward_calls == 1);
    CHECK(g->backward_calls == 2);
    CHECK(g->flops == 360);
    CHECK(s.gemm_flops == 360);
    CHECK(s.gemm_s == g->total_s);
    // A GEMM is the whole of its row: nothing is opened inside it.
    CHECK(g->self_s() == doctest::Approx(g->total_s).epsilon(1e-12));
    // Nothing after stop() is recorded.
    Var more = sum(matmul(a, b));
    CHECK(profiler.summary().rows.size() == s.rows.size());
    CHECK(row(profiler.summary(), "matmul")->forward_calls == 1);
}

TEST_CASE("profiler: self times add up to the time recorded; a scope's self time excludes what opened inside") {
    Var x = leaf({16, 32}, 3), w = leaf({32, 32}, 4);
    Profiler profiler;
    {
        const ProfileScope outer("outer");
        Var h = tanh(matmul(x, w));
        Var loss = mean(square(h));
        loss.backward();
    }
    Var tail = sum(x);  // outside "outer"
    profiler.stop();
    const ProfileSummary s = profiler.summary();
    double self = 0, top = 0;
    for (const ProfileRow& r : s.rows) self += r.self_s();
    const ProfileRow* outer = row(s, "outer");
    const ProfileRow* tail_row = row(s, "sum");
    REQUIRE(outer != nullptr);
    REQUIRE(tail_row != nullptr);
    top = outer->total_s + tail_row->total_s;
    CHECK(self == doctest::Approx(top).epsilon(1e-9));
    CHECK(self + s.outside_s == doctest::Approx(s.elapsed_s).epsilon(1e-9));
    // outer's self time is its total minus the rows opened inside it.
    double inside = 0;
    for (const char* name : {"matmul", "gemm", "tanh", "square", "mean"}) {
        const ProfileRow* r = row(s, name);
        REQUIRE_MESSAGE(r != nullptr, name);
        inside += r->self_s();
    }
    CHECK(outer->self_s() == doctest::Approx(outer->total_s - inside).epsilon(1e-9).scale(1e-9));
    CHECK(outer->forward_calls == 1);
    CHECK(outer->backward_calls == 0);
}

TEST_CASE("profiler: each op's forward and backward land in one row (the op's recorded name)") {
    Var x = leaf({4, 6}, 5), y = leaf({4, 6}, 6);
    Var gamma = leaf({6}, 7), beta = leaf({6}, 8);
    Var c = leaf({4, 3}, 9), pre = leaf({4, 12}, 10);
    Profiler profiler;
    Var z = softmax(x * y + exp(x) - sigmoid(y) / (abs(y) + 1.0), 1);
    Var n = layer_norm_fused(relu(z) + log(square(x) + 1.0), gamma, beta);
    const LSTMState st = lstm_gates_fused(pre, c);
    Var cat = concat({reshape(n, {24}), reshape(transpose(st.h, 0, 1), {12})}, 0);
    Var loss = sum(cat) + mean(st.c);
    loss.backward();
    profiler.stop();
    const ProfileSummary s = profiler.summary();
    // An op whose two scopes had different names would leave a row with no
    // backward calls and a row with no forward calls. (An op making several
    // nodes, as unbind_rows, has a backward call for each.)
    for (const ProfileRow& r : s.rows) {
        if (r.name == "gemm") continue;
        CAPTURE(r.name);
        CHECK(r.forward_calls > 0);
        CHECK(r.backward_calls >= r.forward_calls);
    }
    for (const char* name : {"softmax", "layer_norm_fused", "lstm_gates", "concat", "transpose", "exp", "sigmoid"})
        CHECK_MESSAGE(row(s, name) != nullptr, name);
}

TEST_CASE("profiler: off records nothing; ProfilePause hides parallel work; profilers nest") {
    Var x = leaf({8, 8}, 11);
    {
        Var quiet = sum(matmul(x, x));  // no profiler: nothing to record into
        quiet.backward();
    }
    Profiler outer;
    Var a = sum(x);
    {
        Profiler inner;
        Var b = mean(x);
        {
            const ProfilePause pause;
            Var hidden = exp(x);
        }
        inner.stop();
        CHECK(row(inner.summary(), "mean") != nullptr);
        CHECK(row(inner.summary(), "sum") == nullptr);
        CHECK(row(inner.summary(), "exp") == nullptr);
    }
    Var c = tanh(x);
    outer.stop();
    const ProfileSummary s = outer.summary();
    CHECK(row(s, "sum") != nullptr);
    CHECK(row(s, "tanh") != nullptr);
    CHECK(row(s, "mean") == nullptr);  // the inner profiler had it
    CHECK(row(s, "matmul") == nullptr);
}

TEST_CASE("profiler: the optimizer's update and the table") {
    Generator gen(12);
    Linear layer(8, 4, gen);
    Adam opt(layer.named_parameters());
    Var x(Tensor::normal({5, 8}, 0, 1, gen));
    Profiler profiler;
    for (int step = 0; step < 3; ++step) {
        const ProfileScope scope("step");
        opt.zero_grad();
        sum(square(layer.forward(x))).backward();
        opt.step();
    }
    profiler.stop();
    const ProfileSummary s = profiler.summary();
    CHECK(s.steps == 3);
    REQUIRE(row(s, "optimizer step") != nullptr);
    CHECK(row(s, "optimizer step")->forward_calls == 3);
    // Each step: one forward GEMM, and in backward only ∂W (x needs none).
    CHECK(row(s, "gemm")->forward_calls == 3);
    CHECK(row(s, "gemm")->backward_calls == 3);
    CHECK(row(s, "gemm")->flops == 3 * (2.0 * 5 * 4 * 8 + 2.0 * 8 * 4 * 5));
    const std::string table = profiler.table();
    CHECK(table.find("3 steps of") != std::string::npos);
    CHECK(table.find("inside GEMM") != std::string::npos);
    CHECK(table.find("optimizer step") != std::string::npos);
    CHECK(table.find("(outside every scope)") != std::string::npos);
    // Sorted by self time, largest first.
    for (size_t i = 1; i < s.rows.size(); ++i) CHECK(s.rows[i - 1].self_s() >= s.rows[i].self_s());
}
