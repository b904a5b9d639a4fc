// The table of score and alignment functions by id (catalog entries 15–28 and
// Luong's location score), read by make_score and make_alignment.
#include "attention/by_id.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace attn {

namespace {

int64_t or_default(int64_t value, int64_t fallback) { return value > 0 ? value : fallback; }

SimilarityScore::Options similarity(SimilarityScore::Kind kind, const NamedOptions& options) {
    SimilarityScore::Options o;
    o.kind = kind;
    o.beta = static_cast<real>(named_option(options, "beta", o.beta));
    return o;
}

}  // namespace

// One row per way a flag may name a function; the same catalog id may have
// several rows (Luong's "concat" is the additive score; the element-wise
// alignment has four normalisations).
const std::vector<ScoreInfo>& score_table() {
    using S = ScoreShape;
    static const std::vector<ScoreInfo> table = {
        {"additive_score", "additive", "wᵀ tanh(W_1 q + W_2 k + b) (Bahdanau)", false,
         [](const S& s, Generator& g) {
             return std::make_unique<AdditiveScore>(s.query_dim, s.key_dim, or_default(s.hidden_dim, s.query_dim), g);
         }},
        {"additive_score", "concat", "Luong's name for the additive score, vᵀ tanh(W [q; k])", false,
         [](const S& s, Generator& g) {
             return std::make_unique<AdditiveScore>(s.query_dim, s.key_dim, or_default(s.hidden_dim, s.query_dim), g);
         }},
        {"dot_score", "dot", "qᵀk (Luong)", true, [](const S&, Generator&) { return std::make_unique<DotScore>(); }},
        {"scaled_dot_score", "scaled", "qᵀk / √d_k (Vaswani)", true,
         [](const S&, Generator&) { return std::make_unique<ScaledDotScore>(); }},
        {"general_score", "general", "kᵀ W q (Luong)", false,
         [](const S& s, Generator& g) { return std::make_unique<GeneralScore>(s.query_dim, s.key_dim, g); }},
        {"biased_general_score", "biased-general", "kᵀ (W q + b) (Sordoni)", false,
         [](const S& s, Generator& g) { return std::make_unique<BiasedGeneralScore>(s.query_dim, s.key_dim, g); }},
        {"activated_general_score", "activated-general", "tanh(kᵀ W q + b) (IAN)", false,
         [](const S& s, Generator& g) {
             return std::make_unique<ActivatedGeneralScore>(s.query_dim, s.key_dim, g);
         }},
        {"similarity_score", "cosine", "β qᵀk / (‖q‖ ‖k‖) (NTM; option beta, the key strength, 1)", true,
         [](const S& s, Generator&) {
             return std::make_unique<SimilarityScore>(similarity(SimilarityScore::Kind::cosine, s.options));
         },
         {"beta"}},
        {"similarity_score", "distance", "−‖q − k‖", true,
         [](const S& s, Generator&) {
             return std::make_unique<SimilarityScore>(similarity(SimilarityScore::Kind::negative_distance, s.options));
         }},
        {"low_rank_bilinear_score", "low-rank", "pᵀ(tanh(U q) ∘ tanh(V k)), a rank-r bilinear score (MLB)", false,
         [](const S& s, Generator& g) {
             return std::make_unique<LowRankBilinearScore>(s.query_dim, s.key_dim,
                                                           or_default(s.hidden_dim, s.query_dim), g);
         }},
        {"location_score", "location", "W_a q, one score per position (Luong; needs a maximum length)", false,
         [](const S& s, Generator& g) { return std::make_unique<LocationScore>(s.query_dim, s.max_length, g); }},
    };
    return table;
}

const std::vector<AlignmentInfo>& alignment_table() {
    using A = AlignmentShape;
    using E = ElementwiseAlignment;
    static const std::vector<AlignmentInfo> table = {
        {"soft_alignment", "soft", "softmax(e / T) over every key (Luong's global)", false, false,
         [](const A& a, Generator&) { return std::make_unique<SoftAlignment>(a.temperature); }},
        {"hard_alignment", "hard", "one key sampled from softmax(e) (Show-Attend-Tell; REINFORCE)", true, false,
         [](const A&, Generator& g) { return std::make_unique<HardAlignment>(g); }},
        {"local_monotonic_alignment", "local-m", "softmax over the window |l − t| ≤ D (Luong)", false, false,
         [](const A& a, Generator&) { return std::make_unique<LocalMonotonicAlignment>(a.window); }},
        {"local_predictive_alignment", "local-p", "windowed softmax × a Gaussian at a predicted centre (Luong)",
         false, false,
         [](const A& a, Generator& g) {
             return std::make_unique<LocalPredictiveAlignment>(a.query_dim, or_default(a.hidden_dim, a.query_dim),
                                                               a.window, g);
         }},
        {"reinforced_alignment", "reinforced", "softmax over sampled tokens (ReSA; self-attention)", true, true,
         [](const A& a, Generator& g) {
             return std::make_unique<ReinforcedAlignment>(a.query_dim, or_default(a.hidden_dim, a.query_dim), g);
         }},
        {"gumbel_softmax_alignment", "gumbel", "softmax((log a + g) / τ), g ~ Gumbel (Jang; Maddison)", true, false,
         [](const A& a, Generator& g) { return std::make_unique<GumbelSoftmaxAlignment>(g, a.temperature); }},
        {"gumbel_softmax_alignment", "gumbel-st", "Gumbel-softmax, one-hot forward, straight-through backward", true,
         false,
         [](const A& a, Generator& g) { return std::make_unique<GumbelSoftmaxAlignment>(g, a.temperature, true); }},
        {"elementwise_alignment", "sigmoid", "σ(e_l), each weight on its own", false, false,
         [](const A&, Generator&) { return std::make_unique<E>(E::Kind::sigmoid); }},
        {"elementwise_alignment", "relu", "ReLU(e_l)", false, false,
         [](const A&, Generator&) { return std::make_unique<E>(E::Kind::relu); }},
        {"elementwise_alignment", "relu-length", "ReLU(e_l) / n", false, false,
         [](const A&, Generator&) { return std::make_unique<E>(E::Kind::relu, E::Normalizer::length); }},
        {"elementwise_alignment", "relu-sum", "ReLU(e_l) / (Σ_j ReLU(e_j) + ε)", false, false,
         [](const A&, Generator&) { return std::make_unique<E>(E::Kind::relu, E::Normalizer::sum); }},
    };
    return table;
}

