// The seq2seq example's ensemble (--ensemble): its distribution is the mean
// of its members' (by hand, and against the members' own outputs), its
// decoding session agrees with its teacher forcing, an ensemble of one model
// decodes exactly as that model, and model files of another vocabulary are
// refused by name.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "autograd/ops.hpp"
#include "examples/seq2seq/ensemble.hpp"
#include "examples/seq2seq/predict.hpp"
#include "examples/seq2seq/seq2seq_model.hpp"
#include "examples/seq2seq/transformer_model.hpp"
#include "io/checkpoint.hpp"
#include "nn/optim.hpp"
#include "tensor/ops.hpp"
#include "tests/helpers.hpp"
#include "tests/seq2seq_toy.hpp"

using namespace attn;
using attn::testing::error_of;
using namespace attn::seq2seq;
using attn::testing::all_pairs;
using attn::testing::check_greedy_is_teacher_forcing_argmax;
using attn::testing::save_toy_model_file;
using attn::testing::toy_pairs;

namespace {

// A few Adam steps away from the initialisation, so that each model has
// preferences of its own.
void train_steps(Translator& model, const Batch& b, int steps) {
    Adam opt(model.named_parameters(), AdamOptions{.lr = 0.01});
    for (int i = 0; i < steps; ++i) {
        opt.zero_grad();
        model.loss(b).backward();
        opt.step();
    }
}

Ensemble::Member rnn_member(uint64_t seed, const Batch& b, int steps) {
    auto gen = std::make_unique<Generator>(seed);
    auto model = std::make_unique<Seq2SeqModel>(
        ModelConfig{.source_vocab = 10, .target_vocab = 9, .embedding = 8, .encoder_hidden = 12,
                    .decoder_hidden = 20, .attention_dim = 16},
        *gen);
    train_steps(*model, b, steps);
    model->eval();
    return {std::move(gen), std::move(model)};
}

Ensemble::Member transformer_member(uint64_t seed, const Batch& b, int steps) {
    auto gen = std::make_unique<Generator>(seed);
    auto model = std::make_unique<TransformerSeq2Seq>(
        TransformerConfig{.source_vocab = 10, .target_vocab = 9, .d_model = 8, .heads = 2, .layers = 1, .ffn = 12,
                          .dropout = 0},
        *gen);
    train_steps(*model, b, steps);
    model->eval();
    return {std::move(gen), std::move(model)};
}

}  // namespace

TEST_CASE("seq2seq ensemble: the mean of two distributions, by hand") {
    // p1 = (0.5, 0.25, 0.25), p2 = (0.1, 0.6, 0.3): the mean is (0.3, 0.425, 0.275).
    auto logs = [](std::vector<float> p) {
        for (float& v : p) v = std::log(v);
        return Tensor::from(p, Shape{1, 3});
    };
    const Tensor mixed =
        mean_of_distributions({Var(logs({0.5f, 0.25f, 0.25f})), Var(logs({0.1f, 0.6f, 0.3f}))}).value();
    REQUIRE(mixed.shape() == Shape{1, 3});
    const float want[] = {0.3f, 0.425f, 0.275f};
    for (int k = 0; k < 3; ++k) CHECK(std::exp(mixed[k]) == doctest::Approx(want[k]).epsilon(1e-6));
    // One member: its own log-probabilities, unchanged.
    const Tensor one = logs({0.5f, 0.25f, 0.25f});
    CHECK(std::equal(one.data(), one.data() + 3, mean_of_distributions({Var(one)}).value().data()));
}

