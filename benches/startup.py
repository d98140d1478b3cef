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
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        done = subprocess.run([*self.argv, *args], capture_output=True, text=True, env=self.env)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode:
            sys.exit(f"tcpeval {' '.join(args)}: exit {done.returncode}\n{done.stderr}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return wall, cpu, done.stdout


def measure(tcpeval: Tcpeval, n: int, tmp: Path) -> dict[str, float]:
    """Median of n runs of each command, and of the short run's wall and
    simulation times (the engine's, as the run reports it)."""
    medians = {name: statistics.median(tcpeval.timed(args)[0] for _ in range(n))
               for name, args in COMMANDS.items()}
    runs = []
    for _ in range(n):
        wall, cpu, stdout = tcpeval.timed_cpu([*SHORT_RUN, "--out", str(tmp / "run"), "--force"])
        runs.append((wall, cpu, json.loads(stdout)["sim"]["wall_s"]))
    medians[SHORT] = statistics.median(w for w, _, _ in runs)
    medians["short run CPU time"] = statistics.median(c for _, c, _ in runs)
    medians["simulation"] = statistics.median(s for _, _, s in runs)
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="runs per command (median reported)")
    parser.add_argument("--baseline", metavar="DIR", help="PYTHONPATH of a tcpeval to compare")
    parser.add_argument("--pythonpath", metavar="DIR", help="PYTHONPATH of the tcpeval to time")
    parser.add_argument("--rounds", type=int, default=1, help="alternated rounds (--baseline)")
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
                rounds[version].append(measure(tcpeval, args.runs, Path(tmp)))
    print(f"start-up, median of {args.runs} runs (s)"
          + (f", {args.rounds} alternated rounds" if args.rounds > 1 else ""))
    for version, results in rounds.items():
        if len(versions) > 1:
            print(version)
        for name in results[0]:
            values = [r[name] for r in results]
            each = f"  ({', '.join(f'{v:.3f}' for v in values)})" if len(values) > 1 else ""
            print(f"  {name:<30} {statistics.median(values):7.3f}{each}")
        wall = statistics.median(r[SHORT] for r in results)
        sim = statistics.median(r["simulation"] for r in results)
        print(f"  {'short run outside simulation':<30} {wall - sim:7.3f}")


if __name__ == "__main__":
    main()
