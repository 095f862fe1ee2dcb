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

function savePng(svg, filename) {
  const text = svgText(svg);
  const { width, height } = svg.getBoundingClientRect();
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
  const svg = () => mainSvg(plotNode);
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

/** Line plot of `series` rows {x, y, series?}. */
export function lines(rows, { width, x, y, height = 260, series = false }) {
  return Plot.plot({
    width,
    height,
    marginLeft: 60,
    grid: true,
    x: { label: x },
    y: { label: y, zero: false },
    color: series ? { legend: true } : undefined,
    marks: [
      Plot.line(rows, { x: "x", y: "y", stroke: series ? "series" : "currentColor", marker: rows.length < 60 ? "circle" : null }),
      Plot.tip(rows, Plot.pointerX({ x: "x", y: "y", title: (d) => `${x} ${d.x}\n${d.series ? d.series + ": " : ""}${d.y}` })),
    ],
  });
}

/** Lines with interval bands: rows {series, x, y, lower, upper}, one line per series. */
export function bands(rows, { width, x, y, height = 300 }) {
  return Plot.plot({
    width,
    height,
    marginLeft: 60,
    grid: true,
    x: { label: x },
    y: { label: y, zero: true },
    color: { legend: true },
    marks: [
      Plot.areaY(rows, { x: "x", y1: "lower", y2: "upper", fill: "series", fillOpacity: 0.18 }),
      Plot.line(rows, { x: "x", y: "y", stroke: "series" }),
      Plot.tip(rows, Plot.pointerX({ x: "x", y: "y", title: (d) => `${d.series}\n${x} ${d.x}\n${d.y} (${d.lower} to ${d.upper})` })),
    ],
  });
}

/** Dots with whiskers: rows {series, x (a category), y, lower, upper}, horizontal. */
export function whiskers(rows, { width, x, y, zero = false }) {
  const cats = [...new Set(rows.map((r) => String(r.x)))];
  return Plot.plot({
    width,
    height: 40 + 26 * cats.length,
    marginLeft: Math.min(220, 12 + 7 * Math.max(4, ...cats.map((c) => c.length))),
    grid: true,
    x: { label: x },
    y: { label: y, domain: cats },
    color: { legend: true },
    marks: [
      zero ? Plot.ruleX([0]) : null,
      Plot.ruleY(rows, { y: (d) => String(d.x), x1: "lower", x2: "upper", stroke: "series" }),
      Plot.dot(rows, { y: (d) => String(d.x), x: "y", fill: "series" }),
      Plot.tip(rows, Plot.pointer({ y: (d) => String(d.x), x: "y", title: (d) => `${d.series}, ${d.x}: ${d.y} (${d.lower} to ${d.upper})` })),
    ],
  });
}

/** Horizontal bars: rows {label, value}, in the given order. */
export function hbars(rows, { width, x, max = null }) {
  return Plot.plot({
    width,
    height: 30 + 20 * rows.length,
    marginLeft: Math.min(200, 12 + 7 * Math.max(4, ...rows.map((r) => r.label.length))),
    x: { label: x, grid: true, domain: max === null ? undefined : [0, max] },
    y: { label: null, domain: rows.map((r) => r.label) },
    marks: [
      Plot.barX(rows, { x: "value", y: "label", fill: "#4e79a7" }),
      Plot.tip(rows, Plot.pointerY({ x: "value", y: "label", title: (d) => `${d.label}: ${d.value}` })),
      Plot.ruleX([0]),
    ],
  });
}

/**
 * Frequency–exclusivity scatter of a topic's words (the HPC paper's Figure 4): every
 * word a point, the `labelled` top FREX words named, hover for the values.
 */
export function frexScatter(words, labelled, { width }) {
  const top = new Set(labelled);
  const highlighted = words.filter((d) => top.has(d.word));
  const title = (d) => `${d.word}\nfrequency ${d.frequency.toExponential(3)}\nexclusivity ${d.exclusivity.toFixed(4)}\nFREX ${d.frex.toFixed(4)}`;
  return Plot.plot({
    width,
    height: Math.round(Math.min(520, width * 0.7)),
    marginLeft: 56,
    marginTop: 70,
    marginRight: 70,
    grid: true,
    x: { type: "log", label: "frequency (rate in topic, log)" },
    y: { label: "exclusivity" },
    marks: [
      Plot.dot(words, { x: "frequency", y: "exclusivity", r: 2, fill: () => "other", fillOpacity: 0.5, ariaDescription: "every word" }),
      Plot.dot(highlighted, { x: "frequency", y: "exclusivity", r: 4, fill: () => "top FREX", stroke: "white", strokeWidth: 0.5, ariaDescription: "top FREX words" }),
      Plot.text(highlighted, { x: "frequency", y: "exclusivity", text: "word", ariaDescription: "top FREX word labels", rotate: -35, textAnchor: "start", dx: 4, dy: -4, fontSize: 11, fontWeight: 600, fill: "currentColor", stroke: getComputedStyle(document.body).backgroundColor, strokeWidth: 3, paintOrder: "stroke" }),
      Plot.tip(words, Plot.pointer({ x: "frequency", y: "exclusivity", title })),
    ],
    color: { domain: ["top FREX", "other"], range: ["#e15759", "#8da0b3"], legend: true },
  });
}

/** Intertopic distance map: circle area ∝ share, text = topic id. */
export function topicMap(topics, { width, onSelect, explained }) {
  const label = (d) => `${d.id}${d.name ? " " + d.name : d.label ? " " + d.label : ""}`;
  const pct = (v) => `${(100 * v).toFixed(1)}%`;
  const plot = Plot.plot({
    width,
    height: Math.round(Math.min(560, width * 0.8)),
    inset: 30,
    grid: true,
    x: { label: `PC1 (${pct(explained[0])})` },
    y: { label: `PC2 (${pct(explained[1])})` },
    r: { range: [3, Math.max(10, (width / 18) * Math.min(1, Math.sqrt(12 / Math.max(1, topics.length))))] },
    marks: [
      Plot.dot(topics, { x: "x", y: "y", r: "proportion", fill: "#4e79a7", fillOpacity: 0.35, stroke: "#4e79a7" }),
      Plot.text(topics, { x: "x", y: "y", text: (d) => String(d.id), fontSize: 11 }),
      Plot.tip(topics, Plot.pointer({ x: "x", y: "y", title: (d) => `topic ${label(d)}\nshare ${pct(d.proportion)}` })),
    ],
  });
  if (onSelect) {
    plot.addEventListener("click", () => plot.value && onSelect(plot.value));
    // Keyboard: every circle is a button (Plot binds each circle to its datum's index).
    plot.querySelectorAll('g[aria-label="dot"] circle').forEach((circle, order) => {
      const d = topics[Number.isInteger(circle.__data__) ? circle.__data__ : order];
      if (!d) return;
      circle.setAttribute("tabindex", "0");
      circle.setAttribute("role", "button");
      circle.setAttribute("aria-label", `Show topic ${label(d)}, share ${pct(d.proportion)}`);
      circle.addEventListener("keydown", (e) => {
        if (e.key === "Enter" || e.key === " ") {
          e.preventDefault();
          onSelect(d);
        }
      });
    });
  }
  return plot;
}

/** Heatmap of a matrix: rows × columns, values coloured on a diverging or sequential scale. */
export function heatmap(matrix, { width, rowLabels, colLabels, xLabel, yLabel, valueLabel, diverging = false }) {
  const cells = [];
  matrix.forEach((row, i) => row.forEach((v, j) => cells.push({ r: rowLabels[i], c: colLabels[j], v })));
  const cell = Math.max(4, Math.min(28, Math.floor((width - 80) / Math.max(1, colLabels.length))));
  return Plot.plot({
    width: Math.min(width, 80 + cell * colLabels.length + 20),
    height: 60 + cell * rowLabels.length,
    marginLeft: 80,
    padding: 0,
    x: { label: xLabel, domain: colLabels, tickFormat: colLabels.length > 30 ? () => "" : undefined },
    y: { label: yLabel, domain: rowLabels, tickFormat: rowLabels.length > 40 ? () => "" : undefined },
    color: diverging ? { type: "diverging", scheme: "RdBu", domain: [-1, 1], legend: true, label: valueLabel } : { scheme: "Blues", legend: true, label: valueLabel },
    marks: [Plot.cell(cells, { x: "c", y: "r", fill: "v", tip: true, title: (d) => `${yLabel} ${d.r}, ${xLabel} ${d.c}\n${valueLabel}: ${d.v.toFixed(3)}` })],
  });
}
