// model.safetensors, the file a trainer writes for PyTorch and for sharing:
// exactly the model's parameters (no optimiser state, no loop position),
// loading back to the same outputs; and the --dump-reference files that
// python/check_torch.py compares (`make check-torch`).
#include <doctest/doctest.h>

#include <cctype>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "autograd/ops.hpp"
#include "examples/caption/predict.hpp"
#include "examples/common/training_loop.hpp"
#include "examples/docclass/predict.hpp"
#include "examples/seq2seq/predict.hpp"
#include "io/checkpoint.hpp"
#include "io/safetensors.hpp"
#include "tensor/ops.hpp"
#include "tests/helpers.hpp"

using namespace attn;
using namespace attn::testing;

namespace {

// A tiny date translator's setup: sources of digits, targets of digits.
seq2seq::Seq2SeqSetup tiny_seq2seq() {
    seq2seq::Seq2SeqSetup s;
    s.source_vocab = seq2seq::Vocab({"1", "2", "3", "4", "5", "6", "7", "8", "9", "0", " ", ".", ","});
    s.target_vocab = seq2seq::Vocab({"1", "2", "3", "4", "5", "6", "7", "8", "9", "0", "-"});
    s.config = seq2seq::ModelConfig{.source_vocab = s.source_vocab.size(), .target_vocab = s.target_vocab.size(),
                                    .embedding = 6, .encoder_hidden = 5, .decoder_hidden = 10, .attention_dim = 10}
                   .canonical();
    return s;
}

// Copy a short digit string reversed: enough of a task for the loop to find a best epoch.
std::vector<seq2seq::Pair> reverse_pairs(const seq2seq::Seq2SeqSetup& s) {
    std::vector<seq2seq::Pair> pairs;
    for (const std::string text : {"12", "345", "6 7", "8.9", "10,2", "4", "56"}) {
        seq2seq::Pair p;
        p.source = s.source_vocab.encode(seq2seq::characters(text));
        for (auto it = text.rbegin(); it != text.rend(); ++it)
            if (std::isdigit(static_cast<unsigned char>(*it))) p.target.push_back(s.target_vocab.id(std::string(1, *it)));
        pairs.push_back(p);
    }
    return pairs;
}

std::map<std::string, Shape> shapes_of(const StateDict& tensors) {
    std::map<std::string, Shape> out;
    for (const auto& [name, t] : tensors) out.emplace(name, t.shape());
    return out;
}

// The seq2seq trainer's parts on one batch, `steps` steps an epoch: its loss
// as the step, minus its loss as the validation score, and in model_metadata
// what it takes to use the model.
TrainerParts one_batch_parts(seq2seq::Seq2SeqModel& model, const seq2seq::Batch& batch,
                             const seq2seq::Seq2SeqSetup& setup, int64_t steps) {
    TrainerParts parts;
    parts.begin_epoch = [steps](int64_t) { return steps; };
    parts.step = [&model, &batch](int64_t, int64_t, int64_t) { return StepLoss{model.loss(batch)}; };
    parts.validate = [&model, &batch] {
        NoGradGuard no_grad;
        return Validation{.score = -model.loss(batch).item()};
    };
    parts.model_metadata = [setup](std::map<std::string, std::string>& m) { seq2seq::save_setup(setup, m); };
    return parts;
}

}  // namespace

