// Score and alignment functions by id: the one table that the mechanisms, the
// trainers' --score and --align flags, and the tests all read.
//
//     auto score = make_score("general_score", {.query_dim = 256, .key_dim = 128}, gen);
//     auto align = make_alignment("local_monotonic_alignment", {.window = 4}, gen);
//
// An id is the catalog id ("dot_score", "local_predictive_alignment") or its
// short name ("dot", "local-p"). Adding a score or an alignment to the
// framework is one class (attention/scores.hpp or alignments.hpp), one row of
// the table in by_id.cpp, one registry entry with its reference in tests/grad/,
// and one doc section: docs/extending.md walks through it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "attention/alignments.hpp"
#include "attention/general.hpp"
#include "attention/scores.hpp"
#include "tensor/random.hpp"

namespace attn {

// What a score may need to know to build its parameters.
// Named options a row reads beyond the fixed fields below: a coursework
// score's or alignment's own hyperparameter (the seq2seq trainer's
// --score-options beta=2.5). A row lists the names it takes (ScoreInfo::options);
// make_score and make_alignment refuse any other, naming the row and its choices.
using NamedOptions = std::map<std::string, double>;
// options[name], or `fallback` when it is not given.
double named_option(const NamedOptions& options, const std::string& name, double fallback);
// "beta=2.5,gamma=1" → {beta: 2.5, gamma: 1} ("" → none); throws naming `who`
// and the item it cannot read.
NamedOptions parse_named_options(const std::string& text, const std::string& who);

struct ScoreShape {
    int64_t query_dim = 0;   // d_q
    int64_t key_dim = 0;     // d_k
    int64_t hidden_dim = 0;  // d_w of the additive score, the rank of a factorised one (0: d_q)
    int64_t max_length = 0;  // the location score's n_max
    NamedOptions options = {};  // named options (the row's `options` says which)
};

struct ScoreInfo {
    std::string id;       // the catalog id, e.g. "general_score"
    std::string name;     // the short name a flag may use, e.g. "general"
    std::string summary;  // one line for --help and the docs
    bool same_width = false;  // needs d_q = d_k (dot products)
    std::function<std::unique_ptr<ScoreFunction>(const ScoreShape&, Generator&)> make;
    std::vector<std::string> options = {};  // the named options make reads
};

// What an alignment may need.
struct AlignmentShape {
    int64_t query_dim = 0;   // d_q (local-p predicts its centre from the query)
    int64_t hidden_dim = 0;  // local-p's d_p, the reinforced sampler's width (0: d_q)
    int64_t window = 10;     // D, the half-width of the local windows
    real temperature = 1;    // soft and Gumbel-softmax
    NamedOptions options = {};  // named options (the row's `options` says which)
};

struct AlignmentInfo {
    std::string id;       // the catalog id, e.g. "local_monotonic_alignment"
    std::string name;     // the short name, e.g. "local-m"
    std::string summary;
    // Hard and Gumbel draw from the generator given to make_alignment (which
    // must outlive the alignment); reinforced needs the tokens as queries and
    // square scores (self-attention).
    bool stochastic = false;
    bool self_attention_only = false;
    std::function<std::unique_ptr<Alignment>(const AlignmentShape&, Generator&)> make;
    std::vector<std::string> options = {};  // the named options make reads
};

// The built-in tables, in catalog order.
const std::vector<ScoreInfo>& score_table();
const std::vector<AlignmentInfo>& alignment_table();

// The row of an id or short name; throws std::invalid_argument listing the
// choices ("unknown score 'dott'; choose one of: additive_score (additive), ...").
const ScoreInfo& score_info(const std::string& id);
const AlignmentInfo& alignment_info(const std::string& id);

// The name that picks the same row, as a catalog id when the id alone picks it
// ("dot" → "dot_score") and as the short name otherwise ("distance", whose
// id similarity_score picks the cosine row). Throws on an unknown name.
std::string canonical_score(const std::string& id);
std::string canonical_alignment(const std::string& id);

// Builds a score: throws, naming the score and both widths, when it needs
// d_q = d_k and they differ.
std::unique_ptr<ScoreFunction> make_score(const std::string& id, const ScoreShape& shape, Generator& gen);
std::unique_ptr<Alignment> make_alignment(const std::string& id, const AlignmentShape& shape, Generator& gen);

// "additive_score (additive), dot_score (dot), ..." for help texts and errors.
std::string score_choices();
std::string alignment_choices();

}  // namespace attn
