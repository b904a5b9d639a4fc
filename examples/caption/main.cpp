// caption: Show, Attend and Tell (Xu et al. 2015) with soft or hard attention.
//
//   build/examples/caption                          built-in shapes, soft attention
//   build/examples/caption --align hard             hard attention, REINFORCE
//   build/examples/caption --align gumbel-st        hard attention, Gumbel straight-through
//   build/examples/caption --data fashion           2×2 Fashion-MNIST scenes (make data first)
//   build/examples/caption --predict scene.png      caption a picture with out/caption/best.safetensors
//                                                   (--align hard: out/caption-hard/best.safetensors)
//   build/examples/caption --dump-reference r.safetensors   out/caption/model.safetensors on fixed
//                                                   inputs, for python/check_torch.py
//
// The model, the loss (with REINFORCE's variance-reduction terms), decoding and
// metrics are in examples/caption/caption_model.hpp; the data in
// examples/caption/caption_data.hpp. docs/examples/caption.md shows what it prints.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <new>
#include <numeric>
#include <optional>

#include "autograd/ops.hpp"
#include "examples/caption/predict.hpp"
#include "examples/caption/report.hpp"
#include "examples/caption/caption_data.hpp"
#include "examples/caption/caption_model.hpp"
#include "examples/common/flags.hpp"
#include "examples/common/training_loop.hpp"
#include "io/checkpoint.hpp"
#include "nn/optim.hpp"
#include "tensor/parallel.hpp"

using namespace attn;

