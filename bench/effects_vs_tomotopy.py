#!/usr/bin/env python3
"""Covariate effects: topicd's DCNT against tomotopy's DMR and g-DMR.

What it compares.  The replicates of `cargo bench --bench effects_calibration`
(crates/topicd-core/benches/effects_calibration.rs) are corpora drawn from DCNT's own
generative process, K = 6 topics, with planted effects of a binary covariate `group`
(a/b) and a continuous one `x` in [0, 1].  For each replicate the bench exports the
documents, the true topic-word distributions (`omega`), and, at grid points (group a
and b at the mean x; 9 values of x from its minimum to its maximum with group a), the
true expected topic shares E[pi | covariates] beside DCNT's estimates (mean and 95 %
interval).  This script fits tomotopy on the same documents and scores everyone by the
root-mean-square error of the expected topic share (share scale, 0..1) over (point,
topic), after matching fitted topics to true topics by their word distributions.
Issue target: topicd's RMSE <= tomotopy's.

Run (from the repo root; builds and runs the Rust bench, then the anchor):

    python3 bench/effects_vs_tomotopy.py --export --replicates 20

or, on replicates exported earlier (default folder bench/out/effects_calibration):

    python3 bench/effects_vs_tomotopy.py --dir bench/out/effects_calibration

Protocol.
- Documents: each word repeated by its count (words in the file's sorted order).
- g-DMR: `GDMRModel(k=K, degrees=[4], seed=7+r)`, numeric metadata [x], categorical
  metadata group.  Degree 4 is the degree tomotopy's own example gives a single
  continuous variable (examples/gdmr_plot.py, `degrees=[4, 3]`); it was not tuned on
  the truth (`--degree` changes it).  Everything else at tomotopy's defaults (alpha
  0.1, eta 0.01, sigma 1, sigma0 3, metadata range taken from the documents,
  optim_interval 10, burn_in 0).  tomotopy 0.14.0 passes `decay` and `alpha_epsilon`
  to C++ in swapped order (models.py vs src/python/handler/py_GDMR.cpp), so with the
  defaults the fitted model has alpha_epsilon = 0 and decay = 1e-10; both are
  negligible here, and the script reads the effective alpha_epsilon back from the model.
- DMR: `DMRModel(k=K, seed=7+r)`, metadata = group, defaults otherwise (alpha 0.1,
  eta 0.01, sigma 1, alpha_epsilon 1e-10, optim_interval 10).
- Both: `train(1000, workers=1)`: 1 000 Gibbs sweeps (topicd's default DCNT fit is
  1 000 scans) on one worker thread, so runs are reproducible; seed 7 + replicate, as
  topicd uses.
- Expected shares.  In both models a document's topic proportions are
  theta_d ~ Dirichlet(alpha_d) with alpha_dk = exp(lambda_k . features_d) + alpha_epsilon
  (tomotopy's DMRModel.hpp getCachedAlpha, GDMRModel.hpp getZLikelihoods), so
  E[theta_d | covariates] = alpha_d / sum(alpha_d).
  DMR: alpha_d = `get_topic_prior(group)`, which returns exp(lambda) + alpha_epsilon
  ("the value with applying exp()"; the C++ adds alpha_epsilon), normalised; only the
  two group points get a DMR estimate (DMR has no x).
  g-DMR: `tdf([x], group, normalize=False)` is the linear predictor lambda . terms(x)
  (the "raw values in logit"); alpha = exp(raw) + alpha_epsilon, normalised.  This is
  what `tdf(..., normalize=True)` returns (a softmax of the raw values) up to
  alpha_epsilon; the largest difference is recorded in the JSON.
- Matching: per method, the permutation of fitted topics minimising the total L1
  distance between each true omega row and the fitted topic-word distribution
  (`get_topic_word_dist`, mapped to the generator's vocabulary; words tomotopy never
  saw get 0); all 720 permutations are tried, as in the Rust bench.
- Scores: RMSE over (replicate, point, topic), pooled, separately at the group points
  and the x points; the mean L1 of matched topics; DCNT's 95 % interval coverage of the
  truth (from the file) for reference; wall time of the tomotopy fits (documents added
  and 1 000 sweeps, per model).
"""
import argparse
import glob
import itertools
import json
import os
import re
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ITERATIONS = 1000
SEED_BASE = 7  # topicd's effects bench fits replicate r with seed 7 + r


def ensure_tomotopy():
    try:
        import tomotopy  # noqa: F401
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "tomotopy"], check=True)
    import numpy
    import tomotopy
    return tomotopy, numpy


tp, np = ensure_tomotopy()


def export(directory, replicates):
    """Run the Rust bench (topicd's DCNT fits) writing replicate{r}.json into `directory`."""
    # Absolute: cargo runs a bench from its own crate's folder.
    directory = os.path.abspath(directory)
    env = dict(os.environ, EXPORT=directory, REPLICATES=str(replicates))
    cmd = ["cargo", "bench", "--locked", "--bench", "effects_calibration"]
    print("$ EXPORT=%s REPLICATES=%d %s" % (directory, replicates, " ".join(cmd)), flush=True)
    subprocess.run(cmd, cwd=REPO, env=env, check=True)


