#!/usr/bin/env python3
"""Two replicas share a sweep's fits (issue 58): one sweep submitted to one of two
`--role both` replicas on a shared PostgreSQL database, against the same sweep on one
replica alone.

Usage: python3 bench/sweep_replicas.py BIN [--topics 5,10,20,40] [--iterations 200]

BIN is a release `topicd` binary; PostgreSQL must answer on 127.0.0.1:5432 as user
`postgres` (trust). Each configuration gets a fresh database (dropped afterwards); every
replica runs `--max-jobs 1 --threads 1 --rate-limit-per-s 0` with its own
`--replica-id`. The corpus is the bars corpus (2 000 documents of 100 tokens, seed 1);
the sweep is LDA at `--topics`, one chain, `--iterations`, seed 1, 10 % held out. The
jobs table is polled every 100 ms for each job's `lease_owner` while it runs, so each
fit is attributed to the replica that ran it. Reported per configuration: fits per
replica, the most fits running at once, and the wall time from submission until every
row is scored. Server logs go to bench/out/replicas/sweep_*.log.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import replicas  # noqa: E402
from replicas import Pg, Server, bars  # noqa: E402


def run(replica_count, topics, iterations):
    db = Pg(f"sweep{replica_count}")
    servers = []
    try:
        for i in range(replica_count):
            rid = "ab"[i]
            servers.append(Server(f"sweep_{replica_count}_{rid}", db, ["--role", "both", "--replica-id", rid, "--max-jobs", "1", "--threads", "1"]))
        api = servers[0]
        corpus = bars(api, 2000, 100, 1)["id"]
        started = time.time()
        body = {"corpus_id": corpus, "model": "lda", "topics": topics, "chains": 1, "params": {"iterations": iterations}, "seed": 1, "heldout_fraction": 0.1}
        sweep = api.req("POST", "/v1/sweeps", body)
        owners, most_running = {}, 0
        while True:
            rows = db.rows(f"SELECT id, status, lease_owner FROM jobs WHERE sweep_id = '{sweep['id']}'")
            running = [r for r in rows if r[1] == "running"]
            most_running = max(most_running, len(running))
            for job, _, owner in running:
                if owner:
                    owners[job] = owner
            view = api.req("GET", f"/v1/sweeps/{sweep['id']}")
            if view["status"] in ("succeeded", "failed", "cancelled"):
                break
            time.sleep(0.1)
        wall = time.time() - started
        per_replica = {}
        for owner in owners.values():
            per_replica[owner] = per_replica.get(owner, 0) + 1
        return {"replicas": replica_count, "status": view["status"], "fits": len(rows), "fits_per_replica": per_replica,
                "most_running": most_running, "wall_s": round(wall, 1), "suggested_topics": view["suggested_topics"]}
    finally:
        for s in servers:
            s.stop()
        db.drop()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("--topics", default="5,10,20,40")
    ap.add_argument("--iterations", type=int, default=200)
    a = ap.parse_args()
    replicas.BIN = os.path.abspath(a.binary)
    os.makedirs(replicas.OUT, exist_ok=True)
    topics = [int(k) for k in a.topics.split(",")]
    results = [run(n, topics, a.iterations) for n in (1, 2)]
    print("| replicas | fits per replica | most running at once | sweep wall s |")
    print("|---|---|---:|---:|")
    for r in results:
        print(f"| {r['replicas']} | {r['fits_per_replica']} | {r['most_running']} | {r['wall_s']} |")
    print(f"\nwall time, one replica / two: {results[0]['wall_s'] / results[1]['wall_s']:.2f}")


if __name__ == "__main__":
    main()
