#include "examples/common/explorer.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace attn {

namespace {

// 3 decimals: the colours cannot show more, and the page stays small.
Json rounded(double w) { return std::isfinite(w) ? Json(std::round(w * 1000) / 1000) : Json(); }

Json strings(const std::vector<std::string>& v) {
    Json a = Json::array();
    for (const std::string& s : v) a.push_back(s);
    return a;
}

std::vector<std::string> strings_from(const Json& a, const std::string& what) {
    if (!a.is_array()) throw std::invalid_argument("explorer frame: '" + what + "' must be an array of strings");
    std::vector<std::string> out;
    for (const Json& s : a.as_array()) out.push_back(s.as_string());
    return out;
}

}  // namespace

Json frame_json(const ExplorerFrame& frame) {
    Json maps = Json::array();
    for (const AttentionMap& m : frame.maps) {
        Json weights = Json::array();
        for (const auto& row : m.weights) {
            Json r = Json::array();
            for (double w : row) r.push_back(rounded(w));
            weights.push_back(std::move(r));
        }
        Json map = Json::object({{"label", m.label}, {"weights", std::move(weights)}});
        if (!m.rows.empty()) map.set("rows", strings(m.rows));
        if (!m.marks.empty()) {
            Json marks = Json::array();
            for (int64_t k : m.marks) marks.push_back(k);
            map.set("marks", std::move(marks));
        }
        maps.push_back(std::move(map));
    }
    return Json::object({{"label", frame.label}, {"rows", strings(frame.rows)}, {"cols", strings(frame.cols)},
                         {"maps", std::move(maps)}});
}

ExplorerFrame frame_from_json(const Json& json) {
    if (!json.is_object() || !json.contains("maps"))
        throw std::invalid_argument("explorer frame: expected an object with label, rows, cols and maps");
    ExplorerFrame f{.label = json["label"].as_string(), .rows = strings_from(json["rows"], "rows"),
                    .cols = strings_from(json["cols"], "cols"), .maps = {}};
    for (const Json& m : json["maps"].as_array()) {
        AttentionMap map{.label = m["label"].as_string(), .weights = {}, .rows = {}, .marks = {}};
        for (const Json& row : m["weights"].as_array()) {
            std::vector<double> r;
            for (const Json& w : row.as_array()) r.push_back(w.is_null() ? NAN : w.as_double());
            map.weights.push_back(std::move(r));
        }
        if (m.contains("rows")) map.rows = strings_from(m["rows"], "rows");
        if (m.contains("marks"))
            for (const Json& k : m["marks"].as_array()) map.marks.push_back(k.as_int());
        f.maps.push_back(std::move(map));
    }
    return f;
}

std::vector<ExplorerFrame> history_frames(const std::vector<Json>& records, size_t item) {
    std::vector<ExplorerFrame> frames;
    for (const Json& record : records) {
        if (!record.contains("snapshot") || record["snapshot"].as_array().size() <= item) continue;
        ExplorerFrame f = frame_from_json(record["snapshot"][item]);
        const int64_t epoch = record["epoch"].as_int();
        f.label = epoch == 0 ? "before training" : "epoch " + std::to_string(epoch);
        frames.push_back(std::move(f));
    }
    return frames;
}

