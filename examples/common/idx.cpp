#include "examples/common/idx.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace attn {

namespace {

std::vector<uint8_t> read_file_bytes(const std::string& path) {
    if (std::filesystem::is_directory(path)) throw std::runtime_error(path + ": is a directory, expected an IDX file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(path + ": cannot open (run `make data` to fetch Fashion-MNIST into data/)");
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b)
        throw std::runtime_error(path + ": is gzip-compressed; unpack it first (gunzip, or `make data`)");
    return bytes;
}

uint32_t big_endian_u32(const std::vector<uint8_t>& b, size_t at) {
    return (uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) | (uint32_t{b[at + 2]} << 8) | uint32_t{b[at + 3]};
}

std::string hex(uint32_t v) {
    static const char* digits = "0123456789abcdef";
    std::string s = "0x";
    for (int shift = 28; shift >= 0; shift -= 4) s += digits[(v >> shift) & 0xf];
    return s;
}

}  // namespace

IdxImages read_idx_images(const std::string& path) { return parse_idx_images(read_file_bytes(path), path); }

std::vector<uint8_t> read_idx_labels(const std::string& path) { return parse_idx_labels(read_file_bytes(path), path); }

IdxImages parse_idx_images(const std::vector<uint8_t>& b, const std::string& path) {
    if (b.size() < 16)
        throw std::runtime_error(path + ": truncated: an IDX image file needs a 16-byte header, found " +
                                 std::to_string(b.size()) + " bytes");
    const uint32_t magic = big_endian_u32(b, 0);
    if (magic != 0x00000803)
        throw std::runtime_error(path + ": bad magic number " + hex(magic) +
                                 ": expected 0x00000803 (IDX unsigned-byte images, 3 dimensions)");
    IdxImages img;
    img.count = big_endian_u32(b, 4);
    img.rows = big_endian_u32(b, 8);
    img.cols = big_endian_u32(b, 12);
    if (img.rows == 0 || img.cols == 0 || img.rows > 4096 || img.cols > 4096)
        throw std::runtime_error(path + ": implausible image size " + std::to_string(img.rows) + "×" +
                                 std::to_string(img.cols));
    const auto expected = static_cast<size_t>(16 + img.count * img.rows * img.cols);
    if (b.size() != expected)
        throw std::runtime_error(path + ": " + (b.size() < expected ? "truncated" : "too long") + ": expected " +
                                 std::to_string(expected) + " bytes (" + std::to_string(img.count) + " images of " +
                                 std::to_string(img.rows) + "×" + std::to_string(img.cols) +
                                 " after a 16-byte header), found " + std::to_string(b.size()));
    img.pixels.assign(b.begin() + 16, b.end());
    return img;
}

std::vector<uint8_t> parse_idx_labels(const std::vector<uint8_t>& b, const std::string& path) {
    if (b.size() < 8)
        throw std::runtime_error(path + ": truncated: an IDX label file needs an 8-byte header, found " +
                                 std::to_string(b.size()) + " bytes");
    const uint32_t magic = big_endian_u32(b, 0);
    if (magic != 0x00000801)
        throw std::runtime_error(path + ": bad magic number " + hex(magic) +
                                 ": expected 0x00000801 (IDX unsigned-byte labels, 1 dimension)");
    const size_t count = big_endian_u32(b, 4), expected = 8 + count;
    if (b.size() != expected)
        throw std::runtime_error(path + ": " + (b.size() < expected ? "truncated" : "too long") + ": expected " +
                                 std::to_string(expected) + " bytes (" + std::to_string(count) +
                                 " labels after an 8-byte header), found " + std::to_string(b.size()));
    std::vector<uint8_t> labels(b.begin() + 8, b.end());
    for (size_t i = 0; i < labels.size(); ++i)
        if (labels[i] > 9)
            throw std::runtime_error(path + ": label " + std::to_string(i) + " is " + std::to_string(labels[i]) +
                                     ", expected a class 0..9");
    return labels;
}

IdxDataset read_idx_dataset(const std::string& images_path, const std::string& labels_path) {
    IdxDataset d{read_idx_images(images_path), read_idx_labels(labels_path)};
    if (d.images.count != static_cast<int64_t>(d.labels.size()))
        throw std::runtime_error(images_path + " has " + std::to_string(d.images.count) + " images but " +
                                 labels_path + " has " + std::to_string(d.labels.size()) + " labels");
    return d;
}

}  // namespace attn
