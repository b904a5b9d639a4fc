// The seq2seq example's right-to-left models (--right-to-left) and the
// ensemble of both directions: the direction is saved with the model; a model
// trained on reversed targets writes the last symbol first, yet every decoder
// answers in reading order, with the log-probability teacher forcing gives;
// an ensemble of both directions answers with the proposal whose mean
// log-probability over all members is best (recomputed here from each
// member's teacher forcing, in its own order).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/ops.hpp"
#include "examples/common/explorer.hpp"
#include "examples/seq2seq/decoding.hpp"
#include "examples/seq2seq/ensemble.hpp"
#include "examples/seq2seq/predict.hpp"
#include "examples/seq2seq/report.hpp"
#include "examples/seq2seq/seq2seq_model.hpp"
#include "examples/seq2seq/transformer_model.hpp"
#include "io/checkpoint.hpp"
#include "nn/optim.hpp"
#include "tensor/ops.hpp"
#include "tests/helpers.hpp"
#include "tests/seq2seq_toy.hpp"

using namespace attn;
using namespace attn::seq2seq;
using attn::testing::error_of;
using attn::testing::toy_pairs;

namespace {

ModelConfig tiny(bool right_to_left) {
    return ModelConfig{.source_vocab = 10, .target_vocab = 9, .embedding = 8, .encoder_hidden = 12,
                       .decoder_hidden = 20, .attention_dim = 16, .right_to_left = right_to_left};
}

// The toy pairs as the trainer feeds them to `model`: each target in the
// order the model writes (main.cpp does the same before training).
Batch batch_for(const Translator& model, std::vector<Pair> pairs) {
    std::vector<size_t> index;
    for (Pair& p : pairs) {
        p.target = writing_order(model, std::move(p.target));
        index.push_back(index.size());
    }
    return make_batch(pairs, index);
}

void train(Translator& model, int steps, double lr = 0.02) {
    const Batch b = batch_for(model, toy_pairs());
    Adam opt(model.named_parameters(), AdamOptions{.lr = lr});
    for (int i = 0; i < steps; ++i) {
        opt.zero_grad();
        Var loss = model.loss(b);
        loss.backward();
        clip_grad_norm_(model.parameters(), 5);
        opt.step();
    }
    model.eval();
}

// log p(y | source) under `model`, summed here from one teacher-forced pass
// over y fed in the model's own order (reversed by hand for a right-to-left
// model), </s> included.
double teacher_forced_log_p(Translator& model, const std::vector<int64_t>& source, std::vector<int64_t> y) {
    if (model.right_to_left()) std::reverse(y.begin(), y.end());
    const Batch one = make_batch({{source, y}}, {0});
    NoGradGuard no_grad;
    const Tensor lp = log_softmax(model.forward(one).value(), -1);  // 1×T×V
    const int64_t V = lp.size(2);
    double sum = 0;
    for (size_t t = 0; t <= y.size(); ++t)
        sum += lp[static_cast<int64_t>(t) * V + (t < y.size() ? y[t] : kEos)];
    return sum;
}

}  // namespace

TEST_CASE("seq2seq right-to-left: the direction is part of the configuration, and reads back") {
    CHECK(tiny(false).str().find("output=") == std::string::npos);  // a left-to-right model reads as before
    const std::string text = tiny(true).str();
    CHECK(text.find(" output=right-to-left") != std::string::npos);
    CHECK(ModelConfig::parse(text).right_to_left);
    CHECK_FALSE(ModelConfig::parse(tiny(false).str()).right_to_left);
    TransformerConfig t{.source_vocab = 10, .target_vocab = 9, .d_model = 8, .heads = 2, .layers = 1, .ffn = 12};
    CHECK(t.str().find("right-to-left") == std::string::npos);
    t.right_to_left = true;
    CHECK(TransformerConfig::parse(t.str()).right_to_left);
    const std::string message = error_of([&] { ModelConfig::parse(tiny(false).str() + " output=upwards"); });
    CHECK(message.find("output=upwards") != std::string::npos);
    CHECK(message.find("right-to-left") != std::string::npos);
}

