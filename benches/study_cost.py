"""CPU cost of a sample of a study's cells, to extrapolate a whole profile's
core-hours (issue 29, goal 5; docs/performance.md, "Studies at scale").

    PYTHONPATH=<tree>/python .venv/bin/python benches/study_cost.py \\
        --study tengig --profile full --duration 20 --cells single-cubic-12.2-0.001,...

Runs each named cell's first repetition in this process, its duration cut to
--duration simulated seconds (the full profile's 900 s runs would take hours),
and prints one JSON line per cell: the engine's wall time and this process's
CPU time for the run. It uses only plan_study and run_backend, which the code
of before this session has too, so the same script times both trees.

    .venv/bin/python benches/study_cost.py --estimate old.jsonl new.jsonl

extrapolates each file of such lines to every run of the tengig profile (below).

    .venv/bin/python benches/study_cost.py --sample 24 --seed 2026 --duration 90 > s.jsonl
    .venv/bin/python benches/study_cost.py --mean s.jsonl

times a seeded random sample of the profile's runs instead, and extrapolates
their mean CPU seconds per simulated second to the whole profile, with a
bootstrap 95% interval (any study).
"""

import argparse
import copy
import json
import os
import time


def tengig_shape(run: str) -> tuple:
    """tengig run names: single-CC-RTT-LOSS-REP, conv-CC1-CC2-RTT-REP,
    compat-CC-RTT-REP, fair-CC-RTT-REP -> (kind, ccs, rtt, loss)."""
    parts = run.split("-")
    if parts[0] == "single":
        return "single", parts[1], parts[2], parts[3]
    return parts[0], "-".join(parts[1:-2]), parts[-2], None


def estimate(sample: dict, runs: list[str]) -> float:
    """CPU seconds of every run in `runs`, full length, from the sampled cells'
    CPU seconds per simulated second. A run costs what the sampled cell of its
    kind, RTT and loss costs (the samples are CUBIC); a single-flow run of
    another algorithm is scaled by that algorithm's cost over CUBIC's at the
    12.2 ms RTT and the same loss where it was sampled. Losses drive the cost
    (a lossy 10 Gbit/s flow sends far fewer packets), algorithms little."""
    per_s = {tengig_shape(r["cell"]): r["cpu_s"] / r["sim_s"] for r in sample.values()}
    total = 0.0
    for run, full_s in runs:
        kind, ccs, rtt, loss = tengig_shape(run)
        base = per_s[(kind, "cubic" if kind != "conv" else "cubic-cubic", rtt, loss)]
        mid = ("single", "cubic", "12.2", loss)
        if kind == "single" and (kind, ccs, "12.2", loss) in per_s and per_s[mid] > 0:
            base *= per_s[(kind, ccs, "12.2", loss)] / per_s[mid]
        total += base * full_s
    return total


def print_estimates(files: list[str]) -> None:
    from tcpeval.studies.runner import plan_study

    plan, keys = plan_study("tengig", "full")
    name_of = {key: name for name, key in keys.items()}  # runs sharing a key run once
    runs = [(name_of[spec.key], spec.resolved["duration_ns"] / 1e9) for spec in plan.runs]
    for path in files:
        with open(path) as f:
            sample = {r["cell"]: r for r in map(json.loads, f)}
        cpu = estimate(sample, runs)
        print(f"{path}: {len(sample)} sampled cells, {len(runs)} runs: "
              f"{cpu / 3600:.1f} core-hours")


def print_mean_estimate(path: str, study: str, profile: str) -> None:
    """The profile's core-hours from a random sample's mean cost per simulated
    second, with a bootstrap 95% interval over the sampled runs."""
    import random
    import statistics

    from tcpeval.studies.runner import plan_study

    plan, _ = plan_study(study, profile)
    total_s = sum(spec.resolved["duration_ns"] / 1e9 for spec in plan.runs)
    with open(path) as f:
        rates = [r["cpu_s"] / r["sim_s"] for r in map(json.loads, f)]
    rng = random.Random(1)
    boot = sorted(statistics.fmean(rng.choices(rates, k=len(rates))) for _ in range(5000))
    hours = [x * total_s / 3600 for x in (statistics.fmean(rates), boot[125], boot[-126])]
    print(f"{path}: {len(rates)} sampled runs of {len(plan.runs)}: {hours[0]:.1f} core-hours "
          f"(bootstrap 95%: {hours[1]:.1f}-{hours[2]:.1f})")


def main() -> None:
    import random

    from tcpeval.run import run_backend
    from tcpeval.studies.runner import plan_study

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", default="tengig")
    ap.add_argument("--profile", default="full")
    ap.add_argument("--cells", help="comma-separated run names")
    ap.add_argument("--duration", type=float, default=20.0, help="simulated seconds")
    ap.add_argument("--estimate", nargs="+", metavar="JSONL", help="extrapolate tengig full")
    ap.add_argument("--sample", type=int, help="time this many runs drawn at random")
    ap.add_argument("--seed", type=int, default=2026, help="the draw's seed (--sample)")
    ap.add_argument("--mean", metavar="JSONL", help="extrapolate a --sample file")
    args = ap.parse_args()
    if args.estimate:
        print_estimates(args.estimate)
        return
    if args.mean:
        print_mean_estimate(args.mean, args.study, args.profile)
        return
    plan, keys = plan_study(args.study, args.profile)
    if args.sample:
        args.cells = ",".join(random.Random(args.seed).sample(sorted(keys), args.sample))
    if not args.cells:
        ap.error("--cells: give the run names to time (or --sample N, --estimate FILES)")
    by_key = {spec.key: spec for spec in plan.runs}
    for name in args.cells.split(","):
        resolved = copy.deepcopy(by_key[keys[name]].resolved)
        resolved["duration_ns"] = int(args.duration * 1e9)
        load = os.getloadavg()[0]
        cpu0 = time.process_time()
        raw, wall = run_backend(resolved)
        cpu = time.process_time() - cpu0
        print(json.dumps({"cell": name, "sim_s": args.duration, "wall_s": round(wall, 3),
                          "cpu_s": round(cpu, 3), "load1": load,
                          "full_sim_s": by_key[keys[name]].resolved["duration_ns"] / 1e9}),
              flush=True)


if __name__ == "__main__":
    main()
