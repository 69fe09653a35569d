"""The handlers of the language interpreters: inline code, modules and profilers.

Owns ``HANDLERS`` for the interpreters (``python -c``, ``node -e``, ``perl -e``...; ``python
-m`` of a known module is that module: ``pip``, ``pytest``, a profiler), the Python modules
that run as a known tool or load code, and the profilers that run a script. Pure: no I/O.
"""

from __future__ import annotations

from air.contracts.permission import CommandCategory
from air.security.command_builds import h_pytest
from air.security.command_packages import h_pip
from air.security.command_tables import INTERPRETERS
from air.security.command_targets import add_moved_targets, outside_looking
from air.security.command_words import (
    DYNAMIC,
    MAX_DEPTH,
    Analyzer,
    HandlerFn,
    Segment,
    new_segment,
    positional_args,
)
from air.security.options import Opt, option_spec, scan

__all__ = [
    "HANDLERS",
]

C = CommandCategory


_PY_MODULES = {
    "pytest": C.BUILD_TEST,
    "unittest": C.BUILD_TEST,
    "mypy": C.BUILD_TEST,
    "ruff": C.BUILD_TEST,
    "black": C.BUILD_TEST,
    "isort": C.BUILD_TEST,
    "flake8": C.BUILD_TEST,
    "pylint": C.BUILD_TEST,
    "build": C.BUILD_TEST,
    "compileall": C.BUILD_TEST,
    "doctest": C.BUILD_TEST,
    "coverage": C.BUILD_TEST,
    "json.tool": C.READ_ONLY,
    "pydoc": C.READ_ONLY,
    "timeit": C.BUILD_TEST,
    "cProfile": C.BUILD_TEST,
    "tox": C.BUILD_TEST,
    "nox": C.BUILD_TEST,
    "http.server": C.NETWORK,
    "smtpd": C.NETWORK,
    "venv": C.FILE_MUTATION,
    "pip": C.PACKAGE_INSTALL,
    "ensurepip": C.PACKAGE_INSTALL,
    "site": C.READ_ONLY,
    "py_compile": C.BUILD_TEST,
    "hypothesis": C.BUILD_TEST,
    "sphinx": C.BUILD_TEST,
}


_CODE_LOADING = frozenset(
    """-r --require --import --loader --experimental-loader -I -M --preload --env-file
    --experimental-config-file""".split()
)


def _h_interpreter(
    a: Analyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[Segment]:
    base = prog.rstrip("0123456789.")
    code_flags = INTERPRETERS.get(prog, INTERPRETERS.get(base, ()))
    rest = list(args)
    while rest:
        opt = rest[0]
        if opt is None:
            return [new_segment(text, prog, C.OPAQUE, f"{prog} with a dynamic argument")]
        if opt in code_flags or (
            opt.startswith("-")
            and not opt.startswith("--")
            and any(opt.endswith(f.lstrip("-")) for f in code_flags if len(f) == 2)
        ):
            return [
                new_segment(
                    text, prog, C.OPAQUE, f"{prog} runs inline code that cannot be analysed"
                )
            ]
        if opt == "-m" and base.startswith(("python", "pypy")):
            module = rest[1] if len(rest) > 1 else None
            if module is None:
                return [new_segment(text, prog, C.OPAQUE, "python -m with a dynamic module")]
            if module == "pip":
                return h_pip(a, text, "pip", rest[2:], depth)
            if module in ("pytest", "py.test"):
                found = h_pytest(a, text, "pytest", rest[2:], depth)
                found[0].program = prog
                if found[0].category == C.BUILD_TEST:
                    found[0].reason = f"python -m {module}"
                add_moved_targets(found[0], "pytest", rest[2:])
                return found
            if module == "timeit" and len(rest) > 2:
                return [
                    new_segment(text, prog, C.OPAQUE, "python -m timeit runs the code it is given")
                ]
            if module in ("cProfile", "profile"):
                return _h_profiler(a, text, prog, rest[2:], depth)
            cat = _PY_MODULES.get(module)
            if cat is None:
                return [
                    new_segment(text, prog, C.OPAQUE, f"python -m {module} is not a known module")
                ]
            seg = new_segment(text, prog, cat, f"python -m {module}")
            module_args = rest[2:]
            if module == "venv":
                seg.write_targets.extend(p or DYNAMIC for p in positional_args(module_args))
            elif module == "json.tool" and len(positional_args(module_args)) >= 2:
                seg.category = C.FILE_MUTATION
                seg.write_targets.append(positional_args(module_args)[1] or DYNAMIC)
            add_moved_targets(seg, module, module_args)
            return [seg]
        if opt in ("-", "-i"):
            return [new_segment(text, prog, C.OPAQUE, f"{prog} reads code from stdin")]
        if opt.startswith("-"):
            rest.pop(0)
            loaded: str | None = ""
            if opt in _CODE_LOADING and rest:
                loaded = rest.pop(0)
            elif opt.startswith("--") and "=" in opt and opt.split("=", 1)[0] in _CODE_LOADING:
                loaded = opt.split("=", 1)[1]
            elif opt[:2] in ("-r", "-I", "-M") and len(opt) > 2 and not opt.startswith("--"):
                loaded = opt[2:]
            elif opt in ("-W", "-X") and rest:
                rest.pop(0)
            if loaded is None or (loaded and outside_looking(loaded)):
                return [new_segment(text, prog, C.OPAQUE, f"{prog} {opt} loads code from outside")]
            continue
        break
    if not rest:
        return [new_segment(text, prog, C.OPAQUE, f"{prog} reads code from stdin")]
    script = rest[0]
    if script is None or script.startswith(("/", "~")) or ".." in script.split("/"):
        return [new_segment(text, prog, C.OPAQUE, f"{prog} runs a script outside the workspace")]
    return [new_segment(text, prog, C.BUILD_TEST, f"{prog} runs the workspace script {script}")]


_PROFILER = option_spec("os", ("--outfile", "--sort"))
"""cProfile's and profile's own options: ``-o/--outfile FILE`` (written), ``-s/--sort KEY``."""


def _profiler_options(args: list[str | None]) -> tuple[list[str], list[str | None]]:
    """The files cProfile's (or profile's) options write and what follows its options (``-m
    MODULE ...`` or a script and its arguments). Its parser takes no option after the first
    operand, and ``-oFILE``, ``--outfile=FILE``, ``--outfile FILE`` and abbreviations such as
    ``--out`` all name the file."""
    opts, operands = scan(args, _PROFILER, interspersed=False)
    writes = [o.value or DYNAMIC for o in opts if o.name in ("-o", "--outfile")]
    return writes, (["-m", *operands] if Opt("-m", "") in opts else operands)


def _h_profiler(
    a: Analyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[Segment]:
    """``python -m cProfile [-o FILE] [-s KEY] (-m MODULE | SCRIPT) ...`` is ``python`` running
    that module or script; ``-o FILE`` is written."""
    writes, rest = _profiler_options(args)
    if depth > MAX_DEPTH:
        return [new_segment(text, prog, C.OPAQUE, "wrapped commands nested too deep")]
    segs = _h_interpreter(a, text, prog, rest, depth + 1)
    if writes:
        seg = new_segment(text, prog, C.FILE_MUTATION, f"the profiler writes {writes[0]}")
        seg.write_targets.extend(writes)
        segs.append(seg)
    return segs


HANDLERS: dict[str, HandlerFn] = dict.fromkeys(
    [*INTERPRETERS, *(f"python3.{minor}" for minor in range(6, 15))], _h_interpreter
)
