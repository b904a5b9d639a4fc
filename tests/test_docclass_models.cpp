// docclass models: W3's parameter count, masks (padded words and sentences
// get zero attention and change nothing), and a tiny HAN that learns the
// key-sentence task.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "autograd/ops.hpp"
#include "examples/docclass/docclass_models.hpp"
#include "nn/optim.hpp"
#include "tensor/ops.hpp"

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

}  // namespace

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