TEST_CASE("train_loop: model.safetensors holds exactly the model's parameters and loads back to the same outputs") {
    TempDir dir("model_file");
    const seq2seq::Seq2SeqSetup setup = tiny_seq2seq();
    const std::vector<seq2seq::Pair> pairs = reverse_pairs(setup);
    const seq2seq::Batch batch = seq2seq::make_batch(pairs, {0, 1, 2, 3, 4, 5, 6});
    Generator gen(3);
    seq2seq::Seq2SeqModel model(setup.config, gen);
    Adam optimizer(model.named_parameters(), AdamOptions{.lr = 0.02});

    // The seq2seq trainer's parts, on one batch, with training state in save_extra.
    TrainerParts parts = one_batch_parts(model, batch, setup, 2);
    parts.save_extra = [](std::map<std::string, std::string>& extra) { extra["task.baseline"] = "0.5"; };
    std::ostringstream quiet;
    const LoopResult r = train_loop(LoopOptions{.dir = dir.path, .seed = 3, .epochs = 3, .log = &quiet}, model,
                                    optimizer, parts);
    REQUIRE(r.loaded_best);  // the model holds best.safetensors' weights, the ones model.safetensors has

    const SafetensorsFile file = load_safetensors(dir / "model.safetensors");
    // Names and shapes: the model's named parameters, no more (no optimizer.*), no fewer.
    StateDict parameters;
    for (const auto& [name, p] : model.named_parameters()) parameters.emplace_back(name, p.value());
    CHECK(shapes_of(file.tensors) == shapes_of(parameters));
    for (const auto& entry : file.tensors) {
        INFO(entry.first);
        CHECK(entry.first.rfind("optimizer.", 0) == std::string::npos);
    }
    // Metadata: what --predict (and python/attn_reference.py) needs, and nothing of the training's state.
    std::set<std::string> keys;
    for (const auto& [key, value] : file.metadata) keys.insert(key);
    CHECK(keys == std::set<std::string>{"format", "seq2seq.config", "seq2seq.source_vocab", "seq2seq.target_vocab",
                                        "seq2seq.task"});
    // The training checkpoint beside it has all that, and the same weights bit for bit.
    const SafetensorsFile best = load_safetensors(dir / "best.safetensors");
    CHECK(best.metadata.count("optimizer.type") == 1);
    CHECK(best.metadata.count("task.baseline") == 1);
    CHECK(best.metadata.at("seq2seq.config") == file.metadata.at("seq2seq.config"));
    for (const auto& entry : file.tensors) {
        INFO(entry.first);
        CHECK(allclose(entry.second, best.at(entry.first), 0, 0));
    }

    // A fresh model rebuilt from the file alone gives the same outputs, bit for bit.
    const seq2seq::Seq2SeqSetup back = seq2seq::load_setup(file.metadata, dir / "model.safetensors");
    Generator other(99);
    seq2seq::Seq2SeqModel loaded(back.config, other);
    load_model(dir / "model.safetensors", loaded);
    model.eval();
    loaded.eval();
    Tensor alpha, alpha_loaded;
    const Tensor logits = model.forward(batch, &alpha).value(), logits_loaded = loaded.forward(batch, &alpha_loaded).value();
    CHECK(allclose(logits, logits_loaded, 0, 0));
    CHECK(allclose(alpha, alpha_loaded, 0, 0));
}

TEST_CASE("train_loop: a run resumed from checkpoints without model.safetensors writes it from the best weights") {
    TempDir dir("model_file_resume");
    const seq2seq::Seq2SeqSetup setup = tiny_seq2seq();
    const seq2seq::Batch batch = seq2seq::make_batch(reverse_pairs(setup), {0, 1, 2});
    auto run = [&](bool resume) {
        Generator gen(5);
        seq2seq::Seq2SeqModel model(setup.config, gen);
        Adam optimizer(model.named_parameters(), AdamOptions{.lr = 0.02});
        const TrainerParts parts = one_batch_parts(model, batch, setup, 1);
        std::ostringstream quiet;
        train_loop(LoopOptions{.dir = dir.path, .epochs = 2, .resume = resume, .log = &quiet}, model, optimizer, parts);
    };
    run(false);
    const StateDict written = load_safetensors(dir / "model.safetensors").tensors;
    std::filesystem::remove(dir / "model.safetensors");  // as a run of an older trainer left it
    run(true);  // nothing left to train: it loads the best checkpoint for the test
    const SafetensorsFile again = load_safetensors(dir / "model.safetensors");
    REQUIRE(again.tensors.size() == written.size());
    for (const auto& [name, t] : written) CHECK(allclose(again.at(name), t, 0, 0));
    CHECK(again.metadata.count("seq2seq.config") == 1);
    CHECK(again.metadata.count("optimizer.type") == 0);
}

