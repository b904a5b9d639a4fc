#include "examples/seq2seq/config_text.hpp"

#include <cerrno>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace attn::seq2seq {

std::vector<std::pair<std::string, std::string>> config_items(const std::string& text, const std::string& who) {
    std::vector<std::pair<std::string, std::string>> items;
    std::istringstream in(text);
    for (std::string item; in >> item;) {
        const size_t eq = item.find('=');
        if (eq == std::string::npos) throw std::runtime_error(who + ": expected key=value, got '" + item + "'");
        items.emplace_back(item.substr(0, eq), item.substr(eq + 1));
    }
    return items;
}

int64_t config_size(const std::string& who, const std::string& key, const std::string& value) {
    char* end = nullptr;
    errno = 0;
    const long long x = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || errno == ERANGE || x < 0 || x > (int64_t{1} << 20))
        throw std::runtime_error(who + ": " + key + "=" + value + " is not a size (a whole number in [0, 1048576])");
    return static_cast<int64_t>(x);
}

double config_probability(const std::string& who, const std::string& key, const std::string& value) {
    char* end = nullptr;
    const double p = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !(p >= 0 && p < 1))
        throw std::runtime_error(who + ": " + key + "=" + value + " is not a probability in [0, 1)");
    return p;
}

bool config_direction(const std::string& who, const std::string& key, const std::string& value) {
    if (value == "left-to-right") return false;
    if (value == "right-to-left") return true;
    throw std::runtime_error(who + ": " + key + "=" + value + " is not left-to-right or right-to-left");
}

}  // namespace attn::seq2seq
