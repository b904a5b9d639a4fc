// The autograd engine: graph recording, backward, accumulation, freeing,
// no-grad, detach, zero_grad, deep graphs, and the error messages.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <utility>

#include "autograd/ops.hpp"
#include "autograd/record.hpp"
#include "tensor/allocator.hpp"
#include "tensor/ops.hpp"

using namespace attn;

namespace {

bool close(const Tensor& a, std::vector<real> expected) {
    return allclose(a, Tensor::from(std::move(expected), a.shape()), 1e-5, 1e-6);
}

}  // namespace

TEST_CASE("autograd engine: leaves, op nodes and what they record") {
    Var x(Tensor::from({1, 2, 3}), true);
    Var c(Tensor::from({4, 5, 6}));  // a constant
    CHECK(x.is_leaf());
    CHECK(x.requires_grad());
    CHECK_FALSE(c.requires_grad());
    CHECK(x.op() == nullptr);

    Var y = x * c;
    CHECK_FALSE(y.is_leaf());
    CHECK(y.requires_grad());
    CHECK(std::string(y.op()) == "mul");
    CHECK(y.node()->num_inputs() == 2);
    CHECK(y.node()->input(0) == x.node());
    CHECK(y.node()->input(1) == nullptr);  // the constant is not linked

    Var k = c * c;  // nothing wants a gradient: a plain leaf
    CHECK(k.is_leaf());
    CHECK_FALSE(k.requires_grad());
    CHECK(close(k.value(), {16, 25, 36}));
}

TEST_CASE("autograd engine: backward of a small expression, gradients accumulate over uses") {
    Var x(Tensor::from({1, 2, 3}), true);
    Var loss = sum(x * x + x);  // ∂/∂x = 2x + 1
    loss.backward();
    CHECK(loss.item() == doctest::Approx(20));
    CHECK(close(x.grad(), {3, 5, 7}));

    Var y(Tensor::from({1, -1}), true);
    sum(y + y + y).backward();  // one input, three uses
    CHECK(close(y.grad(), {3, 3}));
}

TEST_CASE("autograd engine: a diamond graph visits the shared node once") {
    Var x(Tensor::from({0.5}), true);
    Var h = tanh(x);             // used by both branches
    Var loss = sum(h * h + h);   // ∂/∂h = 2h + 1, ∂h/∂x = 1 − h²
    loss.backward();
    const double t = std::tanh(0.5);
    CHECK(x.grad()[0] == doctest::Approx((2 * t + 1) * (1 - t * t)));
}

TEST_CASE("autograd engine: backward with an upstream gradient, and leaf gradients accumulate across passes") {
    Var x(Tensor::from({1, 2}), true);
    Var y = x * real(3);
    y.backward(Tensor::from({1, 10}));
    CHECK(close(x.grad(), {3, 30}));
    Var z = x * real(2);  // a second graph
    z.backward(Tensor::from({1, 1}));
    CHECK(close(x.grad(), {5, 32}));  // += across backward passes, as in PyTorch

    Tensor buffer = x.grad();
    x.zero_grad();
    CHECK(close(x.grad(), {0, 0}));
    CHECK(x.grad().shares_storage_with(buffer));  // the buffer is kept
    zero_grad(std::vector<Var>{x});
    CHECK(close(x.grad(), {0, 0}));

    Var never(Tensor::from({1}), true);
    never.zero_grad();  // no gradient yet: stays undefined
    CHECK_FALSE(never.grad().defined());
}

TEST_CASE("autograd engine: a gradient buffer never shares storage with another") {
    // add passes g through to both inputs: one may be handed the buffer, the
    // other must get a copy of its own.
    Var a(Tensor::from({1, 2}), true), b(Tensor::from({3, 4}), true);
    Var s = a + b;
    s.backward(Tensor::from({1, 1}));
    CHECK_FALSE(a.grad().shares_storage_with(b.grad()));
    Var t = a * real(2);  // adds into a's buffer only
    t.backward(Tensor::from({1, 1}));
    CHECK(close(a.grad(), {3, 3}));
    CHECK(close(b.grad(), {1, 1}));
}

