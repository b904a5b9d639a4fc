// Show, Attend and Tell (Xu, Ba, Kiros, Cho, Courville, Salakhutdinov, Zemel,
// Bengio 2015, ICML): a CNN turns an image into a grid of annotation vectors;
// an LSTM writes the caption, at each word attending to one part of the image,
// softly (a weighted mean of the annotations) or hard (one sampled location).
//
// Shapes (row = position, batch first):
//   B batch · H×W image · L = (H/4)·(W/4) grid locations · D annotation width
//   E embedding · d_h hidden · V vocabulary · T caption length
//
//   encode      images B×1×H×W → conv3×3+ReLU+pool2 → conv3×3+ReLU+pool2 → A  B×L×D
//   init        h_0 = W_init_h ā + b,  c_0 = W_init_c ā + b,   ā = (1/L) Σ_i a_i
//   each word t:
//     e_ti = vᵀ tanh(W_a a_i + b_a + W_h h_{t−1})      α_t = softmax(e_t)      B×L
//            (an AdditiveScore: attention.score.W_1 = W_h, .W_2 = W_a, .b = b_a, .w = v)
//     β_t  = σ(w_βᵀ h_{t−1} + b_β)                                             B×1
//     soft: ẑ_t = β_t Σ_i α_ti a_i
//     hard: s_t ~ Categorical(α_t),  ẑ_t = β_t a_{s_t}  (in training, with probability
//           0.5 per word the expected context Σ_i α_ti a_i instead: Xu et al. §4.1)
//     (h_t, c_t) = LSTMCell([E y_{t−1} ; ẑ_t], (h_{t−1}, c_{t−1}))
//     logits_t = W_o [h_t ; ẑ_t ; E y_{t−1}] + b_o                             B×V
//
// With the default sizes (workload W4 of docs/WORKLOADS.md: 56×56
// images, channels 32 and 64, d_h 256, E 64, attention 128, V 16) the model has
// 496,017 parameters.
//
// The training loss (caption_loss below):
//   soft:  L = CE + λ Σ_i (1 − Σ_t α_ti)²                (doubly stochastic penalty, λ = 1)
//   hard:  L = CE + λ·penalty
//            − mean_b[(R_b − b) · Σ_t log α_t[s_t]]      REINFORCE, with a baseline b
//            − λ_e · mean_b[Σ_t H(α_t)]                  entropy bonus, λ_e = 0.01
//          R_b = log p(y_b | image, s) (the caption's log-likelihood, no gradient),
//          b ← 0.9 b + 0.1 mean_b R_b                     (moving average, updated after use;
//                                                          b starts at the first batch's mean)
// docs/examples/caption.md explains why the baseline and the entropy reduce variance.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attention/alignments.hpp"
#include "attention/sequence_variants.hpp"
#include "examples/caption/caption_data.hpp"
#include "nn/conv.hpp"
#include "nn/embedding.hpp"
#include "nn/linear.hpp"
#include "nn/module.hpp"
#include "nn/rnn_cell.hpp"
#include "nn/sequential.hpp"

namespace attn {

struct CaptionerConfig {
    int64_t channels1 = 32, channels2 = 64;  // the two conv layers; D = channels2
    int64_t hidden = 256;                    // d_h
    int64_t embedding = 64;                  // E
    int64_t attention = 128;                 // the additive attention's width
    int64_t vocab = 16;                      // V
    bool hard = false;                       // hard (stochastic) attention, trained by REINFORCE
    // Hard attention trained by backpropagation instead: a location drawn by
    // the Gumbel-max trick, one-hot in the forward pass, the gradient of the
    // relaxed softmax((log α + g)/τ) in the backward (gumbel_softmax_alignment,
    // straight-through; Jang et al. 2017). No REINFORCE, no baseline.
    bool gumbel = false;
    double temperature = 1;                  // gumbel: τ
    double soft_probability = 0.5;           // hard, training: expected context with this probability
    bool position_code = true;               // add grid_position_code() to the annotations
    bool hard_eval_expected = false;         // hard, evaluation: the expected context instead of argmax α
    // Extra 3×3 conv (D→D, padding 1) + ReLU layers on the grid, after the
    // second pool. Each widens what one annotation sees by 8 pixels (one grid
    // step of 4 pixels on either side): 0 layers see ~10×10 pixels, 3 layers
    // ~34×34, more than a 28-pixel Fashion-MNIST item. Soft attention averages
    // a whole cell anyway; hard attention reads ONE annotation, so it needs it.
    // 0 is workload W4 (496,017 parameters); each layer adds 9·D² + D.
    int64_t context_layers = 0;
};

// A fixed (not learned) 2-D sinusoidal code of each grid location, h·w×D:
// channels [0, D/2) encode the row y, [D/2, D) the column x, as
//   code[2i] = sin(y·ω_i), code[2i+1] = cos(y·ω_i),   ω_i = 100^(−i/(D/4)).
// Why: a two-layer CNN sees only ~10×10 pixels around a location, so its
// features say *what* is there but not *where*; naming items in reading order
// needs the where. The code has no parameters (the W4 count is unchanged).
Tensor grid_position_code(int64_t h, int64_t w, int64_t D);

class Captioner : public Module {
public:
    Captioner(const CaptionerConfig& config, Generator& gen);

