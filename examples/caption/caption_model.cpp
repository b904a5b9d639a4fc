#include "examples/caption/caption_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "autograd/ops.hpp"
#include "nn/activation.hpp"
#include "nn/loss.hpp"
#include "examples/caption/bleu.hpp"
#include "tensor/ops.hpp"

namespace attn {

Captioner::Captioner(const CaptionerConfig& c, Generator& gen)
    : config_(c),
      sampler_gen_(gen.fork()),
      conv1(1, c.channels1, 3, gen, 1, 1),
      conv2(c.channels1, c.channels2, 3, gen, 1, 1),
      pool(2),
      init_h(c.channels2, c.hidden, gen),
      init_c(c.channels2, c.hidden, gen),
      attention(c.channels2, c.hidden, c.attention, gen),
      hard_alignment(sampler_gen_, HardAlignment::Options{.sample_in_eval = false,
                                                          .soft_probability = c.soft_probability}),
      gumbel_alignment(sampler_gen_, static_cast<real>(c.temperature), /*straight_through=*/true),
      embed(c.vocab, c.embedding, gen),
      cell(c.embedding + c.channels2, c.hidden, gen),
      out(c.hidden + c.channels2 + c.embedding, c.vocab, gen) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    if (c.context_layers < 0)
        throw std::invalid_argument("Captioner: context_layers must be ≥ 0, got " + std::to_string(c.context_layers));
    for (int64_t i = 0; i < c.context_layers; ++i) {
        context.emplace<Conv2d>(c.channels2, c.channels2, 3, gen, 1, 1);
        context.emplace<ReLU>();
    }
    if (c.context_layers > 0) register_module("context", context);  // W4's names stay as they were
    register_module("init_h", init_h);
    register_module("init_c", init_c);
    register_module("attention", attention);
    if (c.hard && c.gumbel) throw std::invalid_argument("Captioner: hard (REINFORCE) or gumbel, not both");
    register_module("hard_alignment", hard_alignment);  // no parameters: for train()/eval()
    register_module("gumbel_alignment", gumbel_alignment);
    register_module("embed", embed);
    register_module("cell", cell);
    register_module("out", out);
}

Var Captioner::encode(const Var& images) {
    if (images.rank() != 4 || images.size(1) != 1 || images.size(2) % 4 != 0 || images.size(3) % 4 != 0)
        throw std::invalid_argument("Captioner::encode: images " + images.shape().str() +
                                    " must be B×1×H×W with H and W multiples of 4");
    // conv → ReLU → max-pool, as the paper's encoder. The fast path pools
    // first: ReLU is monotone, so the largest of a window's ReLUs is the ReLU
    // of its largest value, and the gradient reaches the same position (none
    // when the window's largest value is ≤ 0), with ReLU on a quarter of the
    // values; and the convolution, its pool and the ReLU are one op
    // (conv2d_max_pool_relu_fused), which never stores the convolution's output.
    const auto block = [&](Conv2d& conv, const Var& x) {
        return is_fast() ? conv.forward_max_pooled(x, pool, /*then_relu=*/true)
                         : pool.forward(relu(conv.forward(x)));
    };
    const Var x1 = block(conv1, images);  // B×C1×H/2×W/2
    Var x2 = block(conv2, x1);            // B×D×H/4×W/4
    if (context.size() > 0) x2 = context.forward(x2);          // same shape, wider view
    const int64_t B = x2.size(0), D = x2.size(1);
    // One row per grid location: B×D×L → B×L×D
    const Var features = transpose(reshape(x2, {B, D, -1}), 1, 2);
    if (!config_.position_code) return features;
    return add(features, Var(grid_position_code(x2.size(2), x2.size(3), D)));  // + where, L×D broadcast
}

Tensor grid_position_code(int64_t h, int64_t w, int64_t D) {
    Tensor code = Tensor::zeros(Shape{h * w, D});
    const int64_t quarter = std::max<int64_t>(D / 4, 1);
    for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x)
            for (int64_t c = 0; c + 1 < D; c += 2) {
                const bool row = c < D / 2;
                const int64_t i = (row ? c : c - D / 2) / 2;
                const double omega = std::pow(100.0, -static_cast<double>(i) / static_cast<double>(quarter));
                const double pos = static_cast<double>(row ? y : x);
                code[(y * w + x) * D + c] = static_cast<real>(std::sin(pos * omega));
                code[(y * w + x) * D + c + 1] = static_cast<real>(std::cos(pos * omega));
            }
    return code;
}

