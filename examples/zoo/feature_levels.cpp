// Feature levels and representations (catalog entries 11 and 14) in the zoo.
//
//   spell    a sentence of 4 words from a fixed lexicon, each word of one of 4
//            classes; the question "letter k of the <class> word". Only the
//            word level knows a word's class, only the character level its
//            letters: attention_via_attention lets the words tell the
//            characters where to look.
//   metaemb  sentiment of a sentence from two fixed embedding tables of
//            different widths, each covering part of the vocabulary (the other
//            words get random vectors): meta_embedding_attention learns, token
//            by token, which table to trust.
//
// docs/attention/feature_levels.md and docs/examples/zoo.md state the targets.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "attention/alignments.hpp"
#include "attention/feature_levels.hpp"
#include "attention/query_types.hpp"
#include "examples/common/svg.hpp"
#include "examples/zoo/zoo.hpp"
#include "nn/embedding.hpp"
#include "nn/linear.hpp"
#include "nn/optim.hpp"
#include "tensor/ops.hpp"

using namespace attn;
using namespace attn::zoo;

namespace {

std::string fixed3(double v) { return std::to_string(v).substr(0, 5); }

// ============================================================================
// spell: attention via attention, words first, then characters
// ============================================================================

constexpr int64_t kLetters = 8, kClasses = 4, kWordsPerClass = 15, kSentence = 4, kMaxWordLength = 4;
constexpr int64_t kLexicon = kClasses * kWordsPerClass, kMaxChars = kSentence * kMaxWordLength;

struct Lexicon {
    std::vector<std::vector<int64_t>> spelling;  // word → letters (3 or 4)
    std::vector<int64_t> word_class;              // word → class
};

Lexicon make_lexicon(Generator& gen) {
    Lexicon lex;
    for (int64_t w = 0; w < kLexicon; ++w) {
        std::vector<int64_t> letters(3 + gen.randint(2));
        for (int64_t& l : letters) l = static_cast<int64_t>(gen.randint(kLetters));
        lex.spelling.push_back(letters);
        lex.word_class.push_back(w / kWordsPerClass);
    }
    return lex;
}

struct SpellExample {
    std::vector<int64_t> words;  // kSentence word ids, one of each class, shuffled
    int64_t asked_class = 0, letter_position = 0, answer = 0;
};

SpellExample make_spell(const Lexicon& lex, Generator& gen) {
    SpellExample e;
    for (int64_t c = 0; c < kClasses; ++c) e.words.push_back(c * kWordsPerClass + static_cast<int64_t>(gen.randint(kWordsPerClass)));
    for (size_t i = e.words.size() - 1; i > 0; --i) std::swap(e.words[i], e.words[gen.randint(i + 1)]);
    e.asked_class = static_cast<int64_t>(gen.randint(kClasses));
    e.letter_position = static_cast<int64_t>(gen.randint(3));  // every word has letters 0–2
    for (int64_t w : e.words)
        if (lex.word_class[static_cast<size_t>(w)] == e.asked_class)
            e.answer = lex.spelling[static_cast<size_t>(w)][static_cast<size_t>(e.letter_position)];
    return e;
}

struct SpellBatch {
    Tensor word_ids, word_slots;                  // B×4: lexicon id, position in the sentence
    Tensor letters, letter_slots, letter_words;   // B×16: letter, position in its word, its word's position
    Tensor char_mask;                             // B×16
    Tensor query_class, query_position;           // B
    std::vector<int64_t> answers;
};

SpellBatch spell_batch(const Lexicon& lex, const std::vector<SpellExample>& data, const std::vector<int64_t>& pick) {
    const int64_t B = static_cast<int64_t>(pick.size());
    SpellBatch s{Tensor::zeros({B, kSentence}),   Tensor::zeros({B, kSentence}), Tensor::zeros({B, kMaxChars}),
                 Tensor::zeros({B, kMaxChars}),   Tensor::zeros({B, kMaxChars}), Tensor::zeros({B, kMaxChars}),
                 Tensor::zeros({B}),              Tensor::zeros({B}),            {}};
    for (int64_t b = 0; b < B; ++b) {
        const SpellExample& e = data[static_cast<size_t>(pick[static_cast<size_t>(b)])];
        int64_t k = 0;
        for (int64_t i = 0; i < kSentence; ++i) {
            const int64_t w = e.words[static_cast<size_t>(i)];
            s.word_ids[b * kSentence + i] = static_cast<real>(w);
            s.word_slots[b * kSentence + i] = static_cast<real>(i);
            const auto& spelling = lex.spelling[static_cast<size_t>(w)];
            for (size_t j = 0; j < spelling.size(); ++j, ++k) {
                s.letters[b * kMaxChars + k] = static_cast<real>(spelling[j]);
                s.letter_slots[b * kMaxChars + k] = static_cast<real>(j);
                s.letter_words[b * kMaxChars + k] = static_cast<real>(i);
                s.char_mask[b * kMaxChars + k] = 1;
            }
        }
        s.query_class[b] = static_cast<real>(e.asked_class);
        s.query_position[b] = static_cast<real>(e.letter_position);
        s.answers.push_back(e.answer);
    }
    return s;
}

// Words: embedding of the lexicon id + of the sentence slot. Characters:
// embedding of the letter + of its slot in the word + of its word's slot (a
// character knows where it is, not which word, so not its class). Query:
// embedding of the asked class + of the letter position. The answer is read
// from the character context alone.
class SpellModel : public Module {
public:
    SpellModel(bool via, Generator& gen)
        : via_(via), word_ids_(kLexicon, kDim, gen), word_slots_(kSentence, kDim, gen),
          letters_(kLetters, kDim, gen), letter_slots_(kMaxWordLength, kDim, gen),
          letter_words_(kSentence, kDim, gen), query_class_(kClasses, kDim, gen),
          query_position_(kMaxWordLength, kDim, gen), ava_(kDim, kDim, kDim, kDim, gen),
          plain_(kDim, kDim, kDim, gen), out_(kDim, kLetters, gen) {
        for (auto [name, m] : std::vector<std::pair<const char*, Module*>>{
                 {"word_ids", &word_ids_}, {"word_slots", &word_slots_}, {"letters", &letters_},
                 {"letter_slots", &letter_slots_}, {"letter_words", &letter_words_},
                 {"query_class", &query_class_}, {"query_position", &query_position_}, {"out", &out_}})
            register_module(name, *m);
        if (via_) register_module("attention", ava_);
        else register_module("attention", plain_);
    }

