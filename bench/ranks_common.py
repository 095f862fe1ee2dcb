"""What the benchmarks of fits over MPI ranks share: the project's paths, the commands
they print and run, the two release builds they compare, and `mpirun` as root.

bench/ranks_lda.py and bench/ranks_hdp.py import it (run them from anywhere)."""
import os
import subprocess
import sys

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
    import time
    avx512 = "avx512f" in open("/proc/cpuinfo").read()
    return f"Machine: {os.cpu_count()} cores, AVX-512 {'yes' if avx512 else 'no'}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}."
