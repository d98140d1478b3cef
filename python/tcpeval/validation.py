"""Validation of the congestion-control algorithms against their analytic response
functions (issue 3, item 3).

One flow on a 10 Gbit/s path, with Bernoulli random loss p on the bottleneck and a
receive window of 4x the predicted mean window (so neither the BDP nor the buffer
ever limits the window, and slow start cannot overflow the buffer). The mean
congestion window over the run (after a warm-up of a quarter of it) is compared
with the response function W(p) in packets:

- Reno (Mathis et al., CCR 1997): W = sqrt(3 / (2p)); Linux counts acknowledged
  packets, so delayed ACKs do not halve the growth (b = 1).
- Scalable (Kelly 2003, Linux constants a = 0.01 per packet, b = 1/8): growth
  linear in packets acknowledged, so from (1-b)W to W takes bW/a = 1/p packets;
  the time average of W over that cycle is a / (p ln(1/(1-b))) = 0.0749/p.
- HighSpeed (RFC 3649 section 5): W = 0.12 / p^0.835.
- CUBIC (RFC 9438 section 5.1 via RFC 8312 section 5.1): the larger of the
  cubic region's (C (3+beta) / (4 (1-beta)))^(1/4) (RTT/p)^(3/4) and the
  Reno-friendly region's sqrt(3 (1+beta) alpha / (2 (1-beta) ... )) = sqrt(3/(2p))
  with alpha = 3(1-beta)/(1+beta).
- BIC (Xu, Harfoush, Rhee 2004): see `bic_window`.
- H-TCP (Leith & Shorten 2004): no closed form; `htcp_cycle_window` iterates its
  deterministic loss cycle numerically with Linux's alpha(Delta) and beta.

Stacks (issue 28, docs/stacks.md): in the stacks that count growth per ACK
(Linux before 4.0, ns-2), delayed ACKs halve Reno's growth, and its mean window
follows Mathis with b = 2 packets per ACK: W = sqrt(3 / (4p)).

Random (Poisson) losses shift every constant a little from the deterministic
sawtooth's (Reno: about +7%, Ott, Kemperman & Mathis 1996); the bar is +-20%.

Run `python -m tcpeval.validation` (or `make validate`) to regenerate
docs/validation.md and its plots.
"""

from __future__ import annotations

import argparse
import json
import math
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tcpeval import metrics
from tcpeval.constants import MSS_BYTES, MTU_BYTES

RATE_BPS = 10e9
MSS = MSS_BYTES
MTU = MTU_BYTES
LOSS_EVENTS = 400  # loss events per run: CUBIC needs about this many to pin its mean within ~5%
WARMUP = 0.25  # fraction of the run skipped (convergence from slow start)

# CUBIC constants (RFC 9438 section 4; Linux tcp_cubic.c: beta 717/1024, C 410/1024)
CUBIC_C = 0.4
CUBIC_BETA = 0.7


def reno_window(p: float, rtt_s: float) -> float:
    return math.sqrt(1.5 / p)


def scalable_window(p: float, rtt_s: float, a: float = 0.01, b: float = 0.125) -> float:
    return a / (p * math.log(1.0 / (1.0 - b)))


def highspeed_window(p: float, rtt_s: float) -> float:
    return 0.12 / p**0.835


def cubic_window(p: float, rtt_s: float, c: float = CUBIC_C, beta: float = CUBIC_BETA) -> float:
    cubic = (c * (3.0 + beta) / (4.0 * (1.0 - beta))) ** 0.25 * (rtt_s / p) ** 0.75
    return max(cubic, math.sqrt(1.5 / p))


