// The seq2seq example's model: the W2 parameter count, every attention
// variant runs, beam width 1 equals greedy, a tiny model overfits, and a
// checkpoint round trip reproduces the predictions exactly.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>

#include "attention/by_id.hpp"
#include "autograd/ops.hpp"
#include "examples/seq2seq/decoding.hpp"
#include "examples/seq2seq/report.hpp"
#include "examples/seq2seq/seq2seq_model.hpp"
#include "io/checkpoint.hpp"
#include "nn/optim.hpp"
#include "tests/helpers.hpp"
#include "tests/seq2seq_toy.hpp"

using namespace attn;
using namespace attn::seq2seq;
using attn::testing::check_beam_finds_best_of_all_outputs;
using attn::testing::toy_pairs;

namespace {

ModelConfig tiny(const std::string& attention = "additive", const std::string& align = "global") {
    return ModelConfig{.source_vocab = 10, .target_vocab = 9, .embedding = 8, .encoder_hidden = 12,
                       .decoder_hidden = 20, .attention_dim = 16, .attention = attention, .align = align,
                       .input_feeding = true, .window = 2};
}

std::vector<std::vector<int64_t>> greedy_tokens(Seq2SeqModel& model, const Batch& b) {
    std::vector<std::vector<int64_t>> out;
    for (const auto& h : greedy_decode(model, b.source, b.source_lengths)) out.push_back(h.tokens);
    return out;
}

}  // namespace

TEST_CASE("seq2seq model: the default sizes are workload W2, 819,760 parameters") {
    Generator gen(1);
    Seq2SeqModel model(ModelConfig{}, gen);
    CHECK(model.num_parameters() == 819760);
}

TEST_CASE("seq2seq model: every score and alignment trains one step to a finite loss") {
    const std::vector<std::pair<std::string, std::string>> variants = {
        {"additive", "global"}, {"dot", "global"},   {"general", "global"}, {"concat", "global"},
        {"scaled", "global"},   {"general", "local-m"}, {"concat", "local-p"}};
    const Batch b = make_batch(toy_pairs(), {0, 1, 2, 3, 4, 5});
    for (const auto& variant : variants) {
        const std::string attention = variant.first, align = variant.second;
        CAPTURE(attention);
        CAPTURE(align);
        Generator gen(2);
        ModelConfig c = tiny(attention, align);
        if (attention == "dot" || attention == "scaled") c.decoder_hidden = 2 * c.encoder_hidden;
        Seq2SeqModel model(c, gen);
        Var loss = model.loss(b);
        CHECK(std::isfinite(loss.item()));
    }
}

TEST_CASE("seq2seq model: set_fast switches the encoder, the decoder cell and the linear layers, and back") {
    Generator g(6);
    Seq2SeqModel m(tiny(), g);
    const auto check = [&](bool on) {
        CHECK(m.encoder.mode == (on ? RnnMode::sequence : RnnMode::stepwise));
        CHECK((m.decoder.fused == on && m.init.fused == on && m.output.fused == on));
    };
    check(false);  // readable by default
    m.set_fast(true);
    check(true);
    m.set_fast(false);
    check(false);
}

TEST_CASE("seq2seq model: the fast paths give the composed model's values and gradients") {
    // set_fast(true): the encoder's GRU in RnnMode::sequence, the decoder's
    // fused gates and additive_score_fused. Two encoder layers and a padded batch
    // (source lengths 1 to 5), so the reverse direction's start at each
    // sequence's own end and the zero rows past it are both compared.
    const Batch b = make_batch(toy_pairs(), {0, 1, 2, 3, 4, 5});
    ModelConfig c = tiny();
    c.encoder_layers = 2;
    Generator g1(6), g2(6);
    Seq2SeqModel composed(c, g1), fused(c, g2);
    fused.set_fast(true);
    Tensor wa, wb;
    const Var la = composed.forward(b, &wa), lb = fused.forward(b, &wb);
    REQUIRE(la.shape() == lb.shape());
    for (int64_t i = 0; i < la.numel(); ++i) CHECK(lb.value()[i] == doctest::Approx(la.value()[i]).epsilon(1e-4));
    for (int64_t i = 0; i < wa.numel(); ++i) CHECK(wb[i] == doctest::Approx(wa[i]).epsilon(1e-4));
    Generator noise(3);  // a loss that weighs every logit differently, so each gradient is specific
    Tensor weights = Tensor::empty(la.shape());
    for (int64_t i = 0; i < weights.numel(); ++i) weights[i] = static_cast<real>(noise.normal());
    sum(la * Var(weights)).backward();
    sum(lb * Var(weights)).backward();
    attn::testing::check_same_gradients(composed, fused);
}

