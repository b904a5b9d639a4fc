// docclass: document classification with a hierarchical attention network
// (Yang et al., 2016) and the paper's baselines.
//
//   build/examples/docclass                          HAN on the built-in needle corpus
//   build/examples/docclass --model flat             a flat bi-GRU with attention
//   build/examples/docclass --data fortunes          Debian's fortunes by category (make data)
//   build/examples/docclass --data reviews.tsv       any label<TAB>text file
//   build/examples/docclass --predict "some text"    classify it with out/docclass/best.safetensors
//   build/examples/docclass --dump-reference r.safetensors   out/docclass/model.safetensors on fixed
//                                                    inputs, for python/check_torch.py
//
// The last line on stdout is RESULT {json}, with the keys every trainer's has;
// its "test" holds acc, macro_f1 and key_sentence_precision (needle corpus,
// attention models). docs/examples/docclass.md.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <new>
#include <numeric>
#include <sstream>

#include "autograd/ops.hpp"
#include "examples/docclass/docclass_data.hpp"
#include "examples/docclass/docclass_models.hpp"
#include "examples/common/flags.hpp"
#include "examples/common/training_loop.hpp"
#include "examples/docclass/evaluate.hpp"
#include "examples/docclass/predict.hpp"
#include "io/checkpoint.hpp"
#include "nn/loss.hpp"
#include "nn/optim.hpp"
#include "tensor/parallel.hpp"

using namespace attn;

namespace {

// --data needle | fortunes | DIR (fortune files) | FILE.tsv
Corpus load_corpus(const std::string& data, int64_t needle_train, int64_t fortune_classes) {
    if (data == "needle") {
        NeedleOptions o;
        o.train = needle_train;
        return make_needle_corpus(o);  // fixed seed: every run and model sees the same corpus
    }
    if (data == "fortunes") {
        for (const char* dir : {"data/fortunes", "/usr/share/games/fortunes"})
            if (std::filesystem::is_directory(dir)) return load_fortunes_corpus(dir, fortune_classes);
        throw std::runtime_error("--data fortunes: no data/fortunes (run `make data`) and no /usr/share/games/fortunes");
    }
    if (std::filesystem::is_directory(data)) return load_fortunes_corpus(data, fortune_classes);
    return load_tsv_corpus(data);
}

std::vector<int64_t> shuffled(int64_t n, Generator& gen) {
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), int64_t{0});
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[gen.randint(i)]);
    return order;
}

// Every setting of a run, with its default; declare_flags ties each to its flag.
struct Settings {
    CommonFlags common{.data = "needle", .epochs = 0};
    std::string model_name = "han";
    int64_t batch_size = 32, max_sentences = 8, max_words = 16, vocab_size = 20000, min_count = 0;
    int64_t embed = 200, hidden = 50, attention_dim = 100, needle_train = 2000, fortune_classes = 10, examples = 4;
    double lr = 0, clip = 5;  // clip 0: only measure the gradient norm
    PredictFlags predict;     // --predict --checkpoint --svg --show --dump-reference
};

// The flags, each writing into Settings (FlagParser checks the ranges and
// prints --help from these lines).
void declare_flags(FlagParser& flags, Settings& s) {
    flags.add_common(s.common, "needle (built in) | fortunes (make data) | a directory of fortune files | a label<TAB>text file");
    flags.describe_default("--epochs", "the task's: 4 needle, 10 fortunes and files, 60 --model bow");
    flags.add("--model", &s.model_name, "han | hn-ave | hn-max | flat | bow");
    flags.add("--batch", &s.batch_size, "documents per batch", 1, 65536);
    flags.add("--max-sentences", &s.max_sentences, "sentences kept per document (longer documents are cut)", 1);
    flags.add("--max-words", &s.max_words, "words kept per sentence", 1);
    flags.add("--vocab-size", &s.vocab_size, "largest vocabulary, <pad> and <unk> included", 3);
    flags.add("--min-count", &s.min_count, "least count of a word in the training set (0: 1 on needle, 2 otherwise)", 0);
    flags.add("--embedding", &s.embed, "word embedding width", 1, kMaxWidth);
    flags.add("--hidden", &s.hidden, "GRU hidden size per direction (word and sentence)", 1, kMaxWidth);
    flags.add("--attention-dim", &s.attention_dim, "attention width (word and sentence)", 1, kMaxWidth);
    flags.add("--lr", &s.lr, "Adam learning rate (0: 2e-3, or 2e-2 for bow)", 0);
    flags.add("--clip", &s.clip, "gradient-norm clipping (0: none)", 0);
    flags.add("--needle-train", &s.needle_train, "training documents of the needle corpus", 1);
    flags.add("--fortune-classes", &s.fortune_classes, "the largest fortune categories used as classes", 2);
    flags.add("--examples", &s.examples, "highlighted test documents in the report", 0);
    flags.add_predict(s.predict, "classify the arguments (or stdin lines)");
}

