// zoo: trains the families of the attention catalog on small tasks that
// need them (examples/zoo/zoo.hpp) and writes the "zoo" part of
// out/report.html. docs/examples/zoo.md.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "examples/common/flags.hpp"
#include "examples/common/report.hpp"
#include "examples/zoo/zoo.hpp"
#include "io/json.hpp"
#include "tensor/parallel.hpp"

using namespace attn;
using namespace attn::zoo;

namespace attn::zoo {

std::vector<ZooTask>& zoo_registry() {
    static std::vector<ZooTask> tasks;
    return tasks;
}

ZooRegistration::ZooRegistration(std::vector<ZooTask> tasks) {
    for (auto& t : tasks) zoo_registry().push_back(std::move(t));
}

}  // namespace attn::zoo

namespace {

// The catalog's groups, in its order, with the heading of their report section.
const std::vector<std::pair<std::string, std::string>>& families() {
    static const std::vector<std::pair<std::string, std::string>> names = {
        {"FM", "FM: several inputs (co-attention, rotatory attention)"},
        {"FL", "FL: levels (attention via attention)"},
        {"FR", "FR: representations (meta-embeddings)"},
        {"GA", "GA: alignment (reinforced self-attention)"},
        {"SV", "SV: sequence variants (pointer, transducer, latent, area, dual)"},
        {"SP", "SP: sentence pairs and paired inputs"},
        {"CV", "CV: attention in CNNs"},
        {"RO", "RO: pooling, set functions and gates"},
        {"TR", "TR: the Transformer (multi-head self-attention, positions)"},
    };
    return names;
}

// Every group of docs/attention/'s catalog, in its order: the report says
// which of them have no task here, rather than claiming all.
const std::vector<std::string> kCatalogGroups = {"F",  "FM", "FL", "FR", "GS", "GA", "GD", "QT",
                                                 "QM", "TR", "KR", "SV", "CV", "SP", "RO"};

// "a,b" → "a, b": the summary table's cells wrap at spaces only.
std::string with_spaces_after_commas(const std::string& ids) {
    std::string out;
    for (char c : ids) out += c == ',' ? std::string(", ") : std::string(1, c);
    return out;
}

size_t family_rank(const std::string& code) {
    const auto& f = families();
    for (size_t i = 0; i < f.size(); ++i)
        if (f[i].first == code) return i;
    return f.size();  // unknown groups last, in registration order
}

std::string family_heading(const std::string& code) {
    for (const auto& [c, heading] : families())
        if (c == code) return "zoo, " + heading;
    return "zoo, " + code;
}

bool selected(const ZooTask& t, const std::string& only) {
    if (only.empty() || only == t.family || only == t.task) return true;
    std::stringstream ids(t.mechanism);
    for (std::string id; std::getline(ids, id, ',');)
        if (id == only) return true;
    return false;
}

}  // namespace

