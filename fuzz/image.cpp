// PGM and PNG (with its DEFLATE decoder), for caption --predict: what parses
// must have the size its header promises and every pixel in [0, 1]; then
// resizing it to the model's input must work.
#include <cmath>
#include <stdexcept>
#include <string_view>

#include "examples/common/image.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
    try {
        const attn::GrayImage img =
            attn::parse_image(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz-image");
        if (img.pixels.size() != static_cast<size_t>(img.width * img.height)) __builtin_trap();
        for (float p : img.pixels)
            if (!(p >= 0 && p <= 1)) __builtin_trap();
        if (img.width * img.height <= 4096) attn::resize_image(img, 7, 5);
    } catch (const std::runtime_error&) {
    }
    return 0;
}