TEST_CASE("seq2seq right-to-left: trained on reversed targets, it writes the last symbol first and answers in "
          "reading order") {
    for (const bool transformer : {false, true}) {
        CAPTURE(transformer);
        Generator gen(7);
        std::unique_ptr<Translator> model;
        if (transformer)
            model = std::make_unique<TransformerSeq2Seq>(
                TransformerConfig{.source_vocab = 10, .target_vocab = 9, .d_model = 16, .heads = 2, .layers = 1,
                                  .ffn = 32, .dropout = 0, .right_to_left = true},
                gen);
        else
            model = std::make_unique<Seq2SeqModel>(tiny(true), gen);
        REQUIRE(model->right_to_left());
        train(*model, 300, transformer ? 0.01 : 0.02);
        const std::vector<Pair> pairs = toy_pairs();
        const Batch b = make_batch(pairs, {0, 1, 2, 3, 4, 5});
        const std::vector<Hypothesis> greedy = greedy_decode(*model, b.source, b.source_lengths);
        const std::unique_ptr<DecodingSession> session = model->start(b.source, b.source_lengths);
        const Tensor first = session->step(Tensor::full(Shape{6}, static_cast<real>(kBos))).log_probs;  // 6×V
        const int64_t V = first.size(1);
        for (size_t i = 0; i < pairs.size(); ++i) {
            CAPTURE(i);
            // The answers, in reading order: what the pairs say.
            CHECK(greedy[i].tokens == pairs[i].target);
            CHECK(beam_decode(*model, pairs[i].source, 3).tokens == pairs[i].target);
            // What the model wrote first is the last symbol (the toy targets'
            // first and last differ, but for the one of one symbol).
            const real* row = first.data() + static_cast<int64_t>(i) * V;
            CHECK(std::max_element(row, row + V) - row == pairs[i].target.back());
            if (pairs[i].target.size() > 1) CHECK(pairs[i].target.front() != pairs[i].target.back());
            // The attention rows come with their symbols: the row of the
            // first symbol in reading order is the one written last before </s>.
            REQUIRE(greedy[i].attention.size() == pairs[i].target.size() + 1);
            // Every finished beam hypothesis's log p is what teacher forcing
            // gives its tokens, in the model's order; output_log_probs agrees.
            const std::vector<Hypothesis> beam = beam_search(*model, pairs[i].source, 3);
            std::vector<std::vector<int64_t>> outputs;
            for (const Hypothesis& h : beam) outputs.push_back(h.tokens);
            const std::vector<double> scored = output_log_probs(*model, pairs[i].source, outputs);
            for (size_t k = 0; k < beam.size(); ++k) {
                // (a hypothesis cut off by decode_limit has no </s> in its log p)
                if (beam[k].attention.size() != beam[k].tokens.size() + 1) continue;
                const double want = teacher_forced_log_p(*model, pairs[i].source, beam[k].tokens);
                CHECK(beam[k].log_prob == doctest::Approx(want).epsilon(1e-4));
                CHECK(scored[k] == doctest::Approx(want).epsilon(1e-4));
            }
        }
    }
}

