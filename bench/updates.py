#!/usr/bin/env python3
"""Letting a model grow (issue 60): is updating a fitted LDA with new documents as good
as refitting on everything, in a fraction of the time, and do its topics stay the
parent's?

Split. The corpus's documents (AppStream by default: ../shared/data/appstream.jsonl,
the first line of each repeated id kept; or linuxdoc's bag of words as
bench/prepare_linuxdoc.py writes it, which that script is run to make if missing) are
shuffled with `--split-seed`; the first 10 % are the TEST documents, which no model
sees; of the rest the first 80 % are the OLD documents and the last 20 % the NEW ones.

topicd (one job at a time, the server on `--threads` threads):
  parent       LDA K = 20 (alpha 0.1, beta 0.01, seed 1) on the old documents, P sweeps
               (`--parent-iterations`, 400).
  update       the new documents uploaded with `POST /v1/corpora?like=<old corpus>`
               (preprocessed exactly as the old ones), then
               `POST /v1/models/{parent}/update` with U sweeps (`--update-iterations`,
               100), seed 1, no new topics.
  full refit   LDA on one corpus of all old and new documents (uploaded with the same
               preprocessing), P + U sweeps (the same total sweeps), seeds 1 and 2: the
               second seed is the anchor of how far two seeds of a refit are apart.
Times are the jobs' started_at to finished_at.

Preprocessing. AppStream: English stop words, `min_df` 1 (the default), so a
document's words do not depend on which corpus it is uploaded in: the old corpus's
vocabulary is the old documents' words, the update's and the full refit's are the old
and new documents' words, and every corpus tokenises a document alike (checked for the
old and the new documents). linuxdoc: its bag of words as bench/prepare_linuxdoc.py
makes it (lowercase letter runs, its stop words, min_df 5 over the whole file, test
documents included; it needs `apt-get download linux-doc-6.1`), uploaded as counts
with no stop words and `min_df` 1.

Held-out likelihood. Every test document is scored as topicd's own tokeniser kept it:
the test documents are uploaded as a corpus of their own (never fitted) and read back
with `GET /v1/corpora/{id}/tokens`, as are the training documents, so every system
below gets exactly topicd's tokens. Scored in two columns: the test tokens whose word
occurs in an OLD document (what the parent can score; every model scores the same
tokens), and those whose word occurs in an old or a new document (the grown
vocabulary; the parent has no row there). topicd's models are scored by
`POST /v1/models/{id}/heldout-likelihood` (its Chib-style estimator, Murray &
Salakhutdinov 2009; burn-in 100, S = 1000, seed 1), as total log p(w) over the tokens
scored, in nats per token (higher is better).

Anchors, on the same split and the same tokens:
  gensim 4.4  `LdaModel(num_topics=20, alpha=0.1 symmetric, eta=0.01, passes=20
              (`--gensim-passes`), iterations=400, chunksize = all old documents,
              random_state=1)` trained on the old documents, then `.update(new
              documents, passes=1 (`--gensim-update-passes`))`: online variational
              Bayes, single process. gensim's dictionary cannot grow, so it is built
              from the old AND new documents' words before training (new words get the
              prior only until the update). Why these passes (AppStream, split seed
              1): 50 passes instead of 20 moved the parent's score by under 0.01
              nats/token; `.update` with gensim's default passes (the model's, 20)
              instead of 1 drifted to the new documents and lost 0.3 nats/token.
  tomotopy 0.14  `LDAModel(k=20, alpha=0.1, eta=0.01, seed=1)` refitted from scratch on
              the old and new documents for P + U iterations (`train(0)` untimed, then
              the iterations timed; `workers` = `--threads`).
Both anchors' topics are scored by the SAME estimator as topicd's (`topicd score-lda`,
the lda family's Chib-style estimator, burn-in 100, S = 1000, seed 1) with φ = gensim's
normalised λ (`get_topics()`) or tomotopy's `get_topic_word_dist`, and α as fitted.
Their own scores are reported beside, labelled, and are NOT comparable with the Chib
column: gensim's `log_perplexity` is a variational lower bound (ELBO) per word that also
carries the topics' KL term (a constant of the model, spread over the test words); the
"documents' ELBO" is that bound without the KL term (`bound(test) - bound([])`), a lower
bound on the log p(w_d | α, φ = E_q[φ]) that the Chib column estimates for gensim (its
E_q[log φ] ≤ log E_q[φ]); tomotopy's `infer` returns
log p(w_d, z_d) of the final state of its inference chain (100 sweeps), which is below
log p(w_d) for every z_d.

Topics. `GET /v1/models/{parent}/compare/{update}` pairs the update's topics with the
parent's (L1-optimal matching; similarity 1 - L1/2 of the word distributions): the mean
similarity, the pairs at or above 0.5 and how many pairs joined the same topic id
(updates keep ids); beside it, the same for the two seeds of the full refit, and for
the full refit against the parent. The same-id similarity (topic k of the update
against topic k of the parent, over each topic's top 1000 words) is reported too.

Prints a progress log on stderr, then the tables and, last, one JSON line with every
figure. Exit status 2 when the server has no update endpoint yet (`?like=` or
`/update` refused): every other row is still measured and printed.

`--model dcnt` or `scnt` fits and updates that family instead (beta 0.01, its other
priors and its start at their defaults, no covariates), topicd only: the anchors are
LDA's.

Usage: python3 bench/updates.py target/release/topicd [--model lda|dcnt|scnt] [--corpus appstream|linuxdoc] [--parent-iterations 400] [--update-iterations 100] [--threads 2] [--split-seed 1] [--skip-anchors]
"""
import argparse
import collections
import datetime
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from topicd_service import APPSTREAM, Service, wait_up  # noqa: E402

