// course/exercises.txt, the exercise list (course/exercises.cpp): every
// exercise read has an id, a grade line, and is found again by its id.
#include <stdexcept>
#include <string_view>

#include "course/exercises.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
    try {
        const auto all = attn::course::parse_exercises(std::string_view(reinterpret_cast<const char*>(data), size),
                                                       "course/exercises.txt");
        for (const auto& e : all) {
            if (e.id.empty() || e.grade.empty()) __builtin_trap();
            if (attn::course::find_exercise(all, e.id) != &e) __builtin_trap();
        }
    } catch (const std::runtime_error&) {
    }
    return 0;
}
