#!/usr/bin/env bash
# Sets everything up, then runs air's main job on the bundled example: a small Python project
# whose own tests fail is repaired by a batch of three tasks (two in parallel, each in its own
# git worktree, then a dependent one), with every edit and command going through air's tools
# and permission engine in real worker processes. The model turns are replayed from cassettes,
# so it runs offline. The example is copied to a temporary directory first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
AIR="$PWD/.venv/bin/air"
work="$(mktemp -d)/calc"
cp -r examples/calc "$work"
cd "$work"
git init -q && git add -A
git -c user.name=demo -c user.email=demo@air.invalid commit -qm "calc: before air"
echo "== the example's own tests, before:"
python3 -m unittest -q 2>&1 | tail -1 || true
echo "== air run --headless batch.yaml --cassette cassettes"
"$AIR" run --headless batch.yaml --cassette cassettes --junit report.xml
echo "== the example's own tests, after:"
python3 -m unittest -q 2>&1 | tail -1
echo "== git history of $work"
git log --oneline --graph
echo "== what air recorded (air history):"
"$AIR" history