TEST_CASE("seq2seq ensemble: an RNN and a Transformer teacher-forced together give the mean of their distributions") {
    const Batch b = all_pairs(toy_pairs());
    std::vector<Ensemble::Member> members;
    members.push_back(rnn_member(1, b, 8));
    members.push_back(transformer_member(2, b, 8));
    Translator& rnn = *members[0].model;
    Translator& transformer = *members[1].model;
    NoGradGuard no_grad;
    Tensor w_rnn, w_transformer;
    const Tensor p_rnn = softmax(rnn.forward(b, &w_rnn).value(), -1);
    const Tensor p_transformer = softmax(transformer.forward(b, &w_transformer).value(), -1);
    Ensemble ensemble(std::move(members));
    Tensor w;
    const Tensor p = softmax(ensemble.forward(b, &w).value(), -1);
    REQUIRE(p.shape() == p_rnn.shape());
    REQUIRE(w.shape() == w_rnn.shape());
    int bad = 0;
    for (int64_t i = 0; i < p.numel(); ++i)
        bad += std::abs(p[i] - 0.5f * (p_rnn[i] + p_transformer[i])) > 1e-6f;
    for (int64_t i = 0; i < w.numel(); ++i) bad += std::abs(w[i] - 0.5f * (w_rnn[i] + w_transformer[i])) > 1e-6f;
    CHECK(bad == 0);
    // The two members disagree somewhere (or the mean would prove nothing).
    double apart = 0;
    for (int64_t i = 0; i < p.numel(); ++i) apart = std::max(apart, double(std::abs(p_rnn[i] - p_transformer[i])));
    CHECK(apart > 0.05);
}

TEST_CASE("seq2seq ensemble: greedy decoding is the argmax of the ensemble's teacher forcing on its own output") {
    // The session (step by step, each member with its own state) and forward
    // (whole sequences) must give the same distribution at every step.
    const Batch b = all_pairs(toy_pairs());
    std::vector<Ensemble::Member> members;
    members.push_back(rnn_member(3, b, 6));
    members.push_back(transformer_member(4, b, 6));
    members.push_back(rnn_member(5, b, 6));
    Ensemble ensemble(std::move(members));
    const std::vector<Pair> pairs = toy_pairs();
    check_greedy_is_teacher_forcing_argmax(ensemble, pairs);
    const std::vector<Hypothesis> greedy = greedy_decode(ensemble, b.source, b.source_lengths);
    // Beam search of width 1 is greedy decoding, through the ensemble's select().
    for (size_t i = 0; i < pairs.size(); ++i)
        CHECK(beam_decode(ensemble, pairs[i].source, 1).tokens == greedy[i].tokens);
}

TEST_CASE("seq2seq ensemble: one model's file loaded as an ensemble decodes as the model; other vocabularies are refused") {
    const Batch b = all_pairs(toy_pairs());
    Ensemble::Member m = rnn_member(6, b, 10);
    Translator& model = *m.model;
    const attn::testing::TempDir tmp("seq2seq_ensemble");
    const std::string path = tmp / "model.safetensors";
    const Seq2SeqSetup setup = save_toy_model_file(dynamic_cast<Seq2SeqModel&>(model), path);

    // One model, and the same model twice (the mean of a distribution with
    // itself is that distribution): beam search must follow the model's own,
    // hypothesis by hypothesis, through every member's select().
    Seq2SeqSetup loaded_setup;
    const std::unique_ptr<Translator> loaded = load_models({path}, loaded_setup);
    const std::unique_ptr<Translator> twice = load_models({path, path}, loaded_setup);
    CHECK(loaded_setup.source_vocab.symbols() == setup.source_vocab.symbols());
    for (const Pair& p : toy_pairs()) {
        const Hypothesis want = beam_decode(model, p.source, 3);
        for (Translator* t : {loaded.get(), twice.get()}) {
            const Hypothesis got = beam_decode(*t, p.source, 3);
            CHECK(got.tokens == want.tokens);
            CHECK(got.log_prob == doctest::Approx(want.log_prob).epsilon(1e-5));
        }
    }

    // The same weights with one target symbol renamed: the ids would mean other phonemes.
    Seq2SeqSetup other = setup;
    other.target_vocab = Vocab(std::vector<std::string>{"a", "b", "c", "d", "x"});
    std::map<std::string, std::string> metadata;
    save_setup(other, metadata);
    const std::string other_path = tmp / "other.safetensors";
    save_model(other_path, model, metadata);
    const std::string message = error_of([&] { load_models({path, other_path}, loaded_setup); });
    CHECK(message.find(other_path) != std::string::npos);
    CHECK(message.find(path) != std::string::npos);
    CHECK(message.find("vocabular") != std::string::npos);
    CHECK_THROWS_AS(Ensemble(std::vector<Ensemble::Member>{}), std::invalid_argument);
}