namespace {

// Greedy captions and metrics over a whole split, in batches.
struct Evaluation {
    CaptionMetrics metrics;
    std::vector<Decoded> decoded;
};
Evaluation evaluate(Captioner& model, const CaptionDataset& data, const std::vector<CaptionExample>& split,
                    int64_t batch_size) {
    Evaluation e;
    std::vector<const CaptionExample*> examples;
    for (size_t start = 0; start < split.size(); start += static_cast<size_t>(batch_size)) {
        std::vector<int64_t> idx;
        for (size_t i = start; i < std::min(split.size(), start + static_cast<size_t>(batch_size)); ++i)
            idx.push_back(static_cast<int64_t>(i));
        const CaptionBatch batch = make_caption_batch(split, idx);
        for (Decoded& d : greedy_decode(model, batch.images, batch.captions.size(1))) e.decoded.push_back(std::move(d));
        examples.insert(examples.end(), batch.examples.begin(), batch.examples.end());
    }
    e.metrics = caption_metrics(e.decoded, examples, data.vocab, data.height / 4, data.width / 4, data.rows, data.cols);
    return e;
}

// Every setting of a run, with its default; declare_flags ties each to its flag.
struct Settings {
    // 8 epochs: the built-in task's plateau before take-off lasts 2 to 5 epochs
    // depending on the seed (seed 2: 0.90 word accuracy after 6, 0.99 after 8),
    // and hard attention then needs one or two epochs of sampling.
    CommonFlags common{.data = "shapes", .epochs = 8};
    std::string attention_kind = "soft", data_dir = "data/fashion-mnist", hard_eval = "expected";
    int64_t batch_size = 32, beam = 3, hidden = 256, embedding = 64, attention_dim = 128;
    int64_t channels1 = 32, channels2 = 64, context_layers = 0, cell_size = 16, num_shapes = 8;
    int64_t n_train = 0, n_valid = 300, n_test = 500;
    bool augment = false;
    double lr = 1e-3, penalty = 1, entropy_bonus = 0.01, reinforce_weight = 0.03, soft_probability = 0.5, clip = 5,
           length_penalty = 0, temperature = 1;
    double sampling_penalty = 0;  // negative: --penalty
    int64_t expected_epochs = 0;
    double expected_until = 0.5;
    std::string reward_kind = "caption";
    PredictFlags predict;           // --predict --checkpoint --svg --show --dump-reference
    CaptionPredictOptions picture;  // what only pictures need (--invert, --samples)
};

// The flags, each writing into Settings (FlagParser checks the ranges and
// prints --help from these lines).
void declare_flags(FlagParser& flags, Settings& s) {
    flags.add_common(s.common, "shapes (built in) | fashion (Fashion-MNIST scenes, make data)");
    flags.add("--align", &s.attention_kind,
              "soft (soft_alignment) | hard (hard_alignment, REINFORCE) | gumbel-st (gumbel_softmax_alignment, "
              "straight-through)");
    flags.add("--attention", &s.attention_kind, "the older name of --align");
    flags.add("--tau", &s.temperature, "gumbel-st: the temperature τ of the relaxed softmax", 1e-3);
    flags.add_path("--data-dir", &s.data_dir, "where --data fashion finds the IDX files", FlagParser::PathUse::input);
    flags.add("--batch", &s.batch_size, "images per batch", 1, 65536);
    flags.add("--lr", &s.lr, "Adam's learning rate", 0);
    flags.add("--hidden", &s.hidden, "LSTM hidden size d_h", 1, kMaxWidth);
    flags.add("--embedding", &s.embedding, "word embedding width E", 1, kMaxWidth);
    flags.add("--attention-dim", &s.attention_dim, "additive attention width", 1, kMaxWidth);
    flags.add("--channels1", &s.channels1, "first conv layer's channels", 1, kMaxWidth);
    flags.add("--channels2", &s.channels2, "second conv layer's channels (the annotation width D)", 1, kMaxWidth);
    flags.add("--context-layers", &s.context_layers,
              "extra 3×3 conv layers on the grid; each widens an annotation's view by 8 pixels", 0, 16);
    flags.add("--augment", &s.augment,
              "a fresh training split every epoch (shapes: new scenes; fashion: new combinations of the training "
              "items, mirrored left-right half the time)");
    flags.add("--cell-size", &s.cell_size, "shapes: pixels per cell (2×2 cells; a multiple of 2)", 2, 1024);
    flags.add("--shapes", &s.num_shapes, "shapes: how many kinds of shape (2..8)", 2, 8);
    flags.add("--train-size", &s.n_train, "training scenes (0: 3000 for shapes, 15000 for fashion)", 0);
    flags.add("--valid-size", &s.n_valid, "validation scenes (picks best.safetensors)", 1);
    flags.add("--test-size", &s.n_test, "test scenes", 1);
    flags.add("--penalty", &s.penalty, "λ of the doubly stochastic penalty Σ_i (1 − Σ_t α_ti)²", 0);
    flags.add("--sampling-penalty", &s.sampling_penalty,
              "hard: λ of the penalty once sampling starts (negative: --penalty). The "
              "penalty spreads α evenly over an item's cell, and a sample then reads any location in it");
    flags.add("--entropy", &s.entropy_bonus, "hard: λ_e of the entropy bonus", 0);
    flags.add("--reinforce-weight", &s.reinforce_weight, "hard: λ_r, the weight of the REINFORCE (score-function) term", 0);
    flags.add("--soft-probability", &s.soft_probability, "hard: chance a word uses the expected context", 0, 1);
    flags.add("--expected-epochs", &s.expected_epochs,
              "hard: the first N epochs use the expected context for every word (soft attention), then sample", 0);
    flags.add("--expected-until", &s.expected_until,
              "hard: keep using the expected context (after --expected-epochs) until the validation word accuracy "
              "reaches this, then sample: a sampled location earns no reward before the decoder reads what it "
              "attends to (0: sample from the start)",
              0, 1);
    flags.add("--reward", &s.reward_kind,
              "hard: what credits the location of word t: caption (log p of all words, as Xu et al.'s paper), to-go "
              "(of words t..T) or word (of word t alone)");
    flags.add("--hard-eval", &s.hard_eval,
              "hard, in evaluation: expected (the expected context, as Xu et al.'s released generator) or argmax (the "
              "one most likely location); the test reports both");
    flags.add("--beam", &s.beam, "beam width for the beam-search test metrics", 1, 1000);
    flags.add("--length-penalty", &s.length_penalty,
              "beam search ranks captions by log p / length^this (0: the total log p, 1: the mean per word)", 0);
    flags.add("--clip", &s.clip, "gradient norm clipping (0: off)", 0);
    flags.add_predict(s.predict, "caption the PGM/PNG files named as arguments");
    flags.add("--invert", &s.picture.invert, "--predict: the picture has dark items on a light background");
    flags.add("--samples", &s.picture.samples, "--predict, hard attention: draw this many locations per word from α_t", 0, 100000);
}

// The choices FlagParser cannot check alone: --align (the catalog's ids
// work too, as their short names), --tau, --reward, --hard-eval.
void check_settings(Settings& s) {
    for (const auto& [name, id] : {std::pair<std::string, std::string>{"soft_alignment", "soft"},
                                   {"hard_alignment", "hard"}, {"gumbel_softmax_alignment", "gumbel-st"}})
        if (s.attention_kind == name) s.attention_kind = id;
    if (s.attention_kind != "soft" && s.attention_kind != "hard" && s.attention_kind != "gumbel-st")
        throw std::invalid_argument("--align expects soft, hard or gumbel-st, got '" + s.attention_kind + "'");
    if (!(s.temperature > 0)) throw std::invalid_argument("--tau must be > 0, got " + std::to_string(s.temperature));
    if (s.reward_kind != "to-go" && s.reward_kind != "caption" && s.reward_kind != "word")
        throw std::invalid_argument("--reward expects caption, to-go or word, got '" + s.reward_kind + "'");
    if (s.expected_epochs < 0 || s.context_layers < 0)
        throw std::invalid_argument("--expected-epochs and --context-layers must be ≥ 0");
    if (s.hard_eval != "argmax" && s.hard_eval != "expected")
        throw std::invalid_argument("--hard-eval expects argmax or expected, got '" + s.hard_eval + "'");
    // The encoder halves the picture twice (two 2×2 poolings) and the picture
    // is two cells wide, so a cell must be an even number of pixels.
    if (s.cell_size % 2 != 0)
        throw std::invalid_argument("--cell-size must be a multiple of 2, got " + std::to_string(s.cell_size));
}

// ---- data ------------------------------------------------------------------------------
CaptionDataset load_data(Settings& s) {
    CaptionDataset data;
    if (s.n_train <= 0) s.n_train = s.common.data == "fashion" ? 15000 : 3000;
    if (s.common.data == "shapes")
        data = make_shape_dataset({.rows = 2, .cols = 2, .cell_size = s.cell_size, .num_shapes = s.num_shapes},
                                  s.n_train, s.n_valid, s.n_test);
    else if (s.common.data == "fashion")
        data = make_fashion_dataset(s.data_dir, s.n_train, s.n_valid, s.n_test);
    else
        throw std::invalid_argument("--data expects shapes or fashion, got '" + s.common.data + "'");
    std::cerr << "data " << s.common.data << ": " << data.train.size() << " train, " << data.valid.size() << " valid, "
              << data.test.size() << " test scenes of " << data.height << "×" << data.width << ", "
              << data.vocab.size() << " words; e.g. \"" << data.vocab.text(data.train[0].caption) << "\"\n";
    return data;
}

// ---- training: the shared loop, with this task's batches, loss and validation -----------
// What the loop's parts share between steps and epochs: the epoch's order, the
// loss's weights, REINFORCE's moving-average baseline, and whether hard
// attention samples yet (the last two kept in checkpoints: a resumed run
// continues exactly).
struct CaptionTraining {
    const Settings& s;
    CaptionDataset& data;
    Captioner& model;
    CaptionSetup setup;  // what --predict needs besides the weights
    bool hard;
    CaptionReward reward;
    MovingAverageBaseline baseline{};
    CaptionLossOptions loss_options{};
    std::vector<int64_t> order{};
    // Hard attention samples once the expected-context epochs are over and the
    // decoder reads what it attends to (validation word accuracy ≥
    // --expected-until); a checkpoint keeps whether it has, so a resumed run
    // switches at the same epoch.
    bool may_sample = s.expected_until <= 0;

