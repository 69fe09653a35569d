"""Print pip constraints pinning every direct dependency of air to its declared floor.

Reads ``install_requires`` and every extra of setup.cfg (the only place they are declared)
and prints ``name==floor`` for each, so the lowest-versions job (scripts/lowest.sh)
can never drift from the declarations. A dependency without a ``>=`` floor is an error: every
direct dependency declares the lowest version it was tested with. Standard library only: it
runs before any virtualenv exists.

Usage: python3 scripts/floors.py [SETUP_CFG]; with ``--extras`` first, it prints the extras'
names instead (``test,mcp``: what the job installs).
"""

from __future__ import annotations

import configparser
import re
import sys
from pathlib import Path

_REQUIREMENT = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(?P<specs>[^;]*?)\s*(?:;.*)?$"
)


def _parser(setup_cfg: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(setup_cfg, encoding="utf-8")
    return parser


def extras(setup_cfg: Path) -> list[str]:
    """The names of the extras, in order."""
    return list(_parser(setup_cfg)["options.extras_require"])


def declared(setup_cfg: Path) -> list[str]:
    """The requirement lines of ``install_requires`` and of every extra, in order."""
    parser = _parser(setup_cfg)
    text = parser.get("options", "install_requires")
    for extra in extras(setup_cfg):
        text += "\n" + parser.get("options.extras_require", extra)
    return [line.strip() for line in text.splitlines() if line.strip()]


def floor_of(requirement: str) -> tuple[str, str]:
    """(name, floor) of one requirement line; ValueError when it declares no ``>=`` floor."""
    match = _REQUIREMENT.match(requirement)
    if match is None:
        raise ValueError(f"cannot read the requirement {requirement!r}")
    floors = [
        spec.strip()[2:].strip()
        for spec in match["specs"].split(",")
        if spec.strip().startswith(">=")
    ]
    if len(floors) != 1:
        raise ValueError(f"{requirement!r} must declare exactly one floor (`>=VERSION`)")
    return match["name"], floors[0]


def constraints(setup_cfg: Path) -> list[str]:
    """``name==floor`` for every direct dependency."""
    return [f"{name}=={floor}" for name, floor in map(floor_of, declared(setup_cfg))]


def main(argv: list[str]) -> int:
    args = argv[1:]
    names = bool(args) and args[0] == "--extras"
    args = args[1:] if names else args
    setup_cfg = Path(args[0]) if args else Path(__file__).parent.parent / "setup.cfg"
    if names:
        print(",".join(extras(setup_cfg)))
        return 0
    try:
        lines = constraints(setup_cfg)
    except ValueError as exc:
        print(f"scripts/floors.py: {exc} in {setup_cfg}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
