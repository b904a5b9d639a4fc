// The grader's files read where they enter (course/course_files.hpp,
// course/exercises.hpp): a file missing, a folder, random bytes, a line of
// the wrong form each said with the file, the line and what was expected;
// the progress file written whole and renamed; and one make grade at a time
// in a tree (scripts/grade-lock.sh, taken by the Makefile).
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>
#include <thread>

#include "course/course_files.hpp"
#include "course/exercises.hpp"
#include "tests/helpers.hpp"

namespace {

using attn::testing::error_of;
using attn::testing::read_file;
using attn::testing::repository_path;
using attn::testing::TempDir;
namespace course = attn::course;

void write(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
}

struct Run {
    int status = -1;
    std::string output;
};

Run run(const std::string& command, const TempDir& dir) {
    const std::string full = command + " > '" + (dir / "output") + "' 2>&1";
    const int raw = std::system(full.c_str());
    return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, read_file(dir / "output")};
}

const std::string kProgressForm =
    "expected 'WHEN<TAB>ID<TAB>right or wrong<TAB>RIGHT/CHECKS[<TAB>MISTAKE]...' with WHEN as YYYY-MM-DD HH:MM "
    "(a line make grade writes)";

}  // namespace

TEST_CASE("course files: the progress file's lines read back as written") {
    course::Attempt a;
    a.when = "2026-12-02 07:12";
    a.id = "additive_score";
    a.right = false;
    a.right_checks = 3;
    a.checks = 5;
    a.mistakes = {"the bias b dropped", "tanh for sigmoid"};
    const std::string line = course::progress_line(a);
    CHECK(line == "2026-12-02 07:12\tadditive_score\twrong\t3/5\tthe bias b dropped\ttanh for sigmoid");
    const auto back = course::parse_progress(line + "\n\n" + line + "\r\n", "p.txt");
    REQUIRE(back.size() == 2);
    CHECK(course::progress_line(back[1]) == line);
    CHECK(course::parse_progress("", "p.txt").empty());
}

TEST_CASE("course files: a progress line of another form, or bytes that are not text, name the file and the line") {
    const std::string good = "2026-12-02 07:12\tsoftmax\tright\t5/5\n";
    CHECK(error_of([&] { course::parse_progress(good + "2026-12-02 07:13\tsoftmax\tright\n", "course/progress.txt"); }) ==
          "course/progress.txt:2: " + kProgressForm + ", got '2026-12-02 07:13\\tsoftmax\\tright'");
    CHECK(error_of([&] { course::parse_progress(good + "yesterday\tsoftmax\tright\t5/5\n", "course/progress.txt"); }) ==
          "course/progress.txt:2: " + kProgressForm + ", got 'yesterday\\tsoftmax\\tright\\t5/5'");
    CHECK(error_of([&] { course::parse_progress("2026-12-02 07:12\tsoftmax\tright\t6/5\n", "course/progress.txt"); }) ==
          "course/progress.txt:1: " + kProgressForm + ", got '2026-12-02 07:12\\tsoftmax\\tright\\t6/5'");
    CHECK(error_of([&] { course::parse_progress(good + good + std::string("\x89PNG\x0d\x0a\x1a\x0a", 8), "course/progress.txt"); }) ==
          "course/progress.txt:4: expected a line of text, got the byte 0x1a at column 1 (is this the right file?)");
    CHECK(error_of([&] { course::parse_progress(std::string("ab\0c", 4), "course/progress.txt"); }) ==
          "course/progress.txt:1: expected a line of text, got the byte 0x00 at column 3 (is this the right file?)");
}

