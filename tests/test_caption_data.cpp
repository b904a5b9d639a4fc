// examples/caption/caption_data: the built-in shape scenes, the IDX reader and
// the Fashion-MNIST scene composer.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "examples/caption/caption_data.hpp"
#include "tests/helpers.hpp"

using namespace attn;
using namespace attn::testing;

namespace {

void put_u32(std::vector<uint8_t>& b, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<uint8_t>(v >> shift));
}
void write_bytes(const std::string& path, const std::vector<uint8_t>& b) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}
// An IDX image file of n images rows×cols, image i filled with value(i).
std::vector<uint8_t> idx_images(uint32_t n, uint32_t rows, uint32_t cols, uint8_t base) {
    std::vector<uint8_t> b;
    put_u32(b, 0x00000803);
    put_u32(b, n);
    put_u32(b, rows);
    put_u32(b, cols);
    for (uint32_t i = 0; i < n; ++i) b.insert(b.end(), rows * cols, static_cast<uint8_t>(base + i));
    return b;
}
std::vector<uint8_t> idx_labels(uint32_t n) {
    std::vector<uint8_t> b;
    put_u32(b, 0x00000801);
    put_u32(b, n);
    for (uint32_t i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(i % 10));
    return b;
}

// A tiny Fashion-MNIST directory: 12 training items (28×28) with pixel values
// 10..21 and 4 test items with 200..203, labels i mod 10: a scene's pixels say
// where its items came from.
void write_tiny_fashion(const std::string& dir) {
    write_bytes(dir + "/train-images-idx3-ubyte", idx_images(12, 28, 28, 10));
    write_bytes(dir + "/train-labels-idx1-ubyte", idx_labels(12));
    write_bytes(dir + "/t10k-images-idx3-ubyte", idx_images(4, 28, 28, 200));
    write_bytes(dir + "/t10k-labels-idx1-ubyte", idx_labels(4));
}
// The byte value of the item in cell `cell` of a 2×2 scene of such items.
int item_value(const CaptionExample& x, int64_t cell) {
    return static_cast<int>(std::lround(x.image[((cell / 2) * 28 + 3) * 56 + (cell % 2) * 28 + 3] * 255));
}
}  // namespace

TEST_CASE("caption data: shape scenes and captions are deterministic, in reading order, ending in <end>") {
    const ShapeSceneOptions options{.rows = 2, .cols = 2, .cell_size = 12, .num_shapes = 8};
    const CaptionDataset a = make_shape_dataset(options, 20, 5, 5), b = make_shape_dataset(options, 20, 5, 5);
    REQUIRE(a.train.size() == 20);
    CHECK(a.vocab.size() == 10);
    CHECK(a.height == 24);
    for (size_t i = 0; i < a.train.size(); ++i) {
        const CaptionExample& x = a.train[i];
        CHECK(x.image.to_vector() == b.train[i].image.to_vector());
        CHECK(x.caption == b.train[i].caption);
        REQUIRE(x.caption.size() == 5);
        CHECK(x.caption.back() == CaptionVocab::end);
        CHECK(x.cells == std::vector<int64_t>{0, 1, 2, 3, -1});
        for (size_t t = 0; t < 4; ++t) {
            CHECK(x.caption[t] >= 2);
            CHECK(x.caption[t] < 10);
        }
    }
    // the splits have their own seeds
    CHECK(a.train[0].image.to_vector() != a.test[0].image.to_vector());
    CHECK(a.vocab.text(a.train[0].caption).ends_with("<end>"));
}

TEST_CASE("caption data: every shape is drawn inside its own cell") {
    Generator gen(5);
    const ShapeSceneOptions options{.rows = 2, .cols = 3, .cell_size = 16, .num_shapes = 8, .noise = 0};
    for (int rep = 0; rep < 20; ++rep) {
        const CaptionExample x = draw_shape_scene(options, gen);
        for (int64_t cell = 0; cell < 6; ++cell) {
            const int64_t r0 = (cell / 3) * 16, c0 = (cell % 3) * 16;
            real ink = 0;
            for (int64_t y = r0; y < r0 + 16; ++y)
                for (int64_t xx = c0; xx < c0 + 16; ++xx) ink = std::max(ink, x.image[y * 48 + xx]);
            CHECK(ink >= real(0.6));
        }
        // no ink on the border lines between cells' interiors leaks: the grid edges stay dark
        for (int64_t y = 0; y < 32; ++y) CHECK(x.image[y * 48 + 0] == 0);
    }
}