    TrainerParts parts();
};

TrainerParts CaptionTraining::parts() {
    const auto batches_per_epoch = static_cast<int64_t>((data.train.size() + static_cast<size_t>(s.batch_size) - 1) /
                                                        static_cast<size_t>(s.batch_size));
    TrainerParts parts;
    parts.begin_epoch = [this, batches_per_epoch](int64_t epoch) {
        const bool sampling = hard && epoch >= s.expected_epochs && may_sample;
        if (hard) model.hard_alignment.set_soft_probability(sampling ? s.soft_probability : 1.0);
        loss_options = {.penalty = sampling && s.sampling_penalty >= 0 ? s.sampling_penalty : s.penalty,
                        .entropy_bonus = s.entropy_bonus, .reinforce_weight = s.reinforce_weight, .reward = reward,
                        .fast = s.common.fast};
        if (s.augment) data.train = data.fresh_train(epoch);  // from epoch alone: a resumed run repeats it
        // This epoch's order, from (seed, epoch): a resumed run repeats it.
        order.resize(data.train.size());
        std::iota(order.begin(), order.end(), 0);
        Generator shuffle(static_cast<uint64_t>(s.common.seed) * 1000003u + static_cast<uint64_t>(epoch));
        for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[shuffle.randint(i)]);
        return batches_per_epoch;
    };
    parts.step = [this](int64_t, int64_t b, int64_t step) {
        const auto first = order.begin() + b * s.batch_size;
        const std::vector<int64_t> idx(first, first + std::min<int64_t>(s.batch_size, order.end() - first));
        const CaptionBatch batch = make_caption_batch(data.train, idx);
        // hard attention's samples at step k depend only on (seed, k): a resumed run continues exactly
        model.seed_sampler(static_cast<uint64_t>(s.common.seed) * 7919u + static_cast<uint64_t>(step));
        const Captioner::Forward f = model.forward(batch.images, batch.captions);
        const CaptionLoss loss = caption_loss(f, batch.captions, loss_options, hard, baseline);
        // Each term of the total as well: the report charts them apart, since the
        // penalty is many times the cross-entropy and would hide its fall.
        StepLoss out{loss.total, 1, {{"ce", loss.cross_entropy}, {"penalty", loss.penalty}}};
        if (hard) {
            out.sums.push_back({"reinforce", loss.reinforce});
            out.sums.push_back({"entropy_bonus", -loss_options.entropy_bonus * loss.entropy});
            out.sums.push_back({"reward", loss.mean_reward});
        }
        return out;
    };
    parts.validate = [this] {
        const CaptionMetrics m = evaluate(model, data, data.valid, 64).metrics;
        Validation v{.score = m.word_accuracy,
                     .record = Json::object({{"valid_word_acc", m.word_accuracy}, {"valid_exact", m.exact},
                                             {"valid_bleu4", m.bleu[3]}, {"valid_localization", m.localization}}),
                     .shown = {{"valid_word_acc", m.word_accuracy}, {"valid_loc", m.localization}}};
        if (hard) v.record.set("baseline", baseline.values.empty() ? 0.0 : baseline.values[0]);
        if (hard && !may_sample && m.word_accuracy >= s.expected_until) {
            may_sample = true;
            std::cerr << "validation word accuracy " << m.word_accuracy << " ≥ " << s.expected_until
                      << ": hard attention samples from the next epoch on\n";
        }
        return v;
    };
    parts.snapshot = [this] { return caption_snapshot(model, data, s.attention_kind); };  // the report's epoch slider
    parts.learning_rate =
        learning_rate_schedule(s.common.schedule, s.lr, s.common.epochs * batches_per_epoch, s.common.warmup);
    // what --predict needs besides the weights, in model.safetensors and every checkpoint
    parts.model_metadata = [this](std::map<std::string, std::string>& metadata) { save_setup(setup, metadata); };
    parts.save_extra = [this](std::map<std::string, std::string>& extra) {
        extra["baseline"] = baseline.str();  // every digit: a resumed run continues exactly
        extra["caption.sampling"] = may_sample ? "1" : "0";
        if (hard) extra["caption.reward"] = s.reward_kind;
    };
    parts.load_extra = [this](const TrainingState& state) {
        // The baseline holds one number per credited position (one for
        // --reward caption, one per word otherwise): it cannot carry over to
        // another reward.
        if (hard && state.extra.count("caption.reward") && state.extra.at("caption.reward") != s.reward_kind)
            throw std::runtime_error("checkpoint '" + state.source + "' was trained with --reward " +
                                     state.extra.at("caption.reward") + ", this run asks for --reward " + s.reward_kind +
                                     ": resume with --reward " + state.extra.at("caption.reward"));
        if (state.extra.count("baseline")) baseline = MovingAverageBaseline::parse(state.extra.at("baseline"));
        if (state.extra.count("caption.sampling")) may_sample = state.extra.at("caption.sampling") == "1";
    };
    return parts;
}

