// Every file the library and the trainers write goes through one rule
// (io/atomic_file.hpp): only a regular file, or a path with nothing there
// yet, is written. Run as root, `--svg /dev/null` once replaced /dev/null
// itself with a regular file.
//
// These tests need no root: a FIFO, a directory and a symbolic link stand
// for the special files, and /dev/null is only looked at, never written.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "examples/common/metrics.hpp"
#include "examples/common/svg.hpp"
#include "io/atomic_file.hpp"
#include "io/safetensors.hpp"
#include "tests/helpers.hpp"

using namespace attn;
using namespace attn::testing;
namespace fs = std::filesystem;

namespace {

// The message `write` throws, "" if it throws nothing.
template <typename F>
std::string refusal(F&& write) {
    try {
        write();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

// The names in `dir`, to show that a refused write left no temporary file.
std::vector<std::string> names_in(const std::string& dir) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

}  // namespace

TEST_CASE("writers: what is not a regular file is named") {
    // Only the type of /dev/null is read (lstat); nothing is written to it.
    CHECK(special_file_problem("/dev/null") == "is a character device, not a regular file; give a file path");
    TempDir dir("writers_kinds");
    REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
    fs::create_directory(dir / "sub");
    std::ofstream(dir / "plain") << "old";
    fs::create_symlink(dir / "plain", dir / "link");
    CHECK(special_file_problem(dir / "fifo") == "is a FIFO (named pipe), not a regular file; give a file path");
    CHECK(special_file_problem(dir / "sub") == "is a directory, not a regular file; give a file path");
    CHECK(special_file_problem(dir / "link") == "is a symbolic link, not a regular file; give a file path");
    CHECK(special_file_problem(dir / "plain") == "");
    CHECK(special_file_problem(dir / "not-yet") == "");
}

TEST_CASE("writers: a FIFO, a directory or a symbolic link is refused and left as it was") {
    TempDir dir("writers_refuse");
    const std::string fifo = dir / "fifo", sub = dir / "sub", target = dir / "target", link = dir / "link";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    fs::create_directory(sub);
    std::ofstream(target) << "old";
    fs::create_symlink(target, link);
    const std::string why = ", not a regular file; give a file path";

    CHECK(refusal([&] { write_file_atomic(fifo, "new", "write_svg"); }) ==
          "write_svg: cannot write '" + fifo + "': is a FIFO (named pipe)" + why);
    CHECK(refusal([&] { write_file_atomic(sub, "new", "write_svg"); }) ==
          "write_svg: cannot write '" + sub + "': is a directory" + why);
    CHECK(refusal([&] { write_file_atomic(link, "new", "write_svg"); }) ==
          "write_svg: cannot write '" + link + "': is a symbolic link" + why);
    // Every writer goes through it: the pictures, the checkpoints, the metrics.
    CHECK(refusal([&] { write_svg(fifo, "<svg/>"); }) ==
          "write_svg: cannot write '" + fifo + "': is a FIFO (named pipe)" + why);
    CHECK(refusal([&] { save_safetensors(link, {{"w", Tensor::zeros(Shape{2})}}); }) ==
          "save_safetensors: cannot write '" + link + "': is a symbolic link" + why);
    CHECK(refusal([&] { MetricsLog log(link); }) ==
          "MetricsLog: cannot write '" + link + "': is a symbolic link" + why);

    // Nothing was replaced, nothing written through the link, nothing left behind.
    CHECK(fs::is_fifo(fs::symlink_status(fifo)));
    CHECK(fs::is_directory(fs::symlink_status(sub)));
    CHECK(fs::is_empty(sub));
    CHECK(fs::is_symlink(fs::symlink_status(link)));
    CHECK(read_file(target) == "old");
    CHECK(names_in(dir.path) == std::vector<std::string>{"fifo", "link", "sub", "target"});

    // A regular file is replaced, and a new name created, as before.
    write_file_atomic(target, "new", "test");
    write_file_atomic(dir / "fresh", "fresh", "test");
    CHECK(read_file(target) == "new");
    CHECK(read_file(dir / "fresh") == "fresh");
}
