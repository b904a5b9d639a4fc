#include "examples/common/image.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace attn {

namespace {

// Pictures larger than this are refused before anything is allocated for them.
constexpr int64_t max_pixels = int64_t{1} << 26;  // 64 Mi pixels

[[noreturn]] void fail(const std::string& name, const std::string& why) { throw std::runtime_error(name + ": " + why); }

// ---- DEFLATE (RFC 1951) ------------------------------------------------------------------
// Bits are read least significant first; a Huffman code is read one bit at a
// time, most significant first, against the canonical code's counts per
// length (the slow and simple way of Mark Adler's puff.c, which is plenty for
// a picture or two).
class BitReader {
public:
    explicit BitReader(std::string_view data) : data_(data) {}
    uint32_t bits(int count) {
        while (have_ < count) {
            if (pos_ >= data_.size()) throw std::runtime_error("the compressed data ends early");
            buffer_ |= static_cast<uint64_t>(static_cast<uint8_t>(data_[pos_++])) << have_;
            have_ += 8;
        }
        const auto value = static_cast<uint32_t>(buffer_ & ((uint64_t{1} << count) - 1));
        buffer_ >>= count;
        have_ -= count;
        return value;
    }
    // Drops the bits left in the current byte (fewer than 8: bytes are loaded only when needed).
    void align() {
        buffer_ = 0;
        have_ = 0;
    }
    size_t byte_position() const { return pos_; }
    std::string_view rest() const { return data_.substr(pos_); }
    void skip_bytes(size_t n) { pos_ += n; }

private:
    std::string_view data_;
    size_t pos_ = 0;
    uint64_t buffer_ = 0;
    int have_ = 0;
};

struct Huffman {
    std::array<uint16_t, 16> count{};  // codes of each length 1..15
    std::vector<uint16_t> symbol;      // symbols ordered by code

    // From code lengths (0 = unused). An over-subscribed set of lengths is
    // not a prefix code: refused. An incomplete one is allowed (RFC 1951
    // permits it for a single distance code); reading an unused code fails.
    explicit Huffman(const std::vector<uint8_t>& lengths) {
        for (uint8_t len : lengths) ++count[len];
        int left = 1;
        for (int len = 1; len < 16; ++len) {
            left = 2 * left - count[static_cast<size_t>(len)];
            if (left < 0) throw std::runtime_error("an over-subscribed Huffman code");
        }
        std::array<uint16_t, 16> offset{};
        for (int len = 1; len < 15; ++len)
            offset[static_cast<size_t>(len + 1)] = static_cast<uint16_t>(offset[static_cast<size_t>(len)] + count[static_cast<size_t>(len)]);
        symbol.resize(lengths.size());
        for (size_t s = 0; s < lengths.size(); ++s)
            if (lengths[s] != 0) symbol[offset[lengths[s]]++] = static_cast<uint16_t>(s);
    }