def replicate_files(directory, replicates):
    found = {}
    for path in glob.glob(os.path.join(directory, "replicate*.json")):
        m = re.fullmatch(r"replicate(\d+)\.json", os.path.basename(path))
        if m:
            found[int(m.group(1))] = path
    if replicates is not None:
        missing = [r for r in range(replicates) if r not in found]
        if missing:
            sys.exit("missing replicates %s in %s" % (missing, directory))
        return [found[r] for r in range(replicates)]
    if not found:
        sys.exit("no replicate*.json in %s (run with --export)" % directory)
    return [found[r] for r in sorted(found)]


def tokens(doc):
    return [w for w, n in doc["words"].items() for _ in range(int(round(n)))]


def topic_word(model, vocabulary):
    """K x V fitted topic-word distributions in the generator's vocabulary order."""
    index = {w: i for i, w in enumerate(vocabulary)}
    columns = [index[w] for w in model.used_vocabs]
    out = np.zeros((model.k, len(vocabulary)))
    for k in range(model.k):
        out[k, columns] = model.get_topic_word_dist(k)
    return out


def match_topics(omega, fitted):
    """For each true topic, the fitted topic it is matched to (least total L1), and the L1s."""
    dist = np.abs(omega[:, None, :] - fitted[None, :, :]).sum(axis=2)  # true x fitted
    rows = np.arange(len(omega))
    best = min(itertools.permutations(range(len(omega))), key=lambda p: dist[rows, list(p)].sum())
    return list(best), dist[rows, list(best)]


def dirichlet_mean(raw, alpha_epsilon):
    """alpha / sum(alpha) for alpha = exp(raw) + alpha_epsilon, computed stably."""
    raw = np.asarray(raw, dtype=float)
    shift = raw.max()
    alpha = np.exp(raw - shift) + alpha_epsilon * np.exp(-shift)
    return alpha / alpha.sum()


def fit(model, docs, add):
    t0 = time.perf_counter()
    for d in docs:
        add(model, d)
    model.train(ITERATIONS, workers=1)
    return time.perf_counter() - t0


def run_replicate(data, degree):
    K = data["topics"]
    r = data["replicate"]
    vocabulary = data["vocabulary"]
    omega = np.array(data["omega"])
    docs = data["documents"]
    points = data["points"]
    seed = SEED_BASE + r

    gdmr = tp.GDMRModel(k=K, degrees=[degree], seed=seed)
    gdmr_seconds = fit(gdmr, docs, lambda m, d: m.add_doc(tokens(d), numeric_metadata=[d["x"]], metadata=d["group"]))
    dmr = tp.DMRModel(k=K, seed=seed)
    dmr_seconds = fit(dmr, docs, lambda m, d: m.add_doc(tokens(d), metadata=d["group"]))

    gdmr_match, gdmr_l1 = match_topics(omega, topic_word(gdmr, vocabulary))
    dmr_match, dmr_l1 = match_topics(omega, topic_word(dmr, vocabulary))

    truth = np.array([p["truth"] for p in points])                        # point x true topic
    dcnt = np.array([[est[0] for est in p["dcnt"]] for p in points])
    lower = np.array([[est[1] for est in p["dcnt"]] for p in points])
    upper = np.array([[est[2] for est in p["dcnt"]] for p in points])

    gdmr_eps = gdmr.alpha_epsilon  # the effective value (see the docstring on 0.14.0)
    gdmr_est, softmax_gap = [], 0.0
    for p in points:
        shares = dirichlet_mean(gdmr.tdf([p["x"]], p["group"], normalize=False), gdmr_eps)
        softmax = np.array(gdmr.tdf([p["x"]], p["group"], normalize=True))
        softmax_gap = max(softmax_gap, float(np.abs(shares - softmax).max()))
        gdmr_est.append(shares[gdmr_match])
    gdmr_est = np.array(gdmr_est)

    # get_topic_prior(g) is the Dirichlet parameter itself: exp(lambda_g) + alpha_epsilon.
    dmr_prior = {g: np.array(dmr.get_topic_prior(g)) / np.sum(dmr.get_topic_prior(g)) for g in dmr.metadata_dict}
    is_group = np.array([p["covariate"] == "group" for p in points])
    dmr_est = np.full_like(truth, np.nan)
    for i, p in enumerate(points):
        if is_group[i]:
            dmr_est[i] = dmr_prior[p["group"]][dmr_match]

    estimates = {"DCNT (topicd)": dcnt.tolist(), "tomotopy GDMR": gdmr_est.tolist(), "tomotopy DMR": dmr_est.tolist()}
    l1 = {"DCNT (topicd)": list(data["dcnt_l1"]), "tomotopy GDMR": gdmr_l1.tolist(), "tomotopy DMR": dmr_l1.tolist()}
    if all("lda" in p for p in points):
        # topicd's LDA with the same covariates, effects by composition (exported beside DCNT's).
        estimates[LDA] = [[est[0] for est in p["lda"]] for p in points]
        l1[LDA] = list(data["lda_l1"])
    return {
        "replicate": r,
        "is_group": is_group.tolist(),
        "truth": truth.tolist(),
        "estimates": estimates,
        "l1": l1,
        "dcnt_covered": ((lower <= truth) & (truth <= upper)).tolist(),
        "seconds": {"tomotopy GDMR": gdmr_seconds, "tomotopy DMR": dmr_seconds},
        "gdmr_alpha_epsilon": gdmr_eps,
        "dmr_alpha_epsilon": dmr.alpha_epsilon,
        "gdmr_tdf_normalize_gap": softmax_gap,
    }


