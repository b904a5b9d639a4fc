// Reading a user's picture for caption --predict: PGM (P2 text or P5 binary,
// any maxval up to 65535) and PNG (every colour type, bit depths 1–16, not
// interlaced), as a grayscale image with values in [0, 1]. PNG's compressed
// data is DEFLATE (RFC 1951); the decoder is here, in plain C++, since the
// project uses no zlib. Everything a file says is checked before it is
// used: a bad file gives an error naming it and what is wrong, never a crash
// (fuzz/image.cpp runs the parser on arbitrary bytes).
//
//     const GrayImage img = read_image("cat.png");
//     const Tensor pixels = resize_image(img, 56, 56);  // H×W for the model
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/tensor.hpp"

namespace attn {

struct GrayImage {
    int64_t height = 0, width = 0;
    std::vector<float> pixels;  // height·width, row-major, 0 = black … 1 = white
};

// Throws std::runtime_error naming `path` ("cat.png: not a PGM or PNG file").
GrayImage read_image(const std::string& path);
// The same from a file's bytes; `name` names them in errors.
GrayImage parse_image(std::string_view bytes, const std::string& name);

// DEFLATE (RFC 1951) decompression of a zlib stream (RFC 1950: a 2-byte header,
// the DEFLATE data, an Adler-32 checksum that is verified). Refuses output
// beyond `max_output` bytes.
std::vector<uint8_t> zlib_inflate(std::string_view data, size_t max_output);

// The image resampled to height×width by averaging the source pixels each
// target pixel covers (a box filter; the nearest pixel when enlarging), as an
// H×W tensor.
Tensor resize_image(const GrayImage& image, int64_t height, int64_t width);

}  // namespace attn