def bic_window(p: float, rtt_s: float, beta: float = 819 / 1024, smax: float = 16.0,
               ack_ratio: float = 2.0) -> float:
    """BIC's deterministic loss cycle (Xu, Harfoush & Rhee 2004, section 3, with
    Linux tcp_bic.c's rules), iterated per RTT: after a loss at W the window
    restarts at beta W and climbs by binary search towards W_max (a quarter of the
    distance per RTT, at most smax, at least 0.2), then probes beyond it, until 1/p
    packets have been sent. Fast convergence sets W_max = (1 + beta)/2 W when a
    loss comes below the previous W_max. Linux divides its per-ACK step by the
    packets per ACK while counting packets, so each RTT's step is multiplied by
    the ACK ratio (2 with delayed ACKs, the default)."""
    w_max = 2.0 / math.sqrt(p)
    peak = w_max
    sent, rounds = 0.0, 1
    for _ in range(300):
        w, sent, rounds = beta * peak, 0.0, 0
        while sent < 1.0 / p:
            sent += w
            rounds += 1
            w += ack_ratio * _bic_increment(w, w_max, smax)
        w_max = (1 + beta) / 2 * w if w < w_max else w
        peak = w
    return sent / rounds


def _bic_increment(w: float, w_max: float, smax: float) -> float:
    """Packets added per RTT (one ACK per packet): Linux `bictcp_update`'s cnt
    turned into a per-RTT step, B = 4, smooth_part = 20."""
    if w < w_max:
        dist = (w_max - w) / 4.0
        return smax if dist > smax else (0.2 if dist <= 1 else dist)
    over = w - w_max
    if over < 4:
        return 0.2
    return over / 3.0 if over < smax * 3 else smax


def htcp_alpha(delta_s: float, beta: float, rtt_s: float, rtt_scaling: bool = True) -> float:
    """Linux tcp_htcp.c htcp_alpha_update: alpha = 2 (1 - beta) f(Delta), with
    f = 1 + 10 d + (d/2)^2 for d = Delta - 1 s > 0, scaled by minRTT/100 ms
    clamped to [0.1, 2] when use_rtt_scaling is on."""
    d = max(delta_s - 1.0, 0.0)
    f = 1.0 + 10.0 * d + (d / 2.0) ** 2 if d > 0 else 1.0
    if rtt_scaling:
        f *= min(max(rtt_s / 0.1, 0.1), 2.0)
    return max(2.0 * f * (1.0 - beta), 1.0 / 128)


def htcp_cycle_window(p: float, rtt_s: float, beta: float = 102 / 128) -> float:
    """H-TCP's deterministic loss cycle: restart at beta*W, grow alpha(Delta) per
    RTT with Delta the time since the loss, lose after 1/p packets. With a
    constant RTT (no queue) adaptive beta = RTTmin/RTTmax = 1 is clamped to
    102/128 (Linux BETA_MAX)."""
    w = 1.0 / math.sqrt(p)
    for _ in range(100):
        cur, sent, rounds = beta * w, 0.0, 0
        while sent < 1.0 / p:
            sent += cur
            rounds += 1
            cur += htcp_alpha(rounds * rtt_s, beta, rtt_s)
        w = cur
    return sent / rounds


DEFAULT_STACK = "linux-6.6"


@dataclass(frozen=True)
class Case:
    cc: str
    p: float
    rtt_s: float
    predicted: float
    region: str = ""
    stack: str = DEFAULT_STACK

    @property
    def label(self) -> str:
        """The algorithm, and its stack when not today's (`reno@linux-2.6.22`)."""
        return self.cc if self.stack == DEFAULT_STACK else f"{self.cc}@{self.stack}"


RESPONSE = {
    "reno": (reno_window, "Mathis: sqrt(3/(2p))"),
    "scalable": (scalable_window, "a/(p ln(1/(1-b))) = 0.0749/p"),
    "highspeed": (highspeed_window, "RFC 3649: 0.12/p^0.835"),
    "cubic": (cubic_window, "RFC 9438: max(1.054 (RTT/p)^0.75, sqrt(3/(2p)))"),
    "bic": (bic_window, "BIC binary-search cycle (numeric)"),
    "htcp": (htcp_cycle_window, "H-TCP loss cycle (numeric)"),
}

# Response functions of other stacks (docs/stacks.md), on the algorithm's grid.
STACK_RESPONSE = {
    ("reno", "linux-2.6.22"): (lambda p, rtt_s: reno_window(p, rtt_s) / math.sqrt(2),
                               "Mathis with b = 2: sqrt(3/(4p))"),
}

