// The plots of covariate effects, drawn the way readers of R's stm (plot.estimateEffect)
// expect: a categorical covariate as one row per topic with a point and interval per
// level; a continuous covariate or a date as small multiples, one panel per topic on
// shared axes, with the documents' values as a rug and the range they cover shaded so
// that a curve beyond it reads as the extrapolation it is; a contrast as one interval
// per topic around zero. Why it exists apart from charts.js: these three plots carry
// the effects page's conventions (shares as percentages, covariate ticks as years or
// dates) that no other plot shares.

const Plot = globalThis.Plot;

/** A share as a percentage for tooltips: "12.3 %". */
export const sharePct = (v) => `${(100 * v).toFixed(1)} %`;
const pctTick = (v) => `${Math.round(1000 * v) / 10}%`;

/** A date stored as a fractional year (2003.45) printed as ISO text, cut to `chars`
 *  (7: "2003-06", 10: "2003-06-14"). */
export function fractionalYearDate(chars) {
  return (x) => {
    const year = Math.floor(x);
    const start = Date.UTC(year, 0, 1);
    const end = Date.UTC(year + 1, 0, 1);
    return new Date(start + (x - year) * (end - start)).toISOString().slice(0, chars);
  };
}

/**
 * How a covariate's values print: a date (fractional years) as a date, or as a year when
 * the axis spans years; a year-like number without a thousands separator; anything else
 * rounded. `span` is the axis' extent.
 */
export function covariateFormat(kind, values) {
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  const span = hi - lo;
  if (kind === "date") return span >= 4 ? (x) => String(Math.round(x)) : fractionalYearDate(span >= 1 ? 7 : 10);
  const yearLike = lo >= 1000 && hi <= 3000 && span <= 400;
  if (yearLike) return (x) => (Number.isInteger(x) ? String(x) : String(Math.round(10 * x) / 10));
  return (x) => {
    const a = Math.abs(x);
    if (a !== 0 && (a < 1e-3 || a >= 1e6)) return x.toExponential(2);
    return String(Number(x.toPrecision(4)));
  };
}

/**
 * A categorical covariate: rows {topic, level, mean, lower, upper}; one band of the
 * plot per topic (named at the left), a dot and interval per level, coloured by level.
 */
export function levelEffects(rows, { width, topics, levels, covariate }) {
  const rowHeight = 12 * levels.length + 16;
  return Plot.plot({
    width,
    height: 50 + rowHeight * topics.length,
    marginLeft: Math.min(300, 16 + 6.6 * Math.max(6, ...topics.map((t) => t.length))),
    marginRight: 24,
    x: { label: "expected topic share", grid: true, tickFormat: pctTick, zero: true },
    y: { axis: null, domain: levels },
    fy: { label: null, domain: topics, axis: "left", padding: 0.2 },
    color: { legend: true, domain: levels, label: covariate },
    marks: [
      Plot.frame({ stroke: "currentColor", strokeOpacity: 0.12 }),
      Plot.ruleY(rows, { fy: "topic", y: "level", x1: "lower", x2: "upper", stroke: "level", strokeWidth: 2 }),
      Plot.dot(rows, { fy: "topic", y: "level", x: "mean", fill: "level", r: 3.5 }),
      Plot.tip(rows, Plot.pointer({ fy: "topic", y: "level", x: "mean", title: (d) => `${d.topic}\n${covariate} = ${d.level}\n${sharePct(d.mean)} (${sharePct(d.lower)} – ${sharePct(d.upper)})` })),
    ],
  });
}

/** Columns of small multiples at `width`. */
const panelColumns = (width, n) => Math.max(1, Math.min(n, width >= 1000 ? 4 : width >= 640 ? 3 : width >= 420 ? 2 : 1));

/**
 * A continuous covariate or a date: rows {topic, x, mean, lower, upper}; one panel per
 * topic (in `topics` order, titled with its name), shared axes, the posterior mean as a
 * line and its interval as a band. `support` ({min, max, values}) is where the
 * documents' values lie for the held-at levels: shaded, with a rug, and the curve drawn
 * dashed outside it.
 */
