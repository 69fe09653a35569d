#!/usr/bin/env bash
# Mutation testing of air's guards with mutmut 3 (a dev tool: not in the `test` extra, not in CI).
#
#   bash scripts/mutation.sh security   # air/security/*.py    against tests/security
#   bash scripts/mutation.sh ipc        # air/ipc/*.py         against tests/ipc
#   bash scripts/mutation.sh guards     # the parent-side guards over a worker (air/supervision/
#                                       # worker_{checks,loop,tools}.py) against tests/workers
#   bash scripts/mutation.sh merge      # what decides a task's merge back (write areas, the
#                                       # merge's checks, left-out files) against their tests
#   bash scripts/mutation.sh trust      # which project files need the user's trust, and how
#                                       # they are read, against their tests
#   bash scripts/mutation.sh git        # how air runs git on a repository it does not trust
#                                       # (hardening, submodules, LFS) and walks a tree
#   bash scripts/mutation.sh tools      # the file tools' walk below a checked path and the
#                                       # credential files no command sees, against their tests
#   bash scripts/mutation.sh sandbox    # the sandbox's bubblewrap command line (binds, hidden
#                                       # state, environment) against the sandbox's tests
#   bash scripts/mutation.sh security air/security/engine.py   # one file of an area
#
# It installs mutmut into .venv if missing, copies the working tree (tracked and untracked,
# not ignored files) into $AIR_MUTATION_DIR/<area> (default /tmp/air-mutation), writes the
# area's [mutmut] section into that copy's setup.cfg (the repository's setup.cfg is never
# touched), runs `mutmut run` there and prints the counts. Run it again to resume: mutmut keeps
# its results in the copy's mutants/ directory (delete the copy to start over; after adding
# tests, MUTATION_RETEST=1 tests the surviving mutants again and keeps the killed ones).
# MUTMUT_CHILDREN (default 2) is the number of mutants tested at once; MUTATION_NAMES_FILE names
# the mutants to run (one a line, glob patterns allowed) when the whole area does not fit the
# time at hand; the systematic 1-in-10 sample of docs/mutation.md is the one pattern
# `air.security.*__mutmut_*7`. MUTATION_EQUIVALENT names surviving mutants shown equivalent in
# docs/mutation.md (one a line): they are counted apart and left out of the percentage.
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
deselect=
case "$area" in
  security)
    mutate=${only:-"air/security/*.py"}
    tests="tests/security"
    ;;
  ipc)
    mutate=${only:-"air/ipc/*.py"}
    tests="tests/ipc"
    ;;
  merge)
    mutate=${only:-"air/nursery/write_areas.py air/workspace/merge_checks.py air/workspace/changes.py air/workspace/left_out.py"}
    tests="tests/nursery/test_planning.py tests/workspace/test_merge_rules.py tests/workspace/test_merge_write_area.py tests/workspace/test_merge_file_size.py tests/workspace/test_copy_back_links.py tests/workspace/test_copy_rules.py tests/workspace/test_merge_left_out.py tests/workspace/test_merge_target.py tests/workspace/test_merge_user_git_state.py"
    ;;
  trust)
    mutate=${only:-"air/session/trust.py air/session/trust_mcp.py air/small_file.py"}
    tests="tests/trust tests/session/test_agent_files.py tests/mcp/test_config_and_names.py"
    ;;
  git)
    mutate=${only:-"air/workspace/gitsafe.py air/workspace/submodules.py air/workspace/lfs.py air/tree_walk.py"}
    tests="tests/workspace/test_gitsafe_rules.py tests/workspace/test_git_hardening.py tests/workspace/test_git_process_group.py tests/workspace/test_user_excludes.py tests/test_tree_walk.py tests/workspace/test_submodule_writes.py tests/workspace/test_lfs_merge.py tests/workspace/test_sparse_project.py"
    # runs the tree walk under another user's python, which cannot import mutmut's trampolines
    deselect="tests/test_tree_walk.py::test_directories_their_owner_locked_are_removed"
    ;;
  tools)
    mutate=${only:-"air/tools/safefs.py air/tools/credential_files.py"}
    tests="tests/tools/test_safefs.py tests/tools/test_fs_tools.py tests/tools/test_escapes.py tests/tools/test_fs_read_race.py tests/tools/test_fs_large_files.py tests/tools/test_credential_files.py tests/tools/test_sandbox_secrets.py tests/tools/test_undecodable_names.py tests/tools/test_fs_search_bounds.py tests/tools/test_fs_patch_git.py"
    ;;
  sandbox)
    mutate=${only:-"air/tools/sandbox.py"}
    # not the network's tests: mutmut collects its stats in its own process, where the last
    # network command leaves its killed slirp4netns for the next one to reap (IMPL-SBX-9), and
    # mutmut's os.wait() for a mutant's run then reaps that one instead
    tests="tests/tools/test_sandbox_argv.py tests/tools/test_sandbox_readonly.py tests/tools/test_sandbox_secrets.py tests/tools/test_sandbox_privilege.py tests/tools/test_sandbox_git.py tests/tools/test_sandbox_pinning.py tests/tools/test_sandbox_set_id.py tests/tools/test_sandbox_keyring.py tests/tools/test_sandbox_required.py tests/tools/test_sandbox_init_guard.py tests/tools/test_sandbox_build_dirs.py tests/tools/test_escapes.py tests/tools/test_shell_and_secrets.py tests/tools/test_credential_files.py"
    ;;
  guards)
    # the parent-side guards over a worker: its result's checks, its events and messages, the
    # tool and model calls it asks for (budgets, the agent's tool list, output caps)
    mutate=${only:-"air/supervision/worker_checks.py air/supervision/worker_loop.py air/supervision/worker_tools.py"}
    tests="tests/workers tests/supervision"
    ;;
  *)
    echo "usage: bash scripts/mutation.sh security|ipc|merge|trust|git|tools|sandbox|guards [file]" >&2
    exit 2
    ;;
