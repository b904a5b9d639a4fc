// Checkpoints in the safetensors format (https://github.com/huggingface/safetensors),
// so that a PyTorch user can open them with safetensors.torch.load_file.
//
// The format, byte by byte:
//
//   [0, 8)        N, the header length, an unsigned 64-bit little-endian integer
//   [8, 8+N)      the header: a JSON object, padded with spaces to make 8+N a
//                 multiple of 8 (as the reference writer does)
//                   {"__metadata__": {"epoch": "3"},                  optional
//                    "encoder.weight": {"dtype": "F32", "shape": [4, 3],
//                                       "data_offsets": [0, 48]}, ...}
//   [8+N, end)    the data: each tensor's values, row-major, little-endian;
//                 data_offsets [begin, end) count from the start of the data
//
// The writer stores every tensor as F32 (the double build converts), sorted
// by name as the reference implementation does, and writes atomically
// (io/atomic_file.hpp): a crash never leaves half a checkpoint.
//
// The reader trusts nothing: a truncated, corrupted or hostile file throws a
// std::runtime_error that names the file and the problem, e.g.
//   load_safetensors: 'ckpt.safetensors': tensor "fc.bias": data_offsets [48, 60]
//   hold 12 bytes, but F32 with shape [4] needs 16
// It reads F32, F64, F16 and BF16 (converted to `real`); other dtypes are
// rejected by name. docs/checkpoints.md has the details.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tensor/tensor.hpp"

namespace attn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// What a checkpoint holds: its tensors in header order (for files this
// library wrote, sorted by name) and the string metadata.
struct SafetensorsFile {
    std::string path;  // where it was read from, for error messages
    NamedTensors tensors;
    std::map<std::string, std::string> metadata;

    bool contains(std::string_view name) const;
    // The tensor called `name`; throws std::out_of_range naming the file and
    // the names it does hold.
    const Tensor& at(std::string_view name) const;
};

// Writes `tensors` (unique names, not "__metadata__"; every tensor defined)
// and `metadata` to `path`, atomically. Throws std::invalid_argument for bad
// input and std::runtime_error when the file cannot be written; either way
// an existing file at `path` is left as it was.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// Reads and validates a whole checkpoint.
SafetensorsFile load_safetensors(const std::string& path);

// The same two steps in memory: the exact bytes save_safetensors writes, and
// the parser load_safetensors uses (`source` names the bytes in errors).
std::string serialize_safetensors(const NamedTensors& tensors,
                                  const std::map<std::string, std::string>& metadata = {});
SafetensorsFile parse_safetensors(std::string_view bytes, const std::string& source);

}  // namespace attn