TEST_CASE("caption data: the IDX reader reads a file and rejects bad ones with the file and the reason") {
    TempDir dir("caption");
    const std::string images = dir.path + "/images", labels = dir.path + "/labels";
    write_bytes(images, idx_images(3, 2, 4, 7));
    write_bytes(labels, idx_labels(3));
    const IdxImages img = read_idx_images(images);
    CHECK(img.count == 3);
    CHECK(img.rows == 2);
    CHECK(img.cols == 4);
    CHECK(img.pixels[8] == 8);
    CHECK(read_idx_labels(labels) == std::vector<uint8_t>{0, 1, 2});

    std::vector<uint8_t> truncated = idx_images(3, 2, 4, 7);
    truncated.resize(truncated.size() - 5);
    write_bytes(images, truncated);
    std::string e = error_of([&] { read_idx_images(images); });
    CHECK(e.find(images) != std::string::npos);
    CHECK(e.find("truncated") != std::string::npos);
    CHECK(e.find("expected 40 bytes") != std::string::npos);

    write_bytes(images, {0, 0, 8});
    CHECK(error_of([&] { read_idx_images(images); }).find("16-byte header") != std::string::npos);
    write_bytes(labels, idx_labels(20));
    e = error_of([&] { read_idx_images(labels); });  // a label file where images are expected
    CHECK(e.find("bad magic number 0x00000801") != std::string::npos);
    CHECK(error_of([&] { read_idx_labels(dir.path + "/missing"); }).find("cannot open") != std::string::npos);
    write_bytes(images, {0x1f, 0x8b, 8, 0});
    CHECK(error_of([&] { read_idx_images(images); }).find("gzip") != std::string::npos);
    std::vector<uint8_t> bad_label = idx_labels(2);
    bad_label.back() = 12;
    write_bytes(labels, bad_label);
    CHECK(error_of([&] { read_idx_labels(labels); }).find("label 1 is 12") != std::string::npos);

    // A directory where a file should be names the path (it named no file).
    CHECK(error_of([&] { read_idx_images(dir.path); }) == dir.path + ": is a directory, expected an IDX file");
    // Images and labels read together must pair up (the zoo read past the labels).
    write_bytes(images, idx_images(3, 2, 4, 7));
    write_bytes(labels, idx_labels(2));
    CHECK(error_of([&] { read_idx_dataset(images, labels); }) ==
          images + " has 3 images but " + labels + " has 2 labels");
    write_bytes(labels, idx_labels(3));
    CHECK(read_idx_dataset(images, labels).labels.size() == 3);
}

// 28×28 training images with 20×20 test images failed only after training.
TEST_CASE("caption data: Fashion training and test images of different sizes are refused before any training") {
    TempDir dir("caption");
    write_tiny_fashion(dir.path);
    write_bytes(dir.path + "/t10k-images-idx3-ubyte", idx_images(4, 20, 20, 200));
    CHECK(error_of([&] { make_fashion_dataset(dir.path, 10, 4, 6); }) ==
          dir.path + ": the training images are 28×28 but the test images 20×20");
}

TEST_CASE("caption data: Fashion scenes use training items for train and valid, test items for test") {
    TempDir dir("caption");
    write_tiny_fashion(dir.path);
    const CaptionDataset d = make_fashion_dataset(dir.path, 10, 4, 6);
    CHECK(d.height == 56);
    CHECK(d.vocab.size() == 12);
    for (const CaptionExample& x : d.train)
        for (int64_t cell = 0; cell < 4; ++cell) {
            const int v = item_value(x, cell);
            CHECK(v >= 10);
            CHECK(v < 10 + 11);  // items 0..10 (item 11 is the validation range)
            CHECK(x.caption[static_cast<size_t>(cell)] == 2 + (v - 10) % 10);  // the label names the item
        }
    for (const CaptionExample& x : d.valid)
        for (int64_t cell = 0; cell < 4; ++cell) CHECK(item_value(x, cell) == 21);
    for (const CaptionExample& x : d.test)
        for (int64_t cell = 0; cell < 4; ++cell) {
            CHECK(item_value(x, cell) >= 200);
            CHECK(x.caption[static_cast<size_t>(cell)] == 2 + (item_value(x, cell) - 200));
        }
    CHECK(error_of([&] { make_fashion_dataset(dir.path + "/nowhere", 1, 1, 1); }).find("make data") != std::string::npos);
}

