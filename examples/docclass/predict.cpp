#include "examples/docclass/predict.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "autograd/ops.hpp"
#include "examples/common/data_file.hpp"
#include "examples/common/svg.hpp"
#include "examples/common/terminal_view.hpp"
#include "io/checkpoint.hpp"
#include "io/safetensors.hpp"
#include "tensor/ops.hpp"

namespace attn {

// The metadata that sets the model's sizes (named when they do not fit in memory).
const char* const kSizeKeys = "\"docclass.sizes\" and \"docclass.vocabulary\"";

namespace {

std::string lines(const std::vector<std::string>& items) {
    std::string s;
    for (const std::string& item : items) s += item + "\n";
    return s;
}

std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> out;
    for (size_t start = 0, nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
        out.push_back(text.substr(start, nl - start));
    return out;
}

}  // namespace

void save_setup(const DocclassSetup& s, std::map<std::string, std::string>& m) {
    m["docclass.model"] = s.model_name;
    m["docclass.vocabulary"] = lines(s.vocab.words());
    m["docclass.classes"] = lines(s.class_names);
    const DocModelConfig& c = s.config;
    m["docclass.sizes"] = std::to_string(c.embed_dim) + " " + std::to_string(c.word_hidden) + " " +
                          std::to_string(c.word_attention) + " " + std::to_string(c.sentence_hidden) + " " +
                          std::to_string(c.sentence_attention) + " " + std::to_string(s.max_sentences) + " " +
                          std::to_string(s.max_words);
}

DocclassSetup load_setup(const std::map<std::string, std::string>& m, const std::string& path) {
    auto get = [&](const std::string& key) -> const std::string& {
        const auto it = m.find(key);
        if (it == m.end())
            throw std::runtime_error(path + ": not a docclass checkpoint (metadata \"" + key +
                                     "\" is missing; it is written by docclass training)");
        return it->second;
    };
    DocclassSetup s;
    s.model_name = get("docclass.model");
    s.vocab = Vocabulary::from_words(split_lines(get("docclass.vocabulary")));
    s.class_names = split_lines(get("docclass.classes"));
    std::istringstream sizes(get("docclass.sizes"));
    DocModelConfig& c = s.config;
    std::string rest;
    if (!(sizes >> c.embed_dim >> c.word_hidden >> c.word_attention >> c.sentence_hidden >> c.sentence_attention >>
          s.max_sentences >> s.max_words) ||
        (sizes >> rest) || std::min({c.embed_dim, c.word_hidden, c.word_attention, c.sentence_hidden,
                                     c.sentence_attention, s.max_sentences, s.max_words}) < 1)
        throw std::runtime_error(path + ": metadata \"docclass.sizes\" = \"" + get("docclass.sizes") +
                                 "\" is not seven positive whole numbers");
    if (s.class_names.size() < 2) throw std::runtime_error(path + ": metadata \"docclass.classes\" names fewer than 2 classes");
    c.vocab_size = s.vocab.size();
    c.num_classes = static_cast<int64_t>(s.class_names.size());
    return s;
}

Prediction classify(DocModel& model, const DocclassSetup& setup, const std::string& text) {
    Document doc;
    doc.sentences = split_sentences(text);
    if (doc.sentences.empty()) throw std::invalid_argument("--predict: the text has no words: '" + text + "'");
    const DocBatch batch = make_doc_batch({doc}, {0}, setup.vocab, setup.max_sentences, setup.max_words);
    NoGradGuard no_grad;
    model.eval();
    const DocOutput out = model.forward(batch);
    const Tensor probs = softmax(out.logits.value(), 1);

    Prediction p;
    const int64_t C = probs.size(1), S = batch.ids.size(1), W = batch.ids.size(2);
    for (int64_t c = 0; c < C; ++c) p.probabilities.push_back(probs[c]);
    p.label = std::max_element(p.probabilities.begin(), p.probabilities.end()) - p.probabilities.begin();
    for (int64_t s = 0; s < S; ++s) {
        const int64_t n = batch.word_lengths[static_cast<size_t>(s)];
        const Sentence& words = doc.sentences[static_cast<size_t>(s)];
        p.sentences.emplace_back(words.begin(), words.begin() + n);
        if (!out.sentence_weights.defined()) continue;
        p.sentence_weights.push_back(out.sentence_weights[s]);
        std::vector<double> ww;
        for (int64_t w = 0; w < n; ++w) ww.push_back(out.word_weights[s * W + w]);
        p.word_weights.push_back(ww);
    }
    return p;
}

namespace {

// Class indices, the most probable first.
std::vector<size_t> ranked(const std::vector<double>& probabilities) {
    std::vector<size_t> order(probabilities.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return probabilities[a] > probabilities[b]; });
    return order;
}

std::string fixed(double x, int digits) {
    char text[32];
    std::snprintf(text, sizeof text, "%.*f", digits, x);
    return text;
}

}  // namespace