    // images B×1×H×W → annotations A  B×L×D (L = (H/4)·(W/4)), CNN features
    // plus grid_position_code when config.position_code
    Var encode(const Var& images);
    // ā → (h_0, c_0), both B×d_h
    LSTMState initial_state(const Var& annotations);

    // One word: from the previous word (ids B) and state, attend and step.
    struct Step {
        Var logits;    // B×V
        Var alpha;     // α_t  B×L
        Var beta;      // β_t  B×1
        Var log_prob;  // hard: log α_t[s_t]  B (0 where the expected context was used); else undefined
        Var entropy;   // hard: H(α_t)  B; else undefined
        Tensor location;  // hard, gumbel: s_t  B (the sampled, or in eval the most likely, location)
        Tensor soft;      // hard, training: B, 1 where the expected context was used instead of s_t
        LSTMState state;
    };
    Step step(const DoublyStochasticSoftAttention::Memory& memory, const Tensor& words, const LSTMState& state);

    // Teacher forcing: inputs <start>, y_1 .. y_{T−1}; predicts y_1 .. y_T.
    struct Forward {
        Var logits;     // B×T×V
        Var alphas;     // B×T×L
        Var log_probs;  // hard: B×T (undefined when evaluating with the expected context)
        Var entropies;  // hard: B×T
        Tensor locations;  // hard, gumbel: B×T, each step's s_t (undefined where Step::location is)
        Tensor soft;       // hard, training: B×T, 1 where a step used the expected context
    };
    Forward forward(const Tensor& images, const Tensor& captions);

    const CaptionerConfig& config() const { return config_; }
    // The fast paths (Module::set_fast): the convolutions as conv2d_fused,
    // the LSTMCell with fused gates, the linear layers' matmul_bias, the
    // attention's score as additive_score_fused (the same values up to
    // rounding), and each max-pool before its ReLU instead of after (the same
    // values and gradients). Without it the model runs the composed versions,
    // to read and step through; the trainer turns them on with --fast, W4
    // always.
    // Hard or Gumbel attention in evaluation: the expected context Σ_i α_ti a_i
    // (true; what Xu et al.'s released caption generator does) or the one most
    // likely location argmax α_t (false). Training always samples.
    void set_hard_eval_expected(bool expected) { config_.hard_eval_expected = expected; }
    // Restarts the hard attention's sampler: the trainer seeds it from (seed,
    // step) before every batch, so a resumed run draws what it would have drawn.
    void seed_sampler(uint64_t seed) { sampler_gen_.manual_seed(seed); }

private:
    CaptionerConfig config_;
    Generator sampler_gen_;  // the hard attention's draws (declared before hard_alignment)

public:
    Conv2d conv1, conv2;
    MaxPool2d pool;
    Sequential context;  // config.context_layers × (Conv2d 3×3, ReLU); empty for W4
    Linear init_h, init_c;
    DoublyStochasticSoftAttention attention;  // doubly_stochastic_soft_attention (soft)
    HardAlignment hard_alignment;             // hard_alignment (REINFORCE)
    GumbelSoftmaxAlignment gumbel_alignment;  // gumbel_softmax_alignment (straight-through)
    Embedding embed;
    LSTMCell cell;
    Linear out;
};

// ---- the loss, with REINFORCE's variance reduction spelled out ------------------------

// The moving-average baseline b of the REINFORCE estimator.
//   b ← momentum·b + (1 − momentum)·mean(R)     (Xu et al.: momentum 0.9)
// Subtracting b from the reward leaves the gradient's expectation unchanged
// (E[∇ log p(s)] = 0) but shrinks its variance when b ≈ E[R].
// It starts at the first batch's mean reward: starting at 0 would make every
// early advantage R − b ≈ −10 (a log-likelihood), pushing down whatever was sampled.
// With reward-to-go (below) the rewards differ by position, so there is one b
// per caption position; with the whole caption's reward, one b.
struct MovingAverageBaseline {
    std::vector<double> values;  // b (one per credited position); empty until the first batch
    double momentum = 0.9;

