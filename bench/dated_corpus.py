#!/usr/bin/env python3
"""A real dated corpus (issue 42): Debian changelog entries, their topics over time.

Builds a corpus from the Debian changelogs installed on the machine
(`/usr/share/doc/*/changelog.Debian.gz`): one document per changelog entry, id
`source/version` (an entry repeated in several binary packages' changelogs is kept
once), text its `  * ...` body lines (co-maintainer markers `[ Name ]` dropped), and two
covariates:

- `date`: the entry's trailer date in UTC as `YYYY-MM-DD` (topicd stores a fractional
  year);
- `group`: the source package's Debian section (from `dpkg-query`: the section of the
  binary package named after the source, else its binaries' most common one) folded
  into five levels: libraries (libs, libdevel, oldlibs, introspection), toolchain
  (devel, vcs, debug), languages (python, perl, java, javascript, interpreters, golang,
  rust, ruby, php, ...), system (admin, utils, net, shells, otherosfs, kernel) and
  other. Not `urgency`: three entries in four say `medium`, and which of `low` or
  `medium` an entry says tracks when `dch` changed its default more than the change
  itself, so it would mostly repeat the date.

Entries with fewer than `--min-tokens` word tokens are dropped and longer ones keep their
first `--max-words` (200) words: otherwise the kernel's stable-update entries (lists of
hundreds of upstream commits; 198 entries) are over half of all tokens. Above
`--max-docs` a deterministic sample (smallest SHA-1 of the id) is kept. The corpus is
written to `bench/out/dated_corpus.jsonl`.

Then, against a fresh `topicd serve` (bench/topicd_service.py), it uploads the corpus
(English stop words, `--min-df`, `--max-df`; as its own NDJSON), fits DCNT
with `covariates: ["date", "group"]` and `splines: {"date": 5}`, reads
`/effects?covariate=date` (a grid over the dates, and `contrast=B,A` between the
middles of the last and first thirds of the years: the difference is the share at the
first value less the share at the second), `/effects?covariate=group` (each other level
contrasted with the reference) and the topics' top words; then fits LDA with the same
covariates (effects by composition) and does the same.

The check: for each topic, the raw trend of its top `--words` words by frequency (their
share of all word tokens, per year) against the topic's date curve: Spearman's ρ
between the curve at each year's middle and the raw yearly share (years with at least
`--min-year-docs` documents), and the direction of change from the first third of those
years to the last (raw: pooled shares, "flat" within ±`--flat` relative; curve: the
contrast's interval above or below 0, else "flat"). A topic agrees when both directions
are the same. The summary repeats the check on the raw tokens of the reference group
only (the curve holds `group` there) and with each topic's top FREX words, which leave
out the words most topics share ("closes", "fix", "upstream"). For `group`, the level
where the curve is highest is compared with the level where the words' raw share is
highest. The tables go to stdout and everything to `bench/out/dated_corpus.json`.

Then, unless `--no-gdmr`, tomotopy's g-DMR on the same tokens (topicd's own, from `GET
/v1/corpora/{id}/tokens`), K and seed: the date as its numeric metadata (a degree-4
polynomial, tomotopy's example's), the group as its categorical one, 1 000 iterations
on as many worker threads as topicd uses; its curves hold the group at the reference
level as topicd's do. g-DMR gives point estimates only, so its directions use the
raw text's own rule (±`--flat`), and every model is also scored by that rule ("point").
A DCNT of several chains is read twice: its effects pooling the chains that hold each
topic (the default) and with `chains=all`. Every fit runs once per seed (`--seeds`, default 1,2,3) and
a summary table closes the output.

Usage: python3 bench/dated_corpus.py [--bin target/release/topicd] [--topics 15]
       [--iterations N] [--dcnt-params JSON]... [--lda-iterations 200] [--seeds 1,2,3]
       [--no-lda] [--no-gdmr] [--no-dcnt] [--corpus-only]
Standard library only (plus `dpkg-query` for the sections; tomotopy for g-DMR).
"""
import argparse
import collections
import datetime
import email.utils
import glob
import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from topicd_service import ROOT, Service  # noqa: E402

CHANGELOGS = "/usr/share/doc/*/changelog.Debian.gz"
OUT = os.path.join(ROOT, "bench", "out")

