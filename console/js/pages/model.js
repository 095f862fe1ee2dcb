// Model explorer: one fitted model. Which sections appear is decided by the model's
// declared capabilities (its `capabilities`, else the family's in GET /v1/families),
// never by the family's name: topic tables and maps, label evaluation, correlations,
// covariate effects, communities, prediction and held-out likelihood; its versions, the
// edit form and the update form. `#/models/<id>?topic=<t>` opens with topic t selected.

import { get } from "../api.js";
import { h, mount, fmtDate, fmtInt, download, shortId } from "../ui.js";
import { topicsSection } from "./topics.js";
import { topicMapSection, evaluationSection, correlationsSection, communitiesSection, predictSection, heldoutSection } from "./model_extras.js";
import { effectsSection, fittedCovariates } from "./effects.js";
import { convergencePanel, convergenceFlag, convergenceCaution } from "./convergence.js";
import { compareSection } from "./compare.js";
import { editSection, parentRow } from "./edits.js";
import { versionsSection, updateRow, lineageOf } from "./versions.js";
import { updateSection } from "./updates.js";

async function capabilitiesOf(model) {
  if (model.capabilities) return model.capabilities;
  const { families } = await get("/v1/families");
  return families.find((f) => f.name === model.model).capabilities;
}

/** The corpora a model was fitted on: its corpus, or every corpus an update added. */
function fittedOn(model) {
  const corpus = (id) => h("a", { href: `#/corpora/${id}` }, `corpus ${shortId(id)}`);
  if (model.corpus_ids?.length > 1) return h("span", { "data-testid": "corpus-ids" }, model.corpus_ids.map((id, i) => [i ? ", " : "", corpus(id)]));
  return model.corpus_id ? corpus(model.corpus_id) : `graph ${shortId(model.graph_id)}`;
}

function header(model) {
  const rows = [
    ["Family", model.model],
    ["Topics", fmtInt(model.num_topics)],
    ["Fitted on", fittedOn(model)],
    model.num_documents != null ? ["Documents", fmtInt(model.num_documents)] : null,
    ["Job", h("a", { href: `#/jobs/${model.job_id}` }, shortId(model.job_id))],
    ["Seed", String(model.seed)],
    ["Convergence", convergenceFlag(model.diagnostics?.convergence)],
    ["Created", fmtDate(model.created_at)],
    parentRow(model),
    updateRow(model),
  ].filter(Boolean);
  return h(
    "section",
    { class: "panel" },
    h("dl", { class: "stats" }, rows.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
    h("details", {}, h("summary", {}, "Parameters and diagnostics"), h("pre", {}, JSON.stringify({ params: model.params, diagnostics: model.diagnostics }, null, 2))),
    h("div", { class: "actions" }, h("button", { class: "secondary", onclick: () => download(`model-${shortId(model.id)}.json`, new Blob([JSON.stringify(model, null, 2)], { type: "application/json" })) }, "Download JSON summary")),
  );
}

export async function render(root, [id], params) {
  const model = await get(`/v1/models/${encodeURIComponent(id)}`);
  const caps = await capabilitiesOf(model);
  const lineage = lineageOf(model);
  const stops = [];
  const sections = [];
  if (caps.topic_tables) {
    const topic = params?.get("topic");
    const topics = topicsSection(model, stops, { lineage, topic: topic && /^\d+$/.test(topic) ? Number(topic) : null });
    sections.push(convergenceCaution(model, "these topics"), topics, topicMapSection(model, (id) => {
      topics.selectTopic(id);
      topics.scrollIntoView({ behavior: "smooth" });
    }));
  }
  if (caps.label_evaluation) sections.push(evaluationSection(model));
  if (caps.correlations) sections.push(correlationsSection(model));
  if (caps.effects && fittedCovariates(model).length) sections.push(effectsSection(model));
  if (caps.communities) sections.push(communitiesSection(model));
  if (caps.prediction) sections.push(predictSection(model, caps));
  if (caps.heldout_likelihood) sections.push(heldoutSection(model));
  if (caps.topic_tables) sections.push(compareSection(model));
  if (caps.edits) sections.push(editSection(model));
  if (caps.updates) sections.push(updateSection(model));
  mount(root, h("h1", {}, `Model ${shortId(model.id)} (${model.model})`), header(model), versionsSection(model, lineage), convergencePanel(model.diagnostics?.convergence), sections);
  return () => stops.forEach((s) => s());
}
