// Multi-head attention and its variants (catalog entries 40, 41, 49).
//
//   40  multi_head_attention               Vaswani et al. (2017): h heads of width d_model/h
//   41  narrow_wide_multi_head_attention   Bloem (2019): heads on column chunks (narrow) or on all of X (wide)
//   49  head_gated_multi_head_attention    Voita et al. (2019): a Hard Concrete gate per head, L0 penalty
//
// Shape legend (row = position, batch first; weights in the XW form of the
// catalog entries, i.e. d_in×d_out, multiplying from the right):
//   queries B×m×d_model   keys, values B×n×d_model
//   heads   B×h×m×d_v     weights B×h×m×n     output B×m×d_model
//   masks   keep masks broadcastable to B×m×n (key_mask(B×n) → B×1×n,
//           causal_mask(m, n)); a heads axis is inserted for them.
#pragma once

#include <cstdint>
#include <string>

#include "attention/general.hpp"

namespace attn {

// ---- entry 40: multi_head_attention -------------------------------------------
// Vaswani et al. (2017), §3.2.2:
//
//     head_j = Attn(Q W^Q_j, K W^K_j, V W^V_j)           (entry 44)
//     MH(Q, K, V) = [head_1, …, head_h] W^O
//
// W^Q_j, W^K_j d_model×d_k and W^V_j d_model×d_v are stored side by side as
// W_Q, W_K d_model×(h·d_k) and W_V d_model×(h·d_v): column block j is head j's.
// So every head is projected by ONE matmul, then reshaped to B×h×m×d_k.
// W_O is (h·d_v)×d_model. Defaults d_k = d_v = d_model/h, no biases
// (Vaswani et al.); `bias` adds b_Q, b_K, b_V, b_O (as torch.nn.MultiheadAttention,
// whose in_proj_weight is [W_Qᵀ; W_Kᵀ; W_Vᵀ] and out_proj.weight is W_Oᵀ).
class MultiHeadAttention : public AttentionModule {
public:
    struct Options {
        int64_t d_k = 0;  // 0: d_model / h
        int64_t d_v = 0;  // 0: d_model / h
        bool bias = false;
        // The fast paths: the heads by the fused SDPA kernel
        // (attention/fused_attention.hpp), the biases added in place (matmul_bias).
        bool fused = false;
        bool need_weights = true;  // with fused: materialise the weights (detached) for drawing
    };
    MultiHeadAttention(int64_t d_model, int64_t heads, Generator& gen);
    MultiHeadAttention(int64_t d_model, int64_t heads, Generator& gen, const Options& options);

    // queries B×m×d_model, keys/values B×n×d_model → output B×m×d_model, weights B×h×m×n.
    AttentionOutput forward(const Var& queries, const Var& keys, const Var& values, const Tensor& mask = {},
                            bool causal = false);

    // The steps of forward, public for the gated variant and the tests:
    // X B×m×d_model → X W + b → B×m×h×w → B×h×m×w (w = width of a head).
    Var project_to_heads(const Var& x, const Var& W, const Var& b) const;
    // Every head's attention: heads B×h×m×d_v, weights B×h×m×n.
    AttentionOutput heads(const Var& queries, const Var& keys, const Var& values, const Tensor& mask = {},
                          bool causal = false) const;
    // heads B×h×m×d_v → [head_1, …, head_h] W^O (+ b_O) → B×m×d_model.
    Var merge_heads(const Var& heads) const;
    // The pieces of those: X W + b, all heads side by side (B×m×(h·w)), and
    // the heads concatenated B×m×(h·d_v) → · W^O (+ b_O).
    Var project(const Var& x, const Var& W, const Var& b) const;
    Var output_projection(const Var& concatenated) const;

    std::string id() const override { return "multi_head_attention"; }
    Taxonomy taxonomy() const override;
    int64_t num_heads() const { return h_; }
    int64_t d_model() const { return d_model_; }
    int64_t d_k() const { return d_k_; }
    int64_t d_v() const { return d_v_; }
    // Options::fused, which Module::set_fast switches after construction.
    bool fused() const { return options_.fused; }

    Var W_Q, W_K;  // d_model×(h·d_k)
    Var W_V;       // d_model×(h·d_v)
    Var W_O;       // (h·d_v)×d_model
    Var b_Q, b_K, b_V, b_O;  // undefined unless options.bias

protected:
    void on_set_fast(bool on) override { options_.fused = on; }  // Module::set_fast

private:
    // heads() with the fused kernel (options.fused).
    AttentionOutput heads_fast(const Var& queries, const Var& keys, const Var& values, const Tensor& mask,
                               bool causal) const;
    // The inputs checked, with the rows no query may use zeroed (prepare).
    VisibleInputs prepare(const Var& queries, const Var& keys, const Var& values, const Tensor& mask,
                          bool causal) const;

