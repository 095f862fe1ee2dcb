#!/usr/bin/env python3
"""Sweeps over K (issue 58): does a sweep recover a known K, and how does each K's fit
compare with tomotopy's LDA on the same documents?

  python3 bench/sweep_k.py target/release/topicd [--truths 8,15,25] [--replicates 5]
      [--grid 4,6,8,11,15,20,25,32,40] [--iterations 200] [--chains 2] [--tomotopy]
      [--seeds 5] [--params '{"alpha": 0.1}'] [--out bench/out/sweep_k.json]

Recovery: for each true K and replicate, a corpus drawn from LDA itself (V = 3 000 words,
2 600–3 000 of which occur; D = 2 000 documents of Poisson(120) tokens; topics
φ_k ~ Dirichlet(0.05), proportions
θ_d ~ Dirichlet(0.1); seed 1000·K + replicate), every tenth document tagged
`split: test`. One sweep per corpus (`model: lda`, the grid, `chains`, `iterations`, topicd's
defaults otherwise, seed 1, `include_hdp`): the tagged documents are every fit's held-out
documents. Reported per corpus: the suggested K, the K of the highest mean stability,
the HDP's inferred K, and whether the suggestion is within ±20 % of the truth.

Against tomotopy (`--tomotopy`, first replicate of each truth): tomotopy.LDAModel(k=K)
with its defaults (α = 0.1, η = 0.01) trained for the same iterations on the same
training documents with the same threads, scored by the same document completion on
the same test documents (θ̂ by `infer` on the observed half, the split by topicd's hash:
models/completion.rs). Per K: both held-out scores, topicd's fit time (the row's `fit_s`,
chains counted) and tomotopy's `train` time, and the difference in held-out score in
standard errors (each score's delta-method SE over the test documents, combined as if
independent: a conservative z, since both are scored on the same documents). Also the time a sweep adds beyond its
fits: its wall time from submission until its rows are scored, less the sum of `fit_s`.

Over seeds (`--tomotopy --seeds N`, N ≥ 2): both tools fit each K of the first replicate
again with fit seeds 2..N (topicd: one more sweep per seed, without its HDP row). Which
merge of planted topics a chain settles in below the true K is the seed's luck, on
either side; so per K the mean difference over the N seed pairs (seed s of topicd
against seed s of tomotopy, the same test documents) with its standard error over those
pairs (the SD of the N differences / √N: the seeds' spread, the test documents held
fixed), and the median over seeds of topicd's time per chain over tomotopy's.

The server runs with its defaults (threads = the machine's cores, a rate limit that
this script's one request at a time never reaches).
"""
import argparse
import json
import math
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from topicd_service import Service  # noqa: E402
from gensim_hdp import is_heldout  # noqa: E402

V, D, MEAN_LENGTH, TOPIC_CONCENTRATION, DOC_CONCENTRATION = 3000, 2000, 120, 0.05, 0.1


def draw_corpus(k, seed):
    """Documents drawn from LDA with `k` topics: [{"id", "counts", "split"}]."""
    import numpy as np

    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(V, TOPIC_CONCENTRATION), size=k)
    docs = []
    for d in range(D):
        theta = rng.dirichlet(np.full(k, DOC_CONCENTRATION))
        n = max(1, rng.poisson(MEAN_LENGTH))
        z = rng.choice(k, size=n, p=theta)
        words = np.concatenate([rng.choice(V, size=int((z == t).sum()), p=phi[t]) for t in range(k) if (z == t).any()])
        ids, counts = np.unique(words, return_counts=True)
        docs.append({"id": f"d{d}", "counts": {f"w{int(w):04d}": int(c) for w, c in zip(ids, counts)}, "split": "test" if d % 10 == 9 else "train"})
    return docs


def upload(service, docs, name):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for d in docs:
            f.write(json.dumps(d) + "\n")
        path = f.name
    try:
        return service.upload(path, f"name={name}&stopwords=none")
    finally:
        os.unlink(path)


def run_sweep(service, corpus_id, grid, iterations, chains, include_hdp, extra=None, seed=1):
    t0 = time.perf_counter()
    sweep = service.req("POST", "/v1/sweeps", {
        "corpus_id": corpus_id, "model": "lda", "topics": grid, "chains": chains,
        "params": {"iterations": iterations, **(extra or {})}, "seed": seed, "include_hdp": include_hdp,
    })
    while sweep["status"] in ("queued", "running"):
        time.sleep(1.0)
        sweep = service.req("GET", f"/v1/sweeps/{sweep['id']}")
    wall = time.perf_counter() - t0
    return sweep, wall


