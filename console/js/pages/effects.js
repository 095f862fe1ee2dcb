// The explorer's "Effects" section: how the topics' expected shares move with one of
// the covariates a model was fitted with (/effects), as lines with interval bands
// along a continuous covariate, dots with whiskers across a categorical one's levels,
// and a contrast's differences; each downloadable (SVG, PNG, CSV).
// Shown when the model's capabilities offer effects and its params name covariates.

import { get } from "../api.js";
import { h, mount, field, fmtNum, problemBox, shortId, download, toCsv } from "../ui.js";
import { figure, bands, whiskers, widthOf } from "../charts.js";

/** The covariates a model was fitted with (its stored params' `covariates`). */
export function fittedCovariates(model) {
  const c = model.params && model.params.covariates;
  return Array.isArray(c) ? c : [];
}

/** How the answer was computed: the model's own prior (Monte Carlo) or composition. */
function methodNote(e) {
  if (e.method === "composition") {
    return `Method of composition (as stm's estimateEffect): ${e.draws} draws of the documents' topic proportions, each regressed on the covariates, ${e.simulations} coefficient draws each — an approximation.`;
  }
  return `${e.draws} posterior draws; Monte Carlo: ${e.monte_carlo.samples} samples per draw${e.monte_carlo.within ? "" : " (its error is above a tenth of some interval's width)"}.`;
}

export function effectsSection(model) {
  const covariates = fittedCovariates(model);
  const id = "h-effects";
  const body = h("div", {});
  const pick = h("select", { id: "effects-covariate" }, covariates.map((c) => h("option", { value: c }, c)));
  const topics = h("input", { id: "effects-topics", type: "text", placeholder: "all, or e.g. 0,3", autocomplete: "off" });
  const contrast = h("input", { id: "effects-contrast", type: "text", placeholder: "optional, e.g. green,blue or 2005,2015", autocomplete: "off" });
  const show = h("button", { id: "effects-show" }, "Show effects");
  const out = h("div", { id: "effects-out" });
  show.addEventListener("click", () => draw(model, { covariate: pick.value, topics: topics.value.trim(), contrast: contrast.value.trim() }, out));
  mount(
    body,
    h("p", { class: "help" }, "Each topic's expected share of a document as one covariate varies, the others held at their mean or reference level: posterior mean and 95 % interval over the model's kept draws."),
    field("Covariate", pick),
    field("Topics", topics),
    field("Contrast (two levels or values)", contrast),
    h("div", { class: "actions" }, show),
    out,
  );
  queueMicrotask(() => draw(model, { covariate: pick.value, topics: "", contrast: "" }, out));
  return h("section", { class: "panel", "aria-labelledby": id }, h("h2", { id }, "Effects"), body);
}

async function draw(model, { covariate, topics, contrast }, out) {
  mount(out, h("p", { class: "muted" }, "Computing…"));
  const q = new URLSearchParams({ covariate });
  if (topics) q.set("topics", topics);
  if (contrast) q.set("contrast", contrast);
  let e;
  try {
    e = await get(`/v1/models/${model.id}/effects?${q}`);
  } catch (err) {
    mount(out, problemBox(err));
    return;
  }
  const rows = e.topics.flatMap((t) => t.points.map((p) => ({ series: `topic ${t.id}`, x: p.x, y: p.mean, lower: p.lower, upper: p.upper })));
  const width = widthOf(out, 860);
  const name = `effects-${covariate}-${shortId(model.id)}`;
  const plot =
    e.kind === "continuous"
      ? bands(rows, { width, x: covariate, y: "expected topic share" })
      : whiskers(rows, { width, x: "expected topic share", y: covariate });
  const parts = [
    h("p", { class: "help" }, `${methodNote(e)} Held at: ${Object.entries(e.held_at).map(([k, v]) => `${k} = ${typeof v === "number" ? fmtNum(v) : v}`).join(", ") || "nothing else"}.`),
    figure(`Topic shares by ${covariate}`, plot, name),
  ];
  const diffs = e.topics.filter((t) => t.difference).map((t) => ({ series: `topic ${t.id}`, x: `${t.difference.a} − ${t.difference.b}`, y: t.difference.mean, lower: t.difference.lower, upper: t.difference.upper }));
  if (diffs.length) {
    parts.push(figure(`Differences ${diffs[0].x}`, whiskers(diffs.map((d) => ({ ...d, x: d.series })), { width, x: "difference in expected share", y: "topic", zero: true }), `${name}-contrast`));
  }
  const csv = toCsv(["topic", covariate, "mean", "lower", "upper"], rows.map((r) => [r.series.slice(6), r.x, r.y, r.lower, r.upper]));
  parts.push(h("div", { class: "actions" }, h("button", { class: "secondary", onclick: () => download(`${name}.csv`, new Blob([csv], { type: "text/csv" })) }, "Download effects as CSV")));
  mount(out, ...parts);
}