BENCH = os.path.dirname(os.path.abspath(__file__))
LINUXDOC = os.path.join(BENCH, "out", "linuxdoc_bow.jsonl")
ALPHA, BETA = 0.1, 0.01
SEED = 1


def log(*what):
    print(f"[{time.strftime('%H:%M:%S')}]", *what, file=sys.stderr, flush=True)


class Server(Service):
    """`topicd serve` as bench/topicd_service.py starts it, with `--threads` and its log
    kept (its tail is printed when a request fails)."""

    def __init__(self, binary, tmp, port, threads):
        self.base = f"http://127.0.0.1:{port}"
        self.log_path = os.path.join(tmp, "server.log")
        self.log_file = open(self.log_path, "wb")
        self.proc = subprocess.Popen([binary, "serve", "--addr", f"127.0.0.1:{port}", "--db", os.path.join(tmp, "updates.db"), "--threads", str(threads)],
                                     stdout=self.log_file, stderr=subprocess.STDOUT)
        wait_up(self.base + "/healthz")

    def stop(self):
        super().stop()
        self.log_file.close()

    def call(self, method, path, body=None):
        """(status, parsed body) for any status: 4xx/5xx answers are returned, not raised."""
        data = None if body is None else json.dumps(body).encode()
        r = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            r.add_header("content-type", "application/json")
        try:
            with urllib.request.urlopen(r, timeout=600) as f:
                raw = f.read()
                status = f.status
        except urllib.error.HTTPError as e:
            raw, status = e.read(), e.code
        try:
            return status, json.loads(raw or b"null")
        except ValueError:
            return status, raw.decode("utf-8", "replace")

    def must(self, method, path, body=None, expect=(200, 201, 202)):
        status, out = self.call(method, path, body)
        if status not in expect:
            raise SystemExit(f"{method} {path}: {status} {json.dumps(out)[:2000]}\n--- server log tail ---\n{self.tail()}")
        return out

    def ndjson(self, path):
        with urllib.request.urlopen(self.base + path, timeout=600) as f:
            return [json.loads(line) for line in f.read().decode("utf-8").splitlines() if line.strip()]

    def tail(self, n=4000):
        self.log_file.flush()
        with open(self.log_path, "rb") as f:
            return f.read()[-n:].decode("utf-8", "replace")

    def wait(self, job, timeout, what):
        """Poll a job until it ends (at most `timeout` seconds); assert it succeeded."""
        deadline, last = time.monotonic() + timeout, 0
        while job["status"] not in ("succeeded", "failed", "cancelled"):
            if time.monotonic() > deadline:
                self.call("POST", f"/v1/jobs/{job['id']}/cancel")
                raise SystemExit(f"{what}: job {job['id']} still {job['status']} after {timeout} s (cancelled)")
            time.sleep(0.3)
            job = self.must("GET", f"/v1/jobs/{job['id']}")
            it = (job.get("progress") or {}).get("iteration")
            if it is not None and it // 100 > last // 100:
                log(f"  {what}: sweep {it}/{job['progress'].get('total')}")
                last = it
        if job["status"] != "succeeded":
            raise SystemExit(f"{what}: job {job['id']} {job['status']}: {json.dumps(job)[:3000]}\n--- server log tail ---\n{self.tail()}")
        return job