TEST_CASE("autograd engine: views and additions hand their gradient on instead of copying it") {
    // x → 2x → k reshapes → + c → L = Σ v ⊙ ·: ∂L/∂x = 2v. The gradient buffer
    // made by mul's backward travels down the reshapes and the addition; the
    // number of buffers the backward asks the allocator for does not grow with k.
    const Tensor v = Tensor::from({1, -2, 3, -4, 5, -6}, Shape{2, 3});
    auto requests_of_backward = [&](int k) {
        Var x(Tensor::from({1, 2, 3, 4, 5, 6}, Shape{2, 3}), true);
        Var y = x * real(2);
        for (int i = 0; i < k; ++i) y = reshape(y, i % 2 == 0 ? Shape{3, 2} : Shape{2, 3});
        if (k % 2 == 1) y = reshape(y, Shape{2, 3});
        Var w = y + Var(Tensor::full(Shape{2, 3}, real(1)));
        Var loss = sum(w * Var(v));
        const AllocatorStats before = allocator_stats();
        loss.backward();
        const AllocatorStats after = allocator_stats();
        CHECK(close(x.grad(), {2, -4, 6, -8, 10, -12}));
        return (after.hits + after.misses) - (before.hits + before.misses);
    };
    CHECK(requests_of_backward(20) == requests_of_backward(2));
}

TEST_CASE("autograd engine: a handed-on gradient is taken back before its input receives more") {
    // z = f(x, x, y) whose backward passes grad() to all three inputs, in
    // order: x receives it twice, and y must still see the op's own gradient.
    auto f = [](const Var& a, const Var& b, const Var& c) {
        return record("three_way", add(add(a.value(), b.value()), c.value()), {a, b, c}, [](Backward& bw) {
            bw.accumulate(0, bw.grad());
            bw.accumulate(1, bw.grad());
            bw.accumulate(2, bw.grad());
        });
    };
    Var x(Tensor::from({1, 2}), true), y(Tensor::from({3, 4}), true);
    f(x, x, y).backward(Tensor::from({1, 10}));
    CHECK(close(x.grad(), {2, 20}));
    CHECK(close(y.grad(), {1, 10}));
    // grad_buffer() into an input that was handed the gradient: the same
    auto g = [](const Var& a, const Var& b) {
        return record("buffer_then_read", add(a.value(), b.value()), {a, b}, [](Backward& bw) {
            bw.accumulate(0, bw.grad());
            Tensor& buffer = bw.grad_buffer(0);
            for (int64_t i = 0; i < buffer.numel(); ++i) buffer[i] += 100;
            bw.accumulate(1, mul(bw.grad(), real(3)));
        });
    };
    Var p(Tensor::from({1, 2}), true), q(Tensor::from({3, 4}), true);
    g(p, q).backward(Tensor::from({1, 10}));
    CHECK(close(p.grad(), {101, 110}));
    CHECK(close(q.grad(), {3, 30}));
    // a retained gradient is never handed on: it keeps its own values while
    // its input gathers more from another path (whose backward runs after
    // the reshape's: the engine walks the first term's graph last)
    Var x2(Tensor::from({1, 2}), true);
    Var h = x2 * real(1);
    Var z = reshape(h, Shape{2, 1});
    z.retain_grad();
    (sum(h * Var(Tensor::from({1, 1}))) + sum(z * Var(Tensor::from({5, 7}, Shape{2, 1})))).backward();
    CHECK(close(z.grad(), {5, 7}));
    CHECK(close(x2.grad(), {6, 8}));
}

TEST_CASE("autograd engine: intermediate gradients are dropped unless retained") {
    Var x(Tensor::from({1, 2}), true);
    Var h = x * x;
    Var kept = h + real(1);
    kept.retain_grad();
    sum(kept * real(2)).backward();
    CHECK_FALSE(h.grad().defined());
    CHECK(close(kept.grad(), {2, 2}));
    CHECK(close(x.grad(), {4, 8}));
}

TEST_CASE("autograd engine: backward frees the graph it walked") {
    Var x(Tensor::from({1, 2}), true);
    Var h = tanh(x);
    Var loss = sum(h);
    loss.backward();
    CHECK(loss.node()->freed);
    CHECK(loss.node()->num_inputs() == 0);
    CHECK(h.node()->freed);
    CHECK(h.node()->num_inputs() == 0);
    CHECK(h.value().defined());  // values stay readable
}

