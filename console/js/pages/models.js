// Models page: fitted models, newest first, a page at a time, each linking to its
// explorer.

import { get, query } from "../api.js";
import { h, mount, table, pager, fmtInt, fmtDate, shortId } from "../ui.js";

const PAGE = 25;

export async function render(root) {
  const listed = h("div");
  async function load(offset) {
    const page = await get(`/v1/models${query({ offset, limit: PAGE })}`);
    mount(
      listed,
      page.models.length
        ? table(
            [
              { label: "Model", cell: (m) => h("a", { href: `#/models/${m.id}` }, shortId(m.id)) },
              { label: "Family", cell: (m) => m.model },
              { label: "Topics", num: true, cell: (m) => fmtInt(m.num_topics) },
              { label: "Fitted on", cell: (m) => (m.corpus_id ? h("a", { href: `#/corpora/${m.corpus_id}` }, `corpus ${shortId(m.corpus_id)}`) : `graph ${shortId(m.graph_id)}`) },
              { label: "Job", cell: (m) => h("a", { href: `#/jobs/${m.job_id}` }, shortId(m.job_id)) },
              { label: "Created", cell: (m) => fmtDate(m.created_at) },
            ],
            page.models,
          )
        : h("p", { class: "muted" }, "No model yet: ", h("a", { href: "#/fit" }, "start a fit"), "."),
      pager(page.total, page.offset, page.limit, load),
    );
  }
  mount(root, h("h1", {}, "Models"), h("section", { class: "panel", "aria-label": "Model list" }, listed));
  await load(0);
}