export function curveEffects(rows, { width, topics, covariate, kind, support }) {
  const columns = panelColumns(width, topics.length);
  const panel = (topic) => topics.indexOf(topic);
  const fx = (d) => panel(d.topic) % columns;
  const fy = (d) => Math.floor(panel(d.topic) / columns);
  const panelRows = Math.ceil(topics.length / columns);
  const format = covariateFormat(kind, rows.map((r) => r.x));
  const top = Math.max(...rows.map((r) => r.upper), 1e-9);
  const inside = support ? rows.filter((r) => r.x >= support.min && r.x <= support.max) : rows;
  const titles = topics.map((topic) => ({ topic }));
  const marks = [Plot.frame({ stroke: "currentColor", strokeOpacity: 0.15 })];
  if (support) {
    marks.push(
      Plot.rect([support], { x1: "min", x2: "max", fill: "currentColor", fillOpacity: 0.06, ariaDescription: "range of the documents' values" }),
      Plot.ruleX(support.values, { x: (v) => v, y1: 0, y2: top * 0.06, strokeOpacity: 0.35, ariaDescription: "documents' values (rug)" }),
    );
  }
  marks.push(
    Plot.areaY(rows, { fx, fy, x: "x", y1: "lower", y2: "upper", fill: "#4e79a7", fillOpacity: 0.2 }),
    Plot.line(rows, { fx, fy, x: "x", y: "mean", stroke: "#4e79a7", strokeDasharray: support ? "4,3" : null }),
    support ? Plot.line(inside, { fx, fy, x: "x", y: "mean", stroke: "#4e79a7", strokeWidth: 2 }) : null,
    Plot.text(titles, { fx, fy, text: "topic", frameAnchor: "top-left", dx: 5, dy: 5, fontWeight: 600, fontSize: 11, fill: "currentColor", stroke: getComputedStyle(document.body).backgroundColor, strokeWidth: 3, paintOrder: "stroke" }),
    Plot.tip(rows, Plot.pointerX({ fx, fy, x: "x", y: "mean", title: (d) => `${d.topic}\n${covariate} = ${format(d.x)}\n${sharePct(d.mean)} (${sharePct(d.lower)} – ${sharePct(d.upper)})` })),
  );
  const panelWidth = (width - 60) / columns;
  return Plot.plot({
    width,
    height: 60 + 190 * panelRows,
    marginLeft: 56,
    marginTop: 10,
    fx: { axis: null, padding: 0.08 },
    fy: { axis: null, padding: 0.12 },
    x: { label: covariate, tickFormat: format, ticks: Math.max(2, Math.floor(panelWidth / 70)), grid: true },
    y: { label: "expected topic share", tickFormat: pctTick, zero: true, grid: true },
    marks,
  });
}

/** A contrast: rows {topic, mean, lower, upper}, one interval per topic, zero marked. */
export function differenceEffects(rows, { width, label }) {
  return Plot.plot({
    width,
    height: 50 + 24 * rows.length,
    marginLeft: Math.min(300, 16 + 6.6 * Math.max(6, ...rows.map((r) => r.topic.length))),
    marginRight: 24,
    grid: true,
    x: { label, tickFormat: pctTick },
    y: { label: null, domain: rows.map((r) => r.topic) },
    marks: [
      Plot.ruleX([0], { strokeOpacity: 0.6 }),
      Plot.ruleY(rows, { y: "topic", x1: "lower", x2: "upper", stroke: "#4e79a7", strokeWidth: 2 }),
      Plot.dot(rows, { y: "topic", x: "mean", fill: "#4e79a7", r: 3.5 }),
      Plot.tip(rows, Plot.pointer({ y: "topic", x: "mean", title: (d) => `${d.topic}\n${label}\n${sharePct(d.mean)} (${sharePct(d.lower)} – ${sharePct(d.upper)})` })),
    ],
  });
}
