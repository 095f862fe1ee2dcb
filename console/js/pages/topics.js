// The explorer's topic section: every topic in the model's own numbering with its share,
// name (renamed inline through PATCH) and top FREX words; a weight slider that re-ranks
// through the API's query-time `weight`; one topic's words with frequency, exclusivity
// and FREX as bars and its frequency–exclusivity scatter; the label tree as navigation
// where the model has one; a CSV download of the table; links to the selected topic in
// the model's other versions (edits and updates keep topic ids).

import { get, patch, request, query } from "../api.js";
import { h, mount, table, bar, field, fmtPct, fmtNum, download, problemBox, shortId } from "../ui.js";
import { figure, frexScatter, widthOf } from "../charts.js";
import { labelTree } from "./corpus.js";
import { topicNames, forgetTopicNames } from "../topic_names.js";

const TABLE_WORDS = 8;
const DETAIL_WORDS = 20;
const LABELLED = 12;
// The scatter asks for at most this many words: the server's default `--max-n`, the most
// words one topic listing may return (a server run with a lower --max-n refuses it).
// A larger vocabulary is drawn as its top words in the current ranking.
const SCATTER_WORDS = 1000;

const topicTitle = (t) => `${t.id}${t.label ? ` ${t.label}` : ""}`;

/** Inline rename: the name (or "unnamed") and a button that swaps in an input. */
function nameCell(model, topic, onRenamed) {
  const cell = h("div", { class: "name-edit" });
  const show = () =>
    mount(
      cell,
      h("span", { class: topic.name ? "" : "muted", "data-testid": "topic-name" }, topic.name || "unnamed"),
      h("button", { class: "link", "aria-label": `Rename topic ${topicTitle(topic)}`, onclick: edit }, "Rename"),
    );
  function edit() {
    const input = h("input", { type: "text", value: topic.name || "", maxlength: 200, "aria-label": `Name of topic ${topicTitle(topic)}` });
    const error = h("span", { class: "field-error", role: "alert" });
    const save = async () => {
      try {
        const answer = await patch(`/v1/models/${model.id}/topics/${topic.id}`, { name: input.value.trim() || null });
        topic.name = answer.topic.name;
        forgetTopicNames(model.id);
        onRenamed(topic);
        show();
      } catch (err) {
        error.textContent = err.message;
      }
    };
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter") save();
      if (e.key === "Escape") show();
    });
    mount(cell, input, h("button", { onclick: save }, "Save"), h("button", { class: "secondary", onclick: show }, "Cancel"), error);
    input.focus();
  }
  show();
  return cell;
}

/** A topic's stability across chains: "–" for one chain; a caution mark when some
 *  other chain holds no matching topic (the pooled topic averages different topics). */
export function stabilityCell(s) {
  if (!s) return h("span", { class: "muted", title: "One chain: stability is unknown" }, "–");
  const others = s.chains - 1;
  const text = `${s.matched} of ${others} other chain${others === 1 ? "" : "s"}, similarity ${s.similarity.toFixed(2)}`;
  if (s.matched === others) return h("span", { "data-stable": "true" }, text);
  return h("span", { class: "error", "data-stable": "false", title: "Not matched in every chain: this topic may be an accident of the seed" }, "⚠ ", text);
}

const BAR_PX = 60;

/** The top words with bars; with `intervals` (the API's `with=intervals` summary), each
 *  word's FREX interval and a bar for the share of posterior draws that put it in the
 *  topic's top n. */