std::string prediction_text(const Prediction& p, const std::vector<std::string>& class_names, bool colour) {
    std::ostringstream os;
    const std::vector<size_t> order = ranked(p.probabilities);
    os << "label: " << class_names[order[0]] << "  (";
    for (size_t i = 0; i < std::min<size_t>(order.size(), 3); ++i)
        os << (i ? ", " : "") << class_names[order[i]] << " " << fixed(p.probabilities[order[i]], 3);
    os << ")\n";
    if (p.sentence_weights.empty()) {
        os << "  (this model has no attention to show)\n";
        return os.str();
    }
    for (size_t s = 0; s < p.sentences.size(); ++s) {
        const double sw = p.sentence_weights[s];
        // the sentence's weight as a bar of up to 10 blocks, then its words
        const auto blocks = static_cast<size_t>(std::lround(std::clamp(sw, 0.0, 1.0) * 10));
        std::string bar;
        for (size_t i = 0; i < 10; ++i) bar += i < blocks ? "█" : "·";
        os << "  " << fixed(sw, 3) << " " << bar << "  " << shaded_words(p.sentences[s], p.word_weights[s], {.colour = colour})
           << "\n";
    }
    return os.str();
}

std::string prediction_svg(const Prediction& p, const std::vector<std::string>& class_names, const std::string& title) {
    // A monospace font of 13 px is about 7.8 px a character: enough to lay the words out without measuring them.
    const double char_w = 7.8, line_h = 24, bar_w = 80, left = 12 + bar_w + 52;
    const std::vector<size_t> order = ranked(p.probabilities);
    std::vector<std::string> body;
    double width = 480, y = 56;
    for (size_t s = 0; s < p.sentences.size(); ++s, y += line_h) {
        const double sw = p.sentence_weights.empty() ? 0 : p.sentence_weights[s];
        std::ostringstream row;
        row << "<rect x=\"12\" y=\"" << y - 13 << "\" width=\"" << bar_w << "\" height=\"16\" fill=\"#eee\"/>"
            << "<rect class=\"sentence\" x=\"12\" y=\"" << y - 13 << "\" width=\"" << bar_w * std::clamp(sw, 0.0, 1.0)
            << "\" height=\"16\" fill=\"#1f77b4\"><title>sentence " << s + 1 << ": weight " << fixed(sw, 3)
            << "</title></rect>"
            << "<text x=\"" << 16 + bar_w << "\" y=\"" << y << "\">" << fixed(sw, 2) << "</text>";
        double x = left;
        for (size_t w = 0; w < p.sentences[s].size(); ++w) {
            const std::string& word = p.sentences[s][w];
            const double ww = p.word_weights.empty() ? 0 : p.word_weights[s][w];
            const double box = char_w * static_cast<double>(word.size()) + 6;
            // a word counts only as much as its sentence does: opacity = word weight × sentence weight, rescaled
            const double shade = std::clamp(std::sqrt(std::max(0.0, ww * sw)), 0.0, 1.0);
            row << "<rect class=\"word\" x=\"" << x - 3 << "\" y=\"" << y - 14 << "\" width=\"" << box
                << "\" height=\"19\" fill=\"#d62728\" fill-opacity=\"" << fixed(shade, 3) << "\"><title>"
                << xml_escape(word) << ": word " << fixed(ww, 3) << ", sentence " << fixed(sw, 3) << "</title></rect>"
                << "<text x=\"" << x << "\" y=\"" << y << "\">" << xml_escape(word) << "</text>";
            x += box + 2;
        }
        width = std::max(width, x + 12);
        body.push_back(row.str());
    }
    const std::string legend = "label: " + class_names[order[0]] + " (" + fixed(p.probabilities[order[0]], 3) +
                               "); bar: sentence weight; shade: word weight × sentence weight";
    width = std::max({width, 24 + char_w * static_cast<double>(legend.size()), 24 + char_w * static_cast<double>(title.size())});
    std::ostringstream os;
    os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << y + 8
       << "\" font-family=\"monospace\" font-size=\"13\">"
       << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>"
       << "<text x=\"12\" y=\"20\" font-weight=\"bold\">" << xml_escape(title) << "</text>"
       << "<text x=\"12\" y=\"38\">" << xml_escape(legend) << "</text>";
    for (const std::string& row : body) os << row;
    os << "</svg>\n";
    return os.str();
}