HEADER = re.compile(r"^(\S+) \(([^)]+)\)\s+[^;]*;\s*(.*)$")
TRAILER = re.compile(r"^ -- (.*?>)\s+(\S.*)$")
MARKER = re.compile(r"^\[\s*[^\]]*\]$")
# An approximation of topicd's tokenizer (UAX #29 words split at apostrophes, at least
# two characters, at least one letter), stop words kept: for counting, not for the model.
WORD = re.compile(r"\w+(?:[.:]\w+)*")
SPARK = "▁▂▃▄▅▆▇█"

GROUPS = {
    "libraries": {"libs", "libdevel", "oldlibs", "introspection"},
    "toolchain": {"devel", "vcs", "debug"},
    "languages": {"python", "perl", "java", "javascript", "interpreters", "golang", "rust", "ruby", "php", "lisp", "haskell", "ocaml", "r", "tcl", "lua"},
    "system": {"admin", "utils", "net", "shells", "otherosfs", "kernel"},
}


def words(text):
    """Lowercased word tokens of `text` (see WORD)."""
    out = []
    for w in WORD.findall(text.lower()):
        for p in re.split(r"['\u2019]", w):
            if len(p) >= 2 and any(c.isalpha() for c in p):
                out.append(p)
    return out


def group_of(section):
    section = section.split("/")[-1]  # "contrib/utils" → "utils"
    for g, members in GROUPS.items():
        if section in members:
            return g
    return "other"


def source_sections():
    """binary package → (source package, the source's section)."""
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f", "${Package}\t${Section}\t${source:Package}\n"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}
    rows = [line.split("\t") for line in out.splitlines() if line.count("\t") == 2]
    by_source = collections.defaultdict(collections.Counter)
    own = {}
    for pkg, section, src in rows:
        by_source[src][section] += 1
        if pkg == src:
            own[src] = section
    section_of = {src: own.get(src) or min(c.items(), key=lambda kv: (-kv[1], kv[0]))[0] for src, c in by_source.items()}
    return {pkg: (src, section_of[src]) for pkg, _, src in rows}


def parse_changelog(path):
    """The entries of one changelog.Debian.gz: (source, version, urgency, body lines, UTC datetime)."""
    entries, cur = [], None
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = HEADER.match(line)
            if m:
                urgency = re.search(r"urgency=(\w+)", m.group(3))
                cur = (m.group(1), m.group(2), urgency.group(1).lower() if urgency else None, [])
                continue
            t = TRAILER.match(line)
            if t and cur:
                try:
                    when = email.utils.parsedate_to_datetime(t.group(2).strip())
                except (TypeError, ValueError):
                    when = None
                if when is not None and when.tzinfo is not None:
                    entries.append(cur + (when.astimezone(datetime.timezone.utc),))
                cur = None
                continue
            if cur and line.startswith("  "):
                body = line.strip()
                if body and not MARKER.match(body):
                    cur[3].append(body)
    return entries


def truncate(text, max_words):
    """`text` cut after its `max_words`-th word (as `words` counts them)."""
    n = 0
    for m in WORD.finditer(text):
        n += len(words(m.group(0)))
        if n >= max_words:
            return text[:m.end()]
    return text


def build_corpus(min_tokens, max_docs, max_words):
    """The documents (dicts ready to upload) and a summary of what was read."""
    sections = source_sections()
    docs, seen = [], set()
    files = sorted(glob.glob(CHANGELOGS))
    read = short = truncated = 0
    for path in files:
        pkg = os.path.basename(os.path.dirname(path))
        src, section = sections.get(pkg, (None, "unknown"))
        for source, version, urgency, body, when in parse_changelog(path):
            read += 1
            key = f"{source}/{version}"
            if key in seen:
                continue
            seen.add(key)
            text = "\n".join(body)
            n_words = len(words(text))
            if n_words < min_tokens:
                short += 1
                continue
            truncated += n_words > max_words
            docs.append({"id": key, "text": truncate(text, max_words),
                         "covariates": {"date": when.strftime("%Y-%m-%d"), "group": group_of(section)},
                         "meta": {"source": source, "section": section, "urgency": urgency, "changelog_of": src or pkg}})
    unique = len(seen)
    if len(docs) > max_docs:
        docs = sorted(docs, key=lambda d: hashlib.sha1(d["id"].encode()).hexdigest())[:max_docs]
    docs.sort(key=lambda d: (d["covariates"]["date"], d["id"]))
    return docs, {"changelogs": len(files), "entries_read": read, "distinct_entries": unique, "dropped_short": short, "truncated": truncated, "kept": len(docs)}


