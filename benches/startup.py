"""Start-up benchmark (issue 29): the wall time of `tcpeval --help`, of
`tcpeval run --help` and `tcpeval study list`, and of a short run next to the
simulation time it reports. Prints the median of N runs of each (timings on a
shared machine are noisy: the median, not the best or the mean).

    .venv/bin/python benches/startup.py [--runs N]

Before/after: `--baseline DIR` also times the tcpeval package found on the
PYTHONPATH DIR (e.g. an older python/ exported with `git archive`, the engine
`_sim.abi3.so` copied in; `--pythonpath DIR` likewise picks the one measured
against it), alternating the two `--rounds` times, and prints per command the
median of the rounds' medians and each round's median.

The short run's wall time is also given less its run-queue wait (the time its
main thread was runnable but waited for a core, from /proc/PID/schedstat on
Linux): on a loaded machine, what the run takes with a core of its own.
`--table` times the short run printing its table, as at a shell.

Python's bytecode is cached as in an installed package (a temporary
PYTHONPYCACHEPREFIX, one warm-up run first), even where the environment sets
PYTHONDONTWRITEBYTECODE: compiling tcpeval's modules from source costs every
command 0.03-0.1 s that a user does not pay.
"""

from __future__ import annotations

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

ROOT = Path(__file__).resolve().parent.parent
# A short run: one Reno flow, 100 Mbit/s, 50 ms, 10 s simulated.
SHORT_RUN = ["run", str(ROOT / "examples" / "reno_single.toml"), "--set", 'run.duration="10s"',
             "--json"]
COMMANDS = {"tcpeval --help": ["--help"], "tcpeval run --help": ["run", "--help"],
            "tcpeval study list": ["study", "list"]}
SHORT = "short run (10 s, 100 Mbit/s)"
OWN_CORE = "short run less run-queue wait"


class Tcpeval:
    """How to start `tcpeval`: this venv's command, or the package on a PYTHONPATH
    (started the same way as the command: import tcpeval.cli, call main)."""

    def __init__(self, pycache: Path, pythonpath: str | None = None):
        self.env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        self.env["PYTHONPYCACHEPREFIX"] = str(pycache)
        self.argv = [str(Path(sys.executable).parent / "tcpeval")]
        if pythonpath is not None:
            self.env["PYTHONPATH"] = pythonpath
            self.argv = [sys.executable, "-c", "import sys; from tcpeval.cli import main; "
                         "sys.exit(main())"]

    def timed(self, args: list[str]) -> tuple[float, str]:
        """Wall time of one `tcpeval` process and its standard output."""
        wall, _, stdout = self.timed_cpu(args)
        return wall, stdout

    def timed_cpu(self, args: list[str]) -> tuple[float, float, str]:
        """Wall and CPU time (user + system) of one `tcpeval` process, and its
        standard output. On a loaded machine the CPU time is nearer what the
        process takes on an idle one: the wall time includes waiting for a core."""
        wall, cpu, _, stdout = self.timed_waits(args)
        return wall, cpu, stdout

    def timed_waits(self, args: list[str]) -> tuple[float, float, float | None, str]:
        """As timed_cpu, with the time the process's main thread waited for a core
        (runnable, not running): its run-queue delay, the second field of
        /proc/PID/schedstat (Linux; Documentation/scheduler/sched-stats.rst), read
        once it has exited and before it is reaped; None where there is none."""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            proc = subprocess.Popen([*self.argv, *args], stdout=out, stderr=err, text=True,
                                    env=self.env)
            os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
            wall = time.perf_counter() - t0
            waited = _run_queue_delay(proc.pid)
            proc.wait()
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read(), err.read()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode:
            sys.exit(f"tcpeval {' '.join(args)}: exit {proc.returncode}\n{stderr}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return wall, cpu, waited, stdout


def _run_queue_delay(pid: int) -> float | None:
    """Seconds the process's main thread spent runnable but waiting for a core."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


def measure(tcpeval: Tcpeval, n: int, tmp: Path, table: bool = False) -> dict[str, float]:
    """Median of n runs of each command, and of the short run's wall and
    simulation times (the engine's, as the run reports it); with `table` the
    short run prints its table, as at a shell, instead of --json."""
    medians = {name: statistics.median(tcpeval.timed(args)[0] for _ in range(n))
               for name, args in COMMANDS.items()}
    short = [a for a in SHORT_RUN if not (table and a == "--json")]
    runs = []
    for _ in range(n):
        wall, cpu, waited, _ = tcpeval.timed_waits([*short, "--out", str(tmp / "run"), "--force"])
        sim = json.loads((tmp / "run" / "summary.json").read_text())["sim"]["wall_s"]
        runs.append((wall, cpu, waited, sim))
    medians[SHORT] = statistics.median(r[0] for r in runs)
    medians["short run CPU time"] = statistics.median(r[1] for r in runs)
    if all(r[2] is not None for r in runs):
        # The wall time less the waits for a core: what it takes with a core of its own.
        medians[OWN_CORE] = statistics.median(r[0] - r[2] for r in runs)
    medians["simulation"] = statistics.median(r[3] for r in runs)
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="runs per command (median reported)")
    parser.add_argument("--baseline", metavar="DIR", help="PYTHONPATH of a tcpeval to compare")
    parser.add_argument("--pythonpath", metavar="DIR", help="PYTHONPATH of the tcpeval to time")
    parser.add_argument("--rounds", type=int, default=1, help="alternated rounds (--baseline)")
    parser.add_argument("--table", action="store_true",
                        help="the short run prints its table (as at a shell), not --json")
    args = parser.parse_args()
    if args.runs < 1 or args.rounds < 1:
        parser.error("--runs and --rounds: need at least 1")
    with tempfile.TemporaryDirectory() as tmp:
        versions = {"this": Tcpeval(Path(tmp) / "pyc", args.pythonpath)}
        if args.baseline:
            versions = {"baseline": Tcpeval(Path(tmp) / "pyc-baseline", args.baseline), **versions}
        for tcpeval in versions.values():  # warm-up: bytecode compiled and cached
            for command in [*COMMANDS.values(), [*SHORT_RUN, "--out", str(Path(tmp) / "run")]]:
                tcpeval.timed(command)
        rounds: dict[str, list[dict[str, float]]] = {v: [] for v in versions}
        for _ in range(args.rounds):
            for version, tcpeval in versions.items():
                rounds[version].append(measure(tcpeval, args.runs, Path(tmp), args.table))
    print(f"start-up, median of {args.runs} runs (s)"
          + (f", {args.rounds} alternated rounds" if args.rounds > 1 else ""))
    for version, results in rounds.items():
        if len(versions) > 1:
            print(version)
        for name in results[0]:
            values = [r[name] for r in results]
            each = f"  ({', '.join(f'{v:.3f}' for v in values)})" if len(values) > 1 else ""
            print(f"  {name:<30} {statistics.median(values):7.3f}{each}")
        sim = statistics.median(r["simulation"] for r in results)
        for name, label in ((SHORT, "short run outside simulation"),
                            (OWN_CORE, "  the same, less the wait")):
            if name in results[0]:
                wall = statistics.median(r[name] for r in results)
                print(f"  {label:<30} {wall - sim:7.3f}")


if __name__ == "__main__":
    main()