LSTMState Captioner::initial_state(const Var& annotations) {
    const Var mean_annotation = mean(annotations, 1);  // ā  B×D
    return {init_h.forward(mean_annotation), init_c.forward(mean_annotation)};
}

Captioner::Step Captioner::step(const DoublyStochasticSoftAttention::Memory& memory, const Tensor& words,
                                const LSTMState& state) {
    Step s;
    const Var emb = embed.forward(words);  // E y_{t−1}  B×E
    Var z;                                  // ẑ_t  B×D
    const bool stochastic = config_.hard || config_.gumbel;
    if (!stochastic || (config_.hard_eval_expected && !is_training())) {
        // soft: ẑ_t = β_t Σ_i α_ti a_i
        const auto att = attention.step(state.h, memory);
        z = att.output;
        s.alpha = att.weights;
        s.beta = att.gate;
    } else if (config_.hard) {
        // hard: s_t ~ Categorical(α_t), ẑ_t = β_t a_{s_t} (or the expected context, p = 0.5)
        const Var e = unsqueeze(attention.scores(state.h, memory), 1);  // B×1×L
        AlignmentInput in;
        in.scores = e;
        const HardAlignment::Sample sample = hard_alignment.sample(in);
        s.beta = attention.gate(state.h);
        z = mul(s.beta, squeeze(attend(sample.weights, memory.annotations), 1));
        s.alpha = squeeze(sample.probs, 1);
        s.log_prob = squeeze(sample.log_prob, 1);
        s.entropy = squeeze(sample.entropy, 1);
        s.location = sample.indices.reshape(Shape{words.numel()});
        s.soft = sample.soft.reshape(Shape{words.numel()});
    } else {
        // gumbel: s_t = argmax(log α_t + g) (argmax α_t in eval), ẑ_t = β_t a_{s_t};
        // the gradient reaches α_t through softmax((log α_t + g)/τ)
        const Var e = unsqueeze(attention.scores(state.h, memory), 1);  // B×1×L
        const Var y = gumbel_alignment.align({e, Tensor(), Var(), Tensor()});  // one-hot  B×1×L
        s.beta = attention.gate(state.h);
        z = mul(s.beta, squeeze(attend(y, memory.annotations), 1));
        s.alpha = squeeze(masked_softmax(e, Tensor(), is_fast()), 1);  // α_t, for the penalty and the pictures
        s.location = argmax(y.value(), -1).reshape(Shape{words.numel()});
    }
    s.state = cell.forward(concat({emb, z}, -1), state);
    s.logits = out.forward(concat({s.state.h, z, emb}, -1));
    return s;
}

Captioner::Forward Captioner::forward(const Tensor& images, const Tensor& captions) {
    const int64_t B = captions.size(0), T = captions.size(1);
    if (images.size(0) != B)
        throw std::invalid_argument("Captioner::forward: " + images.shape().str() + " images but captions " +
                                    captions.shape().str());
    const Var annotations = encode(Var(images));
    const auto memory = attention.precompute(annotations);
    LSTMState state = initial_state(annotations);
    std::vector<Var> logits, alphas, log_probs, entropies;
    std::vector<Tensor> locations, soft;
    Tensor words = Tensor::full(Shape{B}, static_cast<real>(CaptionVocab::start));
    for (int64_t t = 0; t < T; ++t) {
        const Step s = step(memory, words, state);
        state = s.state;
        logits.push_back(s.logits);
        alphas.push_back(s.alpha);
        if (s.log_prob.defined()) {  // hard, unless evaluating with the expected context
            log_probs.push_back(s.log_prob);
            entropies.push_back(s.entropy);
        }
        if (s.location.defined()) locations.push_back(s.location);
        if (s.soft.defined()) soft.push_back(s.soft);
        for (int64_t b = 0; b < B; ++b) words[b] = captions[b * T + t];  // teacher forcing
    }
    Forward f;
    f.logits = stack(logits, 1);
    f.alphas = stack(alphas, 1);
    if (!log_probs.empty()) {
        f.log_probs = stack(log_probs, 1);
        f.entropies = stack(entropies, 1);
    }
    if (!locations.empty()) f.locations = stack(locations, 1);
    if (!soft.empty()) f.soft = stack(soft, 1);
    return f;
}

// ---- the loss ------------------------------------------------------------------------------

void MovingAverageBaseline::update(const std::vector<double>& means) {
    if (!started()) {
        values = means;
        return;
    }
    if (means.size() != values.size())
        throw std::invalid_argument("MovingAverageBaseline: " + std::to_string(means.size()) + " rewards for " +
                                    std::to_string(values.size()) + " baselines");
    for (size_t i = 0; i < values.size(); ++i) values[i] = momentum * values[i] + (1 - momentum) * means[i];
}