function wordBars(words, intervals) {
  const mf = Math.max(...words.map((w) => w.frequency), 1e-12);
  const barred = (value, fraction, cls) => h("span", {}, bar(fraction, cls, BAR_PX), " ", fmtNum(value));
  const columns = [
    { label: "#", num: true, cell: (w) => words.indexOf(w) + 1 },
    { label: "Word", cell: (w) => w.word },
    { label: "Frequency", cell: (w) => barred(w.frequency, w.frequency / mf, "") },
    { label: "Exclusivity", cell: (w) => barred(w.exclusivity, w.exclusivity, "exc") },
    { label: "FREX", cell: (w) => barred(w.frex, w.frex, "frex") },
  ];
  if (intervals) {
    const pct = Math.round(intervals.level * 100);
    columns.push(
      { label: `FREX ${pct} % interval`, cell: (w) => `${fmtNum(w.intervals.frex.lower)} – ${fmtNum(w.intervals.frex.upper)}` },
      { label: `In the top ${intervals.top_n}`, cell: (w) => h("span", { "data-testid": "in-top-n" }, bar(w.intervals.in_top_n, "", BAR_PX), " ", fmtPct(w.intervals.in_top_n)) },
    );
  }
  const sure = intervals
    ? ` Intervals and “in the top ${intervals.top_n}” come from ${intervals.draws} posterior draws: the bar is the share of draws in which the word is among the topic's top ${intervals.top_n}.`
    : "";
  return h(
    "div",
    {},
    h("p", { class: "help" }, `Frequency bars are relative to the topic's most frequent word; exclusivity and FREX are in [0, 1].${sure}`),
    table(columns, words),
  );
}

const REPRESENTATIVE = 5;
/** The coherence measures the service computes ([value, what the picker says]). */
const COHERENCE_MEASURES = [
  ["c_npmi", "NPMI (c_npmi)"],
  ["u_mass", "UMass (u_mass)"],
  ["c_v", "C_V (c_v)"],
  ["c_uci", "UCI (c_uci)"],
];

/** A document's `meta` as "key: value" lines (nested values as compact JSON). */
function metaCell(meta) {
  if (!meta || !Object.keys(meta).length) return h("span", { class: "muted" }, "–");
  return h(
    "dl",
    { class: "meta" },
    Object.entries(meta).map(([k, v]) => [h("dt", {}, k), h("dd", {}, typeof v === "string" ? v : JSON.stringify(v))]),
  );
}

/** The documents with the highest share of `topic` (the API's representative documents):
 *  id, share as a bar, the document's text as uploaded (else its first words), its `meta`, and its three
 *  largest topics by name. */
async function representativeDocuments(model, topic) {
  const [answer, names] = await Promise.all([get(`/v1/models/${model.id}/topics/${topic.id}/documents?n=${REPRESENTATIVE}`), topicNames(model.id)]);
  const source = answer.source === "fit" ? "the fit's posterior means" : "proportions folded in after the fit";
  const largest = (props) =>
    h(
      "ul",
      { class: "plain" },
      props
        .map((p, k) => [k, p])
        .sort((a, b) => b[1] - a[1])
        .slice(0, 3)
        .map(([k, p]) => h("li", {}, `${names.short(k)}: ${fmtPct(p)}`)),
    );
  const text = (d) => d.text ?? d.first_words;
  const hasMeta = answer.documents.some((d) => d.meta);
  const columns = [
    { label: "Document", cell: (d) => d.id },
    { label: "Share", cell: (d) => h("span", {}, bar(d.share, "", BAR_PX), " ", fmtPct(d.share)) },
    { label: "Text", cell: (d) => h("span", { class: text(d) ? "words" : "muted" }, text(d) ?? "(the corpus kept no text order)") },
  ];
  if (hasMeta) columns.push({ label: "Meta", cell: (d) => metaCell(d.meta) });
  columns.push({ label: "Largest topics", cell: (d) => largest(d.topic_proportions) });
  return h(
    "div",
    { "data-testid": "representative-documents" },
    h("h4", {}, "Representative documents"),
    h(
      "p",
      { class: "help" },
      `The ${answer.documents.length} of ${answer.documents_ranked} documents with the highest share of this topic (${source}). ${
        answer.documents.some((d) => d.text) ? "Text: the beginning of each document as uploaded." : "Text: the document's first words as the corpus kept them (after preprocessing); this corpus keeps no uploaded text."
      }`,
    ),
    table(columns, answer.documents),
  );
}