LDA = "LDA by composition (topicd)"


def rmse(results, method, group):
    errors = []
    for res in results:
        est, truth = np.array(res["estimates"][method]), np.array(res["truth"])
        rows = np.array(res["is_group"]) == group
        errors.append((est[rows] - truth[rows]).ravel())
    errors = np.concatenate(errors)
    return None if np.isnan(errors).all() else float(np.sqrt(np.mean(errors ** 2)))


def coverage(results, group=None):
    hits = []
    for res in results:
        covered = np.array(res["dcnt_covered"])
        rows = np.ones(len(covered), bool) if group is None else np.array(res["is_group"]) == group
        hits.append(covered[rows].ravel())
    return float(np.concatenate(hits).mean())


def fmt(v):
    return "—" if v is None else "%.4f" % v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default=os.path.join(REPO, "bench", "out", "effects_calibration"),
                    help="folder of replicate{r}.json (default bench/out/effects_calibration)")
    ap.add_argument("--export", action="store_true",
                    help="run the Rust bench first (cargo bench --bench effects_calibration) into --dir")
    ap.add_argument("--replicates", type=int, default=None,
                    help="replicates to export / read (default when reading: every file in --dir)")
    ap.add_argument("--degree", type=int, default=4, help="g-DMR Legendre degree for x (default 4)")
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "out", "effects_vs_tomotopy.json"))
    args = ap.parse_args()

    directory = os.path.abspath(args.dir)
    if args.export:
        export(directory, args.replicates if args.replicates is not None else 20)
    files = replicate_files(directory, args.replicates)

    results = []
    for path in files:
        with open(path) as f:
            data = json.load(f)
        res = run_replicate(data, args.degree)
        results.append(res)
        print("replicate %d: GDMR %.1f s, DMR %.1f s; L1 %s" % (
            res["replicate"], res["seconds"]["tomotopy GDMR"], res["seconds"]["tomotopy DMR"],
            "; ".join("%s [%s]" % (m, ", ".join("%.2f" % v for v in l1)) for m, l1 in res["l1"].items())), flush=True)

    methods = ["DCNT (topicd)", "tomotopy GDMR", "tomotopy DMR"] + ([LDA] if all(LDA in res["l1"] for res in results) else [])
    summary = {}
    for m in methods:
        summary[m] = {
            "rmse_group_points": rmse(results, m, True),
            "rmse_x_points": rmse(results, m, False),
            "mean_matched_l1": float(np.mean([res["l1"][m] for res in results])),
            "replicates": len(results),
        }
        if m.startswith("tomotopy"):
            summary[m]["fit_seconds_total"] = sum(res["seconds"][m] for res in results)
    dcnt_coverage = {"all": coverage(results), "group_points": coverage(results, True),
                     "x_points": coverage(results, False)}

    print()
    print("| method | RMSE, group points | RMSE, x points | mean matched L1 | replicates |")
    print("|---|---|---|---|---|")
    for m in methods:
        s = summary[m]
        print("| %s | %s | %s | %.3f | %d |" % (m, fmt(s["rmse_group_points"]), fmt(s["rmse_x_points"]),
                                               s["mean_matched_l1"], s["replicates"]))
    print()
    print("DCNT 95 %% interval coverage: %.3f (group points %.3f, x points %.3f)" % (
        dcnt_coverage["all"], dcnt_coverage["group_points"], dcnt_coverage["x_points"]))
    print("tomotopy %s (%s), 1 worker thread, %d iterations, g-DMR degree %d; fit wall time GDMR %.1f s, DMR %.1f s" % (
        tp.__version__, tp.isa, ITERATIONS, args.degree,
        summary["tomotopy GDMR"]["fit_seconds_total"], summary["tomotopy DMR"]["fit_seconds_total"]))

    report = {
        "tomotopy": {"version": tp.__version__, "isa": tp.isa, "workers": 1, "iterations": ITERATIONS,
                     "gdmr_degree": args.degree, "seed": "%d + replicate" % SEED_BASE},
        "summary": summary,
        "dcnt_coverage_95": dcnt_coverage,
        "replicates": results,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
    print("wrote", os.path.relpath(os.path.abspath(args.out)))


if __name__ == "__main__":
    main()
