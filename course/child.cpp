// The child runner of course/child.hpp. How a check comes back:
//
//   parent                                  child (the student's code runs here)
//   ------                                  -----
//   fork(); setpgid(child, child)           setpgid(0, 0); stderr → a file of the parent's
//   a nonce drawn now (after the fork,      body()
//     so the child's memory never held it)
//     → the nonce pipe                      reads the nonce from the nonce pipe
//   reads the result pipe until the child   writes one frame: "ATTN-RESULT <nonce> <bytes>\n"
//     has exited, or kills it at the          then the payload; _exit(0)
//     deadline
//   kill(−group, SIGKILL): what it left
//
// The parent accepts the payload only as one whole frame with its nonce, the
// length it says, nothing after it, and a child that then exited 0. So a
// child that exits early, prints or writes the grader's own words, or writes
// into the pipe, is never taken for a finished check: each is said as what it
// is. (A student's code can still read the nonce from the nonce pipe, in its
// own process, and write a well-formed frame that says "all right": no frame
// a child writes can prove who wrote it. So where a verdict counts, make
// grade-student, a pass also needs the judge of scripts/exercises.py: the
// student's values on draws numbered from a base drawn at run time, compared
// with this tree's solution's in a process that runs no student code.
// course/hidden/hostile.txt holds that forger; make check-exercises fails it.)
#include "course/child.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iomanip>
#include <iostream>
#include <random>
#include <regex>
#include <sstream>
#include <string>


