// examples/common/image: PGM and PNG read back exactly what Python's zlib and
// struct wrote (tests/fixtures/images/make_images.py: every colour type the
// caption example meets, every row filter, stored, fixed and dynamic DEFLATE
// blocks), and damaged files are refused by name.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

#include "examples/common/image.hpp"

using namespace attn;

namespace {

const std::string dir = "tests/fixtures/images/";
constexpr int W = 13, H = 7;

int gray(int x, int y) { return (37 * x + 11 * y) % 256; }

std::string bytes_of(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

template <class F>
void check_pixels(const GrayImage& img, F expected) {
    REQUIRE(img.width == W);
    REQUIRE(img.height == H);
    for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) {
            INFO("pixel (" << x << ", " << y << ")");
            CHECK(img.pixels[static_cast<size_t>(y * W + x)] == doctest::Approx(expected(x, y)).epsilon(1e-6));
        }
}

std::string error_of(const std::string& bytes, const std::string& name = "x.png") {
    try {
        parse_image(bytes, name);
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("image: PNG of every colour type the fixtures hold, through every filter and block type") {
    auto g = [](int x, int y) { return gray(x, y) / 255.0; };
    check_pixels(read_image(dir + "gray8.png"), g);         // fixed Huffman codes
    check_pixels(read_image(dir + "gray8_stored.png"), g);  // stored blocks
    check_pixels(read_image(dir + "rgb8.png"), [](int x, int y) {
        const int r = (5 * x + 3 * y) % 256, gr = (7 * x + 13 * y) % 256, b = (11 * x + 2 * y) % 256;
        return (0.299 * r + 0.587 * gr + 0.114 * b) / 255.0;
    });
    // 16-bit gray with alpha (dynamic Huffman codes): transparent pixels are black
    check_pixels(read_image(dir + "gray16_alpha.png"),
                 [](int x, int y) { return (x + y) % 2 == 0 ? gray(x, y) / 255.0 : 0.0; });
    check_pixels(read_image(dir + "palette2.png"), [](int x, int y) { return ((x + y) % 4) * 85 / 255.0; });
}

TEST_CASE("image: PGM, binary with a comment and as text with another maximum") {
    check_pixels(read_image(dir + "gray.pgm"), [](int x, int y) { return gray(x, y) / 255.0; });
    check_pixels(read_image(dir + "gray_text.pgm"), [](int x, int y) { return (gray(x, y) * 1000 / 255) / 1000.0; });
}

TEST_CASE("image: damaged and unsupported files are refused, naming the file and the fault") {
    const std::string png = bytes_of(dir + "gray8.png");
    CHECK(error_of(png.substr(0, png.size() - 20)).find("x.png: truncated PNG") == 0);
    std::string bad_crc = png;
    bad_crc[20] ^= 1;  // inside IHDR's data
    CHECK(error_of(bad_crc) == "x.png: PNG chunk IHDR fails its CRC check (a damaged file)");
    CHECK(error_of("GIF89a....", "cat.gif") == "cat.gif: not a PGM (P2/P5) or PNG file");
    CHECK(error_of("P5\n13 7\n255\n" + std::string(10, 'a'), "t.pgm") ==
          "t.pgm: truncated PGM: expected 91 bytes of pixels, found 10");
    CHECK(error_of("P2\n2 1\n10\n3 11\n", "t.pgm") == "t.pgm: PGM pixel 1 exceeds the maximum value");
    // found by fuzzing: a 14-byte file declaring 60 million pixels was allocated
    // (and filled) before its pixels were looked for, 10 s under the sanitizers
    CHECK(error_of("P524534 2449 3", "t.pgm") == "t.pgm: PGM ends after its header");
    CHECK(error_of("P524534 2449 3\nab", "t.pgm") == "t.pgm: truncated PGM: expected 60083766 bytes of pixels, found 2");
    CHECK(error_of("P224534 2449 3 1 2 3", "t.pgm") ==
          "t.pgm: truncated PGM: expected at least 120167531 bytes of pixels, found 6");
    CHECK(error_of("P5\n0 7\n255\n", "t.pgm") == "t.pgm: an image of 0×7 pixels");
    CHECK(error_of("P5\n100000 100000\n255\n", "t.pgm") == "t.pgm: an image of 100000×100000 pixels is too large");
    CHECK_THROWS_WITH(read_image("tests/fixtures/images"), doctest::Contains("is a directory"));
    CHECK_THROWS_WITH(read_image("tests/fixtures/images/none.png"), doctest::Contains("none.png: cannot open"));
}

TEST_CASE("image: zlib's checksum and DEFLATE's rules are enforced") {
    // "hello" compressed by zlib at level 9 (Python: zlib.compress(b"hello", 9))
    const std::string hello("\x78\xda\xcb\x48\xcd\xc9\xc9\x07\x00\x06\x2c\x02\x15", 13);
    const std::vector<uint8_t> out = zlib_inflate(hello, 100);
    CHECK(std::string(out.begin(), out.end()) == "hello");
    std::string wrong_sum = hello;
    wrong_sum.back() ^= 1;
    CHECK_THROWS_WITH(zlib_inflate(wrong_sum, 100), "the zlib checksum does not match the data");
    CHECK_THROWS_WITH(zlib_inflate(hello, 3), "more data than the image can hold");
    CHECK_THROWS_WITH(zlib_inflate(hello.substr(0, 6), 100), "the compressed data ends early");
    std::string bad_header = hello;
    bad_header[1] = 0;
    CHECK_THROWS_WITH(zlib_inflate(bad_header, 100), doctest::Contains("not a zlib stream"));
}

TEST_CASE("image: resizing averages the pixels a target pixel covers") {
    GrayImage img{4, 4, {}};
    for (int i = 0; i < 16; ++i) img.pixels.push_back(static_cast<float>(i));
    const Tensor half = resize_image(img, 2, 2);
    CHECK(half[0] == doctest::Approx((0 + 1 + 4 + 5) / 4.0));
    CHECK(half[1] == doctest::Approx((2 + 3 + 6 + 7) / 4.0));
    CHECK(half[3] == doctest::Approx((10 + 11 + 14 + 15) / 4.0));
    const Tensor twice = resize_image(img, 8, 8);  // the nearest pixel
    CHECK(twice[0] == 0);
    CHECK(twice[1] == 0);
    CHECK(twice[2] == 1);
    CHECK(twice[8 * 7 + 7] == 15);
}

TEST_CASE("image: a larger PNG with long back-references and Paeth ties equals its PGM twin") {
    const GrayImage png = read_image(dir + "big.png"), pgm = read_image(dir + "big.pgm");
    REQUIRE(png.width == 120);
    REQUIRE(png.height == 60);
    REQUIRE(pgm.pixels.size() == png.pixels.size());
    size_t differ = 0;
    for (size_t i = 0; i < png.pixels.size(); ++i) differ += png.pixels[i] != pgm.pixels[i];
    CHECK(differ == 0);
}
