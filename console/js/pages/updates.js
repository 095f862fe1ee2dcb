// Updating a model with new documents (issue 60), the console's side: the model page's
// "Update with new documents" form (POST /v1/models/{id}/update, then the job page) and
// the corpus page's "Add documents like this corpus" upload (POST /v1/corpora?like=<id>,
// then the new corpus' page).
// Why it exists: a corpus that grows is not refitted from scratch. A person uploads the
// week's documents preprocessed like the model's corpus, then updates the model with
// them, both through the browser; the new model keeps the old topics' ids and names.

import { get, post, upload, query } from "../api.js";
import { h, field, problemBox, shortId, fmtInt, fmtDate } from "../ui.js";

/** How many of the newest corpora the update form offers. */
const CORPORA = 100;

/** The corpora a model holds documents of: its corpus and every corpus an update added. */
const ownCorpora = (model) => new Set([model.corpus_id, ...(model.corpus_ids || [])].filter(Boolean));

/**
 * The corpora an update of `model` may take, newest first as listed: `like`, those made
 * like one of its corpora (preprocessed as it was, the ones meant for it), then `other`.
 * Its own corpora, and corpora joined from them by an earlier update (they hold its
 * documents, a 422), are left out.
 */
export function updateCandidates(model, corpora) {
  const own = ownCorpora(model);
  const usable = corpora.filter((c) => !own.has(c.id) && !(c.parts || []).some((p) => own.has(p)));
  return { like: usable.filter((c) => own.has(c.like)), other: usable.filter((c) => !own.has(c.like)) };
}

const corpusOption = (c) =>
  h("option", { value: c.id }, `${c.name} · ${fmtInt(c.num_documents)} documents · ${fmtDate(c.created_at)}${c.like ? ` · like corpus ${shortId(c.like)}` : ""}`);

