// Comparison page (#/models/<a>/compare/<b>): two topic models' topics side by side,
// paired as the API pairs them (GET /v1/models/{a}/compare/{b}): each pair's names and
// top words, its similarity and whether it is a match, and the words that rose and fell
// from a to b; the topics the other model has no partner for are listed apart. Also the
// "Compare with…" picker the model page shows. Downloadable as CSV.

import { get } from "../api.js";
import { h, mount, table, fmtNum, download, toCsv, shortId, field } from "../ui.js";

const TOP = 8;

/** A topic's label: its id and name. */
const label = (t) => (t.name ? `${t.id} · ${t.name}` : `topic ${t.id}`);

/** Each topic's top words of a model, by id. */
async function topWords(id) {
  const page = await get(`/v1/models/${encodeURIComponent(id)}/topics?n=${TOP}&rank=frequency`);
  return new Map(page.topics.map((t) => [t.id, t.words.map((w) => w.word).join(", ")]));
}

/** A name as a CSV cell a spreadsheet will not run as a formula. */
const safeCell = (name) => (name && /^[=+\-@]/.test(name) ? `'${name}` : name ?? "");

const shifts = (words) => (words.length ? words.map((w) => `${w.word} (${fmtNum(w.a, 3)} → ${fmtNum(w.b, 3)})`).join(", ") : "–");

export async function render(root, [a, b]) {
  const [cmp, wordsA, wordsB] = await Promise.all([get(`/v1/models/${encodeURIComponent(a)}/compare/${encodeURIComponent(b)}?words=5`), topWords(a), topWords(b)]);
  const cols = [
    { label: `Model ${shortId(a)}`, cell: (p) => h("div", {}, h("strong", {}, label(p.a)), h("div", { class: "muted" }, wordsA.get(p.a.id) || "")) },
    { label: "Similarity", num: true, cell: (p) => (p.matched ? fmtNum(p.similarity) : h("span", { class: "warn", title: "below 0.5: not the same topic" }, `${fmtNum(p.similarity)} (no match)`)) },
    { label: `Model ${shortId(b)}`, cell: (p) => h("div", {}, h("strong", {}, label(p.b)), h("div", { class: "muted" }, wordsB.get(p.b.id) || "")) },
    { label: "Top-10 overlap", num: true, cell: (p) => fmtNum(p.top_words_jaccard, 2) },
    { label: "Rose", cell: (p) => shifts(p.rose) },
    { label: "Fell", cell: (p) => shifts(p.fell) },
  ];
  const unpaired = (list, id, words) =>
    list.length ? h("p", {}, `Only in model ${shortId(id)}: `, list.map((t, i) => [i ? "; " : "", h("strong", {}, label(t)), ` (${words.get(t.id) || ""})`])) : null;
  const csv = () =>
    toCsv(
      ["a_topic", "a_name", "b_topic", "b_name", "similarity", "matched", "top_words_jaccard"],
      cmp.pairs.map((p) => [p.a.id, safeCell(p.a.name), p.b.id, safeCell(p.b.name), p.similarity, p.matched, p.top_words_jaccard]),
    );
  mount(
    root,
    h("h1", {}, `Comparing models ${shortId(a)} and ${shortId(b)}`),
    h(
      "p",
      {},
      h("a", { href: `#/models/${a}` }, `Model ${shortId(a)}`),
      ` (${cmp.a.model}, K = ${cmp.a.num_topics}) against `,
      h("a", { href: `#/models/${b}` }, `model ${shortId(b)}`),
      ` (${cmp.b.model}, K = ${cmp.b.num_topics}): ${cmp.matched} of ${cmp.pairs.length} pairs match, mean similarity ${fmtNum(cmp.mean_similarity)}.`,
    ),
    h("p", { class: "muted" }, `${cmp.method.matching}. Similarity: ${cmp.method.similarity}; a match at ${cmp.method.matched_at} and above.`),
    h("section", { class: "panel", "data-testid": "comparison" }, table(cols, cmp.pairs, { caption: "Paired topics, in the first model's order.", rowAttrs: (p) => ({ "data-a": p.a.id, "data-b": p.b.id }) })),
    unpaired(cmp.unpaired_a, a, wordsA),
    unpaired(cmp.unpaired_b, b, wordsB),
    h("div", { class: "actions" }, h("button", { class: "secondary", onclick: () => download(`compare-${shortId(a)}-${shortId(b)}.csv`, new Blob([csv()], { type: "text/csv" })) }, "Download CSV")),
  );
}

/** The model page's picker: another topic model on the same corpus to compare with. */
export function compareSection(model) {
  const select = h("select", { id: "compare-with" }, h("option", { value: "" }, "Loading models…"));
  const go = h("button", { type: "submit", disabled: true }, "Compare");
  const form = h(
    "form",
    {
      onsubmit: (e) => {
        e.preventDefault();
        if (select.value) location.hash = `#/models/${model.id}/compare/${select.value}`;
      },
    },
    field("Compare with", select, "Another model of this corpus: its topics paired with these, and the words that moved."),
    h("div", { class: "actions" }, go),
  );
  get("/v1/models?limit=100")
    .then((page) => {
      const others = page.models.filter((m) => m.id !== model.id && m.corpus_id && m.corpus_id === model.corpus_id);
      select.replaceChildren(...(others.length ? others.map((m) => h("option", { value: m.id }, `${shortId(m.id)} · ${m.model}, K = ${m.num_topics}, seed ${m.seed}`)) : [h("option", { value: "" }, "No other model of this corpus (among the newest 100)")]));
      go.disabled = !others.length;
    })
    .catch(() => select.replaceChildren(h("option", { value: "" }, "Could not list the models")));
  return h("section", { class: "panel", "data-testid": "compare-with" }, h("h2", {}, "Compare"), form);
}
