"""The handlers of programs that run another command: wrappers, shells and runners.

Owns ``HANDLERS`` for ``sudo``/``doas``/``pkexec``, ``su``, ``env`` (its options, assignments
and ``-S``), the simple wrappers (``nice``, ``timeout``, ``nohup``, ``flock``...), ``xargs`` and
``parallel``, the shells (``sh -c``...), the multi-call binaries (``busybox X``: classified as
X), ``kill``, the runners that take a command (``valgrind``, ``ccache``, ``xvfb-run``,
``strace``, ``torsocks``, ``runuser``, ``prlimit``...) and the programs that run a shell string
(``watch``, ``script``, ``hyperfine``). Each classifies the wrapped command through the
analyzer and adds its own floor. Pure: no I/O.
"""

from __future__ import annotations

from air.contracts.permission import CommandCategory
from air.security.command_env import env_risk
from air.security.command_tables import MULTICALL, SHELLS, table_category
from air.security.command_targets import outside_looking
from air.security.command_words import (
    DYNAMIC,
    MAX_DEPTH,
    Analyzer,
    HandlerFn,
    Segment,
    new_segment,
    option_values,
    skip_options,
)
from air.security.options import (
    option_spec,
)

__all__ = [
    "HANDLERS",
    "h_env",
]

C = CommandCategory


def _h_sudo(a: Analyzer, text: str, prog: str, args: list[str | None], depth: int) -> list[Segment]:
    rest = list(args)
    while rest and rest[0] is not None and rest[0].startswith("-"):
        opt = rest.pop(0)
        if opt in ("-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U") and rest:
            rest.pop(0)
    return a.wrapped_command(
        text, rest, depth, C.PRIVILEGED, prog, f"{prog} runs with elevated privileges"
    )


def _h_su(a: Analyzer, text: str, prog: str, args: list[str | None], depth: int) -> list[Segment]:
    return [new_segment(text, prog, C.PRIVILEGED, "switches user")]


_ENV_SPEC = option_spec(
    "CSu",
    ("--chdir", "--split-string", "--unset"),
    (
        "--ignore-environment",
        "--null",
        "--debug",
        "--default-signal",
        "--ignore-signal",
        "--block-signal",
        "--list-signal-handling",
        "--help",
        "--version",
    ),
)


def _env_options(head: str, rest: list[str | None]) -> list[tuple[str, str | None]]:
    """The options of one ``env`` argument (consuming a separate value from ``rest``)."""
    if head.startswith("--"):
        typed, eq, value = head.partition("=")
        name = _ENV_SPEC.prefixes.get(typed, typed)
        if name in _ENV_SPEC.long_valued and not eq:
            return [(name, rest.pop(0) if rest else "")]
        return [(name, value)]
    found: list[tuple[str, str | None]] = []
    for j in range(1, len(head)):
        if head[j] in _ENV_SPEC.short_valued:
            found.append(("-" + head[j], head[j + 1 :] or (rest.pop(0) if rest else "")))
            break
        found.append(("-" + head[j], ""))
    return found


def h_env(a: Analyzer, text: str, prog: str, args: list[str | None], depth: int) -> list[Segment]:
    """``env [OPTION]... [NAME=VALUE]... [COMMAND]``: the command is classified; ``-S STRING``
    is split as env splits it and read again (a string with ``$`` or ``\\`` is opaque)."""
    if depth > MAX_DEPTH:
        return [new_segment(text, prog, C.OPAQUE, "wrapped commands nested too deep")]
    rest = list(args)
    out: list[Segment] = []
    bases: list[str] = []
    assigned = False
    while rest:
        head = rest[0]
        if head is None:
            return [new_segment(text, prog, C.OPAQUE, "env with a dynamic argument")]
        if head.startswith("-") and head != "-" and not assigned:  # options end at NAME=VALUE
            rest.pop(0)
            if head == "--":
                continue
            for name, value in _env_options(head, rest):
                if name in ("-S", "--split-string"):
                    if value is None or "$" in value or "\\" in value:
                        return [new_segment(text, prog, C.OPAQUE, "env -S splits a dynamic string")]
                    import shlex  # only here: env -S is rare

                    try:
                        words: list[str | None] = list(shlex.split(value))
                    except ValueError:
                        return [new_segment(text, prog, C.OPAQUE, "env -S string does not split")]
                    segs = h_env(a, text, prog, [*words, *rest], depth + 1)
                    segs[0].bases.extend(bases)
                    return segs
                if name in ("-C", "--chdir"):
                    bases.append(value if value is not None else DYNAMIC)
            continue
        if head == "-":
            rest.pop(0)
            continue
        if "=" in head:
            assigned = True
            name, value = head.split("=", 1)
            risk = env_risk(name, value)
            if risk:
                out.append(new_segment(text, prog, C.OPAQUE, risk))
            rest.pop(0)
            continue
        break
    if not rest:
        return [*out, new_segment(text, prog, C.READ_ONLY, "prints the environment")]
    segs = [*out, *a.wrapped_command(text, rest, depth, C.READ_ONLY, prog, "env wrapper")]
    segs[0].bases.extend(bases)
    return segs


