// Zoo tasks of the pooling, set-function and gating operators (RO, entries
// 74–76, 79, 80; 77 and 78 are in vision.cpp). The `sets` tasks: sets (or
// sequences) of 3–10 digits, one-hot, padded to 10 with a key mask; each
// task's label is a function that one pooling can compute and the baseline
// pooling cannot. The `adding` task: the adding problem for the GRU's gates.
// docs/examples/zoo.md.
#include <algorithm>
#include <functional>
#include <memory>
#include <cmath>
#include <string>
#include <vector>

#include "attention/pooling.hpp"
#include "examples/zoo/zoo.hpp"
#include "nn/optim.hpp"
#include "tensor/ops.hpp"

namespace attn::zoo {
namespace {

// ---- the sets data -----------------------------------------------------------------------

constexpr int64_t kMaxItems = 10, kDigits = 10;

struct Sets {
    Tensor x;     // B×10×10 one-hot digits, zero rows for padding
    Tensor mask;  // B×10
    std::vector<std::vector<int64_t>> items;
    Tensor y;     // B labels
};

using Label = std::function<int64_t(const std::vector<int64_t>&)>;

Sets draw_sets(int64_t B, const Label& label, Generator& gen) {
    Sets s{Tensor::zeros({B, kMaxItems, kDigits}), Tensor::zeros({B, kMaxItems}), {}, Tensor::zeros({B})};
    for (int64_t b = 0; b < B; ++b) {
        const auto n = static_cast<int64_t>(3 + gen.randint(kMaxItems - 2));  // 3..10
        std::vector<int64_t> items;
        for (int64_t i = 0; i < n; ++i) {
            const auto digit = static_cast<int64_t>(gen.randint(kDigits));
            items.push_back(digit);
            s.x[(b * kMaxItems + i) * kDigits + digit] = 1;
            s.mask[b * kMaxItems + i] = 1;
        }
        s.y[b] = static_cast<real>(label(items));
        s.items.push_back(std::move(items));
    }
    return s;
}

// ---- one model, several poolings ------------------------------------------------------------

enum class Pool { max, mean, k_max, chunk_max, deep_sets_sum, deep_sets_mean };

// φ: Linear 10→h, ReLU per item; the pooling; a head: Linear → h, ReLU, Linear → classes.
// (The Deep Sets variants are DeepSetsPooling itself, φ and ρ inside.)
struct SetNet : Module {
    static constexpr int64_t h = 32;
    Pool pool;
    int64_t slots = 1;  // pooled vectors per set: k or the number of chunks
    std::unique_ptr<Linear> phi, head1, head2;
    std::unique_ptr<DeepSetsPooling> deep_sets;

    SetNet(Pool p, int64_t classes, Generator& g) : pool(p) {
        if (p == Pool::deep_sets_sum || p == Pool::deep_sets_mean) {
            deep_sets = std::make_unique<DeepSetsPooling>(
                kDigits, h, classes, g, p == Pool::deep_sets_sum ? SetAggregate::sum : SetAggregate::mean);
            register_module("deep_sets", *deep_sets);
            return;
        }
        if (p == Pool::k_max || p == Pool::chunk_max) slots = 2;
        phi = std::make_unique<Linear>(kDigits, h, g);
        head1 = std::make_unique<Linear>(h * slots, h, g);
        head2 = std::make_unique<Linear>(h, classes, g);
        register_module("phi", *phi);
        register_module("head1", *head1);
        register_module("head2", *head2);
    }

