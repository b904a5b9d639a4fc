#include "examples/caption/predict.hpp"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "autograd/ops.hpp"
#include "examples/common/data_file.hpp"
#include "examples/common/image.hpp"
#include "examples/common/svg.hpp"
#include "examples/common/terminal_view.hpp"
#include "io/checkpoint.hpp"
#include "io/safetensors.hpp"

namespace attn {

// The metadata that sets the model's sizes (named when they do not fit in memory).
const char* const kSizeKeys = "\"caption.config\"";

void save_setup(const CaptionSetup& s, std::map<std::string, std::string>& m) {
    const CaptionerConfig& c = s.config;
    std::ostringstream os;
    os.precision(17);
    os << "channels1=" << c.channels1 << " channels2=" << c.channels2 << " hidden=" << c.hidden
       << " embedding=" << c.embedding << " attention=" << c.attention << " vocab=" << c.vocab << " hard=" << c.hard
       << " gumbel=" << c.gumbel << " temperature=" << c.temperature << " soft_probability=" << c.soft_probability
       << " position_code=" << c.position_code << " hard_eval_expected=" << c.hard_eval_expected
       << " context_layers=" << c.context_layers << " height=" << s.height << " width=" << s.width
       << " max_length=" << s.max_length;
    m["caption.config"] = os.str();
    std::string words;
    for (const std::string& w : s.words) words += w + "\n";
    m["caption.vocab"] = words;
}

CaptionSetup load_caption_setup(const std::map<std::string, std::string>& m, const std::string& path) {
    auto get = [&](const std::string& key) -> const std::string& {
        const auto it = m.find(key);
        if (it == m.end())
            throw std::runtime_error(path + ": not a caption checkpoint (metadata \"" + key +
                                     "\" is missing; it is written by caption training)");
        return it->second;
    };
    // "key=value key=value ...": every key once, every value a finite number
    std::map<std::string, double> values;
    std::istringstream in(get("caption.config"));
    for (std::string item; in >> item;) {
        const size_t eq = item.find('=');
        char* end = nullptr;
        const double v = eq == std::string::npos ? 0 : std::strtod(item.c_str() + eq + 1, &end);
        if (eq == std::string::npos || eq + 1 == item.size() || *end != '\0' || !std::isfinite(v) ||
            !values.emplace(item.substr(0, eq), v).second)
            throw std::runtime_error(path + ": metadata \"caption.config\": '" + item + "' is not key=number (or repeats a key)");
    }
    auto number = [&](const char* key, double lo, double hi) {
        const auto it = values.find(key);
        if (it == values.end()) throw std::runtime_error(path + ": metadata \"caption.config\" has no " + key);
        if (!(it->second >= lo && it->second <= hi))
            throw std::runtime_error(path + ": metadata \"caption.config\": " + key + " is out of range");
        return it->second;
    };
    auto whole = [&](const char* key, double lo = 1) { return static_cast<int64_t>(number(key, lo, 1 << 20)); };
    CaptionSetup s;
    CaptionerConfig& c = s.config;
    c.channels1 = whole("channels1");
    c.channels2 = whole("channels2");
    c.hidden = whole("hidden");
    c.embedding = whole("embedding");
    c.attention = whole("attention");
    c.vocab = whole("vocab", 2);
    c.hard = number("hard", 0, 1) != 0;
    c.gumbel = number("gumbel", 0, 1) != 0;
    c.temperature = number("temperature", 1e-6, 1e6);
    c.soft_probability = number("soft_probability", 0, 1);
    c.position_code = number("position_code", 0, 1) != 0;
    c.hard_eval_expected = number("hard_eval_expected", 0, 1) != 0;
    c.context_layers = whole("context_layers", 0);
    s.height = whole("height", 4);
    s.width = whole("width", 4);
    s.max_length = whole("max_length");
    for (size_t start = 0, nl; (nl = get("caption.vocab").find('\n', start)) != std::string::npos; start = nl + 1)
        s.words.push_back(get("caption.vocab").substr(start, nl - start));
    if (static_cast<int64_t>(s.words.size()) > c.vocab || s.words.size() < 2)
        throw std::runtime_error(path + ": metadata \"caption.vocab\" does not fit the model's vocabulary");
    return s;
}

namespace {

// The terminal columns a line takes: its UTF-8 characters, not counting
// ANSI escape sequences (ESC ... m), which take none.
size_t columns_of(const std::string& line) {
    size_t cells = 0;
    for (size_t i = 0; i < line.size(); ++i) {
        if (line[i] == '\033') {
            while (i < line.size() && line[i] != 'm') ++i;
        } else if ((static_cast<unsigned char>(line[i]) & 0xc0) != 0x80) {
            ++cells;
        }
    }
    return cells;
}

}  // namespace

std::string maps_side_by_side(const std::vector<std::string>& words, const std::vector<std::string>& maps) {
    std::vector<std::vector<std::string>> columns;
    size_t rows = 0;
    for (const std::string& map : maps) {
        std::vector<std::string> lines;
        std::istringstream in(map);
        for (std::string line; std::getline(in, line);) lines.push_back(line);
        rows = std::max(rows, lines.size());
        columns.push_back(lines);
    }
    // each column is as wide as its map's first line or its word, whichever is wider
    std::vector<size_t> width(maps.size());
    for (size_t k = 0; k < maps.size(); ++k)
        width[k] = std::max(columns[k].empty() ? 0 : columns_of(columns[k][0]), columns_of(words[k]));
    std::ostringstream os;
    for (size_t k = 0; k < words.size(); ++k) os << words[k] << std::string(width[k] - columns_of(words[k]) + 2, ' ');
    os << "\n";
    for (size_t r = 0; r < rows; ++r) {
        for (size_t k = 0; k < maps.size(); ++k) {
            const std::string& line = r < columns[k].size() ? columns[k][r] : std::string();
            os << line << std::string(width[k] - std::min(width[k], columns_of(line)) + 2, ' ');
        }
        os << "\n";
    }
    return os.str();
}

namespace {

// The number after `attribute="` in an <svg> element.
double svg_size(const std::string& svg, const std::string& attribute) {
    const size_t at = svg.find(attribute + "=\"");
    return at == std::string::npos ? 0 : std::strtod(svg.c_str() + at + attribute.size() + 2, nullptr);
}

}  // namespace

int predict_captions(const CaptionPredictOptions& o) {
    if (o.images.empty()) throw std::invalid_argument("--predict: name one or more PGM or PNG files");
    // Before the model loads: `--predict ''` once said only ": cannot open".
    for (const std::string& image : o.images)
        if (image.empty()) throw std::invalid_argument("--predict: an empty path");
    const SafetensorsFile file = load_safetensors(o.checkpoint);
    const CaptionSetup setup = load_caption_setup(file.metadata, o.checkpoint);
    Generator gen(0);
    const auto built = model_of_file(o.checkpoint, kSizeKeys, [&] { return std::make_unique<Captioner>(setup.config, gen); });
    Captioner& model = *built;
    load_model(o.checkpoint, model);
    model.eval();
    const int64_t gh = setup.height / 4, gw = setup.width / 4;  // the attention grid
    const bool draw = o.show || stdout_is_terminal();
    const TextViewOptions view{.colour = colour_terminal()};
    Generator sampler(o.seed);

    for (size_t k = 0; k < o.images.size(); ++k) {
        Tensor image = resize_image(read_image(o.images[k]), setup.height, setup.width);
        if (o.invert)
            for (int64_t i = 0; i < image.numel(); ++i) image[i] = 1 - image[i];
        const Decoded d = greedy_decode(model, image.reshape(Shape{1, 1, setup.height, setup.width}), setup.max_length)[0];

        std::vector<std::string> words, maps, svgs;
        std::ostringstream notes;
        for (size_t t = 0; t < d.words.size(); ++t) {
            const auto id = static_cast<size_t>(d.words[t]);
            words.push_back(id < setup.words.size() ? setup.words[id] : "<" + std::to_string(id) + ">");
            Tensor alpha = Tensor::zeros(Shape{gh, gw});
            for (int64_t i = 0; i < gh * gw && i < static_cast<int64_t>(d.alphas[t].size()); ++i) alpha[i] = d.alphas[t][static_cast<size_t>(i)];
            maps.push_back(grid_text(alpha, view));
            if (!o.svg.empty()) svgs.push_back(attention_overlay_svg(image, alpha, {.title = words.back()}));
            if (setup.config.hard || setup.config.gumbel) {
                const std::vector<real>& a = d.alphas[t];
                const auto best = static_cast<int64_t>(std::max_element(a.begin(), a.end()) - a.begin());
                notes << "  " << words.back() << ": location (" << best / gw << ", " << best % gw << ")";
                if (o.samples > 0) {  // draws from α_t, as hard attention does while training
                    std::vector<int64_t> counts(a.size(), 0);
                    for (int64_t s = 0; s < o.samples; ++s) {
                        const double u = sampler.uniform();
                        double acc = 0;
                        size_t pick = a.size() - 1;
                        for (size_t i = 0; i < a.size(); ++i)
                            if ((acc += a[i]) > u) {
                                pick = i;
                                break;
                            }
                        ++counts[pick];
                    }
                    notes << ", " << o.samples << " samples:";
                    for (size_t i = 0; i < counts.size(); ++i)
                        if (counts[i] > 0) notes << " (" << i / static_cast<size_t>(gw) << "," << i % static_cast<size_t>(gw) << ")×" << counts[i];
                }
                notes << "\n";
            }
            if (id == CaptionVocab::end) break;
        }
        std::string caption;
        for (const std::string& w : words)
            if (w != "<end>") caption += (caption.empty() ? "" : " ") + w;
        std::cout << o.images[k] << "\t" << caption << "\n";
        if (draw) std::cout << maps_side_by_side(words, maps) << notes.str() << "\n";
        if (!o.svg.empty()) {
            double x = 0, height = 0;
            std::string inner;
            for (std::string& s : svgs) {
                const double w = svg_size(s, "width");
                height = std::max(height, svg_size(s, "height"));
                inner += "<svg x=\"" + std::to_string(x) + "\"" + s.substr(4);  // after "<svg"
                x += w + 8;
            }
            const std::string path = numbered_path(o.svg, k, o.images.size());
            write_svg(path, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(x) + "\" height=\"" +
                                std::to_string(height) + "\">" + inner + "</svg>\n");
            std::cerr << "wrote " << path << "\n";
        }
    }
    return 0;
}


// ---- --dump-reference ------------------------------------------------------------------------------

void dump_caption_reference(const std::string& model_path, const std::string& out_path) {
    const SafetensorsFile file = load_safetensors(model_path);
    const CaptionSetup setup = load_caption_setup(file.metadata, model_path);
    Generator gen(0);
    const auto built = model_of_file(model_path, kSizeKeys, [&] { return std::make_unique<Captioner>(setup.config, gen); });
    Captioner& model = *built;
    load_model(model_path, model);
    NoGradGuard no_grad;
    EvalMode eval(model);

    // Four scenes of the built-in shapes (random pixels if the model's input
    // is not a 2×2 grid of square cells), the same for every run.
    const int64_t B = 4, H = setup.height, W = setup.width, T = setup.max_length;
    Tensor images = Tensor::empty(Shape{B, 1, H, W});
    Generator scenes(20261124);
    for (int64_t b = 0; b < B; ++b) {
        const Tensor image = H == W && H % 2 == 0
                                 ? draw_shape_scene({.cell_size = H / 2}, scenes).image
                                 : Tensor::uniform(Shape{H, W}, 0, 1, scenes);
        std::copy(image.data(), image.data() + H * W, images.data() + b * H * W);
    }
    // Each teacher-forced with its own greedy caption (what --predict would write).
    const std::vector<Decoded> greedy = greedy_decode(model, images, T);
    Tensor words_in = Tensor::zeros(Shape{B, T});
    for (int64_t b = 0; b < B; ++b) {
        words_in[b * T] = static_cast<real>(CaptionVocab::start);
        for (int64_t t = 1; t < T; ++t) words_in[b * T + t] = static_cast<real>(greedy[static_cast<size_t>(b)].words[static_cast<size_t>(t - 1)]);
    }

    StateDict tensors{{"input.images", images}, {"input.words_in", words_in}};
    const bool stochastic = setup.config.hard || setup.config.gumbel;
    const std::vector<std::string> cases = stochastic ? std::vector<std::string>{"expected", "argmax"}
                                                      : std::vector<std::string>{"soft"};
    std::string case_list;
    for (const std::string& name : cases) {
        model.set_hard_eval_expected(name == "expected");
        const Var annotations = model.encode(Var(images));
        const auto memory = model.attention.precompute(annotations);
        LSTMState state = model.initial_state(annotations);
        std::vector<Var> logits, alphas, betas;
        Tensor location = Tensor::zeros(Shape{B, T});
        for (int64_t t = 0; t < T; ++t) {
            Tensor words = Tensor::empty(Shape{B});
            for (int64_t b = 0; b < B; ++b) words[b] = words_in[b * T + t];
            const Captioner::Step step = model.step(memory, words, state);
            state = step.state;
            logits.push_back(step.logits);
            alphas.push_back(step.alpha);
            betas.push_back(step.beta);
            if (step.location.defined())
                for (int64_t b = 0; b < B; ++b) location[b * T + t] = step.location[b];
        }
        tensors.emplace_back(name + ".logits", stack(logits, 1).value());                        // B×T×V
        tensors.emplace_back(name + ".attention", stack(alphas, 1).value());                     // B×T×L
        tensors.emplace_back(name + ".gate", squeeze(stack(betas, 1), -1).value());              // B×T
        if (name == "argmax") tensors.emplace_back("argmax.location", location);
        case_list += (case_list.empty() ? "" : " ") + name;
    }
    model.set_hard_eval_expected(setup.config.hard_eval_expected);
    save_safetensors(out_path, tensors, {{"example", "caption"}, {"cases", case_list}, {"model", model_path}});
}

}  // namespace attn