def _h_simple_wrapper(
    a: Analyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[Segment]:
    valued = {
        "nice": ("-n", "--adjustment"),
        "timeout": ("-s", "--signal", "-k", "--kill-after"),
        "stdbuf": ("-i", "-o", "-e"),
        "ionice": ("-c", "-n", "-p"),
        "time": ("-f", "--format", "-o", "--output"),
        "flock": ("-w", "-E"),
    }.get(prog, ())  # the other wrappers' options take no value
    rest = skip_options(args, valued)
    if prog == "command" and args and args[0] in ("-v", "-V"):
        return [new_segment(text, prog, C.READ_ONLY, "looks a command up")]
    if prog == "timeout" and rest:
        rest = rest[1:]
    if prog == "taskset" and rest:
        rest = rest[1:]
    if prog == "flock" and rest:
        rest = rest[1:]
        if rest and rest[0] in ("-c",):
            return a.shell_script(text, prog, rest[1] if len(rest) > 1 else None, depth)
    floor = C.PROCESS_CONTROL if prog in ("nohup", "setsid", "firejail") else C.READ_ONLY
    if not rest:
        return [
            new_segment(
                text, prog, floor if prog != "time" else C.READ_ONLY, f"{prog} without a command"
            )
        ]
    segs = a.wrapped_command(text, rest, depth, floor, prog, f"{prog} wrapper")
    if prog == "time":  # GNU time writes its figures to -o FILE
        segs[0].write_targets.extend(
            option_values(args[: len(args) - len(rest)], ("-o", "--output"))
        )
    return segs


def _h_xargs(
    a: Analyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[Segment]:
    valued = {
        "-n",
        "-I",
        "-P",
        "-d",
        "-L",
        "-a",
        "-E",
        "-s",
        "--max-args",
        "--max-procs",
        "--delimiter",
        "--arg-file",
    }
    rest = list(args)
    while rest and rest[0] is not None and rest[0].startswith("-"):
        opt = rest.pop(0)
        if opt in valued and rest:
            rest.pop(0)
    if not rest:
        return [new_segment(text, prog, C.READ_ONLY, "xargs echo")]
    return a.wrapped_command(text, rest, depth, C.READ_ONLY, prog, "xargs runs a command per input")


def _h_shell(
    a: Analyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[Segment]:
    rest = list(args)
    while rest:
        opt = rest[0]
        if opt is None:
            return [new_segment(text, prog, C.OPAQUE, f"{prog} with a dynamic argument")]
        if opt == "--":
            rest.pop(0)
            break
        if opt.startswith("-") and opt != "-":
            rest.pop(0)
            if opt.startswith("--"):
                if opt in ("--login", "--noprofile", "--norc", "--posix", "--noediting"):
                    continue
                return [new_segment(text, prog, C.OPAQUE, f"{prog} {opt}")]
            if "c" in opt:  # a cluster of short options: `-ec`, `-xc`
                return a.shell_script(text, prog, rest[0] if rest else None, depth)
            if "s" in opt or "i" in opt:
                return [new_segment(text, prog, C.OPAQUE, f"{prog} reads commands from stdin")]
            if "o" in opt and rest:
                rest.pop(0)
            continue
        break
    if not rest or rest[0] == "-":
        return [new_segment(text, prog, C.OPAQUE, f"{prog} reads commands from stdin")]
    script = rest[0]
    if script is None or outside_looking(script):
        return [new_segment(text, prog, C.OPAQUE, f"{prog} runs a script outside the workspace")]
    return [new_segment(text, prog, C.BUILD_TEST, f"{prog} runs the workspace script {script}")]


def _h_multicall(
    a: Analyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[Segment]:
    """``busybox X ...`` / ``toybox X ...`` run the applet X: classify as X."""
    if not args:
        return [new_segment(text, prog, C.READ_ONLY, f"{prog} lists its applets")]
    applet = args[0]
    if applet is None:
        return [new_segment(text, prog, C.OPAQUE, f"{prog} runs a dynamic applet")]
    if applet.startswith("-"):
        if applet in ("--list", "--list-full", "--help", "--version"):
            return [new_segment(text, prog, C.READ_ONLY, f"{prog} {applet}")]
        return [new_segment(text, prog, C.OPAQUE, f"{prog} {applet}")]
    known = (
        a.handles(applet)
        or table_category(applet) is not None
        or applet.startswith(("mkfs", "fsck."))
    )
    if "/" in applet or not known:
        return [new_segment(text, prog, C.OPAQUE, f"{prog} applet {applet!r} is not known")]
    return a.classify_argv(text, args, depth + 1)


def _h_background(
    a: Analyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[Segment]:
    return [new_segment(text, prog, C.PROCESS_CONTROL, f"{prog} controls processes")]


# Programs that run their operand as a command: (floor, options taking a value, operands
# skipped before the command).
_RUNNERS: dict[str, tuple[CommandCategory, tuple[str, ...], int]] = {
    "valgrind": (C.BUILD_TEST, ("--log-file", "--tool", "--suppressions"), 0),
    "ccache": (C.BUILD_TEST, (), 0),
    "sccache": (C.BUILD_TEST, (), 0),
    "distcc": (C.BUILD_TEST, (), 0),
    "catchsegv": (C.BUILD_TEST, (), 0),
    "xvfb-run": (C.BUILD_TEST, ("-n", "--server-num", "-s", "--server-args", "-f", "-e"), 0),
    "dbus-run-session": (C.BUILD_TEST, ("--config-file",), 0),
    "faketime": (C.BUILD_TEST, ("-m", "-f"), 1),
    "libtool": (C.BUILD_TEST, ("--mode", "--tag"), 0),
    "perf": (C.BUILD_TEST, ("-o", "--output", "-e", "--event", "-p", "-F", "-c", "-r"), 1),
    "strace": (C.PROCESS_CONTROL, ("-o", "-e", "-p", "-s", "-u", "-P", "-a", "-b", "-E"), 0),
    "ltrace": (C.PROCESS_CONTROL, ("-o", "-e", "-p", "-s", "-u", "-a", "-n"), 0),
    "torsocks": (C.NETWORK, ("-u", "-p", "-a", "-P"), 0),
    "proxychains": (C.NETWORK, ("-f",), 0),
    "proxychains4": (C.NETWORK, ("-f",), 0),
    "tsocks": (C.NETWORK, (), 0),
    "sg": (C.PRIVILEGED, (), 1),
    "runuser": (C.PRIVILEGED, ("-u", "-g", "-G"), 0),
    "setpriv": (C.PRIVILEGED, ("--reuid", "--regid", "--groups", "--inh-caps"), 0),
    "prlimit": (C.PROCESS_CONTROL, ("-p", "--pid"), 0),
}


def _h_runner(
    a: Analyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[Segment]:
    floor, valued, skip = _RUNNERS[prog]
    rest = skip_options(list(args), valued)
    if prog == "perf" and rest and rest[0] not in ("stat", "record", "trace", "top"):
        return [new_segment(text, prog, floor, f"perf {rest[0]}")]
    if prog in ("sg",) and rest and rest[0] is not None and len(rest) > 1:
        return a.shell_script(text, prog, rest[1], depth)
    rest = rest[skip:]
    if prog == "perf":
        rest = skip_options(rest, valued)
    outputs = option_values(args, ("-o", "--output", "--log-file", "--xml-file"))
    segs = a.wrapped_command(text, rest, depth, floor, prog, f"{prog} runs a command")
    segs[0].write_targets.extend(outputs)
    return segs


# Per program: options whose value is a shell command, options taking other values (how
# many), and options naming a file it writes.
_SHELL_STRINGS: dict[str, tuple[tuple[str, ...], dict[str, int], tuple[str, ...]]] = {
    "hyperfine": (
        ("-p", "--prepare", "-c", "--cleanup", "-s", "--setup", "-S", "--shell", "--conclude"),
        {
            **dict.fromkeys(("-w", "--warmup", "-r", "--runs", "-m", "--min-runs"), 1),
            **dict.fromkeys(("-M", "--max-runs", "-n", "--command-name", "-u", "--time-unit"), 1),
            **dict.fromkeys(("--style", "--sort", "--input", "-D", "--parameter-step-size"), 1),
            **dict.fromkeys(("-L", "--parameter-list"), 2),
            **dict.fromkeys(("-P", "--parameter-scan"), 3),
        },
        ("--export-json", "--export-markdown", "--export-csv", "--export-asciidoc", "--output"),
    ),
    "script": (
        ("-c", "--command"),
        dict.fromkeys(("-E", "--echo", "-m", "--logging-format"), 1),
        ("-I", "--log-in", "-O", "--log-out", "-B", "--log-io", "-T", "--log-timing"),
    ),
    # `-d[=permanent]` and `-t` take no separate value
    "watch": ((), dict.fromkeys(("-n", "--interval", "-q", "--equexit"), 1), ()),
}


def _h_shell_strings(
    a: Analyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[Segment]:
    """``hyperfine 'cmd'...``, ``script -c cmd``, ``watch cmd``: operands are shell commands."""
    command_options, valued, outputs = _SHELL_STRINGS[prog]
    if prog == "watch":
        first = new_segment(text, prog, C.PROCESS_CONTROL, "watch runs a command repeatedly")
    else:
        first = new_segment(text, prog, C.BUILD_TEST, f"{prog} runs commands")
    commands: list[str | None] = []  # option values, e.g. `-c cmd`
    operands: list[str | None] = []
    ordered: list[str | None] = []  # both, in the order they appear
    i = 0
    while i < len(args):
        x = args[i]
        if x in command_options:
            commands.extend(args[i + 1 : i + 2])
            ordered.extend(args[i + 1 : i + 2])
            i += 2
            continue
        if x is not None and (x in valued or x in outputs):
            i += 1 + valued.get(x, 1)
            continue
        if x is None or not x.startswith("-"):
            operands.append(x)
            ordered.append(x)
        i += 1
    # hyperfine's exports (`--output=null|pipe|inherit` are not files), script's logs
    logs = [v for v in option_values(args, outputs) if v not in ("null", "pipe", "inherit")]
    first.write_targets.extend(logs)
    scripts = ordered
    if prog == "script":
        if not commands:
            return [new_segment(text, prog, C.OPAQUE, "script records an interactive shell")]
        scripts = commands
        if operands:  # the typescript file
            first.write_targets.append(operands[0] if operands[0] is not None else DYNAMIC)
        elif not logs:
            first.write_targets.append("typescript")
    if prog == "watch" and ordered:
        parts = [x for x in ordered if x is not None]
        scripts = [" ".join(parts)] if len(parts) == len(ordered) else [None]
    out = [first]
    for script in scripts:
        out.extend(a.shell_script(text, prog, script, depth))
    return out


HANDLERS: dict[str, HandlerFn] = {
    "sudo": _h_sudo,
    "doas": _h_sudo,
    "pkexec": _h_sudo,
    "su": _h_su,
    "env": h_env,
    **dict.fromkeys(
        (
            "nice",
            "timeout",
            "stdbuf",
            "ionice",
            "taskset",
            "time",
            "command",
            "builtin",
            "nohup",
            "setsid",
            "unbuffer",
            "flock",
            "firejail",
        ),
        _h_simple_wrapper,
    ),
    "xargs": _h_xargs,
    "parallel": _h_xargs,
    "kill": _h_background,
    **dict.fromkeys(SHELLS, _h_shell),
    **dict.fromkeys(MULTICALL, _h_multicall),
    **dict.fromkeys(_RUNNERS, _h_runner),
    "hyperfine": _h_shell_strings,
    "script": _h_shell_strings,
    "watch": _h_shell_strings,
}