def tomotopy_row(docs, k, iterations, threads, seed=1):
    """tomotopy's LDA at K = k on the training documents; document completion on the test ones."""
    import tomotopy as tp

    model = tp.LDAModel(k=k, seed=seed)
    for d in docs:
        if d["split"] != "test":
            model.add_doc([w for w, n in sorted(d["counts"].items()) for _ in range(n)])
    model.train(0, workers=threads)
    t0 = time.perf_counter()
    model.train(iterations, workers=threads)
    seconds = time.perf_counter() - t0
    vocab = {w: i for i, w in enumerate(model.used_vocabs)}
    phi = [model.get_topic_word_dist(t) for t in range(k)]
    terms = []  # per test document: (log-likelihood of its held-out half, its tokens)
    for d in docs:
        if d["split"] != "test":
            continue
        observed, held = [], []
        for w, n in sorted(d["counts"].items()):
            h = sum(1 for j in range(n) if is_heldout(d["id"], w, j))
            observed += [w] * (n - h)
            held += [(w, h)] if h else []
        observed = [w for w in observed if w in vocab]
        held = [(w, h) for w, h in held if w in vocab]
        if not observed or not held:
            continue
        doc = model.make_doc(observed)
        theta, _ = model.infer(doc, iterations=100, workers=1)
        terms.append((sum(h * math.log(sum(theta[t] * phi[t][vocab[w]] for t in range(k))) for w, h in held), sum(h for _, h in held)))
    return {"heldout_loglik_per_token": sum(v for v, _ in terms) / sum(n for _, n in terms), "heldout_se": ratio_standard_error(terms), "fit_s": seconds}


def ratio_standard_error(terms):
    """The delta-method SE of Σv/Σn over documents (v, n), as topicd's `heldout_se` (selection/intervals.rs)."""
    m, tokens = len(terms), sum(n for _, n in terms)
    ratio = sum(v for v, _ in terms) / tokens
    return math.sqrt(m / (m - 1) * sum((v - ratio * n) ** 2 for v, n in terms)) / tokens


def difference_z(row, anchor):
    """topicd's held-out score less tomotopy's, in standard errors of the difference. The two
    are scored on the same documents, so their errors are positively correlated and
    √(se₁² + se₂²) overstates the difference's SE: |z| < 2 is within noise, conservatively."""
    se = math.hypot(row["heldout_se"] or 0.0, anchor["heldout_se"])
    return (row["heldout_loglik_per_token"] - anchor["heldout_loglik_per_token"]) / se if se > 0 else None


