#include "examples/caption/caption_data.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <utility>

namespace attn {

std::string CaptionVocab::text(const std::vector<int64_t>& ids) const {
    std::string out;
    for (int64_t id : ids) {
        if (id == start) continue;
        if (!out.empty()) out += ' ';
        out += (id >= 0 && id < size()) ? words[static_cast<size_t>(id)] : "<?>";
        if (id == end) break;
    }
    return out;
}

// ---- built-in shapes --------------------------------------------------------------

const std::vector<std::string>& shape_names() {
    static const std::vector<std::string> names = {"circle", "square", "triangle", "cross",
                                                   "ring",   "diamond", "x",      "bar"};
    return names;
}

// Is (dy, dx), relative to the centre and in units of the half-size r, inside
// the shape? Each shape is a small inequality.
static bool inside_shape(int64_t shape, double dy, double dx) {
    const double ax = std::abs(dx), ay = std::abs(dy), d = std::sqrt(dx * dx + dy * dy);
    switch (shape) {
        case 0: return d <= 1;                                                   // circle
        case 1: return ax <= 0.8 && ay <= 0.8;                                   // square
        case 2: return dy >= -1 && dy <= 0.9 && ax <= (dy + 1) / 2;              // triangle, apex up
        case 3: return (ax <= 0.28 && ay <= 1) || (ay <= 0.28 && ax <= 1);       // cross (plus)
        case 4: return d <= 1 && d >= 0.55;                                      // ring
        case 5: return ax + ay <= 1;                                             // diamond
        case 6: return ax <= 0.9 && ay <= 0.9 && std::abs(ax - ay) <= 0.3;       // x (diagonal cross)
        case 7: return ay <= 0.3 && ax <= 1;                                     // bar
        default: throw std::invalid_argument("draw_shape: no shape " + std::to_string(shape));
    }
}

void draw_shape(Tensor& image, int64_t shape, double cy, double cx, double r, double ink) {
    const int64_t H = image.size(0), W = image.size(1);
    for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x)
            if (inside_shape(shape, (static_cast<double>(y) + 0.5 - cy) / r, (static_cast<double>(x) + 0.5 - cx) / r)) {
                real& p = image[y * W + x];
                p = std::max(p, static_cast<real>(ink));
            }
}

CaptionExample draw_shape_scene(const ShapeSceneOptions& o, Generator& gen) {
    if (o.num_shapes < 2 || o.first_shape < 0 ||
        o.first_shape + o.num_shapes > static_cast<int64_t>(shape_names().size()))
        throw std::invalid_argument("draw_shape_scene: shapes " + std::to_string(o.first_shape) + ".." +
                                    std::to_string(o.first_shape + o.num_shapes - 1) + " are not all in 0.." +
                                    std::to_string(shape_names().size() - 1) + " (and at least 2 are needed)");
    const int64_t H = o.rows * o.cell_size, W = o.cols * o.cell_size;
    CaptionExample ex;
    ex.image = Tensor::zeros(Shape{H, W});
    const double c = static_cast<double>(o.cell_size);
    for (int64_t row = 0; row < o.rows; ++row)
        for (int64_t col = 0; col < o.cols; ++col) {
            const auto shape = o.first_shape + static_cast<int64_t>(gen.randint(static_cast<uint64_t>(o.num_shapes)));
            const double r = c * gen.uniform(0.25, 0.38);               // half-size
            const double cy = c * static_cast<double>(row) + c / 2 + gen.uniform(-1, 1) * (c / 2 - r - 0.5);
            const double cx = c * static_cast<double>(col) + c / 2 + gen.uniform(-1, 1) * (c / 2 - r - 0.5);
            draw_shape(ex.image, shape, cy, cx, r, gen.uniform(0.6, 1.0));
            ex.caption.push_back(CaptionVocab::end + 1 + shape - o.first_shape);
            ex.cells.push_back(row * o.cols + col);
        }
    ex.caption.push_back(CaptionVocab::end);
    ex.cells.push_back(-1);
    for (int64_t i = 0; i < H * W; ++i)
        ex.image[i] = std::clamp(ex.image[i] + static_cast<real>(gen.normal(0, o.noise)), real(0), real(1));
    return ex;
}