TEST_CASE("autograd engine: error messages") {
    Var x(Tensor::from({1, 2, 3}), true);

    SUBCASE("backward on a non-scalar without an upstream gradient") {
        Var y = x * real(2);
        CHECK_THROWS_WITH_AS(y.backward(),
                             "backward: the output has shape 3; backward() without an upstream gradient needs a "
                             "one-element output such as a loss; pass ∂L/∂output as backward(grad)",
                             std::invalid_argument);
        CHECK_THROWS_WITH_AS(y.backward(Tensor::ones(Shape{2})),
                             "backward: the upstream gradient has shape 2 but the output has shape 3",
                             std::invalid_argument);
    }
    SUBCASE("a second backward through a freed graph") {
        Var loss = sum(tanh(x));
        loss.backward();
        CHECK_THROWS_WITH_AS(loss.backward(),
                             "backward: the graph through 'sum' was already freed by an earlier backward(); a graph "
                             "can be walked once, so compute the output again",
                             std::runtime_error);
        Var h = tanh(x);
        sum(h).backward();
        Var again = sum(h * real(2));  // reaches the freed h: its inputs are gone
        CHECK_THROWS_WITH_AS(again.backward(),
                             "backward: the graph through 'tanh' was already freed by an earlier backward(); a graph "
                             "can be walked once, so compute the output again",
                             std::runtime_error);
    }
    SUBCASE("backward on something that needs no gradient") {
        Var c(Tensor::from({1}));
        CHECK_THROWS_WITH_AS(c.backward(),
                             "backward: this variable does not require a gradient (no input of the ops that computed "
                             "it has requires_grad = true, or it was computed under NoGradGuard)",
                             std::logic_error);
    }
    SUBCASE("indices out of range") {
        Var table(Tensor::zeros(Shape{5, 2}), true);
        CHECK_THROWS_WITH_AS(embedding(table, Tensor::from({1, 5})),
                             "embedding: index 5 at position 1 is out of range [0, 5) for weight 5×2",
                             std::out_of_range);
        CHECK_THROWS_WITH_AS(embedding(table, Tensor::from({-1})),
                             "embedding: index -1 at position 0 is out of range [0, 5) for weight 5×2",
                             std::out_of_range);
        Var logits(Tensor::zeros(Shape{2, 3}), true);
        CHECK_THROWS_WITH_AS(cross_entropy(logits, Tensor::from({0, 3})),
                             "cross_entropy: target 3 at position 1 is out of range [0, 3) (ignore_index is -100)",
                             std::out_of_range);
        CHECK_THROWS_AS(index_select(x, 0, {0, 3}), std::out_of_range);
        try {
            index_select(x, 0, {0, 3});
        } catch (const std::out_of_range& e) {
            CHECK(std::string(e.what()).find("index_select: index 3") == 0);
        }
        CHECK_THROWS_AS(gather(x, 0, Tensor::from({4})), std::out_of_range);
    }
    SUBCASE("shape mismatches name the op and both shapes") {
        Var a(Tensor::zeros(Shape{2, 3}), true), b(Tensor::zeros(Shape{4, 3}), true);
        for (auto op : {+[](const Var& p, const Var& q) { return p + q; },
                        +[](const Var& p, const Var& q) { return mul(p, q); }}) {
            try {
                op(a, b);
                FAIL("no exception");
            } catch (const std::invalid_argument& e) {
                const std::string m = e.what();
                CHECK((m.find("add") == 0 || m.find("mul") == 0));
                CHECK(m.find("2×3") != std::string::npos);
                CHECK(m.find("4×3") != std::string::npos);
            }
        }
        Var m(Tensor::zeros(Shape{2, 3}), true), n(Tensor::zeros(Shape{4, 5}), true);
        CHECK_THROWS_WITH_AS(conv2d(Var(Tensor::zeros(Shape{1, 2, 5, 5})), Var(Tensor::zeros(Shape{4, 3, 3, 3})), Var()),
                             "conv2d: input 1×2×5×5 has 2 channels but weight 4×3×3×3 expects 3",
                             std::invalid_argument);
        CHECK_THROWS_WITH_AS(cross_entropy(m, Tensor::from({0, 1, 2})),
                             "cross_entropy: targets of shape 3 do not match logits of shape 2×3 (targets need the "
                             "logits' shape without the class axis)",
                             std::invalid_argument);
        CHECK_THROWS_WITH_AS(softmax(m, -1, SoftmaxMask::keep(Tensor::ones(Shape{4, 3}))),
                             "softmax: mask 4×3 does not broadcast to the scores 2×3", std::invalid_argument);
        // The fast twin names itself: the op a user called, not the one it twins.
        CHECK_THROWS_WITH_AS(softmax_fused(m, -1, SoftmaxMask::keep(Tensor::ones(Shape{4, 3}))),
                             "softmax_fused: mask 4×3 does not broadcast to the scores 2×3", std::invalid_argument);
        CHECK_THROWS_WITH_AS(softmax_fused(m, 2), "softmax_fused: axis 2 is out of range for shape 2×3",
                             std::out_of_range);
        try {
            matmul(m, n);
            FAIL("no exception");
        } catch (const std::invalid_argument& e) {
            const std::string msg = e.what();
            CHECK(msg.find("matmul") == 0);
            CHECK(msg.find("2×3") != std::string::npos);
            CHECK(msg.find("4×5") != std::string::npos);
        }
    }
    SUBCASE("misuse of handles") {
        Var undefined;
        CHECK_THROWS_WITH_AS(undefined.value(), "Var: this variable is undefined (default-constructed)",
                             std::logic_error);
        Var y = x * real(2);
        CHECK_THROWS_WITH_AS(y.set_requires_grad(false),
                             "set_requires_grad: only a leaf's flag can be set; this variable was computed by 'mul' "
                             "(use detach() for a leaf copy)",
                             std::logic_error);
    }
}

