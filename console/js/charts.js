// Every plot of the console, drawn with Observable Plot (vendored in console/vendor/,
// loaded as the global `Plot`), each wrapped in a <figure> with SVG and PNG downloads.
// Why it exists: pages hand over data and get a finished figure; the chart library and
// the download plumbing live here only.

import { h, download } from "./ui.js";

const Plot = globalThis.Plot;
const SVG_NS = "http://www.w3.org/2000/svg";

/** Width for a plot inside `container` (fits phone screens). */
export function widthOf(container, max = 900) {
  const w = container && container.clientWidth ? container.clientWidth - 8 : 640;
  return Math.max(280, Math.min(max, w));
}

/** The chart's main <svg> (Plot may wrap it in a <figure> with legends). */
function mainSvg(node) {
  if (node instanceof SVGSVGElement) return node;
  const svgs = [...node.querySelectorAll("svg")];
  return svgs.sort((a, b) => b.clientWidth * b.clientHeight - a.clientWidth * a.clientHeight)[0] || svgs[0];
}

function svgText(svg) {
  const copy = svg.cloneNode(true);
  copy.setAttribute("xmlns", SVG_NS);
  const bg = getComputedStyle(document.body).backgroundColor;
  copy.setAttribute("style", `${copy.getAttribute("style") || ""};background:${bg}`);
  return new XMLSerializer().serializeToString(copy);
}

/** An SVG element in the SVG namespace. */
function svgEl(tag, attrs = {}, text = null) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  if (text !== null) el.textContent = text;
  return el;
}

/** The swatches of a plot's ordinal colour scale: [{ label, color }] (none for others). */
function legendItems(plotNode) {
  const scale = typeof plotNode.scale === "function" ? plotNode.scale("color") : null;
  if (!scale || !Array.isArray(scale.domain) || !Array.isArray(scale.range) || scale.type === "linear" || scale.type === "diverging") return [];
  return scale.domain.map((d, i) => ({ label: String(d), color: scale.range[i % scale.range.length] }));
}

/**
 * What a download holds: the plot's SVG under its title and above its legend, as one
 * standalone SVG (Plot draws its legend as HTML beside the SVG, which an export would
 * lose). A continuous colour scale's legend is Plot's own SVG and is stacked in.
 */
function exportSvg(plotNode, caption) {
  const main = mainSvg(plotNode);
  const width = main.width.baseVal.value || main.getBoundingClientRect().width;
  const height = main.height.baseVal.value || main.getBoundingClientRect().height;
  const color = getComputedStyle(document.body).color;
  const out = svgEl("svg", { xmlns: SVG_NS, width, "font-family": "system-ui, sans-serif" });
  out.append(svgEl("text", { x: 8, y: 20, "font-size": 15, "font-weight": 600, fill: color }, caption));
  let y = 32;
  const items = legendItems(plotNode);
  let x = 8;
  for (const item of items) {
    const w = 22 + 7 * Math.min(48, item.label.length);
    if (x + w > width && x > 8) {
      x = 8;
      y += 18;
    }
    out.append(svgEl("rect", { x, y: y + 2, width: 12, height: 12, fill: item.color }), svgEl("text", { x: x + 16, y: y + 12, "font-size": 12, fill: color }, item.label.slice(0, 48)));
    x += w;
  }
  if (items.length) y += 22;
  // Plot's ramp legends (continuous colour) are SVGs of their own; its swatches are HTML.
  const ramps = [...plotNode.querySelectorAll("svg")].filter((s) => s !== main && !s.parentElement.closest("svg") && !s.closest("[class*=swatch]"));
  for (const other of ramps) {
    const copy = other.cloneNode(true);
    copy.setAttribute("y", y);
    out.append(copy);
    y += other.height.baseVal.value || other.getBoundingClientRect().height;
  }
  const body = main.cloneNode(true);
  body.setAttribute("y", y);
  body.setAttribute("x", 0);
  out.append(body);
  out.setAttribute("height", y + height);
  out.setAttribute("viewBox", `0 0 ${width} ${y + height}`);
  return out;
}

