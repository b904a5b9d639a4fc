// seq2seq: an encoder–decoder with attention, trained on date normalisation
// (built in) or grapheme-to-phoneme conversion (the CMU dictionary): the RNN
// with Bahdanau or Luong attention (--model rnn), or a Transformer (--model transformer).
//
//   build/examples/seq2seq                          # dates, ~1 minute
//   build/examples/seq2seq --model transformer      # dates with a Transformer, under a minute
//   build/examples/seq2seq --data cmudict           # G2P (make data first)
//   build/examples/seq2seq --data g2p-2007          # G2P on the papers' 2007 training list
//   build/examples/seq2seq --predict "Nov 22 2026"  # with out/seq2seq/best.safetensors
//   build/examples/seq2seq --data g2p-2007 --ensemble A,B --beam 5  # trained models together, scored on dev
//   build/examples/seq2seq --dump-reference r.safetensors  # out/seq2seq/model.safetensors on fixed
//                                                   # inputs, for python/check_torch.py
//
// docs/examples/seq2seq.md explains the model, the flags and the results.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <new>
#include <memory>
#include <string>

#include "autograd/ops.hpp"
#include "examples/seq2seq/edit_distance.hpp"
#include "attention/by_id.hpp"
#include "examples/common/flags.hpp"
#include "examples/common/training_loop.hpp"
#include "examples/seq2seq/predict.hpp"
#include "examples/seq2seq/seq2seq_model.hpp"
#include "examples/seq2seq/transformer_model.hpp"
#include "examples/seq2seq/report.hpp"
#include "examples/seq2seq/task.hpp"
#include "io/checkpoint.hpp"
#include "nn/optim.hpp"
#include "tensor/parallel.hpp"

using namespace attn;
using namespace attn::seq2seq;