TEST_CASE("autograd engine: NoGradGuard records nothing, and nests") {
    Var x(Tensor::from({1, 2}), true);
    CHECK(grad_enabled());
    {
        NoGradGuard outer;
        {
            NoGradGuard inner;
            CHECK_FALSE(grad_enabled());
        }
        CHECK_FALSE(grad_enabled());
        Var y = x * x;
        CHECK(y.is_leaf());
        CHECK_FALSE(y.requires_grad());
        CHECK(close(y.value(), {1, 4}));
    }
    CHECK(grad_enabled());
    CHECK((x * x).requires_grad());
}

TEST_CASE("autograd engine: detach shares the value and cuts the graph") {
    Var x(Tensor::from({1, 2}), true);
    Var h = x * real(3);
    Var d = h.detach();
    CHECK(d.is_leaf());
    CHECK_FALSE(d.requires_grad());
    CHECK(d.value().shares_storage_with(h.value()));
    Var loss = sum(h + d * h);  // gradient flows only through the non-detached uses
    loss.backward();
    CHECK(close(x.grad(), {3 * (1 + 3), 3 * (1 + 6)}));
}

TEST_CASE("autograd engine: a 100,000-node chain: backward and destruction need no deep recursion") {
    const int n = 100000;
    Var x(Tensor::from({0.5}), true);
    Var h = x;
    for (int i = 0; i < n; ++i) h = h * real(1);
    h.backward();
    CHECK(x.grad()[0] == doctest::Approx(1));

    // Built and dropped without backward: the last handle frees the whole chain.
    Var y(Tensor::from({0.5}), true);
    {
        Var g = y;
        for (int i = 0; i < n; ++i) g = tanh(g) + real(0);
        CHECK(g.node()->num_inputs() == 1);
    }  // 200,000 nodes destroyed here
    CHECK(y.value()[0] == doctest::Approx(0.5));

    // A wide graph: one leaf used 100,000 times.
    Var w(Tensor::from({2}), true);
    Var acc = w * real(0);
    for (int i = 0; i < n; ++i) acc = acc + w;
    acc.backward();
    CHECK(w.grad()[0] == doctest::Approx(n));
}

