#include "examples/common/metrics.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "io/atomic_file.hpp"

namespace attn {

namespace {

// Keeps the well-formed records of `path` with "step" ≤ through_step and
// rewrites the file if any line was dropped. A missing file is an empty history.
void make_consistent(const std::string& path, int64_t through_step) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return;
    std::string kept, line;
    int64_t dropped = 0;
    while (std::getline(in, line)) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        bool keep = false;
        try {
            const Json record = parse_json(line);
            const Json* step = record.is_object() ? record.find("step") : nullptr;
            keep = record.is_object() && !(step && step->is_number() && step->as_double() > double(through_step));
        } catch (const JsonParseError&) {
            keep = false;  // a line a killed run left half-written
        }
        if (keep)
            kept += line + "\n";
        else
            ++dropped;
    }
    if (dropped > 0) write_file_atomic(path, kept, "MetricsLog");
}

}  // namespace

MetricsLog::MetricsLog(std::string path, Mode mode, int64_t through_step) : path_(std::move(path)) {
    // The rule of every writer (io/atomic_file.hpp): appending to a FIFO
    // would block, and to a device write into it.
    if (const std::string problem = special_file_problem(path_); !problem.empty())
        throw std::runtime_error("MetricsLog: cannot write '" + path_ + "': " + problem);
    if (mode == Mode::append) make_consistent(path_, through_step);
    const auto flags = std::ios::out | std::ios::binary | (mode == Mode::append ? std::ios::app : std::ios::trunc);
    file_.open(path_, flags);
    if (!file_)
        throw std::runtime_error("MetricsLog: cannot open '" + path_ + "' for writing: " + std::strerror(errno));
}

void MetricsLog::write(const Json& record) {
    if (!record.is_object())
        throw std::invalid_argument(std::string("MetricsLog: a record must be a JSON object, got a ") +
                                    Json::type_name(record.type()));
    std::string line = record.dump();  // compact: never contains a raw newline
    line += '\n';
    file_.write(line.data(), static_cast<std::streamsize>(line.size()));
    file_.flush();
    if (!file_) throw std::runtime_error("MetricsLog: writing to '" + path_ + "' failed");
}

std::vector<Json> read_metrics(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("read_metrics: cannot open '" + path + "': " + std::strerror(errno));
    std::vector<Json> records;
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        try {
            records.push_back(parse_json(line));
        } catch (const JsonParseError& e) {
            throw std::runtime_error("read_metrics: '" + path + "' line " + std::to_string(number) + ": " + e.what());
        }
        if (!records.back().is_object())
            throw std::runtime_error("read_metrics: '" + path + "' line " + std::to_string(number) +
                                     ": expected a JSON object");
    }
    return records;
}

std::vector<std::pair<double, double>> metric_series(const std::vector<Json>& records, const std::string& key,
                                                     const std::string& x_key) {
    std::vector<std::pair<double, double>> series;
    for (size_t i = 0; i < records.size(); ++i) {
        const Json* y = records[i].is_object() ? records[i].find(key) : nullptr;
        if (!y || !y->is_number()) continue;
        const Json* x = x_key.empty() ? nullptr : records[i].find(x_key);
        series.emplace_back(x && x->is_number() ? x->as_double() : static_cast<double>(i), y->as_double());
    }
    return series;
}

Series chart_series(const std::vector<Json>& records, const std::string& name, const std::string& key,
                    const std::string& x_key) {
    Series s{name, {}, {}};
    for (const auto& [x, y] : metric_series(records, key, x_key)) {
        s.x.push_back(x);
        s.y.push_back(y);
    }
    return s;
}

}  // namespace attn
