// IDX (MNIST's format): images or labels, chosen by the first byte; what
// parses must have the sizes its header promises.
#include <stdexcept>
#include <vector>

#include "examples/common/idx.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
    if (size == 0) return 0;
    const std::vector<uint8_t> bytes(data + 1, data + size);
    try {
        if (data[0] & 1) {
            const attn::IdxImages images = attn::parse_idx_images(bytes, "fuzz-images");
            if (images.pixels.size() != static_cast<size_t>(images.count * images.rows * images.cols)) __builtin_trap();
        } else {
            const std::vector<uint8_t> labels = attn::parse_idx_labels(bytes, "fuzz-labels");
            for (uint8_t label : labels)
                if (label > 9) __builtin_trap();
        }
    } catch (const std::runtime_error&) {
    }
    return 0;
}