function savePng(svg, filename) {
  const text = svgText(svg);
  const width = Number(svg.getAttribute("width"));
  const height = Number(svg.getAttribute("height"));
  const image = new Image();
  image.onload = () => {
    const scale = 2;
    const canvas = h("canvas", { width: Math.ceil(width * scale), height: Math.ceil(height * scale) });
    const ctx = canvas.getContext("2d");
    ctx.fillStyle = getComputedStyle(document.body).backgroundColor;
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.scale(scale, scale);
    ctx.drawImage(image, 0, 0, width, height);
    canvas.toBlob((blob) => download(`${filename}.png`, blob), "image/png");
  };
  image.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(text)}`;
}

/** A figure with a caption, the plot, and download buttons for SVG and PNG. */
export function figure(caption, plotNode, filename) {
  const svg = () => exportSvg(plotNode, caption);
  // Plot names its layers with aria-label on plain <g> elements, which ARIA allows only
  // on elements with a role: make each a named group (axe: aria-prohibited-attr).
  for (const el of plotNode.querySelectorAll("g[aria-label]:not([role])")) el.setAttribute("role", "group");
  return h(
    "figure",
    { class: "chart" },
    h("figcaption", {}, caption),
    plotNode,
    h(
      "div",
      { class: "actions" },
      h("button", { class: "secondary", onclick: () => download(`${filename}.svg`, new Blob([svgText(svg())], { type: "image/svg+xml" })) }, `Download ${caption} as SVG`),
      h("button", { class: "secondary", onclick: () => savePng(svg(), filename) }, `Download ${caption} as PNG`),
    ),
  );
}

/** Line plot of `series` rows {x, y, series?, lower?, upper?}; an interval, where a row
 *  has one, drawn as a vertical rule through its point. */
export function lines(rows, { width, x, y, height = 260, series = false }) {
  const withIntervals = rows.filter((r) => r.lower !== undefined && r.lower !== null);
  return Plot.plot({
    width,
    height,
    marginLeft: 60,
    grid: true,
    x: { label: x },
    y: { label: y, zero: false },
    color: series ? { legend: true } : undefined,
    marks: [
      withIntervals.length ? Plot.ruleX(withIntervals, { x: "x", y1: "lower", y2: "upper", stroke: "currentColor", strokeWidth: 1.5, ariaDescription: "intervals" }) : null,
      Plot.line(rows, { x: "x", y: "y", stroke: series ? "series" : "currentColor", marker: rows.length < 60 ? "circle" : null }),
      Plot.tip(rows, Plot.pointerX({ x: "x", y: "y", title: (d) => `${x} ${d.x}\n${d.series ? d.series + ": " : ""}${Number(d.y.toPrecision(4))}${d.lower == null ? "" : ` (${Number(d.lower.toPrecision(4))} – ${Number(d.upper.toPrecision(4))})`}` })),
    ],
  });
}

/** A trace: rows {x, y, series?} as lines, the burn-in (iterations 1 to `burnIn`)
 *  shaded where one is given, rounded values in the tooltip. */
export function traceLines(rows, { width, x, y, height = 260, series = false, burnIn = null }) {
  const round = (v) => Number(v.toPrecision(5)).toString();
  return Plot.plot({
    width,
    height,
    marginLeft: 64,
    grid: true,
    x: { label: x },
    y: { label: y, zero: false },
    color: series ? { legend: true } : undefined,
    marks: [
      burnIn ? Plot.rect([{ from: 0, to: burnIn }], { x1: "from", x2: "to", fill: "currentColor", fillOpacity: 0.08, ariaDescription: "burn-in" }) : null,
      burnIn ? Plot.text([{ at: burnIn / 2 }], { x: "at", frameAnchor: "top", dy: 6, text: () => "burn-in", fill: "currentColor", fillOpacity: 0.7 }) : null,
      Plot.line(rows, { x: "x", y: "y", stroke: series ? "series" : "currentColor", marker: rows.length < 60 ? "circle" : null }),
      Plot.tip(rows, Plot.pointerX({ x: "x", y: "y", title: (d) => `${x} ${d.x}\n${d.series ? d.series + ": " : ""}${round(d.y)}` })),
    ],
  });
}

/** Horizontal bars: rows {label, value, lower?, upper?}, in the given order; an
 *  interval, where a row has one, drawn as a whisker over its bar. */
export function hbars(rows, { width, x, max = null }) {
  const withIntervals = rows.filter((r) => r.lower !== undefined && r.lower !== null);
  const fmt = (v) => (Math.abs(v) >= 1e-3 || v === 0 ? Number(v.toPrecision(3)).toString() : v.toExponential(2));
  const title = (d) => `${d.label}: ${fmt(d.value)}${d.lower !== undefined && d.lower !== null ? ` (${fmt(d.lower)} – ${fmt(d.upper)})` : ""}`;
  return Plot.plot({
    width,
    height: 30 + 22 * rows.length,
    marginLeft: Math.min(280, 12 + 6.6 * Math.max(4, ...rows.map((r) => r.label.length))),
    x: { label: x, grid: true, domain: max === null ? undefined : [0, max] },
    y: { label: null, domain: rows.map((r) => r.label) },
    marks: [
      Plot.barX(rows, { x: "value", y: "label", fill: "#4e79a7", fillOpacity: withIntervals.length ? 0.7 : 1 }),
      withIntervals.length ? Plot.ruleY(withIntervals, { y: "label", x1: "lower", x2: "upper", stroke: "currentColor", strokeWidth: 1.5, ariaDescription: "intervals" }) : null,
      withIntervals.length ? Plot.tickX(withIntervals, { y: "label", x: "lower", stroke: "currentColor", inset: 6 }) : null,
      withIntervals.length ? Plot.tickX(withIntervals, { y: "label", x: "upper", stroke: "currentColor", inset: 6 }) : null,
      Plot.tip(rows, Plot.pointerY({ x: "value", y: "label", title })),
      Plot.ruleX([0]),
    ],
  });
}

/**
 * Which of `candidates` (in priority order) can be labelled without two labels, or a
 * label and the plot's edge, overlapping: a greedy pass that tries each label to the
 * right of its point, then to the left, and skips it (hover still names it) when both
 * collide. `at(d)` is the point's [x, y] in pixels; labels are `fontSize` px text.
 */
function placeLabels(candidates, at, text, { width, height, fontSize = 11 }) {
  const placed = [];
  const boxes = [];
  const overlaps = (b) => boxes.some((o) => b.x0 < o.x1 && o.x0 < b.x1 && b.y0 < o.y1 && o.y0 < b.y1);
  for (const d of candidates) {
    const [px, py] = at(d);
    const w = 0.62 * fontSize * text(d).length + 4;
    const h = fontSize + 3;
    const right = { x0: px + 5, x1: px + 5 + w, y0: py - h, y1: py, anchor: "start" };
    const left = { x0: px - 5 - w, x1: px - 5, y0: py - h, y1: py, anchor: "end" };
    const box = [right, left].find((b) => b.x0 >= 0 && b.x1 <= width && b.y0 >= 0 && b.y1 <= height && !overlaps(b));
    if (!box) continue;
    boxes.push(box);
    placed.push({ ...d, anchor: box.anchor });
  }
  return placed;
}

/**
 * Frequency–exclusivity scatter of a topic's words (the HPC paper's Figure 4): every
 * word a point, the `labelled` top FREX words highlighted and named where their names
 * fit without overlapping (the rest named on hover), hover for the values.
 */
export function frexScatter(words, labelled, { width }) {
  const top = new Set(labelled);
  const highlighted = words.filter((d) => top.has(d.word));
  const title = (d) => `${d.word}\nfrequency ${d.frequency.toExponential(3)}\nexclusivity ${d.exclusivity.toFixed(4)}\nFREX ${d.frex.toFixed(4)}`;
  const height = Math.round(Math.min(520, width * 0.7));
  const options = (marks) => ({
    width,
    height,
    marginLeft: 56,
    marginTop: 30,
    marginRight: 20,
    grid: true,
    x: { type: "log", label: "frequency (rate in topic, log)" },
    y: { label: "exclusivity" },
    marks,
    color: { domain: ["top FREX", "other"], range: ["#e15759", "#8da0b3"], legend: true },
  });
  const points = [
    Plot.dot(words, { x: "frequency", y: "exclusivity", r: 2, fill: () => "other", fillOpacity: 0.5, ariaDescription: "every word" }),
    Plot.dot(highlighted, { x: "frequency", y: "exclusivity", r: 4, fill: () => "top FREX", stroke: "white", strokeWidth: 0.5, ariaDescription: "top FREX words" }),
  ];
  // A first plot only for its scales: where each highlighted word lands in pixels.
  const probe = Plot.plot(options(points));
  const x = probe.scale("x");
  const y = probe.scale("y");
  const ranked = labelled.map((w) => highlighted.find((d) => d.word === w)).filter(Boolean);
  const named = placeLabels(ranked, (d) => [x.apply(d.frequency), y.apply(d.exclusivity)], (d) => d.word, { width, height });
  const label = (anchor) =>
    Plot.text(named.filter((d) => d.anchor === anchor), { x: "frequency", y: "exclusivity", text: "word", ariaDescription: "top FREX word labels", textAnchor: anchor, dx: anchor === "start" ? 5 : -5, dy: -7, fontSize: 11, fontWeight: 600, fill: "currentColor", stroke: getComputedStyle(document.body).backgroundColor, strokeWidth: 3, paintOrder: "stroke" });
  return Plot.plot(options([...points, label("start"), label("end"), Plot.tip(words, Plot.pointer({ x: "frequency", y: "exclusivity", title }))]));
}

/**
 * Intertopic distance map: circle area ∝ share. `topics` rows {id, x, y, proportion,
 * label}; `domain` ({x: [lo, hi], y: [lo, hi]}) zooms, `dimmed` (a Set of ids) fades
 * topics a search or filter leaves out, and only ids in `labelled` print their id (the
 * rest on hover). `onHover(d | null)` follows the pointer, `onSelect(d)` a click or Enter.
 */
export function topicMap(topics, { width, onSelect, onHover, explained, domain = null, dimmed = new Set(), labelled = null, unstable = new Set() }) {
  const pct = (v) => `${(100 * v).toFixed(1)}%`;
  const shown = labelled ? topics.filter((d) => labelled.has(d.id)) : topics;
  const plot = Plot.plot({
    width,
    height: Math.round(Math.min(560, width * 0.8)),
    inset: 30,
    grid: true,
    clip: true,
    x: { label: `PC1 (${pct(explained[0])})`, domain: domain ? domain.x : undefined },
    y: { label: `PC2 (${pct(explained[1])})`, domain: domain ? domain.y : undefined },
    r: { range: [3, Math.max(10, (width / 18) * Math.min(1, Math.sqrt(12 / Math.max(1, topics.length))))] },
    marks: [
      Plot.dot(topics, { x: "x", y: "y", r: "proportion", fill: "#4e79a7", fillOpacity: (d) => (dimmed.has(d.id) ? 0.06 : 0.35), stroke: "#4e79a7", strokeOpacity: (d) => (dimmed.has(d.id) ? 0.2 : 1) }),
      // A topic some chain holds no match for: a dashed ring and a ⚠ beside its id.
      Plot.dot(topics.filter((d) => unstable.has(d.id)), { x: "x", y: "y", r: "proportion", fill: "none", stroke: "#b5301f", strokeDasharray: "3,2", strokeWidth: 1.5 }),
      Plot.text(shown.filter((d) => !dimmed.has(d.id)), { x: "x", y: "y", text: (d) => `${d.id}${unstable.has(d.id) ? " ⚠" : ""}`, fontSize: 11 }),
      Plot.tip(topics, Plot.pointer({ x: "x", y: "y", title: (d) => `${d.label}\nshare ${pct(d.proportion)}${unstable.has(d.id) ? "\nnot matched in every chain" : ""}` })),
    ],
  });
  if (onHover) plot.addEventListener("input", () => onHover(plot.value || null));
  if (onSelect) {
    plot.addEventListener("click", () => plot.value && onSelect(plot.value));
    // Keyboard: every circle is a button (Plot binds each circle to its datum's index).
    plot.querySelectorAll('g[aria-label="dot"] circle').forEach((circle, order) => {
      const d = topics[Number.isInteger(circle.__data__) ? circle.__data__ : order];
      if (!d) return;
      circle.setAttribute("tabindex", "0");
      circle.setAttribute("role", "button");
      circle.setAttribute("aria-label", `Show topic ${d.label}, share ${pct(d.proportion)}`);
      circle.addEventListener("keydown", (e) => {
        if (e.key === "Enter" || e.key === " ") {
          e.preventDefault();
          onSelect(d);
        }
      });
      circle.addEventListener("focus", () => onHover && onHover(d));
    });
  }
  return plot;
}

/** Heatmap of a matrix: rows × columns, values coloured on a diverging or sequential
 *  scale. Long column labels (topic names) are set at an angle; labels are left out
 *  where rows or columns are too many to print (the tooltip names each cell). */
export function heatmap(matrix, { width, rowLabels, colLabels, xLabel, yLabel, valueLabel, diverging = false }) {
  const cells = [];
  matrix.forEach((row, i) => row.forEach((v, j) => cells.push({ r: rowLabels[i], c: colLabels[j], v })));
  const rowsNamed = rowLabels.length <= 40;
  const colsNamed = colLabels.length <= 30;
  const longest = (labels) => Math.max(4, ...labels.map((l) => String(l).length));
  const marginLeft = rowsNamed ? Math.min(260, 20 + 6.4 * longest(rowLabels)) : 40;
  const angled = colsNamed && longest(colLabels) > 4;
  const marginBottom = angled ? Math.min(200, 30 + 4.6 * longest(colLabels)) : 40;
  const cell = Math.max(4, Math.min(28, Math.floor((width - marginLeft - 20) / Math.max(1, colLabels.length))));
  return Plot.plot({
    width: Math.min(width, marginLeft + cell * colLabels.length + 20),
    height: 20 + marginBottom + cell * rowLabels.length,
    marginLeft,
    marginBottom,
    padding: 0,
    x: { label: xLabel, domain: colLabels, tickFormat: colsNamed ? undefined : () => "", tickRotate: angled ? -40 : 0 },
    y: { label: yLabel, domain: rowLabels, tickFormat: rowsNamed ? undefined : () => "" },
    color: diverging ? { type: "diverging", scheme: "RdBu", domain: [-1, 1], legend: true, label: valueLabel } : { scheme: "Blues", legend: true, label: valueLabel },
    marks: [Plot.cell(cells, { x: "c", y: "r", fill: "v", tip: true, title: (d) => `${yLabel} ${d.r}\n${xLabel} ${d.c}\n${valueLabel}: ${d.v.toFixed(3)}` })],
  });
}