// The decoder written out from the papers' equations, one step at a time,
// with the model's own encoder, GRU cell and embeddings (each tested against
// its reference elsewhere) and everything between them in plain loops:
//   s_0 = tanh(W_init [h→; h←] + b),  s_t = GRUCell([emb(y_{t−1}); f_{t−1}], s_{t−1}),  f_0 = 0
//   Bahdanau: e_j = wᵀ tanh(W_1 s_t + W_2 h̄_j), α = softmax over the real j,
//             c_t = Σ_j α_j h̄_j, o_t = [s_t; c_t], f_t = c_t
//   Luong (dot): e_j = s_t · h̄_j, α, c_t as above, h̃_t = tanh(W_c [c_t; s_t]), o_t = f_t = h̃_t
//   logits_t = W_out o_t + b_out
// Every step's logits must match teacher forcing; from step 1 on they depend
// on the fed-back f_{t−1}, so a feed that stays zero is caught.
TEST_CASE("seq2seq model: the RNN decoder is its equations written out step by step, input feeding included") {
    const Batch b = attn::testing::all_pairs(toy_pairs());
    for (const bool bahdanau : {true, false}) {
        CAPTURE(bahdanau);
        ModelConfig config = tiny();
        if (!bahdanau) config.attention = "luong", config.score = "dot_score", config.decoder_hidden = 24;
        Generator gen(41);
        Seq2SeqModel model(config, gen);
        std::map<std::string, Tensor> p;
        for (const auto& [name, v] : model.named_parameters()) p[name] = v.value();
        const Tensor logits = model.forward(b).value();  // B×T×V
        const int64_t B = b.source.size(0), n = b.source.size(1), T = b.target_in.size(1);
        const int64_t S = config.decoder_hidden, D = 2 * config.encoder_hidden, E = config.embedding;
        const int64_t V = config.target_vocab;
        const Encoded enc = model.encode(b.source, b.source_lengths);
        const Tensor h = enc.states.value();  // B×n×D
        Var s = tanh(model.init(enc.summary));
        const int64_t F = bahdanau ? D : S;
        std::vector<double> feed(static_cast<size_t>(B * F), 0.0);
        double worst = 0, worst_later = 0;
        for (int64_t t = 0; t < T; ++t) {
            // x_t = [emb(y_{t−1}); f_{t−1}]
            Tensor x = Tensor::empty(Shape{B, E + F});
            const Tensor emb = p.at("target_embedding.weight");
            for (int64_t r = 0; r < B; ++r) {
                const int64_t y = static_cast<int64_t>(b.target_in[r * T + t]);
                for (int64_t k = 0; k < E; ++k) x[r * (E + F) + k] = emb[y * E + k];
                for (int64_t k = 0; k < F; ++k) x[r * (E + F) + E + k] = static_cast<real>(feed[static_cast<size_t>(r * F + k)]);
            }
            s = model.decoder(Var(x), s);
            const Tensor st = s.value();  // B×S
            for (int64_t r = 0; r < B; ++r) {
                std::vector<double> e(static_cast<size_t>(n), 0.0), c(static_cast<size_t>(D), 0.0);
                for (int64_t j = 0; j < n; ++j) {
                    if (j >= b.source_lengths[static_cast<size_t>(r)]) continue;
                    if (bahdanau) {
                        const Tensor &W1 = p.at("attention.score.W_1"), &W2 = p.at("attention.score.W_2");
                        const Tensor& w = p.at("attention.score.w");  // Bahdanau's score has no bias
                        REQUIRE(p.count("attention.score.b") == 0);
                        const int64_t A = W1.size(0);
                        for (int64_t a = 0; a < A; ++a) {
                            double z = 0;
                            for (int64_t k = 0; k < S; ++k) z += double(W1[a * S + k]) * st[r * S + k];
                            for (int64_t k = 0; k < D; ++k) z += double(W2[a * D + k]) * h[(r * n + j) * D + k];
                            e[static_cast<size_t>(j)] += w[a] * std::tanh(z);
                        }
                    } else {
                        for (int64_t k = 0; k < D; ++k) e[static_cast<size_t>(j)] += double(st[r * S + k]) * h[(r * n + j) * D + k];
                    }
                }
                const int64_t len = b.source_lengths[static_cast<size_t>(r)];
                double top = -1e300, z = 0;
                for (int64_t j = 0; j < len; ++j) top = std::max(top, e[static_cast<size_t>(j)]);
                for (int64_t j = 0; j < len; ++j) z += std::exp(e[static_cast<size_t>(j)] - top);
                for (int64_t j = 0; j < len; ++j)
                    for (int64_t k = 0; k < D; ++k)
                        c[static_cast<size_t>(k)] += std::exp(e[static_cast<size_t>(j)] - top) / z * h[(r * n + j) * D + k];
                // o_t and f_t
                std::vector<double> o;
                if (bahdanau) {
                    for (int64_t k = 0; k < S; ++k) o.push_back(st[r * S + k]);
                    for (int64_t k = 0; k < D; ++k) o.push_back(c[static_cast<size_t>(k)]);
                    for (int64_t k = 0; k < D; ++k) feed[static_cast<size_t>(r * F + k)] = c[static_cast<size_t>(k)];
                } else {
                    const Tensor& Wc = p.at("attention.W_c");  // S×(D + S), over [c; s]
                    for (int64_t i = 0; i < S; ++i) {
                        double z2 = 0;
                        for (int64_t k = 0; k < D; ++k) z2 += double(Wc[i * (D + S) + k]) * c[static_cast<size_t>(k)];
                        for (int64_t k = 0; k < S; ++k) z2 += double(Wc[i * (D + S) + D + k]) * st[r * S + k];
                        o.push_back(std::tanh(z2));
                        feed[static_cast<size_t>(r * F + i)] = std::tanh(z2);
                    }
                }
                const Tensor &Wo = p.at("output.weight"), &bo = p.at("output.bias");
                const int64_t O = static_cast<int64_t>(o.size());
                for (int64_t v = 0; v < V; ++v) {
                    double z3 = bo[v];
                    for (int64_t k = 0; k < O; ++k) z3 += double(Wo[v * O + k]) * o[static_cast<size_t>(k)];
                    const double diff = std::abs(z3 - double(logits[(r * T + t) * V + v]));
                    worst = std::max(worst, diff);
                    if (t > 0) worst_later = std::max(worst_later, diff);
                }
            }
        }
        CHECK(worst < 1e-4);
        CHECK(worst_later < 1e-4);
    }
}