TEST_CASE("seq2seq right-to-left: greedy attention rows follow their symbols into reading order") {
    // A right-to-left model's greedy rows, reversed back by hand, must be the
    // rows its decoding session gave step by step.
    Generator gen(11);
    Seq2SeqModel model(tiny(true), gen);
    train(model, 40);
    const std::vector<Pair> pairs = toy_pairs();
    const Batch b = make_batch(pairs, {0, 1, 2, 3, 4, 5});
    const std::vector<Hypothesis> greedy = greedy_decode(model, b.source, b.source_lengths);
    // The session, by hand: the argmax over the writable ids at every step.
    NoGradGuard no_grad;
    const std::unique_ptr<DecodingSession> session = model.start(b.source, b.source_lengths);
    Tensor previous = Tensor::full(Shape{6}, static_cast<real>(kBos));
    std::vector<std::vector<std::vector<real>>> rows(6);
    std::vector<std::vector<int64_t>> written(6);
    std::vector<bool> done(6, false);
    for (int step = 0; step < 20; ++step) {
        const NextToken next = session->step(previous);
        const int64_t V = next.log_probs.size(1), n = next.weights.size(1);
        for (int64_t r = 0; r < 6; ++r) {
            int64_t best = -1;
            for (int64_t v = 0; v < V; ++v)
                if (writable(v) && (best < 0 || next.log_probs[r * V + v] > next.log_probs[r * V + best])) best = v;
            previous[r] = static_cast<real>(best);
            if (done[static_cast<size_t>(r)]) continue;
            rows[static_cast<size_t>(r)].emplace_back(next.weights.data() + r * n, next.weights.data() + (r + 1) * n);
            if (best == kEos || step + 1 >= decode_limit(b.source_lengths[static_cast<size_t>(r)]))
                done[static_cast<size_t>(r)] = true;
            if (best != kEos) written[static_cast<size_t>(r)].push_back(best);
        }
    }
    for (size_t i = 0; i < pairs.size(); ++i) {
        CAPTURE(i);
        std::vector<int64_t> reading = written[i];
        std::reverse(reading.begin(), reading.end());
        CHECK(greedy[i].tokens == reading);
        const size_t k = written[i].size();
        REQUIRE(greedy[i].attention.size() == rows[i].size());
        for (size_t t = 0; t < k; ++t) CHECK(greedy[i].attention[t] == rows[i][k - 1 - t]);
        if (rows[i].size() > k) CHECK(greedy[i].attention[k] == rows[i][k]);  // </s>'s row stays last
    }
}

// Briefly trained members (10 steps: they disagree on 9 of the 24 answers
// below; after 15 they all agree); the same seeds give the same members.
std::vector<Ensemble::Member> members_of(const std::vector<std::pair<uint64_t, bool>>& seeds_and_directions) {
    std::vector<Ensemble::Member> members;
    for (const auto& [seed, rtl] : seeds_and_directions) {
        auto gen = std::make_unique<Generator>(seed);
        auto model = std::make_unique<Seq2SeqModel>(tiny(rtl), *gen);
        train(*model, 10);
        members.push_back({std::move(gen), std::move(model)});
    }
    return members;
}

TEST_CASE("seq2seq ensemble of both directions: the proposals of each, rescored by the mean log p of all") {
    // Two left-to-right members and one right-to-left.
    const std::vector<std::pair<uint64_t, bool>> seeds = {{21, false}, {22, true}, {23, false}};
    Ensemble ensemble(members_of(seeds));
    CHECK_FALSE(ensemble.decodes_stepwise());
    CHECK_FALSE(ensemble.right_to_left());
    const Batch b = make_batch(toy_pairs(), {0, 1, 2, 3, 4, 5});
    CHECK_THROWS_AS(ensemble.forward(b), std::logic_error);
    CHECK_THROWS_AS(ensemble.start(b.source, b.source_lengths), std::logic_error);
    CHECK(ensemble.describe().find("both directions") != std::string::npos);

    // The same members again, standing alone: the left-to-right pair mixed
    // (as the ensemble proposes with them), and the right-to-left one.
    std::vector<Ensemble::Member> copies = members_of(seeds);
    std::vector<Translator*> all = {copies[0].model.get(), copies[1].model.get(), copies[2].model.get()};
    Translator& backward = *copies[1].model;
    std::vector<Ensemble::Member> pair;
    for (const auto& [seed, rtl] : {seeds[0], seeds[2]}) {
        std::vector<Ensemble::Member> one = members_of({{seed, rtl}});
        pair.push_back(std::move(one[0]));
    }
    Ensemble forward(std::move(pair));
    REQUIRE(forward.decodes_stepwise());
    REQUIRE(backward.right_to_left());

    int rescoring_mattered = 0, cases = 0;
    for (const double penalty : {1.0, 0.0}) {
        for (const Pair& p : toy_pairs()) {
            for (const int64_t beam : {1, 3}) {
                CAPTURE(penalty);
                CAPTURE(beam);
                const Hypothesis got = ensemble.best_output(p.source, beam, penalty);
                // The proposals: every output either direction's beam finished with.
                std::vector<std::vector<int64_t>> proposals;
                for (Translator* direction : {static_cast<Translator*>(&forward), &backward})
                    for (const Hypothesis& h : beam_search(*direction, p.source, beam, penalty))
                        if (std::find(proposals.begin(), proposals.end(), h.tokens) == proposals.end())
                            proposals.push_back(h.tokens);
                // The best by the mean of the three members' teacher-forced log p.
                double best_score = -INFINITY, best_log_p = 0;
                std::vector<int64_t> best;
                for (const auto& y : proposals) {
                    double mean = 0;
                    for (Translator* m : all) mean += teacher_forced_log_p(*m, p.source, y) / 3;
                    const double score = mean / std::pow(static_cast<double>(y.size() + 1), penalty);
                    if (score > best_score) best_score = score, best = y, best_log_p = mean;
                }
                CHECK(got.tokens == best);
                CHECK(got.log_prob == doctest::Approx(best_log_p).epsilon(1e-4));
                // Cases where the answer is not what the left-to-right pair alone would say.
                rescoring_mattered += got.tokens != beam_decode(forward, p.source, beam, penalty).tokens;
                ++cases;
            }
        }
    }
    CHECK(rescoring_mattered > 0);
    MESSAGE(rescoring_mattered << " of " << cases << " answers differ from the left-to-right members' own");
}

