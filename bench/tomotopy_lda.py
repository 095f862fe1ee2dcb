#!/usr/bin/env python3
"""tomotopy side of the LDA throughput benchmark (see bench/README.md).

Reads bench/out/linuxdoc_bow.jsonl ({"id", "counts": {word: n}} per line),
expands each document to a token list (sorted words, each repeated `n` times),
fits tomotopy.LDAModel(k=100, alpha=0.5, eta=0.01) with hyperparameter
optimisation OFF (optim_interval = 0, burn_in = 0; `--optim-interval 10` turns
tomotopy's asymmetric-alpha optimisation on, as in bench/lda_optimize.sh), and
prints ONE JSON line:

  {"system": "tomotopy", "version", "threads", "documents", "tokens",
   "iterations", "seconds", "seconds_per_iteration", "tokens_per_second",
   "loglik_per_token", ...}

Only the `train(iterations)` call is timed; `train(0)` (which builds the
vocabulary, assigns the initial random topics and allocates the count
matrices) runs first, outside the timer.  `ll_per_word` is a lazily
computed property, so reading it after the timer costs nothing inside it.

What `ll_per_word` is (checked in tomotopy's C++ source, src/TopicModel/
TopicModel.hpp and LDAModel.hpp):
    getLLPerWord() = getLL() / realN        (realN = number of tokens used)
    getLL()        = getLLDocs() + getLLRest()
    getLLDocs()    = sum_d [ lgamma(sum_k a_k) - lgamma(N_d + sum_k a_k)
                             + sum_k (lgamma(n_dk + a_k) - lgamma(a_k)) ]
    getLLRest()    = K lgamma(V b) + sum_k [ -lgamma(n_k + V b)
                             + sum_v (lgamma(n_kv + b) - lgamma(b)) ]
i.e. exactly the collapsed log joint log p(w, z | alpha, beta) of the
current Gibbs state divided by the token count, with V = the vocabulary
actually used (min_cf=0, rm_top=0 here, so every word of the file).
`--verify-ll` recomputes this quantity in Python from the final topic
assignments (doc.topics) and prints both values on stderr.

Parallelism: tomotopy's LDAModel defaults (ParallelScheme.DEFAULT) to
PARTITION (vocabulary split into `workers` chunks of equal token mass;
each worker samples its chunk of every document in turn); with workers=1
it always runs the plain serial sampler (scheme NONE).
"""
import argparse
import json
import math
import os
import sys
import time
import warnings

import tomotopy as tp

# tomotopy warns that results with workers != 1 are not reproducible; expected.
warnings.filterwarnings("ignore", message="The training result may differ")

BENCH = os.path.dirname(os.path.abspath(__file__))
SCHEMES = {"default": tp.ParallelScheme.DEFAULT, "none": tp.ParallelScheme.NONE,
           "copy_merge": tp.ParallelScheme.COPY_MERGE, "partition": tp.ParallelScheme.PARTITION}


def collapsed_log_joint(mdl, alpha, eta):
    """log p(w, z | alpha, eta) from the model's current assignments; `alpha` holds
    one value per topic."""
    K, V = mdl.k, mdl.num_vocabs
    lg = math.lgamma
    ll = 0.0
    n_kv = {}
    n_k = [0] * K
    for doc in mdl.docs:
        n_dk = [0] * K
        for w, z in zip(doc.words, doc.topics):
            n_dk[z] += 1
            n_k[z] += 1
            n_kv[(z, w)] = n_kv.get((z, w), 0) + 1
        nd = sum(n_dk)
        ll += lg(sum(alpha)) - lg(nd + sum(alpha))
        ll += sum(lg(c + a) - lg(a) for c, a in zip(n_dk, alpha) if c)
    ll += K * lg(V * eta) - sum(lg(c + V * eta) for c in n_k)
    ll += sum(lg(c + eta) - lg(eta) for c in n_kv.values())
    return ll, sum(n_k)


