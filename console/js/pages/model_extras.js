// The explorer's sections beyond the topic table, each shown only when the model's
// capabilities say it answers the endpoint: the intertopic map (/topic-map), label
// evaluation (/evaluation), topic correlations (/correlations), communities
// (/communities), prediction (/predict) and held-out likelihood (/heldout-likelihood).

import { get, post } from "../api.js";
import { h, mount, table, field, fmtNum, fmtInt, problemBox, shortId } from "../ui.js";
import { figure, topicMap, heatmap, hbars, widthOf } from "../charts.js";
import { topicNames } from "../topic_names.js";

/** A panel whose body `fill(body)` loads after the panel is on the page. */
function panel(title, fill) {
  const body = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  const id = `h-${title.toLowerCase().replace(/\W+/g, "-")}`;
  const section = h("section", { class: "panel", "aria-labelledby": id }, h("h2", { id }, title), body);
  queueMicrotask(() => fill(body).catch((err) => mount(body, problemBox(err))));
  return section;
}

/** Topics whose id the map prints without zoom: the largest, so ids do not pile up. */
const MAP_IDS = 30;
/** Words in the bars beside the map (LDAvis shows 30; these are FREX-ranked). */
const MAP_WORDS = 15;

/** The domain that shows `topics` magnified `zoom` times around `centre`. */
function zoomDomain(topics, zoom, centre) {
  if (zoom <= 1 || !topics.length) return null;
  const span = (key) => {
    const values = topics.map((t) => t[key]);
    return (Math.max(...values) - Math.min(...values)) || 1;
  };
  const half = (key) => span(key) / (2 * zoom);
  return { x: [centre.x - half("x"), centre.x + half("x")], y: [centre.y - half("y"), centre.y + half("y")] };
}

/**
 * The intertopic map (LDAvis' left half) with its right half: the hovered or chosen
 * topic's top words as bars. Zoom around the chosen topic, search names and words, and
 * hide topics below a share, for models with many topics.
 */
