"""``air completion SHELL``, ``air help COMMAND`` and "did you mean" (issue 26 item 7): each
script is loaded by the real shell (bash, zsh, fish) and asked to complete."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

AIR = [sys.executable, "-m", "air.cli"]


def _air(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*AIR, *args], capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def scripts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    where = tmp_path_factory.mktemp("completion")
    out = {}
    for shell in ("bash", "zsh", "fish"):
        done = _air("completion", shell)
        assert done.returncode == 0, done.stderr
        out[shell] = where / f"air.{shell}"
        out[shell].write_text(done.stdout)
    return out


def _bash(script: Path, *words: str) -> list[str]:
    line = " ".join(words)
    cword = len(words) - 1
    code = (
        f"source {script}; COMP_WORDS=({line}); COMP_CWORD={cword}; _air; "
        'printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = subprocess.run(["bash", "-c", code], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_bash_completes_commands_and_each_command_s_options(scripts: dict[str, Path]) -> None:
    assert _bash(scripts["bash"], "air", "hi") == ["history"]
    assert "--headless" in _bash(scripts["bash"], "air", "run", "--he")
    assert "--prompt" in _bash(scripts["bash"], "air", "run", "--pr")
    assert _bash(scripts["bash"], "air", "doctor", "--fi") == ["--fix"]


def test_fish_completes_commands_with_their_summaries(scripts: dict[str, Path]) -> None:
    code = f"source {scripts['fish']}; complete -C 'air hi'; complete -C 'air run --hea'"
    done = subprocess.run(["fish", "-c", code], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("history\t") for line in lines), lines
    assert "--headless" in lines


def test_zsh_loads_the_script_and_registers_it(scripts: dict[str, Path]) -> None:
    code = (
        "autoload -U compinit; compinit -u -D; "
        f"source {scripts['zsh']}; print -r -- ${{_comps[air]}}"
    )
    done = subprocess.run(["zsh", "-f", "-c", code], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "_air"
    assert subprocess.run(["zsh", "-n", str(scripts["zsh"])], timeout=30).returncode == 0


def test_an_unknown_shell_is_refused_with_exit_2() -> None:
    done = _air("completion", "tcsh")
    assert done.returncode == 2
    assert "no completion for the shell 'tcsh'" in done.stderr
    assert "Traceback" not in done.stderr


def test_air_help_command_is_its_help_and_a_typo_gets_a_suggestion() -> None:
    assert _air("help", "run").stdout == _air("run", "--help").stdout
    assert _air("help").stdout == _air("--help").stdout
    typo = _air("histroy")
    assert typo.returncode == 2
    assert "did you mean `air history`?" in typo.stderr
    unknown = _air("help", "nosuch")
    assert unknown.returncode == 2
    assert "unknown command 'nosuch'" in unknown.stderr
