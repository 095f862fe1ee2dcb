// Model explorer: one fitted model. Which sections appear is decided by the model's
// declared capabilities (its `capabilities`, else the family's in GET /v1/families),
// never by the family's name: topic tables and maps, label evaluation, correlations,
// covariate effects, communities, prediction and held-out likelihood.

import { get } from "../api.js";
import { h, mount, fmtDate, fmtInt, download, shortId } from "../ui.js";
import { topicsSection } from "./topics.js";
import { topicMapSection, evaluationSection, correlationsSection, communitiesSection, predictSection, heldoutSection } from "./model_extras.js";
import { effectsSection, fittedCovariates } from "./effects.js";
import { convergencePanel, convergenceFlag, convergenceCaution } from "./convergence.js";
import { compareSection } from "./compare.js";
import { editSection, parentRow } from "./edits.js";

async function capabilitiesOf(model) {
  if (model.capabilities) return model.capabilities;
  const { families } = await get("/v1/families");
  return families.find((f) => f.name === model.model).capabilities;
}

function header(model) {
  const rows = [
    ["Family", model.model],
    ["Topics", fmtInt(model.num_topics)],
    ["Fitted on", model.corpus_id ? h("a", { href: `#/corpora/${model.corpus_id}` }, `corpus ${shortId(model.corpus_id)}`) : `graph ${shortId(model.graph_id)}`],
    ["Job", h("a", { href: `#/jobs/${model.job_id}` }, shortId(model.job_id))],
    ["Seed", String(model.seed)],
    ["Convergence", convergenceFlag(model.diagnostics?.convergence)],
    ["Created", fmtDate(model.created_at)],
    parentRow(model),
  ].filter(Boolean);
  return h(
    "section",
    { class: "panel" },
    h("dl", { class: "stats" }, rows.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
    h("details", {}, h("summary", {}, "Parameters and diagnostics"), h("pre", {}, JSON.stringify({ params: model.params, diagnostics: model.diagnostics }, null, 2))),
    h("div", { class: "actions" }, h("button", { class: "secondary", onclick: () => download(`model-${shortId(model.id)}.json`, new Blob([JSON.stringify(model, null, 2)], { type: "application/json" })) }, "Download JSON summary")),
  );
}

export async function render(root, [id]) {
  const model = await get(`/v1/models/${encodeURIComponent(id)}`);
  const caps = await capabilitiesOf(model);
  const stops = [];
  const sections = [];
  if (caps.topic_tables) {
    const topics = topicsSection(model, stops);
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
  mount(root, h("h1", {}, `Model ${shortId(model.id)} (${model.model})`), header(model), convergencePanel(model.diagnostics?.convergence), sections);
  return () => stops.forEach((s) => s());
}
