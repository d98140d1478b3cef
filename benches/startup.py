"""Start-up benchmark (issue 29): the wall time of `tcpeval --help`, of
`tcpeval run --help` and `tcpeval study list`, and of a short run next to the
simulation time it reports. Prints the median of N runs of each (timings on a
shared machine are noisy: the median, not the best or the mean).

    .venv/bin/python benches/startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TCPEVAL = Path(sys.executable).parent / "tcpeval"
# A short run: one Reno flow, 100 Mbit/s, 50 ms, 10 s simulated.
SHORT_RUN = ["run", str(ROOT / "examples" / "reno_single.toml"), "--set", 'run.duration="10s"',
             "--json"]
COMMANDS = {"tcpeval --help": ["--help"], "tcpeval run --help": ["run", "--help"],
            "tcpeval study list": ["study", "list"]}


def timed(args: list[str]) -> tuple[float, str]:
    """Wall time of one `tcpeval` process and its standard output."""
    t0 = time.perf_counter()
    done = subprocess.run([str(TCPEVAL), *args], capture_output=True, text=True, check=True)
    return time.perf_counter() - t0, done.stdout


def short_run(out: Path) -> tuple[float, float]:
    """Wall time of the short run and the engine's time inside it."""
    wall, stdout = timed([*SHORT_RUN, "--out", str(out)])
    return wall, json.loads(stdout)["sim"]["wall_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="runs per command (median reported)")
    n = parser.parse_args().runs
    print(f"start-up, median of {n} runs (s)")
    for name, args in COMMANDS.items():
        print(f"  {name:<28} {statistics.median(timed(args)[0] for _ in range(n)):7.3f}")
    with tempfile.TemporaryDirectory() as tmp:
        runs = [short_run(Path(tmp) / "run") for _ in range(n)]
    wall = statistics.median(w for w, _ in runs)
    sim = statistics.median(s for _, s in runs)
    print(f"  {'short run (10 s, 100 Mbit/s)':<28} {wall:7.3f} wall, {sim:.3f} simulation, "
          f"{wall - sim:.3f} outside the simulation")


if __name__ == "__main__":
    main()
