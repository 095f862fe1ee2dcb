// The explorer's "Effects" section: how the topics' expected shares move with one of
// the covariates a model was fitted with (/effects), drawn as a reader of R's stm
// expects (effect_plots.js): topics named, a categorical covariate as a row per topic,
// a continuous one as small multiples with the documents' range shaded, a contrast as
// differences around zero; a caution when the fit behind them did not converge; each
// plot downloadable with its title and legend, and the numbers as one CSV.
// Shown when the model's capabilities offer effects and its params name covariates.

import { get } from "../api.js";
import { h, mount, field, fmtNum, problemBox, shortId, download, toCsv } from "../ui.js";
import { figure, widthOf } from "../charts.js";
import { levelEffects, curveEffects, differenceEffects, covariateFormat, fractionalYearDate, sharePct } from "../effect_plots.js";
import { topicNames } from "../topic_names.js";
import { convergenceCaution, unmatchedTopics } from "./convergence.js";

/** Panels shown unless the reader picks topics: the largest topics first. */
const DEFAULT_PANELS = 12;

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

/** "year = 2010, group = other": what the other covariates are held at. */
function heldAtText(e) {
  return Object.entries(e.held_at).map(([k, v]) => `${k} = ${typeof v === "number" ? fmtNum(v) : v}`).join(", ");
}

/** The topics drawn when none are picked: all, or the largest `DEFAULT_PANELS`. */
function defaultTopics(names) {
  if (names.topics.length <= DEFAULT_PANELS) return "";
  return [...names.topics]
    .sort((a, b) => b.proportion - a.proportion)
    .slice(0, DEFAULT_PANELS)
    .map((t) => t.id)
    .sort((a, b) => a - b)
    .join(",");
}

export function effectsSection(model) {
  const covariates = fittedCovariates(model);
  const id = "h-effects";
  const body = h("div", {});
  const pick = h("select", { id: "effects-covariate" }, covariates.map((c) => h("option", { value: c }, c)));
  const topics = h("input", { id: "effects-topics", type: "text", placeholder: "all, or ids such as 0,3", autocomplete: "off" });
  const contrast = h("input", { id: "effects-contrast", type: "text", placeholder: "optional, e.g. green,blue or 2005,2015", autocomplete: "off" });
  const show = h("button", { id: "effects-show" }, "Show effects");
  const out = h("div", { id: "effects-out" });
  const ask = () => draw(model, { covariate: pick.value, topics: topics.value.trim(), contrast: contrast.value.trim() }, out);
  show.addEventListener("click", ask);
  mount(
    body,
    convergenceCaution(model, "these effects"),
    h("p", { class: "help" }, "Each topic's expected share of a document as one covariate varies, the others held at their mean or reference level: posterior mean and 95 % interval over the model's kept draws."),
    h("div", { class: "toolbar" }, field("Covariate", pick), field("Topics", topics, "Topic ids, comma-separated."), field("Contrast (two levels or values)", contrast)),
    h("div", { class: "actions" }, show),
    out,
  );
  queueMicrotask(async () => {
    try {
      topics.value = defaultTopics(await topicNames(model.id));
    } catch {
      // The names load again with the plot, which reports its own errors.
    }
    ask();
  });
  return h("section", { class: "panel", "aria-labelledby": id }, h("h2", { id }, "Effects"), body);
}

/** The answer's points and differences as rows named by topic. */
function effectRows(e, names) {
  const points = e.topics.flatMap((t) => t.points.map((p) => ({ id: t.id, topic: names.short(t.id), x: p.x, level: String(p.x), mean: p.mean, lower: p.lower, upper: p.upper })));
  const differences = e.topics.filter((t) => t.difference).map((t) => ({ id: t.id, topic: names.short(t.id), ...t.difference }));
  return { points, differences };
}

/** One CSV for the answer: a row per point and a row per difference. */
function effectsCsv(e, names, { points, differences }) {
  const header = ["row", "topic", "topic_name", "covariate", "value", "a", "b", "mean", "lower", "upper"];
  const rows = [
    ...points.map((p) => ["point", p.id, names.label(p.id), e.covariate, p.x, "", "", p.mean, p.lower, p.upper]),
    ...differences.map((d) => ["difference", d.id, names.label(d.id), e.covariate, "", d.a, d.b, d.mean, d.lower, d.upper]),
  ];
  return toCsv(header, rows);
}

