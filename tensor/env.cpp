#include "tensor/env.hpp"

#include <charconv>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>

namespace attn {

int64_t parse_env_integer(const char* name, const char* text, int64_t lo, int64_t hi, const char* unit) {
    const char* end = text + std::strlen(text);
    int64_t value = 0;
    const auto [ptr, ec] = std::from_chars(text, end, value);  // refuses '+', spaces and overflow
    if (ec == std::errc() && ptr == end && value >= lo && value <= hi) return value;
    throw std::invalid_argument(std::string(name) + "=" + text + ": expected a whole number of " + unit +
                                " between " + std::to_string(lo) + " and " + std::to_string(hi));
}

}  // namespace attn
