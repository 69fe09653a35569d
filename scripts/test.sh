#!/usr/bin/env bash
# Sets everything up, then runs the whole test suite: ruff, mypy --strict, import-linter, pytest.
# `bash scripts/test.sh --fast` runs the fast lane: the same checks and `pytest -m "not slow" -n 2`
# (every behaviour area without the tests marked slow, in two pytest-xdist workers: IMPL-SUITE-1).
# Without --fast, the lowest-versions job follows: scripts/lowest.sh runs the fast lane again in
# .venv-lowest, every direct dependency at its declared floor (IMPL-DEP-1).
# Other arguments go to pytest.
# Exits non-zero when anything fails (pytest's "no tests ran", exit 5, counts as a failure).
set -uo pipefail
cd "$(dirname "$0")/.."
marker=()
lowest=1
if [ "${1:-}" = "--fast" ]; then
  shift
  marker=(-m "not slow" -n 2)
  lowest=0
fi
bash scripts/setup.sh || exit 1
export PATH="$PWD/.venv/bin:$PATH"
status=0
echo "== ruff"; ruff check . || status=1
echo "== ruff format --check"; ruff format --check . || status=1
echo "== mypy --strict"; mypy || status=1
echo "== import-linter"; lint-imports || status=1
echo "== pytest ${marker[*]}"
python -m pytest "${marker[@]}" "$@"
rc=$?
if [ $rc -ne 0 ]; then
  [ $rc -eq 5 ] && echo "pytest collected no tests: that is a failure" >&2
  status=1
fi
if [ $lowest -eq 1 ]; then
  echo "== lowest versions (scripts/lowest.sh)"
  bash scripts/lowest.sh "$@" || status=1
fi
exit $status