    // items B×n×d → the per-item features φ (B×n×h) and the logits.
    struct Out {
        Var features, logits;
    };
    Out forward(const Var& x, const Tensor& mask) {
        if (deep_sets) return {Var(), deep_sets->forward(x, mask)};
        const Var f = relu(phi->forward(x));
        Var pooled;
        switch (pool) {
            case Pool::max: pooled = max_pooling(f, mask); break;
            case Pool::mean: pooled = mean_pooling(f, mask); break;
            case Pool::k_max: pooled = reshape(k_max_pooling(f, 2, mask), {x.size(0), -1}); break;
            case Pool::chunk_max: pooled = reshape(chunk_max_pooling(f, 2, mask), {x.size(0), -1}); break;
            default: break;
        }
        return {f, head2->forward(relu(head1->forward(pooled)))};
    }
};

struct SetRun {
    double accuracy = 0;
    int64_t steps = 0;
};

SetRun train_sets(SetNet& net, const Label& label, ZooContext& ctx, Generator& gen, int64_t base_steps,
                  const Sets& test) {
    Adam opt(net.parameters(), AdamOptions{.lr = 3e-3});
    const int64_t steps = ctx.steps(base_steps);
    for (int64_t s = 0; s < steps; ++s) {
        const Sets batch = draw_sets(64, label, gen);
        opt.zero_grad();
        Var loss = cross_entropy(net.forward(Var(batch.x), batch.mask).logits, batch.y);
        loss.backward();
        opt.step();
    }
    NoGradGuard no_grad;
    return {accuracy(net.forward(Var(test.x), test.mask).logits.value(), test.y), steps};
}

// For a few test sets: each item shaded by the share of φ's features it wins
// (is the maximum of, or among the 2 kept by k-max), the credit a pooling
// gives its items.
void credit_picture(ZooContext& ctx, SetNet& net, const Sets& test, const std::string& rule) {
    NoGradGuard no_grad;
    const Tensor f = net.forward(Var(test.x), test.mask).features.value();
    for (int64_t b = 0; b < 4; ++b) {
        const std::vector<int64_t>& items = test.items[static_cast<size_t>(b)];
        const auto n = static_cast<int64_t>(items.size());
        std::vector<double> credit(static_cast<size_t>(n), 0);
        const int64_t half = (n + 1) / 2;  // chunk_max's first chunk
        for (int64_t c = 0; c < SetNet::h; ++c) {
            auto value = [&](int64_t i) { return f[(b * kMaxItems + i) * SetNet::h + c]; };
            auto winner = [&](int64_t lo, int64_t hi) {
                int64_t best = lo;
                for (int64_t i = lo; i < hi; ++i) if (value(i) > value(best)) best = i;
                return best;
            };
            if (net.pool == Pool::chunk_max) {
                credit[static_cast<size_t>(winner(0, half))] += 1;
                credit[static_cast<size_t>(winner(half, n))] += 1;
            } else {
                const int64_t first = winner(0, n);
                credit[static_cast<size_t>(first)] += 1;
                if (net.pool == Pool::k_max) {
                    int64_t second = first == 0 ? 1 : 0;
                    for (int64_t i = 0; i < n; ++i) if (i != first && value(i) > value(second)) second = i;
                    credit[static_cast<size_t>(second)] += 1;
                }
            }
        }
        std::vector<std::string> tokens;
        for (int64_t d : items) tokens.push_back(std::to_string(d));
        tokens.push_back("→ label " + std::to_string(static_cast<int64_t>(test.y[b])));
        credit.push_back(0);
        ctx.report.highlighted_text(tokens, credit);
    }
    ctx.report.paragraph("Each digit is shaded by the share of the 32 item features " + rule + ".");
}

ZooResult run_sets(ZooContext& ctx, const std::string& name, const std::string& task, const Label& label,
                   int64_t classes, Pool pool, Pool baseline_pool, const std::string& baseline_name,
                   double target) {
    Generator test_gen(static_cast<uint64_t>(ctx.seed) + 77);
    const Sets test = draw_sets(2000, label, test_gen);
    constexpr int64_t kSteps = 1500;
    SetNet net(pool, classes, ctx.gen);
    const SetRun r = train_sets(net, label, ctx, ctx.gen, kSteps, test);
    Generator base_gen(static_cast<uint64_t>(ctx.seed) + 1000);
    SetNet base(baseline_pool, classes, base_gen);
    const SetRun b = train_sets(base, label, ctx, base_gen, kSteps, test);
    const std::string baseline = baseline_name + " " + std::to_string(b.accuracy).substr(0, 5);

    ctx.report.subsection(name + ": " + task);
    ctx.report.paragraph(task + " Sets of 3–10 one-hot digits; " + std::to_string(r.steps) +
                         " Adam steps of 64 fresh sets; test accuracy " + std::to_string(r.accuracy).substr(0, 5) +
                         " on 2000 held-out sets; " + baseline + ".");
    if (pool == Pool::max) credit_picture(ctx, net, test, "whose maximum it holds: the items max pooling passes on");
    if (pool == Pool::k_max) credit_picture(ctx, net, test, "for which it is among the 2 kept by k-max pooling");
    if (pool == Pool::chunk_max)
        credit_picture(ctx, net, test, "whose maximum it holds within its chunk (first half | second half)");
    if (pool == Pool::deep_sets_sum) {
        // φ's output for each digit, as Deep Sets sees it: ‖φ(d)‖ shows which digits count.
        NoGradGuard no_grad;
        const Tensor eye = reshape(one_hot(Tensor::arange(kDigits), kDigits), {kDigits, kDigits});
        DeepSetsPooling& ds = *net.deep_sets;
        const Tensor phi = relu(ds.phi2.forward(relu(ds.phi1.forward(Var(eye))))).value();
        std::vector<std::string> tokens;
        std::vector<double> norms;
        for (int64_t d = 0; d < kDigits; ++d) {
            double s = 0;
            for (int64_t c = 0; c < SetNet::h; ++c) s += phi[d * SetNet::h + c] * phi[d * SetNet::h + c];
            tokens.push_back(std::to_string(d));
            norms.push_back(std::sqrt(s));
        }
        ctx.report.highlighted_text(tokens, norms);
        ctx.report.paragraph("Each digit shaded by ‖φ(digit)‖: the even digits, which the count adds up, "
                             "should stand out.");
    }
    return {"test accuracy", r.accuracy, target, true, r.steps, baseline, b.accuracy};
}

// ---- labels -------------------------------------------------------------------------------------

int64_t max_digit(const std::vector<int64_t>& s) { return *std::max_element(s.begin(), s.end()); }

int64_t second_largest(const std::vector<int64_t>& s) {
    std::vector<int64_t> sorted = s;
    std::sort(sorted.rbegin(), sorted.rend());
    return sorted[1];
}

// 1 when the first half (⌈n/2⌉ items, chunk_max_pooling's first chunk) holds a
// larger maximum than the second half.
int64_t first_half_wins(const std::vector<int64_t>& s) {
    const auto half = static_cast<std::ptrdiff_t>((s.size() + 1) / 2);
    return *std::max_element(s.begin(), s.begin() + half) > *std::max_element(s.begin() + half, s.end()) ? 1 : 0;
}

int64_t count_even(const std::vector<int64_t>& s) {
    return std::count_if(s.begin(), s.end(), [](int64_t d) { return d % 2 == 0; });
}

// ---- gru_gating on the adding problem -------------------------------------------------------

// Hochreiter & Schmidhuber's adding problem: T pairs (value ~ U(0, 1), marker);
// exactly two markers, one in each half; the target is the sum of the two
// marked values. Predicting the mean (1.0) gives MSE 1/6.
struct Adding {
    Tensor x;  // B×T×2
    Tensor y;  // B×1
};

Adding draw_adding(int64_t B, int64_t T, Generator& gen) {
    Adding a{Tensor::zeros({B, T, 2}), Tensor::zeros({B, 1})};
    for (int64_t b = 0; b < B; ++b) {
        const auto first = static_cast<int64_t>(gen.randint(static_cast<uint64_t>(T / 2)));
        const auto second = T / 2 + static_cast<int64_t>(gen.randint(static_cast<uint64_t>(T - T / 2)));
        for (int64_t t = 0; t < T; ++t) {
            const double v = gen.uniform();
            a.x[(b * T + t) * 2] = v;
            if (t == first || t == second) {
                a.x[(b * T + t) * 2 + 1] = 1;
                a.y[b] += v;
            }
        }
    }
    return a;
}

ZooResult run_adding(ZooContext& ctx) {
    constexpr int64_t T = 20, kSteps = 1500;
    GruGating gru(2, 16, ctx.gen);
    Linear out(16, 1, ctx.gen);
    std::vector<Var> params = gru.parameters();
    for (const Var& p : out.parameters()) params.push_back(p);
    Adam opt(params, AdamOptions{.lr = 1e-2});
    const int64_t steps = ctx.steps(kSteps);
    for (int64_t s = 0; s < steps; ++s) {
        const Adding batch = draw_adding(32, T, ctx.gen);
        opt.zero_grad();
        const GruGatingOutput o = gru.forward(Var(batch.x));
        Var loss = mean(square(sub(out.forward(squeeze(narrow(o.states, 1, T - 1, 1), 1)), Var(batch.y))));
        loss.backward();
        opt.step();
    }
    Generator test_gen(static_cast<uint64_t>(ctx.seed) + 77);
    const Adding test = draw_adding(1000, T, test_gen);
    NoGradGuard no_grad;
    const GruGatingOutput o = gru.forward(Var(test.x));
    const double mse = mean(square(sub(out.forward(squeeze(narrow(o.states, 1, T - 1, 1), 1)).value(), test.y))).item();

    ctx.report.subsection("gru_gating: the adding problem (T = 20)");
    ctx.report.paragraph("A GRU (16 units, gates written out) reads 20 (value, marker) pairs and a Linear layer "
                         "predicts the sum of the two marked values from its last state; " +
                         std::to_string(steps) + " Adam steps of 32; test MSE " + std::to_string(mse).substr(0, 6) +
                         " on 1000 sequences (predicting the mean 1.0: 0.1667). Each step is shaded by its mean "
                         "update gate z_t; the marked steps are in brackets.");
    const Tensor z = mean(o.update_gates.value(), -1);  // B×T
    for (int64_t b = 0; b < 3; ++b) {
        std::vector<std::string> tokens;
        std::vector<double> weights;
        for (int64_t t = 0; t < T; ++t) {
            std::string v = std::to_string(test.x[(b * T + t) * 2]).substr(0, 4);
            tokens.push_back(test.x[(b * T + t) * 2 + 1] == 1 ? "[" + v + "]" : v);
            weights.push_back(z[b * T + t]);
        }
        ctx.report.highlighted_text(tokens, weights);
    }
    return {"test MSE", mse, 0.02, false, steps, "predicting the mean: 0.1667", 1.0 / 6};
}

const ZooRegistration pooling_tasks({
    {"RO", "sum_mean_max_pooling", "sets", "the largest digit of a set: max pooling (baseline: mean pooling)",
     [](ZooContext& ctx) {
         return run_sets(ctx, "sum_mean_max_pooling", "Predict the largest digit of the set.", max_digit, 10,
                         Pool::max, Pool::mean, "mean pooling", 0.95);
     }},
    {"RO", "k_max_pooling", "sets", "the second-largest digit of a set: 2-max pooling (baseline: max pooling)",
     [](ZooContext& ctx) {
         return run_sets(ctx, "k_max_pooling", "Predict the second-largest digit of the set (k = 2).",
                         second_largest, 10, Pool::k_max, Pool::max, "max pooling", 0.85);
     }},
    {"RO", "chunk_max_pooling", "sets",
     "does the first half of a digit sequence hold the larger maximum: 2-chunk max (baseline: max pooling)",
     [](ZooContext& ctx) {
         return run_sets(ctx, "chunk_max_pooling",
                         "Predict whether the first half of the sequence holds a larger maximum than the second.",
                         first_half_wins, 2, Pool::chunk_max, Pool::max, "max pooling", 0.9);
     }},
    {"RO", "deep_sets_pooling", "sets", "how many digits of a set are even: Deep Sets with Σ (baseline: mean)",
     [](ZooContext& ctx) {
         return run_sets(ctx, "deep_sets_pooling", "Predict how many digits of the set are even (0–10).", count_even,
                         kMaxItems + 1, Pool::deep_sets_sum, Pool::deep_sets_mean, "Deep Sets with the mean", 0.95);
     }},
    {"RO", "gru_gating", "adding", "the adding problem: sum the two marked values of 20",
     [](ZooContext& ctx) { return run_adding(ctx); }},
});

}  // namespace
}  // namespace attn::zoo
