// A pronunciation lexicon: every word it accepts must split into whole UTF-8
// characters, so that its vocabulary can be written into a checkpoint.
#include <stdexcept>
#include <string>

#include "examples/seq2seq/seq2seq_data.hpp"
#include "io/json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        const attn::seq2seq::Lexicon lexicon = attn::seq2seq::parse_lexicon(text, "fuzz.dict");
        std::string header;
        for (const auto& entry : lexicon) {
            if (entry.word.empty() || entry.pronunciations.empty()) __builtin_trap();
            for (const std::string& c : attn::seq2seq::characters(entry.word)) attn::append_json_string(header, c);
        }
        (void)attn::seq2seq::split_lexicon(lexicon);
    } catch (const std::runtime_error&) {
    }
    return 0;
}