Json explorer_json(const Explorer& e) {
    if (e.frames.empty()) throw std::invalid_argument("explorer '" + e.title + "': no frame");
    const int64_t locations = e.image ? e.image->grid_h * e.image->grid_w : 0;
    if (e.image && static_cast<int64_t>(e.image->pixels.size()) != e.image->height * e.image->width)
        throw std::invalid_argument("explorer '" + e.title + "': the image has " +
                                    std::to_string(e.image->pixels.size()) + " pixels, not " +
                                    std::to_string(e.image->height) + "×" + std::to_string(e.image->width));
    // The page's script reads every frame with the first frame's map labels
    // (the choice of map is made once), so every frame has as many maps.
    const size_t map_count = e.frames[0].maps.size();
    Json frames = Json::array();
    for (const ExplorerFrame& f : e.frames) {
        const std::string where = "explorer '" + e.title + "', frame '" + f.label + "'";
        if (f.maps.size() != map_count || map_count == 0)
            throw std::invalid_argument(where + ": " + std::to_string(f.maps.size()) + " maps, the first frame has " +
                                        std::to_string(map_count) + " (at least one)");
        const size_t cols = e.image ? static_cast<size_t>(locations) : f.cols.size();
        for (const AttentionMap& m : f.maps) {
            const size_t rows = (m.rows.empty() ? f.rows : m.rows).size();
            if (m.weights.size() != rows)
                throw std::invalid_argument(where + ", map '" + m.label + "': " + std::to_string(m.weights.size()) +
                                            " rows of weights for " + std::to_string(rows) + " row tokens");
            for (const auto& r : m.weights)
                if (r.size() != cols)
                    throw std::invalid_argument(where + ", map '" + m.label + "': a row of " +
                                                std::to_string(r.size()) + " weights for " + std::to_string(cols) +
                                                (e.image ? " grid locations" : " columns"));
            if (!m.marks.empty() && m.marks.size() != rows)
                throw std::invalid_argument(where + ", map '" + m.label + "': " + std::to_string(m.marks.size()) +
                                            " marks for " + std::to_string(rows) + " rows");
            for (int64_t k : m.marks)
                if (k < -1 || k >= locations)
                    throw std::invalid_argument(where + ": mark " + std::to_string(k) + " outside the " +
                                                std::to_string(locations) + " grid locations");
        }
        frames.push_back(frame_json(f));
    }
    const auto last = static_cast<int64_t>(e.frames.size()) - 1;
    const int64_t initial = e.initial_frame < 0 || e.initial_frame > last ? last : e.initial_frame;
    if (e.initial_map < 0 || e.initial_map >= static_cast<int64_t>(map_count))
        throw std::invalid_argument("explorer '" + e.title + "': initial map " + std::to_string(e.initial_map) +
                                    " of " + std::to_string(map_count));
    Json out = Json::object({{"title", e.title}, {"rows_label", e.rows_label}, {"cols_label", e.cols_label},
                             {"initial_frame", initial}, {"initial_map", e.initial_map},
                             {"frames", std::move(frames)}});
    if (e.image) {
        Json pixels = Json::array();
        for (double v : e.image->pixels) pixels.push_back(std::round(std::clamp(v, 0.0, 1.0) * 255));
        out.set("image", Json::object({{"height", e.image->height}, {"width", e.image->width},
                                       {"grid_h", e.image->grid_h}, {"grid_w", e.image->grid_w},
                                       {"pixels", std::move(pixels)}}));
    }
    return out;
}

