#include "io/atomic_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace attn {

namespace {

std::string system_reason() { return std::strerror(errno); }

// The directory holding `path` ("." for a bare file name).
std::string directory_of(const std::string& path) {
    const size_t slash = path.find_last_of('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return path.substr(0, slash);
}

// Removes the temporary file unless the rename has consumed it, so that
// every early exit (exception) cleans up.
struct TempFile {
    std::string path;
    int fd = -1;
    bool renamed = false;
    ~TempFile() {
        if (fd >= 0) ::close(fd);
        if (!renamed) ::unlink(path.c_str());
    }
};

// A save killed before its rename (kill -9, a power cut) leaves its
// temporary file, as large as the checkpoint, behind. The next save of the
// same path removes every `path.tmp.<pid>` whose process is gone; a live
// process's file (a concurrent save) is left alone. Best effort: a file that
// cannot be listed or removed is skipped, never an error.
void remove_stale_temporaries(const std::string& path) {
    namespace fs = std::filesystem;
    const std::string prefix = fs::path(path).filename().string() + ".tmp.";
    std::error_code ec;
    fs::directory_iterator it(directory_of(path), ec), end;
    for (; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
        const std::string digits = name.substr(prefix.size());
        if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
        const pid_t pid = static_cast<pid_t>(std::stol(digits));
        if (pid == ::getpid()) continue;                           // ours is made fresh below
        if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH) {  // no such process
            std::error_code ignored;
            fs::remove(it->path(), ignored);
        }
    }
}

}  // namespace

std::string special_file_problem(const std::string& path) {
    struct stat st {};
    if (path.empty() || ::lstat(path.c_str(), &st) != 0) return "";  // nothing there yet (or unreadable: the write says)
    const char* kind = S_ISREG(st.st_mode)  ? nullptr
                       : S_ISLNK(st.st_mode)  ? "a symbolic link"
                       : S_ISDIR(st.st_mode)  ? "a directory"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISFIFO(st.st_mode) ? "a FIFO (named pipe)"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "a file of an unknown kind";
    if (!kind) return "";
    return std::string("is ") + kind + ", not a regular file; give a file path";
}

void write_file_atomic(const std::string& path, std::string_view bytes, const char* what) {
    const std::string prefix = std::string(what) + ": cannot write '" + path + "': ";
    if (path.empty() || path.back() == '/') throw std::runtime_error(prefix + "not a file name");
    // Checked before the temporary file exists. A path that turns special
    // between this check and the rename is replaced, not written through:
    // rename() never follows a link nor writes into a device.
    if (const std::string problem = special_file_problem(path); !problem.empty())
        throw std::runtime_error(prefix + problem);

    remove_stale_temporaries(path);
    TempFile tmp;
    tmp.path = path + ".tmp." + std::to_string(::getpid());
    tmp.fd = ::open(tmp.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (tmp.fd < 0) {
        tmp.renamed = true;  // nothing was created, nothing to remove
        throw std::runtime_error(prefix + "cannot create the temporary file '" + tmp.path + "': " + system_reason());
    }

    // write() may write less than asked (signals, pipes): loop until done.
    size_t written = 0;
    while (written < bytes.size()) {
        const ssize_t n = ::write(tmp.fd, bytes.data() + written, bytes.size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw std::runtime_error(prefix + "writing '" + tmp.path + "' failed: " + system_reason());
        written += static_cast<size_t>(n);
    }
    // The data must be on disk before the rename makes it visible, or a power
    // cut could leave the new name pointing at an empty file.
    if (::fsync(tmp.fd) != 0) throw std::runtime_error(prefix + "fsync failed: " + system_reason());
    const int fd = tmp.fd;
    tmp.fd = -1;
    if (::close(fd) != 0) throw std::runtime_error(prefix + "close failed: " + system_reason());

    if (::rename(tmp.path.c_str(), path.c_str()) != 0)
        throw std::runtime_error(prefix + "renaming '" + tmp.path + "' over it failed: " + system_reason());
    tmp.renamed = true;

    // Make the rename durable. Some file systems cannot sync a directory
    // (EINVAL); the file itself is complete then, so that is not an error.
    const int dir = ::open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return;  // e.g. a directory we may write but not read; the rename is done
    const int rc = ::fsync(dir);
    const int sync_errno = errno;
    ::close(dir);
    if (rc != 0 && sync_errno != EINVAL) {
        errno = sync_errno;
        throw std::runtime_error(std::string(what) + ": '" + path +
                                 "' was written, but syncing its directory failed: " + system_reason());
    }
}

}  // namespace attn
