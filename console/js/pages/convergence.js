// Convergence panel: a fit's split-R̂ and bulk/tail effective sample sizes (the
// report a model stores in `diagnostics.convergence`), shown on the job page and the
// model page, with a warning when R̂ exceeds the threshold. Pooled R̂ compares the
// chains; with one chain the chain's two halves are compared.

import { h, fmtNum, fmtInt, table } from "../ui.js";
import { figure, traceLines, widthOf } from "../charts.js";

/** Whether `report` flags the fit: an R̂ above its threshold. */
export const notConverged = (report) => Boolean(report && report.max_rhat !== null && report.max_rhat !== undefined && report.max_rhat > report.rhat_threshold);

/**
 * A list's convergence cell: "R̂ 1.004" when every R̂ is within the threshold, a marked
 * "R̂ 3.05 ⚠" when one is not, "–" for a fit without a report.
 */
export function convergenceFlag(report) {
  if (!report || report.max_rhat === null || report.max_rhat === undefined) return h("span", { class: "muted" }, "–");
  const text = `R̂ ${fmtNum(report.max_rhat, 3)}`;
  return notConverged(report)
    ? h("strong", { class: "error", title: report.warning || `R̂ above ${report.rhat_threshold}`, "data-testid": "not-converged" }, `${text} (not converged)`)
    : h("span", { class: "ok", title: `every R̂ at most ${report.rhat_threshold}` }, text);
}

/** A topic counts as unmatched when, in some later chain, the topic matched to it has a
 *  word distribution whose L1 distance from its own exceeds this: the two share less
 *  than half their mass (total variation above 0.5). */
const UNMATCHED_L1 = 1.0;

/** The ids of the topics some later chain did not match (from the model's
 *  `diagnostics.chain_alignment`; empty for one chain). */
export function unmatchedTopics(model) {
  const alignments = model.diagnostics?.chain_alignment;
  const out = new Set();
  if (!Array.isArray(alignments)) return out;
  for (const a of alignments) (a.distances || []).forEach((d, t) => d > UNMATCHED_L1 && out.add(t));
  return out;
}

/** A caution above results read from a fit that did not converge (null when it did). */
export function convergenceCaution(model, what) {
  const report = model.diagnostics?.convergence;
  if (!notConverged(report)) return null;
  return h(
    "p",
    { class: "problem", role: "note", "data-testid": "convergence-caution" },
    h("strong", {}, "Caution: "),
    `the fit behind ${what} did not converge, so ${what} may change with the seed. ${report.warning || `The largest R̂ is ${fmtNum(report.max_rhat, 3)}, above ${report.rhat_threshold}.`} `,
    h("a", { href: `#/jobs/${model.job_id}` }, "See the traces"),
    ".",
  );
}

/** The report's scalar quantities and, as one row, the sorted topic shares. */
function rows(report) {
  const out = report.quantities.map((q) => ({ name: q.name, rhat: q.rhat, bulk: q.pooled.ess_bulk, tail: q.pooled.ess_tail, mcse: q.pooled.mcse_mean, perChain: q.per_chain }));
  const s = report.sorted_topic_shares;
  if (s && s.count) out.push({ name: `topic shares, sorted (${fmtInt(s.count)}; worst)`, rhat: s.max_rhat, bulk: s.min_ess_bulk, tail: s.min_ess_tail, mcse: null, perChain: [] });
  return out;
}

/** A cell for an R̂, marked when above the threshold. */
function rhatCell(x, threshold) {
  if (x === null || x === undefined) return "–";
  return x > threshold ? h("strong", { class: "error" }, fmtNum(x, 4)) : fmtNum(x, 4);
}

/** Flagged quantities drawn as trace plots of their kept draws, one line per chain. */
function flaggedTraces(report) {
  const threshold = report.rhat_threshold;
  const rhatOf = new Map(report.quantities.map((q) => [q.name, q.rhat]));
  const rhat = (t) => t.rhat ?? rhatOf.get(t.name);
  const flagged = (report.traces || []).filter((t) => rhat(t) > threshold);
  const shares = report.sorted_topic_shares;
  const parts = flagged.map((t) => {
    const rows = t.chains.flatMap((draws, c) => draws.map((y, i) => ({ x: i + 1, y, series: `chain ${c}` })));
    const plot = traceLines(rows, { width: widthOf(document.querySelector("main"), 760), x: "kept draw (after burn-in)", y: t.name, series: t.chains.length > 1 });
    return figure(`Trace of ${t.name} (R̂ ${fmtNum(rhat(t), 3)})`, plot, `trace-${t.name.replace(/\W+/g, "-")}`);
  });
  const drawn = new Set(flagged.map((t) => t.name));
  if (shares && shares.max_rhat > threshold) {
    const worst = (shares.quantities || []).filter((q) => q.rhat > threshold && !drawn.has(q.name)).map((q) => `${q.name} (R̂ ${fmtNum(q.rhat, 3)})`);
    parts.push(
      h(
        "p",
        { class: "help", "data-testid": "flagged-shares" },
        `Flagged topic shares${worst.length ? ` not drawn above: ${worst.join(", ")}` : ` (largest R̂ ${fmtNum(shares.max_rhat, 3)})`}. A model keeps the draws of its few worst shares only; the job's log-likelihood trace shows where the chains part.`,
      ),
    );
  }
  return parts.length ? h("div", { "data-testid": "flagged-traces" }, h("h3", {}, "What is flagged"), parts) : null;
}

/** The panel for `report` (null: nothing to show). */
export function convergencePanel(report) {
  if (!report) return null;
  const threshold = report.rhat_threshold;
  const several = report.chains > 1;
  const columns = [
    { label: "Quantity", cell: (r) => r.name },
    { label: several ? "R̂ (chains)" : "R̂ (halves)", num: true, cell: (r) => rhatCell(r.rhat, threshold) },
    { label: "Bulk ESS", num: true, cell: (r) => (r.bulk === null ? "–" : fmtNum(r.bulk, 0)) },
    { label: "Tail ESS", num: true, cell: (r) => (r.tail === null ? "–" : fmtNum(r.tail, 0)) },
    { label: "MCSE of the mean", num: true, cell: (r) => (r.mcse === null ? "–" : fmtNum(r.mcse, 3)) },
  ];
  if (several) columns.push({ label: "R̂ per chain (halves)", cell: (r) => r.perChain.map((d) => (d.rhat === null ? "–" : fmtNum(d.rhat, 3))).join(", ") });
  const verdict = report.warning
    ? h("p", { class: "error", role: "alert", "data-testid": "convergence-warning" }, report.warning)
    : h("p", { class: "muted", "data-testid": "convergence-ok" }, report.max_rhat === null ? "Too few kept draws for R̂." : `Every R̂ is at most ${threshold} (largest ${fmtNum(report.max_rhat, 4)}).`);
  return h(
    "section",
    { class: "panel", "aria-label": "Convergence", "data-testid": "convergence" },
    h("h2", {}, "Convergence"),
    h("p", {}, `${fmtInt(report.chains)} chain${several ? "s" : ""}, ${fmtInt(report.draws_per_chain)} kept draws each. Split-R̂ and effective sample sizes as Vehtari et al. (2021) and ArviZ define them.`),
    verdict,
    table(columns, rows(report), { caption: "Rank-normalised split-R̂ and effective sample sizes" }),
    flaggedTraces(report),
  );
}
