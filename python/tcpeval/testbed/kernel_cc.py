"""Congestion controls on the kernel: the ones built in, and the project's BPF
struct_ops programs (bpf/tcpeval_<name>.c, built by `make setup` into
target/bpf/) loaded for a run and unloaded after it (issue 32).

A BPF tcp_congestion_ops registers under the simulator's name (`scalable`,
`bic`, ...), so the endpoint's setsockopt(TCP_CONGESTION) and the kernel's
reports use the same name as the scenario. Its struct_ops map is named
tcpe_<name> (BPF object names are at most 15 characters), which is how cleanup
finds the maps a killed run left registered.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from .shell import TestbedError

SOURCES = Path(__file__).with_name("bpf")
BUILD_ENV = "TCPEVAL_BPF_DIR"
MAP_PREFIX = "tcpe_"
AVAILABLE = "/proc/sys/net/ipv4/tcp_available_congestion_control"
# The simulator's aliases that name the same kernel algorithm. HSTCP-LP goes
# by its alias hstcplp: a kernel congestion control's name holds letters,
# digits, '_' and '.' only (kernel/bpf/syscall.c bpf_obj_name_cpy, applied by
# net/ipv4/bpf_tcp_ca.c).
ALIASES = {"newreno": "reno", "westwoodplus": "westwood", "tcplp": "lp", "hstcp-lp": "hstcplp",
           "ctcp": "compound"}


def build_dir() -> Path:
    """Where `make setup` puts the BPF objects ($TCPEVAL_BPF_DIR overrides)."""
    env = os.environ.get(BUILD_ENV)
    return Path(env) if env else Path(__file__).resolve().parents[3] / "target" / "bpf"


def kernel_name(cc: str) -> str:
    return ALIASES.get(cc, cc)


def available() -> list[str]:
    try:
        return Path(AVAILABLE).read_text().split()
    except OSError:
        return []


def written() -> list[str]:
    """Algorithms with a BPF program in the source tree."""
    return sorted(p.stem.removeprefix("tcpeval_") for p in SOURCES.glob("tcpeval_*.c"))


def obj_path(name: str) -> Path:
    return build_dir() / f"tcpeval_{name}.bpf.o"


def registered() -> dict[str, int]:
    """Our struct_ops maps now registered: algorithm name -> map id."""
    if not shutil.which("bpftool"):
        return {}
    out = subprocess.run(["bpftool", "-j", "struct_ops", "list"], capture_output=True, text=True)
    try:
        rows = json.loads(out.stdout or "[]")
    except json.JSONDecodeError:
        return {}
    return {r["name"].removeprefix(MAP_PREFIX): r["id"] for r in rows
            if r.get("name", "").startswith(MAP_PREFIX)}


# Why the simulator's algorithms without a BPF program have none.
NOT_WRITTEN = {
    "dctcp": "no BPF program is written for it: DCTCP needs ECN marks at the bottleneck, and "
             "this testbed marks none (its RED, CoDel, fq_codel and PIE qdiscs need kernel "
             "options `testbed check` lists under qdisc_options); the kernel's own tcp_dctcp "
             "(CONFIG_TCP_CONG_DCTCP) is used when it is built in",
    "bbr3": "no BPF program is written for it: BBRv3 is not in mainline Linux (Google's "
            "v3 branch; the kernel's bbr is BBRv1, net/ipv4/tcp_bbr.c)",
}


def bpf_problem(name: str) -> str | None:
    """Why the BPF program of `name` cannot be loaded here, or None."""
    if name not in written():
        return NOT_WRITTEN.get(name, "no BPF program is written for it")
    if os.geteuid() != 0:
        return "loading BPF needs root"
    if not Path("/sys/kernel/btf/vmlinux").exists():
        return "the kernel has no BTF (/sys/kernel/btf/vmlinux), so no BPF struct_ops"
    if not shutil.which("bpftool"):
        return "bpftool is missing (apt-get install bpftool, or `make setup` as root)"
    if not obj_path(name).exists():
        return (f"not built ({obj_path(name)} is missing): `make setup` builds it where "
                "clang, libbpf-dev and bpftool are installed")
    return None


def offers(algorithms: list[str]) -> dict[str, dict]:
    """For each algorithm: {"how": "kernel" | "bpf" | "unavailable", "why": ...}."""
    ours = registered()
    kernel = set(available()) - set(ours)
    out = {}
    for cc in algorithms:
        name = kernel_name(cc)
        if name in kernel:
            out[cc] = {"how": "kernel", "why": "built into this kernel"}
            continue
        problem = bpf_problem(name)
        out[cc] = ({"how": "bpf", "why": f"BPF struct_ops {obj_path(name).name}"}
                   if problem is None else {"how": "unavailable", "why": problem})
    return out


def register(name: str) -> int | None:
    """Register one BPF algorithm; its map id, or None when another run had it
    registered already (that run unloads it). Raises TestbedError with
    bpftool's message when the kernel refuses it."""
    if name in available():
        return None
    out = subprocess.run(["bpftool", "struct_ops", "register", str(obj_path(name))],
                         capture_output=True, text=True, timeout=60)
    m = re.search(r"\bid (\d+)", out.stdout + out.stderr)  # bpftool says it on stderr
    if out.returncode != 0 or not m:
        if name in available():  # registered meanwhile by a concurrent run
            return None
        tail = (out.stderr or out.stdout).strip().splitlines()[-3:]
        raise TestbedError(f"bpftool could not register {name}: {' '.join(tail)}")
    return int(m.group(1))


def unregister(map_id: int) -> bool:
    return subprocess.run(["bpftool", "struct_ops", "unregister", "id", str(map_id)],
                          capture_output=True, timeout=60).returncode == 0


@contextlib.contextmanager
def loaded(names: list[str]):
    """Register the BPF algorithms among `names` not in the kernel for the
    duration of a run; unregister those this run registered afterwards,
    whatever happens (sockets still using one keep it until they close)."""
    kernel = set(available())
    ids = []
    try:
        for name in sorted({kernel_name(n) for n in names} - kernel):
            map_id = register(name)
            if map_id is not None:
                ids.append(map_id)
        yield ids
    finally:
        for map_id in ids:
            unregister(map_id)


def unregister_all() -> list[str]:
    """Unregister every tcpe_* struct_ops map (cleanup after a killed run)."""
    return [name for name, map_id in registered().items() if unregister(map_id)]
