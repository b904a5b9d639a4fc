// label<TAB>text lines, then the sentence splitter the classifier reads them with.
#include <stdexcept>
#include <string_view>

#include "examples/docclass/docclass_data.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
    try {
        for (const auto& [label, text] :
             attn::parse_tsv(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.tsv")) {
            if (label.empty() || text.empty()) __builtin_trap();
            (void)attn::split_sentences(text);
        }
    } catch (const std::runtime_error&) {
    }
    return 0;
}
