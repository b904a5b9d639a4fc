// course/progress.txt, the student's attempts (course/course_files.cpp): each
// attempt read must be written back as a line that reads back the same.
#include <stdexcept>
#include <string>
#include <string_view>

#include "course/course_files.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
    try {
        const auto attempts = attn::course::parse_progress(std::string_view(reinterpret_cast<const char*>(data), size),
                                                           "course/progress.txt");
        std::string again;
        for (const auto& a : attempts) {
            if (a.id.empty() || a.when.size() != 16 || a.right_checks > a.checks) __builtin_trap();
            again += attn::course::progress_line(a) + "\n";
        }
        const auto back = attn::course::parse_progress(again, "again");
        if (back.size() != attempts.size()) __builtin_trap();
        for (size_t i = 0; i < back.size(); ++i)
            if (attn::course::progress_line(back[i]) != attn::course::progress_line(attempts[i])) __builtin_trap();
    } catch (const std::runtime_error&) {
    }
    return 0;
}
