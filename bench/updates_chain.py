#!/usr/bin/env python3
"""A chain of 10 updates on AppStream: the time and storage each update costs, and the
lineage it leaves (bench/README.md, *Updates*).

AppStream (../shared/data/appstream.jsonl, the first line of each repeated id kept, its
`labels` left out: a corpus made like another takes its label tree) is shuffled with
seed 1; the first half is the first corpus, the rest ten batches of equal size. LDA
K = 20 (alpha 0.1, beta 0.01, `--parent-iterations` 400 sweeps, seed 1) is fitted on
the first corpus; then each batch is uploaded with `?like=<first corpus>` and the last
model is updated with it (`--update-iterations` 100 sweeps, seed 1, no new topics).

Reported per step: the documents the model holds, the update's time (the job's
started_at to finished_at) and the full refit it replaces estimated as the parent's
time scaled by the documents held and the sweeps of a refit (parent + update sweeps),
the database file's size after the step (SQLite, every corpus and model kept), and the
bytes the step added. At the end the lineage of the last model is checked: 11 versions,
fit then updates, each naming the one before, the last one's `corpus_ids` the first
corpus and the ten batches in order.

Usage: python3 bench/updates_chain.py target/release/topicd [--parent-iterations 400] [--update-iterations 100] [--steps 10]
"""
import argparse
import json
import os
import random
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from topicd_service import APPSTREAM, Service, job_seconds  # noqa: E402


def documents():
    seen, out = set(), []
    for line in open(APPSTREAM, encoding="utf-8"):
        d = json.loads(line)
        if d["id"] in seen:
            continue
        seen.add(d["id"])
        out.append({"id": d["id"], "text": d["text"]})
    random.Random(1).shuffle(out)
    return out


def db_bytes(path):
    return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--parent-iterations", type=int, default=400)
    ap.add_argument("--update-iterations", type=int, default=100)
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()
    docs = documents()
    half = len(docs) // 2
    size = (len(docs) - half) // args.steps
    batches = [docs[half + i * size: half + (i + 1) * size] for i in range(args.steps)]
    tmp = tempfile.mkdtemp()
    db = os.path.join(tmp, "topicd.db")
    svc = Service(os.path.abspath(args.binary), db, 18000 + random.randrange(1000))
    try:
        first = svc.req("POST", "/v1/corpora", {"name": "first", "documents": docs[:half]})
        params = {"topics": 20, "alpha": 0.1, "beta": 0.01, "iterations": args.parent_iterations}
        parent = svc.fit(first["id"], "lda", params, seed=1)
        assert parent["status"] == "succeeded", parent
        parent_s = job_seconds(parent)
        rows = [("fit", first["num_documents"], parent_s, None, db_bytes(db), None)]
        model, corpus_ids, previous = parent["model_id"], [first["id"]], db_bytes(db)
        for i, batch in enumerate(batches, 1):
            new = svc.req("POST", f"/v1/corpora?like={first['id']}", {"name": f"batch {i}", "documents": batch})
            job = svc.req("POST", f"/v1/models/{model}/update", {"corpus_id": new["id"], "iterations": args.update_iterations, "seed": 1})
            job = svc.wait(job)
            child = svc.req("GET", f"/v1/models/{job['model_id']}")
            corpus_ids.append(new["id"])
            assert child["parent_model_id"] == model and child["corpus_ids"] == corpus_ids, child
            held = child["num_documents"]
            # A refit of everything held for the parent's and this update's sweeps, scaled
            # from the parent's time by documents (LDA's cost is linear in tokens).
            refit = parent_s * held / first["num_documents"] * (args.parent_iterations + args.update_iterations) / args.parent_iterations
            size_now = db_bytes(db)
            rows.append((f"update {i}", held, job_seconds(job), refit, size_now, size_now - previous))
            model, previous = child["id"], size_now
            print(f"step {i}: {held} documents, {job_seconds(job):.2f} s", file=sys.stderr)
        lineage = svc.req("GET", f"/v1/models/{model}/lineage")
        versions = lineage["versions"]
        ok = len(versions) == args.steps + 1 and [v["how"] for v in versions] == ["fit"] + ["update"] * args.steps
        ok = ok and all(versions[i]["parent_model_id"] == versions[i - 1]["id"] for i in range(1, len(versions)))
    finally:
        svc.stop()
    print(f"AppStream chain: {half} documents, then {args.steps} batches of {size}; LDA K = 20; parent {args.parent_iterations} sweeps, updates {args.update_iterations}; load average {os.getloadavg()[0]:.2f}")
    print()
    print("| step | documents held | time (s) | est. full refit (s) | ratio | database (MB) | added (MB) |")
    print("|---|---|---|---|---|---|---|")
    for name, held, s, refit, total, added in rows:
        ratio = f"{s / refit:.2f}" if refit else ""
        refit_s = f"{refit:.1f}" if refit else ""
        added_mb = f"{added / 1e6:.2f}" if added is not None else ""
        print(f"| {name} | {held} | {s:.2f} | {refit_s} | {ratio} | {total / 1e6:.2f} | {added_mb} |")
    print()
    print(f"lineage of the last model: {len(versions)} versions, fit then updates each naming the one before: {'ok' if ok else 'WRONG'}")
    print(json.dumps({"rows": rows, "lineage_ok": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