namespace {

template <class Info>
const Info& lookup(const std::vector<Info>& table, const std::string& id, const char* what,
                   const std::string& choices) {
    for (const Info& row : table)
        if (row.name == id) return row;  // a short name picks its own row
    for (const Info& row : table)
        if (row.id == id) return row;  // a catalog id picks its first row
    throw std::invalid_argument(std::string("unknown ") + what + " '" + id + "'; choose one of: " + choices);
}

template <class Info>
std::string choices(const std::vector<Info>& table) {
    std::string s;
    for (const Info& row : table) s += (s.empty() ? "" : ", ") + row.id + " (" + row.name + ")";
    return s;
}

}  // namespace

std::string score_choices() { return choices(score_table()); }
std::string alignment_choices() { return choices(alignment_table()); }

const ScoreInfo& score_info(const std::string& id) { return lookup(score_table(), id, "score", score_choices()); }

const AlignmentInfo& alignment_info(const std::string& id) {
    return lookup(alignment_table(), id, "alignment", alignment_choices());
}

std::string canonical_score(const std::string& id) {
    const ScoreInfo& row = score_info(id);
    return &score_info(row.id) == &row ? row.id : row.name;
}

std::string canonical_alignment(const std::string& id) {
    const AlignmentInfo& row = alignment_info(id);
    return &alignment_info(row.id) == &row ? row.id : row.name;
}

double named_option(const NamedOptions& options, const std::string& name, double fallback) {
    const auto it = options.find(name);
    return it == options.end() ? fallback : it->second;
}

NamedOptions parse_named_options(const std::string& text, const std::string& who) {
    NamedOptions options;
    size_t at = 0;
    while (at < text.size()) {
        const size_t comma = std::min(text.find(',', at), text.size());
        const std::string item = text.substr(at, comma - at);
        const size_t eq = item.find('=');
        char* end = nullptr;
        const double value = eq == std::string::npos ? 0 : std::strtod(item.c_str() + eq + 1, &end);
        if (eq == std::string::npos || eq == 0 || end == item.c_str() + eq + 1 || *end != '\0' || !std::isfinite(value))
            throw std::invalid_argument(who + ": expected name=number[,name=number...], got '" + item + "' in '" +
                                        text + "'");
        if (!options.emplace(item.substr(0, eq), value).second)
            throw std::invalid_argument(who + ": '" + item.substr(0, eq) + "' given twice in '" + text + "'");
        at = comma + 1;
    }
    return options;
}

namespace {

// Every option given is one the row reads.
void check_options(const NamedOptions& given, const std::vector<std::string>& takes, const std::string& what) {
    for (const auto& [name, value] : given) {
        bool known = false;
        for (const std::string& t : takes) known = known || t == name;
        if (known) continue;
        std::string list;
        for (const std::string& t : takes) list += (list.empty() ? "" : ", ") + t;
        throw std::invalid_argument(what + " takes no option '" + name + "' (" +
                                    (list.empty() ? std::string("it takes none") : "it takes: " + list) + ")");
    }
}

}  // namespace

std::unique_ptr<ScoreFunction> make_score(const std::string& id, const ScoreShape& shape, Generator& gen) {
    const ScoreInfo& info = score_info(id);
    check_options(shape.options, info.options, "the score " + info.id + " (" + info.name + ")");
    if (info.same_width && shape.query_dim != shape.key_dim)
        throw std::invalid_argument(info.id + " compares queries and keys by a dot product: it needs d_q = d_k, got " +
                                    std::to_string(shape.query_dim) + " and " + std::to_string(shape.key_dim));
    return info.make(shape, gen);
}

std::unique_ptr<Alignment> make_alignment(const std::string& id, const AlignmentShape& shape, Generator& gen) {
    const AlignmentInfo& info = alignment_info(id);
    check_options(shape.options, info.options, "the alignment " + info.id + " (" + info.name + ")");
    return info.make(shape, gen);
}

}  // namespace attn
