"""A user never sees a traceback: bad inputs to the real ``air`` command, table-driven.

Every case runs the ``air`` command as a real process in a fresh directory with an empty HOME
and no provider keys in the environment. Each must exit 2, print no traceback, name the file /
field / reason (the case's ``expect`` strings) and say what to do, and create no session. The
processes are forked from one warm air (tests/forked_air.py: a new interpreter per case cost
~0.8 s of CPU each); a parity test runs a few cases as ``python -m air.cli`` too and compares.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import pytest

from tests.forked_air import shared
from tests.gitrepo import write_files

BATCH = "version: 1\ntasks:\n  - id: a\n    title: Fix the tokenizer\n"
RUN = ("run", "--headless", "batch.yaml")
CASSETTE = '{"content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"}\n'
MODELS = (
    "default: local/m\n"
    "providers:\n"
    "  local:\n"
    "    kind: openai_compatible\n"
    "    base_url: http://127.0.0.1:9/v1\n"
    "    auth_ref: AIR_TEST_NO_SUCH_KEY\n"
    "    models:\n"
    "      m: {context_window: 32768, max_output_tokens: 4096}\n"
)
KEYLESS = MODELS.replace("    auth_ref: AIR_TEST_NO_SUCH_KEY\n", "")
"""A local server that needs no key: its run gets past the key's check to the project's."""
HOME_MODELS = "home/.air/models.yaml"
HOME_PERMS = "home/.air/permissions.yaml"
PROJ_PERMS = "proj/.air/shared/permissions.yaml"
DEEP = "a: " + "[" * 5000 + "]" * 5000 + "\n"
DEEP_BLOCK = "a:\n" + "- " * 5000 + "x\n"
BEFORE = "refused before parsing"  # the YAML limits are checked before any parse


def _alias_bomb() -> str:
    """Nine levels of ten aliases each (10**9 strings if expanded)."""
    lines = [
        "tasks:",
        "  - id: t1",
        "    title: x",
        "    acceptance_criteria: &a1 [" + ", ".join(["x"] * 10) + "]",
    ]
    for level in range(2, 10):
        refs = ", ".join([f"*a{level - 1}"] * 10)
        lines += [
            f"  - id: t{level}",
            "    title: x",
            f"    acceptance_criteria: &a{level} [{refs}]",
        ]
    return "\n".join(lines) + "\n"


def _task(extra: str) -> str:
    return "tasks:\n  - id: a\n    title: x\n" + extra


@dataclass(frozen=True)
class Case:
    name: str
    args: tuple[str, ...]
    expect: tuple[str, ...]
    """Strings stderr must contain: the file, the field, the reason."""
    files: Mapping[str, str | bytes] = field(default_factory=dict)
    """Relative to the case's directory: ``home/...`` (HOME) or ``proj/...`` (the cwd)."""
    fifo: str | None = None
    mkdir: tuple[str, ...] = ()
    init: bool = False
    """Run ``air init`` in proj/ first (a project with no session)."""
    no_git: bool = False
    sparse: tuple[str, int] | None = None
    """A sparse file in proj/ of this many bytes (cheap however large)."""
    repeated: tuple[str, str, int] | None = None
    """A file in proj/ made of a line repeated until it has at least this many bytes."""


def _batch(name: str, text: str | bytes, *expect: str) -> Case:
    return Case(name, RUN, ("batch.yaml", *expect), {"proj/batch.yaml": text})


def _models(name: str, text: str | bytes, *expect: str, args: tuple[str, ...] = RUN) -> Case:
    files = {HOME_MODELS: text, "proj/batch.yaml": BATCH}
    return Case(name, args, (".air/models.yaml", *expect), files)


def _perms(name: str, text: str | bytes, *expect: str, path: str = HOME_PERMS) -> Case:
    files = {path: text, HOME_MODELS: MODELS, "proj/batch.yaml": BATCH}
    return Case(name, RUN, ("permissions.yaml", *expect), files)