/** Mark the control a problem names (`corpus_id`, `iterations`, …) and move to it. */
function markField(controls, err) {
  const el = controls[(err.field || "").split(/[.[]/)[0]];
  if (!el) return;
  el.setAttribute("aria-invalid", "true");
  el.focus();
}

/** The model page's "Update with new documents" section (families with `updates`). */
export function updateSection(model) {
  const corpus = h("select", { id: "update-corpus", required: true }, h("option", { value: "" }, "Loading corpora…"));
  const iterations = h("input", { type: "number", id: "update-iterations", min: 1, placeholder: `${Math.max(20, Math.floor((model.params?.iterations || 200) / 4))}` });
  const newTopics = h("input", { type: "number", id: "update-new-topics", min: 0, max: 100, value: 0 });
  const seed = h("input", { type: "number", id: "update-seed", min: 0 });
  const status = h("div", { role: "status" });
  const submit = h("button", { type: "submit", disabled: true }, "Update the model");
  const controls = { corpus_id: corpus, iterations, new_topics: newTopics, seed };
  const form = h(
    "form",
    {
      onsubmit: async (e) => {
        e.preventDefault();
        for (const el of Object.values(controls)) el.removeAttribute("aria-invalid");
        if (!corpus.value) {
          status.replaceChildren(h("span", { class: "error" }, "Choose a corpus first."));
          corpus.focus();
          return;
        }
        const body = { corpus_id: corpus.value, new_topics: Number(newTopics.value || 0) };
        if (iterations.value) body.iterations = Number(iterations.value);
        if (seed.value) body.seed = Number(seed.value);
        status.replaceChildren("Queuing the update…");
        submit.disabled = true;
        try {
          const job = await post(`/v1/models/${model.id}/update`, body);
          location.hash = `#/jobs/${job.id}`;
        } catch (err) {
          status.replaceChildren(problemBox(err));
          markField(controls, err);
        } finally {
          submit.disabled = false;
        }
      },
    },
    field(
      "New documents",
      corpus,
      "Stored corpora, newest first; those made like this model's corpus (marked “like”) come first. Make one with “Add documents like this corpus” on the corpus page.",
    ),
    field("Sweeps", iterations, "The fit starts from this model's state: by default a quarter of its sweeps, at least 20."),
    field("New topics", newTopics, "Empty topics added for what the new documents bring (0 to 100); the old topics keep their ids and names."),
    field("Seed", seed, "Optional: drawn at random (and recorded on the job) when empty."),
    h("div", { class: "actions" }, submit),
    status,
  );
  get(`/v1/corpora${query({ limit: CORPORA })}`)
    .then((page) => {
      const { like, other } = updateCandidates(model, page.corpora);
      if (!like.length && !other.length) {
        corpus.replaceChildren(h("option", { value: "" }, `No other corpus (among the newest ${CORPORA})`));
        return;
      }
      const groups = [];
      if (like.length) groups.push(h("optgroup", { label: "Made like this model's corpora" }, like.map(corpusOption)));
      if (other.length) groups.push(h("optgroup", { label: "Other corpora" }, other.map(corpusOption)));
      corpus.replaceChildren(...groups);
      corpus.value = (like[0] || other[0]).id;
      submit.disabled = false;
    })
    .catch((err) => {
      corpus.replaceChildren(h("option", { value: "" }, "Could not list the corpora"));
      status.replaceChildren(problemBox(err));
    });
  return h(
    "section",
    { class: "panel", "aria-labelledby": "h-update", "data-testid": "update-model" },
    h("h2", { id: "h-update" }, "Update with new documents"),
    h("p", { class: "muted" }, "Fit a new version of this model on its documents and a new corpus' (preprocessed like its corpus), starting from its topics."),
    form,
  );
}

/** POST the file like `corpus`: NDJSON streams from disk with `like` and `name` in the
 *  query; a JSON file (an array of documents, or `{"documents"}`) goes as a body.
 *  `unknown` is "drop" to leave out labels and levels the corpus lacks. */
async function sendLike(corpus, file, name, unknown, onProgress) {
  const isJson = /\.json$/i.test(file.name);
  if (!isJson) return upload(`/v1/corpora${query({ like: corpus.id, name, unknown })}`, file, "application/x-ndjson", onProgress);
  const parsed = JSON.parse(await file.text());
  const body = Array.isArray(parsed) ? { documents: parsed } : parsed;
  if (name) body.name = name;
  return upload(`/v1/corpora${query({ like: corpus.id, unknown })}`, JSON.stringify(body), "application/json", onProgress);
}

/** The corpus page's "Add documents like this corpus" section: upload new documents
 *  preprocessed as this corpus was, then open the new corpus. */
export function likeUploadSection(corpus) {
  const file = h("input", { type: "file", id: "like-file", accept: ".jsonl,.ndjson,.json,application/x-ndjson,application/json", required: true });
  const name = h("input", { type: "text", id: "like-name", autocomplete: "off", placeholder: "corpus-<id>" });
  const drop = h("input", { type: "checkbox", id: "like-drop" });
  const progress = h("progress", { max: 1, value: 0, hidden: true, "aria-label": "Upload progress" });
  const status = h("div", { role: "status" });
  const submit = h("button", { type: "submit" }, "Upload documents");
  const form = h(
    "form",
    { class: "grid", novalidate: true },
    field("File (NDJSON)", file, "One document per line, as for a new corpus (a JSON array of documents also works)."),
    field("Name", name),
    field("Drop what the corpus lacks", drop, "Leave out labels its tree lacks and covariate levels it never had (for a model that reads neither) instead of refusing the upload."),
    h("div", { class: "actions" }, submit, progress, status),
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
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
      const made = await sendLike(corpus, file.files[0], name.value.trim(), drop.checked ? "drop" : undefined, (f) => (progress.value = f));
      location.hash = `#/corpora/${made.id}`;
    } catch (err) {
      status.replaceChildren(problemBox(err.problem ? err : { message: err.message, problem: {} }));
    } finally {
      submit.disabled = false;
      progress.hidden = true;
    }
  });
  return h(
    "section",
    { class: "panel", "aria-labelledby": "h-like", "data-testid": "add-like" },
    h("h2", { id: "h-like" }, "Add documents like this corpus"),
    h(
      "p",
      { class: "muted" },
      "New documents preprocessed exactly as this corpus was (its options, label tree and words), to update a model fitted on it. Labels must be in its tree and covariates of its kinds, unless you drop what it lacks.",
    ),
    form,
  );
}
