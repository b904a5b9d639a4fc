// The alignment functions of the survey (§3.2.2): catalog entries 22–28.
//
// An alignment is override point 2 of the general attention module
// (attention/general.hpp): it turns scores into weights,
//
//     scores B×m×n, keep mask (broadcastable to B×m×n) → weights B×m×n,
//
// and the context is c_i = Σ_l a_il v_l (attend()). Masked positions always get
// weight exactly 0, and a query whose keys are all masked gets all-zero weights
// and zero gradient, never NaN.
//
//   22 soft_alignment             a = softmax(e / T)                       Bahdanau+ 2015; Xu+ 2015
//   23 hard_alignment             m ~ Categorical(softmax(e)), a = onehot(m)   Xu+ 2015; Williams 1992
//   24 local_monotonic_alignment  softmax over the window |l − p| ≤ D       Luong+ 2015 (local-m)
//   25 local_predictive_alignment p_t = S·σ(v_pᵀ tanh(W_p q)), windowed softmax × Gaussian   (local-p)
//   26 reinforced_alignment       z_l ~ Bernoulli(π_l), softmax over {l : z_l = 1}   Shen+ 2018 (ReSA)
//   27 gumbel_softmax_alignment   y = softmax((log a + g) / τ), g ~ Gumbel(0, 1)   Jang+ 2017; Maddison+ 2017
//   28 elementwise_alignment      a_l = σ(e_l) or ReLU(e_l) / s             (no canonical paper)
//
// The stochastic alignments (23, 26, 27) draw from the Generator given to
// their constructor, which must outlive them, and keep what a REINFORCE
// update needs from the last call (last()). docs/attention/alignments.md
// explains each, and the REINFORCE estimator with its baseline.
#pragma once

#include <cstdint>
#include <string>

#include "attention/general.hpp"
#include "attention/scores.hpp"
#include "tensor/random.hpp"

namespace attn {

// ---- 22. soft_alignment ---------------------------------------------------------------
// a_l = exp(e_l/T − max) / Σ_j exp(e_j/T − max) over the unmasked positions.
class SoftAlignment : public Alignment {
public:
    explicit SoftAlignment(real temperature = 1);
    Var align(const AlignmentInput& in) override;
    std::string id() const override { return "soft_alignment"; }
    std::string tag() const override { return "soft"; }

private:
    real temperature_;
};

// ---- 23. hard_alignment ---------------------------------------------------------------
// Xu et al. (2015), Show, Attend and Tell, ICML ("hard" stochastic attention).
//   a = softmax(e);  m ~ Categorical(a);  weights = onehot(m), so c = v_m exactly.
// The sample is not differentiable: the scores learn through REINFORCE
// (Williams 1992), whose term needs log a_m, kept with gradient in last().
class HardAlignment : public Alignment {
public:
    struct Options {
        // In evaluation mode (eval()): sample (true) or take m = argmax a (false).
        bool sample_in_eval = false;
        // In training, each query uses the expected (soft) context a instead of
        // a sample with this probability (Xu et al. use 0.5); 0 = always sample.
        double soft_probability = 0;
    };
    // What one call drew, for the REINFORCE update.
    struct Sample {
        Var probs;       // a = softmax(e)   B×m×n (differentiable)
        Tensor indices;  // m               B×m   (−1 where every key is masked)
        Var log_prob;    // log a_m         B×m   (0 where soft or fully masked)
        Var entropy;     // H[a] = −Σ_l a_l log a_l   B×m (Xu's λ_e term)
        Tensor soft;     // 1 where the row used the soft context   B×m
        Var weights;     // onehot(m), or a where soft   B×m×n
    };

    explicit HardAlignment(Generator& gen) : HardAlignment(gen, Options{}) {}
    HardAlignment(Generator& gen, const Options& options);

    Sample sample(const AlignmentInput& in);
    Var align(const AlignmentInput& in) override;  // sample(in).weights, kept in last()
    const Sample& last() const { return last_; }
    // Changes Options::soft_probability (in [0, 1]) from the next call on: a
    // trainer may start with the expected context only and sample later.
    void set_soft_probability(double p);
    double soft_probability() const { return options_.soft_probability; }

