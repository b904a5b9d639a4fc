// Settings read from environment variables (ATTN_NUM_THREADS, ATTN_SPIN_US).
//
// A value is a whole decimal number within the setting's range, or an
// std::invalid_argument that names the variable, the text it holds and what it
// expects: "ATTN_SPIN_US=99999999999999999999: expected a whole number of
// microseconds between 0 and 1000000". Parsed with std::from_chars, so a
// number too large for int64_t is refused rather than wrapped or clamped.
#pragma once

#include <cstdint>

namespace attn {

// `text`, the value of variable `name`: optional '-', digits, nothing else,
// within [lo, hi]. `unit` names what is counted ("threads").
int64_t parse_env_integer(const char* name, const char* text, int64_t lo, int64_t hi, const char* unit);

}  // namespace attn
