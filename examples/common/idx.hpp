// IDX files (LeCun's MNIST format), as Fashion-MNIST ships them: the caption
// example composes its scenes from them and the zoo's vision task classifies
// them. Both read through here, so both get the same checks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attn {

// An IDX file (LeCun's MNIST format): big-endian magic 0x00000803 (images:
// count, rows, cols, then bytes) or 0x00000801 (labels: count, then bytes).
struct IdxImages {
    int64_t count = 0, rows = 0, cols = 0;
    std::vector<uint8_t> pixels;  // count·rows·cols, row-major
};
// Throw std::runtime_error naming the file and what was wrong: missing file,
// gzip-compressed file, wrong magic number, a header that does not fit, or a
// truncated body ("...: truncated: expected 47040016 bytes (60000 images of
// 28×28 after a 16-byte header), found 1000").
IdxImages read_idx_images(const std::string& path);
std::vector<uint8_t> read_idx_labels(const std::string& path);
// The same from the file's bytes; `path` names them in errors.
IdxImages parse_idx_images(const std::vector<uint8_t>& bytes, const std::string& path);
std::vector<uint8_t> parse_idx_labels(const std::vector<uint8_t>& bytes, const std::string& path);

// Images and their labels, read together: one label per image, or throw
// naming both files and both counts.
struct IdxDataset {
    IdxImages images;
    std::vector<uint8_t> labels;
};
IdxDataset read_idx_dataset(const std::string& images_path, const std::string& labels_path);

}  // namespace attn