const char* explorer_style() {
    return R"(.explorer { border: 1px solid #ddd; border-radius: 4px; padding: .5em .8em; margin: .8em 0; }
.explorer-title { font-weight: bold; margin-bottom: .3em; }
.explorer-controls { display: flex; gap: .8em; align-items: center; flex-wrap: wrap; margin-bottom: .4em; }
.explorer button { font: inherit; border: 1px solid #ccc; background: #fafafa; border-radius: 3px; padding: .05em .35em; margin: .1em; cursor: pointer; }
.explorer button.selected { background: #1f77b4; border-color: #1f77b4; color: #fff; }
.explorer-axis { color: #666; }
.explorer-picture { margin: .4em 0; }
.explorer-picture text { cursor: pointer; font-family: sans-serif; }
.explorer-picture .explorer-scale text { cursor: default; }
.explorers { display: flex; flex-wrap: wrap; gap: 1em; }
)";
}

// The script. Plain JavaScript, no library: each .explorer div carries its
// data (explorer_json) in data-explorer; explore() builds its controls and
// draws it again whenever the reader picks a row, a frame, a map or a view.
const char* explorer_script() {
    return R"JS(
(function () {
  "use strict";
  const SVG_NS = "http://www.w3.org/2000/svg";
  const CELL = 18;       // heatmap cell, pixels
  const CHAR = 7;        // about one character's width at 12px, to leave room for labels

  // An element (an SVG one when tag starts with "svg:") with attributes and
  // text, appended to parent.
  function make(tag, attrs, parent, text) {
    const e = tag.startsWith("svg:") ? document.createElementNS(SVG_NS, tag.slice(4))
                                     : document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  // The report's orange, with opacity w / peak (as the static pictures).
  function shade(w, peak, strength) {
    const a = peak > 0 && w > 0 ? Math.min(1, w / peak) * (strength || 1) : 0;
    return "rgba(255,127,14," + a.toFixed(3) + ")";
  }
  function peakOf(values) { return values.reduce((p, w) => (w > p ? w : p), 0); }
  function longest(tokens) { return tokens.reduce((n, t) => Math.max(n, t.length), 1); }

  // Rows down, columns across; click a cell or a row label to choose the row.
  function drawHeatmap(parent, rows, cols, weights, chosen, choose) {
    const left = 10 + CHAR * longest(rows), top = 10 + CHAR * longest(cols);
    const width = left + CELL * cols.length + 10, height = top + CELL * rows.length + 10;
    const svg = make("svg:svg", {width, height, viewBox: `0 0 ${width} ${height}`, class: "explorer-heatmap"}, parent);
    const peak = peakOf(weights.map(peakOf));
    cols.forEach((t, j) => {
      const x = left + CELL * j + CELL / 2 + 4, y = top - 4;
      make("svg:text", {x, y, transform: `rotate(-90 ${x} ${y})`, "font-size": 12}, svg, t);
    });
    rows.forEach((t, i) => {
      const y = top + CELL * i;
      const label = make("svg:text", {x: left - 4, y: y + CELL * 0.7, "text-anchor": "end", "font-size": 12,
                                      class: "explorer-row-label"}, svg, t);
      label.addEventListener("click", () => choose(i));
      cols.forEach((c, j) => {
        const cell = make("svg:rect", {x: left + CELL * j, y, width: CELL, height: CELL,
                                       fill: shade(weights[i][j], peak), stroke: "#eee"}, svg);
        make("svg:title", {}, cell, `${t} → ${c}: ${weights[i][j].toFixed(3)}`);
        cell.addEventListener("click", () => choose(i));
      });
    });
    make("svg:rect", {x: left - 1, y: top + CELL * chosen - 1, width: CELL * cols.length + 2, height: CELL + 2,
                      fill: "none", stroke: "#1f77b4", "stroke-width": 2, class: "explorer-chosen"}, svg);
  }

  // The colour scale under a map: from no colour at weight 0 to the report's
  // orange at `peak`, the largest weight drawn (at the opacity `strength`
  // the map gives it). A heatmap without one cannot be read as numbers.
  let scales = 0;  // each scale's gradient needs an id of its own on the page
  function drawScale(parent, peak, strength) {
    const id = "explorer-scale-" + (++scales);
    const row = make("div", {class: "explorer-scale-row"}, parent);
    const svg = make("svg:svg", {width: 200, height: 30, viewBox: "0 0 200 30", class: "explorer-scale"}, row);
    const gradient = make("svg:linearGradient", {id}, make("svg:defs", {}, svg));
    make("svg:stop", {offset: 0, "stop-color": "rgb(255,127,14)", "stop-opacity": 0}, gradient);
    make("svg:stop", {offset: 1, "stop-color": "rgb(255,127,14)", "stop-opacity": strength || 1}, gradient);
    make("svg:rect", {x: 10, y: 3, width: 120, height: 10, fill: `url(#${id})`, stroke: "#bbb"}, svg);
    make("svg:text", {x: 10, y: 26, "font-size": 11, "text-anchor": "middle"}, svg, "0");
    make("svg:text", {x: 130, y: 26, "font-size": 11, "text-anchor": "middle"}, svg, peak.toFixed(2));
    make("svg:text", {x: 138, y: 12, "font-size": 11}, svg, "weight");
  }

  // Rows on the left, columns on the right, a line for each weight (as
  // bertviz): the chosen row's lines in orange, every other row's faint.
  function drawLines(parent, rows, cols, weights, chosen, choose) {
    const gap = 24, span = 240;
    const left = 10 + CHAR * longest(rows), right = 10 + CHAR * longest(cols);
    const width = left + span + right, height = 10 + gap * Math.max(rows.length, cols.length);
    const svg = make("svg:svg", {width, height, viewBox: `0 0 ${width} ${height}`, class: "explorer-lines"}, parent);
    const y = k => 10 + gap * k + gap / 2;
    rows.forEach((t, i) => {
      const peak = peakOf(weights[i]);
      cols.forEach((c, j) => {
        const w = peak > 0 ? weights[i][j] / peak : 0;
        if (w < 0.02) return;
        make("svg:line", {x1: left, y1: y(i), x2: left + span, y2: y(j),
                          stroke: i === chosen ? "#ff7f0e" : "#999", "stroke-width": i === chosen ? 2.5 : 1.5,
                          "stroke-opacity": (i === chosen ? w : 0.15 * w).toFixed(3),
                          class: i === chosen ? "explorer-line chosen" : "explorer-line"}, svg);
      });
      const label = make("svg:text", {x: left - 6, y: y(i) + 4, "text-anchor": "end", "font-size": 12,
                                      "font-weight": i === chosen ? "bold" : "normal", class: "explorer-row-label"},
                         svg, t);
      label.addEventListener("click", () => choose(i));
    });
    cols.forEach((c, j) => make("svg:text", {x: left + span + 6, y: y(j) + 4, "font-size": 12}, svg, c));
  }

  // The picture in gray, each grid location tinted by the row's weight, the
  // marked location (hard attention's choice) outlined in red.
  function drawImage(parent, image, weights, mark) {
    const scale = Math.max(1, Math.floor(160 / Math.max(image.height, image.width)));
    const canvas = make("canvas", {width: image.width * scale, height: image.height * scale,
                                   class: "explorer-image"}, parent);
    const small = document.createElement("canvas");
    small.width = image.width;
    small.height = image.height;
    const pixels = small.getContext("2d").createImageData(image.width, image.height);
    image.pixels.forEach((v, k) => {
      pixels.data.set([v, v, v, 255], 4 * k);
    });
    small.getContext("2d").putImageData(pixels, 0, 0);
    const ctx = canvas.getContext("2d");
    ctx.imageSmoothingEnabled = false;  // the pixels as they are, enlarged
    ctx.drawImage(small, 0, 0, canvas.width, canvas.height);
    const ch = canvas.height / image.grid_h, cw = canvas.width / image.grid_w, peak = peakOf(weights);
    weights.forEach((w, g) => {
      ctx.fillStyle = shade(w, peak, 0.7);
      ctx.fillRect((g % image.grid_w) * cw, Math.floor(g / image.grid_w) * ch, cw, ch);
    });
    if (mark >= 0) {
      ctx.strokeStyle = "#d62728";
      ctx.lineWidth = 3;
      ctx.strokeRect((mark % image.grid_w) * cw + 1.5, Math.floor(mark / image.grid_w) * ch + 1.5, cw - 3, ch - 3);
    }
  }

  function explore(root) {
    const data = JSON.parse(root.dataset.explorer);
    const state = {frame: data.initial_frame, map: data.initial_map, row: 0, view: "heatmap"};
    root.replaceChildren();  // the text shown without JavaScript goes
    if (data.title) make("div", {class: "explorer-title"}, root, data.title);
    const controls = make("div", {class: "explorer-controls"}, root);
    let frameLabel = null;
    if (data.frames.length > 1) {
      const label = make("label", {}, controls);
      const slider = make("input", {type: "range", min: 0, max: data.frames.length - 1, value: state.frame,
                                    class: "explorer-frame"}, label);
      frameLabel = make("span", {class: "explorer-frame-label"}, label);
      slider.addEventListener("input", () => { state.frame = Number(slider.value); draw(); });
    }
    const mapLabels = data.frames[0].maps.map(m => m.label);
    if (mapLabels.length > 1) {
      const select = make("select", {class: "explorer-map"}, controls);
      mapLabels.forEach((l, i) => make("option", {value: i}, select, l));
      select.value = String(state.map);
      select.addEventListener("change", () => { state.map = Number(select.value); draw(); });
    }
    if (!data.image)
      for (const view of ["heatmap", "lines"]) {
        const b = make("button", {type: "button", class: "explorer-view", "data-view": view}, controls, view);
        b.addEventListener("click", () => { state.view = view; draw(); });
      }
    const rowLine = make("div", {class: "explorer-rows"}, root);
    const picture = make("div", {class: "explorer-picture"}, root);
    const colLine = make("div", {class: "explorer-cols tokens"}, root);
    const choose = i => { state.row = i; draw(); };

    function draw() {
      const frame = data.frames[state.frame];
      const map = frame.maps[state.map];
      const rows = map.rows || frame.rows;
      state.row = Math.max(0, Math.min(state.row, rows.length - 1));
      if (frameLabel) frameLabel.textContent = " " + frame.label;
      controls.querySelectorAll(".explorer-view").forEach(b => b.classList.toggle("selected", b.dataset.view === state.view));
      rowLine.replaceChildren();
      picture.replaceChildren();
      colLine.replaceChildren();
      make("span", {class: "explorer-axis"}, rowLine, data.rows_label + ": ");
      rows.forEach((t, i) => {
        const b = make("button", {type: "button", class: "explorer-row" + (i === state.row ? " selected" : "")}, rowLine, t);
        b.addEventListener("click", () => choose(i));
      });
      if (rows.length === 0) {
        make("p", {class: "explorer-empty"}, picture, "(no output at this point)");
        return;
      }
      const weights = map.weights.map(r => r.map(w => (w === null ? 0 : w)));
      if (data.image) {
        drawImage(picture, data.image, weights[state.row], map.marks ? map.marks[state.row] : -1);
        drawScale(picture, peakOf(weights[state.row]), 0.7);
        make("span", {class: "explorer-axis"}, colLine,
             `word ${state.row + 1} of ${rows.length}, "${rows[state.row]}": ` +
             `the largest weight ${peakOf(weights[state.row]).toFixed(2)}` +
             (map.marks && map.marks[state.row] >= 0 ? ", red: the location hard attention reads" : ""));
        return;
      }
      (state.view === "lines" ? drawLines : drawHeatmap)(picture, rows, frame.cols, weights, state.row, choose);
      if (state.view === "heatmap") drawScale(picture, peakOf(weights.map(peakOf)));
      make("span", {class: "explorer-axis"}, colLine, `${data.cols_label} as "${rows[state.row]}" sees it: `);
      const peak = peakOf(weights[state.row]);
      frame.cols.forEach((t, j) => {
        make("span", {class: "tok", style: "background-color:" + shade(weights[state.row][j], peak),
                      title: weights[state.row][j].toFixed(3)}, colLine, t);
        colLine.append(" ");
      });
    }
    draw();
  }

  function exploreAll() { document.querySelectorAll(".explorer").forEach(explore); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", exploreAll);
  else exploreAll();
})();
)JS";
}

}  // namespace attn
