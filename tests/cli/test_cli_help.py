"""Every command has its own ``--help``; a bad command or option is one readable line plus the
command's usage and exit 2; ``python -m air`` is the ``air`` command (issue #15 item 6)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from air.cli import main
from air.cli.usage import COMMANDS, USAGE


def _listed_commands() -> list[str]:
    section = USAGE.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in section.splitlines() if line.startswith("  ")]


def test_help_lists_the_commands() -> None:
    names = _listed_commands()
    assert {"run", "resume", "init", "demo", "history", "session", "provider"} <= set(names)
    assert {"restore", "e2e", "release", "report"} <= set(names)


@pytest.mark.parametrize("name", _listed_commands())
def test_every_listed_command_has_its_own_help(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([name, "--help"]) == 0
    out = capsys.readouterr().out
    assert "Usage:" in out
    assert f"air {name}" in out
    lines = _usage_lines(out)
    assert lines
    assert all(re.match(rf"  air {name}\b", line) for line in lines), lines
    assert main([name, "-h"]) == 0
    assert capsys.readouterr().out == out


CASES = [
    (["frobnicate"], "air: unknown command 'frobnicate'"),
    (["--frob"], "air: unknown option '--frob'"),
    (["run", "--frob"], "air run: unknown option --frob"),
    (["run", "a", "b"], "air run: "),
    (["run", "--headless"], "air run: a required argument is missing"),
    (["run", "--headless", "b.yaml", "--bogus"], "air run: unknown option --bogus"),
    (["run", "--headless", "b.yaml", "--fake-script=x"], "air run: unknown option --fake-script"),
    (["run", "--headless", "b.yaml", "--project"], "air run: --project needs a value"),
    (["history", "--frob"], "air history: unknown option --frob"),
    (["history", "--last", "3", "--all"], "air history: --last and --all exclude each other"),
    (["provider", "frob"], "air provider: these arguments fit none of its usage lines: frob"),
    (["trust", "--yes", "--revoke"], "air trust: --revoke and --yes exclude each other"),
    (["trust", "--revoke", ".", "--yes"], "air trust: --revoke and --yes exclude each other"),
    (["session"], "air session: a required argument is missing"),
    (["report"], "air report: a required argument is missing"),
    (["report", "--html"], "air report: --html needs a value"),
    (["restore", "--list", "x"], "air restore: these arguments fit none"),
    (["e2e", "--frob"], "air e2e: unknown option --frob"),
    (["release", "extra"], "air release: these arguments fit none"),
]


@pytest.mark.parametrize(("argv", "line"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_a_bad_line_is_one_readable_line_and_the_usage(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    first, second, *_rest = captured.err.splitlines()
    assert first.startswith(line), captured.err
    assert second == "Usage:"
    assert "Option(" not in captured.err
    assert "Argument(" not in captured.err
    assert "Warning" not in captured.err
    if argv[0] in _listed_commands():
        # the command's own usage, not every command's
        assert all(u.startswith(f"  air {argv[0]}") for u in _usage_lines(captured.err))


def _usage_lines(text: str) -> list[str]:
    return [line for line in text.split("Usage:\n", 1)[1].splitlines() if line.startswith("  air")]


def test_python_dash_m_air_is_the_air_command() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "air", "run", "--help"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert "air run --headless BATCH" in proc.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "air", "frobnicate"], capture_output=True, text=True, timeout=60
    )
    assert bad.returncode == 2
    assert bad.stderr.splitlines()[0] == "air: unknown command 'frobnicate' (see `air --help`)"


def _options_listed(doc: str) -> list[set[str]]:
    """The options a usage text's ``Options:`` section defines (its left column), each as its
    spellings (``-m NAME --model NAME``: ``{"-m", "--model"}``)."""
    section = doc.split("Options:", 1)[1]
    heads = [re.split(r"\s{2,}", line.strip(), maxsplit=1)[0] for line in section.splitlines()]
    return [set(re.findall(r"--?[\w-]+", head)) for head in heads if head.startswith("-")]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_a_help_lists_is_one_its_usage_takes(name: str) -> None:
    doc = COMMANDS[name][1]
    if "Options:" not in doc:
        return
    usage = doc.split("Usage:", 1)[1].split("Options:", 1)[0]
    taken = set(re.findall(r"(?<![\w-])--?[\w-]+", usage))
    refused = [sorted(names) for names in _options_listed(doc) if not names & taken]
    assert refused == [], f"air {name} --help lists options its usage refuses"
