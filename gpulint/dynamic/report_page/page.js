"use strict";
// gpulint's report page: everything it shows is in the JSON element #gpulint-data (written by
// gpulint/dynamic/html_report.py); this script only draws it.  No network, no libraries.
(function () {
  const DATA = JSON.parse(document.getElementById("gpulint-data").textContent);
  const SVG = "http://www.w3.org/2000/svg";
  const PALETTE = ["#2563eb", "#16a34a", "#9333ea", "#0891b2", "#ca8a04", "#db2777", "#4f46e5", "#65a30d",
                   "#0d9488", "#b45309", "#7c3aed", "#15803d"];
  const OTHER = "#9ca3af";
  const MARGIN = {left: 78, right: 16, top: 12, bottom: 30};
  const T = DATA.times, LIVE = DATA.live, FIXED = DATA.fixed;
  const END = Math.max(DATA.end_t, T.length ? T[T.length - 1] + 1 : 1);
  const FULL = [Math.min(0, T.length ? T[0] : 0), END];
  // "real": times are microseconds since the first event (the host's clock at each call);
  // "steps": the topological launch order, one step per event (a trace without host times).
  const REAL = DATA.time === "real";
  const TIME_AXIS = REAL ? "time since the first event" : "topological launch order";
  let domain = FULL.slice();
  let selected = null;

  function human(bytes) {
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let value = Math.abs(bytes), unit = 0;
    while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
    const text = unit === 0 ? String(value) : value.toFixed(value < 10 ? 2 : 1).replace(/\.?0+$/, "");
    return (bytes < 0 ? "-" : "") + text + " " + units[unit];
  }

  function el(name, attrs, parent) {
    const node = document.createElementNS(SVG, name);
    for (const key in attrs) node.setAttribute(key, attrs[key]);
    if (parent) parent.appendChild(node);
    return node;
  }

  function html(tag, attrs, text, parent) {
    const node = document.createElement(tag);
    for (const key in attrs || {}) node.setAttribute(key, attrs[key]);
    if (text !== undefined && text !== null) node.textContent = text;
    if (parent) parent.appendChild(node);
    return node;
  }

  // The last change point at or before t (the step curve's value there).
  function indexAt(t) {
    let lo = 0, hi = T.length - 1;
    if (!T.length || t < T[0]) return -1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (T[mid] <= t) lo = mid; else hi = mid - 1;
    }
    return lo;
  }

  function niceTicks(lo, hi, count) {
    const span = hi - lo;
    if (span <= 0) return [lo];
    const raw = span / count, power = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map(m => m * power).find(s => s >= raw) || raw;
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi; v += step) out.push(v);
    return out;
  }

  // A time as the axis and the readout write it: microseconds in the unit that suits `span` (the
  // visible window, so that ticks differ), or a step number.
  function timeText(t, span) {
    if (!REAL) return "step " + Math.round(t);
    const scale = span === undefined ? Math.abs(t) : span;
    const [unit, name] = scale >= 1e6 ? [1e6, "s"] : scale >= 1e3 ? [1e3, "ms"] : [1, "µs"];
    const value = t / unit;
    return String(Number(value.toPrecision(scale / unit >= 100 ? 6 : 4))) + " " + name;
  }

  // Ticks at round numbers of the unit the largest value is written in (0, 1 MiB, 2 MiB, ...).
  function byteTicks(max, count) {
    if (max <= 0) return [0];
    const unit = Math.pow(1024, Math.max(0, Math.floor(Math.log(max) / Math.log(1024))));
    const raw = max / count / unit, power = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = ([1, 2, 5, 10].map(m => m * power).find(s => s >= raw) || raw) * unit;
    const out = [];
    for (let v = 0; v <= max; v += step) out.push(v);
    return out;
  }

  // ---- the data the chart stacks ---------------------------------------------------------------
  // Each of the largest objects is `bytes` from its start to its end; "other objects" is the rest
  // of the live bytes.  Values are taken at the change points of the live curve.
  const layers = DATA.layers.map((layer, i) => ({
    name: layer.name.indexOf(layer.size) >= 0 ? layer.name : layer.name + " (" + layer.size + ")", color: PALETTE[i % PALETTE.length], layer: layer,
    values: T.map(t => (t >= layer.start && t < layer.end ? layer.bytes : 0)),
  }));
  const otherValues = T.map((t, i) => Math.max(0, LIVE[i] - layers.reduce((sum, s) => sum + s.values[i], 0)));
  const bands = layers.concat([{name: "other objects", color: OTHER, values: otherValues}]);

  // ---- header ------------------------------------------------------------------------------------
  function header() {
    document.getElementById("title").textContent = DATA.title;
    document.getElementById("subtitle").textContent =
      "on " + DATA.device + " (" + DATA.collector + " collector); " + DATA.objects + " device objects; time is the "
      + (REAL ? "host's clock at each call, from the first event" : "topological launch order (one step per event)")
      + (DATA.thinned ? "; the curve is thinned to its highest "
      + "point per bucket" : "");
    const p = DATA.peaks, cards = document.getElementById("cards");
    const rows = [["actual peak", p.actual], ["every finding fixed", p.all_fixed],
                  ["tight liveness (lower bound)", p.lower_bound],
                  ["offset plan, one pool (" + p.pool_strategy + ")", p.pool], ["best-fit allocator needs", p.best_fit]];
    for (const [label, value] of rows) {
      const card = html("div", {class: "card"}, null, cards);
      const share = p.actual ? " (" + (100 * value / p.actual).toFixed(1) + "%)" : "";
      html("div", {class: "value"}, human(value) + (label === "actual peak" ? "" : share), card);
      html("div", {class: "label"}, label, card);
    }
    const notes = DATA.warnings.slice();
    if (DATA.hidden) notes.push(DATA.hidden + " findings below the size threshold are not shown");
    document.getElementById("warnings").textContent = notes.join("; ");
    const legend = document.getElementById("legend");
    for (const band of bands) {
      const item = html("span", {class: "legend-item"}, null, legend);
      html("span", {class: "swatch", style: "background:" + band.color}, null, item);
      item.appendChild(document.createTextNode(band.name));
    }
    const item = html("span", {class: "legend-item"}, null, legend);
    html("span", {class: "swatch", style: "background:none;border-top:2px dashed #111;height:0"}, null, item);
    item.appendChild(document.createTextNode("every finding fixed (peak " + human(p.all_fixed) + ")"));
  }

  // ---- drawing -----------------------------------------------------------------------------------
  function frame(svg) {
    const box = svg.getBoundingClientRect();
    const width = Math.max(200, box.width), height = Math.max(120, box.height);
    svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    return {width: width, height: height, w: width - MARGIN.left - MARGIN.right,
            h: height - MARGIN.top - MARGIN.bottom};
  }

  function xScale(f) {
    const [x0, x1] = domain;
    return t => MARGIN.left + (t - x0) / (x1 - x0) * f.w;
  }

  function axes(svg, f, x, y, ymax, yLabel) {
    const g = el("g", {class: "axis"}, svg);
    for (const v of byteTicks(ymax, 5)) {
      el("line", {x1: MARGIN.left, x2: MARGIN.left + f.w, y1: y(v), y2: y(v)}, g);
      el("text", {x: MARGIN.left - 6, y: y(v) + 4, "text-anchor": "end"}, g).textContent = human(v);
    }
    for (const v of niceTicks(domain[0], domain[1], 8)) {
      el("line", {x1: x(v), x2: x(v), y1: MARGIN.top + f.h, y2: MARGIN.top + f.h + 4}, g);
      el("text", {x: x(v), y: MARGIN.top + f.h + 16, "text-anchor": "middle"}, g).textContent =
        REAL ? timeText(v, domain[1] - domain[0]) : String(v);
    }
    el("text", {x: MARGIN.left + f.w, y: f.height - 2, "text-anchor": "end"}, g).textContent = yLabel;
  }

  // The visible slice of the change points, one before the window so the first step is drawn.
  function visible() {
    const first = Math.max(0, indexAt(domain[0]));
    let last = indexAt(domain[1]);
    if (last < first) last = first;
    return [first, last];
  }

  function stepPath(values, first, last, x, y, base) {
    const clip = t => Math.min(Math.max(t, domain[0]), domain[1]);
    const top = [], bottom = [];
    for (let i = first; i <= last; i++) {
      const a = x(clip(T[i])).toFixed(1), b = x(clip(i + 1 < T.length ? T[i + 1] : END)).toFixed(1);
      const high = y(values[i] + base[i]).toFixed(1), low = y(base[i]).toFixed(1);
      top.push((i === first ? "M" : "L") + a + "," + high + "L" + b + "," + high);
      bottom.push("L" + b + "," + low + "L" + a + "," + low);
    }
    return top.join("") + bottom.reverse().join("") + "Z";
  }

  function drawMemory() {
    const svg = document.getElementById("memory");
    svg.textContent = "";
    const f = frame(svg), x = xScale(f);
    const [first, last] = visible();
    let ymax = 1;
    for (let i = first; i <= last; i++) ymax = Math.max(ymax, LIVE[i], FIXED[i]);
    ymax *= 1.08;
    const y = v => MARGIN.top + f.h - v / ymax * f.h;
    axes(svg, f, x, y, ymax, TIME_AXIS);
    const clipId = "memory-clip";
    const defs = el("defs", {}, svg);
    el("rect", {x: MARGIN.left, y: MARGIN.top, width: f.w, height: f.h}, el("clipPath", {id: clipId}, defs));
    const plot = el("g", {"clip-path": "url(#" + clipId + ")"}, svg);
    let base = T.map(() => 0);
    for (const band of bands) {
      el("path", {class: "series", d: stepPath(band.values, first, last, x, y, base), fill: band.color,
                  "fill-opacity": 0.85, "data-name": band.name}, plot);
      base = base.map((b, i) => b + band.values[i]);
    }
    const line = [];
    for (let i = first; i <= last; i++) {
      const a = x(Math.max(T[i], domain[0])).toFixed(1);
      const b = x(Math.min(i + 1 < T.length ? T[i + 1] : END, domain[1])).toFixed(1);
      line.push((i === first ? "M" : "L") + a + "," + y(FIXED[i]).toFixed(1) + "L" + b + "," + y(FIXED[i]).toFixed(1));
    }
    el("path", {class: "series fixed", d: line.join(""), "data-name": "every finding fixed"}, plot);
    const chosen = selected === null ? null : DATA.findings[selected];
    if (chosen && chosen.start !== null) {
      const a = x(Math.max(chosen.start, domain[0])), b = x(Math.min(chosen.end, domain[1]));
      if (b > a) el("rect", {class: "lifetime", x: a, y: MARGIN.top, width: b - a, height: f.h}, plot);
    }
    const hover = el("line", {class: "hover-line", y1: MARGIN.top, y2: MARGIN.top + f.h, visibility: "hidden"}, svg);
    const brush = el("rect", {class: "brush", y: MARGIN.top, height: f.h, width: 0, visibility: "hidden"}, svg);
    const overlay = el("rect", {x: MARGIN.left, y: MARGIN.top, width: f.w, height: f.h, fill: "transparent"}, svg);
    const stacked = new Map();  // findings on one object start at one point: stack their circles upwards
    for (const finding of DATA.findings) {
      if (finding.start === null || finding.start < domain[0] || finding.start > domain[1]) continue;
      const at = indexAt(finding.start), cx = Math.round(x(finding.start));
      const above = stacked.get(cx) || 0;
      stacked.set(cx, above + 1);
      const cy = Math.max(MARGIN.top + 6, y(at < 0 ? 0 : LIVE[at]) - 14 * above);
      const marker = el("circle", {class: "marker" + (finding.id === selected ? " selected" : ""), r: 6,
                                   cx: cx, cy: cy, "data-finding": finding.id}, svg);
      el("title", {}, marker).textContent = finding.code + " " + finding.where + ": " + finding.message;
      marker.addEventListener("click", () => select(finding.id, true));
    }
    interact(svg, overlay, hover, brush, f, x);
  }

  function drawPlan() {
    const svg = document.getElementById("plan");
    svg.textContent = "";
    const f = frame(svg), x = xScale(f);
    const pool = Math.max(1, DATA.peaks.pool);
    const y = v => MARGIN.top + f.h - v / pool * f.h;
    axes(svg, f, x, y, pool, TIME_AXIS + " × offset in the pool");
    const defs = el("defs", {}, svg);
    el("rect", {x: MARGIN.left, y: MARGIN.top, width: f.w, height: f.h}, el("clipPath", {id: "plan-clip"}, defs));
    const plot = el("g", {"clip-path": "url(#plan-clip)"}, svg);
    const chosen = selected === null ? null : DATA.findings[selected];
    DATA.boxes.forEach((box, i) => {
      if (box.end < domain[0] || box.start > domain[1]) return;
      const a = x(Math.max(box.start, domain[0])), b = x(Math.min(box.end, domain[1]));
      const flagged = box.codes.length > 0;
      const classes = "box" + (flagged ? " flagged" : "") + (chosen && chosen.object_id === box.obj ? " selected" : "");
      const rect = el("rect", {class: classes, x: a, width: Math.max(1, b - a), y: y(box.offset + box.bytes),
                               height: Math.max(1, y(box.offset) - y(box.offset + box.bytes)),
                               fill: flagged ? "#f97316" : PALETTE[i % PALETTE.length], "fill-opacity": 0.75,
                               "data-object": box.obj}, plot);
      el("title", {}, rect).textContent = box.name + ", " + box.size + " at offset " + human(box.offset) + ", live "
        + timeText(box.start) + " – " + timeText(box.end) + (flagged ? "; findings: " + box.codes.join(" ") : "") + "; allocated at " + box.at;
      if (flagged) {
        rect.addEventListener("click", () => {
          const finding = DATA.findings.find(item => item.object_id === box.obj);
          if (finding) select(finding.id, true);
        });
      }
    });
    const shown = DATA.boxes.length < DATA.objects ? "the " + DATA.boxes.length + " largest of " + DATA.objects
      + " objects" : "all " + DATA.objects + " objects";
    document.getElementById("plan-caption").textContent = "Where each object would live in one pool of "
      + human(DATA.peaks.pool) + " (" + DATA.peaks.pool_strategy + "), " + shown + "; orange objects have findings.";
  }

  // ---- zoom: drag to select, wheel around the pointer, double-click to reset ---------------------
  function interact(svg, overlay, hover, brush, f, x) {
    const toTime = clientX => {
      const box = svg.getBoundingClientRect();
      const px = (clientX - box.left) * f.width / box.width;
      return domain[0] + (px - MARGIN.left) / f.w * (domain[1] - domain[0]);
    };
    let dragFrom = null;
    overlay.addEventListener("mousedown", event => { dragFrom = toTime(event.clientX); event.preventDefault(); });
    overlay.addEventListener("mousemove", event => {
      const t = toTime(event.clientX);
      hover.setAttribute("x1", x(t)); hover.setAttribute("x2", x(t)); hover.setAttribute("visibility", "visible");
      const i = indexAt(t);
      const parts = [timeText(t, domain[1] - domain[0]), "live " + human(i < 0 ? 0 : LIVE[i]),
                     "every finding fixed " + human(i < 0 ? 0 : FIXED[i])];
      for (const band of layers) if (i >= 0 && band.values[i]) parts.push(band.name);
      document.getElementById("readout").textContent = parts.join(" · ");
      if (dragFrom !== null) {
        const a = x(Math.min(dragFrom, t)), b = x(Math.max(dragFrom, t));
        brush.setAttribute("x", a); brush.setAttribute("width", b - a); brush.setAttribute("visibility", "visible");
      }
    });
    overlay.addEventListener("mouseleave", () => hover.setAttribute("visibility", "hidden"));
    overlay.addEventListener("mouseup", event => {
      if (dragFrom === null) return;
      const t = toTime(event.clientX), lo = Math.min(dragFrom, t), hi = Math.max(dragFrom, t);
      dragFrom = null;
      if (x(hi) - x(lo) > 4) zoomTo(lo, hi); else brush.setAttribute("visibility", "hidden");
    });
    overlay.addEventListener("dblclick", () => zoomTo(FULL[0], FULL[1]));
    svg.addEventListener("wheel", event => {
      event.preventDefault();
      const t = toTime(event.clientX), factor = event.deltaY < 0 ? 0.8 : 1.25;
      zoomTo(t - (t - domain[0]) * factor, t + (domain[1] - t) * factor);
    }, {passive: false});
  }

  let pending = false;
  function zoomTo(lo, hi) {
    lo = Math.max(FULL[0], lo); hi = Math.min(FULL[1], hi);
    if (hi - lo < 2) { const mid = (lo + hi) / 2; lo = mid - 1; hi = mid + 1; }
    domain = [lo, hi];
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; drawMemory(); drawPlan(); });
  }

  // ---- the findings table and the selected finding's lines ----------------------------------------
  function table() {
    const body = document.querySelector("#findings tbody");
    const order = DATA.findings.slice().sort((a, b) => b.saved - a.saved || a.id - b.id);
    if (!order.length) {
      const row = html("tr", {}, null, body);
      html("td", {colspan: 6}, DATA.hidden ? "No findings above the size threshold (" + DATA.hidden
        + " below it: `gpulint report --min-bytes 0` shows them)." : "No findings.", row);
      return;
    }
    order.forEach((finding, rank) => {
      const row = html("tr", {class: "finding-row", "data-finding": finding.id}, null, body);
      html("td", {}, String(rank + 1), row);
      html("td", {}, finding.code, row);
      const where = html("td", {class: "where"}, null, row);
      html("a", {href: "#detail"}, finding.where, where);
      html("td", {}, finding.object, row);
      html("td", {class: "num"}, finding.saved ? finding.saved_text + " (" + finding.saved_percent + "%)" : "–", row);
      html("td", {}, finding.message, row);
      row.addEventListener("click", event => { event.preventDefault(); select(finding.id, false); });
    });
  }

  function source(block, lines, where) {
    if (!lines) {
      html("p", {class: "missing"}, where + ": the source was not readable where this page was written", block);
      return;
    }
    const pre = html("pre", {class: "source"}, null, block);
    lines.text.forEach((text, i) => {
      const row = lines.first + i;
      const line = html("span", {class: "line" + (row >= lines.row && row <= lines.end_row ? " flagged" : ""),
                                 "data-row": row}, null, pre);
      html("span", {class: "no"}, String(row), line);
      line.appendChild(document.createTextNode(text));
    });
  }

  function select(id, scroll) {
    selected = id;
    const finding = DATA.findings[id];
    for (const row of document.querySelectorAll("#findings tr.finding-row")) {
      row.classList.toggle("selected", Number(row.dataset.finding) === id);
    }
    const detail = document.getElementById("detail");
    detail.hidden = false;
    detail.textContent = "";
    html("h3", {}, finding.code + " " + finding.name + " at " + finding.where, detail);
    html("p", {}, finding.message + (finding.confirmation ? " (" + finding.confirmation + ")" : ""), detail);
    source(detail, finding.lines, finding.where);
    for (const related of finding.related) {
      html("p", {}, related.message + " — " + related.where, detail);
      source(detail, related.lines, related.where);
    }
    drawMemory();
    drawPlan();
    if (scroll) detail.scrollIntoView({block: "nearest"});
  }

  header();
  table();
  drawMemory();
  drawPlan();
  document.getElementById("reset-zoom").addEventListener("click", () => zoomTo(FULL[0], FULL[1]));
  window.addEventListener("resize", () => { drawMemory(); drawPlan(); });
  window.gpulintReport = {data: DATA, select: select, zoomTo: zoomTo, domain: () => domain.slice()};
})();