    struct Output {
        Var logits;
        Tensor character_weights, word_weights;  // B×16, B×4 (no word level without via: zeros)
    };

    Output forward(const SpellBatch& s) {
        const int64_t B = s.word_ids.size(0);
        const Var words = add(word_ids_(s.word_ids), word_slots_(s.word_slots));  // B×4×d
        const Var chars = add(add(letters_(s.letters), letter_slots_(s.letter_slots)), letter_words_(s.letter_words));
        const Var query = reshape(add(query_class_(s.query_class), query_position_(s.query_position)), {B, 1, kDim});
        Output out;
        if (via_) {
            const AttentionViaAttentionOutput a = ava_.forward(query, chars, words, s.char_mask);
            out.logits = out_.forward(reshape(a.character_context, {B, kDim}));
            out.character_weights = a.character_weights.value().reshape(Shape{B, kMaxChars});
            out.word_weights = a.word_weights.value().reshape(Shape{B, kSentence});
        } else {  // the baseline: character attention queried by q alone
            const Var w = masked_softmax(plain_.score(query, chars), key_mask(s.char_mask));
            out.logits = out_.forward(reshape(attend(w, chars), {B, kDim}));
            out.character_weights = w.value().reshape(Shape{B, kMaxChars});
            out.word_weights = Tensor::zeros({B, kSentence});
        }
        return out;
    }

private:
    static constexpr int64_t kDim = 16;
    bool via_;
    Embedding word_ids_, word_slots_, letters_, letter_slots_, letter_words_, query_class_, query_position_;
    AttentionViaAttention ava_;
    AdditiveScore plain_;
    Linear out_;
};

double train_spell(ZooContext& ctx, bool via, int64_t& steps) {
    Generator& gen = ctx.gen;
    const Lexicon lex = make_lexicon(gen);
    std::vector<SpellExample> train, test;
    for (int i = 0; i < 3000; ++i) train.push_back(make_spell(lex, gen));
    for (int i = 0; i < 500; ++i) test.push_back(make_spell(lex, gen));
    SpellModel model(via, gen);
    Adam opt(model.named_parameters(), {.lr = 0.01});
    steps = ctx.steps(3000);
    for (int64_t step = 0; step < steps; ++step) {
        std::vector<int64_t> pick;
        for (int b = 0; b < 32; ++b) pick.push_back(static_cast<int64_t>(gen.randint(train.size())));
        const SpellBatch batch = spell_batch(lex, train, pick);
        opt.zero_grad();
        Var loss = cross_entropy(model.forward(batch).logits, labels_tensor(batch.answers));
        loss.backward();
        opt.step();
    }
    NoGradGuard no_grad;
    std::vector<int64_t> all(test.size());
    std::iota(all.begin(), all.end(), 0);
    const SpellBatch batch = spell_batch(lex, test, all);
    const SpellModel::Output out = model.forward(batch);
    const double acc = accuracy(out.logits.value(), batch.answers);
    if (!via) return acc;

    const std::vector<std::string> classes{"animal", "colour", "tool", "city"};
    ctx.report.subsection("spell: attention_via_attention");
    ctx.report.paragraph("Test accuracy " + fixed3(acc) + " after " + std::to_string(steps) +
                         " steps. Per question: the word attention (upper line) and the character attention "
                         "(lower line); letters are a–h, words are spelled from a random lexicon.");
    for (int64_t b = 0; b < 3; ++b) {
        const SpellExample& e = test[static_cast<size_t>(b)];
        std::vector<std::string> word_tokens, char_tokens;
        std::vector<double> word_weights, char_weights;
        int64_t k = 0;
        for (int64_t i = 0; i < kSentence; ++i) {
            const int64_t w = e.words[static_cast<size_t>(i)];
            std::string spelled;
            for (int64_t l : lex.spelling[static_cast<size_t>(w)]) {
                spelled += static_cast<char>('a' + l);
                char_tokens.push_back(std::string(1, static_cast<char>('a' + l)));
                char_weights.push_back(out.character_weights[b * kMaxChars + k++]);
            }
            word_tokens.push_back(spelled + "(" + classes[static_cast<size_t>(lex.word_class[static_cast<size_t>(w)])] + ")");
            word_weights.push_back(out.word_weights[b * kSentence + i]);
            char_tokens.push_back("·");
            char_weights.push_back(0);
        }
        word_tokens.push_back("— letter " + std::to_string(e.letter_position + 1) + " of the " +
                              classes[static_cast<size_t>(e.asked_class)] + " word: " +
                              std::string(1, static_cast<char>('a' + e.answer)));
        word_weights.push_back(0);
        ctx.report.highlighted_text(word_tokens, word_weights);
        ctx.report.highlighted_text(char_tokens, char_weights);
    }
    return acc;
}

ZooResult spell_task(ZooContext& ctx) {
    int64_t steps = 0, baseline_steps = 0;
    const double acc = train_spell(ctx, true, steps);
    Generator gen(static_cast<uint64_t>(ctx.seed));
    ZooContext quiet{gen, ctx.seed, ctx.budget, ctx.report};
    const double baseline = train_spell(quiet, false, baseline_steps);
    return {"test accuracy", acc, 0.85, true, steps, "character attention without the word level " + fixed3(baseline), baseline};
}

// ============================================================================
// metaemb: which embedding table to trust, per token
// ============================================================================

constexpr int64_t kVocab = 40, kWidthA = 6, kWidthB = 10, kMetaDim = 8, kMinLength = 5, kMaxLength = 9;
constexpr int64_t kLastOfA = 23, kFirstOfB = 16;  // the words each table knows

// Two "pre-trained" tables. Table A knows words 0–23, table B words 16–39:
// a known word's vector is its sentiment s ∈ {−1, 0, +1} along a fixed
// direction, plus a fixed "known word" offset and a little noise. An unknown
// word gets a fresh random vector N(0, 3²) at every occurrence: the table
// says nothing about it, and averaging it in only adds noise.
struct Tables {
    Tensor a, b;                // kVocab×6, kVocab×10
    std::vector<int64_t> sentiment;  // per word
};

Tensor make_table(int64_t width, int64_t first_known, int64_t last_known, const std::vector<int64_t>& sentiment,
                  Generator& gen) {
    const Tensor direction = Tensor::normal({width}, 0, 1, gen), offset = Tensor::normal({width}, 0, 1, gen);
    Tensor t = Tensor::normal({kVocab, width}, 0, 1, gen);
    for (int64_t w = first_known; w <= last_known; ++w)
        for (int64_t k = 0; k < width; ++k)
            t[w * width + k] = static_cast<real>(sentiment[static_cast<size_t>(w)]) * direction[k] + offset[k] +
                               real(0.03) * t[w * width + k];
    return t;
}

Tables make_tables(Generator& gen) {
    Tables t;
    for (int64_t w = 0; w < kVocab; ++w) t.sentiment.push_back(w % 4 == 0 ? 1 : w % 4 == 1 ? -1 : 0);
    t.a = make_table(kWidthA, 0, kLastOfA, t.sentiment, gen);
    t.b = make_table(kWidthB, kFirstOfB, kVocab - 1, t.sentiment, gen);
    return t;
}

struct Sentence {
    std::vector<int64_t> words;
    int64_t label = 0;  // 1 when the sentiments sum above 0
};

Sentence make_sentence(const Tables& t, Generator& gen) {
    for (;;) {
        Sentence s;
        int64_t total = 0;
        const int64_t n = kMinLength + static_cast<int64_t>(gen.randint(kMaxLength - kMinLength + 1));
        for (int64_t i = 0; i < n; ++i) {
            s.words.push_back(static_cast<int64_t>(gen.randint(kVocab)));
            total += t.sentiment[static_cast<size_t>(s.words.back())];
        }
        if (total == 0) continue;  // no tie: every sentence has a label
        s.label = total > 0;
        return s;
    }
}

struct MetaBatch {
    Var a, b;      // B×n×6, B×n×10 (fixed embeddings, no gradient)
    Tensor mask;   // B×n
    std::vector<int64_t> labels;
};

// Looks up both tables; unknown words get fresh noise from `noise`.
MetaBatch meta_batch(const Tables& t, const std::vector<Sentence>& data, const std::vector<int64_t>& pick,
                     Generator& noise) {
    const int64_t B = static_cast<int64_t>(pick.size()), n = kMaxLength;
    Tensor a = Tensor::zeros({B, n, kWidthA}), b = Tensor::zeros({B, n, kWidthB}), mask = Tensor::zeros({B, n});
    std::vector<int64_t> labels;
    for (int64_t s = 0; s < B; ++s) {
        const Sentence& sentence = data[static_cast<size_t>(pick[static_cast<size_t>(s)])];
        for (size_t i = 0; i < sentence.words.size(); ++i) {
            const int64_t w = sentence.words[i], at = s * n + static_cast<int64_t>(i);
            for (int64_t k = 0; k < kWidthA; ++k)
                a[at * kWidthA + k] = w <= kLastOfA ? t.a[w * kWidthA + k] : static_cast<real>(3 * noise.normal());
            for (int64_t k = 0; k < kWidthB; ++k)
                b[at * kWidthB + k] = w >= kFirstOfB ? t.b[w * kWidthB + k] : static_cast<real>(3 * noise.normal());
            mask[at] = 1;
        }
        labels.push_back(sentence.label);
    }
    return {Var(a), Var(b), mask, labels};
}

// DME over the two tables, then the masked mean over tokens and a linear layer.
// Without attention (the baseline) the two projections are averaged, 1/2 each.
class MetaModel : public Module {
public:
    MetaModel(bool attend_sources, Generator& gen)
        : attend_(attend_sources), dme_({kWidthA, kWidthB}, kMetaDim, gen), out_(kMetaDim, 2, gen) {
        register_module("dme", dme_);
        register_module("out", out_);
    }