def seconds(job):
    at = lambda s: datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))  # noqa: E731
    return (at(job["finished_at"]) - at(job["started_at"])).total_seconds()


def load_documents(corpus):
    """[{"id", "text"} or {"id", "counts"}], each id once (its first line)."""
    if corpus == "appstream":
        path, key = APPSTREAM, "text"
    else:
        if not os.path.exists(LINUXDOC):
            log("bench/out/linuxdoc_bow.jsonl missing: running bench/prepare_linuxdoc.py")
            subprocess.run([sys.executable, os.path.join(BENCH, "prepare_linuxdoc.py")], check=True)
        path, key = LINUXDOC, "counts"
    seen, docs = set(), []
    for line in open(path, encoding="utf-8"):
        d = json.loads(line)
        if str(d["id"]) in seen:
            continue
        seen.add(str(d["id"]))
        docs.append({"id": str(d["id"]), key: d[key]})
    return docs


def split(docs, seed):
    docs = list(docs)
    random.Random(seed).shuffle(docs)
    n_test = round(0.1 * len(docs))
    test, rest = docs[:n_test], docs[n_test:]
    n_old = round(0.8 * len(rest))
    return rest[:n_old], rest[n_old:], test


def bags(rows):
    """`GET /v1/corpora/{id}/tokens` lines as {id: Counter(word -> n)} and {id: [tokens]}."""
    counts, tokens = {}, {}
    for r in rows:
        if "tokens" in r:
            counts[r["id"]] = collections.Counter(r["tokens"])
            tokens[r["id"]] = list(r["tokens"])
        else:
            counts[r["id"]] = collections.Counter(r["counts"])
            tokens[r["id"]] = [w for w in sorted(r["counts"]) for _ in range(r["counts"][w])]
    return counts, tokens


def restricted(test_counts, vocabulary):
    """The test documents' counts restricted to `vocabulary`, documents left empty dropped."""
    out = []
    for did, c in test_counts.items():
        kept = {w: n for w, n in sorted(c.items()) if w in vocabulary}
        if kept:
            out.append({"id": did, "counts": kept})
    return out


def heldout(svc, model_id, docs, timeout, what):
    """topicd's held-out log-likelihood per token of `docs` ({"id","counts"}) and the tokens scored."""
    job = svc.wait(svc.must("POST", f"/v1/models/{model_id}/heldout-likelihood", {"documents": docs, "seed": SEED}), timeout, what)
    res = job["result"]
    scored = [d for d in res["documents"] if d.get("log_likelihood") is not None]
    tokens = sum(d["tokens"] for d in scored)
    total = sum(d["log_likelihood"] for d in scored)
    if abs(total - res["total_log_likelihood"]) > 1e-6 * max(1.0, abs(total)):
        log(f"  {what}: per-document sum {total} differs from total_log_likelihood {res['total_log_likelihood']}")
    return {"nats_per_token": res["total_log_likelihood"] / tokens, "tokens": tokens, "documents": len(scored), "seconds": seconds(job)}