TEST_CASE("seq2seq right-to-left: a model file keeps its direction, alone and in an ensemble") {
    std::vector<Ensemble::Member> members = members_of({{31, true}});
    Translator& model = *members[0].model;
    const attn::testing::TempDir tmp("seq2seq_right_to_left");
    const std::string path = tmp / "model.safetensors";
    attn::testing::save_toy_model_file(dynamic_cast<Seq2SeqModel&>(model), path);
    Seq2SeqSetup loaded_setup;
    const std::unique_ptr<Translator> loaded = load_models({path}, loaded_setup);
    CHECK(loaded_setup.config.right_to_left);
    CHECK(loaded->right_to_left());
    CHECK(loaded->decodes_stepwise());
    // Greedy decoding of the loaded ensemble (the trainer's dev decoding)
    // answers in reading order, as the model does.
    const Batch b = make_batch(toy_pairs(), {0, 1, 2, 3, 4, 5});
    const std::vector<Hypothesis> want_greedy = greedy_decode(model, b.source, b.source_lengths);
    const std::vector<Hypothesis> got_greedy = greedy_decode(*loaded, b.source, b.source_lengths);
    for (size_t i = 0; i < want_greedy.size(); ++i) CHECK(got_greedy[i].tokens == want_greedy[i].tokens);
    // --eval-only and --resume load a checkpoint into the model the flags
    // build: a direction the flags do not give is refused, naming the flag to give.
    CHECK_NOTHROW(check_checkpoint_direction(path, true, "--eval-only"));
    CHECK_NOTHROW(check_checkpoint_direction(tmp / "absent.safetensors", false, "--eval-only"));
    const std::string message = error_of([&] { check_checkpoint_direction(path, false, "--resume"); });
    CHECK(message.find("--resume: " + path) == 0);
    CHECK(message.find("give --right-to-left") != std::string::npos);
    for (const Pair& p : toy_pairs()) {
        const Hypothesis want = beam_decode(model, p.source, 3);
        const Hypothesis got = loaded->best_output(p.source, 3, 1.0);
        CHECK(got.tokens == want.tokens);
        CHECK(got.log_prob == doctest::Approx(want.log_prob).epsilon(1e-5));
    }
}

