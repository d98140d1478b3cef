"""python -m tcpeval.ns2: run a scenario on ns-2.35 TCP-Linux, print its Tcl
script, or run the cross-check grid into docs/crosscheck.md.

    python -m tcpeval.ns2 run SCENARIO.toml [--set key=value] [--seed N] [--agents native] [--json]
    python -m tcpeval.ns2 tcl SCENARIO.toml [--set key=value] [--seed N] [--agents native]
    python -m tcpeval.ns2 crosscheck [--quick] [--agents native] [--seeds 1,2,3] [--workers 2]
                                     [--stack NAME] [--match TEXT] [--out FILE]
    python -m tcpeval.ns2 study STUDY [--profile quick] [--seeds 1] [--cc reno,highspeed]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from ..errors import ScenarioError
from . import crosscheck as cx
from .runner import Ns2Unavailable, ns_binary

BEGIN, END = "<!-- crosscheck:begin -->", "<!-- crosscheck:end -->"


def markers(side: str) -> tuple[str, str]:
    """The page's generated block for one ns-2 side ("linux", "native",
    "linux-abc0"...): each side has its own."""
    if side == "linux":
        return BEGIN, END
    return f"<!-- crosscheck-{side}:begin -->", f"<!-- crosscheck-{side}:end -->"


EXIT_USAGE, EXIT_NO_NS2 = 2, 3


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tcpeval.ns2", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("run", "tcl"):
        s = sub.add_parser(name)
        s.add_argument("scenario")
        s.add_argument("--agents", choices=("linux", "native"), default="linux",
                       help="TCP-Linux modules (default) or ns-2's own agents")
        s.add_argument("--abc", type=int, choices=(0, 1, 2),
                       help="TCP-Linux's sysctl_tcp_abc (ns-2 default 1)")
        s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
        s.add_argument("--seed", type=int)
        if name == "run":
            s.add_argument("--json", action="store_true")
    c = sub.add_parser("crosscheck")
    c.add_argument("--quick", action="store_true", help="the issue's cells only")
    c.add_argument("--seeds", default="1,2,3", help="comma-separated seeds (default 1,2,3)")
    c.add_argument("--max-seeds", type=int, default=None,
                   help="add seeds, three at a time, to cells whose verdict is unresolved "
                        "until this many (default: the --seeds count, no more)")
    c.add_argument("--workers", type=int, default=cx.default_workers())
    c.add_argument("--stack", help="tcpeval stack for every flow (when the scenario has one)")
    c.add_argument("--agents", choices=("linux", "native"), default="linux",
                   help="ns-2 side: TCP-Linux modules (default) or ns-2's own agents")
    c.add_argument("--abc", type=int, choices=(0, 1, 2),
                   help="TCP-Linux's sysctl_tcp_abc (ns-2 default 1; kernels of the time 0)")
    c.add_argument("--quickacks", type=int, default=None,
                   help="tcpeval's receivers ACK this many segments at once at the start "
                        "(flows.quickacks; ns-2's sinks: 1); default: each stack's")
    c.add_argument("--match", default="", help="only cells whose name contains this")
    c.add_argument("--out", default="docs/crosscheck.md")
    st = sub.add_parser("study", help="a study's own cells on tcpeval and ns-2")
    st.add_argument("study")
    st.add_argument("--profile", default="quick")
    st.add_argument("--seeds", default="1")
    st.add_argument("--workers", type=int, default=cx.default_workers())
    st.add_argument("--match", default="")
    st.add_argument("--cc", default="", help="comma-separated: only cells of these algorithms")
    st.add_argument("--out", help="the study's page (default docs/studies/STUDY.md)")
    return p


def _seeds(text: str) -> list[int]:
    try:
        seeds = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        seeds = []
    if not seeds or any(s < 0 for s in seeds):
        raise ScenarioError(f"--seeds: comma-separated whole numbers >= 0; got {text!r}")
    return seeds


def _run(args) -> int:
    from . import run, script_for

    if args.command == "tcl":
        script, _ = script_for(args.scenario, args.set, args.seed, args.agents, args.abc)
        sys.stdout.write(script.tcl)
        return 0
    summary = run(args.scenario, args.set, args.seed, args.agents, args.abc)
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    for f in summary["flows"]:
        print(f"{f['label']:<16} {f['throughput_mbps']:10.3f} Mbit/s  retransmits "
              f"{f['retransmits']}  timeouts {f['timeouts']}")
    b = summary["bottleneck"]
    print(f"bottleneck utilisation {b['utilization']:.3f}, drops {b['drops']}; "
          f"ns wall {summary['sim']['wall_s']:.2f} s")
    return 0


def _crosscheck(args) -> int:
    seeds = _seeds(args.seeds)
    if args.workers < 1:
        raise ScenarioError(f"--workers: at least 1; got {args.workers}")
    grid = cx.quick_grid(args.stack) if args.quick else cx.default_grid(args.stack)
    if args.abc is not None and args.agents != "linux":
        raise ScenarioError("--abc: TCP-Linux's setting; not with --agents native")
    cells = [replace(c, quickacks=args.quickacks) if args.quickacks is not None else c
             for c in cx.with_agents(grid, args.agents, args.abc)]
    cells = [c for c in cells if args.match in c.name]
    if not cells:
        raise ScenarioError(f"--match: no cell name contains {args.match!r}")
    if ns_binary() is None:
        raise Ns2Unavailable("ns-2 is not installed (Debian package ns2)")
    t0 = time.perf_counter()
    max_seeds = len(seeds) if args.max_seeds is None else args.max_seeds
    if max_seeds < len(seeds):
        raise ScenarioError(f"--max-seeds: at least the {len(seeds)} seeds given; got {max_seeds}")
    results = cx.run_adaptive(cells, seeds, max_seeds, args.workers,
                              progress=lambda s: print(s, flush=True))
    wall = time.perf_counter() - t0
    rows, counts = cx.table(cells, results)
    side = args.agents if args.abc is None else f"{args.agents}-abc{args.abc}"
    side += "" if args.quickacks is None else f"-quickacks{args.quickacks}"
    begin, end = markers(side if args.stack is None else f"{side}-{args.stack}")
    block = _block(rows, counts, seeds, args, wall, len(cells))
    _write(Path(args.out), begin + "\n" + block + "\n" + end, begin, end)
    print("\n".join(rows))
    print(f"{len(cells)} cells x {len(seeds)} seeds in {wall:.0f} s: {counts}")
    return 0


def _study(args) -> int:
    from . import study_peer

    if ns_binary() is None:
        raise Ns2Unavailable("ns-2 is not installed (Debian package ns2)")
    seeds = _seeds(args.seeds)
    cc = tuple(c for c in args.cc.split(",") if c)
    t0 = time.perf_counter()
    results = study_peer.run_study(args.study, args.profile, seeds, args.workers, args.match, cc)
    rows, count = study_peer.table(results)
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    head = (f"Generated by `python -m tcpeval.ns2 study {args.study} --profile {args.profile} "
            f"--seeds {args.seeds}" + (f" --cc {args.cc}" if args.cc else "")
            + (f" --match {args.match}" if args.match else "")
            + f"` on {when} ({time.perf_counter() - t0:.0f} s): {count}.")
    begin, end = "<!-- ns2-peer:begin -->", "<!-- ns2-peer:end -->"
    out = Path(args.out or f"docs/studies/{args.study}.md")
    _write(out, begin + "\n" + head + "\n\n" + "\n".join(rows) + "\n" + end, begin, end)
    print("\n".join(rows))
    print(count)
    return 0


def _block(rows, counts, seeds, args, wall, n) -> str:
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    grid = "quick" if args.quick else "default"
    match = f", cells matching {args.match!r}" if args.match else ""
    verdicts = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
    side = "ns-2's native agents" if args.agents == "native" else "ns-2 TCP-Linux"
    if args.abc is not None:
        side += f" with sysctl_tcp_abc {args.abc}"
    if args.quickacks is not None:
        side += f", tcpeval's receivers ACKing {args.quickacks} segments at once at the start"
    return "\n".join([
        f"Generated by `python -m tcpeval.ns2 crosscheck` on {when}: {grid} grid{match}, "
        f"{n} cells against {side}, seeds {','.join(map(str, seeds))}"
        + (f" (up to {args.max_seeds} for unresolved cells)"
           if args.max_seeds and args.max_seeds > len(seeds) else "")
        + f", {args.workers} workers, "
        f"{wall:.0f} s wall on {platform.node() or 'this machine'} "
        f"({platform.processor() or platform.machine()}). Verdicts: {verdicts}.",
        "",
        "Values are means ± standard deviations over the seeds: single flows in Mbit/s "
        "(ratio tcpeval / ns-2), pairs as the first flow's share of the pair "
        "(difference tcpeval - ns-2), with the 95% confidence interval of that value "
        "(Welch; delta method for the ratio). Verdict: ok within the tolerance (ratio "
        f"1 ± {cx.RATIO_TOLERANCE:g}, share ± {cx.SHARE_TOLERANCE:g}); miss when the value and "
        "its whole interval are outside it; unresolved when the value is outside but "
        "the interval reaches the tolerance (the seeds cannot tell).",
        "", *rows])


def _write(path: Path, block: str, begin: str = BEGIN, end: str = END) -> None:
    """Replace the generated block (from `begin` to `end`) of the page, or append
    it, keeping the hand-written text around it."""
    text = path.read_text() if path.exists() else "# Cross-check against ns-2\n\n"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "crosscheck":
            return _crosscheck(args)
        if args.command == "study":
            return _study(args)
        return _run(args)
    except ScenarioError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except Ns2Unavailable as e:
        print(f"ns-2 unavailable: {e}", file=sys.stderr)
        return EXIT_NO_NS2


if __name__ == "__main__":
    sys.exit(main())