namespace {
// The seed of epoch e's fresh training split (CaptionDataset::fresh_train),
// far from the fixed splits' seeds 1001, 2002, 3003.
uint64_t fresh_seed(uint64_t split_seed, int64_t epoch) {
    return split_seed * 1000003u + static_cast<uint64_t>(epoch) + 1;
}
}  // namespace

CaptionDataset make_shape_dataset(const ShapeSceneOptions& options, int64_t n_train, int64_t n_valid,
                                  int64_t n_test) {
    CaptionDataset d;
    d.vocab.words = {"<start>", "<end>"};
    for (int64_t s = 0; s < options.num_shapes; ++s)
        d.vocab.words.push_back(shape_names()[static_cast<size_t>(options.first_shape + s)]);
    d.rows = options.rows;
    d.cols = options.cols;
    d.height = options.rows * options.cell_size;
    d.width = options.cols * options.cell_size;
    // Fixed seeds, one per split, independent of the run's --seed.
    auto split = [options](uint64_t seed, int64_t n) {  // a copy of options: fresh_train outlives this call
        Generator gen(seed);
        std::vector<CaptionExample> out;
        for (int64_t i = 0; i < n; ++i) out.push_back(draw_shape_scene(options, gen));
        return out;
    };
    d.train = split(1001, n_train);
    d.valid = split(2002, n_valid);
    d.test = split(3003, n_test);
    d.fresh_train = [split, n_train](int64_t epoch) { return split(fresh_seed(1001, epoch), n_train); };
    return d;
}

// ---- Fashion-MNIST ----------------------------------------------------------------

const std::vector<std::string>& fashion_class_names() {
    static const std::vector<std::string> names = {"tshirt", "trouser", "pullover", "dress", "coat",
                                                   "sandal", "shirt",   "sneaker",  "bag",   "boot"};
    return names;
}

std::vector<CaptionExample> compose_fashion_scenes(const IdxImages& images, const std::vector<uint8_t>& labels,
                                                   int64_t first, int64_t last, int64_t n, int64_t rows,
                                                   int64_t cols, Generator& gen, double mirror) {
    if (static_cast<int64_t>(labels.size()) != images.count)
        throw std::invalid_argument("compose_fashion_scenes: " + std::to_string(images.count) + " images but " +
                                    std::to_string(labels.size()) + " labels");
    if (first < 0 || last > images.count || first >= last)
        throw std::invalid_argument("compose_fashion_scenes: item range [" + std::to_string(first) + ", " +
                                    std::to_string(last) + ") is not within the " + std::to_string(images.count) +
                                    " items");
    const int64_t h = images.rows, w = images.cols, W = cols * w;
    std::vector<CaptionExample> out;
    for (int64_t s = 0; s < n; ++s) {
        CaptionExample ex;
        ex.image = Tensor::zeros(Shape{rows * h, W});
        for (int64_t row = 0; row < rows; ++row)
            for (int64_t col = 0; col < cols; ++col) {
                const int64_t item = first + static_cast<int64_t>(gen.randint(static_cast<uint64_t>(last - first)));
                const uint8_t* src = images.pixels.data() + item * h * w;
                const bool flip = mirror > 0 && gen.uniform() < mirror;
                for (int64_t y = 0; y < h; ++y)
                    for (int64_t x = 0; x < w; ++x)
                        ex.image[(row * h + y) * W + col * w + x] =
                            static_cast<real>(src[y * w + (flip ? w - 1 - x : x)]) / real(255);
                ex.caption.push_back(CaptionVocab::end + 1 + labels[static_cast<size_t>(item)]);
                ex.cells.push_back(row * cols + col);
            }
        ex.caption.push_back(CaptionVocab::end);
        ex.cells.push_back(-1);
        out.push_back(std::move(ex));
    }
    return out;
}