namespace {

// A translator whose next-token distribution is a rule of the row's prefix
// (the ids written so far; a probability for every id, 0 for none), and whose
// t-th step (from 1) attends to source symbol j with t + 100·j, so that each
// attention row names the step that wrote it. Its session follows beam
// search's select() as a model's must, so that each row's prefix is its
// hypothesis's. Decoding's own work (reading order, n-best, out of steps) is
// all that is left to get right.
class RuleTranslator : public Translator {
public:
    using Rule = std::function<std::vector<double>(const std::vector<int64_t>& prefix)>;
    explicit RuleTranslator(Rule rule, bool right_to_left = false)
        : rule_(std::move(rule)), right_to_left_(right_to_left) {}
    Var forward(const Batch&, Tensor*) override { throw std::logic_error("RuleTranslator: decoding only"); }
    std::string config_text() const override { return "rule"; }
    bool right_to_left() const override { return right_to_left_; }
    std::unique_ptr<DecodingSession> start(const Tensor& source, const std::vector<int64_t>&) override {
        return std::make_unique<Session>(rule_, source.size(1));
    }

private:
    struct Session : DecodingSession {
        Session(const Rule& r, int64_t width) : rule(r), n(width) {}
        NextToken step(const Tensor& previous) override {
            const int64_t K = previous.numel();
            prefixes.resize(static_cast<size_t>(K));
            NextToken out;
            for (int64_t r = 0; r < K; ++r) {
                auto& prefix = prefixes[static_cast<size_t>(r)];
                if (previous[r] != kBos) prefix.push_back(static_cast<int64_t>(previous[r]));
                const std::vector<double> p = rule(prefix);
                const auto V = static_cast<int64_t>(p.size());
                if (r == 0) out = {Tensor::empty(Shape{K, V}), Tensor::empty(Shape{K, n})};
                for (int64_t v = 0; v < V; ++v)
                    out.log_probs[r * V + v] = static_cast<real>(std::log(p[static_cast<size_t>(v)]));  // log 0 = −∞
                for (int64_t j = 0; j < n; ++j)
                    out.weights[r * n + j] = static_cast<real>(static_cast<int64_t>(prefix.size()) + 1 + 100 * j);
            }
            return out;
        }
        void select(const std::vector<int64_t>& rows) override {
            std::vector<std::vector<int64_t>> kept;
            for (int64_t r : rows) kept.push_back(prefixes[static_cast<size_t>(r)]);
            prefixes = std::move(kept);
        }
        Rule rule;
        int64_t n;
        std::vector<std::vector<int64_t>> prefixes;
    };
    Rule rule_;
    bool right_to_left_;
};

// A script: at step t (the prefix's length) probability 0.9 to script[t]
// (</s> once the script ends, if `ends`; the script's last id for ever
// otherwise), 0.1 shared among the other seven of 8 ids.
RuleTranslator::Rule scripted(std::vector<int64_t> script, bool ends) {
    return [script = std::move(script), ends](const std::vector<int64_t>& prefix) {
        const size_t t = prefix.size();
        std::vector<double> p(8, 0.1 / 7);
        p[static_cast<size_t>(t < script.size() ? script[t] : ends ? kEos : script.back())] = 0.9;
        return p;
    };
}

// The attention row of step t (from 0) over two source symbols.
std::vector<real> row_of_step(size_t t) { return {static_cast<real>(t + 1), static_cast<real>(t + 101)}; }

}  // namespace

// The reversal into reading order, by hand: a right-to-left model writes 4 5 6
// (then </s>) for the word read 6 5 4; the attention rows go with their
// tokens, and </s>'s row, written last, stays last. A hypothesis that ran out
// of steps has no </s> row: every row is a token's and is reversed.
TEST_CASE("seq2seq right-to-left: tokens and attention rows in reading order, with and without </s>") {
    const Tensor source = Tensor::from({4, 5}, Shape{1, 2});  // two symbols: decode_limit 9
    for (const bool rtl : {false, true}) {
        CAPTURE(rtl);
        RuleTranslator ends(scripted({4, 5, 6}, true), rtl);
        const Hypothesis g = greedy_decode(ends, source, {2}).at(0);
        const Hypothesis b = beam_search(ends, {4, 5}, 1).at(0);
        for (const Hypothesis& h : {g, b}) {
            CHECK(h.tokens == (rtl ? std::vector<int64_t>{6, 5, 4} : std::vector<int64_t>{4, 5, 6}));
            REQUIRE(h.attention.size() == 4);
            for (size_t i = 0; i < 3; ++i) CHECK(h.attention[i] == row_of_step(rtl ? 2 - i : i));
            CHECK(h.attention[3] == row_of_step(3));  // </s>
        }

        RuleTranslator runs_on(scripted({4, 5, 6, 7}, false), rtl);  // 4 5 6 7 7 7 7 7 7: out of steps after 9
        const Hypothesis og = greedy_decode(runs_on, source, {2}).at(0);
        const Hypothesis ob = beam_search(runs_on, {4, 5}, 1).at(0);
        for (const Hypothesis& h : {og, ob}) {
            const std::vector<int64_t> written{4, 5, 6, 7, 7, 7, 7, 7, 7};
            CHECK(h.tokens == (rtl ? std::vector<int64_t>(written.rbegin(), written.rend()) : written));
            REQUIRE(h.attention.size() == 9);
            for (size_t i = 0; i < 9; ++i) CHECK(h.attention[i] == row_of_step(rtl ? 8 - i : i));
        }
    }
}