# Loss rates per algorithm: two decades inside each one's high-speed regime.
FULL_GRID = {
    "reno": [(p, 0.1) for p in (1e-3, 1e-4, 1e-5)],
    "scalable": [(p, 0.1) for p in (3e-4, 3e-5, 3e-6)],
    "highspeed": [(p, 0.1) for p in (1e-4, 1e-5, 1e-6)],
    # Cubic region at 200 ms (p < RTT^3 / 1.81 = 4.4e-3: deep inside it), the
    # Reno-friendly region at 5 ms.
    "cubic": [(p, 0.2) for p in (1e-4, 1e-5, 1e-6)] + [(p, 0.005) for p in (1e-3, 1e-4)],
    "bic": [(p, 0.1) for p in (1e-4, 1e-5, 1e-6)],
    "htcp": [(p, 0.1) for p in (1e-4, 1e-5, 1e-6)],
}


# RFC 3649's response function assumes one ACK per packet; Linux's HighSpeed adds
# a(w)/cwnd per ACK (not per packet), so it is validated with delayed ACKs off
# (with them on its increase, and so its window, is lower: docs/algorithms/highspeed.md).
FLOW_OVERRIDES = {"highspeed": {"delayed_ack": False}}


# The point `make test` checks (index into FULL_GRID). HighSpeed's largest p sits
# where Linux's table rounds a(w) up the most (w ~ 260: a = 4 against the RFC's
# 3.2), so the reduced check uses its middle point.
REDUCED_POINT = {"highspeed": 1, "cubic": 4}

# CUBIC's window carries memory from cycle to cycle (W_max), so its mean converges
# slowly: 1,000 loss events pin it within a few percent where 400 leave +-6%.
LOSS_EVENTS_BY_CC = {"cubic": 1000}

# Points that miss the +-20% bar for a reason that is understood and documented;
# they are reported with the reason and do not fail `make validate`.
KNOWN_DEVIATIONS = {
    ("highspeed", 1e-4): "Linux's table rounds a(w) up: a = 4 at w ~ 260 where RFC 3649's "
                         "formula gives 3.2 (docs/algorithms/highspeed.md)",
}


def cases(algorithms: list[str], reduced: bool = False) -> list[Case]:
    out = []
    for cc in algorithms:
        fn, _ = RESPONSE[cc]
        grid = FULL_GRID[cc]
        if reduced:
            grid = grid[REDUCED_POINT.get(cc, 0):][:1]
        for p, rtt in grid:
            w = fn(p, rtt)
            region = ""
            if cc == "cubic":
                region = "reno-friendly" if w <= math.sqrt(1.5 / p) * 1.0001 else "cubic"
            out.append(Case(cc, p, rtt, w, region))
            out += [Case(cc, p, rtt, fn_stack(p, rtt), "", stack)
                    for (of, stack), (fn_stack, _) in STACK_RESPONSE.items() if of == cc]
    return out


def engine_config(case: Case, loss_events: int = LOSS_EVENTS, seed: int = 1) -> dict:
    rtt_ns = int(case.rtt_s * 1e9)
    bdp_pkts = math.ceil(RATE_BPS * case.rtt_s / 8 / MTU)
    measured_s = loss_events / case.p * case.rtt_s / case.predicted
    duration_s = max(measured_s / (1 - WARMUP), 20 * case.rtt_s)
    window = min(4 * case.predicted, bdp_pkts / 2)
    return {
        "seed": seed,
        "duration_ns": int(duration_s * 1e9),
        "interval_ns": int(max(duration_s / 200, case.rtt_s) * 1e9),
        "trace_interval_ns": int(max(duration_s / 4000, case.rtt_s / 2) * 1e9),
        "network": {
            "access_rate_bps": RATE_BPS * 10,
            "hops": [{"rate_bps": RATE_BPS, "buffer_pkts": bdp_pkts,
                      "reverse_buffer_pkts": bdp_pkts, "loss": case.p}],
        },
        "flows": [
            {
                "cc": case.cc,
                "stack": case.stack,
                "rtt_ns": rtt_ns,
                "max_window_bytes": int(window) * MSS,
                **FLOW_OVERRIDES.get(case.cc, {}),
            }
        ],
    }


