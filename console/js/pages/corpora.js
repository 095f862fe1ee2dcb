// Corpora page: the stored corpora a page at a time, and the upload form (a JSON or
// NDJSON file, streamed with a progress bar, with the preprocessing options generated
// from the OpenAPI `Preprocess` schema).

import { get, upload, query } from "../api.js";
import { h, mount, table, pager, field, fmtInt, fmtDate, problemBox } from "../ui.js";
import { schemaForm } from "../schema_form.js";

const PAGE = 25;

function list(offset, into) {
  return get(`/v1/corpora${query({ offset, limit: PAGE })}`).then((page) =>
    mount(
      into,
      page.corpora.length
        ? table(
            [
              { label: "Name", cell: (c) => h("a", { href: `#/corpora/${c.id}` }, c.name) },
              { label: "Documents", num: true, cell: (c) => fmtInt(c.num_documents) },
              { label: "Terms", num: true, cell: (c) => fmtInt(c.num_terms) },
              { label: "Tokens", num: true, cell: (c) => fmtInt(c.num_tokens) },
              { label: "Labels", num: true, cell: (c) => fmtInt(c.num_labels) },
              { label: "Created", cell: (c) => fmtDate(c.created_at) },
              { label: "Fit", cell: (c) => h("a", { href: `#/fit?corpus=${c.id}`, "aria-label": `New fit on ${c.name}` }, "New fit") },
            ],
            page.corpora,
          )
        : h("p", { class: "muted" }, "No corpus yet: upload one below."),
      pager(page.total, page.offset, page.limit, (o) => list(o, into)),
    ),
  );
}

/** Send the file: NDJSON streams from disk with options as query parameters; a JSON file
 * (a `CorpusUpload` object or an array of documents) gets the options in its body. */
async function send(file, name, preprocess, onProgress) {
  const isJson = /\.json$/i.test(file.name) && !/\.jsonl$/i.test(file.name);
  if (!isJson) {
    const params = { name };
    for (const [k, v] of Object.entries(preprocess)) params[k] = Array.isArray(v) ? v.join(",") : v;
    return upload(`/v1/corpora${query(params)}`, file, "application/x-ndjson", onProgress);
  }
  const parsed = JSON.parse(await file.text());
  const body = Array.isArray(parsed) ? { documents: parsed } : parsed;
  if (name) body.name = name;
  body.preprocess = { ...(body.preprocess || {}), ...preprocess };
  return upload("/v1/corpora", JSON.stringify(body), "application/json", onProgress);
}

function uploadForm(preprocessSchema, onDone) {
  const file = h("input", { type: "file", id: "upload-file", accept: ".json,.jsonl,.ndjson,application/json,application/x-ndjson", required: true });
  const name = h("input", { type: "text", id: "upload-name", autocomplete: "off", placeholder: "corpus-<id>" });
  const options = schemaForm(preprocessSchema, { fieldPrefix: "preprocess." });
  const progress = h("progress", { max: 1, value: 0, hidden: true, "aria-label": "Upload progress" });
  const status = h("div", { role: "status" });
  const submit = h("button", { type: "submit" }, "Upload corpus");
  const form = h(
    "form",
    { class: "grid", novalidate: true },
    field("File (JSON or NDJSON)", file, "One document per line (NDJSON), or a JSON upload object or array of documents."),
    field("Name", name),
    options.element,
    h("div", { class: "actions" }, submit, progress, status),
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    options.clearErrors();
    status.replaceChildren();
    if (!file.files.length) {
      status.replaceChildren(h("span", { class: "error" }, "Choose a file first."));
      file.focus();
      return;
    }
    submit.disabled = true;
    progress.hidden = false;
    progress.value = 0;
    try {
      const corpus = await send(file.files[0], name.value.trim(), options.values(), (f) => (progress.value = f));
      status.replaceChildren(h("span", { class: "ok" }, "Uploaded "), h("a", { href: `#/corpora/${corpus.id}` }, corpus.name), ` (${fmtInt(corpus.num_documents)} documents).`);
      onDone();
    } catch (err) {
      const p = err.problem || { detail: err.message };
      const f = p.field || "";
      const took = options.showError(f.startsWith("preprocess.") ? p : { ...p, field: `preprocess.${f.replace(/^query\./, "")}` });
      status.replaceChildren(took ? h("span", { class: "error" }, "See the highlighted option.") : problemBox(err.problem ? err : { message: err.message, problem: {} }));
    } finally {
      submit.disabled = false;
      progress.hidden = true;
    }
  });
  return form;
}

export async function render(root) {
  const spec = await get("/openapi.json");
  const listed = h("div", { "data-testid": "corpus-list" });
  mount(
    root,
    h("h1", {}, "Corpora"),
    h("section", { class: "panel", "aria-label": "Corpus list" }, listed),
    h("section", { class: "panel" }, h("h2", {}, "Upload a corpus"), uploadForm(spec.components.schemas.Preprocess, () => list(0, listed))),
  );
  await list(0, listed);
}