// ---- test: the best checkpoint, greedy and beam search --------------------------------
// Prints the test scores (hard attention's under both evaluation modes),
// writes the report, and ends with the RESULT line.
void test_and_report(const Settings& s, const CaptionDataset& data, Captioner& model, const LoopResult& trained,
                     const std::string& dir, const std::string& run_name, const FlagParser& flags) {
    const bool hard = s.attention_kind == "hard", gumbel = s.attention_kind == "gumbel-st";
    model.eval();
    const Evaluation test = evaluate(model, data, data.test, 64);
    std::vector<Decoded> beamed;
    std::vector<const CaptionExample*> examples;
    for (const CaptionExample& ex : data.test) {
        beamed.push_back(beam_search(model, ex.image, s.beam, static_cast<int64_t>(ex.caption.size()), s.length_penalty));
        examples.push_back(&ex);
    }
    const CaptionMetrics beam_m =
        caption_metrics(beamed, examples, data.vocab, data.height / 4, data.width / 4, data.rows, data.cols);
    const CaptionMetrics& m = test.metrics;
    const std::string mode = hard || gumbel ? ", " + s.hard_eval : "";
    std::fprintf(stderr, "test (greedy%s): word acc %.4f  exact %.4f  BLEU-1..4 %.4f %.4f %.4f %.4f  localization %.4f\n",
                 mode.c_str(), m.word_accuracy, m.exact, m.bleu[0], m.bleu[1], m.bleu[2], m.bleu[3], m.localization);
    std::fprintf(stderr, "test (beam %lld): word acc %.4f  exact %.4f  BLEU-4 %.4f  localization %.4f\n",
                 static_cast<long long>(s.beam), beam_m.word_accuracy, beam_m.exact, beam_m.bleu[3], beam_m.localization);
    for (size_t i = 0; i < 3 && i < data.test.size(); ++i)
        std::cerr << "  \"" << data.vocab.text(test.decoded[i].words) << "\"  (reference \""
                  << data.vocab.text(data.test[i].caption) << "\")\n";

    // Hard attention: the test set under the other evaluation mode too (greedy).
    std::optional<CaptionMetrics> other;
    const std::string other_mode = s.hard_eval == "expected" ? "argmax" : "expected";
    if (hard || gumbel) {
        model.set_hard_eval_expected(other_mode == "expected");
        other = evaluate(model, data, data.test, 64).metrics;
        model.set_hard_eval_expected(s.hard_eval == "expected");  // back to the chosen mode
        std::fprintf(stderr, "test (greedy, %s): word acc %.4f  exact %.4f  BLEU-4 %.4f  localization %.4f\n",
                     other_mode.c_str(), other->word_accuracy, other->exact, other->bleu[3], other->localization);
    }

    // The report names each row's decoding: with hard attention, which
    // context the decoder read (the chosen mode first, as on stderr).
    const auto context = [](const std::string& eval_mode) {
        return eval_mode == "expected" ? std::string("expected context Σ α_i a_i")
                                       : std::string("argmax location a_argmax α");
    };
    std::vector<NamedMetrics> scores{{"greedy" + (other ? ", " + context(s.hard_eval) : ""), m}};
    if (other) scores.push_back({"greedy, " + context(other_mode), *other});
    scores.push_back({"beam " + std::to_string(s.beam) + (other ? ", " + context(s.hard_eval) : ""), beam_m});
    write_caption_report(s.common.out, dir, data, test.decoded, s.attention_kind, run_name, s.penalty, scores);

    Json test_json = Json::object({{"word_acc", m.word_accuracy}, {"exact", m.exact}, {"bleu1", m.bleu[0]},
                                   {"bleu4", m.bleu[3]}, {"localization", m.localization},
                                   {"beam_word_acc", beam_m.word_accuracy}, {"beam_exact", beam_m.exact},
                                   {"beam_bleu4", beam_m.bleu[3]}});
    if (other) {
        test_json.set(other_mode + "_word_acc", other->word_accuracy)
            .set(other_mode + "_exact", other->exact)
            .set(other_mode + "_bleu4", other->bleu[3])
            .set(other_mode + "_localization", other->localization);
    }
    std::cout << "RESULT "
              << result_json("caption", s.common.data, s.attention_kind + " attention", test_json, trained,
                             model.num_parameters(), flags).dump()
              << std::endl;
}

}  // namespace

