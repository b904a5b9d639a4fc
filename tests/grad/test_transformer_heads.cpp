// Multi-head attention, double build: catalog entries 40
// (multi_head_attention), 41 (narrow_wide_multi_head_attention) and 49
// (head_gated_multi_head_attention), and the TransformerEncoderLayer built from
// them: registry cases for the generic gradient check, the catalog's
// properties and reference values, and the encoder layer against PyTorch.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "attention/multi_head.hpp"
#include "attention/transformer.hpp"
#include "autograd/gradcheck.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/attention_registry.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

Var output_and_weights(const AttentionOutput& a) {
    return concat({reshape(a.output, {-1}), reshape(a.weights, {-1})}, 0);
}

Tensor padding(const std::vector<int64_t>& lengths, int64_t n) { return key_mask(length_mask(lengths, n)); }

MultiHeadAttention::Options mha_options(bool bias, bool fused) {
    MultiHeadAttention::Options o;
    o.bias = bias;
    o.fused = fused;
    return o;
}

const RegisterMechanisms multi_head_cases({
    {"multi_head_attention", "h = 2, cross-attention with padding", {{2, 3, 4}, {2, 5, 4}, {2, 5, 4}},
     [](Generator& g) { return std::make_unique<MultiHeadAttention>(4, 2, g); },
     [](Module* m, const std::vector<Var>& x) {
         return output_and_weights(as<MultiHeadAttention>(m).forward(x[0], x[1], x[2], padding({5, 2}, 5)));
     }},
    {"multi_head_attention", "h = 3, d_k = 2, d_v = 1, biases, causal self-attention", {{2, 4, 3}},
     [](Generator& g) {
         MultiHeadAttention::Options o = mha_options(true, false);
         o.d_k = 2, o.d_v = 1;
         return std::make_unique<MultiHeadAttention>(3, 3, g, o);
     },
     [](Module* m, const std::vector<Var>& x) { return as<MultiHeadAttention>(m).forward(x[0], x[0], x[0], {}, true).output; }},
    {"multi_head_attention", "fused heads, padding", {{2, 3, 4}, {2, 5, 4}, {2, 5, 4}},
     [](Generator& g) { return std::make_unique<MultiHeadAttention>(4, 2, g, mha_options(true, true)); },
     [](Module* m, const std::vector<Var>& x) {
         return as<MultiHeadAttention>(m).forward(x[0], x[1], x[2], padding({5, 3}, 5)).output;
     }},
    {"narrow_wide_multi_head_attention", "narrow, h = 2, padding", {{2, 4, 4}},
     [](Generator& g) {
         return std::make_unique<NarrowWideMultiHeadAttention>(4, 2, NarrowWideMultiHeadAttention::Kind::narrow, g);
     },
     [](Module* m, const std::vector<Var>& x) {
         return output_and_weights(as<NarrowWideMultiHeadAttention>(m).forward(x[0], padding({4, 3}, 4)));
     }},
    {"narrow_wide_multi_head_attention", "wide, h = 2, causal", {{2, 3, 3}},
     [](Generator& g) {
         return std::make_unique<NarrowWideMultiHeadAttention>(3, 2, NarrowWideMultiHeadAttention::Kind::wide, g);
     },
     [](Module* m, const std::vector<Var>& x) { return as<NarrowWideMultiHeadAttention>(m).forward(x[0], {}, true).output; }},
    {"head_gated_multi_head_attention", "sampled gates (fixed noise) + λ·L_C", {{2, 3, 4}},
     [](Generator& g) { return std::make_unique<HeadGatedMultiHeadAttention>(4, 2, g); },
     [](Module* m, const std::vector<Var>& x) {
         auto& gated = as<HeadGatedMultiHeadAttention>(m);
         const Var g = gated.gates(Tensor::from({0.3, 0.8}));  // fixed u: gates 0.33, 0.79, inside (0, 1)
         return gated.forward_with_gates(x[0], x[0], x[0], g, padding({3, 2}, 3)).output + 0.1 * gated.l0_penalty();
     }},
    {"head_gated_multi_head_attention", "test-time gates", {{1, 4, 4}},
     [](Generator& g) { return std::make_unique<HeadGatedMultiHeadAttention>(4, 2, g); },
     [](Module* m, const std::vector<Var>& x) {
         auto& gated = as<HeadGatedMultiHeadAttention>(m);
         gated.eval();
         return gated.forward(x[0], x[0], x[0]).output;
     }},
});

