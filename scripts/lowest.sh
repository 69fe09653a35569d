#!/usr/bin/env bash
# The lowest-versions job (IMPL-DEP-1): a separate virtualenv, .venv-lowest, with every direct
# dependency pinned to the floor setup.cfg declares (scripts/floors.py writes the pins from the
# declarations, so they cannot drift), air installed in it, and the fast lane run there:
# `pytest -m "not slow" -n 4`. scripts/test.sh runs it after the main suite.
# Other arguments go to pytest. Exits non-zero when anything fails (pytest's exit 5, "no tests
# ran", counts as a failure). pip's cache is reused; the venv is rebuilt only when setup.cfg or
# pyproject.toml changed.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
venv=.venv-lowest
pins="$venv/floors.txt"
stamp="$venv/.air-installed"
if [ ! -x "$venv/bin/python" ]; then
  "$PY" -m venv "$venv" || exit 1
fi
"$PY" scripts/floors.py setup.cfg > "$pins.new" || exit 1
if [ ! -f "$stamp" ] || ! cmp -s "$pins.new" "$pins" || [ setup.cfg -nt "$stamp" ] \
  || [ pyproject.toml -nt "$stamp" ]; then
  mv "$pins.new" "$pins"
  echo "== lowest versions: installing air with $(wc -l < "$pins") direct dependencies at their floors"
  "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null || exit 1
  extras=$("$PY" scripts/floors.py --extras setup.cfg) || exit 1
  "$venv/bin/python" -m pip install -q -c "$pins" --config-settings editable_mode=compat \
    -e ".[$extras]" || exit 1
  touch "$stamp"
else
  rm -f "$pins.new"
fi
# the pins must be what is installed: a constraint pip could not honour fails here, not later
"$venv/bin/python" - "$pins" <<'EOF' || exit 1
import sys
from importlib.metadata import version

from packaging.utils import canonicalize_name
from packaging.version import Version

wrong = []
for line in open(sys.argv[1], encoding="utf-8").read().split():
    name, _, floor = line.partition("==")
    have = version(canonicalize_name(name))
    if Version(have) != Version(floor):
        wrong.append(f"{name} {have} (floor {floor})")
if wrong:
    sys.exit("lowest versions: not at the floor: " + ", ".join(wrong))
print("lowest versions:", " ".join(open(sys.argv[1], encoding="utf-8").read().split()))
EOF
# its pytest keeps its own rewritten test modules and plugins: one process writes them first
# (scripts/test.sh)
[ $# -gt 0 ] || env -u PYTHONDONTWRITEBYTECODE "$venv/bin/python" -m pytest --collect-only -q \
  >/dev/null 2>&1
echo "== pytest -m \"not slow\" -n 4 (lowest versions)"
"$venv/bin/python" -m pytest -m "not slow" -n 4 "$@"
rc=$?
[ $rc -eq 5 ] && echo "pytest collected no tests: that is a failure" >&2
[ $rc -eq 0 ] || exit 1