CASES: list[Case] = [
    # -- the command line -----------------------------------------------------------------
    Case("unknown-command", ("frobnicate",), ("Usage:",)),
    Case("run-without-headless", ("run", "batch.yaml"), ("air run --headless batch.yaml",)),
    Case("run-without-batch", ("run", "--headless"), ("Usage:",)),
    Case("unknown-option", (*RUN, "--bogus"), ("Usage:",)),
    Case("fake-script-is-gone", (*RUN, "--fake-script", "x.yaml"), ("Usage:",)),
    Case("max-workers-zero", (*RUN, "--max-workers", "0"), ("--max-workers", "positive")),
    Case("max-workers-negative", (*RUN, "--max-workers", "-3"), ("--max-workers", "positive")),
    Case("max-workers-word", (*RUN, "--max-workers", "many"), ("--max-workers", "'many'")),
    Case("isolation-unknown", (*RUN, "--isolation", "sideways"), ("--isolation", "sideways")),
    Case("permission-mode-unknown", (*RUN, "--permission-mode", "yolo"), ("--permission-mode",)),
    Case("history-bad-option", ("history", "--frob"), ("Usage:",)),
    Case("history-last-zero", ("history", "--last", "0"), ("--last", "positive")),
    Case("history-last-word", ("history", "--last", "all"), ("--last", "'all'")),
    # -- the batch file ---------------------------------------------------------------------
    Case("batch-missing", ("run", "--headless", "missing.yaml"), ("missing.yaml", "no such")),
    Case("batch-directory", ("run", "--headless", "dir"), ("dir", "a directory"), mkdir=("dir",)),
    Case("batch-fifo", ("run", "--headless", "pipe"), ("pipe", "not a regular file"), fifo="pipe"),
    Case("batch-device", ("run", "--headless", "/dev/null"), ("/dev/null", "not a regular file")),
    Case(
        "batch-too-large",
        ("run", "--headless", "big.yaml"),
        ("big.yaml", "65.0 MiB, more than the 8.0 MiB air reads"),
        sparse=("big.yaml", 65 * 1024 * 1024),
    ),
    _batch("batch-binary", b"\x00\xff\xfe\x89PNG\r\n", "not UTF-8"),
    _batch("batch-latin1", "tasks:\n  - id: a\n    title: caf\xe9\n".encode("latin-1"), "UTF-8"),
    _batch("batch-empty", "", "a mapping with a 'tasks' list"),
    _batch("batch-a-list", "- a\n- b\n", "a mapping with a 'tasks' list"),
    _batch("batch-a-scalar", "hello\n", "a mapping with a 'tasks' list"),
    _batch("batch-bad-indent", "tasks:\n  - id: a\n  title: x\n", ":3:", "invalid YAML"),
    _batch("batch-tab-indent", "tasks:\n\t- id: a\n", "invalid YAML"),
    _batch("batch-unclosed-quote", 'tasks:\n  - id: "a\n', "invalid YAML"),
    Case(
        "batch-50-mib",
        ("run", "--headless", "big.yaml"),
        ("big.yaml", "more than the 8.0 MiB air reads", "none of it was read"),
        repeated=("big.yaml", "  - {id: a, title: Fix the tokenizer}\n", 50 * 1024 * 1024),
    ),
    _batch(
        "batch-deep-nesting",
        "tasks: " + "[" * 5000 + "]" * 5000 + "\n",
        "nested too deep",
        "64 levels",
        BEFORE,
    ),
    _batch("batch-deep-block", "tasks:\n" + "- " * 5000 + "x\n", "nested too deep", BEFORE),
    _batch("batch-deep-mappings", "tasks: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n", "nested"),
    _batch("batch-nul-byte", "tasks:\n  - id: a\n    title: x\x00\n", "invalid YAML"),
    _batch("batch-no-tasks", "version: 1\n", "'tasks'"),
    _batch("batch-tasks-empty", "tasks: []\n", "tasks", "at least 1"),
    _batch("batch-tasks-not-list", "tasks: fix everything\n", "tasks", "list"),
    _batch("batch-task-a-string", "tasks:\n  - fix it\n", ":2:", "each task is a mapping"),
    _batch("batch-unknown-field", _task("    colour: red\n"), ":4:", "unknown field", "colour"),
    _batch("batch-unknown-top-field", "taks: []\n" + _task(""), "unknown field 'taks'"),
    _batch("batch-missing-id", "tasks:\n  - title: x\n", "missing required field", "id"),
    _batch("batch-bad-id", "tasks:\n  - id: 'bad id!'\n    title: x\n", "tasks.0.id", "pattern"),
    _batch("batch-missing-title", "tasks:\n  - id: a\n", "missing required field", "title"),
    _batch("batch-empty-title", "tasks:\n  - id: a\n    title: ''\n", "title", "at least 1"),
    _batch("batch-bad-type", _task("    type: frobnicate\n"), "tasks.0.type", "frobnicate"),
    _batch("batch-duplicate-id", _task("  - id: a\n    title: y\n"), ":4:", "duplicate task id"),
    _batch("batch-unknown-dep", _task("    depends_on: [nope]\n"), "unknown task 'nope'"),
    _batch("batch-self-dep", _task("    depends_on: [a]\n"), "depends on itself"),
    _batch(
        "batch-cycle",
        _task("    depends_on: [b]\n  - id: b\n    title: y\n    depends_on: [a]\n"),
        "dependency cycle",
    ),
    _batch("batch-version-2", "version: 2\n" + _task(""), "version"),
    _batch("batch-defaults-not-mapping", "defaults: 3\n" + _task(""), "defaults"),
    _batch("batch-write-area-string", _task("    scope: {write_area: 5}\n"), "write_area"),
    _batch(
        "batch-bad-dependency-type",
        _task(
            "  - id: b\n    title: y\n    dependencies:\n"
            "      - {depends_on_task_id: a, dependency_type: sometimes}\n"
        ),
        "dependency_type",
    ),
    _batch("batch-verification-commands", _task("    verification: {commands: 7}\n"), "commands"),
    _batch(
        "batch-negative-hard-timeout",
        _task("    constraints: {hard_timeout_ms: -5}\n"),
        "hard_timeout_ms",
        "greater than or equal to 1",
    ),
    _batch(
        "batch-negative-soft-timeout",
        _task("    constraints: {soft_timeout_ms: -1}\n"),
        "soft_timeout_ms",
        "greater than or equal to 1",
    ),
    _batch("batch-zero-timeout", _task("    constraints: {hard_timeout_ms: 0}\n"), "hard_timeout"),
    _batch(
        "batch-timeout-a-year",
        _task("    constraints: {hard_timeout_ms: 31536000000}\n"),
        "hard_timeout_ms",
        "less than or equal to",
    ),
    _batch("batch-max-turns-zero", _task("    constraints: {max_turns: 0}\n"), "max_turns"),
    _batch("batch-max-turns-negative", _task("    constraints: {max_turns: -1}\n"), "max_turns"),
    _batch(
        "batch-max-turns-absurd",
        _task("    constraints: {max_turns: 1000000000}\n"),
        "max_turns",
        "less than or equal to 1000",
    ),
    _batch("batch-max-turns-word", _task("    constraints: {max_turns: lots}\n"), "max_turns"),
    _batch("batch-retry-budget", _task("    constraints: {retry_budget: -2}\n"), "retry_budget"),
    _batch(
        "batch-retry-budget-huge", _task("    constraints: {retry_budget: 11}\n"), "retry_budget"
    ),
    _batch("batch-max-cost-infinite", _task("    constraints: {max_cost_usd: .inf}\n"), "finite"),
    _batch(
        "batch-soft-timeout-a-year",
        _task("    constraints: {soft_timeout_ms: 31536000000}\n"),
        "soft_timeout_ms",
    ),
    _batch("batch-max-cost", _task("    constraints: {max_cost_usd: -1}\n"), "max_cost_usd"),
    _batch(
        "batch-defaults-bad-constraint",
        "defaults: {constraints: {max_turns: 0}}\n" + _task(""),
        "max_turns",
    ),
    _batch(
        "batch-huge-description",
        _task("    description: " + "x" * (4 * 1024 * 1024 + 10) + "\n"),
        ":2:",
        "task 'a' is",
        "one worker message",
    ),
    _batch("batch-alias-bomb", _alias_bomb(), "tasks.1.acceptance_criteria", "valid string"),
    _batch("batch-json-syntax", '{"tasks": [{"id": "a" "title": "x"}]}', "invalid YAML"),
    # -- the project, the session -----------------------------------------------------------
    Case(
        "project-missing",
        (*RUN, "--project", "nowhere"),
        ("--project", "nowhere", "not exist"),
        {"proj/batch.yaml": BATCH},
    ),
    Case(
        "project-a-file",
        (*RUN, "--project", "batch.yaml"),
        ("--project", "batch.yaml", "not a directory"),
        {"proj/batch.yaml": BATCH},
    ),
    Case(
        "project-json-corrupt",
        RUN,
        ("project.json",),
        {"proj/batch.yaml": BATCH, "proj/.air/shared/project.json": "{nope", HOME_MODELS: KEYLESS},
    ),
    Case(
        "model-key-unset",
        RUN,
        ("AIR_TEST_NO_SUCH_KEY", "is not set", "local/m"),
        {"proj/batch.yaml": BATCH, HOME_MODELS: MODELS},
    ),
    Case("resume-outside-a-project", ("resume",), ("no air project", "nothing to resume")),
    Case("resume-no-session", ("resume",), ("no session to resume",), init=True),
    Case(
        "resume-unknown-session",
        ("resume", "--session", "ses_01NOSUCHSESSION"),
        ("--session", "ses_01NOSUCHSESSION"),
        init=True,
    ),
    Case(
        "resume-session-path-traversal",
        ("resume", "--session", "../../etc"),
        ("--session", "'../../etc'"),
        init=True,
    ),
    Case(
        "history-unknown-session",
        ("history", "--session", "ses_01NOSUCH"),
        ("ses_01NOSUCH",),
        init=True,
    ),
    Case(
        "resume-corrupt-session-db",
        ("resume", "--session", "ses_01JCORRUPT000000000000000"),
        ("session.db",),
        {"proj/.air/local/sessions/ses_01JCORRUPT000000000000000/session.db": b"not sqlite" * 500},
        init=True,
    ),
    Case("history-outside-a-project", ("history",), ("project",)),
    Case("session-list-outside-a-project", ("session", "list"), ("project",)),
    Case("init-path-is-a-file", ("init", "batch.yaml"), ("batch.yaml",), {"proj/batch.yaml": "x"}),
    Case(
        "demo-dir-is-a-file",
        ("demo", "--dir", "batch.yaml"),
        ("batch.yaml",),
        {"proj/batch.yaml": "x"},
    ),
    Case("no-git", RUN, ("git", "PATH"), {"proj/batch.yaml": BATCH}, no_git=True),
    # -- --junit, --cassette --------------------------------------------------------------
    Case(
        "junit-dir-missing",
        (*RUN, "--cassette", "c.jsonl", "--junit", "no/such/dir/r.xml"),
        ("--junit", "no/such/dir/r.xml", "does not exist"),
        {"proj/batch.yaml": BATCH, "proj/c.jsonl": CASSETTE},
    ),
    Case(
        "junit-is-a-directory",
        (*RUN, "--cassette", "c.jsonl", "--junit", "out"),
        ("--junit", "out", "is a directory"),
        {"proj/batch.yaml": BATCH, "proj/c.jsonl": CASSETTE},
        mkdir=("out",),
    ),
    Case(
        "junit-in-proc",
        (*RUN, "--cassette", "c.jsonl", "--junit", "/proc/report.xml"),
        ("--junit", "/proc/report.xml", "cannot be written"),
        {"proj/batch.yaml": BATCH, "proj/c.jsonl": CASSETTE},
    ),
    Case(
        "cassette-missing",
        (*RUN, "--cassette", "nope.jsonl"),
        ("--cassette", "nope.jsonl", "does not exist"),
        {"proj/batch.yaml": BATCH},
    ),
    Case(
        "cassette-binary",
        (*RUN, "--cassette", "c.jsonl"),
        ("c.jsonl", "not a cassette"),
        {"proj/batch.yaml": BATCH, "proj/c.jsonl": b"\x89PNG\r\n\x1a\n\x00\xff\xfe"},
    ),
    Case(
        "cassette-not-json",
        (*RUN, "--cassette", "c.jsonl"),
        ("c.jsonl:1",),
        {"proj/batch.yaml": BATCH, "proj/c.jsonl": "this is not json\n"},
    ),
    Case(
        "cassette-wrong-shape",
        (*RUN, "--cassette", "c.jsonl"),
        ("c.jsonl:2",),
        {"proj/batch.yaml": BATCH, "proj/c.jsonl": CASSETTE + '{"content": 5}\n'},
    ),
    Case(
        "cassette-dir-with-a-bad-one",
        (*RUN, "--cassette", "tapes"),
        ("a.jsonl", "not a cassette"),
        {"proj/batch.yaml": BATCH, "proj/tapes/a.jsonl": b"\xff\xfe\x00"},
    ),
    # -- models.yaml ------------------------------------------------------------------------
    Case("models-none-configured", RUN, ("models.yaml",), {"proj/batch.yaml": BATCH}),
    _models("models-invalid-yaml", "providers: [\n", "not valid YAML"),
    _models("models-a-list", "- a\n- b\n", "mapping"),
    _models("models-binary", b"\x00\xff\xfe\x89PNG", "file", "UTF-8"),
    _models("models-deep-nesting", DEEP, "file", "nested too deep", "64 levels", BEFORE),
    _models("models-deep-block", DEEP_BLOCK, "file", "nested too deep", "64 levels", BEFORE),
    _models("models-unknown-field", MODELS + "colour: red\n", "colour"),
    # YAML's .inf and .nan are floats no JSON holds: a timeout that never ends, a price that
    # every budget comparison passes (IMPL-NUM-1)
    _models(
        "models-timeout-infinite",
        MODELS.replace("    models:\n", "    read_timeout_s: .inf\n    models:\n"),
        "providers.local.read_timeout_s",
        "finite",
    ),
    _models(
        "models-price-nan",
        MODELS.replace(
            "max_output_tokens: 4096}", "max_output_tokens: 4096, price: {input: .nan}}"
        ),
        "price.input",
        "finite",
    ),
    _models(
        "models-price-negative",
        MODELS.replace("max_output_tokens: 4096}", "max_output_tokens: 4096, price: {input: -3}}"),
        "price.input",
        "greater than or equal to 0",
    ),
    _models(
        "models-window-huge",
        MODELS.replace("context_window: 32768", "context_window: 1" + "0" * 400),
        "context_window",
        "less than or equal to 100000000",
    ),
    _models(
        "models-output-huge",
        MODELS.replace("max_output_tokens: 4096", "max_output_tokens: 1" + "0" * 400),
        "max_output_tokens",
        "less than or equal to 100000000",
    ),
    _models("models-default-unknown", MODELS.replace("local/m", "local/zzz"), "default", "zzz"),
    _models(
        "models-bad-kind", MODELS.replace("openai_compatible", "telepathy"), "providers.local.kind"
    ),
    # the --provider value and models.yaml, from the selector or (when it names neither) the CLI
    Case(
        "models-unknown-provider-flag",
        (*RUN, "--provider", "nosuch"),
        ("nosuch", "models.yaml"),
        {HOME_MODELS: MODELS, "proj/batch.yaml": BATCH},
    ),
    Case(
        "models-unknown-model-flag",
        (*RUN, "--provider", "local/nosuch"),
        ("local/nosuch", "models.yaml"),
        {HOME_MODELS: MODELS, "proj/batch.yaml": BATCH},
    ),
    _models(
        "provider-list-bad-models", "providers: [\n", "not valid YAML", args=("provider", "list")
    ),
    _models("provider-current-bad-models", "- a\n", "mapping", args=("provider", "current")),
    _models("provider-list-binary-models", b"\xff\xfe\x00", "UTF-8", args=("provider", "list")),
    _models("provider-current-deep-models", DEEP, "nested", args=("provider", "current")),
    Case(
        "models-a-directory",
        RUN,
        ("models.yaml",),
        {"proj/batch.yaml": BATCH},
        mkdir=(HOME_MODELS,),
    ),
    Case(
        "models-project-file-bad",
        RUN,
        (".air/shared/models.yaml", "not valid YAML"),
        {"proj/batch.yaml": BATCH, "proj/.air/shared/models.yaml": "default: [\n"},
    ),
    # -- permissions.yaml -------------------------------------------------------------------
    _perms("perms-invalid-yaml", "rules: [\n", "not valid YAML"),
    _perms("perms-a-list", "- a\n", "top level must be a mapping"),
    _perms("perms-unknown-top-key", "rulez: []\n", "unknown top-level keys", "rulez"),
    _perms("perms-rules-not-list", "rules: 5\n", "`rules` must be a list"),
    _perms("perms-rule-not-mapping", "rules: [allow]\n", "rule 0 is not a mapping"),
    _perms("perms-rule-unknown-key", "rules: [{action: allow, tol: x}]\n", "rule 0", "tol"),
    _perms("perms-rule-bad-action", "rules: [{action: maybe, tool: x}]\n", "rule 0", "maybe"),
    _perms(
        "perms-rule-bad-category", "rules: [{action: deny, category: dance}]\n", "rule 0", "dance"
    ),
    _perms("perms-rule-names-nothing", "rules: [{action: deny}]\n", "rule 0", "names no tool"),
    _perms("perms-binary", b"\x00\xff\xfe\x89PNG", "UTF-8"),
    _perms(
        "perms-deep-nesting",
        "rules: " + "[" * 5000 + "]" * 5000 + "\n",
        "nested too deep",
        "64 levels",
        BEFORE,
    ),
    _perms("perms-project-file", "rules: 5\n", "`rules` must be a list", path=PROJ_PERMS),
    Case(
        "perms-a-directory",
        RUN,
        ("permissions.yaml", "cannot be read"),
        {"proj/batch.yaml": BATCH, HOME_MODELS: MODELS},
        mkdir=(HOME_PERMS,),
    ),
]


