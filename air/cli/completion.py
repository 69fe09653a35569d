"""``air completion SHELL``: a completion script for bash, zsh or fish, made from the usage texts.

Owns: the three scripts. Every word they offer comes from ``air.cli.usage`` (the commands,
their summaries and each command's options, the console's options), so a new command or
option completes without touching this module. Sourcing a script defines completions only;
it runs nothing of air's.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from air.cli.usage import COMMANDS, CONSOLE_USAGE

__all__ = ["SHELLS", "completion_script", "run_completion"]

SHELLS = ("bash", "zsh", "fish")


def _options(usage: str) -> list[str]:
    """The long options a usage text's usage lines and Options section name, in order."""
    section = usage.split("Usage:\n", 1)[1] if "Usage:\n" in usage else usage
    found = re.findall(r"(?<![\w-])(--[a-z][\w-]*)", section)
    return [o for o in dict.fromkeys(found) if o != "--help"]


def _table() -> dict[str, list[str]]:
    table = {name: _options(usage) for name, (_summary, usage) in COMMANDS.items()}
    table[""] = [*_options(CONSOLE_USAGE), "--version", "--help", "-p"]
    return table


def _word(text: str) -> str:
    """A summary as one shell-safe single-quoted word's content."""
    return text.replace("'", "").replace(":", " -")


def _bash() -> str:
    table = _table()
    cases = "".join(
        f"    {name}) opts='{' '.join(opts)}' ;;\n" for name, opts in table.items() if name
    )
    return f"""# bash completion for air (air completion bash)
_air() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} opts
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W '{" ".join(COMMANDS)} {" ".join(table[""])}' -- "$cur"))
    return
  fi
  case ${{COMP_WORDS[1]}} in
{cases}    *) opts='{" ".join(table[""])}' ;;
  esac
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}}
complete -o default -F _air air
"""


def _zsh() -> str:
    table = _table()
    described = " ".join(f"'{name}:{_word(summary)}'" for name, (summary, _u) in COMMANDS.items())
    cases = "".join(
        f"    {name}) compadd -- {' '.join(opts)} ;;\n" for name, opts in table.items() if name
    )
    return f"""#compdef air
# zsh completion for air (air completion zsh)
_air() {{
  local -a commands
  commands=({described})
  if (( CURRENT == 2 )); then
    _describe 'command' commands
    compadd -- {" ".join(table[""])}
    return
  fi
  case $words[2] in
{cases}  esac
  _files
}}
compdef _air air
"""


def _fish() -> str:
    lines = ["# fish completion for air (air completion fish)", "complete -c air -f"]
    for name, (summary, _usage) in COMMANDS.items():
        lines.append(f"complete -c air -n __fish_use_subcommand -a {name} -d '{_word(summary)}'")
    for name, opts in _table().items():
        when = "__fish_use_subcommand" if not name else f"'__fish_seen_subcommand_from {name}'"
        lines += [f"complete -c air -n {when} -l {o[2:]}" for o in opts if o.startswith("--")]
    lines.append("complete -c air -n 'not __fish_use_subcommand' -F")
    return "\n".join(lines) + "\n"


def completion_script(shell: str) -> str:
    """The script for ``shell`` (one of ``SHELLS``)."""
    return {"bash": _bash, "zsh": _zsh, "fish": _fish}[shell]()


def run_completion(args: dict[str, Any]) -> int:
    from air.contracts.error import AirException, CliExit

    shell = str(args["SHELL"])
    if shell not in SHELLS:
        raise AirException.of(
            kind="validation_error",
            message=f"no completion for the shell {shell!r}",
            user_action=f"Pick one of {', '.join(SHELLS)}: e.g. `air completion bash`.",
        )
    sys.stdout.write(completion_script(shell))
    return CliExit.OK