// The flags whose values set how much memory a run takes (named when it
// needs more than the machine has).
constexpr const char* kCaptionSizeFlags = "--batch, --hidden, --embedding, --attention-dim, --channels1, --channels2";

int main(int argc, char** argv) try {
    Settings s;
    FlagParser flags("caption", "Trains a Show-Attend-Tell captioner (soft or hard attention) on drawn scenes.");
    declare_flags(flags, s);
    if (!flags.parse(argc, argv)) return 0;
    if (s.common.threads > 0) set_num_threads(static_cast<int>(s.common.threads));
    check_settings(s);
    // Each kind trains in its own folder, OUT/caption (soft), OUT/caption-hard
    // and OUT/caption-gumbel-st, so a soft and a hard run sit side by side in
    // the report; --predict with the same --align finds that run's model.
    const std::string run_name = s.attention_kind == "soft" ? "caption" : "caption-" + s.attention_kind;
    if (!s.predict.dump_reference.empty()) {
        dump_caption_reference(s.predict.checkpoint_or_model(s.common, run_name), s.predict.dump_reference);
        std::cerr << "wrote " << s.predict.dump_reference << "\n";
        return 0;
    }
    if (s.predict.on) {
        s.picture.checkpoint = s.predict.checkpoint_or_best(s.common, run_name);
        s.picture.images = flags.positional();
        s.picture.svg = s.predict.svg;
        s.picture.show = s.predict.show;
        s.picture.seed = static_cast<uint64_t>(s.common.seed);
        const int status = predict_captions(s.picture);
        check_standard_output("the captions");
        return status;
    }
    flags.refuse_positional("inputs on the command line are read only with --predict");
    std::cerr << "seed " << s.common.seed << "\n";
    const bool hard = s.attention_kind == "hard", gumbel = s.attention_kind == "gumbel-st";

    CaptionDataset data = load_data(s);

    // ---- model -----------------------------------------------------------------------------
    Generator gen(static_cast<uint64_t>(s.common.seed));
    CaptionerConfig config{.channels1 = s.channels1, .channels2 = s.channels2, .hidden = s.hidden, .embedding = s.embedding,
                           .attention = s.attention_dim, .vocab = std::max<int64_t>(16, data.vocab.size()),
                           .hard = hard, .gumbel = gumbel, .temperature = s.temperature,
                           .soft_probability = s.soft_probability,
                           .hard_eval_expected = s.hard_eval == "expected",
                           .context_layers = s.context_layers};
    const CaptionReward reward = s.reward_kind == "caption" ? CaptionReward::caption
                                 : s.reward_kind == "to-go" ? CaptionReward::to_go
                                                            : CaptionReward::word;
    Captioner model(config, gen);
    model.set_fast(s.common.fast);  // the readable layers unless --fast
    Adam optimizer(model.named_parameters(), AdamOptions{.lr = s.lr, .fast = s.common.fast});
    optimizer.set_average(s.common.ema);  // --ema: the loop validates and keeps the average
    std::cerr << "model: " << s.attention_kind << " attention, " << model.num_parameters() << " parameters, grid "
              << data.height / 4 << "×" << data.width / 4 << "\n"
              << kernels_line(s.common.fast, "1.6×", "shapes") << "\n";

    CaptionTraining training{.s = s, .data = data, .model = model,
                             .setup = {.config = config, .words = data.vocab.words, .height = data.height,
                                       .width = data.width,
                                       .max_length = static_cast<int64_t>(data.train.at(0).caption.size())},
                             .hard = hard, .reward = reward};
    LoopOptions options = loop_options(s.common, run_name);
    options.clip = s.clip;
    const LoopResult trained = train_loop(options, model, optimizer, training.parts());

    test_and_report(s, data, model, trained, options.dir, run_name, flags);
    check_standard_output("the results");
    return 0;
} catch (const std::bad_alloc&) {
    std::cerr << out_of_memory_message("caption", kCaptionSizeFlags, "") << "\n";
    return 1;
} catch (const std::length_error& e) {  // the allocator's refusal, with the bytes, or a shape too large to count
    std::cerr << out_of_memory_message("caption", kCaptionSizeFlags, e.what()) << "\n";
    return 1;
} catch (const std::exception& e) {
    std::cerr << error_message("caption", e.what()) << "\n";
    return 1;
}
