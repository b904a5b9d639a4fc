// examples/caption/predict: what --predict needs from a checkpoint, and the
// per-word maps it prints side by side.
#include <doctest/doctest.h>

#include <map>
#include <stdexcept>
#include <string>

#include "examples/caption/predict.hpp"

using namespace attn;

TEST_CASE("caption predict: the setup survives a checkpoint's metadata; a broken one is named") {
    CaptionSetup s;
    s.config.channels1 = 8;
    s.config.channels2 = 12;
    s.config.hidden = 20;
    s.config.embedding = 6;
    s.config.attention = 10;
    s.config.vocab = 16;
    s.config.hard = true;
    s.config.temperature = 0.3;
    s.config.soft_probability = 0.25;
    s.config.context_layers = 2;
    s.words = {"<start>", "<end>", "circle", "square"};
    s.height = 32;
    s.width = 48;
    s.max_length = 5;
    std::map<std::string, std::string> m;
    save_setup(s, m);
    const CaptionSetup b = load_caption_setup(m, "best.safetensors");
    CHECK(b.config.channels1 == 8);
    CHECK(b.config.channels2 == 12);
    CHECK(b.config.hidden == 20);
    CHECK(b.config.embedding == 6);
    CHECK(b.config.attention == 10);
    CHECK(b.config.vocab == 16);
    CHECK(b.config.hard);
    CHECK_FALSE(b.config.gumbel);
    CHECK(b.config.temperature == 0.3);
    CHECK(b.config.soft_probability == 0.25);
    CHECK(b.config.position_code);
    CHECK(b.config.context_layers == 2);
    CHECK(b.words == s.words);
    CHECK(b.height == 32);
    CHECK(b.width == 48);
    CHECK(b.max_length == 5);

    auto broken = [&](const std::string& config) {
        std::map<std::string, std::string> bad = m;
        bad["caption.config"] = config;
        try {
            load_caption_setup(bad, "x.safetensors");
        } catch (const std::runtime_error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    CHECK(broken(m["caption.config"] + " hidden=3") ==
          "x.safetensors: metadata \"caption.config\": 'hidden=3' is not key=number (or repeats a key)");
    CHECK(broken("channels1=8") == "x.safetensors: metadata \"caption.config\" has no channels2");
    std::string zero = m["caption.config"];
    zero.replace(zero.find("hidden=20"), 9, "hidden=0");
    CHECK(broken(zero) == "x.safetensors: metadata \"caption.config\": hidden is out of range");
    std::map<std::string, std::string> no_vocab = m;
    no_vocab.erase("caption.vocab");
    CHECK_THROWS_WITH(load_caption_setup(no_vocab, "x.safetensors"), doctest::Contains("not a caption checkpoint"));
}

TEST_CASE("caption predict: word maps side by side, each under its word") {
    // columns as wide as the map (4 cells) or the word ("circle": 6), then two spaces
    const std::string text = maps_side_by_side({"circle", "x"}, {"██  \n    \n", "  \n░░\n"});
    const std::string expected = std::string("circle  x   \n") +  //
                                 "██" + std::string(10, ' ') + "\n" +  //
                                 std::string(8, ' ') + "░░  \n";
    CHECK(text == expected);
    // escape sequences take no room: the same width with colour
    const std::string coloured = maps_side_by_side({"ab"}, {"\033[48;5;240m  \033[0m\n"});
    CHECK(coloured == "ab  \n\033[48;5;240m  \033[0m  \n");
}

// `caption --predict ''` once said only ": cannot open".
TEST_CASE("caption predict: an empty picture path is refused, naming the flag") {
    CaptionPredictOptions options;
    options.checkpoint = "no/such.safetensors";
    options.images = {""};
    CHECK_THROWS_WITH_AS(predict_captions(options), "--predict: an empty path", std::invalid_argument);
    options.images = {"scene.png", ""};
    CHECK_THROWS_WITH_AS(predict_captions(options), "--predict: an empty path", std::invalid_argument);
}
