// The explorer's sections beyond the topic table, each shown only when the model's
// capabilities say it answers the endpoint: the intertopic map (/topic-map), label
// evaluation (/evaluation), topic correlations (/correlations), communities
// (/communities), prediction (/predict) and held-out likelihood (/heldout-likelihood).

import { get, post } from "../api.js";
import { h, mount, table, field, fmtNum, fmtInt, problemBox, shortId } from "../ui.js";
import { figure, topicMap, heatmap, hbars, widthOf } from "../charts.js";

/** A panel whose body `fill(body)` loads after the panel is on the page. */
function panel(title, fill) {
  const body = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  const id = `h-${title.toLowerCase().replace(/\W+/g, "-")}`;
  const section = h("section", { class: "panel", "aria-labelledby": id }, h("h2", { id }, title), body);
  queueMicrotask(() => fill(body).catch((err) => mount(body, problemBox(err))));
  return section;
}

export function topicMapSection(model, onSelect) {
  return panel("Intertopic map", async (body) => {
    const map = await get(`/v1/models/${model.id}/topic-map`);
    const plot = topicMap(map.topics, { width: widthOf(body, 760), explained: map.explained, onSelect: (d) => onSelect(d.id) });
    mount(
      body,
      h("p", { class: "help" }, "Topics placed by classical scaling of their Jensen–Shannon divergences; circle area is the topic's share of tokens. Click a circle to open the topic."),
      figure("Intertopic map", plot, `topic-map-${shortId(model.id)}`),
    );
  });
}

/** Micro and macro scores of a label evaluation beside the baseline's F1. */
export function scoresTable(evaluation) {
  const m = evaluation.model;
  const b = evaluation.most_frequent_baseline;
  const row = (name, s, base) => ({ name, p: s.precision, r: s.recall, f: s.f1, bf: base.f1 });
  return table(
    [
      { label: "Average", cell: (x) => x.name },
      { label: "Precision", num: true, cell: (x) => fmtNum(x.p) },
      { label: "Recall", num: true, cell: (x) => fmtNum(x.r) },
      { label: "F1", num: true, cell: (x) => fmtNum(x.f) },
      { label: "Baseline F1", num: true, cell: (x) => fmtNum(x.bf) },
    ],
    [row("micro", m.micro, b.micro), row("macro", m.macro, b.macro)],
    { caption: `${fmtInt(m.documents)} test documents; the baseline always predicts the most frequent training labels.` },
  );
}

export function evaluationSection(model) {
  return panel("Label evaluation", async (body) => {
    let answer;
    try {
      answer = await get(`/v1/models/${model.id}/evaluation`);
    } catch (err) {
      if (err.status !== 404) throw err;
      const start = h("button", {}, "Score the test split (starts a job)");
      start.addEventListener("click", async () => {
        try {
          const job = await post(`/v1/models/${model.id}/evaluation`);
          location.hash = `#/jobs/${job.id}`;
        } catch (e) {
          body.append(problemBox(e));
        }
      });
      return mount(body, h("p", { class: "muted" }, err.message), start);
    }
    const ev = answer.evaluation;
    const base = new Map(ev.most_frequent_baseline.per_label.map((l) => [l.label, l.f1]));
    const perLabel = [...ev.model.per_label].sort((a, b) => b.documents - a.documents);
    mount(
      body,
      scoresTable(ev),
      h("h3", {}, "Per label"),
      h(
        "div",
        { class: "scroll", tabindex: 0, role: "region", "aria-label": "Per-label scores" },
        table(
        [
          { label: "Label", cell: (l) => l.label },
          { label: "Test docs", num: true, cell: (l) => fmtInt(l.documents) },
          { label: "F1", num: true, cell: (l) => fmtNum(l.f1) },
          { label: "Baseline F1", num: true, cell: (l) => fmtNum(base.get(l.label)) },
          { label: "Precision", num: true, cell: (l) => fmtNum(l.precision) },
          { label: "Recall", num: true, cell: (l) => fmtNum(l.recall) },
        ],
        perLabel,
        ),
      ),
    );
  });
}

export function correlationsSection(model) {
  return panel("Topic correlations", async (body) => {
    const c = await get(`/v1/models/${model.id}/correlations`);
    const labels = c.topics.map(String);
    mount(
      body,
      h("p", { class: "help" }, `Monte Carlo correlation of topic weights over ${fmtInt(c.draws)} draws.`),
      figure("Topic correlation", heatmap(c.correlation, { width: widthOf(body, 760), rowLabels: labels, colLabels: labels, xLabel: "topic", yLabel: "topic", valueLabel: "correlation", diverging: true }), `correlations-${shortId(model.id)}`),
    );
  });
}

