"""The handlers of programs whose arguments decide what they write: file tools.

Owns ``HANDLERS`` for ``find`` (``-delete``, ``-exec``), ``dd`` (``of=``), ``tar``, ``chmod``,
``rsync``, ``curl``/``wget`` (their output files), the readers that write a file when given
an option or a second operand (``shuf -o``, ``tree -o``, ``uniq IN OUT``...), ``date``/
``hostname`` (setting them is privileged), the pagers and viewers (``less +cmd``, ``man -P``:
they run programs) and ``zip``. Pure: no I/O.
"""

from __future__ import annotations

from air.contracts.permission import CommandCategory
from air.security.command_tables import DEVICE_PREFIXES, NULL_TARGETS
from air.security.command_targets import program_writes
from air.security.command_words import (
    DYNAMIC,
    Analyzer,
    HandlerFn,
    Segment,
    new_segment,
    option_values,
    positional_args,
)
from air.security.options import option_spec, scan

__all__ = [
    "HANDLERS",
    "h_tar",
]

C = CommandCategory


def _h_find(a: Analyzer, text: str, prog: str, args: list[str | None], depth: int) -> list[Segment]:
    out: list[Segment] = [new_segment(text, prog, C.READ_ONLY, "find lists files")]
    i = 0
    while i < len(args):  # -H -L -P, -D DEBUGOPTS, -O LEVEL come before the starting points
        head = args[i]
        if head in ("-H", "-L", "-P"):
            i += 1
        elif head == "-D":
            i += 2
        elif head is not None and head.startswith("-O") and head[2:].isdigit():
            i += 1
        else:
            break
    starts: list[str] = []
    while i < len(args):
        start = args[i]
        if start is not None and start[:1] in ("-", "(", "!", ")", ","):
            break
        starts.append(start or DYNAMIC)
        i += 1
    while i < len(args):
        arg = args[i]
        if arg in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            inner: list[str | None] = []
            while j < len(args) and args[j] not in (";", "+", "\\;"):
                inner.append(args[j])
                j += 1
            out.extend(a.classify_argv(text, inner, depth + 1) if inner else [])
            i = j + 1
            continue
        if arg == "-delete":
            out.append(new_segment(text, prog, C.DESTRUCTIVE, "find -delete removes files"))
            out[-1].write_targets.extend(starts or ["."])
        elif arg in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            out.append(new_segment(text, prog, C.FILE_MUTATION, f"find {arg} writes a file"))
            if i + 1 < len(args):
                out[-1].write_targets.append(args[i + 1] or "$dynamic")
        i += 1
    return out


def _h_dd(a: Analyzer, text: str, prog: str, args: list[str | None], depth: int) -> list[Segment]:
    for x in args:
        if x is None:
            return [new_segment(text, prog, C.OPAQUE, "dd with a dynamic operand")]
        if x.startswith("of="):
            target = x[3:]
            if target.startswith(DEVICE_PREFIXES) or target.startswith("/dev/"):
                if target not in NULL_TARGETS:
                    return [
                        new_segment(text, prog, C.DESTRUCTIVE, f"dd writes the device {target}")
                    ]
                return [new_segment(text, prog, C.READ_ONLY, "dd to /dev/null")]
            seg = new_segment(text, prog, C.FILE_MUTATION, f"dd writes {target}")
            seg.write_targets.append(target)
            return [seg]
    return [new_segment(text, prog, C.READ_ONLY, "dd copies to stdout")]


_TAR = option_spec(
    "bCfFgHIKLNTVX",
    (
        "--file", "--directory", "--to-command", "--use-compress-program", "--checkpoint-action",
        "--info-script", "--new-volume-script", "--rsh-command", "--rmt-command", "--files-from",
        "--exclude-from", "--listed-incremental", "--label", "--newer", "--starting-file",
        "--blocking-factor", "--format", "--owner", "--group", "--mode", "--transform",
        "--xform", "--exclude", "--suffix", "--volno-file", "--index-file", "--tape-length",
        "--after-date", "--newer-mtime", "--mtime", "--record-size", "--strip-components",
    ),
    (
        "--list", "--extract", "--get", "--create", "--append", "--update", "--delete",
        "--diff", "--compare", "--concatenate", "--catenate", "--remove-files", "--verbose",
        "--to-stdout", "--gzip", "--bzip2", "--xz", "--zstd", "--auto-compress",
    ),
)  # fmt: skip
"""GNU tar's options: the short ones taking a value, the long ones (abbreviations resolve)."""
_TAR_PROGRAMS = frozenset(
    """-I -F --use-compress-program --info-script --new-volume-script --to-command --rsh-command
    --rmt-command --checkpoint-action""".split()
)
_TAR_WRITES = frozenset(
    "-c --create -r --append -u --update --delete -A --catenate --concatenate".split()
)