def spearman(a, b):
    def ranks(x):
        order = sorted(range(len(x)), key=lambda i: x[i])
        r = [0.0] * len(x)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and x[order[j + 1]] == x[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2
            i = j + 1
        return r
    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra) ** 0.5
    vb = sum((y - mb) ** 2 for y in rb) ** 0.5
    return cov / (va * vb) if va and vb else None


def interp(points, x):
    """A curve's mean at x, linear between grid points."""
    xs = [p["x"] for p in points]
    if x <= xs[0]:
        return points[0]["mean"]
    for p, q in zip(points, points[1:]):
        if x <= q["x"]:
            t = (x - p["x"]) / (q["x"] - p["x"])
            return p["mean"] + t * (q["mean"] - p["mean"])
    return points[-1]["mean"]


def spark(values):
    lo, hi = min(values), max(values)
    return "".join(SPARK[min(len(SPARK) - 1, int((v - lo) / (hi - lo) * len(SPARK))) if hi > lo else 0] for v in values)


def nearest(points, x):
    return min(points, key=lambda p: abs(p["x"] - x))


class RawCounts:
    """Word counts per year and per group, for the raw trends."""

    def __init__(self, docs):
        self.by_year = collections.defaultdict(collections.Counter)
        self.by_group = collections.defaultdict(collections.Counter)
        self.year_tokens = collections.Counter()
        self.group_tokens = collections.Counter()
        self.year_docs = collections.Counter()
        self.by_group_year = collections.defaultdict(collections.Counter)
        self.group_year_tokens = collections.Counter()
        for d in docs:
            year = int(d["covariates"]["date"][:4])
            group = d["covariates"]["group"]
            w = words(d["text"])
            self.by_year[year].update(w)
            self.by_group[group].update(w)
            self.year_tokens[year] += len(w)
            self.group_tokens[group] += len(w)
            self.year_docs[year] += 1
            self.by_group_year[group, year].update(w)
            self.group_year_tokens[group, year] += len(w)

    def share(self, counts, total, ws):
        return sum(counts[w] for w in ws) / total if total else 0.0

    def pooled_share(self, years, ws, group=None):
        """The share of `ws` in the tokens of `years` (of one group's documents if given)."""
        if group is None:
            return sum(self.by_year[y][w] for y in years for w in ws) / sum(self.year_tokens[y] for y in years)
        total = sum(self.group_year_tokens[group, y] for y in years)
        return sum(self.by_group_year[group, y][w] for y in years for w in ws) / total if total else 0.0


def direction_of_ratio(first, last, flat):
    ratio = last / first if first else float("inf") if last else 1.0
    return "rise" if ratio > 1 + flat else "fall" if ratio < 1 / (1 + flat) else "flat"


def direction_of_interval(d):
    return "rise" if d["lower"] > 0 else "fall" if d["upper"] < 0 else "flat"


def fractional_year(date):
    """`YYYY-MM-DD` as a year and the share of it elapsed at the day's start."""
    day = datetime.date.fromisoformat(date)
    start = datetime.date(day.year, 1, 1)
    return day.year + (day - start).days / (datetime.date(day.year + 1, 1, 1) - start).days


