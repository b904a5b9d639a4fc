// Clicks through every interactive part of a report page; scripts/check-report.sh
// puts this at the end of a copy of the page and reads the verdict it writes
// into the page (a pre element with the id check-result) from Chromium's dump
// of the DOM.
//
// Before anything else runs, check-report.sh also puts a small script at the
// top of the page that records every JavaScript error in window.__errors.
//
// For each explorer (examples/common/explorer.hpp): its fallback text is gone
// and it drew a picture; a click on each output token selects it and redraws;
// the epoch slider, the map choice and the heatmap/lines buttons each change
// what is drawn. With a location hash "#shot=ID", only the part with that id
// stays visible, left in an informative state, for a screenshot.
(function () {
  "use strict";
  const failures = [];
  let clicks = 0;
  function fail(where, what) { failures.push(where + ": " + what); }
  function fire(element, type) { element.dispatchEvent(new Event(type, {bubbles: true})); }
  // What an explorer shows now: its picture (a canvas by its pixels) and the
  // line under it.
  function picture(root) {
    const p = root.querySelector(".explorer-picture");
    if (!p) return "";
    const canvas = p.querySelector("canvas");
    const below = root.querySelector(".explorer-cols");
    return (canvas ? canvas.toDataURL() : p.innerHTML) + (below ? below.textContent : "");
  }
  // A canvas nothing was drawn on.
  function blank(canvas) {
    const empty = document.createElement("canvas");
    empty.width = canvas.width;
    empty.height = canvas.height;
    return canvas.toDataURL() === empty.toDataURL();
  }

  function checkExplorer(root, index) {
    const name = "explorer " + (index + 1) + " (" + (root.querySelector(".explorer-title") || {}).textContent + ")";
    if (!root.querySelector(".explorer-controls")) return fail(name, "was not drawn (no controls): the script did not run");
    if (root.textContent.includes("needs JavaScript")) fail(name, "still shows its fallback text");
    if (!root.querySelector(".explorer-picture svg, .explorer-picture canvas")) fail(name, "has no picture");
    const canvas = root.querySelector(".explorer-picture canvas");
    if (canvas && blank(canvas)) fail(name, "drew an empty image");
    if (!root.querySelector(".explorer-picture svg.explorer-scale")) fail(name, "has no colour scale");
    const rows = () => Array.from(root.querySelectorAll(".explorer-row"));
    if (rows().length === 0) fail(name, "has no output token to click");
    for (let i = rows().length - 1; i >= 0; --i) {
      const before = picture(root);
      rows()[i].click();
      ++clicks;
      const now = rows();
      if (!now[i] || !now[i].classList.contains("selected")) fail(name, "token " + i + " not selected after a click");
      if (now.filter(b => b.classList.contains("selected")).length !== 1) fail(name, "not exactly one token selected");
      if (i !== now.length - 1 && picture(root) === before) fail(name, "the picture did not change for token " + i);
    }
    const slider = root.querySelector("input.explorer-frame");
    if (slider) {
      const label = root.querySelector(".explorer-frame-label").textContent;
      for (let f = Number(slider.max); f >= 0; --f) {
        slider.value = f;
        fire(slider, "input");
        ++clicks;
        if (!root.querySelector(".explorer-picture svg, .explorer-picture canvas, .explorer-empty"))
          fail(name, "no picture (and no word that there is no output) at frame " + f);
      }
      if (root.querySelector(".explorer-frame-label").textContent === label) fail(name, "the frame label did not change");
      slider.value = slider.max;
      fire(slider, "input");
    }
    const select = root.querySelector("select.explorer-map");
    if (select) {
      const initial = select.value;
      const seen = new Set();
      for (let m = 0; m < select.options.length; ++m) {
        select.value = String(m);
        fire(select, "change");
        ++clicks;
        seen.add(picture(root));
      }
      if (seen.size < 2) fail(name, "every map drew the same picture");
      select.value = initial;  // back to the map the page opens with
      fire(select, "change");
    }
    const views = Array.from(root.querySelectorAll("button.explorer-view"));
    for (const b of views) {
      b.click();
      ++clicks;
      const kind = b.dataset.view === "lines" ? "svg.explorer-lines" : "svg.explorer-heatmap";
      if (!root.querySelector(kind)) fail(name, "the " + b.dataset.view + " view drew no " + kind);
      if (!b.classList.contains("selected")) fail(name, "the " + b.dataset.view + " button is not marked");
    }
    if (views.length) views[0].click();
  }

  // Leaves the part `id` alone on the page, its explorers showing something
  // worth a look: the second output token, the lines view for the first one;
  // with `first`, every slider at its first frame (before training).
  function showOnly(id, first) {
    const part = document.getElementById(id);
    if (!part) return fail("screenshot", "no part with id '" + id + "'");
    for (const child of Array.from(document.body.children))
      if (child !== part && child.id !== "check-result") child.style.display = "none";
    part.querySelectorAll(".explorer").forEach((root, k) => {
      const slider = root.querySelector("input.explorer-frame");
      if (first && slider) {
        slider.value = 0;
        fire(slider, "input");
      }
      const rows = root.querySelectorAll(".explorer-row");
      if (rows.length > 1) rows[1].click();
      if (k === 0) {
        const lines = root.querySelector('button.explorer-view[data-view="lines"]');
        if (lines) lines.click();
      }
    });
  }

  function run() {
    const explorers = Array.from(document.querySelectorAll(".explorer"));
    const expected = (document.documentElement.dataset.expect || "").split(",").filter(Boolean);
    for (const id of expected) {
      const part = document.getElementById(id);
      if (!part) fail("page", "no part '" + id + "'");
      else if (!part.querySelector(".explorer")) fail("part " + id, "has no explorer");
    }
    if (explorers.length === 0) fail("page", "no explorer at all");
    explorers.forEach(checkExplorer);
    for (const e of window.__errors || []) fail("JavaScript error", e);
    const shot = /shot=([\w-]+)/.exec(location.hash);
    if (shot) showOnly(shot[1], /frame=first/.test(location.hash));
    const verdict = failures.length === 0
      ? "CHECK OK: " + explorers.length + " explorers, " + clicks + " interactions"
      : "CHECK FAILED:\n" + failures.join("\n");
    const out = document.createElement("pre");
    out.id = "check-result";
    out.textContent = verdict;
    if (shot) out.style.display = failures.length ? "block" : "none";
    document.body.appendChild(out);
  }
  window.addEventListener("load", () => {
    try { run(); } catch (e) {
      const out = document.createElement("pre");
      out.id = "check-result";
      out.textContent = "CHECK FAILED:\nthe checker itself stopped: " + e;
      document.body.appendChild(out);
    }
  });
})();
