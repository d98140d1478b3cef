"""Speed-up of a study on the process pool and on a Dask LocalCluster with
1, 2, ... workers (issue 29, goal 5; docs/sweeps.md, "Measured speed-up").

    .venv/bin/python benches/study_scale.py --study bhatti2009 --profile quick \\
        --cells 'self-*-25ms-*' --workers 1,2 --rounds 2

Each measurement runs the study into a fresh store in its own child process,
so its CPU time (user + system of the child and every process it reaped:
pool workers, Dask nannies and their workers) is the child's rusage. The
configurations alternate within a round (pool 1, dask 1, pool 2, dask 2, ...)
so a change in the shared machine's load hits them alike; the load average
is recorded before each one. The table gives the medians over the rounds.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run_one(study: str, profile: str, cells: list[str], mode: str, workers: int,
            store: str) -> None:
    """The child: one study run; prints the number of runs it made."""
    from tcpeval.studies.runner import run_study

    where = {"workers": workers} if mode == "pool" else {"dask": f"local:{workers}"}
    stats = run_study(study, profile, store, cells=cells, **where)
    if stats["failures"]:
        sys.exit(f"failed runs: {stats['failures']}")
    print(json.dumps({"runs": stats["done"]}))


def measure(args, mode: str, workers: int) -> dict:
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as store:
        start = time.perf_counter()
        out = subprocess.run([sys.executable, __file__, "--one", mode, str(workers), store,
                              "--study", args.study, "--profile", args.profile,
                              "--cells", args.cells], check=True, capture_output=True, text=True)
        wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    runs = json.loads(out.stdout.strip().splitlines()[-1])["runs"]
    return {"mode": mode, "workers": workers, "wall_s": wall, "cpu_s": cpu, "runs": runs,
            "load1": load, "load1_after": os.getloadavg()[0]}


def table(results: list[dict]) -> str:
    """Medians per (runner, workers); "cores" is CPU over wall time: on a
    shared machine it shows how much of the machine the run actually got."""
    rows = ["| runner | workers | rounds | wall s | CPU s | cores | runs/s | speed-up "
            "| load before -> after |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    groups: dict[tuple, list[dict]] = {}
    for r in results:
        groups.setdefault((r["mode"], r["workers"]), []).append(r)
    base = {}
    for (mode, workers), rs in sorted(groups.items()):
        wall = statistics.median(r["wall_s"] for r in rs)
        cpu = statistics.median(r["cpu_s"] for r in rs)
        base.setdefault(mode, wall)  # sorted: 1 worker first
        loads = ", ".join(f"{r['load1']:.1f}->{r['load1_after']:.1f}" if "load1_after" in r
                          else f"{r['load1']:.1f}" for r in rs)
        rows.append(f"| {mode} | {workers} | {len(rs)} | {wall:.1f} | {cpu:.1f} | "
                    f"{cpu / wall:.2f} | {rs[0]['runs'] / wall:.2f} | {base[mode] / wall:.2f} "
                    f"| {loads} |")
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", default="bhatti2009")
    ap.add_argument("--profile", default="quick")
    ap.add_argument("--cells", default="self-*-25ms-*", help="comma-separated patterns")
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--runners", default="pool,dask")
    ap.add_argument("--json", type=Path, help="also write every measurement here")
    ap.add_argument("--table", nargs="+", type=Path, metavar="JSON",
                    help="only print the table of earlier --json files")
    ap.add_argument("--one", nargs=3, metavar=("MODE", "WORKERS", "STORE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.table:
        print(table([r for path in args.table for r in json.loads(path.read_text())]))
        return
    if args.one:
        mode, workers, store = args.one
        run_one(args.study, args.profile, args.cells.split(","), mode, int(workers), store)
        return
    configs = [(m, int(n)) for n in args.workers.split(",") for m in args.runners.split(",")]
    results = []
    for rnd in range(args.rounds):
        order = configs if rnd % 2 == 0 else configs[::-1]
        for mode, workers in order:
            r = measure(args, mode, workers)
            print(f"round {rnd}: {json.dumps(r)}", flush=True)
            results.append(r)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print(f"{args.study} {args.profile} cells {args.cells}, {os.cpu_count()} CPUs")
    print(table(results))


if __name__ == "__main__":
    main()
