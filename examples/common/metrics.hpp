// Metrics as JSON lines: one JSON object per line, appended and flushed as
// soon as it is known, so a crashed or interrupted run keeps its history and
// any tool (jq, pandas.read_json(lines=True), the report) can read it.
//
//   MetricsLog log("out/seq2seq/metrics.jsonl");
//   log.write({{"epoch", 3}, {"train_loss", 1.234}, {"valid_accuracy", 0.91}});
//   // appends: {"epoch":3,"train_loss":1.234,"valid_accuracy":0.91}
#pragma once

#include <fstream>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "examples/common/svg.hpp"
#include "io/json.hpp"

namespace attn {

class MetricsLog {
public:
    enum class Mode { append, truncate };
    // Opens (creating it if needed) `path`; truncate starts a fresh history.
    // Throws std::runtime_error naming the path if it cannot be opened.
    //
    // append continues an existing history, first made consistent: a line a
    // killed run left half-written is dropped, and so is every record whose
    // "step" is beyond `through_step` — a resumed run continues from its
    // checkpoint's step, and the records a killed run wrote after that
    // checkpoint would otherwise appear twice. (The file is rewritten
    // atomically, and only when something is dropped.)
    explicit MetricsLog(std::string path, Mode mode = Mode::append,
                        int64_t through_step = std::numeric_limits<int64_t>::max());

    // Writes `record` (a JSON object) as one line and flushes it. Non-finite
    // numbers become null, as JSON has no NaN. Throws if the write fails.
    void write(const Json& record);
    void write(std::initializer_list<Json::Member> members) { write(Json::object(members)); }

    const std::string& path() const { return path_; }

private:
    std::string path_;
    std::ofstream file_;
};

// Reads every line of a metrics file back (blank lines are skipped). Throws
// std::runtime_error naming the file and the line of a malformed record.
std::vector<Json> read_metrics(const std::string& path);

// The (x, y) points of field `key` for a chart, in file order: y is the
// record's `key` and x its `x_key` (e.g. "epoch"), or the record's index when
// x_key is empty or missing. Records without a numeric `key` (including a
// NaN written as null) are skipped.
std::vector<std::pair<double, double>> metric_series(const std::vector<Json>& records, const std::string& key,
                                                     const std::string& x_key = "");
// The same as a chart's line named `name` (examples/common/svg.hpp).
Series chart_series(const std::vector<Json>& records, const std::string& name, const std::string& key,
                    const std::string& x_key);

}  // namespace attn