TEST_CASE("caption data: compose_fashion_scenes mirrors items left-right with the given probability") {
    // Two 2×3 items with distinct pixels 1..6 and 7..12, labels 0 and 1.
    IdxImages images{.count = 2, .rows = 2, .cols = 3, .pixels = {}};
    for (uint8_t v = 1; v <= 12; ++v) images.pixels.push_back(v);
    const std::vector<uint8_t> labels{0, 1};
    auto pixel = [](const CaptionExample& x, int64_t cell, int64_t y, int64_t xx) {  // the byte at (y, xx) of a cell
        return static_cast<int>(std::lround(x.image[((cell / 2) * 2 + y) * 6 + (cell % 2) * 3 + xx] * 255));
    };
    Generator g0(9), g1(9), g_half(4);
    const auto plain = compose_fashion_scenes(images, labels, 0, 2, 8, 2, 2, g0);
    const auto mirrored = compose_fashion_scenes(images, labels, 0, 2, 8, 2, 2, g1, 1.0);
    for (const auto* scenes : {&plain, &mirrored})
        for (const CaptionExample& x : *scenes)
            for (int64_t cell = 0; cell < 4; ++cell) {
                const int item = x.caption[static_cast<size_t>(cell)] - 2;  // the label says which item
                const bool flip = scenes == &mirrored;
                for (int64_t y = 0; y < 2; ++y)
                    for (int64_t xx = 0; xx < 3; ++xx)
                        CHECK(pixel(x, cell, y, xx) == 1 + item * 6 + y * 3 + (flip ? 2 - xx : xx));
            }
    // With probability 1/2 both orientations occur.
    int flipped = 0, total = 0;
    for (const CaptionExample& x : compose_fashion_scenes(images, labels, 0, 2, 50, 2, 2, g_half, 0.5))
        for (int64_t cell = 0; cell < 4; ++cell, ++total) {
            const int item = x.caption[static_cast<size_t>(cell)] - 2;
            flipped += pixel(x, cell, 0, 0) == 3 + item * 6;
        }
    CHECK(flipped > total / 4);
    CHECK(flipped < 3 * total / 4);
}

TEST_CASE("caption data: fresh training splits are new each epoch, the same for the same epoch, from training items") {
    const CaptionDataset shapes = make_shape_dataset({.rows = 1, .cols = 2, .cell_size = 8, .num_shapes = 4}, 6, 1, 1);
    REQUIRE(shapes.fresh_train);
    const auto s0 = shapes.fresh_train(0), s0_again = shapes.fresh_train(0), s1 = shapes.fresh_train(1);
    REQUIRE(s0.size() == 6);
    auto same = [](const std::vector<CaptionExample>& a, const std::vector<CaptionExample>& b) {
        for (size_t i = 0; i < a.size(); ++i)
            if (!std::equal(a[i].image.data(), a[i].image.data() + a[i].image.numel(), b[i].image.data()) ||
                a[i].caption != b[i].caption)
                return false;
        return true;
    };
    CHECK(same(s0, s0_again));
    CHECK(!same(s0, s1));
    CHECK(!same(s0, shapes.train));

    TempDir dir("caption");
    write_tiny_fashion(dir.path);
    const CaptionDataset fashion = make_fashion_dataset(dir.path, 10, 2, 2);
    REQUIRE(fashion.fresh_train);
    const auto f3 = fashion.fresh_train(3);
    REQUIRE(f3.size() == 10);
    CHECK(same(f3, fashion.fresh_train(3)));
    CHECK(!same(f3, fashion.fresh_train(4)));
    for (const CaptionExample& x : f3)
        for (int64_t cell = 0; cell < 4; ++cell) {
            const int v = item_value(x, cell);
            CHECK(v >= 10);
            CHECK(v < 10 + 11);  // never the validation item (11) nor a test item
            CHECK(x.caption[static_cast<size_t>(cell)] == 2 + (v - 10) % 10);
        }

    // Fresh Fashion splits mirror about half the items: with items inked in
    // their left half only, a mirrored one has its ink on the right.
    std::vector<uint8_t> half = idx_images(12, 28, 28, 10);
    for (int64_t i = 0; i < 12; ++i)
        for (int64_t y = 0; y < 28; ++y)
            for (int64_t x = 14; x < 28; ++x) half[static_cast<size_t>(16 + (i * 28 + y) * 28 + x)] = 0;
    write_bytes(dir.path + "/train-images-idx3-ubyte", half);
    int left = 0, right = 0;
    for (const CaptionExample& x : make_fashion_dataset(dir.path, 40, 1, 1).fresh_train(0))
        for (int64_t cell = 0; cell < 4; ++cell) {
            const int64_t y = (cell / 2) * 28 + 3, x0 = (cell % 2) * 28;
            const bool ink_left = x.image[y * 56 + x0 + 3] > 0, ink_right = x.image[y * 56 + x0 + 24] > 0;
            CHECK(ink_left != ink_right);
            left += ink_left;
            right += ink_right;
        }
    CHECK(left > 40);  // of 160 items, each side well represented
    CHECK(right > 40);
}

TEST_CASE("caption data: batches stack images and captions") {
    const CaptionDataset d = make_shape_dataset({.rows = 1, .cols = 2, .cell_size = 8, .num_shapes = 2}, 4, 1, 1);
    const CaptionBatch b = make_caption_batch(d.train, {2, 0});
    CHECK(b.images.shape() == Shape{2, 1, 8, 16});
    CHECK(b.captions.shape() == Shape{2, 3});
    CHECK(b.captions[0] == static_cast<real>(d.train[2].caption[0]));
    CHECK(b.examples[1] == &d.train[0]);
}
