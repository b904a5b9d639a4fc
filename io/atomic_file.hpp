// Writing a file so that a crash never leaves half of it behind.
//
// The bytes go to a temporary file in the same directory (`path.tmp.<pid>`),
// which is flushed and fsync'ed to disk, closed, and then renamed over `path`.
// rename() within one file system is atomic: a reader (or the next run after
// a crash or power cut) sees either the old file or the new one, never a mix.
// Finally the directory is fsync'ed so that the rename itself is durable.
// A save killed before its rename leaves `path.tmp.<pid>` behind; the next
// save of `path` removes those whose process no longer exists.
//
// Only a regular file is ever replaced. A path that names a device, a FIFO,
// a directory, a socket or a symbolic link is refused before anything is
// written: rename() would put a regular file in its place (run as root,
// `--svg /dev/null` once replaced /dev/null itself), and a link is refused
// rather than followed or replaced, as either would surprise someone (the
// link's target left stale, or a file outside the folder overwritten). A
// path that does not exist yet is fine.
//
// Checkpoints (io/safetensors.hpp), the HTML report, the SVG pictures and
// every other file the trainers write use it; MetricsLog, which appends,
// applies the same rule through special_file_problem().
#pragma once

#include <string>
#include <string_view>

namespace attn {

// Why `path` must not be written: "is a character device, not a regular
// file; give a file path" (a block device, a FIFO, a socket, a directory, a
// symbolic link — the link itself, not what it points to), or "" when it is
// a regular file or does not exist.
std::string special_file_problem(const std::string& path);

// Replaces `path` by `bytes` atomically. On any failure (directory missing or
// not writable, disk full, `path` is not a regular file, ...) it removes the
// temporary file, leaves the old file untouched, and throws
// std::runtime_error naming `what` (e.g. "save_safetensors"), the path and
// the system's reason.
void write_file_atomic(const std::string& path, std::string_view bytes, const char* what = "write_file_atomic");

}  // namespace attn