def _tar_words(args: list[str | None]) -> list[str | None]:
    """``args`` with an old-style first word (``czf out.tgz``: letters whose values follow in
    order) spelled as options (``-c -z -f out.tgz``)."""
    first = args[0] if args else None
    if first is None or not first.isalpha():
        return list(args)
    words: list[str | None] = []
    rest = list(args[1:])
    for letter in first:
        words.append("-" + letter)
        if letter in _TAR.short_valued:
            words.append(rest.pop(0) if rest else "")
    return words + rest


def h_tar(a: Analyzer, text: str, prog: str, args: list[str | None], depth: int) -> list[Segment]:
    """``tar``: the options that run a program (opaque), a listing (read-only), or what it
    extracts or creates, below the directories ``-C`` moves it to. Its options are read as tar
    reads them: clusters with an attached value (``-cfout.tar``), long options abbreviated or
    with ``=``, an old-style first word."""
    opts, operands = scan(_tar_words(args), _TAR)
    names = {o.name for o in opts}
    if names & _TAR_PROGRAMS:
        return [new_segment(text, prog, C.OPAQUE, "tar runs an external program")]
    bases = [o.value or DYNAMIC for o in opts if o.name in ("-C", "--directory")]
    files = [o.value or DYNAMIC for o in opts if o.name in ("-f", "--file") and o.value != "-"]
    if names & {"-x", "--extract", "--get"}:
        seg = new_segment(text, prog, C.FILE_MUTATION, "tar extracts files")
        seg.write_targets.extend(bases or ["."])
        return [seg]
    if not names & _TAR_WRITES and names & {"-t", "--list", "-d", "--diff", "--compare"}:
        return [new_segment(text, prog, C.READ_ONLY, "tar lists an archive")]
    if "--remove-files" in names:
        seg = new_segment(text, prog, C.DESTRUCTIVE, "tar removes the files it archives")
        seg.write_targets.extend(o if o is not None else DYNAMIC for o in operands)
    else:
        seg = new_segment(text, prog, C.FILE_MUTATION, "tar writes an archive")
    seg.bases.extend(bases)
    seg.write_targets.extend(files)
    seg.write_targets.extend(
        o.value or DYNAMIC
        for o in opts
        if o.name in ("-g", "--listed-incremental", "--index-file", "--volno-file")
    )
    return [seg]


