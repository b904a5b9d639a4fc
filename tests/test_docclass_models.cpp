// docclass models: HAN written out from its equations, W3's parameter count, masks (padded words and sentences
// get zero attention and change nothing), and a tiny HAN that learns the
// key-sentence task.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "autograd/ops.hpp"
#include "examples/docclass/docclass_models.hpp"
#include "nn/optim.hpp"
#include "tensor/ops.hpp"
#include "tests/helpers.hpp"

using namespace attn;

namespace {

DocModelConfig tiny_config(int64_t vocab, int64_t classes) {
    return {.vocab_size = vocab, .embed_dim = 8, .word_hidden = 4, .word_attention = 6, .sentence_hidden = 5,
            .sentence_attention = 7, .num_classes = classes};
}

std::vector<Document> ragged_docs() {
    std::vector<Document> docs(3);
    docs[0] = {0, {{"a", "b", "c", "d", "e"}, {"f", "g"}, {"a", "c", "e"}}, 0};
    docs[1] = {1, {{"b"}}, 0};
    docs[2] = {2, {{"c", "d"}, {"e", "f", "g", "a"}}, 1};
    return docs;
}

// ---- HAN written out from Yang et al. (2016), §2, in plain loops over doubles ----------

using attn::testing::affine, attn::testing::parameter_values, attn::testing::row_of, attn::testing::sigma, attn::testing::Vec;

// One direction of a GRU over xs (PyTorch's gate order r, z, n), h₀ = 0:
//   r = σ(W_ir x + b_ir + W_hr h + b_hr),  z = σ(W_iz x + b_iz + W_hz h + b_hz),
//   n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)),  h' = (1 − z) ⊙ n + z ⊙ h.
std::vector<Vec> gru_direction(const Module& m, const std::string& rnn, const std::string& suffix,
                               const std::vector<Vec>& xs, bool reverse) {
    const Vec Wi = parameter_values(m, rnn + ".weight_ih_l0" + suffix), Wh = parameter_values(m, rnn + ".weight_hh_l0" + suffix);
    const Vec bi = parameter_values(m, rnn + ".bias_ih_l0" + suffix), bh = parameter_values(m, rnn + ".bias_hh_l0" + suffix);
    const size_t H = bh.size() / 3;
    std::vector<Vec> out(xs.size());
    Vec h(H, 0);
    for (size_t k = 0; k < xs.size(); ++k) {
        const size_t t = reverse ? xs.size() - 1 - k : k;
        const Vec gi = affine(Wi, bi, xs[t]), gh = affine(Wh, bh, h);  // the gates r, z, n: rows [0, H), [H, 2H), [2H, 3H)
        Vec next(H);
        for (size_t j = 0; j < H; ++j) {
            const double r = sigma(gi[j] + gh[j]), z = sigma(gi[H + j] + gh[H + j]);
            const double n = std::tanh(gi[2 * H + j] + r * gh[2 * H + j]);
            next[j] = (1 - z) * n + z * h[j];
        }
        h = next;
        out[t] = h;
    }
    return out;
}

// The bi-GRU's states [→h_t; ←h_t] over a sequence of its own length (no padding).
std::vector<Vec> bi_gru(const Module& m, const std::string& rnn, const std::vector<Vec>& xs) {
    const std::vector<Vec> f = gru_direction(m, rnn, "", xs, false), b = gru_direction(m, rnn, "_reverse", xs, true);
    std::vector<Vec> h(xs.size());
    for (size_t t = 0; t < xs.size(); ++t) {
        h[t] = f[t];
        h[t].insert(h[t].end(), b[t].begin(), b[t].end());
    }
    return h;
}

// u_t = tanh(W h_t + b), α_t = exp(u_tᵀ u_w) / Σ_k exp(u_kᵀ u_w), out = Σ_t α_t h_t.
std::pair<Vec, Vec> attend(const Module& m, const std::string& level, const std::vector<Vec>& hs) {
    const Vec W = parameter_values(m, "attention." + level + ".W"), b = parameter_values(m, "attention." + level + ".b"),
              uw = parameter_values(m, "attention." + level + ".w");
    Vec alpha;
    for (const Vec& h : hs) {
        const Vec u = affine(W, b, h);
        double e = 0;
        for (size_t j = 0; j < u.size(); ++j) e += std::tanh(u[j]) * uw[j];
        alpha.push_back(e);
    }
    const double top = *std::max_element(alpha.begin(), alpha.end());
    double z = 0;
    for (double& e : alpha) z += (e = std::exp(e - top));
    Vec out(hs[0].size(), 0);
    for (size_t t = 0; t < hs.size(); ++t) {
        alpha[t] /= z;
        for (size_t j = 0; j < out.size(); ++j) out[j] += alpha[t] * hs[t][j];
    }
    return {out, alpha};
}

}  // namespace