def fit_gdmr(tokens, docs, group_levels, reference, grid, k, iterations, degree, seed, workers):
    """tomotopy's g-DMR on topicd's own tokens (`GET /v1/corpora/{id}/tokens`): the date
    as its one numeric metadata (a Legendre polynomial of `degree`, over the documents'
    range), the group as its categorical metadata, tomotopy's defaults otherwise. Curves
    hold the group at `reference`, as topicd's effects do; shares are `tdf(...,
    normalize=True)` (the Dirichlet mean up to alpha_epsilon: bench/effects_vs_tomotopy.py).
    Point estimates only: g-DMR gives no interval."""
    import tomotopy as tp
    t0 = time.time()
    model = tp.GDMRModel(k=k, degrees=[degree], seed=seed)
    for d in docs:
        ws = tokens.get(d["id"])
        if ws:
            model.add_doc(ws, numeric_metadata=[fractional_year(d["covariates"]["date"])], metadata=d["covariates"]["group"])
    model.train(iterations, workers=workers)
    fit_s = time.time() - t0
    lo, hi = map(float, model.metadata_range[0])
    xs = [lo + (hi - lo) * i / (grid - 1) for i in range(grid)]
    curves = [[] for _ in range(k)]
    for x in xs:
        for t, share in enumerate(model.tdf([x], reference, normalize=True)):
            curves[t].append({"x": x, "mean": float(share)})
    by_level = {g: model.tdf([(lo + hi) / 2], g, normalize=True) for g in group_levels}
    proportions = [0.0] * k
    for doc in model.docs:
        for t, p in enumerate(doc.get_topic_dist()):
            proportions[t] += float(p) / len(model.docs)
    topics = [{"id": t, "proportion": proportions[t], "words": [w for w, _ in model.get_topic_words(t, top_n=10)],
               "points": curves[t], "group": {g: float(by_level[g][t]) for g in group_levels}} for t in range(k)]
    return {"fit_seconds": fit_s, "topics": topics, "tomotopy": tp.__version__, "isa": tp.isa, "workers": workers,
            "degree": degree, "range": [lo, hi], "ll_per_word": float(model.ll_per_word)}


class RawCheck:
    """What every model's topics are checked against: the raw text's yearly and pooled
    shares of a topic's words over the compared years, in all groups and in the
    reference group, and its share per group."""

    def __init__(self, raw, years, thirds, group_levels, reference, flat):
        self.raw, self.years, self.thirds, self.group_levels, self.reference, self.flat = raw, years, thirds, group_levels, reference, flat
        # The middles of the first and last thirds: where curves are compared.
        self.a, self.b = (thirds[0][0] + thirds[0][-1] + 1) / 2, (thirds[2][0] + thirds[2][-1] + 1) / 2

    def direction(self, ws, group=None):
        """The raw trend of `ws`, first third against last (of `group`'s entries if given)."""
        return direction_of_ratio(self.raw.pooled_share(self.thirds[0], ws, group), self.raw.pooled_share(self.thirds[2], ws, group), self.flat)

    def row(self, topic, proportion, ws, points, model_group, interval_difference=None):
        """One topic's check: its curve (`points`, `{"x", "mean"}` and, with
        `interval_difference`, intervals) against its words `ws`. The curve's direction
        is its contrast's interval where it has one, else the point rule; the point
        rule's verdict is recorded either way."""
        raw, years = self.raw, self.years
        yearly_raw = [raw.share(raw.by_year[y], raw.year_tokens[y], ws) for y in years]
        yearly_curve = [interp(points, y + 0.5) for y in years]
        raw_a, raw_b = raw.pooled_share(self.thirds[0], ws), raw.pooled_share(self.thirds[2], ws)
        raw_dir = direction_of_ratio(raw_a, raw_b, self.flat)
        curve_a, curve_b = interp(points, self.a), interp(points, self.b)
        point_dir = direction_of_ratio(curve_a, curve_b, self.flat)
        if interval_difference is None:
            curve_dir, start, end, difference = point_dir, {"mean": curve_a}, {"mean": curve_b}, {"mean": curve_b - curve_a}
        else:
            curve_dir, start, end, difference = direction_of_interval(interval_difference), nearest(points, self.a), nearest(points, self.b), interval_difference
        ref_a, ref_b = raw.pooled_share(self.thirds[0], ws, self.reference), raw.pooled_share(self.thirds[2], ws, self.reference)
        raw_group = {g: raw.share(raw.by_group[g], raw.group_tokens[g], ws) for g in self.group_levels}
        return {
            "topic": topic, "proportion": proportion, "words": ws,
            "curve": {"start": start, "end": end, "difference": difference, "grid": points},
            "curve_direction": curve_dir, "curve_direction_point": point_dir,
            "raw": {"first_third": raw_a, "last_third": raw_b, "yearly": dict(zip(years, yearly_raw))},
            "raw_direction": raw_dir,
            "raw_in_reference": {"level": self.reference, "first_third": ref_a, "last_third": ref_b, "direction": direction_of_ratio(ref_a, ref_b, self.flat)},
            "spearman": spearman(yearly_curve, yearly_raw), "verdict": verdict_of(raw_dir, curve_dir), "verdict_point": verdict_of(raw_dir, point_dir),
            "frex": None,
            "group": {"model": model_group, "raw": raw_group, "model_top": max(model_group, key=model_group.get) if model_group else None,
                      "raw_top": max(raw_group, key=raw_group.get)},
            "spark_curve": spark(yearly_curve), "spark_raw": spark(yearly_raw),
        }


