"""The engine's constants, read from the engine (their one home is
crates/tcpeval-sim/src/consts.rs; `_sim.constants()` exports them)."""

from __future__ import annotations

from . import _sim

_ENGINE = _sim.constants()

# IP + TCP headers with the timestamp option (20 + 20 + 12 bytes).
HEADER_BYTES: int = _ENGINE["header_bytes"]
# Ethernet's IP MTU: the default packet size.
MTU_BYTES: int = _ENGINE["mtu_bytes"]
# MTU_BYTES - HEADER_BYTES.
MSS_BYTES: int = _ENGINE["mss_bytes"]
# Initial window in segments (RFC 6928, Linux TCP_INIT_CWND).
INITIAL_CWND: int = _ENGINE["initial_cwnd"]
# Delayed-ACK timer (Linux TCP_DELACK_MIN).
DELACK_TIMEOUT_S: float = _ENGINE["delack_timeout_ns"] / 1e9