TEST_CASE("docclass HAN: forward is Yang et al.'s model written out from its equations") {
    // Word encoder: x_it = W_e w_it, h_it = bi-GRU(x_i·)_t over sentence i's own words.
    // Word attention: s_i = Σ_t α_it h_it. Sentence encoder: h_i = bi-GRU(s_·)_i over the
    // document's own sentences. Sentence attention: v = Σ_i α_i h_i. Logits: W_c v + b_c.
    // Every weight is drawn afresh from N(0, 0.6²), so that a transposed matrix,
    // a swapped gate or a dropped bias changes the answer.
    const std::vector<Document> docs = ragged_docs();
    const Vocabulary vocab = Vocabulary::build(docs, 1);
    const DocBatch batch = make_doc_batch(docs, {0, 1, 2}, vocab, 8, 8);  // 3×3×5, docs 1 and 2 padded
    Generator gen(21);
    HierarchicalAttentionNetwork model(tiny_config(vocab.size(), 3), gen);
    for (auto& [name, p] : model.named_parameters()) {
        Tensor w = p.value();
        for (int64_t i = 0; i < w.numel(); ++i) w[i] = static_cast<real>(gen.normal(0, 0.6));
    }
    DocOutput out;
    {
        NoGradGuard no_grad;
        out = model.forward(batch);
    }
    const Vec E = parameter_values(model, "embedding.weight"), Wc = parameter_values(model, "classifier.weight"),
              bc = parameter_values(model, "classifier.bias");
    const int64_t S = batch.ids.size(1), W = batch.ids.size(2);
    for (int64_t b = 0; b < 3; ++b) {
        CAPTURE(b);
        const Document& d = docs[static_cast<size_t>(b)];
        std::vector<Vec> sentences;
        for (size_t i = 0; i < d.sentences.size(); ++i) {
            std::vector<Vec> xs;
            for (const std::string& word : d.sentences[i]) xs.push_back(row_of(E, static_cast<size_t>(model.embedding.embedding_dim()), static_cast<size_t>(vocab.id(word))));
            const auto [s_i, alpha] = attend(model, "word", bi_gru(model, "word_rnn", xs));
            sentences.push_back(s_i);
            for (size_t t = 0; t < alpha.size(); ++t)
                CHECK(out.word_weights[(b * S + static_cast<int64_t>(i)) * W + static_cast<int64_t>(t)] ==
                      doctest::Approx(alpha[t]).epsilon(1e-4));
        }
        const auto [v, beta] = attend(model, "sentence", bi_gru(model, "sentence_rnn", sentences));
        for (size_t i = 0; i < beta.size(); ++i)
            CHECK(out.sentence_weights[b * S + static_cast<int64_t>(i)] == doctest::Approx(beta[i]).epsilon(1e-4));
        const Vec logits = affine(Wc, bc, v);
        for (int64_t c = 0; c < 3; ++c)
            CHECK(out.logits.value()[b * 3 + c] == doctest::Approx(logits[static_cast<size_t>(c)]).epsilon(1e-4));
    }
}

TEST_CASE("docclass HAN: W3's sizes give 4,142,610 parameters") {
    Generator gen(1);
    HierarchicalAttentionNetwork han(DocModelConfig{}, gen);
    CHECK(han.num_parameters() == 4142610);
    const auto named = han.named_parameters();
    CHECK(named.front().first == "embedding.weight");
    CHECK(std::any_of(named.begin(), named.end(), [](const auto& p) { return p.first == "attention.word.w"; }));
    // The tensor interface (what bench/w3_han uses) checks its shapes.
    CHECK_THROWS_WITH_AS(han.forward(Tensor::zeros({2, 3, 4}), Tensor::ones({2, 3, 4}), Tensor::ones({2, 4})),
                         doctest::Contains("must be B×S×W, B×S×W and B×S"), std::invalid_argument);
}

TEST_CASE("docclass models: set_fast puts every GRU in sequence mode and the classifier on matmul_bias") {
    Generator gen(3);
    HierarchicalAttentionNetwork han(tiny_config(20, 3), gen);
    FlatAttentionNetwork flat(tiny_config(20, 3), gen);
    const auto check = [&](bool on) {
        const RnnMode mode = on ? RnnMode::sequence : RnnMode::stepwise;
        CHECK((han.word_rnn.mode == mode && han.sentence_rnn.mode == mode && flat.rnn.mode == mode));
        CHECK((han.classifier.fused == on && flat.classifier.fused == on));
    };
    check(false);  // readable by default
    han.set_fast(true);
    flat.set_fast(true);
    check(true);
    han.set_fast(false);
    flat.set_fast(false);
    check(false);
}