def check_curves(fitted, check):
    """The raw-text check of topics given as `{"id", "proportion", "words", "points",
    "group"}` with point estimates only (g-DMR): directions by the ratio rule the raw
    text uses (the curve's share at the last third's middle against the first's, flat
    within ±`flat`)."""
    rows = [check.row(t["id"], t["proportion"], t["words"], t["points"], t["group"]) for t in fitted["topics"]]
    return {"contrast": [check.a, check.b], "effects_method": "tdf", "held_at": {"group": check.reference}, "monte_carlo": None, "draws": None,
            "date_effects_seconds": None, "topics": rows}


def verdict_of(raw_dir, curve_dir):
    return "agree" if raw_dir == curve_dir else "disagree" if {raw_dir, curve_dir} == {"rise", "fall"} else "partly"


def check_model(svc, model_id, check, n_words, grid, chains="matched"):
    """Topics, their date and group effects, and the raw trends of their top words (by
    frequency, and a second time by FREX)."""
    topics = svc.req("GET", f"/v1/models/{model_id}/topics?n={n_words}")["topics"]
    frex = {t["id"]: [w["word"] for w in t["words"]] for t in svc.req("GET", f"/v1/models/{model_id}/topics?n={n_words}&rank=frex")["topics"]}
    a, b = check.a, check.b
    started = time.time()
    # `difference` is the share at the contrast's first value less the share at its second
    # (docs/api.md does not say which way): later first, so a rise is positive.
    eff = svc.req("GET", f"/v1/models/{model_id}/effects?covariate=date&grid={grid}&contrast={b},{a}&chains={chains}")
    date_s = time.time() - started
    by_level = {}
    group_eff = None
    for level in check.group_levels:
        if level == check.reference:
            continue
        group_eff = svc.req("GET", f"/v1/models/{model_id}/effects?covariate=group&contrast={level},{check.reference}&chains={chains}")
        for t in group_eff["topics"]:
            by_level.setdefault(t["id"], {})[level] = t["difference"]
    curves = {t["id"]: t for t in eff["topics"]}
    group_points = {t["id"]: {p["x"]: p for p in t["points"]} for t in group_eff["topics"]} if group_eff else {}
    rows = []
    for t in topics:
        ws = [w["word"] for w in t["words"]]
        c = curves[t["id"]]
        row = check.row(t["id"], t.get("proportion"), ws, c["points"], {g: p["mean"] for g, p in group_points.get(t["id"], {}).items()}, c["difference"])
        yearly_curve = [interp(c["points"], y + 0.5) for y in check.years]
        frex_yearly = [check.raw.share(check.raw.by_year[y], check.raw.year_tokens[y], frex[t["id"]]) for y in check.years]
        frex_dir = check.direction(frex[t["id"]])
        row["frex"] = {"words": frex[t["id"]], "raw_direction": frex_dir, "spearman": spearman(yearly_curve, frex_yearly), "agree": frex_dir == row["curve_direction"]}
        row["group"]["contrasts_vs_reference"] = by_level.get(t["id"], {})
        rows.append(row)
    return {"contrast": [a, b], "effects_method": eff.get("method"), "held_at": eff.get("held_at"), "monte_carlo": eff.get("monte_carlo"),
            "draws": eff.get("draws"), "date_effects_seconds": date_s, "topics": rows}


