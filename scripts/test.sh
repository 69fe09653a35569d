#!/usr/bin/env bash
# Sets up everything air needs, then runs the whole test suite: ruff, ruff format --check, mypy
# --strict, import-linter and pytest: first every test not marked slow (the fast lane), then the
# slow ones (real processes for many seconds), each in four pytest-xdist workers: on two cores
# their tests wait on processes, disk and timeouts about half the time (IMPL-SUITE-1); a worker
# takes a module at a time, and one takes all the tests on the one-node Slurm (conftest.py).
# `bash scripts/test.sh --fast` runs the same checks and only the fast lane.
# Without --fast, the lowest-versions job follows: scripts/lowest.sh runs the fast lane again in
# .venv-lowest, every direct dependency at its declared floor (IMPL-DEP-1). (Beside the slow
# tests it slowed both, and the remote drop tests' timings under that load failed.)
# Other arguments go to one serial pytest run instead (e.g. a test file).
# Exits non-zero when anything fails (pytest's "no tests ran", exit 5, counts as a failure).
set -uo pipefail
cd "$(dirname "$0")/.."
fast=0
if [ "${1:-}" = "--fast" ]; then
  shift
  fast=1
fi
bash scripts/setup.sh || exit 1
export PATH="$PWD/.venv/bin:$PATH"
status=0
echo "== ruff"; ruff check . || status=1
echo "== ruff format --check"; ruff format --check . || status=1
# mypy and import-linter (~22 s of one core from a clean clone) run beside the slow lane, whose
# tests wait on processes and timeouts most of the time (~1 of the 2 cores idle), not beside
# the fast lane, which uses both; with --fast or a test file, beside the one pytest run. Their
# output follows that run.
checks_log=$(mktemp)
checks_pid=
start_checks() {
  { echo "== mypy --strict"; mypy || echo "mypy failed" >&2
    echo "== import-linter"; lint-imports || echo "import-linter failed" >&2; } >"$checks_log" 2>&1 &
  checks_pid=$!
}
report_checks() {
  wait $checks_pid
  cat "$checks_log"
  grep -q "^mypy failed$\|^import-linter failed$" "$checks_log" && status=1
  rm -f "$checks_log"
}

run_pytest() {
  echo "== pytest $*"
  python -m pytest "$@"
  local rc=$?
  if [ $rc -ne 0 ]; then
    [ $rc -eq 5 ] && echo "pytest collected no tests: that is a failure" >&2
    status=1
  fi
}

if [ $# -gt 0 ]; then
  start_checks
  run_pytest "$@"
  report_checks
  [ $fast -eq 1 ] || { echo "== lowest versions (scripts/lowest.sh)"; bash scripts/lowest.sh "$@" || status=1; }
  exit $status
fi
# one process rewrites the test modules' asserts once and keeps them as bytecode (conftest.py),
# so that the lanes' workers load them instead of each rewriting all of them again; it runs
# without PYTHONDONTWRITEBYTECODE, so that it also keeps the plugins' packages pytest rewrites
# before conftest.py runs (hypothesis, anyio, xdist: ~1 s of every pytest process's start)
env -u PYTHONDONTWRITEBYTECODE python -m pytest --collect-only -q >/dev/null 2>&1
if [ $fast -eq 1 ]; then
  start_checks
  run_pytest -m "not slow" -n 4
  report_checks
else
  run_pytest -m "not slow" -n 4
  start_checks
  run_pytest -m slow -n 4
  report_checks
  echo "== lowest versions (scripts/lowest.sh)"
  bash scripts/lowest.sh || status=1
fi
exit $status
