// A model's versions (issue 60): its lineage (GET /v1/models/{id}/lineage) as a
// timeline on the model page, oldest first: each version's model, how it was made (a
// fit, an edit of its topics, or an update with a new corpus' documents), when, its
// documents and topics, and a link to its comparison with the version it was made from.
// Also the header row of a model made by an update.
// Why it exists: a model edited and updated over months is a chain of models; the
// person reading one should see where it sits in that chain and what each step changed,
// one click from the comparison that shows it.

import { get } from "../api.js";
import { h, mount, fmtDate, fmtInt, problemBox, shortId } from "../ui.js";
import { operationsText } from "./edits.js";

/** What an update added: "+200 documents from corpus 1a2b3c4d, new topics 20, 21",
 *  the corpus a link to its page. */
export function updateText(update) {
  const corpus = h("a", { href: `#/corpora/${update.corpus_id}` }, `corpus ${shortId(update.corpus_id)}`);
  const topics = update.new_topics?.length ? `new topics ${update.new_topics.join(", ")}` : "no new topic";
  return [`+${fmtInt(update.new_documents)} documents from `, corpus, `, ${topics}`];
}

/** The header row of a model made by an update: its parent, what the update added, and
 *  the comparison with the parent; `null` for any other model. */
export function updateRow(model) {
  if (!model.parent_model_id || !model.update) return null;
  const parent = model.parent_model_id;
  return [
    "Updated from",
    h(
      "span",
      { "data-testid": "updated-from" },
      h("a", { href: `#/models/${parent}` }, `model ${shortId(parent)}`),
      ": ",
      updateText(model.update),
      " · ",
      h("a", { href: `#/models/${parent}/compare/${model.id}` }, "compare with the parent"),
    ),
  ];
}

/** How a version was made, in words. */
function how(v) {
  if (v.how === "edit") return ["edit: ", operationsText(v.edit) || "topics edited"];
  if (v.how === "update" && v.update) return ["update: ", updateText(v.update)];
  return v.how || "fit";
}

/** One version of the timeline; the page's own model is marked, not linked. */
function versionItem(v, current) {
  const self = v.id === current;
  return h(
    "li",
    { "data-version": v.id, "data-relation": v.relation, "aria-current": self ? "true" : null },
    self ? h("strong", {}, `model ${shortId(v.id)} (this model)`) : h("a", { href: `#/models/${v.id}` }, `model ${shortId(v.id)}`),
    ` · ${v.family} · `,
    how(v),
    h(
      "div",
      { class: "muted" },
      `${fmtDate(v.created_at)} · ${fmtInt(v.num_documents)} documents · ${fmtInt(v.num_topics)} topics`,
      v.parent_model_id ? [" · ", h("a", { href: `#/models/${v.parent_model_id}/compare/${v.id}`, "data-testid": "compare-previous" }, `compare with previous (${shortId(v.parent_model_id)})`)] : null,
    ),
  );
}

/** The model's lineage (GET /v1/models/{id}/lineage), asked once per page: a promise
 *  of it, or of `null` from a server without lineage. Such a server adds no
 *  `corpus_ids` to its models (they came together), so the page asks nothing of it. */
export function lineageOf(model) {
  if (!Array.isArray(model.corpus_ids)) return Promise.resolve(null);
  const asked = get(`/v1/models/${encodeURIComponent(model.id)}/lineage`);
  asked.catch(() => {}); // Each reader handles the failure its own way.
  return asked;
}

/** The model page's "Versions" panel: hidden until the lineage shows more than one
 *  version; a 404 shows nothing. `lineage` is `lineageOf(model)`'s promise. */
export function versionsSection(model, lineage = lineageOf(model)) {
  const body = h("div", {});
  const section = h("section", { class: "panel", "aria-labelledby": "h-versions", "data-testid": "versions", hidden: true }, h("h2", { id: "h-versions" }, "Versions"), body);
  lineage
    .then((lineage) => {
      const versions = lineage?.versions || [];
      if (versions.length < 2) return;
      mount(
        body,
        h("p", { class: "muted" }, `${versions.length} versions, oldest first: the models this one was made from, then this one, then those made from it.`),
        h("ol", {}, versions.map((v) => versionItem(v, model.id))),
      );
      section.hidden = false;
    })
    .catch((err) => {
      if (err.status === 404) return;
      mount(body, problemBox(err));
      section.hidden = false;
    });
  return section;
}
