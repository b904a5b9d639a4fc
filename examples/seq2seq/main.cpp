// seq2seq: an encoder–decoder with attention, trained on date normalisation
// (built in) or grapheme-to-phoneme conversion (the CMU dictionary).
//
//   build/examples/seq2seq                          # dates, ~1 minute
//   build/examples/seq2seq --data cmudict           # G2P (make data first)
//   build/examples/seq2seq --predict "Nov 22 2026"  # with out/seq2seq/best.safetensors
//
// docs/examples/seq2seq.md explains the model, the flags and the results.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include "autograd/ops.hpp"
#include "examples/seq2seq/edit_distance.hpp"
#include "examples/common/finite_guard.hpp"
#include "examples/common/flags.hpp"
#include "examples/common/metrics.hpp"
#include "examples/common/progress.hpp"
#include "attention/by_id.hpp"
#include "examples/seq2seq/seq2seq_model.hpp"
#include "examples/seq2seq/report.hpp"
#include "examples/seq2seq/task.hpp"
#include "nn/checkpoint.hpp"
#include "nn/optim.hpp"
#include "nn/safetensors.hpp"
#include "nn/schedule.hpp"
#include "tensor/parallel.hpp"

using namespace attn;
using namespace attn::seq2seq;

namespace {

struct Settings {
    CommonFlags common{.data = "dates", .epochs = 0};  // 0: the task's default
    TaskOptions task;
    ModelConfig model{.embedding = 0, .encoder_hidden = 0, .decoder_hidden = 0, .attention_dim = 0};  // 0: the task's default
    int64_t batch = 64;
    double lr = 0;  // 0: the task's default
    double clip = 5;
    int64_t patience = 4;        // epochs without a better dev error before stopping
    int64_t beam = 1;            // 1: greedy
    double length_penalty = 1.0;
    double time_budget = 0;      // seconds of training, 0: no limit
    bool predict = false;
    std::string checkpoint;      // --predict: default OUT/seq2seq/best.safetensors
};

// The defaults that depend on the task: small and quick for dates, W2 for G2P.
void apply_task_defaults(Settings& s, bool g2p) {
    ModelConfig& m = s.model;
    auto pick = [](int64_t& v, int64_t d) { if (v == 0) v = d; };
    pick(m.embedding, g2p ? 64 : 32);
    pick(m.encoder_hidden, g2p ? 128 : 64);
    pick(m.decoder_hidden, g2p ? 256 : 128);
    pick(m.attention_dim, g2p ? 256 : 64);
    pick(s.common.epochs, g2p ? 30 : 2);
    if (s.lr == 0) s.lr = g2p ? 2e-3 : 4e-3;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Decodes every item (greedy in length-sorted batches, or beam search one by one).
std::vector<std::vector<std::string>> decode_all(Seq2SeqModel& model, const TaskData& task,
                                                 const std::vector<EvalItem>& items, int64_t beam, double penalty) {
    std::vector<std::vector<std::string>> out(items.size());
    model.eval();
    if (beam > 1) {
        for (size_t i = 0; i < items.size(); ++i)
            out[i] = task.target_vocab.decode(beam_decode(model, items[i].source, beam, penalty).tokens);
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

std::map<std::string, std::string> checkpoint_extra(const TaskData& task, const Seq2SeqModel& model, double best,
                                                    int64_t bad_epochs) {
    auto lines = [](const Vocab& v) {
        std::string s;
        for (int64_t i = 4; i < v.size(); ++i) s += v.symbol(i) + "\n";
        return s;
    };
    return {{"seq2seq.config", model.config().str()}, {"seq2seq.task", task.g2p ? "g2p" : "dates"},
            {"seq2seq.source_vocab", lines(task.source_vocab)}, {"seq2seq.target_vocab", lines(task.target_vocab)},
            {"seq2seq.best_dev_error", std::to_string(best)}, {"seq2seq.bad_epochs", std::to_string(bad_epochs)}};
}

// --predict: read a checkpoint's config and vocabularies, transliterate the inputs.
int predict(const Settings& s, const std::vector<std::string>& args) {
    const std::string path = s.checkpoint.empty() ? s.common.out + "/seq2seq/best.safetensors" : s.checkpoint;
    const SafetensorsFile file = load_safetensors(path);
    auto meta = [&](const std::string& key) {
        const auto it = file.metadata.find(key);
        if (it == file.metadata.end()) throw std::runtime_error(path + ": not a seq2seq checkpoint (no " + key + ")");
        return it->second;
    };
    auto vocab = [&](const std::string& key) {
        Vocab v;
        std::string text = meta(key);
        for (size_t start = 0, nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
            v.add(text.substr(start, nl - start));
        return v;
    };
    const bool g2p = meta("seq2seq.task") == "g2p";
    const Vocab source_vocab = vocab("seq2seq.source_vocab"), target_vocab = vocab("seq2seq.target_vocab");
    Generator gen(0);
    Seq2SeqModel model(ModelConfig::parse(meta("seq2seq.config")), gen);
    load_model(path, model);
    model.eval();
    std::vector<std::string> inputs = args;
    if (inputs.empty())
        for (std::string line; std::getline(std::cin, line);)
            if (!line.empty()) inputs.push_back(line);
    for (const auto& text : inputs) {
        const auto ids = source_vocab.encode(source_symbols(text, g2p));
        const auto hyp = beam_decode(model, ids, std::max<int64_t>(1, s.beam), s.length_penalty);
        std::cout << text << "\t" << join(target_vocab.decode(hyp.tokens), g2p ? " " : "") << "\n";
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) try {
    Settings s;
    FlagParser flags("seq2seq", "Encoder-decoder with attention: date normalisation (--data dates) or "
                                "grapheme-to-phoneme conversion (--data cmudict, or a lexicon file).");
    flags.add_common(s.common);
    flags.add("--attention", &s.model.attention,
              "bahdanau (additive score, o_t = [s_t; c_t]) | luong (any --score and --align, o_t = h~_t); "
              "also additive | dot | general | concat | scaled (Luong with that score)");
    flags.add("--score", &s.model.score, "luong: the score, by catalog id or short name: " + score_choices());
    flags.add("--align", &s.model.align, "luong: the alignment, by catalog id or short name: " + alignment_choices());
    flags.add("--input-feeding", &s.model.input_feeding, "feed c_t (Bahdanau) or h~_t (Luong) into the next step");
    flags.add("--window", &s.model.window, "half-width D of the local windows", 1);
    flags.add("--embedding", &s.model.embedding, "embedding width (0: 32 dates, 64 G2P)", 0);
    flags.add("--encoder-hidden", &s.model.encoder_hidden, "encoder GRU hidden per direction (0: 64 dates, 128 G2P)", 0);
    flags.add("--decoder-hidden", &s.model.decoder_hidden, "decoder GRU hidden (0: 128 dates, 256 G2P)", 0);
    flags.add("--attention-dim", &s.model.attention_dim, "attention width (0: 64 dates, 256 G2P)", 0);
    flags.add("--dropout", &s.model.dropout, "dropout on the embeddings and the output layer's input, while training", 0, 0.99);
    flags.add("--batch", &s.batch, "sentences per batch", 1);
    flags.add("--lr", &s.lr, "Adam learning rate, cosine-annealed to 5% (0: 4e-3 dates, 2e-3 G2P)", 0);
    flags.add("--clip", &s.clip, "gradient-norm clipping", 0);
    flags.add("--patience", &s.patience, "stop after this many epochs without a better dev error", 1);
    flags.add("--time-budget", &s.time_budget, "stop training after this many seconds (0: no limit)", 0);
    flags.add("--beam", &s.beam, "beam width for the test set and --predict (1: greedy)", 1, 1000);
    flags.add("--length-penalty", &s.length_penalty, "beam score log p / len^alpha", 0);
    flags.add("--train-size", &s.task.train_size, "dates: training pairs", 1);
    flags.add("--train", &s.task.train_file, "lexicon file for training (with --dev and --test)");
    flags.add("--dev", &s.task.dev_file, "lexicon file for early stopping");
    flags.add("--test", &s.task.test_file, "lexicon file for the final score");
    flags.add("--predict", &s.predict, "transliterate the arguments (or stdin lines) with a checkpoint");
    flags.add("--checkpoint", &s.checkpoint, "checkpoint for --predict (default OUT/seq2seq/best.safetensors)");
    if (!flags.parse(argc, argv)) return 0;
    if (s.common.threads > 0) set_num_threads(static_cast<int>(s.common.threads));
    if (s.predict) return predict(s, flags.positional());

    std::cerr << "seed " << s.common.seed << "\n";
    s.task.data = s.common.data;
    const TaskData task = load_task(s.task);
    apply_task_defaults(s, task.g2p);
    s.model.source_vocab = task.source_vocab.size();
    s.model.target_vocab = task.target_vocab.size();
    std::cerr << task.description << "\n";

    Generator gen(static_cast<uint64_t>(s.common.seed));
    Seq2SeqModel model(s.model, gen);
    Adam opt(model.named_parameters(), AdamOptions{.lr = s.lr});
    std::cerr << model.describe() << ", " << model.num_parameters() << " parameters\n";

    const std::string dir = s.common.out + "/seq2seq";
    std::filesystem::create_directories(dir);
    const std::string best_path = dir + "/best.safetensors", last_path = dir + "/last.safetensors";
    TrainingState state{.seed = static_cast<uint64_t>(s.common.seed)};
    double best_dev = 2.0;  // dev word error rate (1 − exact match)
    int64_t bad_epochs = 0;
    if (s.common.resume || s.common.eval_only) {
        const std::string from = s.common.eval_only ? best_path : last_path;
        state = load_checkpoint(from, model, opt);
        best_dev = state.number("seq2seq.best_dev_error");
        bad_epochs = static_cast<int64_t>(state.number("seq2seq.bad_epochs"));
        std::cerr << (s.common.eval_only ? "evaluating " : "resumed from ") << from << " at epoch " << state.epoch << ", step " << state.step << "\n";
    }
    // A resumed run continues the history from its checkpoint's step; evaluation only adds to it.
    MetricsLog metrics(dir + "/metrics.jsonl",
                       s.common.resume || s.common.eval_only ? MetricsLog::Mode::append : MetricsLog::Mode::truncate,
                       s.common.resume ? state.step : std::numeric_limits<int64_t>::max());

    // ---- training ----
    const int64_t batches_per_epoch = (static_cast<int64_t>(task.train.size()) + s.batch - 1) / s.batch;
    const int64_t total_steps = s.common.steps > 0 ? s.common.steps : s.common.epochs * batches_per_epoch;
    const CosineAnnealing schedule(s.lr, std::max<int64_t>(1, total_steps), s.lr * 0.05);
    const auto t0 = std::chrono::steady_clock::now();
    bool stop = s.common.eval_only || state.step >= total_steps || bad_epochs >= s.patience;
    FiniteGuard guard;  // stops the run at a non-finite loss or gradient, before the update
    for (int64_t epoch = state.epoch; !stop && epoch < s.common.epochs; ++epoch) {
        // the data order of epoch e depends only on (seed, e): a resumed run continues exactly
        Generator order(static_cast<uint64_t>(s.common.seed) * 1000003 + static_cast<uint64_t>(epoch));
        const std::vector<Batch> batches = make_batches(task.train, s.batch, &order);
        ProgressBar bar("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(s.common.epochs),
                        static_cast<int64_t>(batches.size()));
        double loss_sum = 0, window_loss = 0;
        int64_t done = 0, window_steps = 0;
        for (const Batch& batch : batches) {
            opt.set_lr(schedule.lr(std::min(state.step, total_steps)));
            // dropout's masks at step k depend only on (seed, k): a resumed run continues exactly
            gen = Generator(static_cast<uint64_t>(s.common.seed) * 7919 + static_cast<uint64_t>(state.step));
            opt.zero_grad();
            Var loss = model.loss(batch);  // teacher forcing, mean cross-entropy per target token
            loss.backward();
            guard.check(state.step, loss.item(), clip_grad_norm_(model.parameters(), s.clip));
            opt.step();
            ++state.step;
            loss_sum += loss.item();
            ++done;
            bar.update(done, {{"loss", loss_sum / static_cast<double>(done)}, {"lr", opt.lr()}});
            window_loss += loss.item();
            if (++window_steps == 25) {  // a point of the training curve
                metrics.write({{"step", state.step}, {"train_loss", window_loss / 25}});
                window_loss = 0;
                window_steps = 0;
            }
            if (state.step >= total_steps || (s.time_budget > 0 && seconds_since(t0) > s.time_budget)) break;
        }
        const double train_loss = loss_sum / static_cast<double>(std::max<int64_t>(1, done));
        const ErrorRates dev = score(task.dev, decode_all(model, task, task.dev, 1, s.length_penalty));
        bar.finish({{"loss", train_loss}, {"dev_wer", dev.wer()}, {"dev_per", dev.per()}});
        state.epoch = epoch + 1;
        const bool better = dev.wer() < best_dev;
        if (better) best_dev = dev.wer();
        bad_epochs = better ? 0 : bad_epochs + 1;
        metrics.write({{"epoch", state.epoch}, {"step", state.step}, {"epoch_train_loss", train_loss},
                       {"dev_wer", dev.wer()}, {"dev_per", dev.per()}, {"seconds", seconds_since(t0)}});
        state.extra = checkpoint_extra(task, model, best_dev, bad_epochs);
        if (s.common.save) {
            if (better) save_checkpoint(best_path, model, opt, state);
            save_checkpoint(last_path, model, opt, state);
        }
        stop = state.step >= total_steps || bad_epochs >= s.patience ||
               (s.time_budget > 0 && seconds_since(t0) > s.time_budget);
        if (bad_epochs >= s.patience) std::cerr << "early stop: no better dev error for " << s.patience << " epochs\n";
    }
    const double train_seconds = seconds_since(t0);
    if (s.common.save && std::filesystem::exists(best_path)) load_model(best_path, model);

    // ---- test ----
    const auto hyps = decode_all(model, task, task.test, s.beam, s.length_penalty);
    const ErrorRates test = score(task.test, hyps);
    const std::string sep = task.g2p ? " " : "";
    std::cout << "samples (input → output, * = wrong):\n";
    for (size_t i = 0; i < std::min<size_t>(task.test.size(), 10); ++i) {
        const bool ok = closest_reference(hyps[i], task.test[i].references).distance == 0;
        std::printf("  %-28s → %-24s %s\n", task.test[i].text.c_str(), join(hyps[i], sep).c_str(), ok ? "" : "*");
    }
    std::printf("test: %lld items, exact %.4f, WER %.4f, PER %.4f (%s)\n", static_cast<long long>(test.words),
                1 - test.wer(), test.wer(), test.per(), s.beam > 1 ? ("beam " + std::to_string(s.beam)).c_str() : "greedy");
    write_seq2seq_report(s.common.out, task, model, dir, test, train_seconds, s.beam);

    Json result = Json::object({{"example", "seq2seq"}, {"data", task.name}, {"test_exact", 1 - test.wer()},
                                {"test_wer", test.wer()}, {"test_per", test.per()}, {"train_seconds", train_seconds},
                                {"params", model.num_parameters()}, {"model", model.config().str()}, {"epochs", state.epoch}, {"steps", state.step}});
    Json settings = Json::object();
    for (const auto& [name, value] : flags.values()) settings.as_object().emplace_back(name, Json(value));
    result.as_object().emplace_back("settings", settings);
    std::cout << "RESULT " << result.dump() << std::endl;
    return 0;
} catch (const std::exception& e) {
    std::cerr << "seq2seq: " << e.what() << "\n";
    return 1;
}
