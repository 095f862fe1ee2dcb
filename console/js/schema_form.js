// A form generated from a JSON Schema object (a family's `params_schema`, or the
// OpenAPI `Preprocess` schema): one labelled control per property with its default,
// bounds and description, and a place beside each control for the server's
// problem+json error naming it. The properties the schema lists in `x-basic` come
// first; the rest fold under "Advanced parameters". A page may supply its own control
// for a property (the fit form's covariate pickers). Why it exists: no form is ever written by hand per
// model family, so a new family or parameter appears in the console by itself.

import { h, newId } from "./ui.js";

/** The property's non-null types, e.g. ["integer"] for ["integer", "null"]. */
function typesOf(prop) {
  if (prop.type) return (Array.isArray(prop.type) ? prop.type : [prop.type]).filter((t) => t !== "null");
  if (prop.oneOf) return [...new Set(prop.oneOf.flatMap((p) => typesOf(p)))];
  return ["string"];
}

function enumOf(prop) {
  if (prop.enum) return prop.enum.filter((v) => v !== null);
  return null;
}

/** A control for one property and a function reading its value (undefined = not given). */
function control(name, prop) {
  const types = typesOf(prop);
  const def = prop.default;
  const choices = enumOf(prop);
  if (choices) {
    const select = h("select", { name }, def === undefined || def === null ? h("option", { value: "" }, "(default)") : null, choices.map((c) => h("option", { value: String(c), selected: c === def }, String(c))));
    return { el: select, read: () => (select.value === "" ? undefined : select.value) };
  }
  if (types.length === 1 && types[0] === "boolean") {
    const box = h("input", { type: "checkbox", name, checked: def === true });
    return { el: box, read: () => box.checked };
  }
  if (types.length === 1 && (types[0] === "integer" || types[0] === "number")) {
    const input = h("input", { type: "number", name, inputmode: types[0] === "integer" ? "numeric" : "decimal", step: types[0] === "integer" ? "1" : "any" });
    if (prop.minimum !== undefined) input.min = prop.minimum;
    if (prop.maximum !== undefined) input.max = prop.maximum;
    if (def !== undefined && def !== null) input.value = def;
    else input.placeholder = "server default";
    return { el: input, read: () => (input.value.trim() === "" ? undefined : Number(input.value)) };
  }
  // Objects (a map such as `{"year": 5}`): JSON text, empty for the server's default.
  if (types.length === 1 && types[0] === "object") {
    const input = h("input", { type: "text", name, autocomplete: "off", placeholder: def !== undefined && def !== null ? `JSON, e.g. ${JSON.stringify(def)}` : "server default" });
    return {
      el: input,
      read: () => {
        const v = input.value.trim();
        if (v === "") return undefined;
        try {
          return JSON.parse(v);
        } catch {
          return v; // sent as typed: the server's 422 names the field
        }
      },
    };
  }
  // Lists of named word lists (`seed_words`: [{"name", "words"}]): one per line,
  // "name: word, word, word".
  const items = prop.items || {};
  if (types.length === 1 && types[0] === "array" && items.type === "object" && items.properties && items.properties.name && items.properties.words) {
    const area = h("textarea", { name, rows: "3", autocomplete: "off", placeholder: "one per line, e.g. games: game, play, player" });
    return {
      el: area,
      read: () => {
        const lines = area.value.split("\n").map((l) => l.trim()).filter(Boolean);
        if (lines.length === 0) return undefined;
        return lines.map((line) => {
          const at = line.indexOf(":");
          const [label, rest] = at < 0 ? [line, ""] : [line.slice(0, at), line.slice(at + 1)];
          return { name: label.trim(), words: rest.split(",").map((w) => w.trim()).filter(Boolean) };
        });
      },
    };
  }
  // Strings, and unions such as `english | none | [words]`: free text. A comma list
  // becomes an array where the schema allows one.
  const input = h("input", { type: "text", name, autocomplete: "off" });
  if (def !== undefined && def !== null) input.value = Array.isArray(def) ? def.join(",") : String(def);
  else input.placeholder = "server default";
  const allowsArray = types.includes("array");
  const stringChoices = (prop.oneOf || []).flatMap((p) => p.enum || []);
  return {
    el: input,
    read: () => {
      const v = input.value.trim();
      if (v === "") return undefined;
      if (allowsArray && !stringChoices.includes(v)) return v.split(",").map((s) => s.trim()).filter(Boolean);
      return v;
    },
  };
}

/** A description's first sentence, and the rest (shown on demand). */
function splitFirstSentence(text) {
  const m = /^([\s\S]{12,}?\.)\s+(\S[\s\S]*)$/.exec(text.trim());
  return m ? [m[1], m[2]] : [text, ""];
}

