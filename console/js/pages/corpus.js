// Corpus page: a corpus' statistics, its covariates (kind, levels with their counts,
// range, missing values), its preprocessing, the documents dropped at upload and its
// label tree (collapsible, each label with its number of descendants); the corpus it
// was made like and the corpora it was joined from, and a form to add documents like it.

import { get } from "../api.js";
import { h, mount, table, fmtInt, fmtDate, fmtNum, shortId } from "../ui.js";
import { covariateFormat } from "../effect_plots.js";
import { sweepPanel } from "./sweep.js";
import { likeUploadSection } from "./updates.js";

const corpusLink = (id) => h("a", { href: `#/corpora/${id}` }, `corpus ${shortId(id)}`);

/**
 * The label tree from [{label, parent}] (null parent = under the root), the first level
 * open when `open`. Read only, each branch is a <details>; with `onPick`, each label is a
 * button, and a branch opens with a toggle button beside it (a button inside a
 * <summary> would nest one control in another, which screen readers cannot reach).
 */
export function labelTree(labels, onPick, { open = true } = {}) {
  const children = new Map();
  for (const { label, parent } of labels) {
    const key = parent ?? "";
    if (!children.has(key)) children.set(key, []);
    children.get(key).push(label);
  }
  const size = (label) => (children.get(label) || []).reduce((n, c) => n + 1 + size(c), 0);
  const node = (label, depth) => {
    const kids = children.get(label) || [];
    const name = onPick ? h("button", { class: "link", onclick: () => onPick(label) }, label) : h("span", {}, label);
    if (!kids.length) return h("li", { class: "leaf" }, name);
    const count = h("span", { class: "count" }, `(${size(label)} below)`);
    const list = h("ul", {}, kids.map((k) => node(k, depth + 1)));
    if (!onPick) return h("li", {}, h("details", { open: open && depth < 1 }, h("summary", {}, name, " ", count), list));
    list.hidden = !(open && depth < 1);
    const toggle = h("button", { class: "link toggle", "aria-expanded": String(!list.hidden), "aria-label": `labels below ${label}` }, list.hidden ? "▸" : "▾");
    toggle.onclick = () => {
      list.hidden = !list.hidden;
      toggle.setAttribute("aria-expanded", String(!list.hidden));
      toggle.textContent = list.hidden ? "▸" : "▾";
    };
    return h("li", { class: "branch" }, toggle, name, " ", count, list);
  };
  return h("div", { class: labels.length > 30 ? "tree scroll" : "tree", tabindex: labels.length > 30 ? 0 : null, role: "region", "aria-label": "Label tree" }, h("ul", {}, (children.get("") || []).map((l) => node(l, 0))));
}

