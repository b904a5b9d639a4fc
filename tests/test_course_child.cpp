// The grader's child runner (course/child.hpp) and the thread pool's fork
// safety it relies on: however a check ends, the verdict is the parent's and
// is said in words, at once.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

#include "course/child.hpp"
#include "tensor/parallel.hpp"

using namespace attn;
using attn::course::ChildResult;
using attn::course::run_in_child;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The pool started with two threads and a job run on them, as in a check that multiplied a matrix.
void start_the_pool() {
    set_num_threads(2);
    std::atomic<int64_t> total{0};
    parallel_for(0, 1 << 16, 1, [&](int64_t b, int64_t e) { total += e - b; });
    REQUIRE(total == (1 << 16));
}

}  // namespace

// How soon a child that calls exit() with the pool started must be gone: at
// once. Under LeakSanitizer its exit first scans the whole heap for leaks
// (4.5 s seen in CI's sanitizer stage, on a busy machine), so the bound is
// wider there; a child that hangs runs to the limit either way (10 s in the
// fork test, 30 s in the runner's).
// And under LeakSanitizer that scan may end the child with its own exit
// status instead of the one given to exit() (the threads of other tests, absent
// in the forked child, leave what they hold unreachable): the status is
// checked only without it.
#if defined(__SANITIZE_ADDRESS__)
constexpr double kExitSeconds = 8;
constexpr bool kExitStatusKept = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr double kExitSeconds = 8;
constexpr bool kExitStatusKept = false;
#else
constexpr double kExitSeconds = 2;
constexpr bool kExitStatusKept = true;
#endif
#else
constexpr double kExitSeconds = 2;
constexpr bool kExitStatusKept = true;
#endif

// qemu-user (make check-arm) aborts a child, forked from a process with
// threads, that starts a thread of its own (status 127, "cpu == current_cpu"):
// a fault of the emulator, which scripts/run-tests.sh names in ATTN_TEST_RUNNER.
// Under it the child's own workers are left out.
static bool under_emulator() {
    const char* runner = std::getenv("ATTN_TEST_RUNNER");
    return runner != nullptr && *runner != '\0';
}

TEST_CASE("thread pool: a child forked with the pool started exits at once, and may use the pool itself") {
    const int threads = num_threads();
    const bool own_workers = !under_emulator();
    if (!own_workers) MESSAGE("under " << std::getenv("ATTN_TEST_RUNNER") << ": the child starts no workers of its own");
    start_the_pool();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the workers asleep, as between a grader's checks
    std::fflush(nullptr);  // (or the child would print what the parent had buffered)
    const auto start = std::chrono::steady_clock::now();
    const pid_t pid = fork();
    if (pid == 0) {
        // (before the fix, exit() here waited forever on workers the child does not have)
        std::atomic<int64_t> total{0};
        parallel_for(0, 1000, 1, [&](int64_t b, int64_t e) { total += e - b; });
        if (own_workers) set_num_threads(2);  // workers of its own
        parallel_for(0, 1000, 1, [&](int64_t b, int64_t e) { total += e - b; });
        std::exit(total == 2000 ? 3 : 4);
    }
    REQUIRE(pid > 0);
    int status = 0;
    bool exited = false;
    while (std::chrono::steady_clock::now() - start < std::chrono::seconds(10))
        if (waitpid(pid, &status, WNOHANG) == pid) {
            exited = true;
            break;
        } else {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    if (!exited) kill(pid, SIGKILL), waitpid(pid, &status, 0);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(exited);
    CHECK(WIFEXITED(status));
    if (kExitStatusKept) CHECK(WEXITSTATUS(status) == 3);
    CHECK(seconds < kExitSeconds);
    set_num_threads(threads);
}

TEST_CASE("child runner: a body that returns comes back whole") {
    const ChildResult r = run_in_child([] { return std::string("right\nsecond line"); }, 10);
    CHECK(r.finished);
    CHECK(r.payload == "right\nsecond line");
    CHECK(r.problem.empty());
    const ChildResult threw = run_in_child([]() -> std::string { throw std::invalid_argument("bad shape"); }, 10);
    CHECK(threw.finished);
    CHECK(threw.payload == "threw an error: bad shape");
}

TEST_CASE("child runner: exit(3) inside a check, with the pool started, is said as such at once") {
    const int threads = num_threads();
    start_the_pool();
    const ChildResult r = run_in_child([]() -> std::string { std::exit(3); }, 30);
    CHECK(!r.finished);
    if (kExitStatusKept) {
        CHECK(r.exit_code == 3);
        CHECK(has(r.problem, "your code called exit(3) inside the check"));
    }
    CHECK(r.seconds < kExitSeconds);
    const ChildResult zero = run_in_child([]() -> std::string { _exit(0); }, 30);
    CHECK(!zero.finished);
    CHECK(has(zero.problem, "exit(0)"));
    set_num_threads(threads);
}

TEST_CASE("child runner: a forged result written into every descriptor, then exit 0, is not taken for one") {
    const ChildResult r = run_in_child(
        []() -> std::string {
            // the frame's words, with a nonce the child cannot know, and the old protocol's "9 checks, 0 wrong"
            const std::string forged = "ATTN-RESULT 0 5\nright9\n0\nrrrrrrrrr\n";
            for (int fd = 3; fd < 64; ++fd) {
                struct stat st;
                if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode) && write(fd, forged.data(), forged.size()) < 0) continue;
            }
            _exit(0);
        },
        10);
    CHECK(!r.finished);
    CHECK(r.payload.empty());
    CHECK(has(r.problem, "something other than the grader wrote into its pipe"));
}