TEST_CASE("course files: an attempt is added by writing the file again whole and renaming it") {
    TempDir dir("course_files");
    const std::string path = dir / "progress.txt";
    course::Attempt a;
    a.when = "2026-12-02 07:12";
    a.id = "softmax";
    a.right = true;
    a.right_checks = a.checks = 4;
    course::record_attempt(path, a);  // made when missing
    CHECK(read_file(path) == "2026-12-02 07:12\tsoftmax\tright\t4/4\n");
    struct stat before {};
    REQUIRE(::stat(path.c_str(), &before) == 0);
    write(path, read_file(path) + "2026-12-02 07:13\tsoftmax\twrong\t0/4");  // a last line without its '\n'
    REQUIRE(::stat(path.c_str(), &before) == 0);
    course::record_attempt(path, a);
    CHECK(read_file(path) ==
          "2026-12-02 07:12\tsoftmax\tright\t4/4\n2026-12-02 07:13\tsoftmax\twrong\t0/4\n2026-12-02 07:12\tsoftmax\tright\t4/4\n");
    struct stat after {};
    REQUIRE(::stat(path.c_str(), &after) == 0);
    CHECK(after.st_ino != before.st_ino);  // a new file renamed over the old: never half written in place
    CHECK(std::distance(std::filesystem::directory_iterator(dir.path), std::filesystem::directory_iterator()) == 1);
}

TEST_CASE("course files: a progress file that is a folder, unreadable or not the grader's is left as it was, said") {
    TempDir dir("course_files");
    const std::string path = dir / "progress.txt";
    course::Attempt a;
    a.when = "2026-12-02 07:12";
    a.id = "softmax";
    std::filesystem::create_directory(path);
    CHECK(error_of([&] { course::record_attempt(path, a); }) == path + ": is a folder, not a file (your attempts)");
    std::filesystem::remove(path);
    const std::string noise = "2026-12-02 07:12\tsoftmax\tright\t5/5\n\x01\x02 random\n";
    write(path, noise);
    CHECK(error_of([&] { course::record_attempt(path, a); }) ==
          path + ":2: expected a line of text, got the byte 0x01 at column 1 (is this the right file?)");
    CHECK(read_file(path) == noise);
    write(path, "softmax right\n");
    CHECK(error_of([&] { course::record_attempt(path, a); }) == path + ":1: " + kProgressForm + ", got 'softmax right'");
    CHECK(read_file(path) == "softmax right\n");
    if (::geteuid() != 0) {  // (root reads any file)
        write(path, "");
        std::filesystem::permissions(path, std::filesystem::perms::none);
        CHECK(error_of([&] { course::record_attempt(path, a); }) == path + ": cannot be read (your attempts)");
    }
    CHECK(error_of([&] { course::read_course_file(dir / "none.txt", "the exercise list"); }) ==
          dir / "none.txt" + ": not found (the exercise list)");
    // Read forever before: a FIFO, a link to /dev/zero.
    REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
    CHECK(error_of([&] { course::read_course_file(dir / "fifo", "your attempts"); }) ==
          dir / "fifo" + ": is not a plain file (a device, a FIFO or a socket) (your attempts)");
    std::filesystem::create_symlink("/dev/zero", dir / "zero");
    CHECK(error_of([&] { course::record_attempt(dir / "zero", a); }) ==
          dir / "zero" + ": is not a plain file (a device, a FIFO or a socket) (your attempts)");
    {
        std::ofstream big(dir / "big", std::ios::binary);
        big.seekp((64 << 20) + 1);
        big.put('\n');
    }
    CHECK(error_of([&] { course::read_course_file(dir / "big", "your attempts"); }) ==
          dir / "big" + ": holds 67108866 bytes, more than the 67108864 a course file may (your attempts)");
}