namespace {

struct Settings {
    CommonFlags common{.data = "dates", .epochs = 0, .patience = 4, .schedule = "cosine"};  // epochs 0: the task's default
    TaskOptions task;
    std::string model_kind = "rnn";  // --model rnn | transformer
    ModelConfig model{.embedding = 0, .encoder_hidden = 0, .decoder_hidden = 0, .attention_dim = 0};  // 0: the task's default
    TransformerConfig transformer{.d_model = 0, .heads = 0, .layers = 0, .ffn = 0};               // 0: the task's default
    double dropout = -1;          // -1: 0 for the RNN, 0.1 for the Transformer
    double label_smoothing = -1;  // -1: 0 for the RNN, 0.1 for the Transformer
    int64_t batch = 0;            // 0: 64, or 32 for the Transformer on dates
    double lr = 0;  // 0: the task's default
    double clip = 5;
    int64_t beam = 1;            // 1: greedy
    double length_penalty = 1.0;
    PredictFlags predict;        // --predict --checkpoint --svg --show --dump-reference
    std::string ensemble;        // --ensemble FILE,FILE,...: score (or --predict with) these models together
    bool right_to_left = false;  // --right-to-left: write the output from its end (decoding.hpp)
};

// The flags, each writing into Settings (FlagParser checks the ranges and
// prints --help from these lines).
void declare_flags(FlagParser& flags, Settings& s) {
    flags.add_common(s.common, "dates (built in) | cmudict (make data) | g2p-2007 (the papers' 2007 training list, "
                               "5% dev by a hash of the word) | a lexicon file (WORD PHONES per line)");
    flags.describe_default("--epochs", "the task's: 2 dates, 30 G2P; --model transformer 7 dates, 30 G2P");
    flags.add_choice("--model", &s.model_kind, {"rnn", "transformer"},
                     "the encoder-decoder: a GRU encoder and decoder with attention, or a Transformer "
                     "(Vaswani et al. 2017)");
    flags.add("--attention", &s.model.attention,
              "bahdanau (additive score, o_t = [s_t; c_t]) | luong (any --score and --align, o_t = h~_t); "
              "also additive | dot | general | concat | scaled (Luong with that score)");
    flags.add("--score", &s.model.score, "luong: the score, by catalog id or short name: " + score_choices());
    flags.add("--align", &s.model.align, "luong: the alignment, by catalog id or short name: " + alignment_choices());
    flags.add("--input-feeding", &s.model.input_feeding, "feed c_t (Bahdanau) or h~_t (Luong) into the next step");
    flags.add("--window", &s.model.window, "half-width D of the local windows", 1);
    flags.add("--score-options", &s.model.score_options,
              "luong: the score's named options, name=value,... (those its row takes, e.g. cosine: beta)");
    flags.add("--align-options", &s.model.align_options, "luong: the alignment's named options, name=value,...");
    flags.add("--embedding", &s.model.embedding, "embedding width (0: 32 dates, 64 G2P)", 0, kMaxWidth);
    flags.add("--encoder-hidden", &s.model.encoder_hidden, "encoder GRU hidden per direction (0: 64 dates, 128 G2P)", 0, kMaxWidth);
    flags.add("--encoder-layers", &s.model.encoder_layers, "stacked bidirectional GRU layers of the encoder", 1, 8);
    flags.add("--decoder-hidden", &s.model.decoder_hidden, "decoder GRU hidden (0: 128 dates, 256 G2P)", 0, kMaxWidth);
    flags.add("--attention-dim", &s.model.attention_dim, "attention width (0: 64 dates, 256 G2P)", 0, kMaxWidth);
    flags.add("--d-model", &s.transformer.d_model, "transformer: the width d_model (0: 64 dates, 256 G2P)", 0, kMaxWidth);
    flags.add("--heads", &s.transformer.heads, "transformer: attention heads (0: 4)", 0, kMaxWidth);
    flags.add("--layers", &s.transformer.layers, "transformer: encoder layers, and as many decoder layers (0: 2 dates, 3 G2P)", 0);
    flags.add("--ffn", &s.transformer.ffn, "transformer: the feed-forward layers' inner width (0: 256 dates, 1024 G2P)", 0, kMaxWidth);
    flags.add("--dropout", &s.dropout,
              "dropout while training: rnn on the embeddings and the output layer's input, transformer on the "
              "embeddings and in every layer (-1: 0 rnn; transformer 0 dates, 0.1 G2P)", -1, 0.99);
    flags.add("--right-to-left", &s.right_to_left,
              "train the decoder to write the output from its last symbol to its first (its answers are "
              "given in reading order): a second view of a word for an --ensemble");
    flags.add("--label-smoothing", &s.label_smoothing,
              "epsilon of the cross-entropy's label smoothing, (1 - eps) onehot + eps/V (-1: 0 rnn, 0.1 transformer)",
              -1, 0.99);
    flags.add("--batch", &s.batch, "sentences per batch (0: 64; transformer on dates 32)", 0, 65536);
    flags.add("--lr", &s.lr,
              "Adam learning rate (the peak after a --warmup) (0: rnn 4e-3 dates, 2e-3 G2P; transformer 4e-3 "
              "dates, 1e-3 G2P)", 0);
    // --warmup 0 (the common flag's default) means the model's own: none for
    // the RNN; for the Transformer 300 steps (dates) or 2000 (G2P).
    flags.add("--clip", &s.clip, "gradient-norm clipping", 0);
    flags.add("--beam", &s.beam, "beam width for the test set and --predict (1: greedy)", 1, 1000);
    flags.add("--length-penalty", &s.length_penalty, "beam score log p / len^alpha", 0);
    flags.add("--train-size", &s.task.train_size, "dates: training pairs", 1);
    flags.add_path("--train", &s.task.train_file, "lexicon file for training (without --dev: its dev words split off by a hash)",
                   FlagParser::PathUse::input);
    flags.add_path("--dev", &s.task.dev_file, "lexicon file for early stopping (with --train)",
                   FlagParser::PathUse::input);
    flags.add_path("--test", &s.task.test_file, "lexicon file for the final score (with --train or --data g2p-2007; "
                                                "without it the final score is on dev)",
                   FlagParser::PathUse::input);
    flags.add("--dev-percent", &s.task.dev_percent, "with --train and no --dev: the share of words kept for dev", 1, 50);
    flags.add_predict(s.predict, "transliterate the arguments (or stdin lines)");
    flags.add("--ensemble", &s.ensemble,
              "trained models (model files or checkpoints, comma-separated) decoding together, their next-token "
              "distributions averaged: with --predict, for the arguments; otherwise no training, the dev (and "
              "--test) words of --data are scored",
              /*may_be_empty=*/false);
}

// "a,b,,c" → {"a", "b", "c"}
std::vector<std::string> comma_list(const std::string& text) {
    std::vector<std::string> items;
    for (size_t start = 0; start <= text.size();) {
        const size_t comma = std::min(text.find(',', start), text.size());
        if (comma > start) items.push_back(text.substr(start, comma - start));
        start = comma + 1;
    }
    return items;
}

// The defaults that depend on the task and the model: small and quick for
// dates; for G2P, W2 (the RNN) and the size of g2p-seq2seq's pretrained
// Transformer (3 layers of 256).
void apply_task_defaults(Settings& s, bool g2p) {
    auto pick = [](int64_t& v, int64_t d) { if (v == 0) v = d; };
    const bool transformer = s.model_kind == "transformer";
    if (s.label_smoothing < 0) s.label_smoothing = transformer ? 0.1 : 0;
    if (transformer) {
        // Dates: 2 + 2 layers of 64, many small steps (batch 32) with a warm-up
        // (post-LN needs one), no dropout: 99.9% exact in 7 epochs, under a minute on one thread.
        TransformerConfig& t = s.transformer;
        pick(t.d_model, g2p ? 256 : 64);
        pick(t.heads, 4);
        pick(t.layers, g2p ? 3 : 2);
        pick(t.ffn, g2p ? 1024 : 256);
        if (s.dropout < 0) s.dropout = g2p ? 0.1 : 0;
        t.dropout = s.dropout;
        pick(s.batch, g2p ? 64 : 32);
        pick(s.common.warmup, g2p ? 2000 : 300);
        pick(s.common.epochs, g2p ? 30 : 7);
        if (s.lr == 0) s.lr = g2p ? 1e-3 : 4e-3;
        t.right_to_left = s.right_to_left;
        return;
    }
    if (s.dropout < 0) s.dropout = 0;
    pick(s.batch, 64);
    ModelConfig& m = s.model;
    pick(m.embedding, g2p ? 64 : 32);
    pick(m.encoder_hidden, g2p ? 128 : 64);
    pick(m.decoder_hidden, g2p ? 256 : 128);
    pick(m.attention_dim, g2p ? 256 : 64);
    m.dropout = s.dropout;
    m.right_to_left = s.right_to_left;
    pick(s.common.epochs, g2p ? 30 : 2);
    if (s.lr == 0) s.lr = g2p ? 2e-3 : 4e-3;
}

// Decodes every item: greedy in length-sorted batches, or one by one with the
// beam (and always so for an ensemble of both directions).
std::vector<std::vector<std::string>> decode_all(Translator& model, const TaskData& task,
                                                 const std::vector<EvalItem>& items, int64_t beam, double penalty) {
    std::vector<std::vector<std::string>> out(items.size());
    model.eval();
    if (beam > 1 || !model.decodes_stepwise()) {
        for (size_t i = 0; i < items.size(); ++i)
            out[i] = task.target_vocab.decode(model.best_output(items[i].source, beam, penalty).tokens);
    } else {
        std::vector<Pair> pairs;
        for (const auto& it : items) pairs.push_back({it.source, {}});
        for (const Batch& b : make_batches(pairs, 256, nullptr)) {
            const auto hyps = greedy_decode(model, b.source, b.source_lengths);
            for (size_t r = 0; r < b.index.size(); ++r) out[b.index[r]] = task.target_vocab.decode(hyps[r].tokens);
        }
    }
    model.train();
    return out;
}

ErrorRates score(const std::vector<EvalItem>& items, const std::vector<std::vector<std::string>>& hyps) {
    ErrorRates e;
    for (size_t i = 0; i < items.size(); ++i) e.add(hyps[i], items[i].references);
    return e;
}

// A set's scores as the trainer prints them ("dev: 5400 items, exact …, WER …,
// PER … (beam 5" — the caller closes the parenthesis) and as RESULT holds them.
void print_scores(const char* set, const ErrorRates& e, int64_t beam) {
    std::printf("%s: %lld items, exact %.4f, WER %.4f, PER %.4f (%s", set, static_cast<long long>(e.words), 1 - e.wer(),
                e.wer(), e.per(), beam > 1 ? ("beam " + std::to_string(beam)).c_str() : "greedy");
}
Json scores_json(const char* set, const ErrorRates& e, int64_t beam) {
    return Json::object({{"set", set}, {"exact", 1 - e.wer()}, {"wer", e.wer()}, {"per", e.per()},
                         {"items", e.words}, {"decoding", beam > 1 ? "beam" : "greedy"}});
}

// ---- test (or, without a test set, dev with the final decoding settings) ----
// Decodes the set, prints ten samples and the scores, writes the report, and
// ends with the RESULT line.
void test_and_report(const Settings& s, const TaskData& task, Translator& model, const LoopResult& trained,
                     const std::string& dir, const FlagParser& flags) {
    const bool has_test = !task.test.empty();
    const std::vector<EvalItem>& scored = has_test ? task.test : task.dev;
    const char* set_name = has_test ? "test" : "dev";
    const auto hyps = decode_all(model, task, scored, s.beam, s.length_penalty);
    const ErrorRates test = score(scored, hyps);
    const std::string sep = task.g2p ? " " : "";
    std::cout << "samples (input → output, * = wrong):\n";
    for (size_t i = 0; i < std::min<size_t>(scored.size(), 10); ++i) {
        const bool ok = closest_reference(hyps[i], scored[i].references).distance == 0;
        std::printf("  %-28s → %-24s %s\n", scored[i].text.c_str(), join(hyps[i], sep).c_str(), ok ? "" : "*");
    }
    print_scores(set_name, test, s.beam);
    std::printf(")%s\n", has_test ? "" : "; no test set (give --test FILE)");
    write_seq2seq_report(s.common.out, task, model, dir, test, trained.train_seconds, s.beam);

    std::cout << "RESULT "
              << result_json("seq2seq", task.name, model.config_text(), scores_json(set_name, test, s.beam), trained,
                             model.num_parameters(), flags)
                     .dump()
              << std::endl;
}

// --ensemble without --predict: no training; the models of `paths` decode
// the task's dev words (and its test words, when given) together, with the
// --beam and --length-penalty given, and are scored as the trainer scores one.
int evaluate_ensemble(const Settings& s, const TaskData& task, const std::vector<std::string>& paths,
                      const FlagParser& flags) {
    Seq2SeqSetup setup;
    const std::unique_ptr<Translator> models = load_models(paths, setup);
    if (setup.source_vocab.symbols() != task.source_vocab.symbols() ||
        setup.target_vocab.symbols() != task.target_vocab.symbols())
        throw std::runtime_error("--ensemble: " + paths[0] + " was trained with other vocabularies than --data " +
                                 task.name + " gives; score it on the data it was trained on");
    models->set_fast(s.common.fast);
    std::cerr << models->describe() << "\n";
    Json sets = Json::object();
    for (const auto& [name, items] : {std::pair<const char*, const std::vector<EvalItem>*>{"dev", &task.dev},
                                      {"test", &task.test}}) {
        if (items->empty()) continue;
        const ErrorRates e = score(*items, decode_all(*models, task, *items, s.beam, s.length_penalty));
        print_scores(name, e, s.beam);
        std::printf(", an ensemble of %zu)\n", paths.size());
        sets.set(name, scores_json(name, e, s.beam));
    }
    Json members = Json::array();
    for (const std::string& path : paths) members.push_back(path);
    std::cout << "RESULT "
              << Json::object({{"example", "seq2seq"}, {"data", task.name}, {"model", models->config_text()},
                               {"ensemble", members}, {"scores", sets}, {"params", models->num_parameters()},
                               {"settings", flag_settings(flags)}})
                     .dump()
              << std::endl;
    return 0;
}

}  // namespace