std::string MovingAverageBaseline::str() const {
    std::string out;
    char text[32];
    for (double v : values) {
        std::snprintf(text, sizeof text, "%.17g", v);
        out += (out.empty() ? "" : " ") + std::string(text);
    }
    return out;
}

MovingAverageBaseline MovingAverageBaseline::parse(const std::string& text) {
    MovingAverageBaseline b;
    std::istringstream in(text);
    for (double v; in >> v;) b.values.push_back(v);
    if (!in.eof()) throw std::runtime_error("baseline: expected numbers, got '" + text + "'");
    return b;
}

Var reinforce_loss(const Var& log_probs, const Tensor& advantages) {
    const int64_t B = log_probs.size(0);
    if (advantages.size(0) != B || (advantages.size(1) != 1 && advantages.size(1) != log_probs.size(1)))
        throw std::invalid_argument("reinforce_loss: advantages " + advantages.shape().str() + " for log_probs " +
                                    log_probs.shape().str() + " (need B×T or B×1)");
    // −mean_b[Σ_t A_bt · log α_t[s_t]]; A is a constant for autograd
    return neg(mean(sum(mul(log_probs, Var(advantages)), -1)));
}

CaptionLoss caption_loss(const Captioner::Forward& f, const Tensor& captions, const CaptionLossOptions& options,
                         bool hard, MovingAverageBaseline& baseline) {
    CaptionLoss L;
    const Var ce = loss::cross_entropy(f.logits, captions, {.fast = options.fast});  // mean over B·T words
    const Var penalty = doubly_stochastic_penalty(f.alphas, static_cast<real>(options.penalty));
    L.total = add(ce, penalty);
    L.cross_entropy = ce.item();
    L.penalty = penalty.item();
    if (!hard) return L;

    // The rewards, no gradient: r_bt = log p(y_bt | image, s_≤t), and either
    // the caption's R_b = Σ_t r_bt for every step, the reward-to-go
    // G_bt = Σ_{t'≥t} r_bt', or the word's own r_bt (one column per step).
    const int64_t B = captions.size(0), T = captions.size(1);
    const Tensor log_p = log_softmax(f.logits.value(), -1);  // B×T×V
    const int64_t V = log_p.size(2);
    const bool per_step = options.reward != CaptionReward::caption;
    const int64_t columns = per_step ? T : 1;
    Tensor rewards = Tensor::zeros(Shape{B, columns});
    for (int64_t b = 0; b < B; ++b) {
        double suffix = 0;  // Σ_{t'≥t} r_bt', built from the end
        for (int64_t t = T - 1; t >= 0; --t) {
            const double r = log_p[(b * T + t) * V + static_cast<int64_t>(captions[b * T + t])];
            suffix += r;
            if (options.reward == CaptionReward::to_go) rewards[b * T + t] = static_cast<real>(suffix);
            if (options.reward == CaptionReward::word) rewards[b * T + t] = static_cast<real>(r);
        }
        if (!per_step) rewards[b] = static_cast<real>(suffix);
    }
    std::vector<double> means(static_cast<size_t>(columns), 0);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t c = 0; c < columns; ++c) means[static_cast<size_t>(c)] += rewards[b * columns + c] / static_cast<double>(B);
    L.mean_reward = means[0];  // caption and to-go: G_b0 = R_b, the whole caption's log-likelihood; word: r_b0

    // Variance reduction 1: subtract the moving-average baseline (the b of
    // before this batch), then update it.
    const std::vector<double> b_used = baseline.before(means);
    if (b_used.size() != means.size())
        throw std::invalid_argument("caption_loss: the moving-average baseline holds " + std::to_string(b_used.size()) +
                                    " values for " + std::to_string(means.size()) +
                                    " credited positions (was it saved with another --reward?)");
    Tensor advantages = Tensor::empty(rewards.shape());
    for (int64_t b = 0; b < B; ++b)
        for (int64_t c = 0; c < columns; ++c)
            advantages[b * columns + c] = rewards[b * columns + c] - static_cast<real>(b_used[static_cast<size_t>(c)]);
    L.baseline = b_used[0];
    const Var reinforce = mul(reinforce_loss(f.log_probs, advantages), static_cast<real>(options.reinforce_weight));
    baseline.update(means);
    // Variance reduction 2: the entropy bonus −λ_e·mean_b Σ_t H(α_t) keeps the
    // sampler from collapsing early onto one location.
    const Var entropy = mean(sum(f.entropies, -1));
    L.total = add(add(L.total, reinforce), mul(entropy, static_cast<real>(-options.entropy_bonus)));
    L.reinforce = reinforce.item();
    L.entropy = entropy.item();
    return L;
}

