// Area attention (entry 59): areas of adjacent items as keys and values.
// The formulas, the papers and the shape legend are in attention/area.hpp.
#include "attention/area.hpp"

#include <cmath>
#include <stdexcept>

#include "attention/alignments.hpp"
#include "attention/query_types.hpp"
#include "nn/init.hpp"

namespace attn {

namespace {

// L (k+1)×k with L[i][j] = 1 for j < i: L x is the prefix sums of x with a 0 on top.
Tensor prefix_matrix(int64_t k) {
    Tensor L = Tensor::zeros(Shape{k + 1, k});
    for (int64_t i = 0; i <= k; ++i)
        for (int64_t j = 0; j < i; ++j) L.at({i, j}) = 1;
    return L;
}

// x B×n×d (n = H·W) → the summed-area table P B×(H+1)(W+1)×d,
// P[i][j] = Σ_{h<i, w<j} x[h][w], flattened row-major.
Var summed_area_table(const Var& x, int64_t H, int64_t W) {
    const int64_t B = x.size(0), d = x.size(2);
    // prefix sums down the rows:  B×(H+1)×(W·d)
    const Var rows = matmul(Var(prefix_matrix(H)), reshape(x, {B, H, W * d}));
    // then along each row:        B(H+1)×(W+1)×d
    const Var both = matmul(Var(prefix_matrix(W)), reshape(rows, {B * (H + 1), W, d}));
    return reshape(both, {B, (H + 1) * (W + 1), d});
}

// Σ_{i∈r} x_i for every area, from the table's four corners   B×N_a×d
Var area_sums(const Var& table, int64_t W, const std::vector<Area>& areas) {
    std::vector<int64_t> top_left, top_right, bottom_left, bottom_right;
    auto corner = [W](int64_t i, int64_t j) { return i * (W + 1) + j; };
    for (const Area& a : areas) {
        const int64_t bottom = a.top + a.height, right = a.left + a.width;
        top_left.push_back(corner(a.top, a.left));
        top_right.push_back(corner(a.top, right));
        bottom_left.push_back(corner(bottom, a.left));
        bottom_right.push_back(corner(bottom, right));
    }
    // P[bottom][right] − P[top][right] − P[bottom][left] + P[top][left]
    return add(sub(sub(index_select(table, 1, bottom_right), index_select(table, 1, top_right)),
                   index_select(table, 1, bottom_left)),
               index_select(table, 1, top_left));
}

}  // namespace

std::vector<Area> enumerate_areas(int64_t grid_height, int64_t grid_width, int64_t max_height, int64_t max_width) {
    if (grid_height < 1 || grid_width < 1 || max_height < 1 || max_width < 1)
        throw std::invalid_argument("area_attention: grid " + std::to_string(grid_height) + "×" +
                                    std::to_string(grid_width) + " and largest area " + std::to_string(max_height) +
                                    "×" + std::to_string(max_width) + " need positive sizes");
    std::vector<Area> areas;
    for (int64_t h = 1; h <= std::min(max_height, grid_height); ++h)
        for (int64_t w = 1; w <= std::min(max_width, grid_width); ++w)
            for (int64_t top = 0; top + h <= grid_height; ++top)
                for (int64_t left = 0; left + w <= grid_width; ++left) areas.push_back({top, left, h, w});
    return areas;
}

AreaFeatures area_features(const Var& x, int64_t grid_height, const std::vector<Area>& areas, const Tensor& mask) {
    check_rank("area_attention", "items", x, 3);
    const int64_t B = x.size(0), n = x.size(1);
    if (grid_height < 1 || n % grid_height != 0)
        throw std::invalid_argument("area_attention: items " + x.shape().str() + " do not fill a grid of " +
                                    std::to_string(grid_height) + " rows");
    const int64_t H = grid_height, W = n / grid_height;
    Tensor size = Tensor::empty(Shape{1, static_cast<int64_t>(areas.size()), 1});  // |r|
    for (size_t r = 0; r < areas.size(); ++r) size[static_cast<int64_t>(r)] = real(areas[r].height * areas[r].width);

    AreaFeatures f;
    f.sum = area_sums(summed_area_table(x, H, W), W, areas);
    // μ_r = (1/|r|) Σ x_i
    f.mean = div(f.sum, Var(size));
    // σ_r = √(|(1/|r|) Σ x_i² − μ_r²| + ε): |·| absorbs rounding below zero for one-cell areas
    const Var mean_square = div(area_sums(summed_area_table(square(x), H, W), W, areas), Var(size));
    f.stddev = sqrt(add(abs(sub(mean_square, square(f.mean))), real(1e-6)));
    if (mask.defined()) {
        if (mask.shape() != Shape{B, n})
            throw std::invalid_argument("area_attention: mask " + mask.shape().str() + " does not fit items " +
                                        x.shape().str() + " (it needs B×n)");
        // an area is kept when all its cells are: the count of kept cells equals |r|
        const Tensor kept = area_sums(summed_area_table(Var(mask.reshape(Shape{B, n, 1})), H, W), W, areas).value();
        f.keep = Tensor::zeros(Shape{B, static_cast<int64_t>(areas.size())});
        for (int64_t i = 0; i < f.keep.numel(); ++i)
            f.keep[i] = std::abs(kept[i] - size[i % static_cast<int64_t>(areas.size())]) < real(0.5) ? 1 : 0;
    }
    return f;
}

AreaAttention::AreaAttention(const Options& options, Generator& gen) : options_(options) {
    if (!options.rich_keys) return;
    if (options.dim < 2)
        throw std::invalid_argument("area_attention: rich keys need the key width dim ≥ 2, got " +
                                    std::to_string(options.dim));
    const int64_t d = options.dim, e = d / 2, h = options.hidden_dim > 0 ? options.hidden_dim : d;
    Tensor eh = Tensor::empty(Shape{options.max_height, e}), ew = Tensor::empty(Shape{options.max_width, e});
    E_h = register_parameter("E_h", init::normal_(eh, 0, real(0.1), gen));
    E_w = register_parameter("E_w", init::normal_(ew, 0, real(0.1), gen));
    W_m = register_parameter("W_m", init::xavier_uniform(Shape{h, 2 * d + 2 * e}, gen));
    b_m = register_parameter("b_m", init::uniform_fan_in(Shape{h}, 2 * d + 2 * e, gen));
    W_d = register_parameter("W_d", init::xavier_uniform(Shape{d, h}, gen));
}

AreaAttention::Output AreaAttention::forward(const Var& queries, const Var& keys_in, const Var& values_in,
                                             const Tensor& mask) {
    check_qkv(id(), queries, keys_in, values_in);
    // Padded items are zeroed (by selection) before the area sums read them:
    // every area holding one is masked, but its sum would still carry a NaN.
    const Tensor item_keep = mask.defined() && mask.rank() == 2 ? key_mask(mask) : Tensor();
    const Var keys = hide_unseen_keys(keys_in, item_keep), values = hide_unseen_keys(values_in, item_keep);
    if (queries.size(2) != keys.size(2) || (options_.rich_keys && keys.size(2) != options_.dim))
        throw std::invalid_argument(id() + ": queries " + queries.shape().str() + " and keys " + keys.shape().str() +
                                    " need the same width" +
                                    (options_.rich_keys ? " (" + std::to_string(options_.dim) + ")" : ""));
    const int64_t B = keys.size(0), H = options_.grid_height, d = keys.size(2);
    if (H < 1 || keys.size(1) % H != 0)
        throw std::invalid_argument(id() + ": keys " + keys.shape().str() + " do not fill a grid of " +
                                    std::to_string(H) + " rows");
    Output out;
    out.areas = enumerate_areas(H, keys.size(1) / H, options_.max_height, options_.max_width);
    const int64_t Na = static_cast<int64_t>(out.areas.size());
    const AreaFeatures k = area_features(keys, H, out.areas, mask);
    const AreaFeatures v = area_features(values, H, out.areas);
    out.area_values = options_.sum_values ? v.sum : v.mean;  // v_r   B×N_a×d_v

    if (!options_.rich_keys) {
        out.area_keys = k.mean;  // k_r = μ_r   B×N_a×d
    } else {
        // E_h(h_r), E_w(w_r): the learned size embeddings, shared by the batch   B×N_a×d/2
        Tensor heights = Tensor::empty(Shape{Na}), widths = Tensor::empty(Shape{Na});
        for (int64_t r = 0; r < Na; ++r) {
            heights[r] = real(out.areas[static_cast<size_t>(r)].height - 1);
            widths[r] = real(out.areas[static_cast<size_t>(r)].width - 1);
        }
        const Shape emb{B, Na, E_h.size(1)};
        const Var size_h = expand(unsqueeze(embedding(E_h, heights), 0), emb);
        const Var size_w = expand(unsqueeze(embedding(E_w, widths), 0), emb);
        // k_r = W_d ReLU(W_m [μ_r; σ_r; E_h(h_r); E_w(w_r)] + b)                  B×N_a×d
        const Var features = concat({k.mean, k.stddev, size_h, size_w}, -1);
        out.area_keys = matmul(relu(add(matmul(features, W_m, false, true), b_m)), W_d, false, true);
    }
    // a = softmax_r(q·k_r / (τ √d))                                             B×m×N_a
    const Var scores = mul(matmul(queries, out.area_keys, false, true),
                           real(1) / (options_.temperature * std::sqrt(static_cast<real>(d))));
    const Tensor keep = k.keep.defined() ? k.keep.reshape(Shape{B, 1, Na}) : Tensor();
    out.weights = masked_softmax(scores, keep);
    out.output = attend(out.weights, out.area_values);  // o = Σ_r a_r v_r   B×m×d_v
    return out;
}

Taxonomy AreaAttention::taxonomy() const {
    Taxonomy t;
    t.scoring = "scaled_dot_score";
    return t;
}

}  // namespace attn