// A Transformer's direction lives in its own configuration (seq2seq.config
// is a TransformerConfig's text): a reader that looked in the RNN's
// configuration would find left to right in every Transformer file.
TEST_CASE("seq2seq right-to-left: a Transformer's model file keeps its direction, and the checks read it") {
    const attn::testing::TempDir tmp("seq2seq_right_to_left");
    for (const bool rtl : {false, true}) {
        CAPTURE(rtl);
        Seq2SeqSetup setup;
        setup.model = "transformer";
        for (const char* s : {"a", "b", "c", "d", "e"}) setup.source_vocab.add(s), setup.target_vocab.add(s);
        setup.transformer = TransformerConfig{.source_vocab = setup.source_vocab.size(),
                                              .target_vocab = setup.target_vocab.size(), .d_model = 8, .heads = 2,
                                              .layers = 1, .ffn = 12, .dropout = 0, .right_to_left = rtl};
        Generator gen(5);
        TransformerSeq2Seq model(setup.transformer, gen);
        const std::string path = tmp / (rtl ? "rtl.safetensors" : "ltr.safetensors");
        std::map<std::string, std::string> metadata;
        save_setup(setup, metadata);
        save_model(path, model, metadata);

        Seq2SeqSetup loaded_setup;
        const std::unique_ptr<Translator> loaded = load_models({path}, loaded_setup);
        CHECK(loaded_setup.model == "transformer");
        CHECK(loaded_setup.transformer.right_to_left == rtl);
        CHECK(loaded->right_to_left() == rtl);  // what --predict decodes with
        CHECK_NOTHROW(check_checkpoint_direction(path, rtl, "--eval-only"));
        const std::string message = error_of([&] { check_checkpoint_direction(path, !rtl, "--resume"); });
        CHECK(message.find(rtl ? "give --right-to-left too" : "leave out --right-to-left") != std::string::npos);
    }
}

// The report's alignments (alignment_snapshot: the frames the trainer keeps
// each epoch) of a right-to-left model read as the answer does: the symbols
// in reading order down the rows, each with its own row of weights, </s> last.
TEST_CASE("seq2seq right-to-left: the report's alignment rows are in reading order, each with its weights") {
    TaskData task;
    for (const char* s : {"a", "b", "c", "d", "e"}) task.source_vocab.add(s), task.target_vocab.add(s);  // ids 4–8
    task.test.push_back(EvalItem{.text = "ab", .source = {4, 5}, .references = {{"c", "b", "a"}}});
    for (const bool rtl : {false, true}) {
        CAPTURE(rtl);
        RuleTranslator model(scripted({4, 5, 6}, true), rtl);  // writes a b c, then </s>
        const Json frames = alignment_snapshot(model, task);
        REQUIRE(frames.size() == 1);
        const ExplorerFrame f = frame_from_json(frames[0]);
        CHECK(f.cols == std::vector<std::string>{"a", "b"});
        CHECK(f.rows == (rtl ? std::vector<std::string>{"c", "b", "a", "</s>"}
                             : std::vector<std::string>{"a", "b", "c", "</s>"}));
        REQUIRE(f.maps.size() == 1);
        REQUIRE(f.maps[0].weights.size() == 4);
        for (size_t r = 0; r < 4; ++r) {
            const size_t step = r == 3 ? 3 : rtl ? 2 - r : r;  // the step that wrote row r's symbol
            CHECK(f.maps[0].weights[r] == std::vector<double>{double(step + 1), double(step + 101)});
        }
    }
}

namespace {

// p over the ids <pad>, <s> (never), </s>, a (3) and b (4).
std::vector<double> eos_a_b(double eos, double a, double b) { return {0, 0, eos, a, b}; }

}  // namespace

