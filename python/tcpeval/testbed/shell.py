"""Running commands, in the root namespace or inside a testbed namespace."""

from __future__ import annotations

import subprocess


class TestbedError(RuntimeError):
    """A testbed run failed while running (a command, a process, a timeout)."""


def in_ns(ns: str | None, argv: list[str]) -> list[str]:
    return argv if ns is None else ["ip", "netns", "exec", ns, *argv]


def sh(ns: str | None, argv: list[str], timeout: float = 20) -> str:
    """Run argv (inside ns when given); its stdout, or TestbedError with its stderr."""
    p = subprocess.run(in_ns(ns, argv), capture_output=True, text=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        where = f" (in {ns})" if ns else ""
        raise TestbedError(f"{' '.join(argv)}{where} failed: {p.stderr.strip() or p.returncode}")
    return p.stdout
