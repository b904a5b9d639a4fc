// Every file the library and the trainers write goes through one rule
// (io/atomic_file.hpp): only a regular file, or a path with nothing there
// yet, is written. Run as root, `--svg /dev/null` once replaced /dev/null
// itself with a regular file. And what a trainer writes to standard output
// must arrive: `--predict > /dev/full` once lost every answer and exited 0.
//
// These tests need no root: a FIFO, a directory and a symbolic link stand
// for the special files, and /dev/null is only looked at, never written.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "examples/common/flags.hpp"
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

TEST_CASE("writers: a write to standard output that fails is an error, with the system's reason") {
    // Standard output pointed at /dev/full for the length of one check (the
    // test's own output is on hold meanwhile), then put back.
    const int full = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
    if (full < 0) {
        MESSAGE("no /dev/full here: skipped");
        return;
    }
    std::cout.flush();
    std::fflush(stdout);
    const int saved = ::dup(STDOUT_FILENO);
    REQUIRE(saved >= 0);
    REQUIRE(::dup2(full, STDOUT_FILENO) == STDOUT_FILENO);
    // (A failed flush drops the buffer: nothing refused comes out later.)
    std::cout << "input\tanswer\n";
    const std::string lost = refusal([] { check_standard_output("the predictions"); });
    std::cout.clear();
    std::clearerr(stdout);
    std::printf("printf's answer\n");  // what seq2seq prints with printf is checked too
    const std::string lost_printf = refusal([] { check_standard_output("the results"); });
    std::cout.clear();
    std::clearerr(stdout);
    // A write that failed at once (std::endl flushes) is named too; a reason
    // that is no write's, left in errno by a later call, is not.
    std::cout << "RESULT {}" << std::endl;
    const std::string lost_endl = refusal([] { check_standard_output("the results"); });
    std::cout.clear();
    std::clearerr(stdout);
    std::cout << "RESULT {}" << std::endl;
    errno = ENOENT;
    const std::string lost_stale = refusal([] { check_standard_output("the results"); });
    std::cout.clear();
    std::clearerr(stdout);
    ::dup2(saved, STDOUT_FILENO);
    ::close(saved);
    ::close(full);

    CHECK(lost == "could not write the predictions to standard output: No space left on device");
    CHECK(lost_printf == "could not write the results to standard output: No space left on device");
    CHECK(lost_endl == "could not write the results to standard output: No space left on device");
    CHECK(lost_stale == "could not write the results to standard output: a write failed");
    // A stream that took everything passes.
    CHECK(refusal([] { check_standard_output("the predictions"); }) == "");
}