function bounds(prop) {
  const parts = [];
  if (prop.minimum !== undefined) parts.push(`≥ ${prop.minimum}`);
  if (prop.exclusiveMinimum !== undefined) parts.push(`> ${prop.exclusiveMinimum}`);
  if (prop.maximum !== undefined) parts.push(`≤ ${prop.maximum}`);
  if (prop.exclusiveMaximum !== undefined) parts.push(`< ${prop.exclusiveMaximum}`);
  return parts.length ? ` (${parts.join(", ")})` : "";
}

/** Whether a control's value is the schema's default for it. */
const isDefault = (value, def) => def !== undefined && def !== null && JSON.stringify(value) === JSON.stringify(def);

/**
 * Build the controls of `schema`. `fieldPrefix` is how the server names these fields in
 * problems (e.g. "params." for `params.topics`). Returns { element, values, clearErrors,
 * showError(problem) → bool (true when a control of this form took the error) }.
 * `values()` leaves out every value still at its default: the server applies its own
 * defaults, and a schema shared by two families (HPC and PCM) declares defaults that
 * only one of them takes (PCM's `topics`, which an HPC fit refuses).
 */
export function schemaForm(schema, { fieldPrefix = "", describe = true, custom = {} } = {}) {
  // In the spec's order (`x-property-order`; JSON objects arrive with sorted keys).
  const order = schema["x-property-order"] || [];
  const rank = (name) => (order.indexOf(name) < 0 ? order.length : order.indexOf(name));
  const props = Object.entries(schema.properties || {}).sort(([a], [b]) => rank(a) - rank(b));
  const controls = new Map();
  const errors = new Map();
  const basic = Array.isArray(schema["x-basic"]) ? new Set(schema["x-basic"]) : null;
  const fields = props.map(([name, prop]) => {
    const { el, read, group } = custom[name] ? custom[name](name, prop) : control(name, prop);
    el.id = newId(`p-${name}`);
    const helpId = newId("help");
    const errId = newId("err");
    el.setAttribute("aria-describedby", `${helpId} ${errId}`);
    const err = h("span", { class: "field-error", id: errId, role: "alert" });
    controls.set(name, { read, el, def: prop.default });
    errors.set(name, err);
    const [first, rest] = describe ? splitFirstSentence(prop.description || "") : ["", ""];
    const help = h("small", { class: "help", id: helpId }, `${first}${bounds(prop)}`);
    const more = rest ? h("details", { class: "help" }, h("summary", {}, `More about ${name}`), rest) : null;
    if (group) {
      el.setAttribute("tabindex", "-1");
      const field = h("fieldset", { class: "field group", "data-field": `${fieldPrefix}${name}`, "aria-describedby": `${helpId} ${errId}` }, h("legend", {}, name), el, help, err, more);
      return { name, field };
    }
    const label = h("label", { for: el.id }, name);
    const parts = el.type === "checkbox" ? [el, " ", label] : [label, el];
    return { name, field: h("div", { class: el.type === "checkbox" ? "field check" : "field", "data-field": `${fieldPrefix}${name}` }, parts, help, err, more) };
  });
  const advanced = basic ? fields.filter((f) => !basic.has(f.name)) : [];
  const shown = basic ? fields.filter((f) => basic.has(f.name)) : fields;
  const fold = advanced.length
    ? h("details", { class: "advanced", "data-testid": "advanced-params" }, h("summary", {}, `Advanced parameters (${advanced.length})`), h("div", { class: "grid-inner" }, advanced.map((f) => f.field)))
    : null;
  return {
    element: h("div", { class: "schema-fields", style: "display:contents" }, shown.map((f) => f.field), fold),
    values() {
      const out = {};
      for (const [name, { read, def }] of controls) {
        const v = read();
        if (v !== undefined && !isDefault(v, def)) out[name] = v;
      }
      return out;
    },
    clearErrors() {
      for (const e of errors.values()) e.textContent = "";
      for (const { el } of controls.values()) el.removeAttribute("aria-invalid");
    },
    showError(problem) {
      const field = problem.field || "";
      if (!field.startsWith(fieldPrefix)) return false;
      const name = field.slice(fieldPrefix.length).split(/[.[]/)[0];
      if (!errors.has(name)) return false;
      errors.get(name).textContent = problem.detail || problem.title;
      const { el } = controls.get(name);
      el.setAttribute("aria-invalid", "true");
      const fold = el.closest("details.advanced");
      if (fold) fold.open = true;
      el.focus();
      return true;
    },
  };
}
