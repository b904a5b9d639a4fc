// The zoo's alignment task (catalog entry 26, reinforced_alignment):
//   needle  reinforced_alignment  the majority class of 3 signal tokens hidden among 37 noise tokens
// trained as ReSA is (Shen et al. 2018, the authors' released code): the
// task loss trains the network, REINFORCE with the reward −(loss + λ·kept)
// trains the two token samplers, every token kept for the first steps. The
// same network with soft self-attention is the baseline.
// docs/examples/zoo.md; the target in docs/attention/alignments.md.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "attention/alignments.hpp"
#include "examples/zoo/zoo.hpp"
#include "nn/embedding.hpp"
#include "nn/linear.hpp"
#include "nn/loss.hpp"
#include "nn/optim.hpp"
#include "tensor/ops.hpp"

using namespace attn;
using namespace attn::zoo;

namespace {

// ---- the data: three needles in a haystack -------------------------------------------------
// Tokens 0–7 are signal, two per class (class = token / 2); 8–39 are noise.
// Each sequence has 40 tokens: two signal tokens of the majority class, one
// of another class, 37 noise tokens, all at random positions. The label is
// the majority class.
constexpr int64_t kLength = 40, kVocab = 40, kClasses = 4, kSignal = 8;

struct Needles {
    Tensor tokens;  // B×40 ids
    Tensor labels;  // B
};

Needles draw_needles(int64_t B, Generator& gen) {
    Needles d{Tensor::empty(Shape{B, kLength}), Tensor::empty(Shape{B})};
    for (int64_t b = 0; b < B; ++b) {
        std::vector<int64_t> seq(kLength);
        for (int64_t& t : seq) t = kSignal + static_cast<int64_t>(gen.randint(kVocab - kSignal));
        const auto major = static_cast<int64_t>(gen.randint(kClasses));
        const auto minor = (major + 1 + static_cast<int64_t>(gen.randint(kClasses - 1))) % kClasses;
        std::vector<int64_t> slots;  // three distinct positions
        while (slots.size() < 3) {
            const auto p = static_cast<int64_t>(gen.randint(kLength));
            if (std::find(slots.begin(), slots.end(), p) == slots.end()) slots.push_back(p);
        }
        const int64_t signal[3] = {2 * major + static_cast<int64_t>(gen.randint(2)),
                                   2 * major + static_cast<int64_t>(gen.randint(2)),
                                   2 * minor + static_cast<int64_t>(gen.randint(2))};
        for (int k = 0; k < 3; ++k) seq[static_cast<size_t>(slots[static_cast<size_t>(k)])] = signal[k];
        for (int64_t l = 0; l < kLength; ++l) d.tokens[b * kLength + l] = static_cast<real>(seq[static_cast<size_t>(l)]);
        d.labels[b] = static_cast<real>(major);
    }
    return d;
}

// ---- the network: one self-attention layer, mean pooling, a classifier -----------------------
//   X = Embed(tokens)                 B×n×d
//   E = (X W_Q)(X W_K)ᵀ / √d          B×n×n
//   A = align(E)                      soft, or ReSA's restricted softmax
//   H = A (X W_V) + X;  logits = W_o mean_i H_i
struct NeedleNet : Module {
    static constexpr int64_t d = 16;
    Embedding embed;
    Linear W_Q, W_K, W_V, out;
    std::unique_ptr<ReinforcedAlignment> resa;  // null: soft attention

    NeedleNet(bool reinforced, Generator& g)
        : embed(kVocab, d, g), W_Q(d, d, g, false), W_K(d, d, g, false), W_V(d, d, g, false), out(d, kClasses, g) {
        register_module("embed", embed);
        register_module("W_Q", W_Q);
        register_module("W_K", W_K);
        register_module("W_V", W_V);
        register_module("out", out);
        if (reinforced) {
            resa = std::make_unique<ReinforcedAlignment>(d, d, g);
            register_module("resa", *resa);
        }
    }