def main():
    ap = argparse.ArgumentParser(description="tomotopy LDA throughput run")
    ap.add_argument("--input", default=os.path.join(BENCH, "out", "linuxdoc_bow.jsonl"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--topics", type=int, default=100)
    ap.add_argument("--alpha", type=float, default=0.5)
    ap.add_argument("--beta", type=float, default=0.01)
    ap.add_argument("--iterations", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--parallel", choices=sorted(SCHEMES), default="default")
    ap.add_argument("--optim-interval", type=int, default=0,
                    help="tomotopy's optim_interval (0 = no hyperparameter optimisation; its default is 10)")
    ap.add_argument("--optim-burn-in", type=int, default=0, help="tomotopy's burn_in (its default is 0)")
    ap.add_argument("--save-model", metavar="PATH",
                    help="write {vocabulary, alpha, phi} of the final state as JSON (for `topicd score-lda`)")
    ap.add_argument("--verify-ll", action="store_true",
                    help="recompute log p(w,z) in Python and compare with ll_per_word")
    args = ap.parse_args()

    # alpha is the symmetric per-topic Dirichlet parameter (tomotopy's `alpha`
    # given as a float = the same value for every topic), eta the topic-word one.
    mdl = tp.LDAModel(tw=tp.TermWeight.ONE, min_cf=0, min_df=0, rm_top=0,
                      k=args.topics, alpha=args.alpha, eta=args.beta, seed=args.seed)
    mdl.optim_interval = args.optim_interval   # 0: no hyperparameter optimisation
    mdl.burn_in = args.optim_burn_in
    n_docs = 0
    with open(args.input, encoding="utf-8") as f:
        for line in f:
            counts = json.loads(line)["counts"]
            words = [w for w in sorted(counts) for _ in range(counts[w])]
            if words:
                mdl.add_doc(words)
                n_docs += 1

    scheme = SCHEMES[args.parallel]
    mdl.train(0, workers=args.threads, parallel=scheme)     # initialise, untimed
    t0, c0 = time.perf_counter(), time.process_time()
    mdl.train(args.iterations, workers=args.threads, parallel=scheme)
    secs = time.perf_counter() - t0
    cpu = time.process_time() - c0     # all threads of this process

    tokens = mdl.num_words
    llpw = mdl.ll_per_word
    alpha = list(map(float, mdl.alpha)) if args.optim_interval else [args.alpha] * args.topics
    if args.save_model:
        # phi_k = (n_kw + eta) / (n_k + V eta) of the final state, over used_vocabs.
        phi = [list(map(float, mdl.get_topic_word_dist(k, normalize=True))) for k in range(mdl.k)]
        with open(args.save_model, "w", encoding="utf-8") as f:
            json.dump({"vocabulary": list(mdl.used_vocabs), "alpha": alpha, "phi": phi}, f)
    if args.verify_ll:
        ll, n = collapsed_log_joint(mdl, alpha, args.beta)
        print("verify-ll: python log p(w,z)/N = %.6f  tomotopy ll_per_word = %.6f  (N %d / %d)"
              % (ll / n, llpw, n, tokens), file=sys.stderr)
    print(json.dumps({
        "system": "tomotopy", "version": tp.__version__, "isa": tp.isa,
        "threads": args.threads, "parallel": args.parallel,
        "documents": n_docs, "vocabulary": mdl.num_vocabs, "tokens": tokens,
        "topics": args.topics, "alpha": args.alpha, "beta": args.beta,
        "iterations": args.iterations, "seed": args.seed,
        "seconds": round(secs, 4),
        "seconds_per_iteration": round(secs / args.iterations, 5),
        "tokens_per_second": round(tokens * args.iterations / secs, 1),
        "loglik_per_token": llpw,
        "optim_interval": args.optim_interval, "optim_burn_in": args.optim_burn_in,
        "alpha_sum": sum(alpha), "alpha_min": min(alpha), "alpha_max": max(alpha),
        # CPU seconds / (wall seconds x threads): well below 1 means the run
        # was starved (another busy process) or the threads idled waiting.
        "cpu_utilisation": round(cpu / (secs * args.threads), 3),
    }), flush=True)


if __name__ == "__main__":
    main()
