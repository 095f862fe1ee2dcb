// Sweep page: one sweep over the number of topics, polled every two seconds while its
// fits run. Its rows fill in as each fit finishes and is scored; four small multiples
// over K (held-out log-likelihood, coherence, exclusivity, stability) show where the
// measures agree; the suggested K is marked with the rule that chose it. Each row links
// to its model and job; the rows download as CSV and each plot as SVG or PNG. Also the
// form that starts a sweep from a corpus page, and the list of a corpus' sweeps.

import { get, post, request } from "../api.js";
import { h, mount, table, fmtNum, fmtDuration, fmtDate, problemBox, download, field } from "../ui.js";
import { figure, lines, widthOf } from "../charts.js";
import { statusBadge } from "./jobs.js";

const POLL_MS = 2000;

/** The four measures drawn over K: [row key, plot title, axis label]. */
const MEASURES = [
  ["heldout_loglik_per_token", "Held-out log-likelihood", "nats per token (higher is better)"],
  ["coherence_npmi", "Coherence (NPMI)", "mean NPMI of top 10 words"],
  ["exclusivity", "Exclusivity", "mean share of a top word in its topic"],
  ["stability", "Stability across chains", "mean similarity 1 − L1/2"],
];

/** Each plotted score's standard error (over held-out documents, or over topics). */
const SE_OF = { heldout_loglik_per_token: "heldout_se", coherence_npmi: "coherence_npmi_se", exclusivity: "exclusivity_se", stability: "stability_se" };

/** The rows of the swept family (the HDP row apart). */
const sweptRows = (sweep) => sweep.rows.filter((r) => !r.inferred_topics);

function rowsTable(sweep) {
  const cols = [
    { label: "K", num: true, cell: (r) => (r.inferred_topics ? `${r.topics ?? "…"} (HDP, inferred)` : r.topics === sweep.suggested_topics ? h("strong", {}, `${r.topics} (suggested)`) : String(r.topics)) },
    { label: "Status", cell: (r) => statusBadge(r.status) },
    { label: "Held-out per token", num: true, cell: (r) => fmtNum(r.heldout_loglik_per_token, 4) },
    { label: "Coherence (NPMI)", num: true, cell: (r) => fmtNum(r.coherence_npmi) },
    { label: "Exclusivity", num: true, cell: (r) => fmtNum(r.exclusivity) },
    { label: "Stability", num: true, cell: (r) => (r.stability === null ? "– (one chain)" : `${fmtNum(r.stability)}${r.unstable_topics ? `, ${r.unstable_topics} not in every chain` : ""}`) },
    { label: "Residual dispersion", num: true, cell: (r) => fmtNum(r.residual_dispersion) },
    { label: "Worst R̂", num: true, cell: (r) => fmtNum(r.rhat_max) },
    { label: "Fit time", num: true, cell: (r) => fmtDuration(r.fit_s) },
    { label: "Model", cell: (r) => (r.model_id ? h("a", { href: `#/models/${r.model_id}` }, "topics") : h("a", { href: `#/jobs/${r.job_id}` }, "job")) },
    {
      label: "Against the K before",
      cell: (r) => {
        const swept = sweptRows(sweep);
        const before = swept[swept.indexOf(r) - 1];
        return r.model_id && before?.model_id ? h("a", { href: `#/models/${before.model_id}/compare/${r.model_id}`, "data-testid": "compare-k" }, `compare K = ${before.topics} → ${r.topics}`) : "–";
      },
    },
  ];
  return table(cols, sweep.rows, {
    caption: "One row per fit; scores appear once a fit has succeeded and been scored.",
    rowAttrs: (r) => ({ "data-k": r.topics, "data-suggested": !r.inferred_topics && r.topics === sweep.suggested_topics ? "true" : null }),
  });
}

/** The four small multiples over K, the suggested K marked on each. */
function plots(sweep, width) {
  const rows = sweptRows(sweep);
  const cell = Math.max(260, Math.floor((width - 24) / 2));
  const figures = MEASURES.map(([key, title, axis]) => {
    const se = (r) => r[SE_OF[key]];
    const points = rows
      .filter((r) => r[key] !== null && r[key] !== undefined)
      .map((r) => ({ x: r.topics, y: r[key], lower: se(r) == null ? null : r[key] - se(r), upper: se(r) == null ? null : r[key] + se(r) }));
    if (!points.length) return h("p", { class: "muted" }, `${title}: no row has a value yet${key === "stability" ? " (stability needs two chains or more)" : ""}.`);
    const plot = lines(points, { width: cell, x: "topics (K)", y: `${axis} (± 1 SE)`, height: 220 });
    return figure(`${title} over K`, plot, `sweep-${sweep.id.slice(0, 8)}-${key}`);
  });
  return h("div", { class: "cols", "data-testid": "sweep-plots" }, figures);
}

function suggestionText(sweep) {
  const s = sweep.suggestion;
  if (sweep.suggested_topics === null) return h("p", { class: "muted" }, "No suggestion yet: it needs a fit with a held-out score.");
  const gap = s.best_topics === null || s.best_topics === sweep.suggested_topics ? "" : ` (K = ${s.best_topics} has the best held-out score; K = ${sweep.suggested_topics} trails it by ${fmtNum(s.gap_per_token, 4)} nats a token, standard error ${fmtNum(s.standard_error, 4)})`;
  const cautions = (s.cautions || []).map((c) => h("li", {}, c));
  return h(
    "div",
    {},
    h("p", { "data-testid": "sweep-suggestion" }, h("strong", {}, `Suggested K: ${sweep.suggested_topics}`), gap, ". ", h("span", { class: "help" }, `Rule: ${s.rule}.`)),
    cautions.length ? h("div", { class: "caution", role: "note", "data-testid": "sweep-cautions" }, h("strong", {}, "Caution: "), h("ul", {}, cautions)) : null,
  );
}