TEST_CASE("seq2seq model: --score and --align take every row of the table, or refuse it by name") {
    // The trainer reads the same table as the mechanisms and the tests
    // (attention/by_id.hpp): a score or alignment added there is accepted here.
    const Batch b = make_batch(toy_pairs(), {0, 1, 2});
    auto one_step = [&](ModelConfig c) {
        Generator gen(3);
        Seq2SeqModel model(c, gen);
        CHECK(std::isfinite(model.loss(b).item()));
    };
    for (const ScoreInfo& row : score_table()) {
        CAPTURE(row.name);
        ModelConfig c = tiny("luong");
        c.score = row.name;
        if (row.same_width) c.decoder_hidden = 2 * c.encoder_hidden;
        if (row.id == "location_score") {  // needs a maximum length, which a translation model does not have
            CHECK_THROWS_WITH_AS(one_step(c), doctest::Contains("location_score"), std::invalid_argument);
            continue;
        }
        one_step(c);
    }
    for (const AlignmentInfo& row : alignment_table()) {
        CAPTURE(row.name);
        ModelConfig c = tiny("luong");
        c.score = "general";
        c.align = row.name;
        if (row.self_attention_only) {
            CHECK_THROWS_WITH_AS(one_step(c), doctest::Contains(row.id.c_str()), std::invalid_argument);
            continue;
        }
        one_step(c);
    }
    ModelConfig c = tiny("luong");
    c.score = "dott";
    CHECK_THROWS_WITH_AS(one_step(c), doctest::Contains("unknown score 'dott'; choose one of: additive_score"),
                         std::invalid_argument);
    c = tiny("bahdanau");
    c.score = "dot";
    CHECK_THROWS_WITH_AS(one_step(c), doctest::Contains("use --attention luong"), std::invalid_argument);
}