def table(title, res, years):
    a, b = res["contrast"]
    lines = [f"### {title}", "",
             f"Curve: expected topic share at ≈{a:.0f} → ≈{b:.0f} (nearest grid points, 95 % interval), held at {json.dumps(res['held_at'])}; "
             f"raw: share of all word tokens taken by the topic's top words, years {years[0]}–{years[0] + len(years) - 1} pooled by thirds; "
             f"ρ: Spearman over {len(years)} years; sparklines: curve / raw per year.", "",
             "| topic | share | top words | curve start → end | Δ (95 %) | raw first → last third | raw in reference | ρ | curve / raw per year | verdict | top group: model / raw |",
             "|---:|---:|---|---|---|---|---|---:|---|---|---|"]
    def interval(p, sign=""):
        return f"{p['mean']:{sign}.3f}" + (f" [{p['lower']:{sign}.3f}, {p['upper']:{sign}.3f}]" if "lower" in p else "")

    for r in res["topics"]:
        s, e, d = r["curve"]["start"], r["curve"]["end"], r["curve"]["difference"]
        rho = "–" if r["spearman"] is None else f"{r['spearman']:+.2f}"
        prop = "–" if r["proportion"] is None else f"{r['proportion']:.3f}"
        lines.append(f"| {r['topic']} | {prop} | {' '.join(r['words'][:6])} | {interval(s)} → {interval(e)} | {interval(d, '+')} {r['curve_direction']} | "
                     f"{100 * r['raw']['first_third']:.2f} % → {100 * r['raw']['last_third']:.2f} % {r['raw_direction']} | {r['raw_in_reference']['direction']} | {rho} | "
                     f"`{r['spark_curve']}` / `{r['spark_raw']}` | {r['verdict']} | {r['group']['model_top']} / {r['group']['raw_top']} |")
    n = len(res["topics"])
    agree = sum(r["verdict"] == "agree" for r in res["topics"])
    agree_point = sum(r["verdict_point"] == "agree" for r in res["topics"])
    opposite = sum(r["verdict"] == "disagree" for r in res["topics"])
    pos = sum(1 for r in res["topics"] if r["spearman"] is not None and r["spearman"] > 0)
    top = sum(r["group"]["model_top"] == r["group"]["raw_top"] for r in res["topics"])
    ref = sum(r["raw_in_reference"]["direction"] == r["curve_direction"] for r in res["topics"])
    with_frex = [r for r in res["topics"] if r["frex"] is not None]
    fx = sum(r["frex"]["agree"] for r in with_frex)
    fx_pos = sum(1 for r in with_frex if r["frex"]["spearman"] is not None and r["frex"]["spearman"] > 0)
    frex_text = (f"with each topic's top {len(res['topics'][0]['words'])} FREX words instead, directions agree for {fx} / {n} and ρ > 0 for {fx_pos} / {n}; "
                 if with_frex else "")
    lines += ["", f"Directions agree for **{agree} / {n}** topics, opposite for {opposite} (the rest: one side flat); by the curve's point estimates "
              f"(the raw text's ±{100 * res['flat']:.0f} % rule) **{agree_point} / {n}**; ρ > 0 for {pos} / {n}; "
              f"directions agree with the raw trend within the reference level for {ref} / {n}; {frex_text}the top group matches for {top} / {n}."]
    res["summary"] = {"topics": n, "agree": agree, "agree_point": agree_point, "opposite": opposite, "partly": n - agree - opposite, "rho_positive": pos, "agree_in_reference": ref, "frex_agree": fx, "frex_rho_positive": fx_pos, "group_top_match": top}
    return lines