TEST_CASE("course files: the assignment and the capstone name the line and what was expected") {
    const auto ids = course::parse_assignment("# the exercises\n  softmax \r\n\n2.1\n", "course/assignment.txt");
    REQUIRE(ids.size() == 2);
    CHECK(ids[0].id == "softmax");
    CHECK(ids[0].line == 2);
    CHECK(ids[1].id == "2.1");
    CHECK(ids[1].line == 4);
    CHECK(error_of([] { course::parse_assignment("softmax\nsoftmax additive_score\n", "course/assignment.txt"); }) ==
          "course/assignment.txt:2: expected one exercise id a line (letters, digits, '_'; or its number, 2.1), "
          "got 'softmax additive_score'");
    CHECK(error_of([] { course::parse_assignment(std::string("\xff\xfe\x00s", 4), "course/assignment.txt"); }) ==
          "course/assignment.txt:1: expected a line of text, got the byte 0x00 at column 3 (is this the right file?)");

    const std::string capstone = "# header\npaper: Kim et al.\nentry: low_rank_bilinear_score\n"
                                 "code: attention/scores.cpp | Var f() {\nfile: attention/scores.cpp\n";
    const auto entries = course::parse_capstone_entries(capstone, "course/capstone.txt");
    REQUIRE(entries.size() == 1);
    CHECK(entries[0].id == "low_rank_bilinear_score");
    CHECK(error_of([&] { course::parse_capstone_entries(capstone + "entry low_rank\n", "course/capstone.txt"); }) ==
          "course/capstone.txt:6: expected 'KEY: VALUE' (paper, entry, code, file), got 'entry low_rank'");
    CHECK(error_of([&] { course::parse_capstone_entries(capstone + "entries: a\n", "course/capstone.txt"); }) ==
          "course/capstone.txt:6: expected 'KEY: VALUE' with KEY one of paper, entry, code, file, got 'entries: a'");
    CHECK(error_of([&] { course::parse_capstone_entries(capstone + "entry: two words\n", "course/capstone.txt"); }) ==
          "course/capstone.txt:6: expected 'entry: ID', the id of a registry entry, got 'entry: two words'");
    CHECK(error_of([&] { course::parse_capstone_entries(capstone + "code: attention/scores.cpp\n", "course/capstone.txt"); }) ==
          "course/capstone.txt:6: expected 'code: FILE | OPENING LINE', got 'code: attention/scores.cpp'");
}

TEST_CASE("course files: the exercise list names the line and what was expected") {
    const std::string list = "# header\n## 1.1 The sigmoid\nid: sigmoid_backward\ncut: a.cpp | void f() {\ngrade: ops sigmoid\n";
    CHECK(course::parse_exercises(list, "course/exercises.txt").size() == 1);
    CHECK(error_of([&] { course::parse_exercises(list + "## 1.2 Again\nid: sigmoid_backward\ncut: a.cpp | void g() {\ngrade: x\n",
                                                 "course/exercises.txt"); }) ==
          "course/exercises.txt:6: exercise 1.2 (sigmoid_backward): its id is that of the exercise at line 2");
    CHECK(error_of([&] { course::parse_exercises(list + "## 1.2 Again\nid: two words\ncut: a.cpp | void g() {\ngrade: x\n",
                                                 "course/exercises.txt"); }) ==
          "course/exercises.txt:6: exercise 1.2: expected an id of letters, digits and '_', got 'two words'");
    CHECK(error_of([&] { course::parse_exercises("id: x\n", "course/exercises.txt"); }) ==
          "course/exercises.txt:1: expected '## NUMBER TITLE' before the first field");
    CHECK(error_of([&] { course::parse_exercises("# only a comment\n", "course/exercises.txt"); }) ==
          "course/exercises.txt: expected exercises ('## NUMBER TITLE' blocks), found none");
    CHECK(error_of([&] { course::parse_exercises(list + "\x7f" "ELF\n", "course/exercises.txt"); }) ==
          "course/exercises.txt:6: expected a line of text, got the byte 0x7f at column 1 (is this the right file?)");
    CHECK(error_of([&] { course::parse_exercises("## 1.1 A\nid: a\ngrade: ops a\n", "course/exercises.txt"); }) ==
          "course/exercises.txt:1: exercise 1.1 needs an id, a cut and a grade line");
    // The list as it is shipped reads.
    CHECK(course::read_exercises(repository_path("course/exercises.txt")).size() > 10);
}

