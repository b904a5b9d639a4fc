// examples/docclass/predict: what --predict needs from a checkpoint, and the
// text and SVG it shows, on predictions written out by hand.
#include <doctest/doctest.h>

#include <map>
#include <stdexcept>
#include <string>

#include "examples/common/data_file.hpp"
#include "examples/docclass/predict.hpp"
#include "tensor/allocator.hpp"
#include "tests/helpers.hpp"

using namespace attn;

TEST_CASE("docclass predict: the setup survives a checkpoint's metadata; a broken one is named") {
    DocclassSetup s;
    s.model_name = "han";
    s.config = {.vocab_size = 0, .embed_dim = 7, .word_hidden = 5, .word_attention = 4, .sentence_hidden = 3,
                .sentence_attention = 2, .num_classes = 0};
    s.vocab = Vocabulary::from_words({"the", "café", "goal"});
    s.class_names = {"sports", "space"};
    s.max_sentences = 6;
    s.max_words = 9;
    std::map<std::string, std::string> m;
    save_setup(s, m);
    const DocclassSetup back = load_setup(m, "best.safetensors");
    CHECK(back.model_name == "han");
    CHECK(back.vocab.words() == std::vector<std::string>{"the", "café", "goal"});
    CHECK(back.vocab.id("café") == 3);
    CHECK(back.vocab.id("unknown") == Vocabulary::unk);
    CHECK(back.class_names == s.class_names);
    CHECK(back.config.embed_dim == 7);
    CHECK(back.config.word_hidden == 5);
    CHECK(back.config.word_attention == 4);
    CHECK(back.config.sentence_hidden == 3);
    CHECK(back.config.sentence_attention == 2);
    CHECK(back.config.vocab_size == 5);  // with <pad> and <unk>
    CHECK(back.config.num_classes == 2);
    CHECK(back.max_sentences == 6);
    CHECK(back.max_words == 9);

    std::map<std::string, std::string> missing = m;
    missing.erase("docclass.vocabulary");
    CHECK_THROWS_WITH(load_setup(missing, "x.safetensors"),
                      doctest::Contains("x.safetensors: not a docclass checkpoint (metadata \"docclass.vocabulary\" is missing"));
    std::map<std::string, std::string> bad = m;
    bad["docclass.sizes"] = "7 5 4 3 2 6";
    CHECK_THROWS_WITH(load_setup(bad, "x.safetensors"), doctest::Contains("is not seven positive whole numbers"));
    bad["docclass.sizes"] = "7 5 4 3 2 6 0";
    CHECK_THROWS_WITH(load_setup(bad, "x.safetensors"), doctest::Contains("is not seven positive whole numbers"));
    CHECK_THROWS_WITH(Vocabulary::from_words({"a", "b", "a"}), doctest::Contains("'a' appears twice"));
    CHECK_THROWS_WITH(Vocabulary::from_words({"<unk>"}), doctest::Contains("appears twice"));

    // Sizes each within bounds whose product is not: a GRU of 2^20 × 2^20
    // weights (12 TiB) is refused naming the file, not with a bare bad_alloc.
    Generator gen(1);
    const DocModelConfig huge{.vocab_size = 5, .embed_dim = 1 << 20, .word_hidden = 1 << 20, .word_attention = 4,
                              .sentence_hidden = 3, .sentence_attention = 2, .num_classes = 2};
    CHECK_THROWS_WITH_AS(model_of_file("big.safetensors", "\"docclass.sizes\"", [&] { return make_doc_model("han", huge, gen); }),
                         doctest::Contains("big.safetensors: the model that its metadata \"docclass.sizes\" describes "
                                           "does not fit in this machine's memory (tensor storage: "),
                         std::runtime_error);

    // Sizes whose tensors each fit but together do not: with the memory
    // limited to 1 MiB beyond what is in use, a HAN of width 128 (each GRU
    // weight 384×128 floats, 192 KiB; about 2 MiB in all) is refused the same
    // way, before the tensor that would pass the limit is made.
    empty_storage_cache();
    const size_t in_use = static_cast<size_t>(allocator_stats().live_bytes);
    const DocModelConfig wide{.vocab_size = 5, .embed_dim = 128, .word_hidden = 128, .word_attention = 4,
                              .sentence_hidden = 128, .sentence_attention = 2, .num_classes = 2};
    std::string refused;
    {
        const attn::testing::MemoryLimit limit(in_use + (size_t{1} << 20));
        try {
            model_of_file("wide.safetensors", "\"docclass.sizes\"", [&] { return make_doc_model("han", wide, gen); });
        } catch (const std::runtime_error& e) {
            refused = e.what();
        }
    }
    CHECK(refused.find("wide.safetensors: the model that its metadata \"docclass.sizes\" describes does not fit in "
                       "this machine's memory (tensor storage: ") == 0);
    CHECK(refused.find("already in use") != std::string::npos);
    CHECK(allocator_stats().live_bytes == static_cast<int64_t>(in_use));  // nothing of the refused model is left
    // Within the machine's own memory, the same model is made.
    CHECK(model_of_file("wide.safetensors", "\"docclass.sizes\"", [&] { return make_doc_model("han", wide, gen); })
              ->num_parameters() > 0);
}

namespace {

Prediction two_sentences() {
    Prediction p;
    p.sentences = {{"great", "goal", "!"}, {"it", "rained"}};
    p.probabilities = {0.1, 0.7, 0.2};
    p.label = 1;
    p.sentence_weights = {1.0, 0.0};
    p.word_weights = {{0.25, 0.7, 0.05}, {0.5, 0.5}};
    return p;
}

}  // namespace

TEST_CASE("docclass predict: the text names the label, the top classes, and marks the weighted words") {
    const std::string text = prediction_text(two_sentences(), {"space", "sports", "weather"}, false);
    const std::string expected =
        "label: sports  (sports 0.700, weather 0.200, space 0.100)\n"
        "  1.000 ██████████  great[0.25] goal[0.70] !\n"
        "  0.000 ··········  it[0.50] rained[0.50]\n";
    CHECK(text == expected);
}

TEST_CASE("docclass predict: in the SVG a word is shaded by its weight scaled by its sentence's") {
    const std::string svg = prediction_svg(two_sentences(), {"space", "sports", "weather"}, "a <test>");
    CHECK(svg.find("a &lt;test&gt;") != std::string::npos);
    // sentence 1 (weight 1): "goal" 0.7 → sqrt(0.7 · 1) = 0.837
    CHECK(svg.find("fill-opacity=\"0.837\"><title>goal: word 0.700, sentence 1.000</title>") != std::string::npos);
    // sentence 2 (weight 0): its words are unshaded whatever their weight within it
    CHECK(svg.find("fill-opacity=\"0.000\"><title>it: word 0.500, sentence 0.000</title>") != std::string::npos);
    CHECK(svg.find("fill-opacity=\"0.000\"><title>rained: word 0.500, sentence 0.000</title>") != std::string::npos);
}