double max_abs_diff(const Tensor& a, const Tensor& b) {
    REQUIRE(a.shape() == b.shape());
    double worst = 0;
    for (int64_t i = 0; i < a.numel(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
    return worst;
}

Tensor columns(const Var& W, int64_t j, int64_t width) { return slice(W.value(), -1, j * width, (j + 1) * width); }

// The reference for entry 40: one head at a time, head_j = Attn(Q W^Q_j + b, K W^K_j + b, V W^V_j + b),
// and MH = Σ_j head_j W^O_j (W^O_j: head j's rows of W^O) + b_O. Head `skip` is left out.
Tensor per_head_loop(const MultiHeadAttention& mha, const Tensor& q, const Tensor& k, const Tensor& v,
                     const Tensor& mask, int64_t skip = -1) {
    const int64_t dk = mha.d_k(), dv = mha.d_v();
    Tensor out = Tensor::zeros(Shape{q.size(0), q.size(1), mha.d_model()});
    auto project = [&](const Tensor& x, const Var& W, const Var& b, int64_t j, int64_t w) {
        Tensor y = matmul(x, columns(W, j, w));
        return b.defined() ? add(y, columns(b, j, w)) : y;
    };
    for (int64_t j = 0; j < mha.num_heads(); ++j) {
        if (j == skip) continue;
        const Tensor head = scaled_dot_product_attention(Var(project(q, mha.W_Q, mha.b_Q, j, dk)),
                                                         Var(project(k, mha.W_K, mha.b_K, j, dk)),
                                                         Var(project(v, mha.W_V, mha.b_V, j, dv)), mask)
                                .output.value();
        add_(out, matmul(head, slice(mha.W_O.value(), 0, j * dv, (j + 1) * dv)));
    }
    return mha.b_O.defined() ? add(out, mha.b_O.value()) : out;
}

void set(Var& parameter, const Tensor& value) { parameter.value().copy_(value); }

}  // namespace

// ---- entry 40: multi_head_attention --------------------------------------------------------

TEST_CASE("multi_head_attention: one matmul then reshape to heads equals a per-head loop; weights are B×h×m×n") {
    Generator gen(40);
    MultiHeadAttention mha(6, 3, gen, mha_options(true, false));
    for (auto& [name, p] : mha.named_parameters()) set(p, Tensor::normal(p.shape(), 0, 0.5, gen));  // nonzero biases
    const Tensor q = Tensor::normal({2, 4, 6}, 0, 1, gen), kv = Tensor::normal({2, 5, 6}, 0, 1, gen);
    const Tensor mask = padding({5, 2}, 5);
    const AttentionOutput a = mha.forward(Var(q), Var(kv), Var(kv), mask);
    CHECK(a.weights.shape() == Shape{2, 3, 4, 5});
    CHECK(max_abs_diff(a.output.value(), per_head_loop(mha, q, kv, kv, mask)) < 1e-12);
    CHECK(mha.taxonomy().query_multiplicity == "multi-head");
}

TEST_CASE("multi_head_attention: h = 1 with W^O = I is scaled_dot_product_attention of the projected inputs") {
    Generator gen(400);
    MultiHeadAttention mha(4, 1, gen);
    Tensor eye = Tensor::zeros(Shape{4, 4});
    for (int64_t i = 0; i < 4; ++i) eye[i * 5] = 1;
    set(mha.W_O, eye);
    const Var q(Tensor::normal({2, 3, 4}, 0, 1, gen)), k(Tensor::normal({2, 6, 4}, 0, 1, gen));
    const AttentionOutput a = mha.forward(q, k, k);
    const AttentionOutput b = scaled_dot_product_attention(matmul(q, mha.W_Q), matmul(k, mha.W_K), matmul(k, mha.W_V));
    CHECK(max_abs_diff(a.output.value(), b.output.value()) < 1e-12);
    CHECK(max_abs_diff(a.weights.value(), reshape(b.weights.value(), {2, 1, 3, 6})) < 1e-12);
}

TEST_CASE("multi_head_attention: W^V_j = 0 removes exactly head j's contribution") {
    Generator gen(401);
    MultiHeadAttention mha(6, 3, gen);
    const Tensor x = Tensor::normal({2, 4, 6}, 0, 1, gen);
    const int64_t j = 1;
    for (int64_t r = 0; r < 6; ++r)
        for (int64_t c = j * 2; c < (j + 1) * 2; ++c) mha.W_V.value()[r * 6 + c] = 0;
    const Tensor out = mha.forward(Var(x), Var(x), Var(x)).output.value();
    CHECK(max_abs_diff(out, per_head_loop(mha, x, x, x, {}, j)) < 1e-12);
}

TEST_CASE("multi_head_attention: fused heads equal composite heads, value and parameter gradients") {
    Generator gen(402);
    MultiHeadAttention composite(8, 2, gen, mha_options(true, false)), fused(8, 2, gen, mha_options(true, true));
    fused.load_state_dict(composite.state_dict());
    const Tensor x = Tensor::normal({3, 70, 8}, 0, 1, gen), G = Tensor::normal({3, 70, 8}, 0, 1, gen);
    const Tensor mask = padding({70, 40, 1}, 70);
    Var y1 = composite.forward(Var(x), Var(x), Var(x), mask, true).output;
    Var y2 = fused.forward(Var(x), Var(x), Var(x), mask, true).output;
    CHECK(max_abs_diff(y1.value(), y2.value()) < 1e-12);
    y1.backward(G), y2.backward(G);
    const auto p1 = composite.parameters(), p2 = fused.parameters();
    for (size_t i = 0; i < p1.size(); ++i) CHECK(max_abs_diff(p1[i].grad(), p2[i].grad()) < 1e-11);
}

// ---- entry 41: narrow_wide_multi_head_attention ---------------------------------------------

TEST_CASE("narrow_wide_multi_head_attention: Q, K, V parameters narrow 3d²/h, standard 3d², wide 3hd²") {
    Generator gen(41);
    const int64_t d = 8, h = 4;
    using Kind = NarrowWideMultiHeadAttention::Kind;
    NarrowWideMultiHeadAttention narrow(d, h, Kind::narrow, gen), wide(d, h, Kind::wide, gen);
    MultiHeadAttention standard(d, h, gen);
    auto qkv = [](const Var& a, const Var& b, const Var& c) { return a.numel() + b.numel() + c.numel(); };
    CHECK(qkv(narrow.W_Q, narrow.W_K, narrow.W_V) == 3 * d * d / h);  // 48
    CHECK(qkv(standard.W_Q, standard.W_K, standard.W_V) == 3 * d * d);  // 192
    CHECK(qkv(wide.W_Q, wide.W_K, wide.W_V) == 3 * h * d * d);  // 768
    CHECK(narrow.W_O.shape() == Shape{d, d});
    CHECK(wide.W_O.shape() == Shape{h * d, d});
}

TEST_CASE("narrow_wide_multi_head_attention: h = 1 makes narrow = wide = a single head") {
    Generator gen(410);
    using Kind = NarrowWideMultiHeadAttention::Kind;
    NarrowWideMultiHeadAttention narrow(5, 1, Kind::narrow, gen), wide(5, 1, Kind::wide, gen);
    MultiHeadAttention single(5, 1, gen);
    wide.load_state_dict(narrow.state_dict());
    set(single.W_Q, narrow.W_Q.value().reshape(Shape{5, 5})), set(single.W_K, narrow.W_K.value().reshape(Shape{5, 5}));
    set(single.W_V, narrow.W_V.value().reshape(Shape{5, 5})), set(single.W_O, narrow.W_O.value());
    const Var x(Tensor::normal({2, 4, 5}, 0, 1, gen));
    const Tensor a = narrow.forward(x).output.value();
    CHECK(max_abs_diff(a, wide.forward(x).output.value()) < 1e-12);
    CHECK(max_abs_diff(a, single.forward(x, x, x).output.value()) < 1e-12);
}

TEST_CASE("narrow_wide_multi_head_attention: a narrow head's output depends only on its chunk of columns") {
    Generator gen(411);
    const int64_t d = 6, h = 3, c = 2;
    NarrowWideMultiHeadAttention narrow(d, h, NarrowWideMultiHeadAttention::Kind::narrow, gen);
    const Tensor x = Tensor::normal({1, 4, d}, 0, 1, gen);
    Tensor changed = x.clone();
    for (int64_t i = 0; i < 4; ++i) changed[i * d + 2] += 1, changed[i * d + 3] -= 2;  // chunk 1 only
    const Tensor a = narrow.heads(Var(x)).output.value(), b = narrow.heads(Var(changed)).output.value();  // 1×h×4×c
    for (int64_t j = 0; j < h; ++j) {
        double diff = 0;
        for (int64_t i = 0; i < 4 * c; ++i) diff = std::max(diff, std::abs(a[j * 4 * c + i] - b[j * 4 * c + i]));
        CAPTURE(j);
        if (j == 1) CHECK(diff > 1e-3);
        else CHECK(diff == 0);
    }
}

// ---- entry 49: head_gated_multi_head_attention ----------------------------------------------

TEST_CASE("head_gated_multi_head_attention: log α = 0 gives P(g ≠ 0) = 0.831822") {
    Generator gen(49);
    HeadGatedMultiHeadAttention one(4, 1, gen), four(8, 4, gen);
    CHECK(std::abs(one.l0_penalty().item() - 0.831822) < 1e-6);
    CHECK(std::abs(four.l0_penalty().item() - 4 * 0.831822) < 4e-6);
}

TEST_CASE("head_gated_multi_head_attention: sampled gates lie in [0, 1], exactly 0 and exactly 1 both occur") {
    // 10⁴ gates (2,500 draws of 4 heads), log α = 0, seed 4900. P(g = 0) = P(g = 1) = 1 − 0.831822 = 0.168178
    // (the stretched sigmoid's two clipped tails); the sample frequencies have a standard error of 0.0037.
    Generator init(1), noise(4900);
    HeadGatedMultiHeadAttention gated(8, 4, init);
    int64_t zeros = 0, ones = 0, total = 0;
    bool inside = true;
    for (int draw = 0; draw < 2500; ++draw) {
        const Tensor g = gated.sample_gates(noise).value();
        for (int64_t j = 0; j < 4; ++j, ++total) {
            inside = inside && g[j] >= 0 && g[j] <= 1;
            zeros += g[j] == 0, ones += g[j] == 1;
        }
    }
    CHECK(inside);
    CHECK(std::abs(static_cast<double>(zeros) / total - 0.168178) < 0.02);
    CHECK(std::abs(static_cast<double>(ones) / total - 0.168178) < 0.02);
}

TEST_CASE("head_gated_multi_head_attention: all gates equal to 1 give multi_head_attention") {
    Generator gen(490);
    HeadGatedMultiHeadAttention gated(6, 3, gen);
    set(gated.log_alpha, Tensor::full(Shape{3}, 10));  // σ(10)(ζ − γ) + γ = 1.09995 → clipped to 1
    gated.eval();
    CHECK(max_abs_diff(gated.test_gates().value(), Tensor::ones(Shape{3})) == 0);
    const Var x(Tensor::normal({2, 4, 6}, 0, 1, gen));
    const Tensor mask = padding({4, 2}, 4);
    CHECK(max_abs_diff(gated.forward(x, x, x, mask).output.value(), gated.mha.forward(x, x, x, mask).output.value()) ==
          0);
    CHECK(gated.taxonomy().query_multiplicity == "multi-head");
}

// ---- TransformerEncoderLayer -------------------------------------------------------------------

TEST_CASE("TransformerEncoderLayer equals torch.nn.TransformerEncoderLayer (post-LN, ReLU, batch_first)") {
    // Reference: torch 1.13, float64, TransformerEncoderLayer(4, 2, 8, dropout=0, batch_first=True) in train
    // mode, parameter k of named_parameters() (torch layout) flat[i] = 0.3 sin(1.7 i + k),
    // x flat[i] = sin(0.5 i) + 0.1 i / 24; src_key_padding_mask hides key 2 of example 1.
    Generator gen(5);
    TransformerEncoderLayer layer(4, 2, 8, gen);
    auto torch_param = [](int k, const Shape& shape) {
        Tensor t = Tensor::empty(shape);
        for (int64_t i = 0; i < t.numel(); ++i) t[i] = 0.3 * std::sin(1.7 * static_cast<double>(i) + k);
        return t;
    };
    MultiHeadAttention& mha = layer.self_attn();
    const Tensor in_proj = torch_param(0, {12, 4}), in_bias = torch_param(1, {12});  // [W_Qᵀ; W_Kᵀ; W_Vᵀ]
    set(mha.W_Q, transpose(slice(in_proj, 0, 0, 4), 0, 1)), set(mha.b_Q, slice(in_bias, 0, 0, 4));
    set(mha.W_K, transpose(slice(in_proj, 0, 4, 8), 0, 1)), set(mha.b_K, slice(in_bias, 0, 4, 8));
    set(mha.W_V, transpose(slice(in_proj, 0, 8, 12), 0, 1)), set(mha.b_V, slice(in_bias, 0, 8, 12));
    set(mha.W_O, transpose(torch_param(2, {4, 4}), 0, 1)), set(mha.b_O, torch_param(3, {4}));
    set(layer.linear1.weight, torch_param(4, {8, 4})), set(layer.linear1.bias, torch_param(5, {8}));
    set(layer.linear2.weight, torch_param(6, {4, 8})), set(layer.linear2.bias, torch_param(7, {4}));
    set(layer.norm1.weight, torch_param(8, {4})), set(layer.norm1.bias, torch_param(9, {4}));
    set(layer.norm2.weight, torch_param(10, {4})), set(layer.norm2.bias, torch_param(11, {4}));
    Tensor x = Tensor::empty(Shape{2, 3, 4});
    for (int64_t i = 0; i < 24; ++i) x[i] = std::sin(0.5 * static_cast<double>(i)) + 0.1 * static_cast<double>(i) / 24;

    const std::vector<double> padded = {
        -0.349504, 0.035775, -0.054417, 0.095737, -0.577473, 0.167888, 0.103087, -0.166100,
        -0.509339, 0.160245, -0.004525, -0.017270, -0.349376, 0.041637, -0.051837, 0.098276,
        -0.576718, 0.161276, 0.096553, -0.165222, -0.559261, 0.183574, 0.059339, -0.101467};
    const std::vector<double> causal = {
        -0.352719, 0.037205, -0.055247, 0.094073, -0.577458, 0.167760, 0.102950, -0.166073,
        -0.509339, 0.160245, -0.004525, -0.017270, -0.352516, 0.043506, -0.052446, 0.096848,
        -0.576718, 0.161276, 0.096553, -0.165222, -0.558489, 0.183190, 0.057697, -0.099678};
    const Tensor y1 = layer.forward(Var(x), padding({3, 2}, 3)).output.value();
    const Tensor y2 = layer.forward(Var(x), {}, true).output.value();
    for (int64_t i = 0; i < 24; ++i) {
        CAPTURE(i);
        CHECK(std::abs(y1[i] - padded[static_cast<size_t>(i)]) < 1e-6);
        CHECK(std::abs(y2[i] - causal[static_cast<size_t>(i)]) < 1e-6);
    }
    // W5's layer (d_model 128, 4 heads, feed-forward 512) has PyTorch's parameter count.
    CHECK(TransformerEncoderLayer(128, 4, 512, gen).num_parameters() == 198272);
}

TEST_CASE("TransformerEncoderLayer: gradients to inputs and parameters match finite differences, fused or not") {
    for (bool fused : {false, true}) {
        CAPTURE(fused);
        Generator gen(55);
        TransformerEncoderLayer::Options options;
        options.fused = fused;
        TransformerEncoderLayer layer(4, 2, 6, gen, options);
        Var x(Tensor::normal({2, 3, 4}, 0, 1, gen), true);
        std::vector<Var> vars{x};
        for (const Var& p : layer.parameters()) vars.push_back(p);
        const Tensor mask = padding({3, 2}, 3);
        const GradcheckResult r = gradcheck("TransformerEncoderLayer", [&] { return layer.forward(x, mask).output; }, vars);
        CHECK_MESSAGE(r.ok, r.message);
    }
}