// Two make grade at once in one tree rebuilt the same archives under each
// other. The Makefile takes build/grade.lock (here GRADE_LOCK, a file of the
// test's) before building anything: while one holds it, make progress is
// refused at once with the holder's pid, start time and command line; killed,
// the holder holds nothing more.
TEST_CASE("course files: a second make grade in a tree is refused while the first holds the lock, and not after") {
    TempDir dir("grade_lock");
    const std::string lock = dir / "grade.lock";
    const std::string script = repository_path("scripts/grade-lock.sh");
    const std::string root = std::filesystem::path(repository_path("Makefile")).parent_path().string();
    // The holder: the lock script running a command that waits, as make grade's would.
    REQUIRE(std::system(("sh '" + script + "' '" + lock + "' 'make grade EX=softmax' sleep 60 > /dev/null 2>&1 & echo $! > '" +
                         (dir / "holder") + "'").c_str()) == 0);
    const pid_t holder = std::stoi(read_file(dir / "holder"));
    for (int i = 0; i < 200 && read_file(lock).empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
    const std::string held = read_file(lock);
    REQUIRE(held.rfind("pid " + std::to_string(holder) + ", started ", 0) == 0);
    const std::string started = held.substr(held.find("started ") + 8, 8);

    const std::string make = "cd '" + (root.empty() ? std::string(".") : root) +
                             "' && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -s progress GRADE_LOCK='" +
                             lock + "'";
    const Run refused = run(make, dir);
    CHECK(refused.status == 2);
    CHECK(refused.output.rfind("another make grade is running in this tree (pid " + std::to_string(holder) + ", started " +
                                   started + ", `make grade EX=softmax`); wait for it or stop it\n",
                               0) == 0);

    ::kill(holder, SIGKILL);
    for (int i = 0; i < 200 && ::kill(holder, 0) == 0; ++i) {
        ::waitpid(holder, nullptr, WNOHANG);
        std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    const Run after = run("sh '" + script + "' '" + lock + "' 'make progress' echo ran", dir);
    CHECK(after.status == 0);
    CHECK(after.output == "ran\n");
}

// What stops the lock from being taken is said as such, never as another
// make grade running: a lock file that is a folder, a GRADE_WAIT that is no
// number; and where flock(1) is missing (macOS), make grade runs unlocked, saying so.
TEST_CASE("course files: the lock's own problems are said as such; without flock(1) it runs unlocked, said") {
    TempDir dir("grade_lock");
    const std::string script = repository_path("scripts/grade-lock.sh");
    std::filesystem::create_directory(dir / "folder.lock");
    const Run folder = run("sh '" + script + "' '" + (dir / "folder.lock") + "' 'make grade' echo ran", dir);
    CHECK(folder.status == 2);
    CHECK(folder.output == "the lock of one make grade at a time, " + (dir / "folder.lock") +
                               ", cannot be opened for writing (a folder, or read-only): remove it or make it writable\n");
    const Run wait = run("GRADE_WAIT=soon sh '" + script + "' '" + (dir / "grade.lock") + "' 'make grade' echo ran", dir);
    CHECK(wait.status == 2);
    CHECK(wait.output == "GRADE_WAIT: expected a whole number of seconds, got 'soon'\n");

    // A PATH with what the script needs but flock.
    std::filesystem::create_directory(dir / "bin");
    for (const char* tool : {"mkdir", "dirname", "head", "date", "echo"})
        for (const char* where : {"/usr/bin/", "/bin/"})
            if (std::filesystem::exists(std::string(where) + tool) && !std::filesystem::exists(dir / "bin/" + tool)) {
                std::filesystem::create_symlink(std::string(where) + tool, dir / "bin/" + tool);
                break;
            }
    const Run unlocked = run("PATH='" + (dir / "bin") + "' /bin/sh '" + script + "' '" + (dir / "grade.lock") +
                                 "' 'make grade' echo ran",
                             dir);
    CHECK(unlocked.status == 0);
    CHECK(unlocked.output ==
          "(flock(1) not found: this runs without the lock of one make grade at a time; run one at a time)\nran\n");
}

// Two graders run at once outside make (build/course/grade twice) each read
// the file, add their line and rename: without a lock one's line was lost.
TEST_CASE("course files: attempts recorded at once by several processes are all kept") {
    TempDir dir("course_files");
    const std::string path = dir / "progress.txt";
    constexpr int kProcesses = 4, kEach = 40;
    std::vector<pid_t> children;
    for (int p = 0; p < kProcesses; ++p) {
        const pid_t child = ::fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            course::Attempt a;
            a.when = "2026-12-02 07:12";
            a.id = "p" + std::to_string(p);
            a.checks = 1;
            try {
                for (int i = 0; i < kEach; ++i) course::record_attempt(path, a);
            } catch (...) {
                ::_exit(1);
            }
            ::_exit(0);
        }
        children.push_back(child);
    }
    int failed = 0;
    for (const pid_t child : children) {
        int status = 0;
        ::waitpid(child, &status, 0);
        failed += WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
    }
    CHECK(failed == 0);
    CHECK(course::parse_progress(read_file(path), path).size() == size_t{kProcesses * kEach});
}