    std::string id() const override { return "hard_alignment"; }
    std::string tag() const override { return "hard"; }

private:
    Generator& gen_;
    Options options_;
    Sample last_;
};

// ---- 24. local_monotonic_alignment ------------------------------------------------------
// Luong et al. (2015), local-m. The window centre is the query's position
// p (AlignmentInput::positions, or the query's index i when not given):
//   W = {l : |l − p| ≤ D} ∩ [0, n),   a_l = exp(e_l) / Σ_{j∈W} exp(e_j) for l ∈ W, 0 elsewhere.
class LocalMonotonicAlignment : public Alignment {
public:
    explicit LocalMonotonicAlignment(int64_t half_width);
    Var align(const AlignmentInput& in) override;
    std::string id() const override { return "local_monotonic_alignment"; }
    std::string tag() const override { return "local-m"; }
    int64_t half_width() const { return D_; }

private:
    int64_t D_;
};

// ---- 25. local_predictive_alignment ------------------------------------------------------
// Luong et al. (2015), local-p. The window centre is predicted from the query:
//   p_t = S · σ(v_pᵀ tanh(W_p q))                  S the source length
//   a_l = softmax_{l∈W}(e_l) · exp(−(l − p_t)² / 2σ²),   W = {l : |l − p_t| ≤ D},   σ = D/2
// The weights do not sum to 1 (Luong does not renormalise); positions outside
// the window get exactly 0. W_p and v_p learn only through p_t in the Gaussian.
// S is the number of unmasked keys of each query (the length of its source).
class LocalPredictiveAlignment : public Alignment {
public:
    // W_p d_p×d_q, v_p d_p; D the window half-width.
    LocalPredictiveAlignment(int64_t query_dim, int64_t hidden_dim, int64_t half_width, Generator& gen);

    Var align(const AlignmentInput& in) override;  // needs in.queries
    // queries B×m×d_q, source lengths S (B×m×1) → p_t   B×m×1
    Var predict_position(const Var& queries, const Tensor& lengths);
    // scores B×m×n, centres p_t B×m×1, mask → weights B×m×n
    Var weights_at(const Var& scores, const Var& centres, const Tensor& mask) const;

    std::string id() const override { return "local_predictive_alignment"; }
    std::string tag() const override { return "local-p"; }
    bool normalized() const override { return false; }

    Var W_p, v_p;

private:
    int64_t D_;
};

// ---- 26. reinforced_alignment -------------------------------------------------------------
// Shen et al. (2018), Reinforced Self-Attention Network, IJCAI (ReSA). In
// self-attention, where the queries are the tokens themselves, two samplers
// choose in parallel which tokens attend and which are attended to:
//   π_l = σ(MLP([x_l; x̄]))     z_l ~ Bernoulli(π_l)      x̄ the mean of the tokens
//   a_il = z^att_i z^ed_l exp(e_il) / Σ_j z^att_i z^ed_j exp(e_ij)
// MLP(x) = w_2ᵀ tanh(W_1 x + b_1) + b_2. In evaluation mode z_l = [π_l > 0.5].
// (The sampler's input is simplified from ReSA's.)
//
// Training (the authors' released code): the samplers learn by REINFORCE
// (Williams 1992) with, for each example b and sampler s,
//   r^s_b = −(L_b + λ·kept^s_b)                    L_b the task loss, kept^s_b the share of real tokens kept
//   L_policy = −mean_b Σ_s (r^s_b − baseline)·log p(z^s_b),   log p(z) = Σ_l log(π_l^z_l (1 − π_l)^(1−z_l))
// (policy_loss). The task's loss trains everything else; ReSA feeds the
// samplers the tokens without letting the policy gradient into them, and
// keeps every token for the first steps (set_keep_all) so that the task
// network learns before the samplers start choosing.
class ReinforcedAlignment : public Alignment {
public:
    // One token sampler: MLP weights W_1 d_h×2d, b_1 d_h, w_2 d_h, b_2 1.
    class Sampler : public Module {
    public:
        Sampler(int64_t token_dim, int64_t hidden_dim, Generator& gen);
        // tokens B×n×d, valid B×n (1 = a real token) → logits s = MLP([x_l; x̄])  B×n,
        // the keep probabilities being π = σ(s)
        Var logits(const Var& tokens, const Tensor& valid);
        Var W_1, b_1, w_2, b_2;
    };
    struct Selection {
        Var probs;     // π    B×n
        Tensor z;      // 0/1  B×n
        Var log_prob;  // log p(z) = Σ_l log p(z_l)   B (padding not counted)
        Tensor kept;   // the share of each example's real tokens with z = 1   B
    };

