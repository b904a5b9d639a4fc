// A fortune file: entries between "%" lines, split into sentences and words.
#include <string>

#include "examples/docclass/docclass_data.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    for (const std::string& entry : attn::fortune_entries(text)) {
        if (entry.find_first_not_of(" \t\n") == std::string::npos) __builtin_trap();  // blank entries are skipped
        for (const auto& sentence : attn::split_sentences(entry))
            if (sentence.empty()) __builtin_trap();
        (void)attn::tokenize(entry);
    }
    return 0;
}
