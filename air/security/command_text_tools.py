"""The handlers of the text tools with a language of their own: sed, awk, sort and rg.

Owns ``HANDLERS`` for ``sed`` (``-i``, the ``w``/``e`` commands of its script), ``awk`` (its
``system``, pipes and redirections), ``sort`` (``-o``, ``--compress-program``) and ``rg``
(``--pre``, ``--search-zip``): each reads its options through the option tables and its script
for what writes or runs. Pure: no I/O.
"""

from __future__ import annotations

import os.path

from air.contracts.permission import CommandCategory
from air.security.command_tables import NULL_TARGETS, SAFE_BIN_DIRS
from air.security.command_words import DYNAMIC, Analyzer, HandlerFn, Segment, new_segment
from air.security.options import (
    COMPRESSORS,
    option_spec,
    scan,
)

__all__ = [
    "HANDLERS",
]

C = CommandCategory


_SED_SPEC = option_spec(
    "efl",
    ("--expression", "--file", "--line-length"),
    (
        "--in-place",
        "--quiet",
        "--silent",
        "--sandbox",
        "--debug",
        "--posix",
        "--regexp-extended",
        "--separate",
        "--null-data",
        "--zero-terminated",
        "--unbuffered",
        "--follow-symlinks",
        "--binary",
        "--help",
        "--version",
    ),
)


def _h_sed(a: Analyzer, text: str, prog: str, args: list[str | None], depth: int) -> list[Segment]:
    """sed by what its script does (scripts.read_sed): ``w``/``s///w`` and ``-i`` write files,
    ``e``/``s///e`` and ``-f FILE`` (a script not given) run or may run anything."""
    in_place = False
    scripts: list[str | None] = []
    sandbox = False
    rest: list[str | None] = []
    for x in args:  # `-i[SUFFIX]` takes its suffix attached: `-ie` is -i with suffix "e"
        if x is not None and x.startswith("-") and not x.startswith("--") and "i" in x:
            before = x[: x.index("i")]
            if not any(c in before for c in "efl"):
                in_place = True
                x = before if before != "-" else None
                if x is None:
                    continue
        rest.append(x)
    opts, operands = scan(rest, _SED_SPEC)
    for opt in opts:
        if opt.name in ("-e", "--expression"):
            scripts.append(opt.value)
        elif opt.name in ("-f", "--file"):
            return [
                new_segment(
                    text, prog, C.OPAQUE, "sed -f runs a script file (it may write or run anything)"
                )
            ]
        elif opt.name.startswith("--in-place"):
            in_place = True
        elif opt.name == "--sandbox":
            sandbox = True
    if not scripts:
        scripts = operands[:1]
        operands = operands[1:]
    if not scripts or any(s is None for s in scripts):
        return [new_segment(text, prog, C.OPAQUE, "sed with a dynamic script")]
    from air.security.scripts import read_sed  # its regexes are built at the first sed

    effects = read_sed("\n".join(s for s in scripts if s is not None))
    if effects.runs and not sandbox:
        return [new_segment(text, prog, C.OPAQUE, effects.runs)]
    writes = [] if sandbox else [w if w is not None else DYNAMIC for w in effects.writes]
    writes = [w for w in writes if w not in NULL_TARGETS]
    if in_place:
        writes.extend(f if f is not None else DYNAMIC for f in operands)
    if not writes:
        seg = new_segment(text, prog, C.READ_ONLY, "sed filters text")
    else:
        why = "sed -i edits files in place" if in_place else f"sed script writes {writes[0]}"
        seg = new_segment(text, prog, C.FILE_MUTATION, why)
        seg.write_targets.extend(writes)
    seg.read_targets.extend(effects.reads)
    return [seg]


_AWK_SPEC = option_spec(
    "fvFEileW",
    ("--file", "--assign", "--field-separator", "--exec", "--include", "--load", "--source"),
    (
        "--pretty-print",
        "--profile",
        "--dump-variables",
        "--debug",
        "--sandbox",
        "--lint",
        "--posix",
        "--traditional",
        "--characters-as-bytes",
        "--re-interval",
        "--non-decimal-data",
        "--optimize",
        "--no-optimize",
        "--bignum",
        "--gen-pot",
        "--help",
        "--version",
        "--copyright",
    ),
)


_AWK_W_SAFE = frozenset("version usage help posix lint traditional interactive dump".split())