// ---- decoding ------------------------------------------------------------------------------

std::vector<Decoded> greedy_decode(Captioner& model, const Tensor& images, int64_t max_length) {
    NoGradGuard no_grad;
    EvalMode eval(model);  // a hard model reads argmax or expected context, never a sample
    const int64_t B = images.size(0);
    const Var annotations = model.encode(Var(images));
    const auto memory = model.attention.precompute(annotations);
    LSTMState state = model.initial_state(annotations);
    std::vector<Decoded> out(static_cast<size_t>(B));
    Tensor words = Tensor::full(Shape{B}, static_cast<real>(CaptionVocab::start));
    for (int64_t t = 0; t < max_length; ++t) {
        const Captioner::Step s = model.step(memory, words, state);
        state = s.state;
        const Tensor log_p = log_softmax(s.logits.value(), -1);  // B×V
        const Tensor best = argmax(log_p, -1);
        const int64_t V = log_p.size(1), L = s.alpha.size(1);
        for (int64_t b = 0; b < B; ++b) {
            Decoded& d = out[static_cast<size_t>(b)];
            const auto w = static_cast<int64_t>(best[b]);
            // the caption's log-probability counts the words up to and with <end>
            if (std::find(d.words.begin(), d.words.end(), CaptionVocab::end) == d.words.end())
                d.log_prob += log_p[b * V + w];
            d.words.push_back(w);
            const real* a = s.alpha.value().data() + b * L;
            d.alphas.emplace_back(a, a + L);
            words[b] = static_cast<real>(w);
        }
    }
    return out;
}

double beam_score(const Decoded& d, double length_penalty) {
    return d.log_prob / std::pow(static_cast<double>(std::max<size_t>(1, d.words.size())), length_penalty);
}

Decoded beam_search(Captioner& model, const Tensor& image, int64_t beam, int64_t max_length, double length_penalty) {
    NoGradGuard no_grad;
    EvalMode eval(model);
    if (beam < 1) throw std::invalid_argument("beam_search: beam width must be >= 1");
    if (!(length_penalty >= 0))
        throw std::invalid_argument("beam_search: length_penalty must be >= 0, got " + std::to_string(length_penalty));
    const int64_t H = image.size(-2), W = image.size(-1);
    // The image repeated `beam` times: every beam is one row of the batch.
    Tensor images = Tensor::empty(Shape{beam, 1, H, W});
    for (int64_t k = 0; k < beam; ++k) std::copy(image.data(), image.data() + H * W, images.data() + k * H * W);
    const Var annotations = model.encode(Var(images));
    const auto memory = model.attention.precompute(annotations);
    LSTMState state = model.initial_state(annotations);

    constexpr double dead = -std::numeric_limits<double>::infinity();
    std::vector<Decoded> live(static_cast<size_t>(beam));
    std::vector<double> score(static_cast<size_t>(beam), dead);
    score[0] = 0;  // at the start the beams are identical: keep one
    std::vector<Decoded> finished;
    Tensor words = Tensor::full(Shape{beam}, static_cast<real>(CaptionVocab::start));
    for (int64_t t = 0; t < max_length; ++t) {
        const Captioner::Step s = model.step(memory, words, state);
        const Tensor log_p = log_softmax(s.logits.value(), -1);  // beam×V
        const int64_t V = log_p.size(1), L = s.alpha.size(1);
        // Every extension (beam k, word w) with its total log-probability, best first.
        struct Candidate { double score; int64_t k, w; };
        std::vector<Candidate> cands;
        for (int64_t k = 0; k < beam; ++k)
            if (score[static_cast<size_t>(k)] != dead)
                for (int64_t w = 0; w < V; ++w)
                    if (w != CaptionVocab::start) cands.push_back({score[static_cast<size_t>(k)] + log_p[k * V + w], k, w});
        std::stable_sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
        std::vector<Decoded> next;
        std::vector<double> next_score;
        std::vector<int64_t> parents;
        // The `beam` best extensions: those ending in <end> are finished, the rest live on.
        for (size_t i = 0; i < std::min(cands.size(), static_cast<size_t>(beam)); ++i) {
            const Candidate& c = cands[i];
            Decoded d = live[static_cast<size_t>(c.k)];
            d.words.push_back(c.w);
            const real* a = s.alpha.value().data() + c.k * L;
            d.alphas.emplace_back(a, a + L);
            d.log_prob = c.score;
            if (c.w == CaptionVocab::end || t + 1 == max_length) {
                finished.push_back(std::move(d));
            } else {
                next.push_back(std::move(d));
                next_score.push_back(c.score);
                parents.push_back(c.k);
            }
        }
        // Stop once no live beam can beat the best finished caption. A live
        // beam's total s ≤ 0 only falls, and it would finish with at most
        // max_length words, so its best possible score is s / max_length^penalty.
        double best_finished = dead;
        for (const Decoded& d : finished) best_finished = std::max(best_finished, beam_score(d, length_penalty));
        if (next.empty() ||
            next_score[0] / std::pow(static_cast<double>(max_length), length_penalty) <= best_finished)
            break;
        // Reorder the states to follow their parents; pad with dead beams.
        while (static_cast<int64_t>(next.size()) < beam) {
            next.push_back(next[0]);
            next_score.push_back(dead);
            parents.push_back(parents[0]);
        }
        state = {index_select(s.state.h, 0, parents), index_select(s.state.c, 0, parents)};
        for (int64_t k = 0; k < beam; ++k) words[k] = static_cast<real>(next[static_cast<size_t>(k)].words.back());
        live = std::move(next);
        score = std::move(next_score);
    }
    if (finished.empty()) throw std::logic_error("beam_search: no caption finished");
    return *std::max_element(finished.begin(), finished.end(), [&](const Decoded& a, const Decoded& b) {
        return beam_score(a, length_penalty) < beam_score(b, length_penalty);
    });
}

