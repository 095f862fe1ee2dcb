// Graphs page: stored graphs a page at a time, and the upload of a graph file (a JSON
// `GraphUpload`: nodes and edges) with a progress bar.

import { get, upload, query } from "../api.js";
import { h, mount, table, pager, field, fmtInt, fmtDate, problemBox } from "../ui.js";

const PAGE = 25;

function list(offset, into) {
  return get(`/v1/graphs${query({ offset, limit: PAGE })}`).then((page) =>
    mount(
      into,
      page.graphs.length
        ? table(
            [
              { label: "Name", cell: (g) => g.name },
              { label: "Nodes", num: true, cell: (g) => fmtInt(g.num_nodes) },
              { label: "Edges", num: true, cell: (g) => fmtInt(g.num_edges) },
              { label: "Directed", cell: (g) => (g.directed ? "yes" : "no") },
              { label: "Dropped (self-loops / duplicates)", cell: (g) => `${g.self_loops_dropped} / ${g.duplicate_edges_dropped}` },
              { label: "Created", cell: (g) => fmtDate(g.created_at) },
              { label: "Fit", cell: (g) => h("a", { href: `#/fit?graph=${g.id}`, "aria-label": `New fit on ${g.name}` }, "New fit") },
            ],
            page.graphs,
          )
        : h("p", { class: "muted" }, "No graph yet."),
      pager(page.total, page.offset, page.limit, (o) => list(o, into)),
    ),
  );
}

export async function render(root) {
  const listed = h("div");
  const file = h("input", { type: "file", accept: ".json,application/json" });
  const progress = h("progress", { max: 1, value: 0, hidden: true, "aria-label": "Upload progress" });
  const status = h("div", { role: "status" });
  const form = h(
    "form",
    { class: "grid" },
    field("Graph file (JSON: name, nodes, edges, directed)", file),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Upload graph"), progress, status),
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (!file.files.length) return file.focus();
    progress.hidden = false;
    try {
      const g = await upload("/v1/graphs", file.files[0], "application/json", (f) => (progress.value = f));
      status.replaceChildren(h("span", { class: "ok" }, `Uploaded ${g.name} (${fmtInt(g.num_nodes)} nodes, ${fmtInt(g.num_edges)} edges).`));
      list(0, listed);
    } catch (err) {
      status.replaceChildren(problemBox(err));
    } finally {
      progress.hidden = true;
    }
  });
  mount(root, h("h1", {}, "Graphs"), h("section", { class: "panel", "aria-label": "Graph list" }, listed), h("section", { class: "panel" }, h("h2", {}, "Upload a graph"), form));
  await list(0, listed);
}