TEST_CASE("seq2seq model: the configuration string round-trips, and the older names still load") {
    ModelConfig c = tiny("luong");
    c.score = "distance";
    c.align = "local-m";
    const ModelConfig back = ModelConfig::parse(c.canonical().str());
    CHECK(back.attention == "luong");
    CHECK(back.score == "distance");  // the short name keeps its row: the id would pick the cosine
    CHECK(back.align == "local_monotonic_alignment");
    const ModelConfig old = ModelConfig::parse("attention=concat align=global window=3");
    CHECK(old.attention == "luong");
    CHECK(old.score == "concat");
    CHECK(old.align == "soft_alignment");
    CHECK(ModelConfig::parse("attention=additive").attention == "bahdanau");

    // A corrupted checkpoint header said only "stoll", "stod" or "vector::reserve".
    CHECK_THROWS_WITH_AS(ModelConfig::parse("embedding=x1"),
                         "seq2seq config: embedding=x1 is not a size (a whole number in [0, 1048576])",
                         std::runtime_error);
    CHECK_THROWS_WITH_AS(ModelConfig::parse("source_vocab=999999999999999999"), doctest::Contains("is not a size"),
                         std::runtime_error);
    CHECK_THROWS_WITH_AS(ModelConfig::parse("window=-3"), doctest::Contains("window=-3 is not a size"),
                         std::runtime_error);
    CHECK_THROWS_WITH_AS(ModelConfig::parse("dropout=abc"),
                         "seq2seq config: dropout=abc is not a probability in [0, 1)", std::runtime_error);
}

TEST_CASE("seq2seq decoding: beam search of width 1 equals greedy decoding") {
    for (const std::string attention : {"additive", "general"}) {
        Generator gen(4);
        Seq2SeqModel model(tiny(attention), gen);
        const auto pairs = toy_pairs();
        std::vector<size_t> all(pairs.size());
        for (size_t i = 0; i < all.size(); ++i) all[i] = i;
        const Batch b = make_batch(pairs, all);
        const auto greedy = greedy_decode(model, b.source, b.source_lengths);
        for (size_t i = 0; i < pairs.size(); ++i) {
            // a batch pads the shorter sources: decode each one alone, as beam search does
            const Batch one = make_batch(pairs, {i});
            const Hypothesis g = greedy_decode(model, one.source, one.source_lengths)[0];
            const Hypothesis h = beam_decode(model, pairs[i].source, 1);
            CHECK(h.tokens == g.tokens);
            CHECK(h.log_prob == doctest::Approx(g.log_prob));
            CHECK(g.tokens == greedy[i].tokens);  // padding changes nothing
        }
        const Hypothesis wide = beam_decode(model, pairs[0].source, 4);
        const size_t limit = static_cast<size_t>(decode_limit(static_cast<int64_t>(pairs[0].source.size())));
        CHECK(wide.tokens.size() <= limit);
        CHECK(wide.attention.size() == wide.tokens.size() + (wide.tokens.size() < limit ? 1 : 0));
    }
}

TEST_CASE("seq2seq decoding: a beam wide enough to prune nothing finds the best output of all, by teacher forcing") {
    // (check_beam_finds_best_of_all_outputs: all 3,280 outputs of V = 6.)
    // Weights scaled up for uneven probabilities; seed and scale chosen so
    // that the best output is a short one for some length penalties and a
    // long one for others.
    Generator gen(3);
    ModelConfig config = tiny("additive");
    config.target_vocab = 6;
    Seq2SeqModel model(config, gen);
    check_beam_finds_best_of_all_outputs(model, 3);
}

TEST_CASE("seq2seq decoding: <pad> and <s> are never written, however likely") {
    // A model whose every step gives <pad> and <s> the most probability:
    // greedy and beam search write the most likely of the other ids.
    Generator gen(4);
    ModelConfig config = tiny("additive");
    config.target_vocab = 6;
    Seq2SeqModel model(config, gen);
    model.eval();
    Tensor bias = model.output.bias.value();
    bias[kPad] = 50, bias[kBos] = 40, bias[4] = 20;  // then 4, every step: never </s>
    const Batch b = make_batch({{{5, 6}, {}}}, {0});
    const Hypothesis g = greedy_decode(model, b.source, b.source_lengths)[0];
    CHECK(g.tokens == std::vector<int64_t>(static_cast<size_t>(decode_limit(2)), 4));
    CHECK(beam_decode(model, {5, 6}, 3).tokens == g.tokens);
}

