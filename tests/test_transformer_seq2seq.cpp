// The seq2seq example's Transformer (--model transformer): its parameter
// count against the layers' formulas, the configuration string, the loss
// with label smoothing against a hand computation, greedy decoding against
// teacher forcing, beam width 1 against greedy, padding, the fused paths, a
// tiny model overfitting, and a model file loaded back from its metadata.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "autograd/ops.hpp"
#include "tensor/ops.hpp"
#include "examples/seq2seq/predict.hpp"
#include "examples/seq2seq/seq2seq_model.hpp"
#include "examples/seq2seq/transformer_model.hpp"
#include "io/checkpoint.hpp"
#include "nn/optim.hpp"
#include "io/safetensors.hpp"
#include "tests/helpers.hpp"
#include "tests/seq2seq_toy.hpp"

using namespace attn;
using namespace attn::seq2seq;
using attn::testing::all_pairs;
using attn::testing::check_greedy_is_teacher_forcing_argmax;
using attn::testing::check_beam_finds_best_of_all_outputs;
using attn::testing::toy_pairs;

namespace {

double max_abs_diff(const Tensor& a, const Tensor& b) {
    REQUIRE(a.shape() == b.shape());
    double m = 0;
    for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::abs(double(a[i]) - double(b[i])));
    return m;
}

TransformerConfig tiny(bool tie = true) {
    return TransformerConfig{.source_vocab = 10, .target_vocab = 9, .d_model = 8, .heads = 2, .layers = 2,
                             .ffn = 12, .dropout = 0, .tie_output = tie};
}

// A few Adam steps away from the initialisation, so that the model has preferences.
void train_steps(TransformerSeq2Seq& model, const Batch& b, int steps, double lr = 0.01) {
    Adam opt(model.named_parameters(), AdamOptions{.lr = lr});
    for (int i = 0; i < steps; ++i) {
        opt.zero_grad();
        model.loss(b).backward();
        opt.step();
    }
}

}  // namespace

TEST_CASE("seq2seq transformer: the parameter count of the layers' formulas; G2P defaults") {
    // embeddings (V_s + V_t)·d; an encoder layer 4d² + 4d (attention) + 2·d·f + f + d (FFN) + 4d (two
    // LayerNorms); a decoder layer two attentions, the FFN and three LayerNorms; tied output: nothing more.
    auto expected = [](const TransformerConfig& c) {
        const int64_t d = c.d_model, f = c.ffn, N = c.layers;
        const int64_t attention = 4 * d * d + 4 * d, ffn = 2 * d * f + f + d;
        const int64_t output = c.tie_output ? 0 : d * c.target_vocab + c.target_vocab;
        return (c.source_vocab + c.target_vocab) * d + N * (attention + ffn + 4 * d) +
               N * (2 * attention + ffn + 6 * d) + output;
    };
    Generator gen(1);
    const TransformerConfig g2p{};  // d_model 256, 4 heads, 3 + 3 layers, FFN 1024
    CHECK(TransformerSeq2Seq(g2p, gen).num_parameters() == expected(g2p));
    CHECK(expected(g2p) == 5550080);  // with source vocabulary 32 and target vocabulary 48
    CHECK(TransformerSeq2Seq(tiny(false), gen).num_parameters() == expected(tiny(false)));
    // torch.nn.Transformer's names for the layers
    TransformerSeq2Seq model(tiny(), gen);
    const auto named = model.named_parameters();
    bool found = false;
    for (const auto& [name, p] : named) found = found || name == "decoder.layers.1.multihead_attn.W_Q";
    CHECK(found);
}