namespace attn::course {
namespace {

constexpr int kNotSent = 87;        // the child's exit code when its frame could not be written
constexpr size_t kMostBytes = 64u << 20;  // a payload larger than this is a flood, not a result
const char* const kFrame = "ATTN-RESULT ";

bool write_all(int fd, const char* data, size_t n) {
    while (n > 0) {
        const ssize_t w = write(fd, data, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        data += w;
        n -= static_cast<size_t>(w);
    }
    return true;
}

std::string fresh_nonce() {
    std::random_device device;
    std::ostringstream os;
    for (int i = 0; i < 4; ++i) os << std::hex << device();
    return os.str();
}

// The child's side: body's payload, framed with the nonce the parent sends.
[[noreturn]] void child_side(const std::function<std::string()>& body, int result_fd, int nonce_fd, int err_fd,
                             int seconds) {
    setpgid(0, 0);
    dup2(err_fd, STDERR_FILENO);
    // Every descriptor it inherited but its own pipes closed: the pipes of the
    // checks that contain this one (the exercise's, the grader's) are not the
    // student's code's to write into.
    const long most = std::min(sysconf(_SC_OPEN_MAX), 4096L);
    for (int fd = 3; fd < most; ++fd)
        if (fd != result_fd && fd != nonce_fd) close(fd);
    alarm(static_cast<unsigned>(seconds));
    std::string payload;
    try {
        payload = body();
    } catch (const std::exception& ex) {
        payload = what_threw(ex);
    } catch (...) {
        payload = "threw something that is not a std::exception";
    }
    std::cout.flush();
    std::string nonce;
    char c;
    while (read(nonce_fd, &c, 1) == 1 && c != '\n') nonce += c;
    const std::string head = kFrame + nonce + " " + std::to_string(payload.size()) + "\n";
    if (!write_all(result_fd, head.data(), head.size()) || !write_all(result_fd, payload.data(), payload.size()))
        _exit(kNotSent);
    _exit(0);
}

// The frame's payload if `received` is exactly one frame with this nonce.
bool unframe(const std::string& received, const std::string& nonce, std::string& payload) {
    const std::string head = kFrame + nonce + " ";
    if (received.compare(0, head.size(), head) != 0) return false;
    const size_t newline = received.find('\n', head.size());
    if (newline == std::string::npos || newline == head.size()) return false;
    const std::string digits = received.substr(head.size(), newline - head.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 12) return false;
    const size_t length = std::stoull(digits);
    if (received.size() != newline + 1 + length) return false;
    payload = received.substr(newline + 1);
    return true;
}

std::string read_file(FILE* f) {
    std::string text;
    std::fflush(f);
    std::rewind(f);
    char buffer[4096];
    for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;) text.append(buffer, n);
    return text;
}

// The part of the child's standard error that is a sanitizer's or the
// standard library's report ("" if none).
std::string report_in(const std::string& err) {
    for (const char* mark : {"ERROR: AddressSanitizer", "runtime error: ", "Assertion '", "ERROR: LeakSanitizer"}) {
        const size_t at = err.find(mark);
        if (at == std::string::npos) continue;
        const size_t line = err.rfind('\n', at);
        return err.substr(line == std::string::npos ? 0 : line + 1);
    }
    return "";
}

// "attn::reference::binary(attn::Tensor const&, …)" → "reference::binary".
std::string short_function(std::string f) {
    const size_t lambda = f.find("::{lambda");
    const bool in_lambda = lambda != std::string::npos;
    if (in_lambda) f = f.substr(0, lambda);
    int depth = 0;
    for (size_t i = 0; i < f.size(); ++i) {
        if (f[i] == '<') ++depth;
        if (f[i] == '>') --depth;
        if (f[i] == '(' && depth == 0 && f.compare(i > 8 ? i - 8 : 0, 8, "operator") != 0) {
            f = f.substr(0, i);
            break;
        }
    }
    if (f.rfind("attn::", 0) == 0) f = f.substr(6);
    return in_lambda ? f + "'s backward function" : f;
}

}  // namespace

std::string what_threw(const std::exception& e) {
    const std::string w = e.what();
    if (w.rfind("not implemented", 0) == 0) return "not written yet (" + w + ")";
    return "threw an error: " + w;
}

std::string signal_words(int signal) {
    switch (signal) {
    case SIGSEGV:
        return "a segmentation fault (SIGSEGV: memory read or written outside what the program owns: an index "
               "out of range, a null or dangling pointer, or a stack overflow from recursion too deep)";
    case SIGABRT:
        return "an abort (SIGABRT: an assertion failed, or an exception escaped where none may, as from a "
               "destructor or a thread)";
    case SIGFPE: return "an arithmetic exception (SIGFPE: an integer division by zero)";
    case SIGBUS: return "a bus error (SIGBUS: memory at an address that cannot be read)";
    case SIGILL: return "an illegal instruction (SIGILL: an instruction this CPU does not have)";
    case SIGKILL: return "SIGKILL (killed from outside: too much memory, or a limit reached)";
    case SIGXCPU: return "its CPU time running out (SIGXCPU)";
    case SIGXFSZ: return "a file written past the size allowed (SIGXFSZ)";
    case SIGPIPE: return "a write to a pipe nobody reads (SIGPIPE)";
    case SIGTERM: return "SIGTERM (asked to stop)";
    default: return std::string("signal ") + std::to_string(signal) + " (" + strsignal(signal) + ")";
    }
}

std::string memory_words(const std::string& report) {
    std::smatch m;
    // where: the first frame in the tree's own files (a relative path), else the first frame
    std::string where;
    // (a path that climbs out, "../../src/libsanitizer/…", is the compiler's, not the tree's)
    static const std::regex frame(R"(#\d+ 0x[0-9a-f]+ in (.+) ((?!\.\./)[^ /][^ :]*\.(?:cpp|hpp|h)):(\d+))");
    for (auto it = std::sregex_iterator(report.begin(), report.end(), frame); it != std::sregex_iterator(); ++it) {
        where = " in " + short_function((*it)[1]) + " (" + (*it)[2].str() + ":" + (*it)[3].str() + ")";
        break;
    }
    static const std::regex asan(R"(AddressSanitizer: ([\w-]+))");
    if (std::regex_search(report, m, asan)) {
        const std::string kind = m[1];
        std::string access = "used memory";
        static const std::regex size(R"((READ|WRITE) of size (\d+))");
        std::smatch s;
        if (std::regex_search(report, s, size))
            access = std::string(s[1] == "READ" ? "read " : "wrote ") + s[2].str() + (s[2] == "1" ? " byte" : " bytes");
        if (kind == "heap-buffer-overflow" || kind == "use-after-poison")
            return "your code " + access + " outside a tensor's or a vector's memory (past its end, or before its "
                   "start)" + where;
        if (kind == "heap-use-after-free") return "your code " + access + " of memory already freed" + where;
        if (kind == "stack-buffer-overflow" || kind == "stack-use-after-scope" || kind == "stack-use-after-return")
            return "your code " + access + " outside a local array or variable" + where;
        if (kind == "global-buffer-overflow") return "your code " + access + " outside a global array" + where;
        if (kind == "stack-overflow") return "the stack overflowed (recursion too deep)" + where;
        static const std::regex too_much(R"(allocator is out of memory trying to allocate (0x[0-9a-f]+) bytes|requested allocation size (0x[0-9a-f]+))");
        std::smatch a;
        if (std::regex_search(report, a, too_much)) {
            const double bytes = std::stod(a[1].matched ? a[1].str() : a[2].str());
            std::ostringstream amount;
            amount << std::setprecision(3) << bytes / (1u << 30) << " GiB";
            return "your code asked for " + amount.str() + " at once, more memory than the grader can give: refused "
                   "by AddressSanitizer's allocator" + where;
        }
        if (kind == "SEGV") return "your code used an address no memory is at (a null or wild pointer)" + where;
        if (kind == "container") return "your code " + access + " past a std::vector's size" + where;
        return "AddressSanitizer stopped it (" + kind + ")" + where;
    }
    static const std::regex ub(R"(([^ \n:]+):(\d+):\d+: runtime error: ([^\n]+))");
    if (std::regex_search(report, m, ub))
        return "undefined behaviour at " + m[1].str() + ":" + m[2].str() + ": " + m[3].str();
    static const std::regex assertion(R"(: ([^\n]*?)(?:\[with[^\n]*)?: Assertion '([^']+)' failed)");
    if (std::regex_search(report, m, assertion)) {
        const std::string what = m[1], condition = m[2];
        if (what.find("operator[]") != std::string::npos)
            return "a std::vector (or std::array) was indexed at or past its size (" + condition + ")";
        if (condition.find("empty()") != std::string::npos)
            return "back(), front() or pop_back() was called on an empty std::vector (" + condition + ")";
        return "the standard library's own check failed: " + condition;
    }
    return "";
}

namespace {
int g_most_seconds = 0;  // set_time_cap
}  // namespace

void set_time_cap(int seconds) { g_most_seconds = seconds; }

ChildResult run_in_child(const std::function<std::string()>& body, int seconds) {
    if (g_most_seconds > 0) seconds = std::min(seconds, g_most_seconds);
    ChildResult result;
    int result_pipe[2], nonce_pipe[2];
    FILE* err = std::tmpfile();
    if (!err || pipe(result_pipe) != 0) {
        result.problem = "could not start the check (no pipe or temporary file)";
        return result;
    }
    if (pipe(nonce_pipe) != 0) {
        close(result_pipe[0]), close(result_pipe[1]);
        result.problem = "could not start the check (no pipe)";
        return result;
    }
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    const auto start = std::chrono::steady_clock::now();
    const pid_t pid = fork();
    if (pid == 0) {
        close(result_pipe[0]);
        close(nonce_pipe[1]);
        child_side(body, result_pipe[1], nonce_pipe[0], fileno(err), seconds);
    }
    close(result_pipe[1]);
    close(nonce_pipe[0]);
    if (pid < 0) {
        close(result_pipe[0]), close(nonce_pipe[1]), std::fclose(err);
        result.problem = "could not start the check (fork failed)";
        return result;
    }
    setpgid(pid, pid);  // (the child does the same: whichever runs first)
    const std::string nonce = fresh_nonce();
    signal(SIGPIPE, SIG_IGN);
    write_all(nonce_pipe[1], (nonce + "\n").data(), nonce.size() + 1);
    close(nonce_pipe[1]);

    // Read until the child has exited (not until the pipe closes: a process it
    // left behind may hold the pipe open), or kill it at the deadline.
    fcntl(result_pipe[0], F_SETFL, fcntl(result_pipe[0], F_GETFL) | O_NONBLOCK);
    const auto deadline = start + std::chrono::seconds(seconds) + std::chrono::seconds(2);
    std::string received;
    int status = 0;
    bool exited = false, flooded = false;
    auto drain = [&] {
        char buffer[65536];
        for (ssize_t n; (n = read(result_pipe[0], buffer, sizeof buffer)) > 0;) {
            received.append(buffer, static_cast<size_t>(n));
            if (received.size() > kMostBytes) {
                flooded = true;
                return;
            }
        }
    };
    while (!exited) {
        pollfd p{result_pipe[0], POLLIN, 0};
        poll(&p, 1, 20);
        drain();
        if (waitpid(pid, &status, WNOHANG) == pid) exited = true;
        if (!exited && (flooded || std::chrono::steady_clock::now() > deadline)) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            exited = true;
            result.timed_out = !flooded;
        }
    }
    drain();
    kill(-pid, SIGKILL);  // whatever the check left running
    close(result_pipe[0]);
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string err_text = read_file(err);
    std::fclose(err);