def _h_chmod(
    a: Analyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[Segment]:
    pos = positional_args(args)
    mode = pos[0] if pos else None
    if mode is None:
        return [new_segment(text, prog, C.OPAQUE, "chmod with a dynamic mode")]
    if "s" in mode or (mode.isdigit() and len(mode) == 4 and mode[0] in "2467"):
        return [new_segment(text, prog, C.PRIVILEGED, "chmod sets setuid/setgid")]
    seg = new_segment(text, prog, C.FILE_MUTATION, "chmod changes file modes")
    if any(x is not None and x.startswith("-") and "R" in x for x in args) and mode in (
        "777",
        "a+rwx",
        "0777",
    ):
        seg = new_segment(text, prog, C.DESTRUCTIVE, "recursive chmod 777")
    seg.write_targets.extend(p if p is not None else "$dynamic" for p in pos[1:])
    return [seg]


def _h_rsync(
    a: Analyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[Segment]:
    pos = positional_args(args)
    if any(x is None for x in args):
        return [new_segment(text, prog, C.OPAQUE, "rsync with dynamic arguments")]
    if any(x is not None and x.startswith(("-e", "--rsh", "--rsync-path")) for x in args):
        return [new_segment(text, prog, C.OPAQUE, "rsync runs a remote shell command")]
    if any(":" in (p or "") for p in pos):
        return [new_segment(text, prog, C.NETWORK, "rsync to or from a remote host")]
    removes = any(x.startswith(("--remove-source", "--remove-sent")) for x in args if x)
    cat = (
        C.DESTRUCTIVE
        if removes or any(x.startswith("--del") for x in args if x)  # --del: --delete-during
        else C.FILE_MUTATION
    )
    seg = new_segment(text, prog, cat, "rsync copies files")
    seg.write_targets.extend(p for p in pos[-1:] if p is not None)
    if removes:  # the sources go once copied
        seg.write_targets.extend(p for p in pos[:-1] if p is not None)
    return [seg]


def _h_curl(a: Analyzer, text: str, prog: str, args: list[str | None], depth: int) -> list[Segment]:
    seg = new_segment(text, prog, C.NETWORK, f"{prog} uses the network")
    outputs = (
        ("-O", "--output-document", "-P", "--directory-prefix", "-o", "--output-file", "-a")
        if prog == "wget"
        else ("-o", "--output", "--output-dir", "-c", "--cookie-jar", "-D", "--dump-header")
    )
    seg.write_targets.extend(option_values(args, outputs))
    return [seg]


# Read-only programs that write a file when given an option or a second operand.
_OUTPUT_OPTIONS: dict[str, tuple[str, ...]] = {
    "shuf": ("-o", "--output"),
    "tree": ("-o",),
    "file": ("-C",),
    "xxd": (),
    "uniq": (),
    "yq": (),
    "jq": (),
    "base64": (),
    "lsblk": (),
}


def _h_reader_that_writes(
    a: Analyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[Segment]:
    targets = option_values(args, _OUTPUT_OPTIONS[prog])
    pos = positional_args(args)
    if prog in ("uniq", "xxd") and len(pos) >= 2:
        targets.append(pos[1] if pos[1] is not None else DYNAMIC)
    if prog == "yq" and any(x in ("-i", "--inplace") for x in args):
        targets.extend(p if p is not None else DYNAMIC for p in pos[1:])
    if prog == "file" and "-C" in args:
        targets.append(".")
    if not targets:
        return [new_segment(text, prog, C.READ_ONLY, f"{prog} is read_only")]
    seg = new_segment(text, prog, C.FILE_MUTATION, f"{prog} writes {targets[0]}")
    seg.write_targets.extend(targets)
    return [seg]


def _h_date(a: Analyzer, text: str, prog: str, args: list[str | None], depth: int) -> list[Segment]:
    if prog == "hostname":
        setting = [x for x in positional_args(args) if x != ""] or any(
            x is not None and x.startswith(("-F", "--file", "-b", "--boot")) for x in args
        )
        if setting:
            return [new_segment(text, prog, C.PRIVILEGED, "hostname sets the host name")]
        return [new_segment(text, prog, C.READ_ONLY, "hostname prints the host name")]
    if any(x is not None and x.startswith(("-s", "--set")) for x in args):
        return [new_segment(text, prog, C.PRIVILEGED, "date --set changes the system clock")]
    return [new_segment(text, prog, C.READ_ONLY, f"{prog} prints the date")]


def _h_pager_user(
    a: Analyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[Segment]:
    """``man -P cmd``, ``bat --pager cmd``, ``less +cmd`` (a ``!`` runs a shell): programs."""
    for x in args:
        if x is None:
            continue
        if prog in ("less", "more") and (x.startswith("+") or x.startswith("--init")):
            return [new_segment(text, prog, C.OPAQUE, f"{prog} {x} runs pager commands")]
        if x in ("-P", "--pager", "-H", "--html", "--preprocessor", "-p") or x.startswith(
            ("--pager=", "-P", "--html=", "--preprocessor=")
        ):
            if prog == "man" or x.startswith("--pager"):
                return [new_segment(text, prog, C.OPAQUE, f"{prog} {x} runs a program")]
    return [new_segment(text, prog, C.READ_ONLY, f"{prog} is read_only")]


def _h_zip(a: Analyzer, text: str, prog: str, args: list[str | None], depth: int) -> list[Segment]:
    if any(x is None or x.startswith(("-TT", "--unzip-command")) for x in args):
        return [new_segment(text, prog, C.OPAQUE, "zip -TT runs a given test command")]
    seg = new_segment(text, prog, C.FILE_MUTATION, f"{prog} is file_mutation")
    seg.write_targets.extend(program_writes(prog, args))
    return [seg]


HANDLERS: dict[str, HandlerFn] = {
    "find": _h_find,
    "dd": _h_dd,
    "tar": h_tar,
    "chmod": _h_chmod,
    "rsync": _h_rsync,
    "curl": _h_curl,
    "wget": _h_curl,
    **dict.fromkeys(_OUTPUT_OPTIONS, _h_reader_that_writes),
    "date": _h_date,
    "hostname": _h_date,
    **dict.fromkeys(("man", "bat", "less", "more"), _h_pager_user),
    "zip": _h_zip,
}