def _h_awk(a: Analyzer, text: str, prog: str, args: list[str | None], depth: int) -> list[Segment]:
    """awk by what its program does (scripts.read_awk); program files (``-f``, ``-E``),
    libraries (``-i``, ``-l``) and the debugger run code not given; gawk's ``-o``/``-p``/``-d``
    write their files."""
    programs: list[str | None] = []
    writes: list[str] = []
    sandbox = False
    rest: list[str | None] = []
    for x in args:  # gawk's optional-value short options: `-o[file]`, `-p[file]`, `-d[file]`
        if (
            x is not None
            and len(x) >= 2
            and x[0] == "-"
            and x[1] in "opdD"
            and not x.startswith("--")
        ):
            if x[1] == "D":
                return [new_segment(text, prog, C.OPAQUE, f"{prog} -D reads debugger commands")]
            writes.append(
                x[2:] or {"o": "awkprof.out", "p": "awkprof.out", "d": "awkvars.out"}[x[1]]
            )
            continue
        rest.append(x)
    opts, operands = scan(rest, _AWK_SPEC)
    for opt in opts:
        if opt.name in ("-f", "--file", "-E", "--exec", "-i", "--include", "-l", "--load"):
            return [
                new_segment(text, prog, C.OPAQUE, f"{prog} {opt.name} runs or loads a program file")
            ]
        if opt.name == "-W" and (opt.value or "") not in _AWK_W_SAFE:
            return [new_segment(text, prog, C.OPAQUE, f"{prog} -W {opt.value} (mawk/gawk option)")]
        if opt.name in ("-e", "--source"):
            programs.append(opt.value)
        elif opt.name == "--debug":
            return [new_segment(text, prog, C.OPAQUE, f"{prog} --debug reads debugger commands")]
        elif opt.name in ("--pretty-print", "--profile", "--dump-variables"):
            writes.append(
                opt.value or ("awkvars.out" if opt.name == "--dump-variables" else "awkprof.out")
            )
        elif opt.name == "--sandbox":
            sandbox = True
    if not programs:
        programs = operands[:1]
    if not programs or any(p is None for p in programs):
        return [new_segment(text, prog, C.OPAQUE, f"{prog} with a dynamic program")]
    from air.security.scripts import read_awk  # its regexes are built at the first awk

    effects = read_awk("\n".join(p for p in programs if p is not None))
    if effects.runs and not sandbox:
        return [new_segment(text, prog, C.OPAQUE, effects.runs)]
    if not sandbox:
        writes.extend(w if w is not None else DYNAMIC for w in effects.writes)
    writes = [w for w in writes if w not in NULL_TARGETS and w != "-"]
    if not writes:
        seg = new_segment(text, prog, C.READ_ONLY, "awk filters text")
    else:
        seg = new_segment(text, prog, C.FILE_MUTATION, f"{prog} writes {writes[0]}")
        seg.write_targets.extend(writes)
    seg.read_targets.extend(effects.reads)
    return [seg]


_SORT_SPEC = option_spec(
    "kotST",
    (
        "--key",
        "--output",
        "--field-separator",
        "--temporary-directory",
        "--buffer-size",
        "--compress-program",
        "--files0-from",
        "--parallel",
        "--batch-size",
        "--sort",
        "--random-source",
    ),
    ("--check", "--merge", "--unique", "--reverse", "--numeric-sort", "--debug"),
)


def _h_sort(a: Analyzer, text: str, prog: str, args: list[str | None], depth: int) -> list[Segment]:
    """sort: ``--compress-program`` runs a program (a plain compressor stays read_only, else
    it is classified), ``-o``/``--output`` writes (also abbreviated: ``--out=F``)."""
    opts, _ = scan(args, _SORT_SPEC)
    targets: list[str] = []
    out: list[Segment] = []
    for opt in opts:
        if opt.name == "--compress-program":
            if opt.value is None:
                return [
                    new_segment(
                        text, prog, C.OPAQUE, "sort --compress-program with a dynamic program"
                    )
                ]
            if os.path.basename(opt.value) not in COMPRESSORS or (
                "/" in opt.value and os.path.dirname(opt.value) not in SAFE_BIN_DIRS
            ):
                out.extend(a.classify_argv(text, [opt.value], depth + 1))
        elif opt.name in ("-o", "--output"):
            targets.append(opt.value if opt.value is not None else DYNAMIC)
    if targets:
        seg = new_segment(text, prog, C.FILE_MUTATION, f"{prog} writes {targets[0]}")
        seg.write_targets.extend(targets)
    else:
        seg = new_segment(text, prog, C.READ_ONLY, f"{prog} is read_only")
    return [seg, *out]


_RG_SPEC = option_spec(
    "ABCeEfgjmMrtTd",
    (
        "--pre",
        "--hostname-bin",
        "--pre-glob",
        "--regexp",
        "--file",
        "--glob",
        "--iglob",
        "--type",
        "--type-not",
        "--type-add",
        "--encoding",
        "--replace",
        "--max-count",
        "--max-depth",
        "--threads",
        "--colors",
        "--sort",
        "--sortr",
        "--ignore-file",
        "--path-separator",
        "--max-columns",
        "--context",
        "--after-context",
        "--before-context",
        "--max-filesize",
        "--engine",
        "--dfa-size-limit",
        "--regex-size-limit",
    ),
)


def _h_rg(a: Analyzer, text: str, prog: str, args: list[str | None], depth: int) -> list[Segment]:
    """rg: ``--pre``/``--hostname-bin`` run a program (classified), ``-z`` runs decompressors
    found on PATH (opaque)."""
    opts, _ = scan(args, _RG_SPEC)
    out = [new_segment(text, prog, C.READ_ONLY, f"{prog} is read_only")]
    for opt in opts:
        if opt.name in ("--pre", "--hostname-bin"):
            if opt.value is None:
                return [
                    new_segment(text, prog, C.OPAQUE, f"{prog} {opt.name} with a dynamic program")
                ]
            if opt.value:
                out.extend(a.classify_argv(text, [opt.value], depth + 1))
        elif opt.name in ("-z", "--search-zip"):
            return [
                new_segment(
                    text, prog, C.OPAQUE, f"{prog} {opt.name} runs decompression programs from PATH"
                )
            ]
    return out


HANDLERS: dict[str, HandlerFn] = {
    **dict.fromkeys(("sed", "gsed"), _h_sed),
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), _h_awk),
    "sort": _h_sort,
    "rg": _h_rg,
}