/** Where the documents' values lie, and whether the curve goes beyond them. */
function supportNote(e, format) {
  const s = e.support;
  if (!s || !s.documents) return null;
  const grid = e.topics[0]?.points.map((p) => p.x) || [];
  const beyond = grid.some((x) => x < s.min) || grid.some((x) => x > s.max);
  const held = heldAtText(e);
  // The range's ends as dates, to the day, where the axis may show only years.
  if (s.kind === "date") format = fractionalYearDate(10);
  const where = `${s.documents} document${s.documents === 1 ? "" : "s"}${held ? ` with ${held}` : ""} have ${e.covariate} from ${format(s.min)} to ${format(s.max)} (shaded, each a tick at the bottom)`;
  return beyond
    ? h("p", { class: "error", role: "note", "data-testid": "effects-extrapolation" }, `Extrapolation: ${where}; the dashed parts of the curves lie outside that range, where no document informs them.`)
    : h("p", { class: "help" }, `${where}.`);
}

async function draw(model, { covariate, topics, contrast }, out) {
  mount(out, h("p", { class: "muted" }, "Computing…"));
  const q = new URLSearchParams({ covariate });
  if (topics) q.set("topics", topics);
  if (contrast) q.set("contrast", contrast);
  let e;
  let names;
  try {
    [e, names] = await Promise.all([get(`/v1/models/${model.id}/effects?${q}`), topicNames(model.id)]);
  } catch (err) {
    mount(out, problemBox(err));
    return;
  }
  const unmatched = unmatchedTopics(model);
  const marked = { ...names, short: (id) => `${names.short(id)}${unmatched.has(id) ? " ⚠" : ""}` };
  const rows = effectRows(e, marked);
  const drawn = e.topics.map((t) => marked.short(t.id));
  const lost = e.topics.filter((t) => unmatched.has(t.id)).map((t) => names.label(t.id));
  const width = widthOf(out, 1140);
  const name = `effects-${covariate}-${shortId(model.id)}`;
  const categorical = e.kind === "categorical";
  const levels = [...new Set(rows.points.map((p) => p.level))];
  const plot = categorical
    ? levelEffects(rows.points, { width, topics: drawn, levels, covariate })
    : curveEffects(rows.points, { width, topics: drawn, covariate, kind: e.support?.kind ?? e.kind, support: e.support?.documents ? e.support : null });
  // A date covariate is "continuous" in the model's design; the corpus' support knows it
  // is a date.
  const kind = e.support?.kind ?? e.kind;
  const format = categorical ? String : covariateFormat(kind, rows.points.map((p) => p.x));
  const held = heldAtText(e);
  const parts = [
    lost.length
      ? h("p", { class: "problem", role: "note", "data-testid": "unmatched-topics" }, h("strong", {}, "Caution: "), `not matched in every chain (marked ⚠; another chain's closest topic shares less than half its words' mass): ${lost.join("; ")}. ${e.chains === "all" ? "Their effects pool topics that differ between chains." : "Their effects rest only on the chains that hold them, so the topics' shares need not sum to one."}`)
      : null,
    h("p", { class: "help" }, `${methodNote(e)} Held at: ${held || "nothing else"}.`),
    categorical ? null : supportNote(e, format),
    figure(`Expected topic share by ${covariate}${held ? ` (${held})` : ""}`, plot, name),
  ];
  if (rows.differences.length) {
    const d = rows.differences[0];
    const label = `${covariate}: ${categorical ? d.a : format(Number(d.a))} minus ${categorical ? d.b : format(Number(d.b))}`;
    parts.push(figure(`Difference in expected share, ${label}`, differenceEffects(rows.differences, { width: Math.min(width, 860), label: "difference in expected share" }), `${name}-contrast`));
    parts.push(
      h(
        "p",
        { class: "help", "data-testid": "effects-differences" },
        rows.differences.map((r) => `${r.topic}: ${sharePct(r.mean)} (${sharePct(r.lower)} to ${sharePct(r.upper)})`).join("; "),
      ),
    );
  }
  const csv = effectsCsv(e, names, rows);
  parts.push(h("div", { class: "actions" }, h("button", { class: "secondary", onclick: () => download(`${name}.csv`, new Blob([csv], { type: "text/csv" })) }, "Download effects and differences as CSV")));
  mount(out, ...parts);
}
