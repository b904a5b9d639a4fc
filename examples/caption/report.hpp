// The caption trainer's part of out/report.html: the loss and validation
// curves, the test metrics, and for a few test images one attention overlay
// per generated word (like Figure 2 of Xu et al. 2015). SVGs also go to DIR.
#pragma once

#include <string>
#include <vector>

#include "examples/caption/caption_data.hpp"
#include "examples/caption/caption_model.hpp"

namespace attn {

void write_caption_report(const std::string& out_root, const std::string& dir, const CaptionDataset& data,
                          const std::vector<Decoded>& test_decoded, const std::string& attention_kind,
                          const CaptionMetrics& greedy, const CaptionMetrics& beam, int64_t beam_width);

}  // namespace attn
