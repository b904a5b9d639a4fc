// The trainers' command line: the input's lines are the arguments. Every
// value a flag accepts must be in its declared range.
#include <cmath>
#include <iostream>
#include <streambuf>
#include <stdexcept>
#include <string>
#include <vector>

#include "examples/common/flags.hpp"

namespace {
// A stream buffer that takes every character and keeps none. (A stream with no
// buffer at all would discard them too, but as a failed write: the parser
// checks that its help reached stdout, and would say it did not.)
class Discard : public std::streambuf {
protected:
    int_type overflow(int_type c) override { return traits_type::not_eof(c); }
    std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
    // --help prints the usage to stdout: thousands of times a second it would
    // cost more than the parsing, so it goes nowhere.
    static const bool quiet = [] {
        static Discard nowhere;
        std::cout.rdbuf(&nowhere);
        return true;
    }();
    (void)quiet;
    std::vector<std::string> args = {"fuzz"};
    std::string current;
    for (size_t i = 0; i < size; ++i) {
        if (data[i] == '\n') {
            args.push_back(current);
            current.clear();
        } else {
            current += static_cast<char>(data[i]);
        }
    }
    args.push_back(current);
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());

    attn::CommonFlags common;
    int64_t batch = 32;
    double dropout = 0.1;
    std::string name = "x";
    bool on = false;
    attn::FlagParser flags("fuzz", "fuzzing the flag parser");
    flags.add_common(common, "dates | a file");
    flags.add("--batch", &batch, "examples per step", 1, 4096);
    flags.add("--dropout", &dropout, "dropout", 0, 0.99);
    flags.add("--name", &name, "a name", /*may_be_empty=*/false);
    flags.add("--on", &on, "a switch");
    try {
        if (!flags.parse(static_cast<int>(argv.size()), argv.data())) return 0;  // --help
    } catch (const std::invalid_argument&) {
        return 0;
    }
    if (batch < 1 || batch > 4096 || !(dropout >= 0 && dropout <= 0.99) || name.empty() || common.epochs < 1 ||
        common.steps < 0 || common.threads < 0 || common.threads > 1024 || common.out.empty())
        __builtin_trap();
    (void)flags.values();
    return 0;
}