CaptionDataset make_fashion_dataset(const std::string& dir, int64_t n_train, int64_t n_valid, int64_t n_test) {
    IdxDataset train = read_idx_dataset(dir + "/train-images-idx3-ubyte", dir + "/train-labels-idx1-ubyte");
    const IdxDataset test = read_idx_dataset(dir + "/t10k-images-idx3-ubyte", dir + "/t10k-labels-idx1-ubyte");
    // Checked before any training: a model of 28×28 items cannot read 20×20 ones.
    if (test.images.rows != train.images.rows || test.images.cols != train.images.cols)
        throw std::runtime_error(dir + ": the training images are " + std::to_string(train.images.rows) + "×" +
                                 std::to_string(train.images.cols) + " but the test images " +
                                 std::to_string(test.images.rows) + "×" + std::to_string(test.images.cols));
    IdxImages& train_images = train.images;  // moved into fresh_train below
    std::vector<uint8_t>& train_labels = train.labels;
    const IdxImages& test_images = test.images;
    const std::vector<uint8_t>& test_labels = test.labels;
    CaptionDataset d;
    d.vocab.words = {"<start>", "<end>"};
    for (const std::string& name : fashion_class_names()) d.vocab.words.push_back(name);
    d.rows = d.cols = 2;
    d.height = 2 * train_images.rows;
    d.width = 2 * train_images.cols;
    // Train and valid from Fashion-MNIST's training items (disjoint ranges),
    // test from its test items only; fixed seeds.
    const int64_t valid_first = train_images.count - train_images.count / 12;  // 55000 of 60000
    Generator g_train(1001), g_valid(2002), g_test(3003);
    d.train = compose_fashion_scenes(train_images, train_labels, 0, valid_first, n_train, 2, 2, g_train);
    d.valid = compose_fashion_scenes(train_images, train_labels, valid_first, train_images.count, n_valid, 2, 2,
                                     g_valid);
    d.test = compose_fashion_scenes(test_images, test_labels, 0, test_images.count, n_test, 2, 2, g_test);
    // Augmentation draws from the training range only, with mirrored items.
    auto items = std::make_shared<const std::pair<IdxImages, std::vector<uint8_t>>>(std::move(train_images),
                                                                                  std::move(train_labels));
    d.fresh_train = [items, valid_first, n_train](int64_t epoch) {
        Generator gen(fresh_seed(1001, epoch));
        return compose_fashion_scenes(items->first, items->second, 0, valid_first, n_train, 2, 2, gen, 0.5);
    };
    return d;
}

// ---- batches ------------------------------------------------------------------------

CaptionBatch make_caption_batch(const std::vector<CaptionExample>& data, const std::vector<int64_t>& indices) {
    if (indices.empty()) throw std::invalid_argument("make_caption_batch: no examples");
    const CaptionExample& first = data.at(static_cast<size_t>(indices[0]));
    const int64_t B = static_cast<int64_t>(indices.size()), H = first.image.size(0), W = first.image.size(1),
                  T = static_cast<int64_t>(first.caption.size());
    CaptionBatch batch;
    batch.images = Tensor::empty(Shape{B, 1, H, W});
    batch.captions = Tensor::empty(Shape{B, T});
    for (int64_t b = 0; b < B; ++b) {
        const CaptionExample& ex = data.at(static_cast<size_t>(indices[static_cast<size_t>(b)]));
        if (ex.image.numel() != H * W || static_cast<int64_t>(ex.caption.size()) != T)
            throw std::invalid_argument("make_caption_batch: example " + std::to_string(b) +
                                        " differs in image or caption size from the first");
        std::copy(ex.image.data(), ex.image.data() + H * W, batch.images.data() + b * H * W);
        for (int64_t t = 0; t < T; ++t) batch.captions[b * T + t] = static_cast<real>(ex.caption[static_cast<size_t>(t)]);
        batch.examples.push_back(&ex);
    }
    return batch;
}

}  // namespace attn