    if (WIFSIGNALED(status)) {
        result.signal = WTERMSIG(status);
        if (result.signal == SIGALRM) result.timed_out = true;
    } else if (WIFEXITED(status)) {
        result.exit_code = WEXITSTATUS(status);
    }
    result.framed = !flooded && unframe(received, nonce, result.payload);
    result.report = report_in(err_text);
    if (!result.report.empty()) {
        result.problem = memory_words(result.report);
        if (result.problem.empty()) result.problem = "a sanitizer stopped it: " + result.report.substr(0, 300);
    } else if (!err_text.empty()) {
        std::cerr << err_text;  // what the student's code printed there, as it would have appeared
        std::cerr.flush();
    }
    if (result.framed && result.exit_code == 0 && result.report.empty()) {
        result.finished = true;
        return result;
    }
    result.payload.clear();
    if (!result.problem.empty()) return result;
    if (flooded)
        result.problem = "it wrote more than " + std::to_string(kMostBytes >> 20) + " MiB into the grader's pipe: stopped";
    else if (result.timed_out)
        result.problem = "still running after " + std::to_string(seconds) +
                         " s (the time limit): a loop that never ends, or work that grows far faster than it should";
    else if (result.signal)
        result.problem = "the program was killed by " + signal_words(result.signal);
    else if (result.exit_code == kNotSent)
        result.problem = "the check's result could not be sent back: your code closed or replaced the grader's pipe";
    else if (!received.empty() && !result.framed)
        result.problem = "something other than the grader wrote into its pipe (" + std::to_string(received.size()) +
                         " bytes that are not the check's result)" +
                         (result.exit_code >= 0 ? ", and the check ended with exit(" +
                                                      std::to_string(result.exit_code) + ")" : "");
    else if (result.exit_code >= 0)
        result.problem = "your code called exit(" + std::to_string(result.exit_code) +
                         ") inside the check (a check must return; a wrong input is refused by throwing)";
    else
        result.problem = "the check ended without its result";
    return result;
}

std::string crash_words(const ChildResult& r) {
    if (!r.problem.empty()) return r.problem;
    if (r.timed_out) return "still running after the time limit";
    if (r.signal) return "the program was killed by " + signal_words(r.signal);
    return "the check ended without its result";
}

}  // namespace attn::course
