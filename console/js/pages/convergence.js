// Convergence panel: a fit's split-R̂ and bulk/tail effective sample sizes (the
// report a model stores in `diagnostics.convergence`), shown on the job page and the
// model page, with a warning when R̂ exceeds the threshold. Pooled R̂ compares the
// chains; with one chain the chain's two halves are compared.

import { h, fmtNum, fmtInt, table } from "../ui.js";

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
  );
}