// ---- test, with the best model on the validation set --------------------------
// Prints the test scores, writes the report, and ends with the RESULT line.
void test_and_report(const Settings& s, const Corpus& corpus, const Vocabulary& vocab, DocModel& model,
                     const LoopResult& trained, const std::string& dir, const FlagParser& flags, int argc,
                     char** argv) {
    const auto C = static_cast<int64_t>(corpus.class_names.size());
    const Evaluation test = evaluate(model, corpus.test, C, vocab, s.max_sentences, s.max_words, 64);
    std::fprintf(stderr, "test: accuracy %.4f  macro-F1 %.4f", test.confusion.accuracy(), test.confusion.macro_f1());
    if (test.key_total > 0) std::fprintf(stderr, "  key-sentence precision %.4f", test.key_sentence_precision());
    std::fprintf(stderr, "  (%zu documents)\n", corpus.test.size());

    std::ostringstream command;
    command << "build/examples/docclass";
    for (int i = 1; i < argc; ++i) command << ' ' << argv[i];
    write_docclass_report({.out = s.common.out, .data_name = s.common.data, .model_name = s.model_name,
                           .command = command.str(), .corpus = &corpus, .test = &test,
                           .metrics_path = dir + "/metrics.jsonl", .examples = s.examples,
                           .max_sentences = s.max_sentences, .max_words = s.max_words, .train_seconds = trained.train_seconds,
                           .params = model.num_parameters()});

    const bool needle = s.common.data == "needle";
    Json test_json = Json::object({{"acc", test.confusion.accuracy()}, {"macro_f1", test.confusion.macro_f1()}});
    if (test.key_total > 0) test_json.set("key_sentence_precision", test.key_sentence_precision());
    else if (needle) test_json.set("key_sentence_precision", Json());  // a model without attention
    test_json.set("documents", static_cast<int64_t>(corpus.test.size()));
    std::cout << "RESULT "
              << result_json("docclass", s.common.data, s.model_name, test_json, trained, model.num_parameters(), flags).dump()
              << std::endl;
}

}  // namespace

// The flags whose values set how much memory a run takes (named when it
// needs more than the machine has).
constexpr const char* kDocclassSizeFlags = "--batch, --embedding, --hidden, --attention-dim";