TEST_CASE("seq2seq transformer: forward is the paper's model written out from its layers") {
    // x = E_s[src]·√d + PE, the encoder layers with the source padding; y = E_t[y_in]·√d + PE, the
    // decoder layers with the target and source padding; logits_c = y · E_t[c] (tied). The embedding
    // rows, the sinusoids (sin(t / 10000^{2i/d}), cos(…)) and the output product are in plain loops;
    // the layers are the ones of the model (tested against PyTorch in tests/grad/test_transformer.cpp).
    Generator gen(10);
    TransformerSeq2Seq model(tiny(), gen);
    const Batch b = all_pairs(toy_pairs());
    const int64_t d = model.config().d_model, V = model.config().target_vocab;
    auto embed = [&](const Embedding& e, const Tensor& ids) {
        const int64_t B = ids.size(0), L = ids.size(1);
        Tensor x = Tensor::empty(Shape{B, L, d});
        for (int64_t r = 0; r < B * L; ++r)
            for (int64_t c = 0; c < d; ++c) {
                const double t = static_cast<double>(r % L), i2 = static_cast<double>(c - c % 2);
                const double angle = t / std::pow(10000.0, i2 / static_cast<double>(d));
                const double pe = c % 2 == 0 ? std::sin(angle) : std::cos(angle);
                x[r * d + c] = static_cast<real>(e.weight.value()[static_cast<int64_t>(ids[r]) * d + c] *
                                                     std::sqrt(static_cast<double>(d)) + pe);
            }
        return Var(x);
    };
    const Tensor source_keep = length_mask(b.source_lengths, b.source.size(1));
    Var memory = embed(model.source_embedding, b.source);
    for (auto& layer : model.encoder) memory = layer->forward(memory, key_mask(source_keep)).output;
    Var y = embed(model.target_embedding, b.target_in);
    for (auto& layer : model.decoder) y = layer->forward(y, memory, target_padding(b.target_in), source_keep).output;
    const Tensor Y = y.value(), E = model.target_embedding.weight.value();
    const Tensor logits = model.forward(b).value();
    REQUIRE(logits.shape() == Shape{Y.size(0), Y.size(1), V});
    double worst = 0;
    for (int64_t r = 0; r < Y.size(0) * Y.size(1); ++r)
        for (int64_t c = 0; c < V; ++c) {
            double dot = 0;
            for (int64_t k = 0; k < d; ++k) dot += double(Y[r * d + k]) * double(E[c * d + k]);
            worst = std::max(worst, std::abs(dot - double(logits[r * V + c])));
        }
    CHECK(worst < 1e-4);
    CHECK(target_padding(b.target_in).shape() == b.target_in.shape());
}