    int64_t d_model_, h_, d_k_, d_v_;
    Options options_;
};

// ---- entry 41: narrow_wide_multi_head_attention --------------------------------
// Bloem (2019), "Transformers from scratch" (a blog's terminology):
//   narrow: X is cut by columns into h chunks X_j (n×d/h); head j projects only
//           its chunk, with W^{Q,K,V}_j (d/h)×(d/h); W^O d×d.
//   wide:   every head projects all of X with d×d matrices; W^O (h·d)×d.
//
//     head_j = Attn(X_j W^Q_j, X_j W^K_j, X_j W^V_j)     (narrow; X_j = X in wide)
//     Y = [head_1, …, head_h] W^O
//
// Q, K, V parameters: narrow 3d²/h, standard (entry 40) 3d², wide 3hd².
// Stored h×c×c (c = d/h narrow, d wide). X B×n×d, mask → Y B×n×d, weights B×h×n×n.
class NarrowWideMultiHeadAttention : public AttentionModule {
public:
    enum class Kind { narrow, wide };
    NarrowWideMultiHeadAttention(int64_t d, int64_t heads, Kind kind, Generator& gen);

    AttentionOutput forward(const Var& x, const Tensor& mask = {}, bool causal = false);
    // Every head's output before W^O: B×h×n×c, and the weights B×h×n×n.
    AttentionOutput heads(const Var& x, const Tensor& mask = {}, bool causal = false) const;

    std::string id() const override { return "narrow_wide_multi_head_attention"; }
    Taxonomy taxonomy() const override;
    Kind kind() const { return kind_; }
    int64_t head_width() const { return c_; }

    Var W_Q, W_K, W_V;  // h×c×c
    Var W_O;            // (h·c)×d

private:
    int64_t d_, h_, c_;
    Kind kind_;
};

// ---- entry 49: head_gated_multi_head_attention ---------------------------------
// Voita et al. (2019), Analyzing Multi-Head Self-Attention: Specialized Heads
// Do the Heavy Lifting, the Rest Can Be Pruned; gates from Louizos, Welling &
// Kingma (2018), Learning Sparse Neural Networks through L0 Regularization:
//
//     MH = [g_1 head_1, …, g_h head_h] W^O
//     training:  u ~ U(0, 1),  s = σ((log u − log(1 − u) + log α_j) / β),
//                g_j = min(1, max(0, s (ζ − γ) + γ))             (Hard Concrete)
//     test:      g_j = min(1, max(0, σ(log α_j)(ζ − γ) + γ))
//     L_C = Σ_j P(g_j ≠ 0) = Σ_j σ(log α_j − β log(−γ/ζ));   loss = L_task + λ L_C
//
// β = 2/3, γ = −0.1, ζ = 1.1. Params: log_alpha (h) and entry 40's, under "mha.".
// In training mode the gate noise comes from the generator given to the
// constructor (kept by reference: it must outlive the module).
class HeadGatedMultiHeadAttention : public AttentionModule {
public:
    static constexpr real beta = real(2) / 3, gamma = real(-0.1), zeta = real(1.1);

    HeadGatedMultiHeadAttention(int64_t d_model, int64_t heads, Generator& gen);
    HeadGatedMultiHeadAttention(int64_t d_model, int64_t heads, Generator& gen,
                                const MultiHeadAttention::Options& options);

    // Training mode: gates sampled from the generator; eval mode: test gates.
    AttentionOutput forward(const Var& queries, const Var& keys, const Var& values, const Tensor& mask = {},
                            bool causal = false);
    // With given gates g (h).
    AttentionOutput forward_with_gates(const Var& queries, const Var& keys, const Var& values, const Var& gates,
                                       const Tensor& mask = {}, bool causal = false);

    // The Hard Concrete gates for noise u (h values in (0, 1)).
    Var gates(const Tensor& u) const;
    Var sample_gates(Generator& gen) const;
    Var test_gates() const;
    // L_C = Σ_j P(g_j ≠ 0), the expected number of open gates (scalar).
    Var l0_penalty() const;

    std::string id() const override { return "head_gated_multi_head_attention"; }
    Taxonomy taxonomy() const override;

    MultiHeadAttention mha;
    Var log_alpha;  // h

private:
    Generator* gen_;
};

}  // namespace attn