def _env(home: Path, no_git: bool, empty_bin: Path) -> dict[str, str]:
    keep = {"PATH", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT", "PYTHONPATH"}
    env = {k: v for k, v in os.environ.items() if k in keep}
    env["HOME"] = str(home)
    if no_git:
        env["PATH"] = str(empty_bin)
    return env


def _sessions(proj: Path) -> set[str]:
    root = proj / ".air" / "local" / "sessions"
    return {p.name for p in root.iterdir()} if root.is_dir() else set()


@dataclass
class Outcome:
    proc: subprocess.CompletedProcess[str]
    sessions_before: set[str]
    sessions_after: set[str]
    base: Path


class Runner(Protocol):
    def __call__(
        self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout: float
    ) -> subprocess.CompletedProcess[str]: ...


def _run_case(case: Case, base: Path, run: Runner) -> Outcome:
    root = base / case.name
    home, proj, empty_bin = root / "home", root / "proj", root / "empty-bin"
    for directory in (home, proj, empty_bin):
        directory.mkdir(parents=True)
    # air's own state is written once `air init` made .air/local (a state it did not make
    # there is another's, refused: air.session.local_owner)
    local = {rel: data for rel, data in case.files.items() if rel.startswith("proj/.air/local/")}
    write_files(root, {rel: data for rel, data in case.files.items() if rel not in local})
    for rel in case.mkdir:
        (root / rel if rel.startswith(("home/", "proj/")) else proj / rel).mkdir(parents=True)
    if case.fifo:
        os.mkfifo(proj / case.fifo)
    if case.sparse:
        with open(proj / case.sparse[0], "wb") as handle:
            handle.truncate(case.sparse[1])
    if case.repeated:
        name, line, size = case.repeated
        with open(proj / name, "w", encoding="utf-8") as handle:
            handle.write("tasks:\n" + line * (size // len(line) + 1))
    env = _env(home, case.no_git, empty_bin)
    if case.init:
        done = run(["init"], cwd=proj, env=env, timeout=60)
        assert done.returncode == 0, done.stderr
    write_files(root, local)
    before = _sessions(proj)
    proc = run(case.args, cwd=proj, env=env, timeout=60)  # a hang (-9) fails this case only
    return Outcome(proc, before, _sessions(proj), base)


def _subprocess(
    argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """``python -m air.cli ARGV`` as a new interpreter (what the user starts)."""
    command = [sys.executable, "-m", "air.cli", *argv]
    try:
        return subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as exc:
        return subprocess.CompletedProcess(command, -9, "", f"timed out: {exc.stderr!r}")


class _Outcomes:
    """Each case's outcome, run when a test first asks for it (so a pytest-xdist worker runs
    only the cases of its own tests), as a process forked from one warm air
    (tests/forked_air.py)."""

    def __init__(self, base: Path, run: Runner) -> None:
        self._base, self._run = base, run
        self._done: dict[str, Outcome] = {}

    def __getitem__(self, name: str) -> Outcome:
        if name not in self._done:
            case = next(c for c in CASES if c.name == name)
            self._done[name] = _run_case(case, self._base, self._run)
        return self._done[name]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> _Outcomes:
    base = tmp_path_factory.mktemp("bad-inputs")
    return _Outcomes(base, shared().run)


PARITY = (
    "unknown-command",
    "no-git",
    "cassette-not-json",
    "perms-rule-unknown-key",
    "batch-50-mib",
)
"""Cases run both ways by the parity test: argparse, PATH, a cassette, a policy, a size limit."""


@pytest.mark.parametrize("name", PARITY)
def test_a_forked_air_answers_as_the_air_command_does(
    name: str, outcomes: _Outcomes, tmp_path: Path
) -> None:
    """The table's forked processes stand for the real command: the same case run as
    ``python -m air.cli`` gives the same exit code, stdout and stderr (paths aside)."""
    case = next(c for c in CASES if c.name == name)
    real = _run_case(case, tmp_path, _subprocess)
    forked = outcomes[name]
    assert real.proc.returncode == forked.proc.returncode
    for got, want in (
        (real.proc.stdout, forked.proc.stdout),
        (real.proc.stderr, forked.proc.stderr),
    ):
        assert got.replace(str(real.base), "BASE") == want.replace(str(forked.base), "BASE")
    assert real.sessions_after == real.sessions_before


def test_the_table_is_large_enough() -> None:
    assert len(CASES) >= 68
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_exits_2_and_says_why(case: Case, outcomes: _Outcomes) -> None:
    outcome = outcomes[case.name]
    err = outcome.proc.stderr
    assert "Traceback" not in err, err
    assert outcome.proc.returncode == 2, err
    for needle in case.expect:
        assert needle in err, f"{needle!r} not in: {err}"
    assert "what to do:" in err, err
    assert outcome.sessions_after == outcome.sessions_before, "a bad input created a session"