TEST_CASE("docclass models: padded words and sentences get zero attention and change nothing") {
    const std::vector<Document> docs = ragged_docs();
    const Vocabulary vocab = Vocabulary::build(docs, 1);
    const DocBatch all = make_doc_batch(docs, {0, 1, 2}, vocab, 8, 8);  // 3×3×5, docs 1 and 2 padded
    for (const std::string name : {"han", "hn-ave", "hn-max", "flat", "bow"}) {
        CAPTURE(name);
        Generator gen(7);
        auto model = make_doc_model(name, tiny_config(vocab.size(), 3), gen);
        NoGradGuard no_grad;
        const DocOutput out = model->forward(all);
        CHECK(out.logits.shape() == Shape{3, 3});
        // Each document alone (no padding beyond its own) gives the same logits.
        for (int64_t d = 0; d < 3; ++d) {
            const DocOutput one = model->forward(make_doc_batch(docs, {d}, vocab, 8, 8));
            for (int64_t c = 0; c < 3; ++c) CHECK(one.logits.value()[c] == doctest::Approx(out.logits.value()[d * 3 + c]).epsilon(1e-4));
        }
        if (!out.sentence_weights.defined()) continue;
        const int64_t S = all.ids.size(1), W = all.ids.size(2);
        for (int64_t b = 0; b < 3; ++b) {
            double sentence_total = 0;
            for (int64_t s = 0; s < S; ++s) {
                const real sw = out.sentence_weights[b * S + s];
                if (all.sentence_mask[b * S + s] == 0) CHECK(sw == 0);
                sentence_total += sw;
                double word_total = 0;
                for (int64_t w = 0; w < W; ++w) {
                    const real ww = out.word_weights[(b * S + s) * W + w];
                    if (all.word_mask[(b * S + s) * W + w] == 0) CHECK(ww == 0);
                    CHECK(std::isfinite(ww));
                    word_total += ww;
                }
                CHECK(word_total == doctest::Approx(all.sentence_mask[b * S + s]));  // 1, or 0 for a padded sentence
            }
            CHECK(sentence_total == doctest::Approx(1));
        }
    }
    Generator gen(1);
    CHECK_THROWS_WITH_AS(make_doc_model("cnn", tiny_config(10, 2), gen), doctest::Contains("han, hn-ave"),
                         std::invalid_argument);
}

TEST_CASE("docclass HAN: a tiny model learns the key-sentence task and attends to the key sentence") {
    NeedleOptions o;
    o.num_classes = 3;
    o.train = 240;
    o.valid = 0;
    o.test = 60;
    o.min_sentences = 2;
    o.max_sentences = 3;
    o.min_words = 4;
    o.max_words = 5;
    o.distractor_topic_rate = 0.5;
    const Corpus corpus = make_needle_corpus(o);
    const Vocabulary vocab = Vocabulary::build(corpus.train, 1);
    Generator gen(3);
    DocModelConfig config{.vocab_size = vocab.size(), .embed_dim = 12, .word_hidden = 8, .word_attention = 12,
                          .sentence_hidden = 8, .sentence_attention = 12, .num_classes = 3};
    HierarchicalAttentionNetwork han(config, gen);
    Adam adam(han.named_parameters(), {.lr = 0.02});
    for (int epoch = 0; epoch < 12; ++epoch) {
        for (int64_t start = 0; start < o.train; start += 24) {
            std::vector<int64_t> idx(24);
            std::iota(idx.begin(), idx.end(), start);
            const DocBatch batch = make_doc_batch(corpus.train, idx, vocab, 8, 16);
            Var loss = cross_entropy(han.forward(batch).logits, batch.labels);
            adam.zero_grad();
            loss.backward();
            adam.step();
        }
    }
    NoGradGuard no_grad;
    std::vector<int64_t> idx(static_cast<size_t>(o.test));
    std::iota(idx.begin(), idx.end(), 0);
    const DocBatch test = make_doc_batch(corpus.test, idx, vocab, 8, 16);
    const DocOutput out = han.forward(test);
    const Tensor pred = argmax(out.logits.value(), 1);
    const int64_t S = test.ids.size(1);
    int right = 0, key = 0;
    for (int64_t b = 0; b < o.test; ++b) {
        right += pred[b] == test.labels[b] ? 1 : 0;
        int64_t best = 0;
        for (int64_t s = 1; s < S; ++s)
            if (out.sentence_weights[b * S + s] > out.sentence_weights[b * S + best]) best = s;
        key += best == test.key_sentence[static_cast<size_t>(b)] ? 1 : 0;
    }
    MESSAGE("tiny HAN: accuracy " << right << "/" << o.test << ", key sentence " << key << "/" << o.test);
    CHECK(right >= 0.85 * static_cast<double>(o.test));
    CHECK(key >= 0.8 * static_cast<double>(o.test));
}
