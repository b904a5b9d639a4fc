// A program of your own on the attn library: a small model around one
// attention mechanism, trained on a toy task, printing its loss. Copy this
// folder and build it against an installed library (`make install PREFIX=DIR`
// in the attn repository), with either of the two files beside it:
//
//   make PREFIX=DIR                                         (Makefile: pkg-config)
//   cmake -B build -DCMAKE_PREFIX_PATH=DIR && cmake --build build   (CMakeLists.txt)
//
// The task: 8 numbers, one of them marked; predict the marked one. A learned
// query attends over the items (learned_query_self_attention, catalog entry 36):
// it has to learn to look at the mark, and the weight it gives the marked item
// shows whether it did.
#include <cstdio>
#include <vector>

#include "attention/query_types.hpp"
#include "autograd/ops.hpp"
#include "nn/linear.hpp"
#include "nn/loss.hpp"
#include "nn/optim.hpp"

using namespace attn;

constexpr int64_t kItems = 8, kWidth = 16;

// B sequences of items (value, mark) B×n×2, exactly one marked, and the marked values B×1.
void make_batch(Generator& gen, int64_t B, Tensor* items, Tensor* marked, std::vector<int64_t>* where) {
    *items = Tensor::zeros(Shape{B, kItems, 2});
    *marked = Tensor::zeros(Shape{B, 1});
    where->assign(static_cast<size_t>(B), 0);
    for (int64_t b = 0; b < B; ++b) {
        for (int64_t i = 0; i < kItems; ++i) items->at({b, i, 0}) = static_cast<real>(gen.uniform());
        const auto m = static_cast<int64_t>(gen.randint(kItems));
        items->at({b, m, 1}) = 1;
        marked->at({b, 0}) = items->at({b, m, 0});
        (*where)[static_cast<size_t>(b)] = m;
    }
}

struct Model : Module {
    Linear embed;                    // (value, mark) → kWidth features per item
    LearnedQuerySelfAttention pool;  // one trainable query q: a = softmax(q·h_i), c = Σ a_i h_i
    Linear out;                      // c → the prediction
    explicit Model(Generator& gen) : embed(2, kWidth, gen), pool(kWidth, gen), out(kWidth, 1, gen) {
        register_module("embed", embed);
        register_module("pool", pool);
        register_module("out", out);
    }
    // items B×n×2 → predictions B×1 and the attention weights B×1×n
    AttentionOutput forward(const Tensor& items) {
        const Var h = tanh(embed.forward(Var(items)));
        const AttentionOutput a = pool.forward(h);
        return {reshape(out.forward(a.output), {items.size(0), 1}), a.weights};
    }
};

int main() {
    Generator gen(1);
    Model model(gen);
    Adam optimizer(model.parameters(), {.lr = 1e-2});
    Tensor items, marked;
    std::vector<int64_t> where;
    for (int step = 1; step <= 600; ++step) {
        make_batch(gen, 64, &items, &marked, &where);
        Var loss = loss::mse(model.forward(items).output, marked);
        optimizer.zero_grad();
        loss.backward();
        optimizer.step();
        if (step % 100 == 0) std::printf("step %3d  loss %.5f\n", step, loss.item());
    }
    // How much attention the marked item gets, on sequences the model never saw.
    NoGradGuard no_grad;
    make_batch(gen, 1000, &items, &marked, &where);
    const AttentionOutput a = model.forward(items);
    double on_mark = 0;
    for (int64_t b = 0; b < 1000; ++b) on_mark += a.weights.value().at({b, 0, where[static_cast<size_t>(b)]}) / 1000;
    std::printf("test: loss %.5f, mean weight on the marked item %.3f (1/%lld if it looked nowhere in particular)\n",
                loss::mse(a.output, marked).item(), on_mark, static_cast<long long>(kItems));
    return 0;
}
