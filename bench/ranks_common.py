"""What the benchmarks of fits over MPI ranks share: the project's paths, the commands
they print and run, the two release builds they compare, and `mpirun` as root.

bench/ranks_lda.py and bench/ranks_hdp.py import it (run them from anywhere)."""
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "bench", "out")
RAW = os.path.join(OUT, "raw")
# Open MPI refuses to run as root unless told; on this command only.
MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def sh(cmd, **kw):
    print("==", " ".join(cmd), file=sys.stderr, flush=True)
    return subprocess.run(cmd, check=True, cwd=ROOT, **kw)


def build(features, dest):
    """Build the release binary with `features` and copy it to `dest`."""
    sh(["cargo", "build", "--release", "--locked"] + (["--features", features] if features else []))
    sh(["cp", "target/release/topicd", dest])


def world(ranks, cmd):
    """`cmd` under `mpirun -n ranks` (0: no launcher). Open MPI binds each rank to one
    core by default for two ranks or fewer, which would put a rank's threads on one
    core: --bind-to none."""
    if ranks > 0:
        return ["mpirun", "--oversubscribe", "--bind-to", "none", "-n", str(ranks)] + cmd
    return cmd


def machine_line():
    avx512 = "avx512f" in open("/proc/cpuinfo").read()
    return f"Machine: {os.cpu_count()} cores, AVX-512 {'yes' if avx512 else 'no'}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}."


def run_fit(cmd, ranks):
    """Run `topicd fit` (`cmd`) under `mpirun -n ranks` (0: none): its JSON line, with the
    wall-clock seconds of the whole run."""
    started = time.time()
    out = subprocess.run(world(ranks, cmd), check=True, cwd=ROOT, env=MPI_ENV, capture_output=True, text=True).stdout
    line = json.loads(out.strip().splitlines()[-1])
    line["wall_seconds"] = time.time() - started
    return line


def repeated_corpus(docs, name, copies, keep):
    """bench/out/NAME_xCOPIES.jsonl: `docs` repeated `copies` times, each document as
    {"id": "ID#c"} and its `keep` keys (written once, then reused)."""
    path = os.path.join(OUT, f"{name}_x{copies}.jsonl")
    if os.path.exists(path):
        return path
    docs = list(docs)
    tmp = path + ".tmp"
    with open(tmp, "w") as out:
        for c in range(copies):
            for d in docs:
                out.write(json.dumps({"id": f"{d['id']}#{c}", **{k: d[k] for k in keep}}) + "\n")
    os.rename(tmp, path)
    return path
