// Small DOM and formatting helpers shared by every page: element building, number and
// date formatting, problem display, pagination, a labelled field, and downloads.
// Why it exists: pages stay about what they show, not about createElement plumbing.

/** h("a", { href: "#/x", class: "c" }, "text", child) → element. `on*` attributes take functions. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else if (k in el && typeof v !== "string") el[k] = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

let uid = 0;
/** A unique element id with a readable prefix. */
export const newId = (prefix) => `${prefix}-${++uid}`;

/** A labelled control: `<div class=field><label for>…</label>control<small help></div>`. */
export function field(labelText, control, help) {
  if (!control.id) control.id = newId("f");
  const parts = [h("label", { for: control.id }, labelText), control];
  if (help) {
    const helpId = newId("help");
    control.setAttribute("aria-describedby", helpId);
    parts.push(h("small", { class: "help", id: helpId }, help));
  }
  return h("div", { class: control.type === "checkbox" ? "field check" : "field" }, parts);
}

export const fmtInt = (n) => (n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"));
export function fmtNum(n, digits = 3) {
  if (n === null || n === undefined || Number.isNaN(n)) return "–";
  const a = Math.abs(n);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return n.toExponential(2);
  return Number(n.toFixed(digits)).toString();
}
export const fmtPct = (x, digits = 1) => (x === null || x === undefined ? "–" : `${(100 * x).toFixed(digits)}%`);
export function fmtDuration(s) {
  if (s === null || s === undefined) return "–";
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.round(s - 60 * m)} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}
export const fmtDate = (iso) => (iso ? new Date(iso).toLocaleString() : "–");
export const shortId = (id) => (id ? id.slice(0, 8) : "–");

/** A box showing an error (an ApiError's detail, field and status). */
export function problemBox(err) {
  const p = err.problem || {};
  return h(
    "div",
    { class: "problem", role: "alert" },
    h("strong", {}, p.title || "Error"),
    " ",
    err.message,
    p.field ? h("div", { class: "muted" }, `field: ${p.field}`) : null,
    p.line ? h("div", { class: "muted" }, `line: ${p.line}`) : null,
    p.label ? h("div", { class: "muted" }, `label: ${p.label}`) : null,
  );
}

/** A table in a horizontally scrolling wrapper. `columns`: [{ label, num?, cell(row) }].
 *  The wrapper is a focusable, named region so a keyboard can scroll it when it
 *  overflows (at phone width most tables do). */
export function table(columns, rows, { caption, rowAttrs } = {}) {
  const name = caption || `Table of ${columns.map((c) => c.label).join(", ")}`;
  return h(
    "div",
    { class: "table-wrap", tabindex: 0, role: "region", "aria-label": name },
    h(
      "table",
      {},
      caption ? h("caption", { class: "muted" }, caption) : null,
      h("thead", {}, h("tr", {}, columns.map((c) => h("th", { scope: "col", class: c.num ? "num" : null }, c.label)))),
      h(
        "tbody",
        {},
        rows.map((r) => h("tr", rowAttrs ? rowAttrs(r) : {}, columns.map((c) => h("td", { class: c.num ? "num" : null }, c.cell(r))))),
      ),
    ),
  );
}

/** Previous/next buttons for an offset/limit list; `go(offset)` loads a page. */
export function pager(total, offset, limit, go) {
  const last = Math.min(offset + limit, total);
  return h(
    "div",
    { class: "actions" },
    h("button", { class: "secondary", disabled: offset === 0, onclick: () => go(Math.max(0, offset - limit)) }, "Previous page"),
    h("span", { class: "muted" }, total ? `${offset + 1}–${last} of ${total}` : "none"),
    h("button", { class: "secondary", disabled: last >= total, onclick: () => go(offset + limit) }, "Next page"),
  );
}

/** A horizontal bar of `fraction` (0..1) of `width` pixels. */
export const bar = (fraction, cls = "", width = 90) =>
  h("span", { class: `bar ${cls}`, style: `width:${Math.max(1, Math.round(width * Math.max(0, Math.min(1, fraction))))}px`, "aria-hidden": "true" });

/** Save a Blob under a file name. */
export function download(filename, blob) {
  const url = URL.createObjectURL(blob);
  const a = h("a", { href: url, download: filename });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** CSV text from rows of values (quoted where needed). */
export function toCsv(header, rows) {
  const cell = (v) => {
    const s = v === null || v === undefined ? "" : String(v);
    return /[",\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
  };
  return [header, ...rows].map((r) => r.map(cell).join(",")).join("\n") + "\n";
}

/** Replace the content of `root` with `children` and return root. */
export function mount(root, ...children) {
  root.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined));
  return root;
}