esac

dest=${AIR_MUTATION_DIR:-/tmp/air-mutation}/$area
mkdir -p "$dest"
# Refresh the copy's sources and tests; mutmut re-mutates files whose source changed.
git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
  tar --null -T - -cf - | tar -xf - -C "$dest"
# The suite's forked air (tests/forked_air.py) is a server started in the repository whose
# children run in a test's project directory, and the sandbox tests' probe
# (tests/tools/sandbox_probe.py) runs in a workspace, maybe as another user: there mutmut cannot
# find its configuration (their trampolines read it), so in the copy each loads it at its start
# from the copy's directory.
"$repo/.venv/bin/python" - "$dest/tests/forked_air.py" "$dest/tests/tools/sandbox_probe.py" <<'PY'
import pathlib, sys
load = (
    "\ntry:  # added by scripts/mutation.sh in its scratch copy only\n"
    "    from mutmut.configuration import config as _mutmut_config\n\n"
    "{call}"
    "except ImportError:\n"
    "    pass\n"
)
hooks = {
    sys.argv[1]: ("\nimport air.cli\n", "    _mutmut_config()\n"),
    sys.argv[2]: (
        "\nREPO = Path(__file__).resolve().parents[2]\n",
        "    _cwd = os.getcwd()\n    os.chdir(REPO)\n    _mutmut_config()\n    os.chdir(_cwd)\n",
    ),
}
for name, (anchor, call) in hooks.items():
    path = pathlib.Path(name)
    text = path.read_text()
    hook = load.format(call=call)
    if hook not in text:
        path.write_text(text.replace(anchor, anchor + hook, 1))
PY
{
  echo
  echo "[mutmut]"
  echo "source_paths = air"
  echo "only_mutate ="
  for m in $mutate; do echo "    $m"; done
  echo "also_copy ="
  echo "    conftest.py"
  echo "    examples"
  echo "pytest_add_cli_args_test_selection ="
  for t in $tests; do echo "    $t"; done
  # one argument a line (mutmut splits this list at newlines only)
  echo "pytest_add_cli_args ="
  printf '    %s\n' -p no:cacheprovider -q
  [ -z "$deselect" ] || printf '    --deselect=%s\n' $deselect
} >>"$dest/setup.cfg"

