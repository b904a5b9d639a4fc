// JSON: parse anything; what parses must dump and parse back to the same text.
// Strings of arbitrary bytes are written only when they are valid UTF-8.
#include <stdexcept>
#include <string>
#include <string_view>

#include "io/json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const attn::Json value = attn::parse_json(text);
        const std::string once = value.dump();
        if (attn::parse_json(once).dump() != once) __builtin_trap();  // not a round trip
    } catch (const attn::JsonParseError&) {
    }
    std::string out;
    try {
        attn::append_json_string(out, text);
        if (attn::parse_json(out).as_string() != text) __builtin_trap();
    } catch (const std::invalid_argument&) {  // not UTF-8
    }
    return 0;
}