export function topicMapSection(model, onSelect) {
  return panel("Intertopic map", async (body) => {
    const [map, names] = await Promise.all([get(`/v1/models/${model.id}/topic-map`), topicNames(model.id)]);
    const topics = map.topics.map((t) => ({ ...t, label: names.label(t.id), words: (names.byId.get(t.id)?.words || []).map((w) => w.word) }));
    const state = { zoom: 1, centre: null, query: "", minShare: 0, chosen: null };
    const stability = (id) => names.byId.get(id)?.stability;
    const unstable = new Set(topics.filter((t) => stability(t.id) && stability(t.id).matched + 1 < stability(t.id).chains).map((t) => t.id));
    const search = h("input", { type: "search", id: "map-search", placeholder: "a name or a word", autocomplete: "off" });
    const zoom = h("input", { type: "range", id: "map-zoom", min: 1, max: 8, step: 0.5, value: 1 });
    const share = h("input", { type: "range", id: "map-share", min: 0, max: 5, step: 0.1, value: 0 });
    const shareShown = h("output", {}, "0 %");
    const plotBox = h("div", { "data-testid": "topic-map" });
    const wordsBox = h("div", { "data-testid": "map-words", "aria-live": "polite" });
    const wordCache = new Map();
    let hoverTimer = null;

    async function showWords(d) {
      if (!d) return;
      if (!wordCache.has(d.id)) wordCache.set(d.id, get(`/v1/models/${model.id}/topics/${d.id}/frex?rank=frex&weight=0.5&n=${MAP_WORDS}`));
      try {
        const answer = await wordCache.get(d.id);
        const rows = answer.words.map((w) => ({ label: w.word, value: w.frequency }));
        mount(wordsBox, figure(`Top words of topic ${names.short(d.id)}`, hbars(rows, { width: widthOf(wordsBox, 380), x: "frequency in the topic" }), `map-words-${shortId(model.id)}-${d.id}`));
      } catch (err) {
        mount(wordsBox, problemBox(err));
      }
    }
    const hover = (d) => {
      clearTimeout(hoverTimer);
      hoverTimer = setTimeout(() => showWords(d || state.chosen), 120);
    };
    function draw() {
      const q = state.query.toLowerCase();
      const matches = (t) => !q || t.label.toLowerCase().includes(q) || t.words.some((w) => w.toLowerCase().includes(q));
      const dimmed = new Set(topics.filter((t) => t.proportion * 100 < state.minShare || !matches(t)).map((t) => t.id));
      const centre = state.centre || { x: topics.reduce((s, t) => s + t.x, 0) / topics.length, y: topics.reduce((s, t) => s + t.y, 0) / topics.length };
      const labelled = new Set([...topics].sort((a, b) => b.proportion - a.proportion).slice(0, Math.round(MAP_IDS * state.zoom)).map((t) => t.id));
      const plot = topicMap(topics, {
        width: widthOf(plotBox, 700),
        explained: map.explained,
        domain: zoomDomain(topics, state.zoom, centre),
        dimmed,
        labelled: topics.length > MAP_IDS ? labelled : null,
        unstable,
        onHover: hover,
        onSelect: (d) => {
          state.chosen = d;
          state.centre = d;
          showWords(d);
          onSelect(d.id);
        },
      });
      const hidden = dimmed.size ? `${dimmed.size} of ${topics.length} topics faded by the search or the share filter.` : "";
      const note = unstable.size ? h("p", { class: "help", "data-testid": "map-unstable" }, `Dashed and marked ⚠: ${unstable.size} topic${unstable.size === 1 ? "" : "s"} not matched in every chain of the fit (an accident of the seed, perhaps).`) : null;
      mount(plotBox, figure("Intertopic map", plot, `topic-map-${shortId(model.id)}`), note, h("p", { class: "muted", role: "status" }, hidden));
    }
    search.addEventListener("input", () => {
      state.query = search.value.trim();
      draw();
    });
    zoom.addEventListener("input", () => {
      state.zoom = Number(zoom.value);
      draw();
    });
    share.addEventListener("input", () => {
      state.minShare = Number(share.value);
      shareShown.textContent = `${share.value} %`;
      draw();
    });
    const shareField = field("Hide topics below a share of", share);
    shareField.querySelector("label").append(" ", shareShown);
    mount(
      body,
      h("p", { class: "help" }, "Topics placed by classical scaling of their Jensen–Shannon divergences; circle area is the topic's share of tokens. Hover a circle for its words, click one to open the topic; zoom centres on the last topic clicked."),
      h("div", { class: "toolbar" }, field("Search topics", search), field("Zoom", zoom), shareField),
      h("div", { class: "map-cols" }, plotBox, wordsBox),
    );
    draw();
    const largest = [...topics].sort((a, b) => b.proportion - a.proportion)[0];
    state.chosen = largest;
    showWords(largest);
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
    // Only a model fitted with a test split has scores (and only such a model can be
    // scored again): ask for none from a model without one.
    if (!model.diagnostics?.evaluation) {
      return mount(body, h("p", { class: "muted", "data-testid": "no-evaluation" }, "This model was fitted without a test split, so it has no label scores. Fit with a test split (the param test_fraction, or documents tagged test) to see them here."));
    }
    const answer = await get(`/v1/models/${model.id}/evaluation`);
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
    const [c, names] = await Promise.all([get(`/v1/models/${model.id}/correlations`), topicNames(model.id)]);
    const labels = c.topics.map((id) => names.short(id));
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
        const names = await topicNames(model.id);
        const topics = p.topic_proportions
          .map((v, i) => ({ label: names.short(i), value: v, lower: p.topic_proportion_intervals?.[i]?.lower, upper: p.topic_proportion_intervals?.[i]?.upper }))
          .sort((a, b) => b.value - a.value)
          .slice(0, 12);
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
                { label: "95 % interval", cell: (t) => `${fmtNum(t.lower)} – ${fmtNum(t.upper)}` },
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