export async function render(root, [id]) {
  const status = h("div", { role: "status" });
  const body = h("div");
  let timer = null;
  let stopped = false;
  const cancel = h("button", { class: "secondary" }, "Cancel the sweep");
  cancel.onclick = async () => {
    try {
      await request("DELETE", `/v1/sweeps/${encodeURIComponent(id)}`);
      tick();
    } catch (err) {
      status.replaceChildren(problemBox(err));
    }
  };
  const csv = h("button", { class: "secondary" }, "Download the rows as CSV");
  csv.onclick = async () => download(`sweep-${id.slice(0, 8)}.csv`, await request("GET", `/v1/sweeps/${encodeURIComponent(id)}?format=csv`, undefined, { blob: true }));

  async function tick() {
    const sweep = await get(`/v1/sweeps/${encodeURIComponent(id)}`);
    if (stopped) return;
    const active = sweep.status === "queued" || sweep.status === "running";
    cancel.hidden = !active;
    const facts = [
      ["Status", statusBadge(sweep.status)],
      ["Family", sweep.model],
      ["Corpus", h("a", { href: `#/corpora/${sweep.corpus_id}` }, sweep.corpus_id)],
      ["Chains per fit", sweep.chains ?? "family default"],
      ["Held out", `${fmtNum(100 * sweep.heldout_fraction)} % of documents, the same for every K`],
      ["Seed", String(sweep.seed)],
      ["Created", fmtDate(sweep.created_at)],
    ];
    mount(
      body,
      h("dl", { class: "stats" }, facts.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
      suggestionText(sweep),
      h("div", { class: "scroll", tabindex: 0, role: "region", "aria-label": "Sweep rows", "data-testid": "sweep-rows" }, rowsTable(sweep)),
      plots(sweep, widthOf(body, 1100)),
    );
    if (active) timer = setTimeout(() => tick().catch((err) => status.replaceChildren(problemBox(err))), POLL_MS);
  }

  mount(root, h("h1", {}, "Sweep over K"), h("p", {}, h("a", { href: "#/jobs" }, "All jobs"), " · ", cancel, " ", csv), status, body);
  await tick();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

/** Parse "5, 10, 20" into numbers (an error naming the bad entry). */
function parseTopics(text) {
  const parts = text.split(/[\s,]+/).filter(Boolean);
  const ks = parts.map(Number);
  const bad = parts.find((p, i) => !Number.isInteger(ks[i]) || ks[i] < 1);
  if (bad !== undefined) throw new Error(`"${bad}" is not a number of topics`);
  return ks;
}

/** The corpus page's panel: start a sweep, and list the corpus' sweeps. */
export function sweepPanel(corpus) {
  const model = h("select", { id: "sweep-model" }, ["lda", "pcm", "dcnt", "scnt"].map((m) => h("option", { value: m }, m)));
  const topics = h("input", { id: "sweep-topics", value: "5, 10, 20, 40", "aria-describedby": "sweep-topics-help" });
  const chains = h("input", { id: "sweep-chains", type: "number", min: 1, max: 8, value: 2 });
  const iterations = h("input", { id: "sweep-iterations", type: "number", min: 1, value: 500 });
  const heldout = h("input", { id: "sweep-heldout", type: "number", min: 0.01, max: 0.5, step: 0.01, value: 0.1 });
  const hdp = h("input", { id: "sweep-hdp", type: "checkbox" });
  const out = h("div", { role: "status" });
  const list = h("div", { "data-testid": "corpus-sweeps" });
  const start = h("button", { type: "submit" }, "Start the sweep");
  const form = h(
    "form",
    { class: "grid" },
    field("Family", model),
    field("Numbers of topics (K)", topics, h("span", { id: "sweep-topics-help" }, "Comma-separated; one fit each.")),
    field("Chains per fit", chains),
    field("Iterations", iterations),
    field("Held-out share", heldout),
    field("Add an HDP row (infers K)", hdp),
    h("div", {}, start),
  );
  form.onsubmit = async (event) => {
    event.preventDefault();
    try {
      const body = { corpus_id: corpus.id, model: model.value, topics: parseTopics(topics.value), chains: Number(chains.value), params: { iterations: Number(iterations.value) }, heldout_fraction: Number(heldout.value), include_hdp: hdp.checked };
      const sweep = await post("/v1/sweeps", body);
      location.hash = `#/sweeps/${sweep.id}`;
    } catch (err) {
      out.replaceChildren(problemBox(err));
    }
  };
  get(`/v1/sweeps?corpus_id=${encodeURIComponent(corpus.id)}`).then(
    (answer) =>
      mount(
        list,
        answer.sweeps.length
          ? table(
              [
                { label: "Sweep", cell: (s) => h("a", { href: `#/sweeps/${s.id}` }, `${s.model}, K = ${s.topics.join(", ")}`) },
                { label: "Status", cell: (s) => statusBadge(s.status) },
                { label: "Created", cell: (s) => fmtDate(s.created_at) },
              ],
              answer.sweeps,
            )
          : h("p", { class: "muted" }, "No sweep on this corpus yet."),
      ),
    (err) => list.replaceChildren(problemBox(err)),
  );
  return h(
    "section",
    { class: "panel", "aria-labelledby": "sweep-h", "data-testid": "sweep-panel" },
    h("h2", { id: "sweep-h" }, "How many topics? Sweep over K"),
    h("p", { class: "help" }, "Fits the family once per K on the same held-out split, then scores each fit: held-out likelihood, coherence, exclusivity, stability across chains, residual dispersion."),
    form,
    out,
    list,
  );
}