    int decode(BitReader& in) const {
        int code = 0, first = 0, index = 0;
        for (int len = 1; len < 16; ++len) {
            code |= static_cast<int>(in.bits(1));
            const int n = count[static_cast<size_t>(len)];
            if (code - n < first) return symbol[static_cast<size_t>(index + (code - first))];
            index += n;
            first = (first + n) << 1;
            code <<= 1;
        }
        throw std::runtime_error("a Huffman code that is not in the table");
    }
};

constexpr std::array<uint16_t, 29> length_base{3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                               31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
constexpr std::array<uint8_t, 29> length_extra{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                               2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
constexpr std::array<uint16_t, 30> distance_base{1,   2,   3,   4,   5,   7,    9,    13,   17,   25,
                                                 33,  49,  65,  97,  129, 193,  257,  385,  513,  769,
                                                 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
constexpr std::array<uint8_t, 30> distance_extra{0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
                                                 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

void inflate_block(BitReader& in, const Huffman& literals, const Huffman& distances, std::vector<uint8_t>& out,
                   size_t max_output) {
    for (;;) {
        const int symbol = literals.decode(in);
        if (symbol < 256) {
            if (out.size() >= max_output) throw std::runtime_error("more data than the image can hold");
            out.push_back(static_cast<uint8_t>(symbol));
            continue;
        }
        if (symbol == 256) return;  // end of block
        const int l = symbol - 257;
        if (l >= 29) throw std::runtime_error("an invalid length code");
        const size_t length = length_base[static_cast<size_t>(l)] + in.bits(length_extra[static_cast<size_t>(l)]);
        const int d = distances.decode(in);
        if (d >= 30) throw std::runtime_error("an invalid distance code");
        const size_t distance = distance_base[static_cast<size_t>(d)] + in.bits(distance_extra[static_cast<size_t>(d)]);
        if (distance > out.size()) throw std::runtime_error("a distance before the start of the data");
        if (out.size() + length > max_output) throw std::runtime_error("more data than the image can hold");
        for (size_t i = 0; i < length; ++i) out.push_back(out[out.size() - distance]);  // may overlap: byte by byte
    }
}

std::vector<uint8_t> inflate(BitReader& in, size_t max_output) {
    std::vector<uint8_t> out;
    bool last = false;
    while (!last) {
        last = in.bits(1) == 1;
        const uint32_t type = in.bits(2);
        if (type == 0) {  // stored
            in.align();
            const uint32_t len = in.bits(16), nlen = in.bits(16);
            if (len != (~nlen & 0xffff)) throw std::runtime_error("a stored block whose length check fails");
            const std::string_view rest = in.rest();
            if (rest.size() < len) throw std::runtime_error("the compressed data ends early");
            if (out.size() + len > max_output) throw std::runtime_error("more data than the image can hold");
            out.insert(out.end(), rest.begin(), rest.begin() + len);
            in.skip_bytes(len);
        } else if (type == 1) {  // fixed Huffman codes
            std::vector<uint8_t> lit(288), dist(30, 5);
            std::fill(lit.begin(), lit.begin() + 144, 8);
            std::fill(lit.begin() + 144, lit.begin() + 256, 9);
            std::fill(lit.begin() + 256, lit.begin() + 280, 7);
            std::fill(lit.begin() + 280, lit.end(), 8);
            inflate_block(in, Huffman(lit), Huffman(dist), out, max_output);
        } else if (type == 2) {  // dynamic Huffman codes
            const uint32_t nlit = in.bits(5) + 257, ndist = in.bits(5) + 1, ncode = in.bits(4) + 4;
            if (nlit > 286 || ndist > 30) throw std::runtime_error("too many literal or distance codes");
            static constexpr std::array<uint8_t, 19> order{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
            std::vector<uint8_t> code_lengths(19, 0);
            for (uint32_t i = 0; i < ncode; ++i) code_lengths[order[i]] = static_cast<uint8_t>(in.bits(3));
            const Huffman lengths_code(code_lengths);
            std::vector<uint8_t> lengths;
            while (lengths.size() < nlit + ndist) {
                const int symbol = lengths_code.decode(in);
                if (symbol < 16) {
                    lengths.push_back(static_cast<uint8_t>(symbol));
                    continue;
                }
                uint8_t value = 0;
                size_t repeat = 0;
                if (symbol == 16) {
                    if (lengths.empty()) throw std::runtime_error("a repeated length with nothing before it");
                    value = lengths.back();
                    repeat = 3 + in.bits(2);
                } else if (symbol == 17) {
                    repeat = 3 + in.bits(3);
                } else {
                    repeat = 11 + in.bits(7);
                }
                if (lengths.size() + repeat > nlit + ndist) throw std::runtime_error("code lengths overrun their count");
                lengths.insert(lengths.end(), repeat, value);
            }
            if (lengths[256] == 0) throw std::runtime_error("no end-of-block code");
            const std::vector<uint8_t> lit(lengths.begin(), lengths.begin() + nlit), dist(lengths.begin() + nlit, lengths.end());
            inflate_block(in, Huffman(lit), Huffman(dist), out, max_output);
        } else {
            throw std::runtime_error("a block of the reserved type 3");
        }
    }
    return out;
}

uint32_t big_endian(std::string_view b, size_t at) {
    return (uint32_t{static_cast<uint8_t>(b[at])} << 24) | (uint32_t{static_cast<uint8_t>(b[at + 1])} << 16) |
           (uint32_t{static_cast<uint8_t>(b[at + 2])} << 8) | uint32_t{static_cast<uint8_t>(b[at + 3])};
}

uint32_t crc32(std::string_view bytes) {
    static const std::array<uint32_t, 256> table = [] {
        std::array<uint32_t, 256> t{};
        for (uint32_t n = 0; n < 256; ++n) {
            uint32_t c = n;
            for (int k = 0; k < 8; ++k) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
            t[n] = c;
        }
        return t;
    }();
    uint32_t c = 0xffffffffu;
    for (char ch : bytes) c = table[(c ^ static_cast<uint8_t>(ch)) & 0xff] ^ (c >> 8);
    return c ^ 0xffffffffu;
}

void check_size(const std::string& name, int64_t width, int64_t height) {
    if (width < 1 || height < 1) fail(name, "an image of " + std::to_string(width) + "×" + std::to_string(height) + " pixels");
    if (width > max_pixels / height)
        fail(name, "an image of " + std::to_string(width) + "×" + std::to_string(height) + " pixels is too large");
}

// ---- PNG -------------------------------------------------------------------------------------
GrayImage parse_png(std::string_view b, const std::string& name) {
    size_t at = 8;  // after the signature
    std::string idat;
    std::vector<std::array<float, 2>> palette;  // gray, alpha
    int64_t width = 0, height = 0;
    int depth = 0, colour = -1;
    bool ended = false;
    while (!ended) {
        if (b.size() - at < 12) fail(name, "truncated PNG: a chunk header runs past the end of the file");
        const uint32_t length = big_endian(b, at);
        const std::string_view type = b.substr(at + 4, 4);
        if (length > b.size() - at - 12) fail(name, "truncated PNG: chunk " + std::string(type) + " runs past the end of the file");
        const std::string_view data = b.substr(at + 8, length);
        if (crc32(b.substr(at + 4, length + 4)) != big_endian(b, at + 8 + length))
            fail(name, "PNG chunk " + std::string(type) + " fails its CRC check (a damaged file)");
        at += 12 + length;
        if (colour < 0 && type != "IHDR") fail(name, "PNG without an IHDR chunk first");
        if (type == "IHDR") {
            if (colour >= 0 || length != 13) fail(name, "a malformed PNG IHDR chunk");
            width = big_endian(data, 0);
            height = big_endian(data, 4);
            depth = static_cast<uint8_t>(data[8]);
            colour = static_cast<uint8_t>(data[9]);
            check_size(name, width, height);
            const bool ok = (colour == 0 && (depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16)) ||
                            (colour == 3 && (depth == 1 || depth == 2 || depth == 4 || depth == 8)) ||
                            ((colour == 2 || colour == 4 || colour == 6) && (depth == 8 || depth == 16));
            if (!ok) fail(name, "PNG colour type " + std::to_string(colour) + " with bit depth " + std::to_string(depth) + " is not valid");
            if (data[10] != 0 || data[11] != 0) fail(name, "PNG with an unknown compression or filter method");
            if (data[12] != 0) fail(name, "an interlaced PNG: save it without interlacing (e.g. `convert in.png -interlace none out.png`)");
        } else if (type == "PLTE") {
            if (length % 3 != 0 || length / 3 > 256) fail(name, "a malformed PNG palette");
            for (size_t i = 0; i < length; i += 3) {
                const double r = static_cast<uint8_t>(data[i]), g = static_cast<uint8_t>(data[i + 1]), bl = static_cast<uint8_t>(data[i + 2]);
                palette.push_back({static_cast<float>((0.299 * r + 0.587 * g + 0.114 * bl) / 255.0), 1.0f});
            }
        } else if (type == "tRNS" && colour == 3) {
            for (size_t i = 0; i < length && i < palette.size(); ++i) palette[i][1] = static_cast<float>(static_cast<uint8_t>(data[i]) / 255.0);
        } else if (type == "IDAT") {
            idat.append(data);
        } else if (type == "IEND") {
            ended = true;
        } else if (!(type[0] & 0x20)) {  // an upper-case first letter: a chunk a decoder must understand
            fail(name, "PNG with a critical chunk this reader does not know: " + std::string(type));
        }
    }
    if (colour == 3 && palette.empty()) fail(name, "a palette PNG without a palette");

    const int channels = colour == 0 || colour == 3 ? 1 : colour == 2 ? 3 : colour == 4 ? 2 : 4;
    const auto row_bytes = static_cast<size_t>((static_cast<int64_t>(width) * channels * depth + 7) / 8);
    const size_t expected = static_cast<size_t>(height) * (row_bytes + 1);
    std::vector<uint8_t> raw;
    try {
        raw = zlib_inflate(idat, expected);
    } catch (const std::runtime_error& e) {
        fail(name, std::string("PNG image data: ") + e.what());
    }
    if (raw.size() != expected)
        fail(name, "PNG image data holds " + std::to_string(raw.size()) + " bytes, expected " + std::to_string(expected));

    // Undo the row filters (PNG §9): each byte was stored minus a prediction from its left, upper or both neighbours.
    const size_t bpp = std::max<size_t>(1, static_cast<size_t>(channels * depth / 8));
    std::vector<uint8_t> previous(row_bytes, 0), row(row_bytes);
    GrayImage img{height, width, std::vector<float>(static_cast<size_t>(width * height))};
    const double max_value = depth == 16 ? 65535.0 : (1 << depth) - 1;
    for (int64_t y = 0; y < height; ++y) {
        const uint8_t* line = raw.data() + static_cast<size_t>(y) * (row_bytes + 1);
        const uint8_t filter = line[0];
        if (filter > 4) fail(name, "PNG row " + std::to_string(y) + " has the unknown filter type " + std::to_string(filter));
        for (size_t i = 0; i < row_bytes; ++i) {
            const int a = i >= bpp ? row[i - bpp] : 0, up = previous[i], c = i >= bpp ? previous[i - bpp] : 0;
            int predicted = 0;
            switch (filter) {
                case 1: predicted = a; break;
                case 2: predicted = up; break;
                case 3: predicted = (a + up) / 2; break;
                case 4: {  // Paeth: the neighbour closest to a + up − c
                    const int p = a + up - c, pa = std::abs(p - a), pb = std::abs(p - up), pc = std::abs(p - c);
                    predicted = pa <= pb && pa <= pc ? a : pb <= pc ? up : c;
                    break;
                }
                default: break;
            }
            row[i] = static_cast<uint8_t>(line[1 + i] + predicted);
        }
        auto sample = [&](int64_t index) -> double {  // sample `index` of the row, any depth
            if (depth == 16) return row[static_cast<size_t>(2 * index)] * 256.0 + row[static_cast<size_t>(2 * index + 1)];
            if (depth == 8) return row[static_cast<size_t>(index)];
            const int64_t bit = index * depth;
            return (row[static_cast<size_t>(bit / 8)] >> (8 - depth - bit % 8)) & ((1 << depth) - 1);
        };
        for (int64_t x = 0; x < width; ++x) {
            double gray = 0, alpha = 1;
            if (colour == 3) {
                const auto index = static_cast<size_t>(sample(x));
                if (index >= palette.size()) fail(name, "PNG pixel with palette index " + std::to_string(index) + " beyond the palette");
                gray = palette[index][0];
                alpha = palette[index][1];
            } else if (colour == 0 || colour == 4) {
                gray = sample(x * channels) / max_value;
                if (colour == 4) alpha = sample(x * channels + 1) / max_value;
            } else {
                gray = (0.299 * sample(x * channels) + 0.587 * sample(x * channels + 1) + 0.114 * sample(x * channels + 2)) / max_value;
                if (colour == 6) alpha = sample(x * channels + 3) / max_value;
            }
            img.pixels[static_cast<size_t>(y * width + x)] = static_cast<float>(gray * alpha);  // over black
        }
        std::swap(previous, row);
    }
    return img;
}

// ---- PGM -------------------------------------------------------------------------------------
GrayImage parse_pgm(std::string_view b, const std::string& name) {
    const bool binary = b[1] == '5';
    size_t at = 2;
    auto skip_space = [&] {
        while (at < b.size()) {
            if (b[at] == '#') {
                while (at < b.size() && b[at] != '\n') ++at;
            } else if (b[at] == ' ' || b[at] == '\t' || b[at] == '\n' || b[at] == '\r') {
                ++at;
            } else {
                break;
            }
        }
    };
    auto number = [&](const char* what) -> int64_t {
        skip_space();
        int64_t v = 0;
        size_t digits = 0;
        while (at < b.size() && b[at] >= '0' && b[at] <= '9' && digits < 10) v = v * 10 + (b[at++] - '0'), ++digits;
        if (digits == 0) fail(name, std::string("PGM: expected the ") + what + " (a whole number) at byte " + std::to_string(at));
        return v;
    };
    const int64_t width = number("width"), height = number("height"), max_value = number("maximum value");
    check_size(name, width, height);
    if (max_value < 1 || max_value > 65535) fail(name, "PGM maximum value " + std::to_string(max_value) + " is not in 1..65535");
    // The file must hold every pixel the header declares before the image is
    // allocated: a 14-byte header may declare 60 million pixels.
    const auto count = static_cast<size_t>(width * height);
    if (binary) {
        if (at >= b.size()) fail(name, "PGM ends after its header");
        ++at;  // the single whitespace after the maximum value
    }
    const size_t bytes_per = max_value > 255 ? 2 : 1;
    const size_t need = binary ? count * bytes_per : 2 * count - 1;  // text: a digit each, spaces between
    if (b.size() - at < need)
        fail(name, "truncated PGM: expected " + std::string(binary ? "" : "at least ") + std::to_string(need) +
                       " bytes of pixels, found " + std::to_string(b.size() - at));
    GrayImage img{height, width, std::vector<float>(count)};
    if (binary) {
        for (size_t i = 0; i < img.pixels.size(); ++i) {
            const auto hi = static_cast<uint8_t>(b[at + i * bytes_per]);
            const double v = bytes_per == 2 ? hi * 256.0 + static_cast<uint8_t>(b[at + i * bytes_per + 1]) : hi;
            if (v > static_cast<double>(max_value)) fail(name, "PGM pixel " + std::to_string(i) + " exceeds the maximum value");
            img.pixels[i] = static_cast<float>(v / static_cast<double>(max_value));
        }
    } else {
        for (size_t i = 0; i < img.pixels.size(); ++i) {
            const int64_t v = number("next pixel");
            if (v > max_value) fail(name, "PGM pixel " + std::to_string(i) + " exceeds the maximum value");
            img.pixels[i] = static_cast<float>(static_cast<double>(v) / static_cast<double>(max_value));
        }
    }
    return img;
}

}  // namespace

std::vector<uint8_t> zlib_inflate(std::string_view data, size_t max_output) {
    if (data.size() < 6) throw std::runtime_error("a zlib stream too short to hold anything");
    const auto cmf = static_cast<uint8_t>(data[0]), flg = static_cast<uint8_t>(data[1]);
    if ((cmf & 0x0f) != 8 || (cmf >> 4) > 7 || (cmf * 256 + flg) % 31 != 0 || (flg & 0x20))
        throw std::runtime_error("not a zlib stream (its two-byte header is wrong)");
    BitReader in(data.substr(2));  // after CMF and FLG
    std::vector<uint8_t> out = inflate(in, max_output);
    in.align();
    const std::string_view rest = in.rest();
    if (rest.size() < 4) throw std::runtime_error("the zlib checksum is missing");
    uint32_t a = 1, s = 0;  // Adler-32
    for (uint8_t byte : out) {
        a = (a + byte) % 65521;
        s = (s + a) % 65521;
    }
    if (((s << 16) | a) != big_endian(rest, 0)) throw std::runtime_error("the zlib checksum does not match the data");
    return out;
}

GrayImage parse_image(std::string_view bytes, const std::string& name) {
    static constexpr char png_signature[] = "\x89PNG\r\n\x1a\n";
    if (bytes.size() >= 8 && bytes.substr(0, 8) == std::string_view(png_signature, 8)) return parse_png(bytes, name);
    if (bytes.size() >= 2 && bytes[0] == 'P' && (bytes[1] == '5' || bytes[1] == '2')) return parse_pgm(bytes, name);
    fail(name, "not a PGM (P2/P5) or PNG file");
}

GrayImage read_image(const std::string& path) {
    if (std::filesystem::is_directory(path)) fail(path, "is a directory, expected a PGM or PNG file");
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path, "cannot open");
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return parse_image(bytes, path);
}

Tensor resize_image(const GrayImage& img, int64_t height, int64_t width) {
    if (img.height < 1 || img.width < 1 || height < 1 || width < 1)
        throw std::invalid_argument("resize_image: an empty image or target size");
    Tensor out = Tensor::zeros(Shape{height, width});
    for (int64_t i = 0; i < height; ++i) {
        // the source rows [y0, y1) this target row covers (at least one: nearest when enlarging)
        const int64_t y0 = i * img.height / height, y1 = std::max(y0 + 1, (i + 1) * img.height / height);
        for (int64_t j = 0; j < width; ++j) {
            const int64_t x0 = j * img.width / width, x1 = std::max(x0 + 1, (j + 1) * img.width / width);
            double sum = 0;
            for (int64_t y = y0; y < y1; ++y)
                for (int64_t x = x0; x < x1; ++x) sum += img.pixels[static_cast<size_t>(y * img.width + x)];
            out[i * width + j] = static_cast<real>(sum / static_cast<double>((y1 - y0) * (x1 - x0)));
        }
    }
    return out;
}

}  // namespace attn
