// The report's attention explorer: one attention picture a reader can play
// with in the browser, drawn by a small hand-written script inside the page
// (no library, no file beside it).
//
//   - click an output token (a row: a target symbol, a caption word, a query
//     token) to see its weights over the inputs (the columns);
//   - a slider over frames (the epochs of training: watch attention emerge);
//   - a choice of map (the layers and heads of a Transformer, or the soft and
//     hard models on the same image);
//   - for token inputs, two views: a heatmap, and lines between the tokens
//     (as bertviz draws them);
//   - for an image, the weights over its grid of locations laid over the
//     picture, and the location hard attention would read (marks).
//
// An explorer is data (below) turned into JSON in a data-explorer attribute of
// a <div>; HtmlReport::explorer writes it and the page's script draws it.
// The trainers keep one frame per epoch in OUT/NAME/attention.jsonl (written
// by the training loop from Validation::snapshot), which the report reads back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/json.hpp"

namespace attn {

// One attention picture: weights rows × columns (each row usually sums to 1).
struct AttentionMap {
    std::string label;                        // e.g. "layer 1, head 2"; may be empty when there is one map
    std::vector<std::vector<double>> weights; // rows × columns
    std::vector<std::string> rows;            // when not empty: this map's own row tokens (else the frame's)
    std::vector<int64_t> marks;               // image explorers: per row, a location index to outline (or -1)
};

// The state of the attention at one moment (an epoch): the row tokens, the
// column tokens, and one map or several.
struct ExplorerFrame {
    std::string label;              // e.g. "epoch 3"
    std::vector<std::string> rows;  // the output side (target symbols, caption words, query tokens)
    std::vector<std::string> cols;  // the input side (source symbols); empty for an image
    std::vector<AttentionMap> maps;
};

// A grayscale picture (values 0..1, row-major) whose columns are the
// locations of a grid_h × grid_w grid laid over it.
struct ExplorerImage {
    int64_t height = 0, width = 0, grid_h = 0, grid_w = 0;
    std::vector<double> pixels;
};

struct Explorer {
    std::string title;
    std::string rows_label = "output", cols_label = "input";
    std::vector<ExplorerFrame> frames;  // at least one
    std::optional<ExplorerImage> image; // set: the columns are the image's grid locations
    int64_t initial_frame = -1;         // the frame shown first (-1: the last)
    int64_t initial_map = 0;            // the map shown first
};

// Frames to JSON and back: what the trainers store per epoch. Weights are
// kept to 3 decimals (the picture cannot show more). from_json throws
// std::invalid_argument naming what is missing or inconsistent.
Json frame_json(const ExplorerFrame& frame);
ExplorerFrame frame_from_json(const Json& json);

// Item `item`'s frames from the records of a run's attention.jsonl (one per
// snapshot, each holding an array of frames, one per item), labelled "before
// training" (epoch 0) and "epoch N". Records without the item are skipped.
std::vector<ExplorerFrame> history_frames(const std::vector<Json>& records, size_t item);

// The whole explorer as JSON (what the page's script reads). Throws
// std::invalid_argument if a map's size does not match its rows and columns,
// a mark is outside the grid, or there is no frame.
Json explorer_json(const Explorer& explorer);

// The script that draws every explorer of a page (its source is in
// explorer.cpp): HtmlReport puts it in the page once.
const char* explorer_script();
// The explorer's style rules, likewise.
const char* explorer_style();

}  // namespace attn