/** "This topic in other versions": a link per other version of the model (its lineage)
 *  that has topic `t` (ids are kept across edits and updates; an older version may have
 *  fewer topics), opening it on that topic; `null` when there is none. */
function otherVersions(lineage, model, t) {
  const others = (lineage?.versions || []).filter((v) => v.id !== model.id && t < v.num_topics);
  if (!others.length) return null;
  return h(
    "p",
    { class: "muted", "data-testid": "topic-versions" },
    `Topic ${t} in other versions of this model: `,
    others.map((v, i) => [i ? ", " : "", h("a", { href: `#/models/${v.id}?topic=${t}` }, `model ${shortId(v.id)}`), ` (${v.relation}, ${v.how || "fit"})`]),
  );
}

/** The topic section. `lineage`: a promise of the model's lineage (or of `null`), for
 *  the links to other versions; `topic`: the topic to select first. */
export function topicsSection(model, stops, { lineage = Promise.resolve(null), topic: first = null } = {}) {
  const state = { weight: 0.5, comparison: "siblings", selected: null, topics: [], measure: "c_npmi", coherence: new Map() };
  const measure = h("select", { id: "coherence-measure" }, COHERENCE_MEASURES.map(([value, text]) => h("option", { value }, text)));
  const slider = h("input", { type: "range", id: "frex-weight", min: 0, max: 1, step: 0.05, value: 0.5 });
  const shown = h("output", {}, "0.50");
  const comparison = h("select", {}, h("option", { value: "siblings" }, "siblings (natural set)"), h("option", { value: "all" }, "all topics"));
  const tableBox = h("div", { class: "scroll", tabindex: 0, role: "region", "aria-label": "Topic table", "data-testid": "topic-table" });
  const announce = h("span", { class: "muted", role: "status" });
  const detail = h("div", { "data-testid": "topic-detail" });
  const treeBox = h("div");
  const status = h("div", { role: "status" });
  const coherenceNote = h("p", { class: "help", "data-testid": "coherence-note" });
  let pending = null;

  const rank = () => `rank=frex&weight=${state.weight}&comparison=${state.comparison}`;

  async function loadTable() {
    const answer = await get(`/v1/models/${model.id}/topics?${rank()}&n=${TABLE_WORDS}`);
    state.topics = answer.topics;
    const hasLabels = answer.topics.some((t) => t.label !== null);
    const maxShare = Math.max(...answer.topics.map((t) => t.proportion), 1e-12);
    const cols = [{ label: "Topic", num: true, cell: (t) => h("button", { class: "link", "aria-label": `Show topic ${topicTitle(t)}`, onclick: () => select(t.id) }, String(t.id)) }];
    if (hasLabels) cols.push({ label: "Label", cell: (t) => t.label ?? "" });
    cols.push(
      { label: "Name", cell: (t) => (t.retired ? h("span", { class: "muted", "data-testid": "retired" }, `retired: ${t.retired}`) : nameCell(model, t, () => select(t.id))) },
      { label: "Share of tokens", cell: (t) => h("span", {}, bar(t.proportion / maxShare), " ", fmtPct(t.proportion)) },
      { label: "Stability", cell: (t) => stabilityCell(t.stability) },
      { label: `Top words by FREX (weight ${state.weight.toFixed(2)})`, cell: (t) => (t.retired ? h("span", { class: "muted" }, "no tokens") : h("span", { class: "words" }, t.words.map((w) => w.word).join(", "))) },
      { label: `Coherence (${state.measure})`, num: true, cell: (t) => h("span", { "data-coherence": t.id, class: "muted" }, "…") },
    );
    announce.textContent = `Words ranked by FREX at weight ${state.weight.toFixed(2)}.`;
    mount(tableBox, table(cols, answer.topics, { rowAttrs: (t) => ({ class: t.id === state.selected ? "selected" : null, "data-topic": t.id }) }));
    if (answer.topics.some((t) => t.parent !== null || t.children.length)) {
      const byId = new Map(answer.topics.map((t) => [t.id, t]));
      const name = (t) => t.label ?? String(t.id);
      const entries = answer.topics.map((t) => ({ label: name(t), parent: t.parent === null ? null : name(byId.get(t.parent)) }));
      const byName = new Map(answer.topics.map((t) => [name(t), t.id]));
      mount(treeBox, h("h3", {}, "Label tree"), h("p", { class: "help" }, "Pick a label to see its FREX words against its siblings."), labelTree(entries, (label) => select(byName.get(label), { reveal: true }), { open: entries.length <= 30 }));
    }
    fillCoherence();
  }

  /** The coherence column, filled when the service has computed it (cached per measure). */
  async function fillCoherence() {
    const m = state.measure;
    if (!state.coherence.has(m)) {
      const loading = get(`/v1/models/${model.id}/coherence?measure=${m}&top_n=10`);
      state.coherence.set(m, loading);
      loading.catch(() => state.coherence.delete(m));
    }
    let answer;
    try {
      answer = await state.coherence.get(m);
    } catch (err) {
      for (const cell of tableBox.querySelectorAll("[data-coherence]")) cell.textContent = "–";
      status.replaceChildren(problemBox(err));
      return;
    }
    if (m !== state.measure) return;
    const byId = new Map(answer.topics.map((t) => [t.id, t.coherence]));
    for (const cell of tableBox.querySelectorAll("[data-coherence]")) {
      cell.textContent = fmtNum(byId.get(Number(cell.dataset.coherence)), 3);
      cell.classList.remove("muted");
    }
    coherenceNote.textContent = `Coherence ${m} of each topic's top 10 words on the training corpus (mean ${fmtNum(answer.mean, 3)}).`;
  }

  async function loadDetail() {
    if (state.selected === null) return mount(detail, h("p", { class: "muted" }, "Pick a topic in the table (or on the map) to see its words."));
    const t = state.selected;
    if (!detail.firstChild || detail.dataset.topic !== String(t)) mount(detail, h("p", { class: "muted" }, `Loading topic ${t}…`));
    detail.dataset.topic = String(t);
    const sure = model.capabilities?.summary_intervals ? "&with=intervals" : "";
    const [top, all] = await Promise.all([
      get(`/v1/models/${model.id}/topics/${t}/frex?${rank()}&n=${DETAIL_WORDS}${sure}`),
      get(`/v1/models/${model.id}/topics/${t}/frex?${rank()}&n=${SCATTER_WORDS}`),
    ]);
    const topic = top.topic;
    const title = `Topic ${topicTitle(topic)}${topic.name ? ` “${topic.name}”` : ""}`;
    const scatterBox = h("div", { "data-testid": "frex-scatter" });
    // A topic some chain did not find is summarised over the other chains' draws only.
    const fewer = topic.interval_draws != null && top.intervals && topic.interval_draws < top.intervals.draws ? `, over ${topic.interval_draws} of ${top.intervals.draws} draws: the chains that found this topic` : "";
    const shareInterval = topic.proportion_interval ? ` (${Math.round(top.intervals.level * 100)} % interval ${fmtPct(topic.proportion_interval.lower)} – ${fmtPct(topic.proportion_interval.upper)}${fewer})` : "";
    mount(detail, h("h3", {}, title), h("p", { class: "muted" }, `Share ${fmtPct(topic.proportion)}${shareInterval}. ${all.words.length < SCATTER_WORDS ? `The scatter shows all ${all.words.length} words` : `The scatter shows the ${SCATTER_WORDS} words ranked highest (the API's default limit per request)`}; the top ${LABELLED} by FREX are labelled.`), h("div", { class: top.intervals ? "stack" : "cols" }, wordBars(top.words, top.intervals), scatterBox));
    lineage.then(
      (l) => {
        const skip = detail.dataset.topic !== String(t) || detail.querySelector("[data-testid=topic-versions]");
        const links = skip ? null : otherVersions(l, model, t);
        if (links) detail.querySelector("h3")?.after(links);
      },
      () => {},
    );
    const docsBox = h("div", { "aria-label": "Representative documents" }, h("p", { class: "muted" }, "Loading representative documents…"));
    detail.append(docsBox);
    representativeDocuments(model, topic).then((node) => mount(docsBox, node), (err) => mount(docsBox, problemBox(err)));
    const labelled = all.words.slice(0, LABELLED).map((w) => w.word);
    mount(scatterBox, figure(`Frequency–exclusivity of topic ${topic.id}`, frexScatter(all.words, labelled, { width: widthOf(scatterBox, 620) }), `frex-${shortId(model.id)}-topic-${topic.id}`));
  }

  async function select(id, { reveal = false } = {}) {
    state.selected = id;
    for (const tr of tableBox.querySelectorAll("tr[data-topic]")) {
      const chosen = Number(tr.dataset.topic) === id;
      tr.classList.toggle("selected", chosen);
      tr.classList.remove("flash");
      if (chosen && reveal) {
        tr.scrollIntoView({ block: "center", behavior: "smooth" });
        // Restart the highlight's animation on the row.
        void tr.offsetWidth;
        tr.classList.add("flash");
        tr.querySelector("button")?.focus({ preventScroll: true });
      }
    }
    try {
      await loadDetail();
    } catch (err) {
      mount(detail, problemBox(err));
    }
  }

  function rerank() {
    clearTimeout(pending);
    pending = setTimeout(async () => {
      try {
        await loadTable();
        await loadDetail();
      } catch (err) {
        status.replaceChildren(problemBox(err));
      }
    }, 150);
  }
  slider.addEventListener("input", () => {
    state.weight = Number(slider.value);
    shown.textContent = state.weight.toFixed(2);
    rerank();
  });
  measure.addEventListener("change", () => {
    state.measure = measure.value;
    rerank();
  });
  comparison.addEventListener("change", () => {
    state.comparison = comparison.value;
    rerank();
  });
  stops.push(() => clearTimeout(pending));

  const csv = h("button", { class: "secondary" }, "Download topic table (CSV)");
  csv.addEventListener("click", async () => {
    try {
      const blob = await request("GET", `/v1/models/${model.id}/topics${query({ rank: "frex", weight: state.weight, comparison: state.comparison, n: 20, format: "csv" })}`, undefined, { blob: true });
      download(`topics-${shortId(model.id)}.csv`, blob);
    } catch (err) {
      status.replaceChildren(problemBox(err));
    }
  });

  const sliderField = field("FREX weight on exclusivity", slider, "0 ranks words by frequency alone, 1 by exclusivity alone.");
  sliderField.querySelector("label").append(" ", shown);
  const section = h(
    "section",
    { class: "panel", "aria-labelledby": "topics-h" },
    h("h2", { id: "topics-h" }, "Topics"),
    h("div", { class: "toolbar" }, sliderField, field("Exclusivity against", comparison), field("Coherence measure", measure), csv, announce),
    coherenceNote,
    status,
    treeBox,
    tableBox,
    h("div", { class: "panel", "aria-label": "Selected topic" }, detail),
  );
  loadTable()
    .then(() => {
      const asked = state.topics.some((t) => t.id === first);
      if (state.topics.length) state.selected = asked ? first : state.topics[0].id;
      return select(state.selected, { reveal: asked });
    })
    .catch((err) => status.replaceChildren(problemBox(err)));
  section.selectTopic = select;
  return section;
}
