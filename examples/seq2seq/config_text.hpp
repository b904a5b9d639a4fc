// The "key=value key=value ..." text a seq2seq model's configuration is saved
// as (the checkpoint's seq2seq.config), and the readers of its values that
// ModelConfig::parse and TransformerConfig::parse share. Every error starts
// with `who` ("seq2seq config", "seq2seq transformer config") and names the
// key and the value.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace attn::seq2seq {

// The items of `text`, split at whitespace, each at its first '=' into (key, value).
std::vector<std::pair<std::string, std::string>> config_items(const std::string& text, const std::string& who);
// A size: a whole number in [0, 2^20]. A checkpoint's header may be corrupted:
// std::stoll threw a bare "stoll", and a huge size asked vector::reserve for 10¹⁸.
int64_t config_size(const std::string& who, const std::string& key, const std::string& value);
// A dropout probability, in [0, 1).
double config_probability(const std::string& who, const std::string& key, const std::string& value);
// The order of the output: "left-to-right" (false) or "right-to-left" (true).
bool config_direction(const std::string& who, const std::string& key, const std::string& value);

}  // namespace attn::seq2seq
