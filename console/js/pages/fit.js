// New-fit page: choose a family, then its input (a corpus or a graph, as the family
// declares), and fill the parameter form generated from the family's `params_schema`
// (GET /v1/families): basic parameters first, the rest folded, and the covariates,
// reference levels and splines as pickers over the chosen corpus' covariates. Problems
// from POST /v1/jobs are shown beside the field they name.

import { get, post, query } from "../api.js";
import { h, mount, field, problemBox } from "../ui.js";
import { schemaForm } from "../schema_form.js";
import { covariateControls } from "../covariate_pickers.js";

async function inputs(kind) {
  const path = kind === "graph" ? "/v1/graphs" : "/v1/corpora";
  const page = await get(`${path}${query({ limit: 500 })}`);
  return kind === "graph" ? page.graphs : page.corpora;
}

export async function render(root, _params, q) {
  const { families } = await get("/v1/families");
  const wanted = q.get("family");
  const family = h("select", { id: "fit-family" }, families.map((f) => h("option", { value: f.name, selected: f.name === wanted }, f.name)));
  const input = h("select", { id: "fit-input" });
  const inputField = field("Corpus", input);
  const seed = h("input", { type: "number", min: 0, step: 1, placeholder: "random", inputmode: "numeric" });
  const seedError = h("span", { class: "field-error", role: "alert" });
  const inputError = h("span", { class: "field-error", role: "alert" });
  inputField.append(inputError);
  const paramsBox = h("div", { style: "display:contents" });
  const status = h("div", { role: "status" });
  const caps = h("p", { class: "muted" });
  let form = null;
  let items = [];

  async function chooseFamily() {
    const f = families.find((x) => x.name === family.value);
    const kind = f.capabilities.input;
    inputField.querySelector("label").textContent = kind === "graph" ? "Graph" : "Corpus";
    items = await inputs(kind);
    const preselect = q.get(kind === "graph" ? "graph" : "corpus");
    input.replaceChildren(...items.map((i) => h("option", { value: i.id, selected: i.id === preselect }, `${i.name} (${kind === "graph" ? `${i.num_nodes} nodes` : `${i.num_documents} docs, ${i.num_labels} labels`})`)));
    if (!items.length) input.append(h("option", { value: "" }, `no ${kind} uploaded yet`));
    const offered = Object.entries(f.capabilities).filter(([k, v]) => v === true).map(([k]) => k.replaceAll("_", " "));
    caps.textContent = `Fits a ${kind}. Its models offer: ${offered.join(", ") || "nothing beyond the fit"}.`;
    buildForm();
  }

  /** The parameter form for the chosen family over the chosen corpus' covariates. */
  function buildForm() {
    const f = families.find((x) => x.name === family.value);
    const chosen = items.find((i) => i.id === input.value);
    const known = chosen?.covariates || [];
    const custom = f.params_schema.properties?.covariates && known.length ? covariateControls(known) : {};
    form = schemaForm(f.params_schema, { fieldPrefix: "params.", custom });
    paramsBox.replaceChildren(f.params_schema.description ? h("p", { class: "help", style: "grid-column:1/-1" }, f.params_schema.description) : "", form.element);
  }

  const submit = h("button", { type: "submit" }, "Start fit");
  const el = h(
    "form",
    { class: "grid", novalidate: true },
    field("Model family", family),
    inputField,
    h("div", { class: "field" }, h("label", { for: (seed.id = "fit-seed") }, "Seed"), seed, h("small", { class: "help" }, "Empty: the server draws one and records it."), seedError),
    h("div", { style: "grid-column:1/-1" }, caps),
    h("h2", { style: "grid-column:1/-1" }, "Parameters"),
    paramsBox,
    h("div", { class: "actions" }, submit, status),
  );
  el.addEventListener("submit", async (e) => {
    e.preventDefault();
    form.clearErrors();
    seedError.textContent = inputError.textContent = "";
    status.replaceChildren();
    const f = families.find((x) => x.name === family.value);
    const body = { model: f.name, params: form.values() };
    body[f.capabilities.input === "graph" ? "graph_id" : "corpus_id"] = input.value;
    if (seed.value !== "") body.seed = Number(seed.value);
    submit.disabled = true;
    try {
      const job = await post("/v1/jobs", body);
      location.hash = `#/jobs/${job.id}`;
    } catch (err) {
      const p = err.problem || {};
      if (form.showError(p)) status.replaceChildren(h("span", { class: "error" }, "See the highlighted parameter."));
      else if (p.field === "seed") seedError.textContent = err.message;
      else if (p.field === "corpus_id" || p.field === "graph_id") inputError.textContent = err.message;
      else status.replaceChildren(problemBox(err));
    } finally {
      submit.disabled = false;
    }
  });
  family.addEventListener("change", () => chooseFamily().catch((err) => status.replaceChildren(problemBox(err))));
  input.addEventListener("change", buildForm);
  await chooseFamily();
  mount(root, h("h1", {}, "New fit"), h("section", { class: "panel" }, el));
}