TEST_CASE("train_loop: --no-save writes no model.safetensors either") {
    TempDir dir("model_file_nosave");
    Generator gen(4);
    const seq2seq::Seq2SeqSetup setup = tiny_seq2seq();
    seq2seq::Seq2SeqModel model(setup.config, gen);
    Adam optimizer(model.named_parameters());
    const seq2seq::Batch batch = seq2seq::make_batch(reverse_pairs(setup), {0, 1});
    TrainerParts parts;
    parts.begin_epoch = [](int64_t) { return int64_t{1}; };
    parts.step = [&](int64_t, int64_t, int64_t) { return StepLoss{model.loss(batch)}; };
    parts.validate = [] { return Validation{.score = 1}; };
    std::ostringstream quiet;
    train_loop(LoopOptions{.dir = dir.path, .epochs = 1, .save = false, .log = &quiet}, model, optimizer, parts);
    CHECK_FALSE(std::filesystem::exists(dir / "model.safetensors"));
}

// The three --dump-reference files: the keys and shapes python/check_torch.py
// reads, padding the masks must hide, and the logits of the model file's model.
TEST_CASE("--dump-reference: each trainer's file holds the inputs, the logits and the attention of its model file") {
    TempDir dir("dump_reference");
    SUBCASE("seq2seq") {
        const seq2seq::Seq2SeqSetup setup = tiny_seq2seq();
        Generator gen(5);
        seq2seq::Seq2SeqModel model(setup.config, gen);
        std::map<std::string, std::string> metadata;
        seq2seq::save_setup(setup, metadata);
        save_model(dir / "model.safetensors", model, metadata);
        seq2seq::dump_seq2seq_reference(dir / "model.safetensors", dir / "dump.safetensors");
        const SafetensorsFile d = load_safetensors(dir / "dump.safetensors");
        CHECK(d.metadata.at("example") == "seq2seq");
        const Tensor& source = d.at("input.source");
        const int64_t B = source.size(0), n = source.size(1), T = d.at("input.target_in").size(1);
        CHECK(B == 4);
        CHECK(d.at("output.logits").shape() == Shape{B, T, setup.target_vocab.size()});
        CHECK(d.at("output.attention").shape() == Shape{B, T, n});
        // sources of different lengths: the shorter ones are padded and get no attention there
        const Tensor& lengths = d.at("input.lengths");
        CHECK(lengths[1] < static_cast<real>(n));
        for (int64_t t = 0; t < T; ++t)
            for (int64_t j = static_cast<int64_t>(lengths[1]); j < n; ++j) CHECK(d.at("output.attention")[(T + t) * n + j] == 0);
        // the logits are the model's (teacher-forced with the dumped inputs)
        seq2seq::Batch batch;
        batch.source = source;
        batch.target_in = d.at("input.target_in");
        for (int64_t b = 0; b < B; ++b) batch.source_lengths.push_back(static_cast<int64_t>(lengths[b]));
        model.eval();
        CHECK(allclose(model.forward(batch).value(), d.at("output.logits"), 0, 0));
    }
    SUBCASE("caption, hard attention: the expected and the argmax readings") {
        CaptionSetup setup;
        setup.config = {.channels1 = 3, .channels2 = 8, .hidden = 8, .embedding = 4, .attention = 8, .vocab = 16,
                        .hard = true};
        setup.words = {"<start>", "<end>", "circle", "square"};
        setup.height = setup.width = 16;
        setup.max_length = 5;
        Generator gen(6);
        Captioner model(setup.config, gen);
        std::map<std::string, std::string> metadata;
        save_setup(setup, metadata);
        save_model(dir / "model.safetensors", model, metadata);
        dump_caption_reference(dir / "model.safetensors", dir / "dump.safetensors");
        const SafetensorsFile d = load_safetensors(dir / "dump.safetensors");
        CHECK(d.metadata.at("cases") == "expected argmax");
        CHECK(d.at("input.images").shape() == Shape{4, 1, 16, 16});
        CHECK(d.at("input.words_in").shape() == Shape{4, 5});
        for (const std::string c : {"expected", "argmax"}) {
            CHECK(d.at(c + ".logits").shape() == Shape{4, 5, 16});
            CHECK(d.at(c + ".attention").shape() == Shape{4, 5, 16});  // a 4×4 grid
            CHECK(d.at(c + ".gate").shape() == Shape{4, 5});
        }
        CHECK(d.at("argmax.location").shape() == Shape{4, 5});
        CHECK_FALSE(allclose(d.at("expected.logits"), d.at("argmax.logits"), 0, 0));  // two readings, two results
    }
    SUBCASE("docclass, HAN") {
        DocclassSetup setup;
        setup.model_name = "han";
        setup.vocab = Vocabulary::from_words({"the", "goal", "rain", "ship", "moon", "score", "team"});
        setup.class_names = {"sport", "space", "weather"};
        setup.config = {.vocab_size = setup.vocab.size(), .embed_dim = 6, .word_hidden = 4, .word_attention = 8,
                        .sentence_hidden = 4, .sentence_attention = 8, .num_classes = 3};
        setup.max_sentences = 3;
        setup.max_words = 4;
        Generator gen(7);
        const auto model = make_doc_model("han", setup.config, gen);
        std::map<std::string, std::string> metadata;
        save_setup(setup, metadata);
        save_model(dir / "model.safetensors", *model, metadata);
        dump_docclass_reference(dir / "model.safetensors", dir / "dump.safetensors");
        const SafetensorsFile d = load_safetensors(dir / "dump.safetensors");
        CHECK(d.at("input.ids").shape() == Shape{3, 3, 4});  // cut to max_sentences × max_words
        CHECK(d.at("output.logits").shape() == Shape{3, 3});
        CHECK(d.at("output.word_attention").shape() == Shape{3, 3, 4});
        CHECK(d.at("output.sentence_attention").shape() == Shape{3, 3});
        // padding at both levels: document 1 has one sentence; sentence 1 of document 0 has 2 words
        CHECK(d.at("input.sentence_mask")[3 + 1] == 0);
        CHECK(d.at("input.word_mask")[4 + 2] == 0);
        CHECK(d.at("output.sentence_attention")[3] == doctest::Approx(1));
        // an unknown word is <unk>
        bool unknown = false;
        for (int64_t i = 0; i < d.at("input.ids").numel(); ++i) unknown = unknown || d.at("input.ids")[i] == Vocabulary::unk;
        CHECK(unknown);
    }
}

TEST_CASE("seq2seq --predict: an input longer than kMaxPredictSymbols is refused, naming it") {
    const seq2seq::Seq2SeqSetup setup = tiny_seq2seq();
    CHECK(seq2seq::predict_source_ids("12 3", 0, setup) == setup.source_vocab.encode({"1", "2", " ", "3"}));
    const std::string longest(seq2seq::kMaxPredictSymbols, '7');
    CHECK(seq2seq::predict_source_ids(longest, 0, setup).size() == seq2seq::kMaxPredictSymbols);
    CHECK_THROWS_WITH_AS(seq2seq::predict_source_ids(longest + "7", 1, setup),
                         doctest::Contains("--predict: input 2 has 1001 symbols; at most 1000 are decoded"),
                         std::invalid_argument);
}

// `seq2seq --predict ''` decoded a guess from nothing, its warnings naming no input.
TEST_CASE("seq2seq --predict: an empty input is refused, naming it") {
    const seq2seq::Seq2SeqSetup setup = tiny_seq2seq();
    CHECK_THROWS_WITH_AS(seq2seq::predict_source_ids("", 2, setup),
                         "--predict: input 3 is empty (nothing to normalise)", std::invalid_argument);
}
