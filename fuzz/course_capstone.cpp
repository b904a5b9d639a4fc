// course/capstone.txt, the entries of exercise 7.2 (course/course_files.cpp).
#include <stdexcept>
#include <string_view>

#include "course/course_files.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
    try {
        int last = 0;
        for (const auto& n : attn::course::parse_capstone_entries(
                 std::string_view(reinterpret_cast<const char*>(data), size), "course/capstone.txt")) {
            if (n.id.empty() || n.id.find_first_of(" \t\r\n") != std::string::npos || n.line <= last) __builtin_trap();
            last = n.line;
        }
    } catch (const std::runtime_error&) {
    }
    return 0;
}
