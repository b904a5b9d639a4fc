#include "examples/common/data_file.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace attn {

std::string read_data_file(const std::string& path, const std::string& what, int64_t max_bytes) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (!fs::exists(status)) throw std::runtime_error(path + ": cannot open: no such file (expected " + what + ")");
    if (fs::is_directory(status)) throw std::runtime_error(path + ": is a directory, expected " + what);
    if (!fs::is_regular_file(status))
        throw std::runtime_error(path + ": not a regular file (a device or a pipe), expected " + what);
    const auto size = fs::file_size(path, ec);
    if (!ec && size > static_cast<uintmax_t>(max_bytes))
        throw std::runtime_error(path + ": " + std::to_string(size) + " bytes, more than the " +
                                 std::to_string(max_bytes) + " that " + what + " may have here");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(path + ": cannot open (expected " + what + ")");
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace attn