int main(int argc, char** argv) try {
    std::string only, out = "out";
    int64_t seed = 1, threads = 0;
    double budget = 1.0;
    bool list = false;
    FlagParser flags("zoo", "Trains the attention families of the catalog on small tasks that need them.");
    flags.add("--only", &only, "a family code (SP), a task name (pairs) or a catalog id; empty: all");
    flags.add("--seed", &seed, "every random choice derives from it");
    flags.add("--threads", &threads, "0: ATTN_NUM_THREADS or the number of cores", 0, 1024);
    flags.add("--budget", &budget, "multiplies every task's step count (1: the stated setting)", 1e-3, 1000);
    flags.add_path("--out", &out, "OUT/report.html gets the zoo section", FlagParser::PathUse::output_folder);
    flags.add("--list", &list, "list the tasks and exit");
    if (!flags.parse(argc, argv)) return 0;
    if (threads > 0) set_num_threads(static_cast<int>(threads));

    // One report section per family, in the catalog's order.
    std::vector<ZooTask> tasks = zoo_registry();
    std::stable_sort(tasks.begin(), tasks.end(),
                     [](const ZooTask& a, const ZooTask& b) { return family_rank(a.family) < family_rank(b.family); });

    if (list) {
        for (const ZooTask& t : tasks)
            std::printf("%-3s %-10s %-45s %s\n", t.family.c_str(), t.task.c_str(), t.mechanism.c_str(), t.summary.c_str());
        check_standard_output("the list");
        return 0;
    }

    std::ostringstream budget_stream;  // "1", "0.25": as typed, not "1.000000"
    budget_stream << budget;
    const std::string budget_text = budget_stream.str();
    HtmlReport report("attn: the attention zoo");
    report.set_anchor_prefix("zoo-");
    report.section("zoo: the attention families on tasks that need them");
    report.paragraph("Each task trains a small model built around one mechanism of the catalog for a fixed "
                     "number of steps (seed " + std::to_string(seed) + ", budget ×" + budget_text +
                     ": each task's steps times this). The target is the one stated on the mechanism's page in "
                     "docs/attention/.");
    std::vector<std::string> with_task, without_task;
    for (const std::string& group : kCatalogGroups) {
        const bool has = std::any_of(tasks.begin(), tasks.end(), [&](const ZooTask& t) { return t.family == group; });
        (has ? with_task : without_task).push_back(group);
    }
    const auto joined = [](const std::vector<std::string>& v) {
        std::string s;
        for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
        return s;
    };
    report.paragraph(std::to_string(with_task.size()) + " of the catalog's " + std::to_string(kCatalogGroups.size()) +
                     " groups have a task here (" + joined(with_task) + ")." +
                     (without_task.empty() ? std::string()
                                           : " " + joined(without_task) +
                                                 " have none: their mechanisms are checked by make test against "
                                                 "independent references, and the score functions (GS) and soft "
                                                 "and hard alignment (GA) also train in the seq2seq and caption "
                                                 "examples."));
    report.paragraph("A target counts as met when the value reaches the one on the mechanism's page and, where "
                     "the task also trains the same model without the mechanism (the baseline column with a "
                     "number), does better than that baseline. The summary table is at the end of the zoo "
                     "sections.");
    std::vector<std::vector<Cell>> rows;
    int run = 0, missed = 0;
    std::string family;
    for (const ZooTask& t : tasks) {
        if (!selected(t, only)) continue;
        if (t.family != family) report.section(family_heading(t.family));
        family = t.family;
        std::cerr << "== " << t.family << " " << t.task << ": " << t.mechanism << "\n";
        Generator gen(static_cast<uint64_t>(seed));
        ZooContext ctx{gen, seed, budget, report};
        const auto start = std::chrono::steady_clock::now();
        ZooResult r = t.run(ctx);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        ++run;
        if (!r.reached()) ++missed;
        rows.push_back({t.family, with_spaces_after_commas(t.mechanism), t.task, r.metric, r.value, r.target, r.verdict(),
                        r.steps, seconds, r.baseline});
        Json line = Json::object({{"family", t.family}, {"mechanism", t.mechanism}, {"task", t.task},
                                  {"metric", r.metric}, {"value", r.value}, {"target", r.target},
                                  {"reached", r.reached()}, {"beats_baseline", r.beats_baseline()}, {"steps", r.steps}, {"seconds", seconds}});
        std::cout << "RESULT " << line.dump() << std::endl;
    }
    if (run == 0)
        throw std::invalid_argument(only.empty() ? "no tasks are registered" : "--only '" + only + "' matches no task (see --list)");
    report.section("zoo: summary");
    report.table({"family", "mechanism", "task", "metric", "reached", "target", "met", "steps", "seconds", "baseline"},
                 rows);
    write_report_part(out, "zoo", report);
    std::cerr << "zoo: " << run - missed << " of " << run << " tasks reached their target; report: " << out
              << "/report.html\n";
    check_standard_output("the results");
    return missed == 0 ? 0 : 1;
} catch (const std::exception& e) {
    std::cerr << error_message("zoo", e.what()) << "\n";
    return 2;
}