TEST_CASE("seq2seq transformer: the configuration string round-trips; bad values are refused by name") {
    const TransformerConfig c{.source_vocab = 30, .target_vocab = 41, .d_model = 48, .heads = 6, .layers = 1,
                              .ffn = 96, .dropout = 0.25, .tie_output = false};
    const TransformerConfig back = TransformerConfig::parse(c.str());
    CHECK(back.str() == c.str());
    CHECK(c.str() == "model=transformer source_vocab=30 target_vocab=41 d_model=48 heads=6 layers=1 ffn=96 "
                     "dropout=0.25 tie_output=0");
    CHECK_THROWS_WITH_AS(TransformerConfig::parse("model=transformer d_model=64 heads=3"),
                         "seq2seq transformer: --d-model 64 must be divisible by --heads 3 (each head has d_model "
                         "/ heads columns)",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(TransformerConfig::parse("d_model=7 heads=7"), doctest::Contains("--d-model 7 must be even"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(TransformerConfig::parse("layers=0"), "seq2seq transformer: --layers must be > 0, got 0",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(TransformerConfig::parse("ffn=x"), doctest::Contains("ffn=x is not a size"),
                         std::runtime_error);
    CHECK_THROWS_WITH_AS(TransformerConfig::parse("dropout=1"), doctest::Contains("dropout=1 is not a probability"),
                         std::runtime_error);
    CHECK_THROWS_WITH_AS(TransformerConfig::parse("attention=bahdanau"), doctest::Contains("unknown key 'attention'"),
                         std::runtime_error);
    Generator gen(4);
    CHECK_THROWS_WITH_AS(TransformerSeq2Seq(TransformerConfig{.d_model = 10, .heads = 4}, gen),
                         doctest::Contains("divisible by --heads 4"), std::invalid_argument);
}

TEST_CASE("seq2seq transformer: the loss is the label-smoothed cross-entropy of the logits, padding ignored") {
    Generator gen(3);
    TransformerSeq2Seq model(tiny(), gen);
    const Batch b = all_pairs(toy_pairs());
    const Tensor logits = model.forward(b).value();  // B×T×V
    const int64_t B = logits.size(0), T = logits.size(1), V = logits.size(2);
    for (double eps : {0.0, 0.1, 0.3}) {
        CAPTURE(eps);
        // ℓ = −(1 − ε) log p_y − (ε/V) Σ_c log p_c over the real target tokens, their mean
        double total = 0;
        int64_t count = 0;
        for (int64_t r = 0; r < B * T; ++r) {
            const int64_t y = static_cast<int64_t>(b.target_out[r]);
            if (y == kPad) continue;
            const real* x = logits.data() + r * V;
            double max = x[0], z = 0, all = 0;
            for (int64_t c = 1; c < V; ++c) max = std::max(max, double(x[c]));
            for (int64_t c = 0; c < V; ++c) z += std::exp(x[c] - max);
            for (int64_t c = 0; c < V; ++c) all += x[c] - max - std::log(z);
            total += -(1 - eps) * (x[y] - max - std::log(z)) - eps / double(V) * all;
            ++count;
        }
        CHECK(model.loss(b, eps).item() == doctest::Approx(total / double(count)).epsilon(1e-5));
    }
}

TEST_CASE("seq2seq transformer: greedy decoding is the argmax of teacher forcing on its own output") {
    Generator gen(4);
    TransformerSeq2Seq model(tiny(), gen);
    const auto pairs = toy_pairs();
    train_steps(model, all_pairs(pairs), 10);
    model.eval();
    check_greedy_is_teacher_forcing_argmax(model, pairs);
}

TEST_CASE("seq2seq transformer: beam width 1 equals greedy; padding in a batch changes nothing") {
    Generator gen(5);
    TransformerSeq2Seq model(tiny(), gen);
    const auto pairs = toy_pairs();
    train_steps(model, all_pairs(pairs), 10);
    model.eval();
    const Batch b = all_pairs(pairs);
    const auto batched = greedy_decode(model, b.source, b.source_lengths);
    for (size_t i = 0; i < pairs.size(); ++i) {
        CAPTURE(i);
        const Batch one = make_batch(pairs, {i});
        const Hypothesis alone = greedy_decode(model, one.source, one.source_lengths)[0];
        const Hypothesis beam = beam_decode(model, pairs[i].source, 1);
        CHECK(beam.tokens == alone.tokens);
        CHECK(beam.log_prob == doctest::Approx(alone.log_prob));
        CHECK(batched[i].tokens == alone.tokens);  // the padded sources of the batch are masked
        CHECK(batched[i].log_prob == doctest::Approx(alone.log_prob).epsilon(1e-4));
        REQUIRE(batched[i].attention.size() == alone.attention.size());
        for (size_t t = 0; t < alone.attention.size(); ++t)
            for (size_t j = 0; j < alone.attention[t].size(); ++j)
                CHECK(batched[i].attention[t][j] == doctest::Approx(alone.attention[t][j]).epsilon(1e-4));
        const Hypothesis wide = beam_decode(model, pairs[i].source, 4, 0.0);
        CHECK(wide.log_prob >= beam.log_prob - 1e-4);  // length penalty 0: the raw log p, at least greedy's
        // Its score is the model's log p of its own tokens (and </s>), teacher-forced: the
        // rows beam search kept were fed the tokens of the hypotheses they belong to.
        const Batch forced = make_batch({{pairs[i].source, wide.tokens}}, {0});
        NoGradGuard no_grad;
        const Tensor lp = attn::log_softmax(model.forward(forced).value(), -1);
        const int64_t V = lp.size(2);
        double log_p = 0;
        for (size_t t = 0; t < wide.attention.size(); ++t)
            log_p += lp[static_cast<int64_t>(t) * V + (t < wide.tokens.size() ? wide.tokens[t] : kEos)];
        CHECK(wide.log_prob == doctest::Approx(log_p).epsilon(1e-4));
    }
}

TEST_CASE("seq2seq transformer: a beam wide enough to prune nothing finds the best output of all, by teacher forcing") {
    // (check_beam_finds_best_of_all_outputs: all 3,280 outputs of V = 6.)
    // The Transformer decodes by running its decoder over all the tokens
    // written so far at every step: its step-by-step decoding must score each
    // output as the teacher-forced pass over the whole batch does, where most
    // rows are padded. Weights scaled up for uneven probabilities; seed and
    // scale chosen so that the best output's length depends on the penalty.
    Generator gen(4);
    TransformerConfig config = tiny();
    config.target_vocab = 6;
    TransformerSeq2Seq model(config, gen);
    check_beam_finds_best_of_all_outputs(model, 2);
}

TEST_CASE("seq2seq transformer: the fused paths give the composed values; dropout only while training") {
    Generator gen(6);
    TransformerSeq2Seq model(tiny(), gen);
    const Batch b = all_pairs(toy_pairs());
    Tensor composed_weights, fused_weights;
    const Tensor composed = model.forward(b, &composed_weights).value();
    model.set_fast(true);
    const Tensor fused = model.forward(b, &fused_weights).value();
    CHECK(max_abs_diff(composed, fused) < 1e-4);
    CHECK(max_abs_diff(composed_weights, fused_weights) < 1e-5);
    CHECK(composed_weights.shape() == Shape{b.source.size(0), b.target_in.size(1), b.source.size(1)});

    Generator drop_gen(7);
    TransformerConfig c = tiny();
    c.dropout = 0.3;
    TransformerSeq2Seq dropped(c, drop_gen);
    Generator plain_gen(7);
    TransformerSeq2Seq plain(tiny(), plain_gen);  // the same weights: dropout draws nothing at construction
    dropped.eval();
    CHECK(max_abs_diff(dropped.forward(b).value(), plain.forward(b).value()) == 0);
    dropped.train();
    CHECK(max_abs_diff(dropped.forward(b).value(), plain.forward(b).value()) > 1e-3);
}

TEST_CASE("seq2seq transformer: a tiny model overfits a handful of pairs to zero error") {
    Generator gen(8);
    TransformerConfig c = tiny();
    c.d_model = 16, c.ffn = 32;
    TransformerSeq2Seq model(c, gen);
    Adam opt(model.named_parameters(), AdamOptions{.lr = 0.01});
    const auto pairs = toy_pairs();
    const Batch b = all_pairs(pairs);
    auto all_right = [&] {
        model.eval();
        const auto hyps = greedy_decode(model, b.source, b.source_lengths);
        model.train();
        for (size_t i = 0; i < pairs.size(); ++i)
            if (hyps[i].tokens != pairs[i].target) return false;
        return true;
    };
    int64_t step = 0;
    for (; step < 400 && !(step % 20 == 0 && step > 0 && all_right()); ++step) {
        opt.zero_grad();
        model.loss(b, 0.1).backward();
        clip_grad_norm_(model.parameters(), 5);
        opt.step();
    }
    MESSAGE("steps to zero error: " << step);
    CHECK(all_right());
}

TEST_CASE("seq2seq transformer: a model file names its model; loaded back, it predicts the same") {
    Generator gen(9);
    TransformerSeq2Seq model(tiny(), gen);
    const Batch b = all_pairs(toy_pairs());
    train_steps(model, b, 3);
    model.eval();
    Seq2SeqSetup setup;
    setup.model = "transformer", setup.transformer = model.config();
    std::map<std::string, std::string> metadata;
    save_setup(setup, metadata);
    CHECK(metadata.at("seq2seq.config").rfind("model=transformer ", 0) == 0);
    const attn::testing::TempDir tmp("transformer_roundtrip");
    const std::string path = tmp / "model.safetensors";
    save_model(path, model, metadata);

    const Seq2SeqSetup loaded_setup = load_setup(load_safetensors(path).metadata, path);
    CHECK(loaded_setup.model == "transformer");
    Generator other(99);
    const std::unique_ptr<Translator> loaded = make_model(loaded_setup, other);
    load_model(path, *loaded);
    loaded->eval();
    REQUIRE(dynamic_cast<TransformerSeq2Seq*>(loaded.get()) != nullptr);
    const auto a = greedy_decode(model, b.source, b.source_lengths);
    const auto c = greedy_decode(*loaded, b.source, b.source_lengths);
    for (size_t i = 0; i < a.size(); ++i) {
        CHECK(a[i].tokens == c[i].tokens);
        CHECK(a[i].log_prob == c[i].log_prob);
    }
    // An RNN's file still loads as the RNN.
    Seq2SeqSetup rnn;
    metadata.clear();
    save_setup(rnn, metadata);
    CHECK(load_setup(metadata, "rnn.safetensors").model == "rnn");
}

TEST_CASE("decoding sessions of both models: select() keeps each row's own history") {
    // Duplicate a row, feed the copies different tokens, swap them: each row's next
    // distribution must be the teacher-forced one of its own prefix.
    Generator gen(11);
    TransformerSeq2Seq transformer(tiny(), gen);
    Seq2SeqModel rnn(ModelConfig{.source_vocab = 10, .target_vocab = 9, .embedding = 8, .encoder_hidden = 6,
                                 .decoder_hidden = 10, .attention_dim = 8},
                     gen);
    for (Translator* model : {static_cast<Translator*>(&transformer), static_cast<Translator*>(&rnn)}) {
        CAPTURE(model->describe());
        model->eval();
        const std::vector<int64_t> source = {4, 5, 6, 7};
        const Batch one = make_batch({{source, {}}}, {0});
        NoGradGuard no_grad;
        const auto session = model->start(one.source, one.source_lengths);
        session->step(Tensor::from({real(kBos)}, {1}));
        session->select({0, 0});
        session->step(Tensor::from({4, 5}, {2}));  // rows: <s> 4, <s> 5
        session->select({1, 0});                   // rows: <s> 5, <s> 4
        const NextToken next = session->step(Tensor::from({6, 6}, {2}));
        const std::vector<std::vector<int64_t>> prefixes = {{5, 6}, {4, 6}};
        for (size_t r = 0; r < 2; ++r) {
            CAPTURE(r);
            const Batch forced = make_batch({{source, prefixes[r]}}, {0});  // <s> a 6 → predicts after 6 at t = 2
            const Tensor lp = attn::log_softmax(model->forward(forced).value(), -1);
            const int64_t V = lp.size(2);
            for (int64_t c = 0; c < V; ++c)
                CHECK(next.log_probs[static_cast<int64_t>(r) * V + c] == doctest::Approx(lp[2 * V + c]).epsilon(1e-4));
        }

        // Two sources (the second padded): after select({1, 0, 0}) each row reads its
        // own source's encoding, whatever order the rows came in.
        const std::vector<std::vector<int64_t>> sources = {{4, 5, 6, 7}, {7, 3}};
        const Batch two = make_batch({{sources[0], {}}, {sources[1], {}}}, {0, 1});
        const auto both = model->start(two.source, two.source_lengths);
        both->step(Tensor::from({real(kBos), real(kBos)}, {2}));
        both->select({1, 0, 0});
        const NextToken after = both->step(Tensor::from({4, 5, 6}, {3}));
        const std::vector<std::pair<size_t, int64_t>> rows = {{1, 4}, {0, 5}, {0, 6}};  // (source, token fed)
        for (size_t r = 0; r < rows.size(); ++r) {
            CAPTURE(r);
            const Batch forced = make_batch({{sources[rows[r].first], {rows[r].second}}}, {0});  // <s> a → after a
            const Tensor lp = attn::log_softmax(model->forward(forced).value(), -1);
            const int64_t V = lp.size(2);
            for (int64_t c = 0; c < V; ++c)
                CHECK(after.log_probs[static_cast<int64_t>(r) * V + c] == doctest::Approx(lp[1 * V + c]).epsilon(1e-4));
        }
    }
}