TEST_CASE("autograd engine: a custom op with record(), and a backward that skips unneeded inputs") {
    int calls = 0;
    auto twice = [&calls](const Var& a, const Var& b) {
        // z = 2a + b
        return record("twice", add(mul(a.value(), real(2)), b.value()), {a, b}, [&calls](Backward& bw) {
            ++calls;
            if (bw.needs(0)) bw.accumulate(0, mul(bw.grad(), real(2)));
            if (bw.needs(1)) bw.accumulate(1, bw.grad());
        });
    };
    Var a(Tensor::from({1, 2}), true), b(Tensor::from({5}));  // b: a broadcast constant
    Var z = twice(a, b);
    CHECK(close(z.value(), {7, 9}));
    sum(z).backward();
    CHECK(calls == 1);
    CHECK(close(a.grad(), {2, 2}));
    CHECK_FALSE(b.grad().defined());
}

TEST_CASE("autograd engine: str() and shapes") {
    Var x(Tensor::from({1, 2}), true);
    CHECK(x.str() == "Var(tensor(2, [1, 2]), requires_grad)");
    CHECK((x * x).str() == "Var(tensor(2, [1, 4]), requires_grad, op=mul)");
    CHECK(Var().str() == "Var(undefined)");
    CHECK(x.shape() == Shape{2});
    CHECK(x.numel() == 2);
    CHECK(x.size(-1) == 2);
}

// A tensor changed in place between forward and backward used to give a wrong
// gradient silently: matmul's backward reads B to make ∂L/∂A = ∂L/∂C Bᵀ, and
// exp's reads its own output. The storage's version (Tensor::version()) moves
// on every mutable access once an op has saved it; backward() compares.
TEST_CASE("autograd engine: a saved tensor changed in place after the forward is refused at backward") {
    const std::string advice =
        ": its backward would read the changed values and give a wrong gradient; change a clone(), or change it "
        "after backward() (a non-const data(), [] or at() counts as a change: read through a const Tensor& or const_data())";
    Var a(Tensor::from({1, 2, 3, 4}, Shape{2, 2}), true), b(Tensor::from({5, 6, 7, 8}, Shape{2, 2}), true);
    Var loss = sum(matmul(a, b));
    b.value()[0] = 10;
    CHECK(b.value().version() == 1);
    CHECK_THROWS_WITH_AS(loss.backward(),
                         ("matmul's input 1 was changed in place after the forward (version 1, saved at 0)" + advice)
                             .c_str(),
                         std::logic_error);
    CHECK_FALSE(a.grad().defined());  // refused before any gradient was touched
    CHECK_FALSE(b.grad().defined());

    Var x(Tensor::from({0, 1}), true);
    Var e = exp(x);
    Var y = sum(e);
    e.value().fill_(0);
    CHECK_THROWS_WITH_AS(
        y.backward(), ("exp's output was changed in place after the forward (version 1, saved at 0)" + advice).c_str(),
        std::logic_error);
}

TEST_CASE("autograd engine: changes before the forward, after backward, to a clone, and reads are allowed") {
    Var x(Tensor::from({1, 2}), true);
    x.value()[0] = 3;  // before the forward: nothing has saved x yet
    Tensor copy = x.value().clone();
    Var y = sum(x * x);
    copy[0] = 100;                                 // a clone has a storage of its own
    const real read = std::as_const(x).value()[0];  // a read through const changes nothing
    CHECK(read == 3);
    y.backward();
    CHECK(close(x.grad(), {6, 4}));  // 2x
    x.value()[0] = 0;                // after backward: allowed, and the next forward saves the new version
    Var z = sum(x * x);
    z.backward();
    CHECK(close(x.grad(), {6, 8}));  // (6, 4) + 2·(0, 2)
}

// const_data() reads from a non-const Tensor without counting a change (gdb
// calls data()'s non-const overload on a non-const tensor: a print between
// forward and backward would otherwise refuse the step).
TEST_CASE("autograd engine: const_data() reads a saved tensor without counting a change; data() counts one") {
    Var a(Tensor::from({1, 2}), true);
    Var loss = sum(a * a);
    Tensor& saved = a.value();
    const uint64_t before = saved.version();
    CHECK(saved.const_data()[1] == 2);
    CHECK(saved.version() == before);
    loss.backward();
    CHECK(close(a.grad(), {2, 4}));
    Var again = sum(a * a);
    (void)saved.data();  // a non-const access: counted, whether it writes or not
    CHECK(saved.version() == before + 1);
    CHECK_THROWS_AS(again.backward(), std::logic_error);
}
