// Data for the caption example (examples/caption/): images of a few items laid
// out in a grid of cells, each with a caption naming the items in reading order
// (left to right, top to bottom), then <end>.
//
//   built-in "shapes"   procedurally drawn shapes (circle, square, triangle, cross,
//                       ...) on a grayscale canvas; no download
//   "fashion"           Fashion-MNIST items (28×28) composed 2×2 on a 56×56 canvas;
//                       train scenes use only Fashion-MNIST's training images,
//                       test scenes only its test images
//
// Shapes: an image H×W (values in [0, 1]), a caption of T = rows·cols + 1 word
// ids (the items, then <end>), and for each item word the cell it names.
// Fixed seeds give fixed splits: the same data whatever the run's --seed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tensor/random.hpp"
#include "examples/common/idx.hpp"
#include "tensor/tensor.hpp"

namespace attn {

// Word ids: 0 = <start> (the decoder's first input), 1 = <end>, 2.. = items.
struct CaptionVocab {
    std::vector<std::string> words;  // id → word
    static constexpr int64_t start = 0;
    static constexpr int64_t end = 1;
    int64_t size() const { return static_cast<int64_t>(words.size()); }
    // "circle square <end>" (stops after <end>; <start> is not shown).
    std::string text(const std::vector<int64_t>& ids) const;
};

struct CaptionExample {
    Tensor image;                 // H×W, values in [0, 1]
    std::vector<int64_t> caption; // T word ids: items in reading order, then <end>
    std::vector<int64_t> cells;   // T: the cell (row·cols + col) each word names; −1 for <end>
};

struct CaptionDataset {
    CaptionVocab vocab;
    std::vector<CaptionExample> train, valid, test;
    int64_t rows = 2, cols = 2;   // the grid of cells
    int64_t height = 0, width = 0;
    // Augmentation (the trainer's --augment): a new training split for epoch
    // e, as many scenes as `train`, drawn afresh from the same source (shapes:
    // new random scenes; Fashion-MNIST: new combinations of the same training
    // items, each mirrored left–right with probability 1/2). A fixed split
    // shows the model the same few combinations every epoch, and 15,000 scenes
    // use only ~37,000 of the 55,000 training items. Deterministic in e, so a
    // resumed run sees what it would have seen; valid and test never change.
    std::function<std::vector<CaptionExample>(int64_t epoch)> fresh_train;
};

// ---- built-in shapes ------------------------------------------------------------

// The shapes the built-in scenes draw, in word order (ids 2, 3, ...).
const std::vector<std::string>& shape_names();

struct ShapeSceneOptions {
    int64_t rows = 2, cols = 2;   // cells; the caption has rows·cols items
    int64_t cell_size = 28;       // pixels per cell side: a 2×2 scene is 56×56
    int64_t num_shapes = 8;       // use num_shapes of shape_names(), from first_shape on
    int64_t first_shape = 0;
    double noise = 0.05;          // std of the Gaussian pixel noise
};

// One scene: a random shape in every cell, with jittered size, position and
// brightness, and noise. Deterministic given the generator's state.
CaptionExample draw_shape_scene(const ShapeSceneOptions& options, Generator& gen);

// Draws shape `shape` (an index into shape_names()) into image H×W, centred at
// (cy, cx) with half-size r pixels, at brightness `ink` (pixels keep the maximum).
void draw_shape(Tensor& image, int64_t shape, double cy, double cx, double r, double ink);

// Splits of n_train, n_valid, n_test scenes, each from its own fixed seed.
CaptionDataset make_shape_dataset(const ShapeSceneOptions& options, int64_t n_train, int64_t n_valid,
                                  int64_t n_test);

// ---- Fashion-MNIST ----------------------------------------------------------------

// The ten Fashion-MNIST classes as caption words ("tshirt", "trouser", ...).
const std::vector<std::string>& fashion_class_names();

// Composes n scenes of rows×cols items (each a random item of `images`, with
// its label as the word) from the items with indices in [first, last); each
// item is mirrored left–right with probability `mirror` (0: none, and then no
// draws are spent on it, so fixed splits do not depend on the option).
std::vector<CaptionExample> compose_fashion_scenes(const IdxImages& images, const std::vector<uint8_t>& labels,
                                                   int64_t first, int64_t last, int64_t n, int64_t rows,
                                                   int64_t cols, Generator& gen, double mirror = 0);

// Reads DIR/{train,t10k}-{images-idx3,labels-idx1}-ubyte and composes 2×2
// scenes: train from training items 0..54999, valid from 55000..59999, test
// from the test items only. fresh_train(e) composes from items 0..54999 too.
CaptionDataset make_fashion_dataset(const std::string& dir, int64_t n_train, int64_t n_valid, int64_t n_test);

// ---- batches ------------------------------------------------------------------------

// Examples [indices] stacked: images B×1×H×W, captions B×T (word ids as reals).
struct CaptionBatch {
    Tensor images;
    Tensor captions;
    std::vector<const CaptionExample*> examples;
};
CaptionBatch make_caption_batch(const std::vector<CaptionExample>& data, const std::vector<int64_t>& indices);

}  // namespace attn