    ReinforcedAlignment(int64_t token_dim, int64_t hidden_dim, Generator& gen);

    // Draws z for the tokens (or thresholds π in evaluation mode).
    Selection select(Sampler& sampler, const Var& tokens, const Tensor& valid);
    // The selection z given (0/1, B×n) under a sampler's logits s (B×n), with
    // its π = σ(s), log p(z) and share kept: what select() returns once it has drawn z.
    static Selection score_selection(const Var& logits, const Tensor& valid, Tensor z);
    // Soft alignment restricted to the kept pairs: scores B×m×n, z_attending
    // B×m, z_attended B×n → weights B×m×n. All ones gives soft_alignment.
    static Var restricted_softmax(const Var& scores, const Tensor& mask, const Tensor& z_attending,
                                  const Tensor& z_attended);
    // Self-attention: in.queries are the tokens (B×n×d) and in.scores B×n×n.
    Var align(const AlignmentInput& in) override;
    // The selections of the last align(): attending and attended tokens.
    const Selection& last_attending() const { return last_attending_; }
    const Selection& last_attended() const { return last_attended_; }

    // While on, every real token is kept (z = 1, log p(z) = 0): ReSA's warm-up.
    void set_keep_all(bool on) { keep_all_ = on; }
    bool keep_all() const { return keep_all_; }

    // REINFORCE for one selection: task_loss B (per example, taken as a
    // constant) → −mean_b (r_b − baseline)·log p(z_b), r_b = −(L_b + λ·kept_b).
    static Var policy_loss(const Selection& selection, const Tensor& task_loss, real sparsity, real baseline = 0);
    // Both samplers of the last align().
    Var policy_loss(const Tensor& task_loss, real sparsity, real baseline = 0) const;

    std::string id() const override { return "reinforced_alignment"; }
    std::string tag() const override { return "reinforced"; }

    Sampler attending, attended;

private:
    Generator& gen_;
    Selection last_attending_, last_attended_;
    bool keep_all_ = false;
};

// ---- 27. gumbel_softmax_alignment ------------------------------------------------------------
// Jang, Gu, Poole (2017), Categorical Reparameterization with Gumbel-Softmax;
// Maddison, Mnih, Teh (2017), The Concrete Distribution (both ICLR).
//   a = softmax(e);  g_l = −log(−log u_l), u_l ~ U(0, 1);  y = softmax((log a + g) / τ)
// Straight-through: the forward pass gives onehot(argmax y), the backward
// pass the gradient of y. In evaluation mode g = 0.
class GumbelSoftmaxAlignment : public Alignment {
public:
    GumbelSoftmaxAlignment(Generator& gen, real temperature = 1, bool straight_through = false);
    Var align(const AlignmentInput& in) override;
    std::string id() const override { return "gumbel_softmax_alignment"; }
    std::string tag() const override { return "gumbel-softmax"; }

private:
    Generator& gen_;
    real tau_;
    bool straight_through_;
};

// ---- 28. elementwise_alignment ------------------------------------------------------------------
// No single origin: sigmoid gates (as in D-Attn), ReLU weights (Wortsman et al.
// 2023). Each weight depends on its own score only:
//   a_l = σ(e_l)     or     a_l = ReLU(e_l) / s,   s ∈ {1, n, Σ_j ReLU(e_j) + ε}
// n counts the unmasked positions. The weights need not sum to 1.
class ElementwiseAlignment : public Alignment {
public:
    enum class Kind { sigmoid, relu };
    enum class Normalizer { one, length, sum };
    explicit ElementwiseAlignment(Kind kind = Kind::sigmoid, Normalizer normalizer = Normalizer::one,
                                  real eps = real(1e-6));
    Var align(const AlignmentInput& in) override;
    std::string id() const override { return "elementwise_alignment"; }
    std::string tag() const override { return kind_ == Kind::sigmoid ? "elementwise-sigmoid" : "elementwise-relu"; }
    bool normalized() const override { return false; }

private:
    Kind kind_;
    Normalizer normalizer_;
    real eps_;
};

// Softmax over the last axis with an optional keep mask (undefined = keep all):
// the soft alignment every windowed or restricted alignment above reuses.
// fused: softmax_fused's one-pass backward (a module passes is_fast()).
Var masked_softmax(const Var& scores, const Tensor& mask, bool fused = false);

}  // namespace attn
