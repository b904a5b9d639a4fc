// Reading a data file a user named (--data): the whole file, as bytes.
#pragma once

#include <cstdint>
#include <string>

namespace attn {

// The bytes of the file at `path`, which must be a regular file of at most
// `max_bytes` (a GiB by default); else std::runtime_error naming the path and
// `what` it should have been ("a lexicon file"). A FIFO once made the trainer
// wait forever, and --data /dev/zero grew in memory without bound.
std::string read_data_file(const std::string& path, const std::string& what,
                           int64_t max_bytes = int64_t{1} << 30);

}  // namespace attn