    struct Out {
        Var logits, weights;
    };
    Out forward(const Tensor& tokens) {
        const Var X = embed(tokens);                                                        // B×n×d
        const Var E = matmul(W_Q(X), W_K(X), false, true) / std::sqrt(static_cast<real>(d));  // B×n×n
        // The samplers read the tokens but do not train them: only the task
        // loss shapes the embedding, only the policy loss the samplers (ReSA).
        const Var A = resa ? resa->align({E, Tensor(), X.detach(), Tensor()}) : softmax(E, -1);
        const Var H = matmul(A, W_V(X)) + X;          // B×n×d
        return {out(mean(H, 1)), A};
    }
};

struct NeedleRun {
    double accuracy = 0, kept_attended = 1, kept_attending = 1, signal_kept = 1;
    int64_t steps = 0;
};

// For the reinforced network in evaluation: what share of the tokens each
// sampler keeps, and what share of the signal tokens the attended one keeps.
void selection_stats(const NeedleNet& net, const Needles& test, NeedleRun& run) {
    const ReinforcedAlignment::Selection &ed = net.resa->last_attended(), &att = net.resa->last_attending();
    double signal = 0, signal_kept = 0;
    for (int64_t i = 0; i < test.tokens.numel(); ++i)
        if (test.tokens[i] < kSignal) signal += 1, signal_kept += ed.z[i];
    run.kept_attended = mean(ed.kept).item();
    run.kept_attending = mean(att.kept).item();
    run.signal_kept = signal_kept / signal;
}

NeedleRun train_needles(NeedleNet& net, ZooContext& ctx, Generator& gen, const Needles& test) {
    Adam opt(net.parameters(), AdamOptions{.lr = 3e-3});
    const int64_t steps = ctx.steps(3000), warmup = steps / 4;  // ReSA keeps every token first
    const real sparsity = 0.1;
    for (int64_t s = 0; s < steps; ++s) {
        if (net.resa) net.resa->set_keep_all(s < warmup);
        const Needles batch = draw_needles(64, gen);
        opt.zero_grad();
        const NeedleNet::Out o = net.forward(batch.tokens);
        const Var per_example = loss::cross_entropy(o.logits, batch.labels, {.reduction = loss::Reduction::none});  // B
        Var loss = mean(per_example);
        if (net.resa && s >= warmup) {
            // The batch's mean reward as the baseline: it leaves the expected
            // gradient (nearly) unchanged and removes most of its variance.
            const ReinforcedAlignment::Selection& ed = net.resa->last_attended();
            const real baseline =
                -(mean(per_example.value()).item() + sparsity * mean(ed.kept).item());
            loss = loss + net.resa->policy_loss(per_example.value(), sparsity, baseline);
        }
        loss.backward();
        opt.step();
    }
    NoGradGuard no_grad;
    EvalMode eval(net);
    NeedleRun run;
    run.accuracy = accuracy(net.forward(test.tokens).logits.value(), test.labels);
    if (net.resa) selection_stats(net, test, run);
    run.steps = steps;
    return run;
}


ZooResult train_needle_task(ZooContext& ctx) {
    Generator test_gen(ctx.gen.next_u64());
    const Needles test = draw_needles(500, test_gen);
    Generator soft_init(ctx.gen.next_u64()), resa_init(ctx.gen.next_u64());
    Generator soft_data(ctx.gen.next_u64()), resa_data(ctx.gen.next_u64());
    NeedleNet soft(false, soft_init), resa(true, resa_init);
    const NeedleRun s = train_needles(soft, ctx, soft_data, test);
    const NeedleRun r = train_needles(resa, ctx, resa_data, test);

    ctx.report.subsection("reinforced_alignment: three needles in forty tokens");
    ctx.report.paragraph(
        "Each sequence has 40 tokens: three signal tokens (two of the majority class, one of another) among 37 noise "
        "tokens. One self-attention layer, mean pooling and a linear classifier, trained for " +
        std::to_string(r.steps) + " steps; ReSA's samplers are trained by REINFORCE with the reward −(loss + 0.1·kept) " +
        "after a quarter of the steps keeping every token. In evaluation a token is kept when π > 0.5.");
    ctx.report.table({"attention", "test accuracy", "tokens attended (kept)", "signal tokens kept", "tokens attending"},
                     {{"soft (every token)", fmt(s.accuracy, 3), "1.000", "1.000", "1.000"},
                      {"reinforced (ReSA)", fmt(r.accuracy, 3), fmt(r.kept_attended, 3), fmt(r.signal_kept, 3),
                       fmt(r.kept_attending, 3)}});
    // What the attended sampler keeps, on a few test sequences.
    {
        NoGradGuard no_grad;
        EvalMode eval(resa);
        resa.forward(test.tokens);
        const Tensor& z = resa.resa->last_attended().z;
        for (int64_t b = 0; b < 3; ++b) {
            std::vector<std::string> words;
            std::vector<double> kept;
            for (int64_t l = 0; l < kLength; ++l) {
                const auto t = static_cast<int64_t>(test.tokens[b * kLength + l]);
                words.push_back(t < kSignal ? "C" + std::to_string(t / 2) : "·");
                kept.push_back(z[b * kLength + l]);
            }
            ctx.report.highlighted_text(words, kept);
        }
        ctx.report.paragraph("Tokens the attended sampler keeps are shaded; C0–C3 are the signal tokens, · noise.");
    }
    return ZooResult{.metric = "test accuracy",
                     .value = r.accuracy,
                     .target = 0.95,
                     .higher_is_better = true,
                     .steps = r.steps,
                     .baseline = "soft attention " + fmt(s.accuracy, 3) + "; ReSA keeps " + fmt(r.kept_attended, 3) +
                                 " of the tokens and " + fmt(r.signal_kept, 3) + " of the signal"};
}

const ZooRegistration alignment_tasks({
    {"GA", "reinforced_alignment", "needle",
     "the majority class of 3 signal tokens among 40, with ReSA's token samplers trained by REINFORCE",
     train_needle_task},
});

}  // namespace
