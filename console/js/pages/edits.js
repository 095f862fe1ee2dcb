// Edits of a model's topics: the form that merges, splits and deletes topics and queues
// the refit (POST /v1/models/{id}/edits), and what a child model says of its parent.
// Why it exists: a user who disagrees with a topic fixes it here and keeps the other
// topics' ids and names; the refit's job page follows, then its model, one click from
// its comparison with the parent.

import { post } from "../api.js";
import { h, field, problemBox, shortId } from "../ui.js";

/** One operation line as the API's object: "merge 1 2", "delete 3", "split 4 into 2",
 *  or "split 4: games = game, play; audio = music" (one part per seed). Lines the
 *  grammar does not know are sent as they are, so the server's 422 names them. */
export function parseOperation(line) {
  const words = line.trim().split(/\s+/);
  const op = (words[0] || "").toLowerCase();
  const num = (s) => (/^\d+$/.test(s) ? Number(s) : s);
  if (op === "merge") return { op, topics: words.slice(1).map(num) };
  if (op === "delete") return { op, topic: num(words[1]) };
  if (op === "split") {
    const colon = line.indexOf(":");
    if (colon >= 0) {
      const topic = num(line.slice(0, colon).trim().split(/\s+/)[1] || "");
      const seed_words = line
        .slice(colon + 1)
        .split(";")
        .map((part) => part.trim())
        .filter(Boolean)
        .map((part) => {
          const at = part.indexOf("=");
          const [name, rest] = at < 0 ? [part, ""] : [part.slice(0, at), part.slice(at + 1)];
          return { name: name.trim(), words: rest.split(",").map((w) => w.trim()).filter(Boolean) };
        });
      return { op, topic, into: seed_words.length, seed_words };
    }
    return { op, topic: num(words[1]), into: num(words[words[2] === "into" ? 3 : 2]) };
  }
  return { op };
}

/** The section of the model page that edits its topics and queues the refit. */
export function editSection(model) {
  const area = h("textarea", { id: "edit-operations", rows: "4", autocomplete: "off", placeholder: "merge 1 2\nsplit 4 into 2\ndelete 3" });
  const iterations = h("input", { type: "number", id: "edit-iterations", min: 1, placeholder: `${Math.max(20, Math.floor((model.params?.iterations || model.params?.passes || 200) / 4))}` });
  const seed = h("input", { type: "number", id: "edit-seed", min: 0, value: 1 });
  const status = h("div", { role: "status" });
  const form = h(
    "form",
    {
      onsubmit: async (e) => {
        e.preventDefault();
        const operations = area.value.split("\n").map((l) => l.trim()).filter(Boolean).map(parseOperation);
        const body = { operations, seed: Number(seed.value || 1) };
        if (iterations.value) body.iterations = Number(iterations.value);
        status.replaceChildren("Queuing the refit…");
        try {
          const job = await post(`/v1/models/${model.id}/edits`, body);
          location.hash = `#/jobs/${job.id}`;
        } catch (err) {
          status.replaceChildren(problemBox(err));
        }
      },
    },
    field(
      "Operations, one per line",
      area,
      "merge 1 2 (joined in topic 1) · split 4 into 2, or split 4: games = game, play; audio = music (a part per seed) · delete 3. Untouched topics keep their ids and names; a split's new part takes the next new id; merged-away and deleted topics stay, retired, so no id moves.",
    ),
    field("Sweeps of the refit (passes for HDP)", iterations, "It starts from this model's state: by default a quarter of its sweeps or passes."),
    field("Seed", seed),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Edit and refit")),
    status,
  );
  return h("section", { class: "panel", "data-testid": "edit-topics" }, h("h2", {}, "Edit topics"), form);
}

/** A readable line for one operation. */
function describe(op) {
  if (op.op === "merge") return `merge ${op.topics.join(" + ")}`;
  if (op.op === "split") return `split ${op.topic} into ${op.into}${op.seed_words ? ` (${op.seed_words.map((s) => s.name).join(", ")})` : ""}`;
  return `delete ${op.topic}`;
}

/** An edit's operations in one line: "merge 0 + 1; split 2 into 2". */
export const operationsText = (edit) => (edit?.operations || []).map(describe).join("; ");

/** The header row of a model made by an edit: its parent, the operations, and the
 *  comparison with the parent; `null` for a model fitted from scratch or made by an
 *  update (versions.js' `updateRow`). */
export function parentRow(model) {
  if (!model.parent_model_id || model.update) return null;
  const parent = model.parent_model_id;
  return [
    "Edited from",
    h(
      "span",
      { "data-testid": "edited-from" },
      h("a", { href: `#/models/${parent}` }, `model ${shortId(parent)}`),
      `: ${operationsText(model.edit)} · `,
      h("a", { href: `#/models/${parent}/compare/${model.id}` }, "compare with the parent"),
    ),
  ];
}
