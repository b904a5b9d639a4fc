// The caption trainer's part of out/report.html: the loss and validation
// curves, the test metrics, and for a few test images one attention overlay
// per generated word (like Figure 2 of Xu et al. 2015). SVGs also go to DIR.
#pragma once

#include <string>
#include <vector>

#include "examples/caption/caption_data.hpp"
#include "examples/caption/caption_model.hpp"
#include "nn/json.hpp"

namespace attn {

// The charts of a run, from its metrics records (one per epoch).
struct CaptionCharts {
    std::string loss_terms;  // cross-entropy and penalty, each its own series (log scale)
    std::string reinforce;   // hard attention: the REINFORCE term and the entropy bonus ("" for soft)
    std::string valid;       // word accuracy, exact captions, localisation
};
CaptionCharts caption_charts(const std::vector<Json>& records);

// `penalty` is λ of the doubly stochastic penalty, for the text that explains
// what the training loss is made of.
void write_caption_report(const std::string& out_root, const std::string& dir, const CaptionDataset& data,
                          const std::vector<Decoded>& test_decoded, const std::string& attention_kind,
                          double penalty, const CaptionMetrics& greedy, const CaptionMetrics& beam,
                          int64_t beam_width);

}  // namespace attn