def measure(case: Case, loss_events: int | None = None, seed: int = 1) -> dict:
    """Run one case; returns the mean cwnd after warm-up and the ratio to theory."""
    from tcpeval import _sim

    events = loss_events or LOSS_EVENTS_BY_CC.get(case.cc, LOSS_EVENTS)
    cfg = engine_config(case, events, seed)
    res = json.loads(_sim.simulate(json.dumps(cfg)))
    t = np.asarray(res["trace"]["t_ns"], dtype=float)
    cwnd = np.asarray(res["trace"]["cwnd_pkts"], dtype=float)
    keep = t >= WARMUP * cfg["duration_ns"]
    mean_cwnd = float(cwnd[keep].mean())
    return {
        "cc": case.label,
        "p": case.p,
        "rtt_ms": case.rtt_s * 1e3,
        "region": case.region,
        "predicted": case.predicted,
        "mean_cwnd": mean_cwnd,
        "ratio": mean_cwnd / case.predicted,
        "drops": res["links"][0]["drops_random"],
        "overflow_drops": res["links"][0]["drops_overflow"],
        "timeouts": res["flows"][0]["timeouts"],
        "duration_s": cfg["duration_ns"] / 1e9,
    }


def fairness(cc: str, seed: int = 1) -> dict:
    """Issue 3 item 4: two flows of `cc`, same RTT, 1 Gbit/s, 50 ms, 1-BDP
    buffer, the second starting 30 s later, 300 s; Jain index over the last half."""
    from tcpeval import _sim

    bdp = math.ceil(1e9 * 0.05 / 8 / MTU)
    cfg = {
        "seed": seed, "duration_ns": 300 * 10**9, "interval_ns": 10**9,
        "trace_interval_ns": 10**9,
        "network": {"access_rate_bps": 1e10,
                    "hops": [{"rate_bps": 1e9, "buffer_pkts": bdp, "reverse_buffer_pkts": bdp}]},
        "flows": [{"cc": cc, "rtt_ns": 50 * 10**6},
                  {"cc": cc, "rtt_ns": 50 * 10**6, "start_ns": 30 * 10**9}],
    }
    res = json.loads(_sim.simulate(json.dumps(cfg)))
    iv = res["intervals"]
    x = [sum(b for t, f, b in zip(iv["t_ns"], iv["flow"], iv["delivered_bytes"], strict=True)
             if f == k and t > 150 * 10**9) * 8 / 150 / 1e6 for k in (0, 1)]
    return {"cc": cc, "flow1_mbps": x[0], "flow2_mbps": x[1], "jain": metrics.jain_index(x)}


def _plot(rows: list[dict], cc: str, out_png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fn, label = RESPONSE[cc]
    fig, ax = plt.subplots(figsize=(5, 3.6))
    for rtt in sorted({r["rtt_ms"] for r in rows}):
        pts = [r for r in rows if r["rtt_ms"] == rtt]
        ps = np.logspace(math.log10(min(r["p"] for r in pts)) - 0.3,
                         math.log10(max(r["p"] for r in pts)) + 0.3, 50)
        ax.loglog(ps, [fn(p, rtt / 1e3) for p in ps], "-", label=f"{label} (RTT {rtt:g} ms)")
        ax.loglog([r["p"] for r in pts], [r["mean_cwnd"] for r in pts], "o",
                  label=f"simulated (RTT {rtt:g} ms)")
    ax.set_xlabel("random loss probability p")
    ax.set_ylabel("mean cwnd (packets)")
    ax.set_title(cc)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_png, dpi=110)
    plt.close(fig)


FAIRNESS_NOTES = {
    "scalable": "falls short, legitimately: multiplicative increase and decrease keep the "
                "ratio of the two windows when both flows lose together at the DropTail "
                "buffer (Chiu & Jain 1989: MIMD does not converge), so the late flow "
                "never catches up",
}

