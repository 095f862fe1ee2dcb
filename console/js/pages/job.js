// Job page: live progress of one job (polled every second while it is queued or
// running): a progress bar, ETA and the stage the fit is in, the log-likelihood trace
// with the burn-in marked and the acceptance rates the sampler reported (both stored
// with the job, so a reload draws them again); a cancel button; the model or the
// result when done, with the fitted model's convergence report (R̂ and ESS), its
// warning and the traces of the quantities it flags.

import { get, post } from "../api.js";
import { h, mount, fmtDate, fmtDuration, fmtNum, fmtInt, problemBox, table } from "../ui.js";
import { figure, lines, traceLines, widthOf } from "../charts.js";
import { statusBadge, progressOf } from "./jobs.js";
import { scoresTable } from "./model_extras.js";
import { convergencePanel } from "./convergence.js";

const POLL_MS = 1000;

/** Corpus names by id, each read once per page load (the summary is redrawn every poll). */
const corpusNames = new Map();

/** A link to the corpus, named once its name is read (its id until then, or if unnamed). */
function corpusLink(id) {
  const link = h("a", { href: `#/corpora/${id}` }, corpusNames.get(id) ?? id);
  if (!corpusNames.has(id)) {
    corpusNames.set(id, id);
    get(`/v1/corpora/${id}`).then(
      (c) => {
        corpusNames.set(id, c.name || id);
        link.textContent = c.name || id;
      },
      () => {},
    );
  }
  return link;
}

/** "refit stage, scan 48 of 60 (108 of 120 in all)": where the fit is, by stage. */
export function iterationText(p) {
  const overall = p.total ? `${fmtInt(p.iteration)} of ${fmtInt(p.total)}` : fmtInt(p.iteration);
  const s = p.stage;
  if (!s || !s.name) return overall;
  return `${s.name}, iteration ${fmtInt(s.iteration)} of ${fmtInt(s.of)} (${overall} in all)`;
}

