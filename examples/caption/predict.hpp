// caption --predict: caption a picture of your own (PGM or PNG, any size)
// with a trained checkpoint and show where the model looked for each word.
//
//   build/examples/caption --predict scene.png            # the caption, and a map per word
//   build/examples/caption --predict scene.png --svg s.svg  # the overlays as one SVG
//
// The picture is converted to gray, resized to the model's input (the
// built-in scenes: light items on black; --invert for dark on light) and
// captioned greedily. For hard attention each word also names the one grid
// location the model picks (argmax α_t), and --samples N draws N locations
// from α_t as training does.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "examples/caption/caption_data.hpp"
#include "examples/caption/caption_model.hpp"

namespace attn {

// What a checkpoint needs for --predict beyond the weights.
struct CaptionSetup {
    CaptionerConfig config;
    std::vector<std::string> words;  // the vocabulary, id → word
    int64_t height = 0, width = 0;   // the model's input size
    int64_t max_length = 0;          // words per caption, <end> included
};
void save_setup(const CaptionSetup& setup, std::map<std::string, std::string>& metadata);
// Throws std::runtime_error naming `path` and the key that is missing or wrong.
CaptionSetup load_caption_setup(const std::map<std::string, std::string>& metadata, const std::string& path);

struct CaptionPredictOptions {
    std::string checkpoint;
    std::vector<std::string> images;  // picture files
    std::string svg;                  // the overlays of each picture (numbered when several)
    bool show = false;                // draw the maps also when stdout is not a terminal
    bool invert = false;              // dark items on a light background
    int64_t samples = 0;              // hard attention: draw this many locations per word from α_t
    uint64_t seed = 1;
};
int predict_captions(const CaptionPredictOptions& options);

// --dump-reference: runs the model of `model_path` on fixed inputs (four
// scenes, each teacher-forced with the model's own greedy caption) in
// evaluation mode and writes to `out_path` (safetensors, F32):
//   input.images      B×1×H×W
//   input.words_in    B×T    the decoder's input words: <start>, then the greedy caption
//   CASE.logits       B×T×V
//   CASE.attention    B×T×L  α_t (L = (H/4)·(W/4) grid locations, row by row)
//   CASE.gate         B×T    β_t
//   argmax.location   B×T    the location read (argmax α_t)
// CASE is `soft` for soft attention; hard and Gumbel attention give two
// cases, `expected` (ẑ_t = β_t Σ_i α_ti a_i) and `argmax` (ẑ_t = β_t a_argmax);
// metadata: example = caption, cases, model = model_path.
void dump_caption_reference(const std::string& model_path, const std::string& out_path);

// The word maps side by side, each headed by its word: the lines of
// grid_text() joined column by column.
std::string maps_side_by_side(const std::vector<std::string>& words, const std::vector<std::string>& maps);

}  // namespace attn