int main(int argc, char** argv) try {
    Settings s;
    FlagParser flags("docclass", "Trains a hierarchical attention network (or a baseline) to classify documents.");
    declare_flags(flags, s);
    if (!flags.parse(argc, argv)) return 0;
    if (s.common.threads > 0) set_num_threads(static_cast<int>(s.common.threads));
    if (!s.predict.dump_reference.empty()) {
        dump_docclass_reference(s.predict.checkpoint_or_model(s.common, "docclass"), s.predict.dump_reference);
        std::cerr << "wrote " << s.predict.dump_reference << "\n";
        return 0;
    }
    if (s.predict.on) {
        const int status = predict_documents({.checkpoint = s.predict.checkpoint_or_best(s.common, "docclass"),
                                               .inputs = flags.positional(), .svg = s.predict.svg,
                                               .show = s.predict.show});
        check_standard_output("the predictions");
        return status;
    }
    flags.refuse_positional("inputs on the command line are read only with --predict");
    const bool needle = s.common.data == "needle";
    if (s.common.epochs <= 0) s.common.epochs = s.model_name == "bow" ? 60 : needle ? 4 : 10;  // bow is cheap but slow to fit
    if (s.min_count <= 0) s.min_count = needle ? 1 : 2;
    if (s.lr <= 0) s.lr = s.model_name == "bow" ? 2e-2 : 2e-3;
    std::cerr << "seed " << s.common.seed << "\n";

    // ---- data -------------------------------------------------------------------
    const Corpus corpus = load_corpus(s.common.data, s.needle_train, s.fortune_classes);
    const Vocabulary vocab = Vocabulary::build(corpus.train, s.min_count, s.vocab_size);
    const auto C = static_cast<int64_t>(corpus.class_names.size());
    std::cerr << "data " << s.common.data << ": " << corpus.train.size() << " train, " << corpus.valid.size()
              << " valid, " << corpus.test.size() << " test documents, " << C << " classes, vocabulary "
              << vocab.size() << "\n";

    // ---- model ------------------------------------------------------------------
    Generator gen(static_cast<uint64_t>(s.common.seed));
    const DocModelConfig config{.vocab_size = vocab.size(), .embed_dim = s.embed, .word_hidden = s.hidden,
                                .word_attention = s.attention_dim, .sentence_hidden = s.hidden,
                                .sentence_attention = s.attention_dim, .num_classes = C};
    std::unique_ptr<DocModel> model = make_doc_model(s.model_name, config, gen);
    model->set_fast(s.common.fast);  // the readable layers unless --fast
    Adam optimizer(model->named_parameters(), {.lr = s.lr, .fast = s.common.fast});
    optimizer.set_average(s.common.ema);  // --ema: the loop validates and keeps the average
    std::cerr << "model " << s.model_name << ": " << model->num_parameters() << " parameters, Adam lr " << s.lr << "\n"
              << kernels_line(s.common.fast, "1.8×", "needle") << "\n";

    // ---- training: the shared loop, with this task's batches, loss and validation ----
    const int64_t batches = (static_cast<int64_t>(corpus.train.size()) + s.batch_size - 1) / s.batch_size;
    std::vector<int64_t> order;
    TrainerParts parts;
    parts.begin_epoch = [&](int64_t epoch) {
        // This epoch's order, from (seed, epoch): a resumed run repeats it.
        Generator shuffle(static_cast<uint64_t>(s.common.seed) * 1000003u + static_cast<uint64_t>(epoch));
        order = shuffled(static_cast<int64_t>(corpus.train.size()), shuffle);
        return batches;
    };
    parts.step = [&](int64_t, int64_t b, int64_t) {
        const auto first = order.begin() + b * s.batch_size;
        const std::vector<int64_t> idx(first, first + std::min(s.batch_size, static_cast<int64_t>(order.end() - first)));
        const DocBatch batch = make_doc_batch(corpus.train, idx, vocab, s.max_sentences, s.max_words);
        const DocOutput out = model->forward(batch);
        // the epoch's loss is the mean per document: weigh each batch by its size
        return StepLoss{loss::cross_entropy(out.logits, batch.labels, {.fast = model->is_fast()}),
                        static_cast<double>(idx.size())};
    };
    parts.validate = [&] {
        const Evaluation valid = evaluate(*model, corpus.valid, C, vocab, s.max_sentences, s.max_words, 64);
        Validation v{.score = valid.confusion.accuracy(),
                     .record = Json::object({{"valid_loss", valid.loss}, {"valid_acc", valid.confusion.accuracy()},
                                             {"valid_macro_f1", valid.confusion.macro_f1()}}),
                     .shown = {{"valid_acc", valid.confusion.accuracy()}}};
        if (valid.key_total > 0) {
            v.record.set("valid_key_sentence_precision", valid.key_sentence_precision());
            v.shown.push_back({"valid_key", valid.key_sentence_precision()});
        }
        return v;
    };
    // what --predict needs besides the weights, in model.safetensors and every checkpoint
    const DocclassSetup setup{.model_name = s.model_name, .config = config, .vocab = vocab,
                              .class_names = corpus.class_names, .max_sentences = s.max_sentences, .max_words = s.max_words};
    parts.model_metadata = [&](std::map<std::string, std::string>& metadata) { save_setup(setup, metadata); };
    LoopOptions options = loop_options(s.common, "docclass");
    options.clip = s.clip;
    parts.learning_rate = learning_rate_schedule(s.common.schedule, s.lr, s.common.epochs * batches, s.common.warmup);
    const LoopResult trained = train_loop(options, *model, optimizer, parts);

    test_and_report(s, corpus, vocab, *model, trained, options.dir, flags, argc, argv);
    check_standard_output("the results");
    return 0;
} catch (const std::bad_alloc&) {
    std::cerr << out_of_memory_message("docclass", kDocclassSizeFlags, "") << "\n";
    return 1;
} catch (const std::length_error& e) {  // the allocator's refusal, with the bytes, or a shape too large to count
    std::cerr << out_of_memory_message("docclass", kDocclassSizeFlags, e.what()) << "\n";
    return 1;
} catch (const std::exception& e) {
    std::cerr << error_message("docclass", e.what()) << "\n";
    return 1;
}