def summary_table(fits, k):
    """One row per fitted configuration, its seeds' counts side by side."""
    lines = [f"| K = {k} | seeds | fit s | max R̂ | agree (interval) | agree (point, ±flat) | opposite | agree in reference level | agree, top FREX words |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, runs in fits.items():
        def col(f):
            return " ".join(f(r) for r in runs)
        lines.append(f"| {name} | {col(lambda r: str(r['seed']))} | {col(lambda r: format(r['fit_seconds'], '.1f'))} | "
                     f"{col(lambda r: '–' if r.get('max_rhat') is None else format(r['max_rhat'], '.2f'))} | "
                     f"{col(lambda r: str(r['summary']['agree']))} | {col(lambda r: str(r['summary']['agree_point']))} | {col(lambda r: str(r['summary']['opposite']))} | "
                     f"{col(lambda r: str(r['summary']['agree_in_reference']))} | {col(lambda r: str(r['summary']['frex_agree']) if r['topics'][0]['frex'] else '–')} |")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "topicd"))
    ap.add_argument("--topics", type=int, default=15)
    ap.add_argument("--iterations", type=int, help="DCNT scans (default: DCNT's own, 250 with covariates)")
    ap.add_argument("--lda-iterations", type=int, default=200, help="LDA sweeps (its default)")
    ap.add_argument("--no-lda", action="store_true")
    ap.add_argument("--no-gdmr", action="store_true", help="skip tomotopy's g-DMR")
    ap.add_argument("--gdmr-iterations", type=int, default=1000, help="g-DMR's Gibbs sweeps (as DCNT's default scans)")
    ap.add_argument("--gdmr-degree", type=int, default=4, help="g-DMR's polynomial degree on the date (tomotopy's example's)")
    ap.add_argument("--gdmr-workers", type=int, default=os.cpu_count(), help="g-DMR's threads (topicd uses every core)")
    ap.add_argument("--no-dcnt", action="store_true")
    ap.add_argument("--dcnt-params", action="append", help="more DCNT params, as JSON (its defaults otherwise); repeat for several DCNT rows")
    ap.add_argument("--corpus-only", action="store_true", help="build and summarise the corpus, fit nothing")
    ap.add_argument("--seeds", type=lambda x: [int(v) for v in x.split(",")], default=[1, 2, 3], help="comma-separated seeds: every fit once per seed")
    ap.add_argument("--min-tokens", type=int, default=8)
    ap.add_argument("--max-docs", type=int, default=12000)
    ap.add_argument("--max-words", type=int, default=200, help="keep each entry's first this many words")
    ap.add_argument("--min-df", type=int, default=5)
    ap.add_argument("--max-df", type=float, default=0.5)
    ap.add_argument("--splines", type=int, default=5, help="B-spline columns for the date")
    ap.add_argument("--words", type=int, default=10, help="top words per topic for the raw trend")
    ap.add_argument("--min-year-docs", type=int, default=30)
    ap.add_argument("--flat", type=float, default=0.1, help="relative change within which a raw trend is flat")
    ap.add_argument("--grid", type=int, default=61)
    args = ap.parse_args()

    started = time.time()
    docs, read = build_corpus(args.min_tokens, args.max_docs, args.max_words)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "dated_corpus.jsonl"), "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps(d, ensure_ascii=False) + "\n")
    raw = RawCounts(docs)
    years = [y for y in sorted(raw.year_docs) if raw.year_docs[y] >= args.min_year_docs]
    years = list(range(years[0], years[-1] + 1))  # a contiguous span; a thin year inside it stays
    third = len(years) // 3
    thirds = (years[:third], years[third:len(years) - third], years[len(years) - third:])
    urgency_by_third = [collections.Counter(d["meta"]["urgency"] for d in docs if int(d["covariates"]["date"][:4]) in t) for t in thirds]
    print(f"Read {read['changelogs']} changelogs, {read['entries_read']} entries ({read['distinct_entries']} distinct), "
          f"{read['dropped_short']} under {args.min_tokens} words, {len(docs)} kept ({read['truncated']} cut to {args.max_words} words) ({time.time() - started:.1f} s). "
          f"Load average {os.getloadavg()[0]:.2f}.")
    print("Urgency by third of the years:", [dict(c.most_common(3)) for c in urgency_by_third])

    if args.corpus_only:
        return
    result = {"source": CHANGELOGS, "read": read, "args": vars(args), "years": years, "thirds": [[t[0], t[-1]] for t in thirds],
              "year_documents": {y: raw.year_docs[y] for y in sorted(raw.year_docs)}, "urgency_by_third": [dict(c) for c in urgency_by_third],
              "load_average": os.getloadavg()[0], "fits": {}}
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        svc = Service(args.bin, os.path.join(tmp, "topicd.db"), 18000 + os.getpid() % 1000)
        try:
            body = "\n".join(json.dumps(d, ensure_ascii=False) for d in docs).encode()
            t0 = time.time()
            corpus = svc.req("POST", f"/v1/corpora?name=debian-changelogs&stopwords=english&min_df={args.min_df}&max_df={args.max_df}", body, "application/x-ndjson")
            upload_s = time.time() - t0
            cov = {c["name"]: c for c in corpus["covariates"]}
            levels = [lv["level"] for lv in cov["group"]["levels"]]
            reference = levels[0]
            check = RawCheck(raw, years, thirds, levels, reference, args.flat)
            date = cov["date"]
            result["corpus"] = {k: corpus.get(k) for k in ("id", "num_documents", "num_terms", "num_tokens", "num_dropped_empty", "num_types_before_pruning", "covariates")}
            result["corpus"]["upload_seconds"] = upload_s
            lines.append(f"Corpus: {corpus['num_documents']} documents, {corpus['num_tokens']} tokens, {corpus['num_terms']} terms "
                         f"({corpus['num_types_before_pruning']} before min_df {args.min_df} / max_df {args.max_df}); dates {date['min']:.2f}–{date['max']:.2f} "
                         f"(mean {date['mean']:.2f}); group levels " + ", ".join(f"{lv['level']} {lv['documents']}" for lv in cov["group"]["levels"]) +
                         f"; upload {upload_s:.1f} s.")
            lines.append(f"Years compared: {years[0]}–{years[-1]} (thirds {thirds[0][0]}–{thirds[0][-1]}, {thirds[1][0]}–{thirds[1][-1]}, {thirds[2][0]}–{thirds[2][-1]}); "
                         f"documents per year: " + ", ".join(f"{y}: {raw.year_docs[y]}" for y in years))
            dcnt_base = {"topics": args.topics, **({"iterations": args.iterations} if args.iterations else {})}
            fits = [] if args.no_dcnt else [(f"dcnt {extra}" if extra != "{}" else "dcnt", "dcnt", dict(dcnt_base, **json.loads(extra)))
                                             for extra in args.dcnt_params or ["{}"]]
            if not args.no_lda:
                fits.append(("lda", "lda", {"topics": args.topics, "iterations": args.lda_iterations}))
            tokens = None
            for seed in args.seeds:
                for name, family, params in fits:
                    params = dict(params, covariates=["date", "group"], splines={"date": args.splines})
                    t0 = time.time()
                    job = svc.fit(corpus["id"], family, params, seed=seed)
                    fit_s = time.time() - t0
                    if job["status"] != "succeeded":
                        raise SystemExit(f"{name} fit {job['status']}: {json.dumps(job)[:2000]}")
                    conv = job.get("convergence") or {}
                    # A DCNT of several chains is read twice: its effects pooling only the
                    # chains that hold each topic (the default) and every chain.
                    poolings = ["matched", "all"] if family == "dcnt" and (conv.get("chains") or 1) > 1 else ["matched"]
                    for pooling in poolings:
                        label = name if pooling == "matched" else f"{name}, chains=all"
                        res = check_model(svc, job["model_id"], check, args.words, args.grid, pooling)
                        res.update({"flat": args.flat, "params": params, "seed": seed, "fit_seconds": fit_s, "model_id": job["model_id"],
                                    "max_rhat": conv.get("max_rhat"), "convergence_warning": conv.get("warning"), "effects_chains": pooling})
                        result["fits"].setdefault(label, []).append(res)
                        lines.append("")
                        lines += table(f"{label.upper()}, K = {args.topics}, {params.get('iterations', 'default')} iterations, seed {seed}: fit {fit_s:.1f} s, "
                                       f"max R̂ {'–' if conv.get('max_rhat') is None else format(conv['max_rhat'], '.2f')}, /effects ({res['effects_method']}) {res['date_effects_seconds']:.2f} s", res, years)
                if not args.no_gdmr:
                    if tokens is None:
                        with urllib.request.urlopen(svc.base + f"/v1/corpora/{corpus['id']}/tokens", timeout=600) as f:
                            tokens = {row["id"]: row["tokens"] for row in map(json.loads, f.read().decode().splitlines())}
                    gdmr = fit_gdmr(tokens, docs, levels, reference, args.grid, args.topics, args.gdmr_iterations, args.gdmr_degree, seed, args.gdmr_workers)
                    res = check_curves(gdmr, check)
                    res.update({"flat": args.flat, "seed": seed, **{k: v for k, v in gdmr.items() if k != "topics"}})
                    result["fits"].setdefault("gdmr", []).append(res)
                    lines.append("")
                    lines += table(f"tomotopy {gdmr['tomotopy']} g-DMR ({gdmr['isa']}), K = {args.topics}, degree {args.gdmr_degree}, {args.gdmr_iterations} iterations, "
                                   f"{args.gdmr_workers} worker(s), seed {seed}: fit {gdmr['fit_seconds']:.1f} s", res, years)
            lines.append("")
            lines += summary_table(result["fits"], args.topics)
        except urllib.error.HTTPError as e:
            raise SystemExit(f"{e.code} {e.reason} on {e.url}: {e.read().decode(errors='replace')[:2000]}")
        finally:
            svc.stop()
    result["wall_seconds"] = time.time() - started
    lines.append("")
    lines.append(f"Wall clock {result['wall_seconds']:.0f} s.")
    print("\n".join(lines))
    with open(os.path.join(OUT, "dated_corpus.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
