"""`python -m tcpeval.testbed check [--json]` and
`python -m tcpeval.testbed grid [--quick] [--reps N] [--attempts N] [--cc a,b,...]
[--cells PATTERNS] [--scenario PATH] [--raw FILE] [--rescore RAW] [--page DIR]` (the agreement
grid, grid.py; Markdown on stdout). `--rescore RAW` runs no kernel: it takes
the comparisons an earlier `--raw` kept and runs their simulator side again.
`--page DIR` runs nothing: the grid's page (docs/testbed-grid.md) from the
stored grids in DIR."""

import argparse
import json
import sys
from pathlib import Path

from . import check

DEFAULT_SCENARIO = Path(__file__).resolve().parents[3] / "examples" / "testbed_dumbbell.toml"


def _check(argv: list[str]) -> int:
    caps = check()
    if "--json" in argv:
        print(json.dumps(caps, indent=2))
    else:
        for k, v in caps.items():
            print(f"{k:<22} {v}")
    return 0


def _grid(argv: list[str]) -> int:
    from . import grid
    from .compare import InvalidRun, compare

    p = argparse.ArgumentParser(prog="python -m tcpeval.testbed grid")
    p.add_argument("--quick", action="store_true", help="one RTT (50 ms) and buffer (1 BDP)")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--attempts", type=int, default=3)
    p.add_argument("--cc", help="algorithms, comma-separated (default: every one of "
                   "grid.algorithms() this machine offers)")
    p.add_argument("--cells", help="shell-style patterns of the cell names to run, "
                   "comma-separated (e.g. 'fast x2 20 ms 1 BDP'; default: every cell)")
    p.add_argument("--scenario", type=Path, default=DEFAULT_SCENARIO)
    p.add_argument("--raw", type=Path, help="also write every comparison here (JSON lines)")
    p.add_argument("--rescore", type=Path, metavar="RAW",
                   help="no kernel runs: the simulator's side of RAW's comparisons again")
    p.add_argument("--page", type=Path, metavar="DIR",
                   help="no runs: the grid's page from the stored grids in DIR")
    a = p.parse_args(argv)
    if a.page:
        return _page(a.page)
    if a.rescore:
        return _rescore(a)
    offers = check()["algorithms"]
    ccs = _default_ccs(offers) if a.cc is None else [c for c in a.cc.split(",") if c]
    bad = [c for c in ccs if not _offered(offers, c)]
    if bad or a.reps < 1 or a.attempts < 1:
        what = (f"--cc: {', '.join(bad)} not offered here (see `testbed check`)" if bad
                else "--reps and --attempts: must be at least 1")
        print(f"tcpeval.testbed grid: {what}", file=sys.stderr)
        return 2
    only = None if a.cells is None else [c.strip() for c in a.cells.split(",")]
    chosen = grid.cells(ccs, a.quick, only)
    if not chosen:
        print(f"tcpeval.testbed grid: --cells {a.cells!r} matches no cell (names look like "
              f"'{grid.cells(ccs, a.quick)[0].name}')", file=sys.stderr)
        return 2
    results = []
    for cell in chosen:
        print(f"{cell.name} ...", file=sys.stderr, flush=True)
        try:
            results.append(grid.run_cell(a.scenario, cell, a.reps, a.attempts, compare))
            if a.raw:
                with a.raw.open("a") as f:
                    for c in results[-1]["comparisons"]:
                        f.write(json.dumps({"cell": cell.name, **c}) + "\n")
        except InvalidRun as e:
            print(f"  no valid testbed run in {a.attempts} attempts: {e}", file=sys.stderr)
    sys.stdout.write(grid.markdown(results))
    return 0


def _offered(offers: dict, cc: str) -> bool:
    """Whether this machine runs `cc` on the kernel, built in or as BPF."""
    return offers.get(cc, {}).get("how") in ("kernel", "bpf")


def _default_ccs(offers: dict) -> list[str]:
    from . import grid

    every = grid.algorithms()
    ccs = [c for c in every if _offered(offers, c)]
    skipped = [c for c in every if c not in ccs]
    if skipped:
        print(f"tcpeval.testbed grid: not offered here, skipped: {', '.join(skipped)} "
              "(see `testbed check`)", file=sys.stderr)
    return ccs


def _page(data: Path) -> int:
    from . import grid

    try:
        text = grid.page(data)
    except (OSError, ValueError) as e:
        print(f"tcpeval.testbed grid: --page {data}: {e}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


def _rescore(a: argparse.Namespace) -> int:
    from . import grid
    from .compare import rescore

    try:
        stored = grid.read_raw(a.rescore.read_text())
    except (OSError, ValueError) as e:
        print(f"tcpeval.testbed grid: --rescore {a.rescore}: {e}", file=sys.stderr)
        return 2
    # Outside the guard: a fault while simulating is not a bad input file.
    results = grid.rescore_cells(a.scenario, stored, rescore)
    if a.raw:
        with a.raw.open("w") as f:
            for r in results:
                for c in r["comparisons"]:
                    f.write(json.dumps({**c, "cell": r["cell"].name}) + "\n")
    sys.stdout.write(grid.markdown(results))
    return 0


def main(argv: list[str]) -> int:
    commands = {"check": _check, "grid": _grid}
    if not argv or argv[0] not in commands:
        print("usage: python -m tcpeval.testbed check [--json] | grid [--quick] [--reps N] "
              "[--attempts N] [--cc a,b] [--cells PATTERNS] [--scenario PATH] [--raw FILE] "
              "[--rescore RAW] [--page DIR]",
              file=sys.stderr)
        return 2
    return commands[argv[0]](argv[1:])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
