// How the console names a topic wherever it shows one: the user's name (PATCH …/topics/t),
// else the label it models (HPC), else its top three words, always with its id
// ("3 · budget, tax, spending"). Why it exists: a bare "topic 3" in a legend, a map, a
// heatmap or a prediction bar means nothing to a reader, and every page must name topics
// the same way, from one request per model that a rename refreshes.

import { get } from "./api.js";

/** Words that stand in for a topic without a name or label. */
const NAMING_WORDS = 3;
/** A name is cut to this many characters where space is short (axes, legends). */
const SHORT = 38;

const cache = new Map();

/** What `t` is called without its id: name, label or top words. */
export function topicTitleOf(t) {
  if (t.name) return t.name;
  if (t.label) return t.label;
  return (t.words || []).slice(0, NAMING_WORDS).map((w) => w.word ?? w).join(", ");
}

/** "3 · budget, tax, spending". */
export const topicLabelOf = (t) => {
  const title = topicTitleOf(t);
  return title ? `${t.id} · ${title}` : `topic ${t.id}`;
};

const cut = (s, n = SHORT) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/**
 * The names of `model`'s topics: `{ topics, label(id), short(id), byId }` where `label`
 * is the full "id · name" and `short` the same cut to fit an axis. Read once per model
 * (the words ranked by FREX at weight 0.5, the explorer's default) and kept until
 * `forgetTopicNames(model)` (after a rename).
 */
export function topicNames(modelId) {
  if (!cache.has(modelId)) {
    const loading = get(`/v1/models/${encodeURIComponent(modelId)}/topics?rank=frex&weight=0.5&n=${NAMING_WORDS}`).then(({ topics }) => namesFrom(topics));
    loading.catch(() => cache.delete(modelId));
    cache.set(modelId, loading);
  }
  return cache.get(modelId);
}

/** Names from a topic listing already at hand (`/topics` answers). */
export function namesFrom(topics) {
  const byId = new Map(topics.map((t) => [t.id, t]));
  const label = (id) => (byId.has(id) ? topicLabelOf(byId.get(id)) : `topic ${id}`);
  return { topics, byId, label, short: (id) => cut(label(id)) };
}

/** Drop the cached names of `modelId` (a topic was renamed). */
export function forgetTopicNames(modelId) {
  cache.delete(modelId);
}
