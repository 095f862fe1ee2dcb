// Corpus page: a corpus' statistics, its preprocessing, the documents dropped at upload
// and its label tree (collapsible, each label with its number of descendants).

import { get } from "../api.js";
import { h, mount, fmtInt, fmtDate } from "../ui.js";

/** Nested <details> from [{label, parent}] (null parent = under the root). */
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
    return h("li", {}, h("details", { open: open && depth < 1 }, h("summary", {}, name, " ", h("span", { class: "count" }, `(${size(label)} below)`)), h("ul", {}, kids.map((k) => node(k, depth + 1)))));
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
    ["Features", (c.features || []).join(", ") || "none"],
  ];
  return h("dl", { class: "stats" }, rows.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
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