TEST_CASE("child runner: the grader's pipe made the child's standard output, then printed into, is not a result") {
    const ChildResult r = run_in_child(
        []() -> std::string {
            for (int fd = 3; fd < 64; ++fd) {
                struct stat st;
                if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode) && (fcntl(fd, F_GETFL) & O_ACCMODE) == O_WRONLY)
                    dup2(fd, STDOUT_FILENO);
            }
            std::printf("Exercise 1.1: all 9 checks right. Done.\n");
            std::fflush(stdout);
            return "9 0 rrrrrrrrr";  // the right counts, sent after the printed line
        },
        10);
    CHECK(!r.finished);
    CHECK(r.payload.empty());
    CHECK(has(r.problem, "something other than the grader wrote into its pipe"));
}

TEST_CASE("child runner: a closed pipe, a signal, a hang and a process left behind, each in words") {
    const ChildResult closed = run_in_child(
        []() -> std::string {
            for (int fd = 3; fd < 64; ++fd) close(fd);
            return "right";
        },
        10);
    CHECK(!closed.finished);
    CHECK((has(closed.problem, "closed or replaced the grader's pipe") || has(closed.problem, "still running")));

    // (doctest's own handlers reset first: the child is to die of the signal, not report it)
    const ChildResult segv = run_in_child([]() -> std::string { signal(SIGSEGV, SIG_DFL); raise(SIGSEGV); return ""; }, 10);
    CHECK(segv.signal == SIGSEGV);
    CHECK(has(segv.problem, "killed by a segmentation fault"));

    const ChildResult aborted = run_in_child([]() -> std::string { signal(SIGABRT, SIG_DFL); std::abort(); }, 10);
    CHECK(aborted.signal == SIGABRT);
    CHECK(has(aborted.problem, "an abort (SIGABRT"));

    // SIGALRM blocked: the parent's own deadline stops it
    const ChildResult hang = run_in_child(
        []() -> std::string {
            sigset_t s;
            sigemptyset(&s);
            sigaddset(&s, SIGALRM);
            sigprocmask(SIG_BLOCK, &s, nullptr);
            for (;;) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        },
        1);
    CHECK(hang.timed_out);
    CHECK(has(hang.problem, "still running after 1 s"));
    CHECK(hang.seconds < 6);

    // a grandchild holding the pipe open for a minute: the verdict does not wait for it, and it is killed.
    // (Its pid comes back in the payload: the child runner closes every other descriptor the child inherits.)
    const auto start = std::chrono::steady_clock::now();
    const ChildResult background = run_in_child(
        []() -> std::string {
            const pid_t p = fork();
            if (p == 0) {
                sleep(60);
                _exit(0);
            }
            return "right " + std::to_string(p);
        },
        10);
    CHECK(background.finished);
    REQUIRE(background.payload.rfind("right ", 0) == 0);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
    const pid_t grandchild = static_cast<pid_t>(std::stol(background.payload.substr(6)));
    REQUIRE(grandchild > 0);
    bool gone = false;
    for (int i = 0; i < 200 && !gone; ++i) {
        gone = kill(grandchild, 0) != 0;  // (reaped by init once killed: not ours to wait for)
        if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    CHECK(gone);
}

TEST_CASE("child runner: the sanitizers' reports, in words") {
    using attn::course::memory_words;
    // as AddressSanitizer prints them (GCC 12), shortened
    const std::string overflow =
        "==123==ERROR: AddressSanitizer: use-after-poison on address 0x6060000001d0 at pc 0x55 bp 0x7f sp 0x7f\n"
        "READ of size 8 at 0x6060000001d0 thread T0\n"
        "    #0 0x55d5c7e8e0b6 in attn::reference::binary(attn::Tensor const&, attn::Tensor const&, double (*)(double, "
        "double)) tensor/reference.cpp:51\n"
        "    #1 0x55d5c7e8e0b6 in main course/grade.cpp:900\n";
    CHECK(memory_words(overflow) ==
          "your code read 8 bytes outside a tensor's or a vector's memory (past its end, or before its start) in "
          "reference::binary (tensor/reference.cpp:51)");
    const std::string lambda =
        "==9==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x60\nWRITE of size 4 at 0x60 thread T0\n"
        "    #0 0x1 in void std::__fill_a1<float*>(float*, float*, float const&) /usr/include/c++/12/bits/stl_algobase.h:930\n"
        "    #1 0x2 in attn::sigmoid(attn::Var const&)::{lambda(attn::Backward&)#1}::operator()(attn::Backward&) const "
        "autograd/ops_elementwise.cpp:179\n";
    CHECK(memory_words(lambda) ==
          "your code wrote 4 bytes outside a tensor's or a vector's memory (past its end, or before its start) in "
          "sigmoid's backward function (autograd/ops_elementwise.cpp:179)");
    // more memory than can be had: the size in GiB, the student's frame (not the allocator's own)
    const std::string huge =
        "==1836==ERROR: AddressSanitizer: allocator is out of memory trying to allocate 0x1900000000 bytes\n"
        "    #0 0x7fa2ef8b94c8 in operator new(unsigned long) ../../../../src/libsanitizer/asan/asan_new_delete.cpp:95\n"
        "    #1 0x558bd18a1f0d in std::__new_allocator<char>::allocate(unsigned long, void const*) "
        "/usr/include/c++/12/bits/new_allocator.h:137\n"
        "    #2 0x558bd18a1e57 in attn::sigmoid(attn::Var const&)::{lambda(attn::Backward&)#1}::operator()"
        "(attn::Backward&) const autograd/ops_elementwise.cpp:181\n";
    CHECK(memory_words(huge) == "your code asked for 100 GiB at once, more memory than the grader can give: refused by "
                                "AddressSanitizer's allocator in sigmoid's backward function (autograd/ops_elementwise.cpp:181)");
    CHECK(memory_words("tensor/reference.cpp:27:14: runtime error: signed integer overflow: 9223372036854775807 + 1\n") ==
          "undefined behaviour at tensor/reference.cpp:27: signed integer overflow: 9223372036854775807 + 1");
    CHECK(memory_words("/usr/include/c++/12/bits/stl_vector.h:1123: constexpr std::vector<_Tp, _Alloc>::reference "
                       "std::vector<_Tp, _Alloc>::operator[](size_type) [with _Tp = long int]: Assertion '__n < "
                       "this->size()' failed.\n") ==
          "a std::vector (or std::array) was indexed at or past its size (__n < this->size())");
    CHECK(memory_words("nothing of the kind\n").empty());
}