if [ -n "${MUTATION_NAMES_FILE:-}" ]; then
  # Run only the mutants named in this file (one a line), e.g. a seeded random sample.
  mapfile -t names <"$MUTATION_NAMES_FILE"
fi
cd "$dest"
export PATH="$repo/.venv/bin:$PATH"
if [ "${MUTATION_RETEST:-0}" = 1 ] && [ -d mutants ]; then
  # After adding tests: test again every mutant that was not killed (killed ones stay killed,
  # tests are only ever added) and let mutmut map the tests to functions anew.
  # MUTATION_RESET_FILE names killed mutants to test again too (one a line): those a broken
  # run of their tests had killed.
  python - "${MUTATION_RESET_FILE:-}" <<'PY'
import json, pathlib, sys
again = set(pathlib.Path(sys.argv[1]).read_text().split()) if sys.argv[1] else set()
reset = 0
for meta in pathlib.Path("mutants").rglob("*.py.meta"):
    data = json.loads(meta.read_text())
    codes = data.get("exit_code_by_key", {})
    for key, code in codes.items():
        if code in (0, 5, 33) or key in again:
            codes[key] = None
            reset += 1
    meta.write_text(json.dumps(data, indent=4))
pathlib.Path("mutants/mutmut-stats.json").unlink(missing_ok=True)
print(f"mutation: {reset} mutants will be tested again")
PY
fi
status=0
mutmut run --max-children "${MUTMUT_CHILDREN:-2}" "${names[@]}" || status=$?
# The verdicts, read from mutmut's own files (`mutmut results` prints only the unkilled ones).
results=$(MUTATION_EQUIVALENT="${MUTATION_EQUIVALENT:-}" python - <<'PY'
import json, os, pathlib
named = os.environ["MUTATION_EQUIVALENT"]
equivalent = set(pathlib.Path(named).read_text().split()) if named else set()
status = {0: "survived", 1: "killed", 3: "killed", 5: "no tests", 33: "no tests",
          36: "timeout", 24: "timeout", -24: "timeout", 152: "timeout", 255: "timeout",
          None: "not checked"}
for meta in sorted(pathlib.Path("mutants").rglob("*.py.meta")):
    for key, code in json.loads(meta.read_text()).get("exit_code_by_key", {}).items():
        verdict = status.get(code, "suspicious")
        print(f"{key}: {'equivalent' if verdict == 'survived' and key in equivalent else verdict}")
PY
)
count() { printf '%s\n' "$results" | grep -c ": $1\$" || true; }
total=$(printf '%s\n' "$results" | grep -c "__mutmut_" || true)
killed=$(count killed)
survived=$(count survived)
timeout=$(count timeout)
no_tests=$(count "no tests")
unchecked=$(count "not checked")
equivalent=$(count equivalent)
echo "mutation[$area]: generated=$total killed=$killed survived=$survived timeout=$timeout" \
  "no_tests=$no_tests equivalent=$equivalent not_checked=$unchecked"
checked=$((total - unchecked - equivalent))
if [ "$checked" -gt 0 ]; then
  echo "mutation[$area]: killed $(( (killed + timeout) * 100 / checked ))% of the $checked checked" \
    "(timeouts count as killed; equivalent ones left out)"
fi
# Per file: checked, killed (timeouts included), survived, no tests, equivalent.
printf '%s\n' "$results" | awk -F': ' '/__mutmut_/ {
  key = $1; sub(/\.x(_|ǁ).*/, "", key); last = split(key, part, "."); f = part[last]; v = $2
  if (v == "not checked") next
  if (v == "equivalent") { eq[f]++; next }
  n[f]++; if (v == "killed" || v == "timeout") k[f]++; else if (v == "survived") s[f]++; else o[f]++
} END {
  for (f in n) printf "mutation[%s]: checked=%d killed=%d survived=%d no_tests=%d equivalent=%d (%.1f%%)\n",
    f, n[f], k[f], s[f], o[f], eq[f], 100 * k[f] / n[f]
}'
printf '%s\n' "$results" | grep -E ": (survived|no tests)$" || true
exit $status
