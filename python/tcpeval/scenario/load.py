"""Loading a scenario: TOML in, overrides applied, a validated model out."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path

from pydantic import ValidationError

from ..errors import ScenarioError
from ..units import MIN_NONZERO_TIME_S
from .limits import MAX_FILE_BYTES, MAX_NESTING
from .messages import _message
from .models import Scenario
from .overrides import _nesting, apply_override


def validate(data: dict) -> Scenario:
    if not isinstance(data, dict):
        raise ScenarioError("scenario: must be a table of [network], [[flows]], [run]...")
    try:
        sc = Scenario.model_validate(data)
    except ValidationError as e:
        raise ScenarioError("\n".join(_message(err) for err in e.errors())) from None
    bg = sc.background
    if not sc.flows and not sc.udp and not any(ll.count for ll in bg.long_lived) \
            and not any(w.load > 0 for w in bg.web):
        # No flow is invented: a run without traffic measures nothing.
        raise ScenarioError("flows: at least one [[flows]] entry (or [[udp]] / [background]) "
                            "is needed")
    _check_rtts(sc)
    return sc


def _check_rtts(sc: Scenario) -> None:
    """An RTT of 0 means "no emulated delay" on the testbed; the simulator needs
    a positive one (a path without delay has no BDP, so '1bdp' would be 1 packet)."""
    if sc.run.backend != "sim":
        return
    rtts = [("network.rtt", sc.network.rtt)]
    rtts += [(f"flows[{k}].rtt", f.rtt) for k, f in enumerate(sc.flows)]
    rtts += [(f"udp[{i}].rtt", u.rtt) for i, u in enumerate(sc.udp)]
    for field, rtt in rtts:
        if rtt is not None and rtt < MIN_NONZERO_TIME_S:
            raise ScenarioError(f"{field}: must be positive on the simulator, got "
                                f"{rtt:g} s (0 means no emulated delay: testbed only)")


def read_toml(path: str | Path, what: str) -> dict:
    """A TOML file as a dict; a missing, unreadable or malformed file is a
    ScenarioError (one line)."""
    path = Path(path)
    try:
        if path.is_dir():
            raise ScenarioError(f"{path}: is a directory, not a {what} file")
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ScenarioError(f"{path}: larger than {MAX_FILE_BYTES // 10**6} MB; "
                                f"not a {what} file")
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such {what} file") from None
    except UnicodeDecodeError as e:
        raise ScenarioError(f"{path}: not UTF-8 text (byte {e.start}); a {what} file "
                            "is TOML text") from None
    except OSError as e:
        raise ScenarioError(f"{path}: cannot read the {what} file: {e.strerror}") from None
    return _parse_toml(text, str(path))


def _parse_toml(text: str, where: str) -> dict:
    if _nesting(text) > MAX_NESTING:
        raise ScenarioError(f"{where}: arrays or tables nested deeper than {MAX_NESTING} "
                            "levels; not a scenario")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{where}: not valid TOML: {str(e).splitlines()[0]}") from None
    except RecursionError:
        raise ScenarioError(f"{where}: nested too deeply; not a scenario") from None


def load_scenario(source: str | Path | dict | Scenario,
                  overrides: list[str] | tuple[str, ...] = ()) -> Scenario:
    """Read a scenario from a TOML path, a dict or a model, apply `key=value`
    overrides (dotted keys, list indices as numbers: flows.0.cc=cubic), validate."""
    if isinstance(source, Scenario):
        data = source.model_dump(exclude_unset=True)
    elif isinstance(source, dict):
        data = copy.deepcopy(source)
    else:
        data = read_toml(source, "scenario")
    for item in overrides:
        apply_override(data, item)
    return validate(data)
