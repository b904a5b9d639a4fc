// safetensors: parse a file's bytes; what parses must serialize and parse back
// with the same names, shapes and values.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string_view>

#include "io/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
    try {
        attn::SafetensorsFile file =
            attn::parse_safetensors(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.safetensors");
        attn::SafetensorsFile back =
            attn::parse_safetensors(attn::serialize_safetensors(file.tensors, file.metadata), "round trip");
        if (back.tensors.size() != file.tensors.size() || back.metadata != file.metadata) __builtin_trap();
        // The order of the tensors in a file is not part of the format: compare by name.
        auto by_name = [](const auto& a, const auto& b) { return a.first < b.first; };
        std::sort(file.tensors.begin(), file.tensors.end(), by_name);
        std::sort(back.tensors.begin(), back.tensors.end(), by_name);
        for (size_t i = 0; i < file.tensors.size(); ++i) {
            const attn::Tensor &a = file.tensors[i].second, &b = back.tensors[i].second;
            if (file.tensors[i].first != back.tensors[i].first || a.shape() != b.shape()) __builtin_trap();
            for (int64_t k = 0; k < a.numel(); ++k)
                if (!(a[k] == b[k] || (std::isnan(a[k]) && std::isnan(b[k])))) __builtin_trap();
        }
    } catch (const std::runtime_error&) {
    } catch (const std::invalid_argument&) {
    }
    return 0;
}