function summary(job) {
  const p = job.progress || {};
  const rows = [
    ["Status", statusBadge(job.status)],
    ["Kind", job.kind],
    ["Model family", job.model],
    ["Iteration", iterationText(p)],
    ["Elapsed", fmtDuration(p.elapsed_s)],
    ["ETA", job.status === "running" ? fmtDuration(p.eta_s) : "–"],
    ["Log-likelihood per token", fmtNum(p.loglik_per_token, 4)],
    ["Seed", String(job.seed)],
    ["Attempts", fmtInt(job.attempts)],
    ["Created", fmtDate(job.created_at)],
    ["Started", fmtDate(job.started_at)],
    ["Finished", fmtDate(job.finished_at)],
  ];
  if (job.corpus_id) rows.push(["Corpus", corpusLink(job.corpus_id)]);
  if (job.model_id) rows.push(["Model", h("a", { href: `#/models/${job.model_id}` }, "Explore the fitted model")]);
  if (job.source_model_id) rows.push([job.update ? "Updates model" : job.edit ? "Edits model" : "Evaluates model", h("a", { href: `#/models/${job.source_model_id}` }, job.source_model_id)]);
  if (job.update) rows.push(["New documents", h("span", {}, corpusLink(job.update.corpus_id), job.update.new_topics?.length ? `, new topics ${job.update.new_topics.join(", ")}` : "")]);
  if (job.error) rows.push(["Error", h("span", { class: "error" }, job.error)]);
  return h("dl", { class: "stats" }, rows.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

function result(job) {
  if (!job.result) return null;
  const r = job.result;
  if (r.perplexity !== undefined) {
    // A document with no known word is not scored: its log-likelihood is null, never 0.
    const ll = (d) => (d.log_likelihood === null ? "—, no known word" : fmtNum(d.log_likelihood, 2));
    const docs = r.documents.slice(0, 200);
    const scored = r.scored_documents ?? r.documents.filter((d) => d.log_likelihood !== null).length;
    return h(
      "section",
      { class: "panel" },
      h("h2", {}, "Held-out likelihood"),
      h("dl", { class: "stats" }, [
        [h("dt", {}, "Estimator"), h("dd", {}, r.estimator)],
        [h("dt", {}, "Documents scored"), h("dd", {}, `${fmtInt(scored)} of ${fmtInt(r.documents.length)}`)],
        [h("dt", {}, "Tokens"), h("dd", {}, fmtInt(r.tokens))],
        [h("dt", {}, "Unknown tokens"), h("dd", {}, fmtInt(r.unknown_tokens ?? 0))],
        [h("dt", {}, "Log-likelihood"), h("dd", {}, scored ? fmtNum(r.total_log_likelihood, 2) : "—, no known word")],
        [h("dt", {}, "Per token"), h("dd", {}, fmtNum(r.log_likelihood_per_token, 4))],
        [h("dt", {}, "Perplexity"), h("dd", {}, fmtNum(r.perplexity, 2))],
      ]),
      (r.warnings || []).length ? h("ul", { class: "error", "data-testid": "heldout-warnings" }, r.warnings.map((w) => h("li", {}, `${w.field} (${w.id}): ${w.detail}`))) : null,
      table(
        [
          { label: "Document", cell: (d) => d.id },
          { label: "Log-likelihood", num: true, cell: ll },
          { label: "Tokens", num: true, cell: (d) => fmtInt(d.tokens) },
          { label: "Unknown tokens", num: true, cell: (d) => fmtInt(d.unknown_tokens ?? 0) },
        ],
        docs,
        { caption: r.documents.length > docs.length ? `First ${docs.length} of ${fmtInt(r.documents.length)} documents` : "Documents" },
      ),
    );
  }
  if (r.evaluation) {
    return h("section", { class: "panel" }, h("h2", {}, "Label evaluation"), scoresTable(r.evaluation), h("p", {}, h("a", { href: `#/models/${r.model_id}` }, "Per-label scores in the model explorer")));
  }
  return h("section", { class: "panel" }, h("h2", {}, "Result"), h("pre", {}, JSON.stringify(r, null, 2)));
}

export async function render(root, [id]) {
  const head = h("div", { "data-testid": "job-summary" });
  const traceBox = h("div");
  const rateBox = h("div");
  const resultBox = h("div");
  const convergenceBox = h("div");
  const status = h("div", { role: "status" });
  const progress = h("progress", { id: "job-progress", max: 1, value: 0, "aria-label": "Job progress" });
  const cancel = h("button", { class: "secondary" }, "Cancel job");
  let timer = null;
  let stopped = false;
  cancel.addEventListener("click", async () => {
    cancel.disabled = true;
    try {
      await post(`/v1/jobs/${id}/cancel`);
      tick();
    } catch (err) {
      status.replaceChildren(problemBox(err));
      cancel.disabled = false;
    }
  });
  mount(
    root,
    h("h1", {}, `Job ${id.slice(0, 8)}`),
    h("section", { class: "panel" }, progress, h("div", { class: "actions" }, cancel, status), head),
    h("section", { class: "panel", "aria-label": "Traces" }, traceBox, rateBox),
    convergenceBox,
    resultBox,
  );

  async function tick() {
    clearTimeout(timer);
    const [job, trace] = await Promise.all([get(`/v1/jobs/${id}`), get(`/v1/jobs/${id}/trace`)]);
    if (stopped) return;
    const active = job.status === "queued" || job.status === "running";
    progress.value = progressOf(job);
    cancel.hidden = !active;
    mount(head, summary(job));
    const p = job.progress || {};
    // A fit of several chains runs them one after another: each chain's trace is drawn
    // over its own iterations, one line per chain (the classic trace plot).
    const chains = Number(job.params?.chains) || 1;
    const iterations = Number(job.params?.iterations) || 0;
    const perChain = job.kind === "fit" && chains > 1 && iterations > 0 && (!p.total || p.total <= chains * iterations) ? iterations : null;
    const place = (it) => (perChain ? { x: it - Math.floor((it - 1) / perChain) * perChain, series: `chain ${Math.floor((it - 1) / perChain)}` } : { x: it });
    const points = trace.points.filter((q) => q.loglik_per_token !== null && q.loglik_per_token !== undefined).map((q) => ({ ...place(q.iteration), y: q.loglik_per_token }));
    const burnIn = job.kind === "fit" && Number.isFinite(Number(job.params?.burn_in)) ? Number(job.params.burn_in) : null;
    const w = widthOf(traceBox);
    const xLabel = perChain ? "iteration of its chain" : "iteration";
    const plot = () => traceLines(points, { width: w, x: xLabel, y: "log-likelihood / token", series: Boolean(perChain), burnIn });
    mount(
      traceBox,
      points.length ? figure(perChain ? `Log-likelihood per token, ${chains} chains` : "Log-likelihood per token", plot(), `trace-${id.slice(0, 8)}`) : job.kind === "fit" ? h("p", { class: "muted" }, active ? "No log-likelihood yet." : "No log-likelihood was recorded.") : null,
      points.length && burnIn ? h("p", { class: "help" }, `Shaded: the burn-in (${fmtInt(burnIn)} iterations${perChain ? " of each chain" : ""}), discarded before posterior means and diagnostics.`) : null,
    );
    // Acceptance rates as stored with each trace point (at the log-likelihood's
    // cadence), so they survive a reload.
    const rates = trace.points.flatMap((q) => Object.entries(q.rates || {}).map(([k, v]) => ({ ...place(q.iteration), y: v, series: perChain ? `${k}, ${place(q.iteration).series}` : k })));
    const latest = Object.entries(p).filter(([k, v]) => typeof v === "number" && /_acceptance$/.test(k));
    mount(
      rateBox,
      rates.length > 1 ? figure("Acceptance rates", lines(rates, { width: w, x: xLabel, y: "rate", series: true }), `acceptance-${id.slice(0, 8)}`) : null,
      latest.length ? h("p", { class: "muted" }, `Latest acceptance rates: ${latest.map(([k, v]) => `${k} ${fmtNum(v)}`).join(", ")}.`) : null,
      h("details", {}, h("summary", {}, "Every progress field"), h("pre", {}, JSON.stringify(p, null, 2))),
    );
    mount(convergenceBox, convergencePanel(job.convergence));
    mount(resultBox, result(job));
    if (active) timer = setTimeout(() => tick().catch((err) => status.replaceChildren(problemBox(err))), POLL_MS);
  }
  await tick();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
