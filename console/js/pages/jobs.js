// Jobs page: fits and evaluation jobs, newest first, a page at a time, filtered by
// status; refreshed every few seconds while any listed job is queued or running.

import { get, query } from "../api.js";
import { h, mount, table, pager, field, fmtDate, fmtPct, shortId } from "../ui.js";
import { convergenceFlag } from "./convergence.js";

const PAGE = 25;
const STATUSES = ["", "queued", "running", "succeeded", "failed", "cancelled"];

export const statusBadge = (s) => h("span", { class: `badge ${s}` }, s);

export function progressOf(job) {
  const p = job.progress || {};
  return p.total ? Math.min(1, p.iteration / p.total) : job.status === "succeeded" ? 1 : 0;
}

/** Each fitted model's convergence report, read once (a model never changes). */
const convergenceOf = new Map();

async function readConvergence(jobs) {
  const wanted = jobs.filter((j) => j.kind === "fit" && j.model_id && !convergenceOf.has(j.model_id));
  await Promise.all(
    wanted.map((j) =>
      get(`/v1/models/${j.model_id}`).then(
        (m) => convergenceOf.set(j.model_id, m.diagnostics?.convergence ?? null),
        () => convergenceOf.set(j.model_id, null),
      ),
    ),
  );
}

export async function render(root, _params, q) {
  const status = h("select", {}, STATUSES.map((s) => h("option", { value: s, selected: s === (q.get("status") || "") }, s || "all")));
  const listed = h("div");
  let offset = 0;
  let timer = null;
  async function load() {
    clearTimeout(timer);
    const page = await get(`/v1/jobs${query({ status: status.value, offset, limit: PAGE })}`);
    await readConvergence(page.jobs);
    mount(
      listed,
      page.jobs.length
        ? table(
            [
              { label: "Job", cell: (j) => h("a", { href: `#/jobs/${j.id}` }, shortId(j.id)) },
              { label: "Kind", cell: (j) => j.kind },
              { label: "Model", cell: (j) => j.model },
              { label: "Status", cell: (j) => statusBadge(j.status) },
              { label: "Progress", cell: (j) => h("span", {}, h("progress", { max: 1, value: progressOf(j), "aria-label": `Progress of job ${shortId(j.id)}` }), " ", fmtPct(progressOf(j), 0)) },
              { label: "Convergence", cell: (j) => (j.model_id && j.kind === "fit" ? convergenceFlag(convergenceOf.get(j.model_id)) : "") },
              { label: "Created", cell: (j) => fmtDate(j.created_at) },
              { label: "Result", cell: (j) => (j.model_id ? h("a", { href: `#/models/${j.model_id}` }, "Explore model") : j.source_model_id ? h("a", { href: `#/models/${j.source_model_id}` }, "Source model") : "") },
            ],
            page.jobs,
          )
        : h("p", { class: "muted" }, "No job with this status."),
      pager(page.total, page.offset, page.limit, (o) => {
        offset = o;
        load();
      }),
    );
    if (page.jobs.some((j) => j.status === "queued" || j.status === "running")) timer = setTimeout(load, 3000);
  }
  status.addEventListener("change", () => {
    offset = 0;
    history.replaceState(null, "", `#/jobs${query({ status: status.value })}`);
    load();
  });
  mount(root, h("h1", {}, "Jobs"), h("div", { class: "toolbar" }, field("Status", status), h("a", { href: "#/fit" }, "Start a new fit")), h("section", { class: "panel", "aria-label": "Job list" }, listed));
  await load();
  return () => clearTimeout(timer);
}
