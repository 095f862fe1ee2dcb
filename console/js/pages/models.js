// Models page: fitted models, newest first, a page at a time, each linking to its
// explorer, with what a reader compares models by: family, K, the corpus (by name),
// chains, whether the fit converged, and the covariates it was fitted with.

import { get, query } from "../api.js";
import { h, mount, table, pager, fmtInt, fmtDate, shortId } from "../ui.js";
import { convergenceFlag } from "./convergence.js";
import { fittedCovariates } from "./effects.js";

const PAGE = 25;

/** Names of the corpora and graphs by id (one listing each, read once per visit). */
async function inputNames() {
  const [corpora, graphs] = await Promise.all([get(`/v1/corpora${query({ limit: 500 })}`), get(`/v1/graphs${query({ limit: 500 })}`)]);
  return new Map([...corpora.corpora, ...graphs.graphs].map((x) => [x.id, x.name]));
}

/** The model's input as a link named by the corpus or graph. */
function inputCell(m, names) {
  if (m.corpus_id) return h("a", { href: `#/corpora/${m.corpus_id}` }, names.get(m.corpus_id) ?? `corpus ${shortId(m.corpus_id)}`);
  return `graph ${names.get(m.graph_id) ?? shortId(m.graph_id)}`;
}

export async function render(root) {
  const listed = h("div");
  const names = await inputNames().catch(() => new Map());
  async function load(offset) {
    const page = await get(`/v1/models${query({ offset, limit: PAGE })}`);
    mount(
      listed,
      page.models.length
        ? table(
            [
              { label: "Model", cell: (m) => h("a", { href: `#/models/${m.id}` }, shortId(m.id)) },
              { label: "Family", cell: (m) => m.model },
              { label: "K", num: true, cell: (m) => fmtInt(m.num_topics) },
              { label: "Fitted on", cell: (m) => inputCell(m, names) },
              { label: "Chains", num: true, cell: (m) => fmtInt(m.diagnostics?.convergence?.chains ?? m.params?.chains ?? 1) },
              { label: "Convergence", cell: (m) => convergenceFlag(m.diagnostics?.convergence) },
              { label: "Covariates", cell: (m) => fittedCovariates(m).join(", ") || h("span", { class: "muted" }, "none") },
              { label: "Created", cell: (m) => fmtDate(m.created_at) },
            ],
            page.models,
            { caption: "Convergence: the largest split-R̂ of the fit's monitored quantities (– where the family reports none)." },
          )
        : h("p", { class: "muted" }, "No model yet: ", h("a", { href: "#/fit" }, "start a fit"), "."),
      pager(page.total, page.offset, page.limit, load),
    );
  }
  mount(root, h("h1", {}, "Models"), h("section", { class: "panel", "aria-label": "Model list" }, listed));
  await load(0);
}