// The flags whose values set how much memory a run takes (named when it
// needs more than the machine has).
constexpr const char* kSeq2seqSizeFlags = "--batch, --embedding, --encoder-hidden, --decoder-hidden, --attention-dim, --d-model, --ffn";

int main(int argc, char** argv) try {
    Settings s;
    FlagParser flags("seq2seq", "Encoder-decoder with attention: date normalisation (--data dates) or "
                                "grapheme-to-phoneme conversion (--data cmudict | g2p-2007, or a lexicon file).");
    declare_flags(flags, s);
    if (!flags.parse(argc, argv)) return 0;
    if (s.common.threads > 0) set_num_threads(static_cast<int>(s.common.threads));
    if (!s.predict.dump_reference.empty()) {
        dump_seq2seq_reference(s.predict.checkpoint_or_model(s.common, "seq2seq"), s.predict.dump_reference);
        std::cerr << "wrote " << s.predict.dump_reference << "\n";
        return 0;
    }
    const std::vector<std::string> ensemble = comma_list(s.ensemble);
    if (!s.ensemble.empty() && ensemble.empty())
        throw std::invalid_argument("--ensemble: expected model files separated by commas, got '" + s.ensemble + "'");
    if (s.predict.on) {
        const int status = predict_transliterations({.checkpoint = s.predict.checkpoint_or_best(s.common, "seq2seq"),
                                                     .ensemble = ensemble,
                                                     .inputs = flags.positional(), .svg = s.predict.svg,
                                                     .show = s.predict.show, .beam = s.beam,
                                                     .length_penalty = s.length_penalty});
        check_standard_output("the predictions");
        return status;
    }
    flags.refuse_positional("inputs on the command line are read only with --predict");

    std::cerr << "seed " << s.common.seed << "\n";
    s.task.data = s.common.data;
    const TaskData task = load_task(s.task);
    if (!ensemble.empty()) {
        const int status = evaluate_ensemble(s, task, ensemble, flags);
        check_standard_output("the results");
        return status;
    }
    apply_task_defaults(s, task.g2p);
    Seq2SeqSetup setup{.model = s.model_kind, .config = s.model, .transformer = s.transformer, .g2p = task.g2p,
                       .source_vocab = task.source_vocab, .target_vocab = task.target_vocab};
    setup.config.source_vocab = setup.transformer.source_vocab = task.source_vocab.size();
    setup.config.target_vocab = setup.transformer.target_vocab = task.target_vocab.size();
    // The catalog's ids in the checkpoint, not the flags' short names (--score
    // general), as the model itself holds them; throws on an unknown one.
    if (setup.model == "rnn") setup.config = setup.config.canonical();
    std::cerr << task.description << "\n";

    Generator gen(static_cast<uint64_t>(s.common.seed));
    const std::unique_ptr<Translator> made = make_model(setup, gen);
    Translator& model = *made;
    model.set_fast(s.common.fast);  // the readable layers unless --fast
    Adam opt(model.named_parameters(), AdamOptions{.lr = s.lr, .fast = s.common.fast});
    opt.set_average(s.common.ema);  // --ema: the loop validates and keeps the average
    std::cerr << model.describe() << ", " << model.num_parameters() << " parameters\n"
              << kernels_line(s.common.fast, setup.model == "rnn" ? "2×" : "1.3×", "dates") << "\n";

    // ---- training: the shared loop, with this task's batches, loss and validation ----
    // The training pairs in the order the model writes: a right-to-left
    // model learns each target reversed (dev is scored in reading order).
    std::vector<Pair> train = task.train;
    for (Pair& p : train) p.target = writing_order(model, std::move(p.target));
    const int64_t batches_per_epoch = (static_cast<int64_t>(train.size()) + s.batch - 1) / s.batch;
    std::vector<Batch> batches;
    TrainerParts parts;
    parts.begin_epoch = [&](int64_t epoch) {
        // the data order of epoch e depends only on (seed, e): a resumed run continues exactly
        Generator order(static_cast<uint64_t>(s.common.seed) * 1000003 + static_cast<uint64_t>(epoch));
        batches = make_batches(train, s.batch, &order);
        return static_cast<int64_t>(batches.size());
    };
    parts.step = [&](int64_t, int64_t b, int64_t step) {
        // dropout's masks at step k depend only on (seed, k): a resumed run continues exactly
        gen = Generator(static_cast<uint64_t>(s.common.seed) * 7919 + static_cast<uint64_t>(step));
        // teacher forcing, mean CE per target token (label-smoothed)
        return StepLoss{model.loss(batches[static_cast<size_t>(b)], s.label_smoothing)};
    };
    parts.validate = [&] {
        const ErrorRates dev = score(task.dev, decode_all(model, task, task.dev, 1, s.length_penalty));
        return Validation{.score = 1 - dev.wer(),  // exact match: the best checkpoint has the lowest dev WER
                          .record = Json::object({{"dev_wer", dev.wer()}, {"dev_per", dev.per()}}),
                          .shown = {{"dev_wer", dev.wer()}, {"dev_per", dev.per()}}};
    };
    parts.snapshot = [&] { return alignment_snapshot(model, task); };  // the report's epoch slider
    parts.learning_rate =
        learning_rate_schedule(s.common.schedule, s.lr, s.common.epochs * batches_per_epoch, s.common.warmup);
    // what --predict needs besides the weights, in model.safetensors and every checkpoint
    parts.model_metadata = [&](std::map<std::string, std::string>& metadata) { save_setup(setup, metadata); };

    LoopOptions options = loop_options(s.common, "seq2seq");
    if (s.common.eval_only) check_checkpoint_direction(options.dir + "/best.safetensors", model.right_to_left(), "--eval-only");
    if (s.common.resume) check_checkpoint_direction(options.dir + "/last.safetensors", model.right_to_left(), "--resume");
    options.clip = s.clip;
    options.curve_every = 25;  // a point of the training curve every 25 steps
    const LoopResult trained = train_loop(options, model, opt, parts);

    test_and_report(s, task, model, trained, options.dir, flags);
    check_standard_output("the results");
    return 0;
} catch (const std::bad_alloc&) {
    std::cerr << out_of_memory_message("seq2seq", kSeq2seqSizeFlags, "") << "\n";
    return 1;
} catch (const std::length_error& e) {  // the allocator's refusal, with the bytes, or a shape too large to count
    std::cerr << out_of_memory_message("seq2seq", kSeq2seqSizeFlags, e.what()) << "\n";
    return 1;
} catch (const std::exception& e) {
    std::cerr << error_message("seq2seq", e.what()) << "\n";
    return 1;
}