// Beam search with a beam of 2, worked out by hand on a distribution that
// depends on the prefix (a = 3, b = 4, </s> = 2):
//   []: a .6, b .3, </s> .1     [a]: </s> .5, a .3, b .2     [b]: a .9, </s> .05, b .05
//   [b a]: </s> .9, a .05, b .05      any longer prefix: </s> .1, a .5, b .4
// step 1 keeps a (.6) and b (.3); step 2's best extensions are "a </s>" (.30,
// finished) and "b a" (.27); step 3 from "b a": "b a </s>" (.243, finished)
// and "b a a" (.0135, the tie with "b a b" broken by the smaller id). Two have
// finished, a beam's worth: the search stops, and "b a a", still under way,
// is returned with them, without a </s> row. Ranked by log p / (tokens + 1):
// "b a" (−0.471), "a" (−0.602), "b a a" (−1.076); by log p alone (penalty 0)
// "a" (log .3) wins over "b a" (log .243).
TEST_CASE("seq2seq beam search: the n-best of a beam of 2, by hand, and the unfinished one returned with them") {
    RuleTranslator model([](const std::vector<int64_t>& prefix) {
        const std::vector<int64_t> a{3}, b{4}, ba{4, 3};
        if (prefix.empty()) return eos_a_b(0.1, 0.6, 0.3);
        if (prefix == a) return eos_a_b(0.5, 0.3, 0.2);
        if (prefix == b) return eos_a_b(0.05, 0.9, 0.05);
        if (prefix == ba) return eos_a_b(0.9, 0.05, 0.05);
        return eos_a_b(0.1, 0.5, 0.4);
    });
    const std::vector<Hypothesis> best = beam_search(model, {5}, 2, 1.0);
    REQUIRE(best.size() == 3);
    CHECK(best[0].tokens == std::vector<int64_t>{4, 3});
    CHECK(best[0].log_prob == doctest::Approx(std::log(0.3 * 0.9 * 0.9)).epsilon(1e-6));
    CHECK(best[0].attention.size() == 3);  // b, a, </s>
    CHECK(best[1].tokens == std::vector<int64_t>{3});
    CHECK(best[1].log_prob == doctest::Approx(std::log(0.6 * 0.5)).epsilon(1e-6));
    CHECK(best[1].attention.size() == 2);  // a, </s>
    CHECK(best[2].tokens == std::vector<int64_t>{4, 3, 3});
    CHECK(best[2].log_prob == doctest::Approx(std::log(0.3 * 0.9 * 0.05)).epsilon(1e-6));
    REQUIRE(best[2].attention.size() == 3);  // b, a, a: no </s> row
    for (size_t t = 0; t < 3; ++t) CHECK(best[2].attention[t] == std::vector<real>{static_cast<real>(t + 1)});
    // without the length penalty the shorter answer wins
    const std::vector<Hypothesis> raw = beam_search(model, {5}, 2, 0.0);
    REQUIRE(raw.size() == 3);
    CHECK(raw[0].tokens == std::vector<int64_t>{3});
    CHECK(raw[1].tokens == std::vector<int64_t>{4, 3});
}

// Out of steps: a distribution under which </s> never wins a place in a beam of
// 2 runs to decode_limit (2·1 + 5 = 7 steps for one source symbol); both
// hypotheses under way are returned, 7 tokens each and no </s> row.
TEST_CASE("seq2seq beam search: out of steps, every hypothesis under way is returned, with no </s> row") {
    RuleTranslator model([](const std::vector<int64_t>&) { return eos_a_b(0.01, 0.6, 0.39); });
    const std::vector<Hypothesis> best = beam_search(model, {5}, 2, 1.0);
    REQUIRE(best.size() == 2);
    CHECK(best[0].tokens == std::vector<int64_t>(7, 3));  // a a a a a a a: .6⁷
    CHECK(best[0].log_prob == doctest::Approx(7 * std::log(0.6)).epsilon(1e-6));
    // the one b first: at every step "b a…a" + a ties "a…a" + b (.39·.6ᵗ both), and the
    // tie goes to the larger probability of the step's own token (a's .6)
    CHECK(best[1].tokens == std::vector<int64_t>{4, 3, 3, 3, 3, 3, 3});
    CHECK(best[1].log_prob == doctest::Approx(6 * std::log(0.6) + std::log(0.39)).epsilon(1e-6));
    for (const Hypothesis& h : best) CHECK(h.attention.size() == 7);
}
