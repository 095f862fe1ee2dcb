// The fit form's covariate controls, built from what the chosen corpus knows (its
// `covariates` summary) instead of JSON typed by hand: a checkbox per covariate for the
// family's `covariates`, a level picker per chosen categorical covariate for
// `reference`, a spline-columns box per chosen continuous or date covariate for
// `splines`. Why it exists: a schema says only "array of strings" or "object", which
// the generic form (schema_form.js) can offer only as text; the corpus says which names
// and levels exist.

import { h, newId, fmtInt } from "./ui.js";
import { covariateFormat } from "./effect_plots.js";

/** "year (date, 2000 to 2010)" / "party (categorical: 3 levels)". */
function describe(c) {
  if (c.kind === "categorical") return `${c.name} (categorical: ${fmtInt(c.levels.length)} levels)`;
  if (c.min === undefined) return `${c.name} (${c.kind})`;
  const f = covariateFormat(c.kind, [c.min, c.max]);
  return `${c.name} (${c.kind}, ${f(c.min)} to ${f(c.max)})`;
}

/**
 * Controls for `covariates`, `reference` and `splines` over `corpusCovariates` (the
 * corpus' summary), sharing which covariates are chosen. Each entry is
 * `(name, prop) => { el, read, group }` as schema_form expects; `group` asks for a
 * fieldset with a legend rather than a label.
 */
export function covariateControls(corpusCovariates) {
  const chosen = new Set();
  const listeners = [];
  const changed = () => listeners.forEach((f) => f());
  const byName = new Map(corpusCovariates.map((c) => [c.name, c]));

  const covariates = () => {
    const boxes = corpusCovariates.map((c) => {
      const box = h("input", { type: "checkbox", id: newId("cov"), value: c.name, "data-covariate": c.name });
      box.addEventListener("change", () => {
        if (box.checked) chosen.add(c.name);
        else chosen.delete(c.name);
        changed();
      });
      return h("div", { class: "check-row" }, box, " ", h("label", { for: box.id }, describe(c)));
    });
    const el = h("div", { class: "picker", "data-testid": "covariate-picker" }, boxes);
    return { el, group: true, read: () => (chosen.size ? corpusCovariates.map((c) => c.name).filter((n) => chosen.has(n)) : undefined) };
  };

  const reference = () => {
    const el = h("div", { class: "picker", "data-testid": "reference-picker" });
    const selects = new Map();
    const render = () => {
      const categorical = [...chosen].map((n) => byName.get(n)).filter((c) => c.kind === "categorical");
      for (const c of categorical) {
        if (selects.has(c.name)) continue;
        const select = h(
          "select",
          { id: newId("ref"), "data-reference": c.name },
          c.levels.map((l, i) => h("option", { value: i === 0 ? "" : l.level }, `${l.level} (${fmtInt(l.documents)} documents${i === 0 ? ", the default" : ""})`)),
        );
        selects.set(c.name, select);
      }
      el.replaceChildren(
        ...(categorical.length
          ? categorical.map((c) => h("div", { class: "field" }, h("label", { for: selects.get(c.name).id }, `Reference level of ${c.name}`), selects.get(c.name)))
          : [h("span", { class: "muted" }, "Choose a categorical covariate to pick its reference level.")]),
      );
    };
    listeners.push(render);
    render();
    const read = () => {
      const out = {};
      for (const [name, select] of selects) if (chosen.has(name) && select.value) out[name] = select.value;
      return Object.keys(out).length ? out : undefined;
    };
    return { el, group: true, read };
  };

  const splines = (_name, prop) => {
    const bounds = prop.additionalProperties || {};
    const el = h("div", { class: "picker", "data-testid": "spline-picker" });
    const inputs = new Map();
    const render = () => {
      const continuous = [...chosen].map((n) => byName.get(n)).filter((c) => c.kind !== "categorical");
      for (const c of continuous) {
        if (inputs.has(c.name)) continue;
        inputs.set(c.name, h("input", { type: "number", id: newId("spl"), min: bounds.minimum, max: bounds.maximum, step: 1, placeholder: "linear", "data-spline": c.name }));
      }
      el.replaceChildren(
        ...(continuous.length
          ? continuous.map((c) => h("div", { class: "field" }, h("label", { for: inputs.get(c.name).id }, `Spline columns for ${c.name}`), inputs.get(c.name)))
          : [h("span", { class: "muted" }, "Choose a continuous or date covariate to give it spline columns (empty: linear).")]),
      );
    };
    listeners.push(render);
    render();
    const read = () => {
      const out = {};
      for (const [name, input] of inputs) if (chosen.has(name) && input.value.trim() !== "") out[name] = Number(input.value);
      return Object.keys(out).length ? out : undefined;
    };
    return { el, group: true, read };
  };

  return { covariates, reference, splines };
}