export function communitiesSection(model) {
  return panel("Communities", async (body) => {
    const c = await get(`/v1/models/${model.id}/communities`);
    const cols = c.communities.map((k) => String(k.id));
    const nodes = c.nodes.slice(0, 300);
    const w = widthOf(body, 760);
    mount(
      body,
      nodes.length < c.nodes.length ? h("p", { class: "help" }, `Membership of the first ${nodes.length} of ${c.nodes.length} nodes.`) : null,
      figure("Community membership", heatmap(nodes.map((n) => n.membership), { width: w, rowLabels: nodes.map((n) => n.node), colLabels: cols, xLabel: "community", yLabel: "node", valueLabel: "membership" }), `communities-${shortId(model.id)}`),
      figure("Link probability", hbars(c.communities.map((k) => ({ label: `community ${k.id}`, value: k.link_probability })), { width: w, x: "link probability within the community", max: 1 }), `link-probability-${shortId(model.id)}`),
      table(
        [
          { label: "Community", num: true, cell: (k) => k.id },
          { label: "Size (membership sum)", num: true, cell: (k) => fmtNum(k.size, 2) },
          { label: "Link probability", num: true, cell: (k) => fmtNum(k.link_probability) },
        ],
        c.communities,
      ),
    );
  });
}

/** "3 Games" / "12 Utility" / "4": how a prediction bar names topic i (read at call time,
 * so a rename shows at the next prediction). */
async function topicNames(model) {
  const { topics } = await get(`/v1/models/${model.id}/topics?n=1`);
  const names = [];
  for (const t of topics) names[t.id] = `${t.id}${t.name ? ` ${t.name}` : t.label ? ` ${t.label}` : ""}`;
  return names;
}

export function predictSection(model, caps) {
  return panel("Predict", async (body) => {
    const text = h("textarea", { id: "predict-text", rows: 5, placeholder: "Paste a document's text" });
    const out = h("div", { "aria-live": "polite", "data-testid": "predict-result" });
    const go = h("button", { type: "submit", id: "predict-submit" }, "Predict");
    const form = h("form", {}, field("Document text", text), h("div", { class: "actions" }, go));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      go.disabled = true;
      try {
        const request = { documents: [{ id: "pasted", text: text.value }] };
        if (caps.prediction_intervals) request.intervals = true;
        const answer = await post(`/v1/models/${model.id}/predict`, request);
        const p = answer.predictions[0];
        const w = widthOf(out, 700);
        const names = await topicNames(model);
        const topics = p.topic_proportions.map((v, i) => ({ label: names[i] || `topic ${i}`, value: v, interval: p.topic_proportion_intervals?.[i] })).sort((a, b) => b.value - a.value).slice(0, 12);
        const unknown = p.unknown_tokens ?? p.oov_tokens;
        const parts = [h("p", { class: "muted" }, `${fmtInt(p.tokens)} tokens in the vocabulary, ${fmtInt(unknown)} unknown to the model.`)];
        for (const w of answer.warnings || []) parts.push(h("p", { class: "error", role: "note" }, w.detail));
        if (caps.label_prediction && p.labels.length) {
          parts.push(h("p", {}, "Predicted labels: ", p.predicted_labels.length ? p.predicted_labels.join(", ") : "none above threshold"));
          const labels = [...p.labels].sort((a, b) => b.probability - a.probability).slice(0, 12).map((l) => ({ label: l.label, value: l.probability }));
          parts.push(figure("Label probabilities", hbars(labels, { width: w, x: "probability", max: 1 }), `labels-${shortId(model.id)}`));
        }
        parts.push(figure("Topic proportions", hbars(topics, { width: w, x: "proportion" }), `proportions-${shortId(model.id)}`));
        if (p.topic_proportion_intervals) {
          parts.push(
            table(
              [
                { label: "Topic", cell: (t) => t.label },
                { label: "Proportion", num: true, cell: (t) => fmtNum(t.value) },
                { label: "95 % interval", cell: (t) => `${fmtNum(t.interval.lower)} – ${fmtNum(t.interval.upper)}` },
              ],
              topics,
              { caption: "How sure: the document's posterior given the topics (Dirichlet draws at each fold-in sweep)" },
            ),
          );
        }
        mount(out, parts);
      } catch (err) {
        mount(out, problemBox(err));
      } finally {
        go.disabled = false;
      }
    });
    mount(body, form, out);
  });
}

export function heldoutSection(model) {
  return panel("Held-out likelihood", async (body) => {
    const text = h("textarea", { rows: 5, placeholder: "One document per line" });
    const out = h("div", { role: "status" });
    const go = h("button", { type: "submit" }, "Start held-out job");
    const form = h("form", {}, field("Held-out documents (one per line)", text, "Scored by the model's held-out estimator in a background job."), h("div", { class: "actions" }, go));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const documents = text.value.split("\n").map((l) => l.trim()).filter(Boolean).map((t, i) => ({ id: String(i), text: t }));
      if (!documents.length) return mount(out, h("span", { class: "error" }, "Paste at least one document."));
      try {
        const job = await post(`/v1/models/${model.id}/heldout-likelihood`, { documents });
        location.hash = `#/jobs/${job.id}`;
      } catch (err) {
        mount(out, problemBox(err));
      }
    });
    mount(body, form, out);
  });
}

