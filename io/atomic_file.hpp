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
// Checkpoints (io/safetensors.hpp) and the HTML report use it.
#pragma once

#include <string>
#include <string_view>

namespace attn {

// Replaces `path` by `bytes` atomically. On any failure (directory missing or
// not writable, disk full, `path` is a directory, ...) it removes the
// temporary file, leaves the old file untouched, and throws
// std::runtime_error naming `what` (e.g. "save_safetensors"), the path and
// the system's reason.
void write_file_atomic(const std::string& path, std::string_view bytes, const char* what = "write_file_atomic");

}  // namespace attn
