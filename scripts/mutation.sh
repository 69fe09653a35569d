#!/usr/bin/env bash
# Mutation testing of air's guards with mutmut 3 (a dev tool: not in the `test` extra, not in CI).
#
#   bash scripts/mutation.sh security   # air/security/*.py    against tests/security
#   bash scripts/mutation.sh ipc        # air/ipc/*.py         against tests/ipc
#   bash scripts/mutation.sh guards     # the parent-side guard functions of
#                                       # air/nursery/worker_manager.py against tests/workers
#   bash scripts/mutation.sh security air/security/engine.py   # one file of an area
#
# It installs mutmut into .venv if missing, copies the working tree (tracked and untracked,
# not ignored files) into $AIR_MUTATION_DIR/<area> (default /tmp/air-mutation), writes the
# area's [mutmut] section into that copy's setup.cfg (the repository's setup.cfg is never
# touched), runs `mutmut run` there and prints the counts. Run it again to resume: mutmut keeps
# its results in the copy's mutants/ directory (delete the copy to start over).
# MUTMUT_CHILDREN (default 2) is the number of mutants tested at once.
# Afterwards: cd $AIR_MUTATION_DIR/<area> && mutmut results / mutmut show <mutant>.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
area=${1:-security}
only=${2:-}
MUTMUT_VERSION=3.8.1

bash scripts/setup.sh
if ! .venv/bin/python -c "import mutmut" >/dev/null 2>&1; then
  echo "mutation: installing mutmut==$MUTMUT_VERSION into .venv" >&2
  .venv/bin/python -m pip install -q "mutmut==$MUTMUT_VERSION"
fi

names=()
case "$area" in
  security)
    mutate=${only:-"air/security/*.py"}
    tests="tests/security"
    ;;
  ipc)
    mutate=${only:-"air/ipc/*.py"}
    tests="tests/ipc"
    ;;
  guards)
    # mutmut mutates whole files; only the guard functions' mutants are run and counted.
    mutate="air/nursery/worker_manager.py"
    tests="tests/workers/test_parent_guards.py tests/workers/test_executor_flow.py"
    names=(
      "air.nursery.worker_manager.xǁWorkerManagerǁ_check_result__mutmut_*"
      "air.nursery.worker_manager.xǁWorkerManagerǁ_worker_event__mutmut_*"
      "air.nursery.worker_manager.xǁWorkerManagerǁ_handle__mutmut_*"
      "air.nursery.worker_manager.xǁWorkerManagerǁ_serve_tool__mutmut_*"
    )
    ;;
  *)
    echo "usage: bash scripts/mutation.sh security|ipc|guards [file]" >&2
    exit 2
    ;;
esac

dest=${AIR_MUTATION_DIR:-/tmp/air-mutation}/$area
mkdir -p "$dest"
# Refresh the copy's sources and tests; mutmut re-mutates files whose source changed.
git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
  tar --null -T - -cf - | tar -xf - -C "$dest"
{
  echo
  echo "[mutmut]"
  echo "source_paths = air"
  echo "only_mutate = $mutate"
  echo "also_copy ="
  echo "    conftest.py"
  echo "pytest_add_cli_args_test_selection ="
  for t in $tests; do echo "    $t"; done
  echo "pytest_add_cli_args = -p no:cacheprovider -q"
} >>"$dest/setup.cfg"

cd "$dest"
export PATH="$repo/.venv/bin:$PATH"
status=0
mutmut run --max-children "${MUTMUT_CHILDREN:-2}" "${names[@]}" || status=$?
results=$(mutmut results --all true 2>/dev/null || true)
if [ ${#names[@]} -gt 0 ]; then
  results=$(printf '%s\n' "$results" |
    grep -E "ǁ(_check_result|_worker_event|_handle|_serve_tool)__mutmut_" || true)
fi
count() { printf '%s\n' "$results" | grep -c ": $1\$" || true; }
total=$(printf '%s\n' "$results" | grep -c "__mutmut_" || true)
killed=$(count killed)
survived=$(count survived)
timeout=$(count timeout)
no_tests=$(count "no tests")
echo "mutation[$area]: generated=$total killed=$killed survived=$survived timeout=$timeout no_tests=$no_tests"
if [ "$total" -gt 0 ]; then
  echo "mutation[$area]: killed $(( (killed + timeout) * 100 / total ))% (timeouts count as killed)"
fi
printf '%s\n' "$results" | grep -E ": (survived|no tests)$" || true
exit $status