def score_lda(binary, tmp, name, vocabulary, alpha, phi, docs, threads):
    """The same Chib-style estimator on a model given as numbers (`topicd score-lda`)."""
    model_path, docs_path = os.path.join(tmp, f"{name}.model.json"), os.path.join(tmp, f"{name}.docs.jsonl")
    with open(model_path, "w", encoding="utf-8") as f:
        json.dump({"vocabulary": vocabulary, "alpha": [float(a) for a in alpha], "phi": [[float(x) for x in row] for row in phi]}, f)
    with open(docs_path, "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps({"counts": d["counts"]}) + "\n")
    out = subprocess.run([binary, "score-lda", "--model", model_path, "--input", docs_path, "--seed", str(SEED), "--threads", str(threads)],
                         check=True, capture_output=True, text=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return {"nats_per_token": r["log_likelihood_per_token"], "tokens": r["tokens"], "oov_tokens": r["oov_tokens"], "documents": r["documents"]}


def distributions(svc, model_id):
    topics = svc.must("GET", f"/v1/models/{model_id}/topics?n=1000&rank=frequency")["topics"]
    return [{w["word"]: w["frequency"] for w in t["words"]} for t in topics]


def compare(svc, a, b):
    c = svc.must("GET", f"/v1/models/{a}/compare/{b}")
    pairs = c["pairs"]
    return {"mean_similarity": sum(p["similarity"] for p in pairs) / len(pairs), "pairs": len(pairs),
            "matched": sum(1 for p in pairs if p["similarity"] >= 0.5),
            "same_id": sum(1 for p in pairs if p["a"]["id"] == p["b"]["id"])}


def gensim_anchor(binary, tmp, args, vocab_tokens, old_tokens, new_tokens, tests, threads):
    import numpy as np
    from gensim.corpora import Dictionary
    from gensim.models import LdaModel
    import gensim
    dictionary = Dictionary(vocab_tokens)
    old_bow = [dictionary.doc2bow(t) for t in old_tokens]
    new_bow = [dictionary.doc2bow(t) for t in new_tokens]
    vocabulary = [dictionary[i] for i in range(len(dictionary))]
    out = {"version": gensim.__version__, "passes": args.gensim_passes, "update_passes": args.gensim_update_passes, "terms": len(dictionary)}

    def own(lda, docs):
        bow = [dictionary.doc2bow([w for w, n in d["counts"].items() for _ in range(n)]) for d in docs]
        words = sum(n for b in bow for _, n in b)
        docs_part = float(lda.bound(bow) - lda.bound([]))
        return {"log_perplexity": float(lda.log_perplexity(bow)), "documents_elbo_per_word": docs_part / words, "tokens": words}

    def chib(lda, name, docs):
        phi = lda.get_topics().astype(np.float64)
        phi /= phi.sum(axis=1, keepdims=True)
        return score_lda(binary, tmp, name, vocabulary, lda.alpha, phi, docs, threads)

    t0 = time.perf_counter()
    lda = LdaModel(corpus=old_bow, id2word=dictionary, num_topics=args.topics, alpha=ALPHA, eta=BETA, passes=args.gensim_passes,
                   iterations=400, chunksize=len(old_bow), update_every=1, eval_every=None, random_state=SEED)
    out["train_seconds"] = time.perf_counter() - t0
    log(f"gensim: trained on the old documents ({out['train_seconds']:.1f} s)")
    out["parent"] = {"old_words": {"chib": chib(lda, "gensim_parent_old", tests["old_words"]), "own": own(lda, tests["old_words"])}}
    t0 = time.perf_counter()
    lda.update(new_bow, passes=args.gensim_update_passes, chunksize=len(new_bow), update_every=1, eval_every=None)
    out["update_seconds"] = time.perf_counter() - t0
    log(f"gensim: updated with the new documents ({out['update_seconds']:.1f} s)")
    out["update"] = {col: {"chib": chib(lda, f"gensim_update_{col}", tests[col]), "own": own(lda, tests[col])} for col in ("old_words", "grown_words")}
    return out


def tomotopy_anchor(binary, tmp, args, train_tokens, tests, threads):
    import warnings
    import tomotopy as tp
    warnings.filterwarnings("ignore", message="The training result may differ")
    mdl = tp.LDAModel(tw=tp.TermWeight.ONE, min_cf=0, min_df=0, rm_top=0, k=args.topics, alpha=ALPHA, eta=BETA, seed=SEED)
    for t in train_tokens:
        if t:
            mdl.add_doc(t)
    iterations = args.parent_iterations + args.update_iterations
    mdl.train(0, workers=threads)
    t0 = time.perf_counter()
    mdl.train(iterations, workers=threads)
    secs = time.perf_counter() - t0
    log(f"tomotopy: {iterations} iterations on old + new ({secs:.1f} s)")
    vocabulary = list(mdl.used_vocabs)
    phi = [list(map(float, mdl.get_topic_word_dist(k, normalize=True))) for k in range(mdl.k)]
    alpha = [float(a) for a in mdl.alpha]
    out = {"version": tp.__version__, "iterations": iterations, "seconds": secs, "terms": len(vocabulary)}
    for col in ("old_words", "grown_words"):
        docs = [mdl.make_doc([w for w, n in d["counts"].items() for _ in range(n)]) for d in tests[col]]
        _, ll = mdl.infer(docs, iterations=100, workers=threads)
        words = sum(len(d.words) for d in docs)
        out[col] = {"chib": score_lda(binary, tmp, f"tomotopy_{col}", vocabulary, alpha, phi, tests[col], threads),
                    "own": {"infer_log_p_w_z_per_token": float(sum(ll)) / words, "tokens": words}}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("--corpus", choices=["appstream", "linuxdoc"], default="appstream")
    ap.add_argument("--topics", type=int, default=20)
    ap.add_argument("--parent-iterations", type=int, default=400)
    ap.add_argument("--update-iterations", type=int, default=100)
    ap.add_argument("--threads", type=int, default=2, help="the server's threads per job, tomotopy's workers and score-lda's threads")
    ap.add_argument("--split-seed", type=int, default=1)
    ap.add_argument("--gensim-passes", type=int, default=20)
    ap.add_argument("--gensim-update-passes", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=3600, help="seconds any one job may take")
    ap.add_argument("--skip-anchors", action="store_true", help="topicd only (no gensim, no tomotopy)")
    ap.add_argument("--model", choices=["lda", "dcnt", "scnt"], default="lda", help="the family fitted and updated (the anchors are LDA's: skipped for the others)")
    args = ap.parse_args()
    binary = os.path.abspath(args.binary)
    P, U = args.parent_iterations, args.update_iterations

    docs = load_documents(args.corpus)
    old, new, test = split(docs, args.split_seed)
    log(f"{args.corpus}: {len(docs)} documents: {len(old)} old, {len(new)} new, {len(test)} test (split seed {args.split_seed})")
    if args.corpus == "appstream":
        preprocess = {"stopwords": "english", "min_df": 1}
    else:
        preprocess = {"stopwords": "none", "min_df": 1}
    if args.model == "lda":
        params = lambda n: {"topics": args.topics, "iterations": n, "alpha": ALPHA, "beta": BETA, "test_fraction": 0}  # noqa: E731
    else:
        params = lambda n: {"topics": args.topics, "iterations": n, "beta": BETA, "test_fraction": 0}  # noqa: E731
        args.skip_anchors = True
    res = {"model": args.model, "corpus": args.corpus, "documents": {"old": len(old), "new": len(new), "test": len(test)}, "topics": args.topics,
           "parent_iterations": P, "update_iterations": U, "threads": args.threads, "split_seed": args.split_seed,
           "preprocess": preprocess, "commit": subprocess.run(["git", "-C", os.path.dirname(BENCH), "describe", "--always", "--dirty=+uncommitted changes"], capture_output=True, text=True).stdout.strip(),
           "load_average": os.getloadavg()[0], "checks": {}}
    update_missing = None

    with tempfile.TemporaryDirectory() as tmp:
        svc = Server(binary, tmp, 18000 + random.randint(0, 999), args.threads)
        try:
            c_old = svc.must("POST", "/v1/corpora", {"name": "updates-old", "documents": old, "preprocess": preprocess})
            c_full = svc.must("POST", "/v1/corpora", {"name": "updates-full", "documents": old + new, "preprocess": preprocess})
            c_test = svc.must("POST", "/v1/corpora", {"name": "updates-test (tokens only)", "documents": test, "preprocess": preprocess})
            log(f"uploaded: old {c_old['num_documents']} docs / {c_old['num_terms']} terms, full {c_full['num_documents']} / {c_full['num_terms']}, test {c_test['num_documents']}")

            # Every system's tokens: topicd's own, read back.
            full_counts, full_tokens = bags(svc.ndjson(f"/v1/corpora/{c_full['id']}/tokens"))
            old_counts, _ = bags(svc.ndjson(f"/v1/corpora/{c_old['id']}/tokens"))
            test_counts, _ = bags(svc.ndjson(f"/v1/corpora/{c_test['id']}/tokens"))
            same = all(full_counts[i] == c for i, c in old_counts.items())
            res["checks"]["old documents tokenised alike in the old and the full corpus"] = same
            if not same:
                log("WARNING: the old documents' tokens differ between the old and the full corpus")
            v_old = {w for c in old_counts.values() for w in c}
            v_grown = {w for c in full_counts.values() for w in c}
            res["checks"]["old corpus terms == old documents' words"] = len(v_old) == c_old["num_terms"]
            res["checks"]["full corpus terms == old and new documents' words"] = len(v_grown) == c_full["num_terms"]
            tests = {"old_words": restricted(test_counts, v_old), "grown_words": restricted(test_counts, v_grown)}
            res["test_tokens"] = {col: sum(sum(d["counts"].values()) for d in ds) for col, ds in tests.items()}
            res["test_tokens"]["all"] = sum(sum(c.values()) for c in test_counts.values())
            res["test_documents_scored"] = {col: len(ds) for col, ds in tests.items()}
            res["terms"] = {"old": len(v_old), "grown": len(v_grown)}
            log(f"test tokens: {res['test_tokens']}")

            # topicd: parent, update, two full refits, one job at a time.
            jobs, models = {}, {}
            log(f"parent: {P} sweeps on the old documents")
            jobs["parent"] = svc.wait(svc.must("POST", "/v1/jobs", {"corpus_id": c_old["id"], "model": args.model, "params": params(P), "seed": SEED}), args.timeout, "parent")
            models["parent"] = jobs["parent"]["model_id"]

            log("update: new documents uploaded with ?like=, then /update")
            status, c_new = svc.call("POST", f"/v1/corpora?like={c_old['id']}", {"name": "updates-new", "documents": new})
            if status != 201:
                update_missing = f"POST /v1/corpora?like=: {status} {json.dumps(c_new)[:300]}"
            else:
                status, job = svc.call("POST", f"/v1/models/{models['parent']}/update", {"corpus_id": c_new["id"], "iterations": U, "seed": SEED, "new_topics": 0})
                if status != 202:
                    update_missing = f"POST /v1/models/{{id}}/update: {status} {json.dumps(job)[:300]}"
                else:
                    jobs["update"] = svc.wait(job, args.timeout, "update")
                    models["update"] = jobs["update"]["model_id"]
                    new_counts, _ = bags(svc.ndjson(f"/v1/corpora/{c_new['id']}/tokens"))
                    res["checks"]["new documents tokenised alike with ?like= and in the full corpus"] = all(full_counts.get(i) == c for i, c in new_counts.items()) and len(new_counts) == len(full_counts) - len(old_counts)
                    m = svc.must("GET", f"/v1/models/{models['update']}")
                    res["checks"]["update's parent_model_id is the parent"] = m.get("parent_model_id") == models["parent"]
                    res["checks"]["update's corpus_ids are the old and the new corpus"] = sorted(m.get("corpus_ids") or []) == sorted([c_old["id"], c_new["id"]])
                    res["checks"]["update's num_documents == the full corpus's"] = m.get("num_documents") == c_full["num_documents"]
                    res["update_job"] = {k: jobs["update"].get(k) for k in ("params", "options", "progress", "source_model_id")}
            if update_missing:
                log(f"NO UPDATE: {update_missing}")
            res["update_unavailable"] = update_missing

            for s in (1, 2):
                log(f"full refit, seed {s}: {P + U} sweeps on old + new")
                jobs[f"full{s}"] = svc.wait(svc.must("POST", "/v1/jobs", {"corpus_id": c_full["id"], "model": args.model, "params": params(P + U), "seed": s}), args.timeout, f"full refit seed {s}")
                models[f"full{s}"] = jobs[f"full{s}"]["model_id"]
            res["seconds"] = {name: seconds(j) for name, j in jobs.items()}
            if "update" in jobs:
                res["update_time_fraction"] = res["seconds"]["update"] / ((res["seconds"]["full1"] + res["seconds"]["full2"]) / 2)

            res["heldout"] = {}
            for name, mid in models.items():
                res["heldout"][name] = {}
                for col in ("old_words", "grown_words"):
                    if name == "parent" and col == "grown_words":
                        continue
                    res["heldout"][name][col] = h = heldout(svc, mid, tests[col], args.timeout, f"held-out {name} {col}")
                    log(f"held-out {name}, {col}: {h['nats_per_token']:.4f} nats/token over {h['tokens']} tokens")
                    if h["tokens"] != res["test_tokens"][col]:
                        log(f"WARNING: {name} scored {h['tokens']} of the {res['test_tokens'][col]} {col} test tokens")

            res["compare"] = {"full1_vs_full2": compare(svc, models["full1"], models["full2"]),
                              "parent_vs_full1": compare(svc, models["parent"], models["full1"])}
            if "update" in models:
                res["compare"]["parent_vs_update"] = compare(svc, models["parent"], models["update"])
                a, b = distributions(svc, models["parent"]), distributions(svc, models["update"])
                same_id = [1 - sum(abs(a[k].get(w, 0.0) - b[k].get(w, 0.0)) for w in set(a[k]) | set(b[k])) / 2 for k in range(min(len(a), len(b)))]
                res["compare"]["parent_vs_update"]["same_id_mean_similarity_top1000"] = sum(same_id) / len(same_id)
        finally:
            svc.stop()

        if not args.skip_anchors:
            order = [d["id"] for d in old + new if d["id"] in full_tokens]
            old_tok = [full_tokens[d["id"]] for d in old if d["id"] in full_tokens]
            new_tok = [full_tokens[d["id"]] for d in new if d["id"] in full_tokens]
            res["gensim"] = gensim_anchor(binary, tmp, args, [full_tokens[i] for i in order], old_tok, new_tok, tests, args.threads)
            res["tomotopy"] = tomotopy_anchor(binary, tmp, args, [full_tokens[i] for i in order], tests, args.threads)

    report(res, args)
    sys.exit(2 if update_missing else 0)


def report(res, args):
    P, U = res["parent_iterations"], res["update_iterations"]
    d, tt, s, h = res["documents"], res["test_tokens"], res["seconds"], res["heldout"]
    f = lambda x: "—" if x is None else f"{x:.4f}"  # noqa: E731

    def ho(name, col):
        x = h.get(name, {}).get(col)
        if x is None:
            return "—"
        return f(x["nats_per_token"]) + ("" if x["tokens"] == tt[col] else f" (over {x['tokens']} tokens only)")

    prior = f"alpha {ALPHA}, beta {BETA}" if res["model"] == "lda" else f"beta {BETA}, other priors at their defaults"
    print(f"{res['corpus']}: {d['old']} old, {d['new']} new, {d['test']} test documents (split seed {res['split_seed']}); {res['model'].upper()} K = {res['topics']}, "
          f"{prior}; topicd on {res['threads']} threads, commit {res['commit']}, load average {res['load_average']:.2f} at the start")
    print(f"held-out test tokens: {tt['old_words']} whose word an old document has, {tt['grown_words']} whose word an old or new document has (of {tt['all']})")
    print()
    print("| model | trained on | sweeps | time (s) | held-out nats/token, old words (Chib) | held-out nats/token, old+new words (Chib) |")
    print("|---|---|---|---|---|---|")
    print(f"| topicd parent | old | {P} | {s['parent']:.1f} | {ho('parent', 'old_words')} | — |")
    if "update" in s:
        print(f"| topicd update of the parent | + new | {U} | {s['update']:.1f} (**{res['update_time_fraction']:.2f}** of a full refit's)  | {ho('update', 'old_words')} | {ho('update', 'grown_words')} |")
    else:
        print(f"| topicd update of the parent | + new | {U} | not available: {res['update_unavailable'][:160]} | — | — |")
    for k in (1, 2):
        print(f"| topicd full refit, seed {k} | old + new | {P + U} | {s[f'full{k}']:.1f} | {ho(f'full{k}', 'old_words')} | {ho(f'full{k}', 'grown_words')} |")
    g, t = res.get("gensim"), res.get("tomotopy")
    if g:
        print(f"| gensim {g['version']} LdaModel | old | {g['passes']} passes | {g['train_seconds']:.1f} (1 process) | {f(g['parent']['old_words']['chib']['nats_per_token'])} | — |")
        print(f"| gensim `.update(new)` | + new | {g['update_passes']} pass(es) | {g['update_seconds']:.1f} | {f(g['update']['old_words']['chib']['nats_per_token'])} | {f(g['update']['grown_words']['chib']['nats_per_token'])} |")
    if t:
        print(f"| tomotopy {t['version']} LDAModel refit | old + new | {t['iterations']} | {t['seconds']:.1f} | {f(t['old_words']['chib']['nats_per_token'])} | {f(t['grown_words']['chib']['nats_per_token'])} |")
    print()
    if g or t:
        print("| anchor's own score (not the Chib estimator: not comparable with the table above) | old words | old+new words |")
        print("|---|---|---|")
    if g:
        gp, gu = g["parent"]["old_words"]["own"], g["update"]
        print(f"| gensim parent: log_perplexity (per-word ELBO incl. the topics' KL term) | {f(gp['log_perplexity'])} | — |")
        print(f"| gensim parent: documents' ELBO per word | {f(gp['documents_elbo_per_word'])} | — |")
        print(f"| gensim updated: log_perplexity | {f(gu['old_words']['own']['log_perplexity'])} | {f(gu['grown_words']['own']['log_perplexity'])} |")
        print(f"| gensim updated: documents' ELBO per word | {f(gu['old_words']['own']['documents_elbo_per_word'])} | {f(gu['grown_words']['own']['documents_elbo_per_word'])} |")
    if t:
        print(f"| tomotopy refit: infer() log p(w, z) per token (100 sweeps) | {f(t['old_words']['own']['infer_log_p_w_z_per_token'])} | {f(t['grown_words']['own']['infer_log_p_w_z_per_token'])} |")
    print()
    c = res["compare"]
    print("| topics compared (`GET /compare`: L1-optimal pairs, similarity 1 − L1/2) | mean similarity | pairs ≥ 0.5 | pairs on the same id |")
    print("|---|---|---|---|")
    if "parent_vs_update" in c:
        pu = c["parent_vs_update"]
        print(f"| update vs parent | **{pu['mean_similarity']:.3f}** | {pu['matched']}/{pu['pairs']} | {pu['same_id']}/{pu['pairs']} |")
    else:
        print("| update vs parent | not available | | |")
    for key, label in (("full1_vs_full2", "full refit seed 1 vs seed 2 (anchor)"), ("parent_vs_full1", "full refit seed 1 vs parent")):
        x = c[key]
        print(f"| {label} | {x['mean_similarity']:.3f} | {x['matched']}/{x['pairs']} | {x['same_id']}/{x['pairs']} |")
    if "parent_vs_update" in c:
        print(f"\nupdate vs parent, topic k against topic k (top 1000 words): mean similarity {c['parent_vs_update']['same_id_mean_similarity_top1000']:.3f}")
    print("checks: " + "; ".join(f"{k}: {'ok' if v else 'FAILED'}" for k, v in res["checks"].items()))
    print(json.dumps(res, sort_keys=True))


if __name__ == "__main__":
    main()