# Measured by crates/tcpeval-sim/tests/fairness.rs (its numbers, not rerun here).
PHASE_LOCK_NOTE = """\
**Phase locking and send overhead** (same file). Two Reno flows started 1 ms
apart on a loss-free 100 Mbit/s, 2 ms DropTail path (1-BDP buffer) lock into
one drop pattern and keep a 3.2% gap (46.3 / 49.4 Mbit/s over 10-60 s) for
any seed: nothing random happens after the start (Floyd and Jacobson 1992).
With `send_overhead` = 60 us (half a bottleneck packet time) the lock breaks:
over seeds 1-30 the gap is 0.03-1.8%, median 0.5%. The test asserts the lock
without overhead (> 2%) and gaps under 1.5% with it for seeds 1-3.
"""


def write_report(rows: list[dict], out_md: Path, fair: list[dict] | None = None) -> None:
    img_dir = out_md.parent / "validation"
    img_dir.mkdir(parents=True, exist_ok=True)
    lines = [
        "# Validation against analytic response functions",
        "",
        "Generated by `make validate` (`python -m tcpeval.validation`). One flow on a",
        "10 Gbit/s path with Bernoulli random loss p; receive window 4x the predicted",
        f"mean window; {LOSS_EVENTS} loss events expected per run (CUBIC 1,000); the first",
        f"{int(WARMUP * 100)}% of each run is skipped. Bar: mean cwnd within +-20% of",
        "the response function. See `python/tcpeval/validation.py` for the formulas",
        "and their sources.",
        "",
        "| algorithm | RTT ms | p | region | predicted W | mean cwnd | ratio | loss events | "
        "timeouts | within 20% |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        known = KNOWN_DEVIATIONS.get((r["cc"], r["p"]))
        ok = "yes" if 0.8 <= r["ratio"] <= 1.2 else (f"no: {known}" if known else "**no**")
        lines.append(
            f"| {r['cc']} | {r['rtt_ms']:g} | {r['p']:.0e} | {r['region']} | "
            f"{r['predicted']:.1f} | {r['mean_cwnd']:.1f} | {r['ratio']:.3f} | {r['drops']} | "
            f"{r['timeouts']} | {ok} |"
        )
    lines.append("")
    if fair:
        lines += [
            "## Fairness sanity",
            "",
            "Two flows of one algorithm, same RTT, 1 Gbit/s, 50 ms, 1-BDP DropTail buffer,",
            "the second starting 30 s later, 300 s; Jain's index over the last 150 s",
            "(tested in crates/tcpeval-sim/tests/fairness.rs: >= 0.9 except as noted).",
            "",
            "| algorithm | flow 1 Mbit/s | flow 2 Mbit/s | Jain | note |",
            "|---|---:|---:|---:|---|",
        ]
        for f in fair:
            lines.append(f"| {f['cc']} | {f['flow1_mbps']:.1f} | {f['flow2_mbps']:.1f} | "
                         f"{f['jain']:.3f} | {FAIRNESS_NOTES.get(f['cc'], '')} |")
        lines += ["", PHASE_LOCK_NOTE]
    for cc in dict.fromkeys(r["cc"] for r in rows):
        png = img_dir / f"{cc}.png"
        _plot([r for r in rows if r["cc"] == cc], cc, png)
        lines += [f"## {cc}", "", f"![{cc}](validation/{cc}.png)", ""]
    out_md.write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    from tcpeval.cc_names import available_algorithms

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs/validation.md"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--reduced", action="store_true", help="one point per algorithm")
    ap.add_argument("algorithms", nargs="*", help="default: every one with a response function")
    args = ap.parse_args(argv)
    known = available_algorithms()
    algos = args.algorithms or [a for a in RESPONSE if a in known]
    todo = cases(algos, reduced=args.reduced)
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        rows = list(pool.map(measure, todo))
        fair = list(pool.map(fairness, algos)) if not args.reduced else []
    for r in rows:
        print(f"{r['cc']:<10} p={r['p']:.0e} rtt={r['rtt_ms']:g}ms predicted={r['predicted']:.1f} "
              f"mean={r['mean_cwnd']:.1f} ratio={r['ratio']:.3f}")
    write_report(rows, args.out, fair)
    bad = [r for r in rows if not 0.8 <= r["ratio"] <= 1.2
           and (r["cc"], r["p"]) not in KNOWN_DEVIATIONS]
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