TEST_CASE("seq2seq decoding: each row of a batch stops at its own length's limit") {
    // An untrained model rarely says </s>, so rows run to their limits: a
    // 1-symbol source must stop after decode_limit(1) = 7 symbols even when
    // the batch's longest source allows many more.
    Generator gen(5);
    Seq2SeqModel model(tiny("additive"), gen);
    std::vector<Pair> pairs = {{{5}, {}}, {std::vector<int64_t>(12, 6), {}}};
    const Batch b = make_batch(pairs, {0, 1});
    const auto hyps = greedy_decode(model, b.source, b.source_lengths);
    for (size_t r = 0; r < 2; ++r) {
        const int64_t limit = decode_limit(b.source_lengths[r]);
        CHECK(static_cast<int64_t>(hyps[r].tokens.size()) <= limit);
        CHECK(static_cast<int64_t>(hyps[r].attention.size()) <= limit);
    }
    CHECK(decode_limit(1) == 7);
}

TEST_CASE("seq2seq training: a tiny model overfits a handful of pairs to zero error") {
    Generator gen(5);
    Seq2SeqModel model(tiny(), gen);
    Adam opt(model.named_parameters(), AdamOptions{.lr = 0.02});
    const auto pairs = toy_pairs();
    const Batch b = make_batch(pairs, {0, 1, 2, 3, 4, 5});
    int64_t step = 0;
    for (; step < 300; ++step) {
        opt.zero_grad();
        Var loss = model.loss(b);
        loss.backward();
        clip_grad_norm_(model.parameters(), 5);
        opt.step();
        if (step % 20 == 19) {
            const auto hyps = greedy_tokens(model, b);
            bool all = true;
            for (size_t i = 0; i < pairs.size(); ++i) all = all && hyps[i] == pairs[i].target;
            if (all) break;
        }
    }
    MESSAGE("steps to zero error: " << step + 1);
    const auto hyps = greedy_tokens(model, b);
    for (size_t i = 0; i < pairs.size(); ++i) CHECK(hyps[i] == pairs[i].target);
}

TEST_CASE("seq2seq checkpoint: a round trip reproduces the predictions exactly") {
    Generator gen(6);
    Seq2SeqModel model(tiny("concat"), gen);
    Adam opt(model.named_parameters());
    const Batch b = make_batch(toy_pairs(), {0, 1, 2, 3, 4, 5});
    for (int i = 0; i < 3; ++i) {  // move away from the initialisation
        opt.zero_grad();
        model.loss(b).backward();
        opt.step();
    }
    const attn::testing::TempDir tmp("seq2seq_roundtrip");
    const std::string path = tmp / "checkpoint.safetensors";
    save_checkpoint(path, model, opt, TrainingState{.step = 3, .epoch = 0, .seed = 6,
                                                    .extra = {{"seq2seq.config", model.config().str()}}});
    Generator other(99);
    Seq2SeqModel loaded(ModelConfig::parse(model.config().str()), other);
    Adam opt2(loaded.named_parameters());
    const TrainingState st = load_checkpoint(path, loaded, opt2);
    CHECK(st.step == 3);
    const auto a = greedy_decode(model, b.source, b.source_lengths);
    const auto c = greedy_decode(loaded, b.source, b.source_lengths);
    for (size_t i = 0; i < a.size(); ++i) {
        CHECK(a[i].tokens == c[i].tokens);
        CHECK(a[i].log_prob == c[i].log_prob);
        CHECK(a[i].attention == c[i].attention);
    }
}

// An untrained model writes <pad> and <s> as well: the picture of its
// alignment labelled rows by decode(), which drops them, so the labels and the
// rows of weights no longer matched (the report's explorer of the untrained
// model drew an item with no row at all).
TEST_CASE("seq2seq alignment picture: one row label per decoding step, special symbols included") {
    const Vocab source({"a", "b"}), target({"x", "y"});
    const int64_t x = target.id("x"), a = source.id("a"), b = source.id("b");
    Hypothesis h;
    h.tokens = {kPad, x, kBos};
    h.attention = {{0.5f, 0.5f}, {1, 0}, {0, 1}, {0.25f, 0.75f}};  // the 4th step wrote </s>
    const AlignmentPicture p = alignment_picture(h, {a, b}, source, target);
    CHECK(p.rows == std::vector<std::string>{"<pad>", "x", "<s>", "</s>"});
    CHECK(p.cols == std::vector<std::string>{"a", "b"});
    REQUIRE(p.weights.shape() == Shape{4, 2});
    CHECK(p.weights.at({3, 1}) == doctest::Approx(0.75));
    h.attention.pop_back();  // ran out of steps: no </s> row
    CHECK(alignment_picture(h, {a, b}, source, target).rows == std::vector<std::string>{"<pad>", "x", "<s>"});
}