    bool started() const { return !values.empty(); }
    // The b to use for a batch whose mean rewards are `means`: the running
    // values, or on the very first batch those means themselves.
    std::vector<double> before(const std::vector<double>& means) const { return started() ? values : means; }
    void update(const std::vector<double>& means);
    // "b0 b1 …" with every digit, and back: a resumed run continues exactly.
    std::string str() const;
    static MovingAverageBaseline parse(const std::string& text);
};

// The REINFORCE surrogate: its gradient is the score-function estimate
//   ∇ −mean_b[Σ_t A_bt · log p(s_bt)]  =  −mean_b[Σ_t A_bt ∇ log p(s_bt)]
// log_probs B×T, advantages A = R − b (no gradient) B×T, or B×1 when the
// whole caption's reward credits every step alike.
Var reinforce_loss(const Var& log_probs, const Tensor& advantages);

// Which reward credits the location s_t sampled at word t:
//   caption  R_b = Σ_t' log p(y_bt')       the caption's log-likelihood, for every t
//                                          (Xu et al.; workload W4-hard)
//   to_go    G_bt = Σ_{t' ≥ t} log p(y_bt') only the words from t on: the words
//                                          before t were written before s_t was drawn,
//                                          so their terms have zero expected gradient and
//                                          only add noise (the causality trick)
//   word     r_bt = log p(y_bt)            the word's own log-likelihood only: biased
//                                          (s_t also shapes later words through the
//                                          LSTM state) but least noisy; what Xu et
//                                          al.'s released code credits by default
enum class CaptionReward { caption, to_go, word };

struct CaptionLossOptions {
    double penalty = 1;          // λ of the doubly stochastic penalty
    double entropy_bonus = 0.01; // λ_e (hard)
    double reinforce_weight = 1; // λ_r (hard): the weight of the score-function term (Xu et al., eq. 12)
    CaptionReward reward = CaptionReward::caption;  // (hard)
    bool fast = false;           // the cross-entropy as one op (loss::CrossEntropyOptions::fast)
};

// total = cross_entropy + penalty (+ reinforce − entropy_bonus·entropy when
// hard); the numbers are the terms' values, penalty and reinforce with their
// weights λ and λ_r already applied.
struct CaptionLoss {
    Var total;
    double cross_entropy = 0, penalty = 0, reinforce = 0, entropy = 0;
    double mean_reward = 0, baseline = 0;  // hard: mean_b R_b and the b that was used (first position's, to-go)
};

// The loss of a teacher-forced forward; for hard attention it uses and then
// updates `baseline`.
CaptionLoss caption_loss(const Captioner::Forward& f, const Tensor& captions, const CaptionLossOptions& options,
                         bool hard, MovingAverageBaseline& baseline);

// ---- decoding ------------------------------------------------------------------------------

// A decoded caption with the attention of every generated word.
struct Decoded {
    std::vector<int64_t> words;              // T ids (greedy: always T; beam: up to and with <end>)
    std::vector<std::vector<real>> alphas;   // one α_t (L values) per word
    double log_prob = 0;                     // Σ log p(word) up to and with the first <end>
};

// Decoding runs the model in evaluation mode (and leaves its mode as it found it).
// Greedy: the most likely word at every step, T steps, for each image.
std::vector<Decoded> greedy_decode(Captioner& model, const Tensor& images, int64_t max_length);
// Beam search of width `beam` for one image (1×H×W or H×W): the most likely
// caption ending in <end> (or reaching max_length), by total log-probability
// divided by length^length_penalty. 0 ranks by the total, which favours short
// captions (every word costs log-probability); 1 by the mean per word (the
// length normalisation of Xu et al.'s released generator, its `-n`).
Decoded beam_search(Captioner& model, const Tensor& image, int64_t beam, int64_t max_length,
                    double length_penalty = 0);
// The score beam_search ranks finished captions by: log_prob / length^length_penalty.
double beam_score(const Decoded& d, double length_penalty);

// ---- metrics -------------------------------------------------------------------------------

struct CaptionMetrics {
    double word_accuracy = 0;  // item words equal to the reference at the same position
    double exact = 0;          // captions equal to the reference up to and with <end>
    double bleu[4] = {0, 0, 0, 0};
    double localization = 0;   // item positions whose argmax α_t lies in the named item's cell
    int64_t count = 0;
};

// The cell (row·cols + col) of the image that holds grid location `location`
// of a grid_h×grid_w attention grid over a rows×cols scene.
int64_t location_cell(int64_t location, int64_t grid_h, int64_t grid_w, int64_t rows, int64_t cols);

CaptionMetrics caption_metrics(const std::vector<Decoded>& decoded, const std::vector<const CaptionExample*>& examples,
                               const CaptionVocab& vocab, int64_t grid_h, int64_t grid_w, int64_t rows, int64_t cols);

}  // namespace attn