def over_seeds(service, corpus_id, docs, grid, a, threads, first):
    """Per K, topicd's held-out score and time per chain against tomotopy's over fit seeds
    1..a.seeds (seed 1: the rows and `tomotopy` already measured, `first`)."""
    rows_1, tomotopy_1 = first
    pairs = {k: [] for k in grid}
    for seed in range(1, a.seeds + 1):
        if seed == 1:
            rows, anchors = rows_1, tomotopy_1
        else:
            sweep, _ = run_sweep(service, corpus_id, grid, a.iterations, a.chains, include_hdp=False, extra=json.loads(a.params), seed=seed)
            rows = [x for x in sweep["rows"] if not x["inferred_topics"]]
            anchors = {k: tomotopy_row(docs, k, a.iterations, threads, seed=seed) for k in grid}
        for x in rows:
            anchor = anchors[x["topics"]]
            pairs[x["topics"]].append((x["heldout_loglik_per_token"] - anchor["heldout_loglik_per_token"], x["fit_s"] / a.chains / anchor["fit_s"]))
    out = {}
    for k, p in pairs.items():
        d = [x for x, _ in p]
        mean = sum(d) / len(d)
        se = math.sqrt(sum((x - mean) ** 2 for x in d) / (len(d) - 1) / len(d))
        out[k] = {"seeds": len(d), "mean_difference": mean, "se": se, "differences": d,
                  "time_per_chain_ratio_median": sorted(r for _, r in p)[len(p) // 2], "time_ratios": [r for _, r in p]}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("--truths", default="8,15,25")
    ap.add_argument("--replicates", type=int, default=5)
    ap.add_argument("--grid", default="4,6,8,11,15,20,25,32,40")
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--tomotopy", action="store_true")
    ap.add_argument("--seeds", type=int, default=1, help="with --tomotopy: repeat the comparison over fit seeds 1..N on both sides")
    ap.add_argument("--params", default="{}", help="more LDA params for every fit, as JSON (e.g. '{\"alpha\": 0.1}')")
    ap.add_argument("--port", type=int, default=18458)
    ap.add_argument("--real", help="instead of drawn corpora, sweep this JSONL corpus (texts; English stop words, min_df 2), every tenth document held out")
    ap.add_argument("--upload-query", help="more upload query parameters for --real (e.g. label_identity=path for linuxdoc, whose directory labels repeat names)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "out", "sweep_k.json"))
    a = ap.parse_args()
    truths = [int(x) for x in a.truths.split(",")]
    grid = [int(x) for x in a.grid.split(",")]
    threads = os.cpu_count()
    db = tempfile.mkdtemp(prefix="sweep-k-")
    service = Service(a.binary, os.path.join(db, "topicd.db"), a.port)
    results = []
    try:
        if a.real:
            corpus = service.upload(a.real, "name=real&duplicate_ids=keep_first&stopwords=english&min_df=2" + (f"&{a.upload_query}" if a.upload_query else ""))
            t0 = time.perf_counter()
            sweep = service.req("POST", "/v1/sweeps", {"corpus_id": corpus["id"], "model": "lda", "topics": grid, "chains": a.chains, "params": {"iterations": a.iterations, **json.loads(a.params)}, "seed": 1, "heldout_fraction": 0.1, "include_hdp": True})
            while sweep["status"] in ("queued", "running"):
                time.sleep(1.0)
                sweep = service.req("GET", f"/v1/sweeps/{sweep['id']}")
            results.append({"corpus": a.real, "wall_s": time.perf_counter() - t0, "suggested": sweep["suggested_topics"], "suggestion": sweep["suggestion"], "rows": sweep["rows"]})
            for r in sweep["rows"]:
                print(json.dumps({k: r[k] for k in ("topics", "model", "heldout_loglik_per_token", "coherence_npmi", "exclusivity", "stability", "unstable_topics", "residual_dispersion", "rhat_max", "fit_s")}), flush=True)
            print(json.dumps({"suggested": sweep["suggested_topics"], "rule": sweep["suggestion"]["rule"]}))
            truths = []
        for truth in truths:
            for r in range(1, a.replicates + 1):
                docs = draw_corpus(truth, 1000 * truth + r)
                corpus = upload(service, docs, f"lda-k{truth}-r{r}")
                sweep, wall = run_sweep(service, corpus["id"], grid, a.iterations, a.chains, include_hdp=True, extra=json.loads(a.params))
                rows = [x for x in sweep["rows"] if not x["inferred_topics"]]
                hdp = next((x for x in sweep["rows"] if x["inferred_topics"]), None)
                stable = [x for x in rows if x["stability"] is not None]
                best_stability = max(stable, key=lambda x: x["stability"])["topics"] if stable else None
                suggested = sweep["suggested_topics"]
                entry = {
                    "truth": truth, "replicate": r, "suggested": suggested,
                    "within_20pct": suggested is not None and abs(suggested - truth) <= 0.2 * truth,
                    "best_stability": best_stability, "hdp_topics": hdp and hdp["topics"],
                    "sweep_wall_s": wall, "sum_fit_s": sum(x["fit_s"] or 0 for x in sweep["rows"]),
                    "rows": [{k: x[k] for k in ("topics", "heldout_loglik_per_token", "heldout_se", "coherence_npmi", "exclusivity", "stability", "unstable_topics", "residual_dispersion", "rhat_max", "fit_s")} for x in sweep["rows"]],
                }
                if a.tomotopy and r == 1:
                    entry["tomotopy"] = {k: tomotopy_row(docs, k, a.iterations, threads) for k in grid}
                    for x in rows:
                        anchor = entry["tomotopy"].get(x["topics"])
                        if anchor and x["heldout_loglik_per_token"] is not None:
                            anchor["difference"] = x["heldout_loglik_per_token"] - anchor["heldout_loglik_per_token"]
                            anchor["difference_z"] = difference_z(x, anchor)
                    print(json.dumps({"truth": truth, "against_tomotopy": {k: {n: round(v, 4) if isinstance(v, float) else v for n, v in t.items()} for k, t in entry["tomotopy"].items()}}), flush=True)
                    if a.seeds > 1:
                        entry["over_seeds"] = over_seeds(service, corpus["id"], docs, grid, a, threads, (rows, entry["tomotopy"]))
                        print(json.dumps({"truth": truth, "over_seeds": {k: {n: round(v, 4) if isinstance(v, float) else v for n, v in t.items() if not isinstance(v, list)} for k, t in entry["over_seeds"].items()}}), flush=True)
                results.append(entry)
                print(json.dumps({k: v for k, v in entry.items() if k not in ("rows", "tomotopy", "over_seeds")}), flush=True)
    finally:
        service.stop()
    hits = sum(e.get("within_20pct", False) for e in results)
    summary = {"corpora": len(results), "within_20pct": hits, "share": hits / max(1, len(results)), "threads": threads,
               "grid": grid, "iterations": a.iterations, "chains": a.chains, "seeds": a.seeds, "params": json.loads(a.params)}
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump({"summary": summary, "results": results}, f, indent=1)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
