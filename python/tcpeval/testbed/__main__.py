"""`python -m tcpeval.testbed check [--json]`."""

import json
import sys

from . import check


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "check":
        print("usage: python -m tcpeval.testbed check [--json]", file=sys.stderr)
        return 2
    caps = check()
    if "--json" in argv:
        print(json.dumps(caps, indent=2))
    else:
        for k, v in caps.items():
            print(f"{k:<22} {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