function stats(c) {
  const rows = [
    ["Id", c.id],
    ["Created", fmtDate(c.created_at)],
    ["Documents", fmtInt(c.num_documents)],
    ["Terms (vocabulary)", fmtInt(c.num_terms)],
    ["Types before pruning", fmtInt(c.num_types_before_pruning)],
    ["Tokens", fmtInt(c.num_tokens)],
    ["Labels", fmtInt(c.num_labels)],
    ["Label tree depth", fmtInt(c.tree_depth)],
    ["Dropped empty documents", fmtInt(c.num_dropped_empty)],
    ["Duplicate ids skipped", fmtInt(c.num_duplicates_skipped)],
    ["Covariates", (c.covariates || []).map((v) => v.name).join(", ") || "none"],
    ["Numeric features", (c.features || []).join(", ") || "none"],
    c.like ? ["Preprocessed like", h("span", { "data-testid": "corpus-like" }, corpusLink(c.like))] : null,
    c.parts?.length ? ["Joined from", h("span", { "data-testid": "corpus-parts" }, c.parts.map((id, i) => [i ? ", " : "", corpusLink(id)]))] : null,
    c.unknown_dropped ? ["Dropped on upload", h("span", { "data-testid": "corpus-dropped" }, droppedText(c.unknown_dropped))] : null,
  ].filter(Boolean);
  return h("dl", { class: "stats" }, rows.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

/** Levels shown per categorical covariate before "and N more". */
const LEVELS_SHOWN = 12;

/** What a covariate holds: its levels with counts, or its range and mean. */
function covariateValues(v) {
  if (v.kind === "categorical") {
    const shown = v.levels.slice(0, LEVELS_SHOWN).map((l, i) => `${l.level} (${fmtInt(l.documents)}${i === 0 ? ", reference" : ""})`);
    const more = v.levels.length > LEVELS_SHOWN ? `, and ${v.levels.length - LEVELS_SHOWN} more` : "";
    return `${shown.join(", ")}${more}`;
  }
  if (v.min === undefined) return "no value given";
  const format = covariateFormat(v.kind, [v.min, v.max]);
  return `${format(v.min)} to ${format(v.max)}, mean ${v.kind === "date" ? format(v.mean) : fmtNum(v.mean)}`;
}

/** The corpus' covariates, or why there are none. */
export function covariatesPanel(c) {
  const covariates = c.covariates || [];
  const body = covariates.length
    ? table(
        [
          { label: "Covariate", cell: (v) => v.name },
          { label: "Kind", cell: (v) => v.kind },
          { label: "Levels (documents) or range", cell: (v) => h("span", { class: "words" }, covariateValues(v)) },
          { label: "Levels", num: true, cell: (v) => (v.kind === "categorical" ? fmtInt(v.levels.length) : "–") },
          { label: "Missing", num: true, cell: (v) => fmtInt(v.missing) },
        ],
        covariates,
        { caption: "A categorical covariate's first level is the reference level a fit uses unless told otherwise." },
      )
    : h("p", { class: "muted" }, "This corpus has no covariates: documents uploaded with a `covariates` object (numbers, dates or levels) give a model something to explain topic shares by.");
  return h("section", { class: "panel", "aria-labelledby": "covariates-h", "data-testid": "corpus-covariates" }, h("h2", { id: "covariates-h" }, "Covariates"), body);
}

export async function render(root, [id]) {
  const c = await get(`/v1/corpora/${encodeURIComponent(id)}`);
  const dropped = c.dropped_ids || [];
  const dups = c.duplicate_ids || [];
  mount(
    root,
    h("h1", {}, `Corpus ${c.name}`),
    h("p", {}, h("a", { href: `#/fit?corpus=${c.id}` }, "Start a fit on this corpus"), " · ", h("a", { href: "#/corpora" }, "All corpora")),
    h("div", { class: "cols" }, h("section", { class: "panel" }, h("h2", {}, "Statistics"), stats(c)), h("section", { class: "panel" }, h("h2", {}, "Preprocessing"), h("pre", {}, JSON.stringify(c.preprocess, null, 2)))),
    covariatesPanel(c),
    sweepPanel(c),
    likeUploadSection(c),
    dropped.length || dups.length
      ? h(
          "section",
          { class: "panel" },
          h("h2", {}, "Dropped documents"),
          dropped.length ? h("p", {}, `Empty after preprocessing (first ${dropped.length}): `, h("span", { class: "words" }, dropped.join(", "))) : null,
          dups.length ? h("p", {}, `Repeated ids skipped (first ${dups.length}): `, h("span", { class: "words" }, dups.join(", "))) : null,
        )
      : null,
    h("section", { class: "panel" }, h("h2", {}, "Label tree"), c.labels && c.labels.length ? labelTree(c.labels) : h("p", { class: "muted" }, "This corpus has no labels.")),
  );
}

/** What a `?like=` upload with `unknown=drop` left out, as one line: "labels drink (12);
 *  shop: east (3)". */
function droppedText(d) {
  const counts = (o) => Object.entries(o).map(([k, n]) => `${k} (${n})`).join(", ");
  const parts = [];
  if (Object.keys(d.labels).length) parts.push(`labels ${counts(d.labels)}`);
  for (const [cov, levels] of Object.entries(d.levels)) parts.push(`${cov}: ${counts(levels)}`);
  return parts.join("; ") || "nothing";
}