int predict_documents(const PredictOptions& o) {
    const SafetensorsFile file = load_safetensors(o.checkpoint);
    const DocclassSetup setup = load_setup(file.metadata, o.checkpoint);
    Generator gen(0);
    std::unique_ptr<DocModel> model =
        model_of_file(o.checkpoint, kSizeKeys, [&] { return make_doc_model(setup.model_name, setup.config, gen); });
    load_model(o.checkpoint, *model);
    const std::vector<std::string> inputs = arguments_or_stdin_lines(o.inputs);
    const bool draw = o.show || stdout_is_terminal();
    for (size_t k = 0; k < inputs.size(); ++k) {
        const Prediction p = classify(*model, setup, inputs[k]);
        if (draw) {
            std::cout << prediction_text(p, setup.class_names, colour_terminal()) << "\n";
        } else {
            std::cout << inputs[k] << "\t" << setup.class_names[static_cast<size_t>(p.label)] << "\t"
                      << fixed(p.probabilities[static_cast<size_t>(p.label)], 4) << "\n";
        }
        if (!o.svg.empty()) {
            const std::string path = numbered_path(o.svg, k, inputs.size());
            std::string title = inputs[k];
            if (title.size() > 80) {  // cut at a character boundary, not inside a UTF-8 sequence
                size_t cut = 77;
                while (cut > 0 && (static_cast<unsigned char>(title[cut]) & 0xc0) == 0x80) --cut;
                title = title.substr(0, cut) + "...";
            }
            write_svg(path, prediction_svg(p, setup.class_names, title));
            std::cerr << "wrote " << path << "\n";
        }
    }
    return 0;
}


// ---- --dump-reference ------------------------------------------------------------------------------

void dump_docclass_reference(const std::string& model_path, const std::string& out_path) {
    const SafetensorsFile file = load_safetensors(model_path);
    const DocclassSetup setup = load_setup(file.metadata, model_path);
    Generator gen(0);
    std::unique_ptr<DocModel> model =
        model_of_file(model_path, kSizeKeys, [&] { return make_doc_model(setup.model_name, setup.config, gen); });
    load_model(model_path, *model);
    NoGradGuard no_grad;
    EvalMode eval(*model);

    // Words of the vocabulary, picked by a fixed stride so that every run
    // writes the same documents: the weights they meet are trained ones.
    const std::vector<std::string> words = setup.vocab.words();
    size_t next = 0;
    auto sentence = [&](int64_t n) {
        Sentence out;
        for (int64_t i = 0; i < n; ++i, next += 7) out.push_back(words.empty() ? "word" : words[next % words.size()]);
        return out;
    };
    const int64_t S = setup.max_sentences, W = setup.max_words;
    std::vector<Document> docs(3);
    // fewer sentences than the longest document, and sentences of different lengths: padding at both levels
    docs[0].sentences = {sentence(std::min<int64_t>(5, W)), sentence(std::min<int64_t>(2, W)), sentence(W)};
    // one short sentence with a word the vocabulary does not have (<unk>)
    docs[1].sentences = {sentence(std::min<int64_t>(3, W))};
    docs[1].sentences[0].push_back("zzz-not-a-word");
    // longer than the model reads: cut to max_sentences × max_words
    for (int64_t i = 0; i <= S; ++i) docs[2].sentences.push_back(sentence(i % 2 == 0 ? W + 2 : 1 + i % W));
    const DocBatch batch = make_doc_batch(docs, {0, 1, 2}, setup.vocab, S, W);
    const DocOutput out = model->forward(batch);

    StateDict tensors{{"input.ids", batch.ids},
                      {"input.word_mask", batch.word_mask},
                      {"input.sentence_mask", batch.sentence_mask},
                      {"output.logits", out.logits.value()}};
    if (out.word_weights.defined()) tensors.emplace_back("output.word_attention", out.word_weights);
    if (out.sentence_weights.defined()) tensors.emplace_back("output.sentence_attention", out.sentence_weights);
    save_safetensors(out_path, tensors,
                     {{"example", "docclass"}, {"docclass.model", setup.model_name}, {"model", model_path}});
}

}  // namespace attn
