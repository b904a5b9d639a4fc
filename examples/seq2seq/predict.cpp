#include "examples/seq2seq/predict.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <cstdio>
#include <iostream>
#include <memory>
#include <stdexcept>

#include "examples/common/data_file.hpp"
#include "examples/common/svg.hpp"
#include "examples/common/terminal_view.hpp"
#include "examples/seq2seq/ensemble.hpp"
#include "examples/seq2seq/report.hpp"
#include "examples/seq2seq/task.hpp"
#include "io/checkpoint.hpp"
#include "io/safetensors.hpp"

namespace attn::seq2seq {

// The metadata that sets the model's sizes (named when they do not fit in memory).
const char* const kSizeKeys = "\"seq2seq.config\" and the vocabularies";

// ---- the setup in a file's metadata --------------------------------------------------------

void save_setup(const Seq2SeqSetup& s, std::map<std::string, std::string>& m) {
    // the symbols after the four reserved ones, one a line
    auto lines = [](const Vocab& v) {
        std::string text;
        for (int64_t i = 4; i < v.size(); ++i) text += v.symbol(i) + "\n";
        return text;
    };
    m["seq2seq.config"] = s.model == "transformer" ? s.transformer.str() : s.config.str();
    m["seq2seq.task"] = s.g2p ? "g2p" : "dates";
    m["seq2seq.source_vocab"] = lines(s.source_vocab);
    m["seq2seq.target_vocab"] = lines(s.target_vocab);
}

Seq2SeqSetup load_setup(const std::map<std::string, std::string>& m, const std::string& path) {
    auto get = [&](const std::string& key) -> const std::string& {
        const auto it = m.find(key);
        if (it == m.end()) throw std::runtime_error(path + ": not a seq2seq checkpoint (no " + key + ")");
        return it->second;
    };
    auto vocab = [&](const std::string& key) {
        Vocab v;
        const std::string& text = get(key);
        for (size_t start = 0, nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
            v.add(text.substr(start, nl - start));
        return v;
    };
    Seq2SeqSetup s;
    const std::string& config = get("seq2seq.config");
    if (config.rfind("model=transformer", 0) == 0) {
        s.model = "transformer";
        s.transformer = TransformerConfig::parse(config);
    } else {
        s.config = ModelConfig::parse(config);
    }
    s.g2p = get("seq2seq.task") == "g2p";
    s.source_vocab = vocab("seq2seq.source_vocab");
    s.target_vocab = vocab("seq2seq.target_vocab");
    return s;
}

std::unique_ptr<Translator> make_model(const Seq2SeqSetup& setup, Generator& gen) {
    if (setup.model == "transformer") return std::make_unique<TransformerSeq2Seq>(setup.transformer, gen);
    if (setup.model != "rnn")
        throw std::invalid_argument("seq2seq: --model must be rnn or transformer, got '" + setup.model + "'");
    return std::make_unique<Seq2SeqModel>(setup.config, gen);
}

void check_checkpoint_direction(const std::string& path, bool right_to_left, const std::string& flag) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return;  // the loop says what is missing
    const Seq2SeqSetup saved = load_setup(load_safetensors(path).metadata, path);
    const bool saved_rtl = saved.model == "transformer" ? saved.transformer.right_to_left : saved.config.right_to_left;
    if (saved_rtl != right_to_left)
        throw std::invalid_argument(flag + ": " + path + " holds a model trained " +
                                    (saved_rtl ? "--right-to-left; give --right-to-left too"
                                               : "left to right; leave out --right-to-left") +
                                    " (the weights would load, and every answer would come out backwards)");
}

namespace {

// The model of a model file or checkpoint, in evaluation mode. `gen` only
// initialises the weights the file then replaces (and would draw dropout's
// masks, which evaluation never does); it must outlive the model.
std::unique_ptr<Translator> load_trained(const std::string& path, Seq2SeqSetup& setup, Generator& gen) {
    setup = load_setup(load_safetensors(path).metadata, path);
    auto model = model_of_file(path, kSizeKeys, [&] { return make_model(setup, gen); });
    load_model(path, *model);
    model->eval();
    return model;
}

}  // namespace

std::unique_ptr<Translator> load_models(const std::vector<std::string>& paths, Seq2SeqSetup& setup) {
    if (paths.empty()) throw std::invalid_argument("seq2seq: no model to load");
    std::vector<Ensemble::Member> members;
    for (const std::string& path : paths) {
        Seq2SeqSetup own;
        auto gen = std::make_unique<Generator>(0);
        auto model = load_trained(path, own, *gen);
        if (members.empty()) {
            setup = own;
        } else if (own.g2p != setup.g2p || own.source_vocab.symbols() != setup.source_vocab.symbols() ||
                   own.target_vocab.symbols() != setup.target_vocab.symbols()) {
            throw std::runtime_error("seq2seq --ensemble: " + path + " was trained on another task or vocabulary than " +
                                     paths[0] + "; an ensemble's models must share both vocabularies");
        }
        members.push_back({std::move(gen), std::move(model)});
    }
    auto ensemble = std::make_unique<Ensemble>(std::move(members));
    ensemble->eval();
    return ensemble;
}

// ---- --predict -----------------------------------------------------------------------------------

std::vector<std::string> prediction_warnings(const std::string& text, const std::vector<int64_t>& ids,
                                             const Seq2SeqSetup& setup, double probability) {
    std::vector<std::string> warnings;
    const std::vector<std::string> symbols = source_symbols(text, setup.g2p);
    std::string unknown;
    for (size_t i = 0; i < ids.size() && i < symbols.size(); ++i)
        if (ids[i] == kUnk && unknown.find("'" + symbols[i] + "'") == std::string::npos)
            unknown += (unknown.empty() ? "" : ", ") + ("'" + symbols[i] + "'");
    if (!unknown.empty())
        warnings.push_back("the training data never held " + unknown + ": the model reads it as an unknown symbol");
    if (!setup.g2p) {
        // The runs of digits: a four-digit one is a year.
        bool any_number = false;
        for (size_t i = 0; i < text.size();) {
            if (!std::isdigit(static_cast<unsigned char>(text[i]))) {
                ++i;
                continue;
            }
            size_t j = i;
            while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
            any_number = true;
            if (j - i == 4) {
                const int year = std::stoi(text.substr(i, 4));
                if (year < kFirstYear || year > kLastYear)
                    warnings.push_back("the year " + std::to_string(year) + " lies outside the years the model was " +
                                       "trained on (" + std::to_string(kFirstYear) + "–" + std::to_string(kLastYear) +
                                       "): it has never written it, and its answer is a guess");
            }
            i = j;
        }
        if (!any_number)
            warnings.push_back("the input holds no number, and every date the model was trained on had its day and "
                               "year in digits: the answer is a guess");
    }
    if (probability < 0.5) {
        char p[32];
        std::snprintf(p, sizeof p, "%.2g", probability);
        warnings.push_back(std::string("the model gives its own answer a probability of only ") + p);
    }
    return warnings;
}

std::vector<int64_t> predict_source_ids(const std::string& text, size_t k, const Seq2SeqSetup& setup) {
    const std::vector<std::string> symbols = source_symbols(text, setup.g2p);
    // An empty input once decoded a guess from nothing, with warnings that
    // named no input ("warning: : ..."); docclass refuses one the same way.
    if (symbols.empty())
        throw std::invalid_argument("--predict: input " + std::to_string(k + 1) + " is empty (nothing to " +
                                    (setup.g2p ? "pronounce" : "normalise") + ")");
    if (symbols.size() > kMaxPredictSymbols)
        throw std::invalid_argument("--predict: input " + std::to_string(k + 1) + " has " +
                                    std::to_string(symbols.size()) + " symbols; at most " +
                                    std::to_string(kMaxPredictSymbols) +
                                    " are decoded (the answer grows with the input, each symbol attending over all "
                                    "of it; the model was trained on inputs of a few dozen)");
    return setup.source_vocab.encode(symbols);
}

int predict_transliterations(const Seq2SeqPredictOptions& o) {
    Seq2SeqSetup setup;
    Generator gen(0);
    const auto model = o.ensemble.empty() ? load_trained(o.checkpoint, setup, gen) : load_models(o.ensemble, setup);
    const std::vector<std::string> inputs = arguments_or_stdin_lines(o.inputs);
    // On a terminal (or with --show) each answer comes with what the decoder
    // attended to while writing it: one row per output symbol.
    const bool draw = o.show || stdout_is_terminal();
    for (size_t k = 0; k < inputs.size(); ++k) {
        const std::string& text = inputs[k];
        const auto ids = predict_source_ids(text, k, setup);
        const auto hyp = model->best_output(ids, std::max<int64_t>(1, o.beam), o.length_penalty);
        const std::string answer = join(setup.target_vocab.decode(hyp.tokens), setup.g2p ? " " : "");
        // The answer's probability under the model: the product of each
        // symbol's, </s> included (beam search's score before its length
        // penalty). An ensemble of both directions has no one distribution:
        // its answer comes with the geometric mean of its models'
        // probabilities of it (ensemble.hpp), and says so.
        const double probability = std::exp(hyp.log_prob);
        char shown[32];
        std::snprintf(shown, sizeof shown, "%.3f", probability);
        std::cout << text << "\t" << answer << "\tprobability "
                  << (model->decodes_stepwise() ? "" : "(the models' geometric mean) ") << shown << "\n";
        for (const std::string& w : prediction_warnings(text, ids, setup, probability))
            std::cerr << "warning: " << text << ": " << w << "\n";
        if (!draw && o.svg.empty()) continue;
        const AlignmentPicture p = alignment_picture(hyp, ids, setup.source_vocab, setup.target_vocab);
        if (draw) std::cout << heatmap_text(p.weights, p.rows, p.cols, {.colour = colour_terminal()}) << "\n";
        if (!o.svg.empty()) {
            const std::string svg_path = numbered_path(o.svg, k, inputs.size());
            write_svg(svg_path, heatmap_svg(p.weights, p.rows, p.cols,
                                            {.title = text + " → " + answer, .x_label = "input", .y_label = "output",
                                             .cell_size = 18}));
            std::cerr << "wrote " << svg_path << "\n";
        }
    }
    return 0;
}

// ---- --dump-reference ------------------------------------------------------------------------------

void dump_seq2seq_reference(const std::string& model_path, const std::string& out_path) {
    Seq2SeqSetup setup;
    Generator gen(0);
    const auto model = load_trained(model_path, setup, gen);
    // Four sources of different lengths, so that the batch has padding that
    // the encoder's lengths and the attention's mask must hide.
    const std::vector<std::string> texts =
        setup.g2p ? std::vector<std::string>{"attention", "a", "checkpoint", "torch"}
                  : std::vector<std::string>{"Sunday, Nov 22 2026", "22.11.26", "march 3rd, 1999", "4 July 1776"};
    std::vector<Pair> pairs;
    std::vector<size_t> index;
    for (const std::string& text : texts) {
        index.push_back(pairs.size());
        pairs.push_back({setup.source_vocab.encode(source_symbols(text, setup.g2p)), {}});
    }
    NoGradGuard no_grad;
    // Each source teacher-forced with the model's own greedy output: the
    // decoder inputs it would meet in --predict.
    const Batch sources = make_batch(pairs, index);
    const std::vector<Hypothesis> greedy = greedy_decode(*model, sources.source, sources.source_lengths);
    for (size_t i = 0; i < pairs.size(); ++i) pairs[i].target = greedy[i].tokens;
    const Batch batch = make_batch(pairs, index);
    Tensor attention;
    const Var logits = model->forward(batch, &attention);  // B×T×V, α B×T×n

    Tensor lengths = Tensor::empty(Shape{static_cast<int64_t>(texts.size())});
    for (size_t i = 0; i < texts.size(); ++i) lengths[static_cast<int64_t>(i)] = static_cast<real>(batch.source_lengths[i]);
    save_safetensors(out_path,
                     {{"input.source", batch.source},
                      {"input.lengths", lengths},
                      {"input.target_in", batch.target_in},
                      {"output.logits", logits.value()},
                      {"output.attention", attention}},
                     {{"example", "seq2seq"}, {"model", model_path}});
}

}  // namespace attn::seq2seq