// ---- metrics -------------------------------------------------------------------------------

int64_t location_cell(int64_t location, int64_t grid_h, int64_t grid_w, int64_t rows, int64_t cols) {
    const int64_t gy = location / grid_w, gx = location % grid_w;
    // the location's centre, in units of cells
    const auto row = static_cast<int64_t>((static_cast<double>(gy) + 0.5) * static_cast<double>(rows) / static_cast<double>(grid_h));
    const auto col = static_cast<int64_t>((static_cast<double>(gx) + 0.5) * static_cast<double>(cols) / static_cast<double>(grid_w));
    return row * cols + col;
}

CaptionMetrics caption_metrics(const std::vector<Decoded>& decoded, const std::vector<const CaptionExample*>& examples,
                               const CaptionVocab& vocab, int64_t grid_h, int64_t grid_w, int64_t rows, int64_t cols) {
    if (decoded.size() != examples.size())
        throw std::invalid_argument("caption_metrics: " + std::to_string(decoded.size()) + " captions for " +
                                    std::to_string(examples.size()) + " examples");
    CaptionMetrics m;
    int64_t words = 0, correct = 0, exact = 0, located = 0;
    std::vector<Tokens> candidates;
    std::vector<std::vector<Tokens>> references;
    auto item_tokens = [&](const std::vector<int64_t>& ids) {
        Tokens out;
        for (int64_t id : ids) {
            if (id == CaptionVocab::end) break;
            out.push_back(id >= 0 && id < vocab.size() ? vocab.words[static_cast<size_t>(id)] : "<?>");
        }
        return out;
    };
    for (size_t i = 0; i < decoded.size(); ++i) {
        const Decoded& d = decoded[i];
        const CaptionExample& ex = *examples[i];
        bool same = true;
        for (size_t t = 0; t < ex.caption.size(); ++t) {
            const int64_t got = t < d.words.size() ? d.words[t] : -1;
            if (got != ex.caption[t]) same = false;
            if (ex.cells[t] < 0) continue;  // <end>: not an item word
            ++words;
            if (got == ex.caption[t]) ++correct;
            // Localisation: is the most attended location inside the named item's cell?
            if (t < d.alphas.size()) {
                const std::vector<real>& a = d.alphas[t];
                const auto peak = static_cast<int64_t>(std::max_element(a.begin(), a.end()) - a.begin());
                if (location_cell(peak, grid_h, grid_w, rows, cols) == ex.cells[t]) ++located;
            }
        }
        if (same) ++exact;
        candidates.push_back(item_tokens(d.words));
        references.push_back({item_tokens(ex.caption)});
    }
    const BleuScore bleu = corpus_bleu(candidates, references);
    m.count = static_cast<int64_t>(decoded.size());
    m.word_accuracy = words ? static_cast<double>(correct) / static_cast<double>(words) : 0;
    m.localization = words ? static_cast<double>(located) / static_cast<double>(words) : 0;
    m.exact = m.count ? static_cast<double>(exact) / static_cast<double>(m.count) : 0;
    for (int n = 0; n < 4; ++n) m.bleu[n] = bleu.bleu[static_cast<size_t>(n)];
    return m;
}

}  // namespace attn
