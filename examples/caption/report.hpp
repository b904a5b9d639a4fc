// The caption trainer's part of out/report.html: the loss and validation
// curves, the test metrics, and for a few test images an explorer of the
// attention per generated word (click a word; slide over the epochs), beside
// the other attention kinds' latest runs on the same images (soft and hard
// side by side). One SVG overlay per word (like Figure 2 of Xu et al. 2015)
// also goes to DIR, and the explorers' data to DIR/explorers.json.
#pragma once

#include <string>
#include <vector>

#include "examples/caption/caption_data.hpp"
#include "examples/caption/caption_model.hpp"
#include "io/json.hpp"

namespace attn {

// The charts of a run, from its metrics records (one per epoch).
struct CaptionCharts {
    std::string loss_terms;  // cross-entropy and penalty, each its own series (log scale)
    std::string reinforce;   // hard attention: the REINFORCE term and the entropy bonus ("" for soft)
    std::string valid;       // word accuracy, exact captions, localisation
};
CaptionCharts caption_charts(const std::vector<Json>& records);

// Where greedy decoding looks now, word by word, on the report's test images
// (the first three): one explorer frame each (examples/common/explorer.hpp),
// as JSON. `kind` (soft, hard, gumbel-st) labels the map; hard kinds also
// mark each word's most likely location. What the trainer keeps after every
// epoch for the report's epoch slider.
Json caption_snapshot(Captioner& model, const CaptionDataset& data, const std::string& kind);

// The test set's scores under one way of decoding, named in the report's
// table: e.g. "greedy, expected context Σ_i α_i a_i".
struct NamedMetrics {
    std::string decoding;
    CaptionMetrics metrics;
};

// `penalty` is λ of the doubly stochastic penalty, for the text that explains
// what the training loss is made of. `scores`: one row each, in order (hard
// attention: greedy under both evaluation modes, then beam search).
void write_caption_report(const std::string& out_root, const std::string& dir, const CaptionDataset& data,
                          const std::vector<Decoded>& test_decoded, const std::string& attention_kind,
                          const std::string& run_name, double penalty, const std::vector<NamedMetrics>& scores);

}  // namespace attn