    AttentionOutput forward(const MetaBatch& batch) {
        AttentionOutput tokens;
        if (attend_) {
            tokens = dme_.forward({batch.a, batch.b});  // B×n×d_t, weights B×n×2
        } else {
            tokens.output = mean(dme_.project({batch.a, batch.b}), 2);
            tokens.weights = Var(Tensor::full({batch.mask.size(0), batch.mask.size(1), 2}, 0.5));
        }
        const Var sentence = squeeze(masked_mean(tokens.output, batch.mask), 1);  // B×d_t
        return {out_.forward(tanh(sentence)), tokens.weights};
    }

private:
    bool attend_;
    MetaEmbeddingAttention dme_;
    Linear out_;
};

double train_meta(ZooContext& ctx, bool attend_sources, int64_t& steps, Tensor* weights_by_word) {
    Generator& gen = ctx.gen;
    const Tables tables = make_tables(gen);
    std::vector<Sentence> train, test;
    for (int i = 0; i < 3000; ++i) train.push_back(make_sentence(tables, gen));
    for (int i = 0; i < 1000; ++i) test.push_back(make_sentence(tables, gen));
    MetaModel model(attend_sources, gen);
    Adam opt(model.named_parameters(), {.lr = 0.01});
    steps = ctx.steps(3000);
    for (int64_t step = 0; step < steps; ++step) {
        std::vector<int64_t> pick;
        for (int b = 0; b < 32; ++b) pick.push_back(static_cast<int64_t>(gen.randint(train.size())));
        const MetaBatch batch = meta_batch(tables, train, pick, gen);
        opt.zero_grad();
        Var loss = cross_entropy(model.forward(batch).output, labels_tensor(batch.labels));
        loss.backward();
        opt.step();
    }
    NoGradGuard no_grad;
    std::vector<int64_t> all(test.size());
    std::iota(all.begin(), all.end(), 0);
    const MetaBatch batch = meta_batch(tables, test, all, gen);
    const AttentionOutput out = model.forward(batch);
    if (weights_by_word) {  // each word once, kMaxLength words per sentence: its weights on tables A and B
        Tensor w = Tensor::zeros({kVocab, 2});
        for (int64_t first = 0; first < kVocab; first += kMaxLength) {
            Sentence part;
            for (int64_t v = first; v < std::min(kVocab, first + kMaxLength); ++v) part.words.push_back(v);
            const Tensor pw = model.forward(meta_batch(tables, {part}, {0}, gen)).weights.value();
            for (size_t i = 0; i < part.words.size(); ++i)
                for (int64_t k = 0; k < 2; ++k) w[(first + static_cast<int64_t>(i)) * 2 + k] = pw[static_cast<int64_t>(i) * 2 + k];
        }
        *weights_by_word = w;
    }
    return accuracy(out.output.value(), batch.labels);
}

ZooResult metaemb_task(ZooContext& ctx) {
    int64_t steps = 0, baseline_steps = 0;
    Tensor weights;
    const double acc = train_meta(ctx, true, steps, &weights);
    Generator gen(static_cast<uint64_t>(ctx.seed));
    ZooContext quiet{gen, ctx.seed, ctx.budget, ctx.report};
    const double baseline = train_meta(quiet, false, baseline_steps, nullptr);

    // the picture: every word's weights on the two tables
    double a_only = 0, b_only = 0;  // mean weight on the table that knows the word
    for (int64_t w = 0; w < 16; ++w) a_only += weights[w * 2] / 16;
    for (int64_t w = 24; w < kVocab; ++w) b_only += weights[w * 2 + 1] / 16;
    ctx.report.subsection("metaemb: meta_embedding_attention");
    ctx.report.paragraph("Test accuracy " + fixed3(acc) + " after " + std::to_string(steps) +
                         " steps (equal weights: " + fixed3(baseline) + "). Table A knows words 0–23, table B "
                         "words 16–39; words only A knows get weight " + fixed3(a_only) +
                         " on A, words only B knows " + fixed3(b_only) + " on B.");
    std::vector<std::string> rows, cols{"A", "B"};
    for (int64_t w = 0; w < kVocab; ++w) rows.push_back("word " + std::to_string(w));
    ctx.report.svg(heatmap_svg(weights.reshape(Shape{kVocab, 2}), rows, cols,
                               {.title = "DME weights per word", .x_label = "source", .y_label = "word", .cell_size = 14}));
    return {"test accuracy", acc, 0.85, true, steps, "equal weights (no attention) " + fixed3(baseline), baseline};
}

const ZooRegistration feature_level_tasks({
    {"FL", "attention_via_attention", "spell", "letter k of the word of a given class: words guide characters",
     [](ZooContext& ctx) { return spell_task(ctx); }},
    {"FR", "meta_embedding_attention", "metaemb", "sentence sentiment from two partial embedding tables",
     [](ZooContext& ctx) { return metaemb_task(ctx); }},
});

}  // namespace
