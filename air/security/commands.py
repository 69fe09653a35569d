"""CommandRiskAnalyzer: classify a shell command line into one of the 10 command categories.

Owns the tree-sitter-bash walk that splits a command line into segments (``&&``, ``||``, ``;``,
pipes, subshells, command and process substitution, loops and conditionals), unwraps wrapper
programs (``sudo``, ``env``, ``timeout``, ``xargs``, ``sh -c``...), reads redirect targets and
classifies every segment from static program tables. The command's category is its riskiest
segment's; anything dynamic, obfuscated or unparseable is ``opaque`` (SDD §9.2, §18.5).
Pure: no I/O.
"""

from __future__ import annotations

import os.path
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from air.contracts.permission import CommandCategory, CommandRiskAnalysis, CommandSegment

__all__ = ["CATEGORY_ORDER", "CommandRiskAnalyzer", "riskiest"]

C = CommandCategory
CATEGORY_ORDER: dict[CommandCategory, int] = {c: i for i, c in enumerate(CommandCategory)}


def riskiest(categories: Iterable[CommandCategory]) -> CommandCategory:
    """Return the riskiest of ``categories`` (``read_only`` for none)."""
    best = C.READ_ONLY
    for cat in categories:
        if CATEGORY_ORDER[cat] > CATEGORY_ORDER[best]:
            best = cat
    return best


_MAX_DEPTH = 4
_SAFE_BIN_DIRS = {
    "/bin",
    "/usr/bin",
    "/usr/local/bin",
    "/sbin",
    "/usr/sbin",
    "/usr/local/sbin",
}
_NULL_TARGETS = {"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"}
_DEVICE_PREFIXES = (
    "/dev/sd",
    "/dev/nvme",
    "/dev/hd",
    "/dev/vd",
    "/dev/mem",
    "/dev/kmem",
    "/dev/mmc",
)

READ_ONLY_PROGRAMS = frozenset(
    """ls cat head tail less more wc grep egrep fgrep rg ag ack echo printf pwd whoami id date
    uname which type file stat du df tree diff cmp sort uniq cut tr jq yq basename dirname
    realpath readlink true false test [ seq nl column hexdump xxd od strings md5sum sha256sum
    sha1sum sha512sum cksum b2sum tac rev fold fmt paste join comm expand unexpand zcat bzcat
    xzcat man help cd pushd popd dirs ps free uptime hostname nproc getconf locale tput clear
    sleep printenv base64 base32 groups lsb_release arch env_list shasum look whereis apropos
    pgrep lscpu lsblk lsusb lspci pstree vmstat iostat time command_v hash set shopt umask read
    wait jobs cal bc expr factor numfmt tsort ldd objdump nm readelf size c++filt addr2line
    gcov pydoc tokei cloc sloccount fd fdfind bat exa eza less glow highlight""".split()
)
BUILD_TEST_PROGRAMS = frozenset(
    """make gmake cmake ctest ninja meson gcc g++ cc c++ clang clang++ ld ar as ranlib pytest
    py.test tox nox mypy ruff black isort flake8 pylint pyright rustc javac java mvn gradle
    gradlew tsc eslint prettier jest vitest mocha cppcheck clang-tidy clang-format valgrind gdb
    lldb pre-commit shellcheck bazel bazelisk sphinx-build coverage autoreconf autoconf clangd
    automake configure scons ccache gofmt rustfmt lint-imports hypothesis bandit pydocstyle
    ctags cscope doxygen dot latexmk pdflatex xelatex pandoc mkdocs tsx ts-node deno bun
    node-gyp swift swiftc kotlinc dotnet ghc cabal stack stylua luacheck zig nim dune opam
    elixir mix erl rebar3 iex php composer phpunit rspec rake bundle""".split()
)
FILE_MUTATION_PROGRAMS = frozenset(
    "touch mkdir cp mv ln chmod install patch truncate split mktemp gzip gunzip bzip2 bunzip2"
    " xz unxz zip unzip csplit tee".split()
)
DESTRUCTIVE_PROGRAMS = frozenset(
    "rm shred wipefs mkfs fdisk sfdisk parted gdisk srm unlink rmdir blkdiscard".split()
)
NETWORK_PROGRAMS = frozenset(
    """curl wget ssh scp sftp nc ncat netcat socat telnet ftp ping dig nslookup host nmap
    ssh-keyscan http https aria2c gh aws gcloud az kubectl helm lftp tftp mosh rclone s3cmd
    openssl websocat whois traceroute mtr""".split()
)
PROCESS_CONTROL_PROGRAMS = frozenset(
    "kill killall pkill setsid disown screen tmux renice at batch crontab strace ltrace"
    " ulimit trap bg fg nohup watch inotifywait entr".split()
)
PRIVILEGED_PROGRAMS = frozenset(
    """sudo doas su pkexec chroot mount umount insmod rmmod modprobe sysctl systemctl service
    chown chgrp setcap iptables ip6tables nft ufw useradd usermod userdel passwd groupadd
    visudo reboot shutdown halt poweroff init telinit docker podman launchctl chattr swapon
    swapoff losetup capsh nsenter unshare firewall-cmd update-grub grub-install dmsetup
    cryptsetup setfacl apt apt-get aptitude dpkg yum dnf rpm pacman zypper apk snap flatpak
    mknod""".split()
)
OPAQUE_PROGRAMS = frozenset(
    "eval source . exec alias unalias enable builtin function declare_f coproc compgen"
    " complete fc history".split()
)
SHELLS = frozenset("sh bash zsh dash ksh mksh fish ash busybox csh tcsh".split())
INTERPRETERS = {
    "python": ("-c",),
    "python3": ("-c",),
    "python2": ("-c",),
    "pypy": ("-c",),
    "pypy3": ("-c",),
    "node": ("-e", "--eval", "-p", "--print"),
    "nodejs": ("-e", "--eval", "-p", "--print"),
    "perl": ("-e", "-E"),
    "ruby": ("-e",),
    "php": ("-r",),
    "lua": ("-e",),
    "tclsh": (),
    "Rscript": ("-e",),
    "osascript": ("-e",),
    "pwsh": ("-c", "-Command"),
}
_DANGEROUS_ENV = frozenset(
    """PATH LD_PRELOAD LD_LIBRARY_PATH LD_AUDIT BASH_ENV ENV PROMPT_COMMAND IFS PS4 SHELLOPTS
    BASHOPTS GIT_DIR GIT_WORK_TREE GIT_SSH GIT_SSH_COMMAND GIT_EXEC_PATH GIT_EXTERNAL_DIFF
    GIT_ASKPASS SSH_ASKPASS GIT_PROXY_COMMAND GIT_CONFIG GIT_CONFIG_GLOBAL GIT_CONFIG_SYSTEM
    GIT_CONFIG_COUNT GIT_TEMPLATE_DIR GIT_INDEX_FILE EDITOR VISUAL PAGER GIT_PAGER GIT_EDITOR
    PYTHONSTARTUP PYTHONINSPECT PERL5OPT PERL5LIB RUBYOPT NODE_OPTIONS DYLD_INSERT_LIBRARIES
    HOME ZDOTDIR XDG_CONFIG_HOME""".split()
)
_SAFE_GIT_CONFIG_KEYS = ("color.", "user.name", "user.email", "core.quotepath", "advice.")

_GIT_READ = frozenset(
    """status diff log show blame rev-parse ls-files describe shortlog grep reflog cat-file
    ls-tree rev-list show-ref help version count-objects fsck name-rev whatchanged diff-tree
    diff-index diff-files merge-base for-each-ref check-ignore check-attr var show-branch
    cherry range-diff annotate verify-commit verify-tag""".split()
)
_GIT_VCS = frozenset(
    """add commit switch merge rebase cherry-pick revert mv rm init am apply notes
    format-patch bisect sparse-checkout mergetool citool""".split()
)
_GIT_NETWORK = frozenset(
    "clone fetch pull ls-remote send-email daemon instaweb request-pull svn p4 archive".split()
)


@dataclass
class _Segment:
    text: str
    program: str | None
    category: CommandCategory
    reason: str
    write_targets: list[str] = field(default_factory=list)


@dataclass
class _Word:
    """An argument: its literal value, or None when it depends on an expansion."""

    value: str | None
    node: Node | None = None


def _seg(text: str, program: str | None, cat: CommandCategory, reason: str) -> _Segment:
    return _Segment(text=text, program=program, category=cat, reason=reason)


class CommandRiskAnalyzer:
    """Classify shell command lines (SDD §9.2 ``CommandRiskAnalyzer.analyze``).

    One parser per analyzer; ``analyze`` is synchronous and pure.
    """

    def __init__(self) -> None:
        self._parser = Parser(Language(tree_sitter_bash.language()))

    def parse_only(self, command: str) -> bool:
        """Parse ``command`` and return whether the tree has errors (used by the benchmark)."""
        return bool(self._parser.parse(command.encode("utf-8")).root_node.has_error)

    def analyze(self, command: str, cwd: str | None = None) -> CommandRiskAnalysis:
        """Split ``command`` into segments and classify each; the riskiest segment decides.

        Args:
            command: the shell command line, as the model or user wrote it.
            cwd: the working directory it will run in (recorded for relative write targets).

        Returns:
            A ``CommandRiskAnalysis``; ``write_targets`` lists redirect and program targets
            (literal, unresolved; relative ones are relative to ``cwd``).
        """
        segments = self._segments(command, 0)
        category = riskiest(s.category for s in segments)
        targets: list[str] = []
        for seg in segments:
            for target in seg.write_targets:
                resolved = target
                if cwd and not target.startswith(("/", "~")):
                    resolved = os.path.join(cwd, target)
                if resolved not in targets:
                    targets.append(resolved)
        worst = next((s for s in segments if s.category == category), None)
        reason = worst.reason if worst else "empty command"
        return CommandRiskAnalysis(
            command=command,
            category=category,
            segments=[
                CommandSegment(text=s.text, program=s.program, category=s.category, reason=s.reason)
                for s in segments
            ],
            reason=reason,
            write_targets=targets,
        )

    # -- parsing -------------------------------------------------------------------------

    def _segments(self, command: str, depth: int) -> list[_Segment]:
        if depth > _MAX_DEPTH:
            return [_seg(command, None, C.OPAQUE, "nested shell commands too deep")]
        for ch in command:
            cat = unicodedata.category(ch)
            if (cat == "Cc" and ch not in "\n\t") or cat in ("Cf", "Co", "Cs"):
                return [
                    _seg(command, None, C.OPAQUE, f"control or invisible character U+{ord(ch):04X}")
                ]
        if not command.strip():
            return []
        tree = self._parser.parse(command.encode("utf-8"))
        root = tree.root_node
        if root.has_error:
            return [_seg(command, None, C.OPAQUE, "the command does not parse as bash")]
        out: list[_Segment] = []
        self._walk(root, out, depth)
        return out

    def _walk(self, node: Node, out: list[_Segment], depth: int) -> None:
        kind = node.type
        if kind == "command":
            self._command(node, out, depth)
            return
        if kind == "redirected_statement":
            body = node.child_by_field_name("body")
            for child in node.children:
                if child.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                    self._redirect(child, out, depth)
                elif child is not None:
                    self._walk(child, out, depth)
            if body is None and not any(c.type == "command" for c in node.children):
                pass
            return
        if kind in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
            self._redirect(node, out, depth)
            return
        if kind == "variable_assignment":
            self._assignment(node, out, depth)
            return
        if kind == "function_definition":
            out.append(_seg(_text(node), None, C.OPAQUE, "defines a shell function"))
            return
        if kind == "&":
            out.append(_seg("&", None, C.PROCESS_CONTROL, "runs a command in the background"))
            return
        if kind in ("ERROR", "MISSING"):
            out.append(_seg(_text(node), None, C.OPAQUE, "unparseable construct"))
            return
        if kind == "declaration_command":
            self._declaration(node, out, depth)
            return
        for child in node.children:
            self._walk(child, out, depth)

    def _assignment(self, node: Node, out: list[_Segment], depth: int) -> None:
        name_node = node.child_by_field_name("name")
        name = _text(name_node) if name_node is not None else ""
        if name in _DANGEROUS_ENV or name.startswith(("GIT_CONFIG_", "LD_", "DYLD_")):
            out.append(_seg(_text(node), None, C.OPAQUE, f"sets {name}, which changes what runs"))
        for child in node.children:
            self._walk_substitutions(child, out, depth)

    def _declaration(self, node: Node, out: list[_Segment], depth: int) -> None:
        found = False
        for child in node.children:
            if child.type == "variable_assignment":
                before = len(out)
                self._assignment(child, out, depth)
                found = found or len(out) > before
            elif child.type == "word" and _text(child) in ("-f", "-F"):
                out.append(_seg(_text(node), None, C.OPAQUE, "declares functions"))
                found = True
            else:
                self._walk_substitutions(child, out, depth)
        if not found:
            out.append(
                _seg(_text(node), _text(node.children[0]), C.READ_ONLY, "variable declaration")
            )

    def _walk_substitutions(self, node: Node, out: list[_Segment], depth: int) -> None:
        if node.type in ("command_substitution", "process_substitution"):
            for child in node.children:
                self._walk(child, out, depth)
            return
        for child in node.children:
            self._walk_substitutions(child, out, depth)

    def _redirect(self, node: Node, out: list[_Segment], depth: int) -> None:
        text = _text(node)
        if node.type == "herestring_redirect":
            for child in node.children:
                self._walk_substitutions(child, out, depth)
            return
        if node.type == "heredoc_redirect":
            for child in node.children:
                if child.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                    self._redirect(child, out, depth)
                elif child.type in ("command", "pipeline", "list", "redirected_statement"):
                    self._walk(child, out, depth)
                else:
                    self._walk_substitutions(child, out, depth)
            return
        op = ""
        dest: Node | None = None
        for child in node.children:
            if child.type in (
                ">",
                ">>",
                ">|",
                "&>",
                "&>>",
                ">&",
                "<",
                "<&",
                "<>",
                "&>|",
                ">&-",
                "<&-",
            ):
                op = child.type
            elif child.type == "file_descriptor":
                continue
            else:
                dest = child
        if dest is not None:
            self._walk_substitutions(dest, out, depth)
        if op in ("<", "<&", "<&-", ">&-"):
            return
        if dest is None:
            out.append(_seg(text, None, C.OPAQUE, "redirect without a target"))
            return
        if op in (">&", "<&") and dest.type == "number":
            return
        value = _literal(dest)
        if value is None:
            out.append(_seg(text, None, C.OPAQUE, "redirect target depends on an expansion"))
            return
        if value in _NULL_TARGETS or value.startswith("/dev/fd/") or value == "-":
            return
        if value.startswith(_DEVICE_PREFIXES):
            seg = _seg(text, None, C.DESTRUCTIVE, f"writes to the device {value}")
        else:
            seg = _seg(text, None, C.FILE_MUTATION, f"redirect writes {value}")
        seg.write_targets.append(value)
        out.append(seg)

    def _command(self, node: Node, out: list[_Segment], depth: int) -> None:
        text = _text(node)
        words: list[_Word] = []
        name_seen = False
        for child in node.children:
            if child.type == "variable_assignment" and not name_seen:
                self._assignment(child, out, depth)
                continue
            if child.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                self._redirect(child, out, depth)
                continue
            if child.type == "command_name":
                name_seen = True
                inner = child.children[0] if child.children else child
                self._walk_substitutions(inner, out, depth)
                words.append(_Word(_literal(inner), inner))
                continue
            if child.type in ("comment",):
                continue
            self._walk_substitutions(child, out, depth)
            words.append(_Word(_literal(child), child))
        if not words:
            return
        out.extend(self._argv(text, [w.value for w in words], depth))

    # -- classification of one argv -------------------------------------------------------

    def _argv(self, text: str, argv: Sequence[str | None], depth: int) -> list[_Segment]:
        if not argv:
            return []
        raw = argv[0]
        if raw is None:
            return [_seg(text, None, C.OPAQUE, "the program name depends on an expansion")]
        if not raw.isascii() or not raw.isprintable():
            return [_seg(text, raw, C.OPAQUE, "non-ASCII program name (look-alike characters)")]
        program = raw
        if "/" in raw:
            head, base = os.path.split(raw)
            if raw.startswith("/"):
                if os.path.normpath(head) not in _SAFE_BIN_DIRS:
                    return [
                        _seg(text, raw, C.OPAQUE, f"runs a program outside system bin dirs: {raw}")
                    ]
                program = base
            elif ".." in raw.split("/"):
                return [_seg(text, raw, C.OPAQUE, "runs a program through a '..' path")]
            else:
                known = _table_category(base)
                if known is None or base in SHELLS or base in INTERPRETERS:
                    if base in SHELLS or base in INTERPRETERS:
                        program = base
                    else:
                        return [_seg(text, raw, C.BUILD_TEST, "runs a script of the workspace")]
                else:
                    program = base
        args = list(argv[1:])
        return self._program(text, program, args, depth)

    def _program(self, text: str, prog: str, args: list[str | None], depth: int) -> list[_Segment]:
        handler = _HANDLERS.get(prog)
        if handler is not None:
            return handler(self, text, prog, args, depth)
        if prog.startswith("mkfs") or prog.startswith("fsck."):
            return [_seg(text, prog, C.DESTRUCTIVE, "formats or repairs a file system")]
        cat = _table_category(prog)
        if cat is None:
            return [_seg(text, prog, C.OPAQUE, f"unknown program {prog!r}")]
        seg = _seg(text, prog, cat, f"{prog} is {cat.value}")
        if cat in (C.FILE_MUTATION, C.DESTRUCTIVE):
            seg.write_targets.extend(_write_targets(prog, args))
        return [seg]

    def _inner(
        self,
        text: str,
        args: list[str | None],
        depth: int,
        floor: CommandCategory,
        prog: str,
        why: str,
    ) -> list[_Segment]:
        """Classify a wrapped command ``args``; the wrapper adds ``floor``."""
        inner = self._argv(text, args, depth + 1) if args else []
        wrapper = _seg(text, prog, floor, why)
        if any(a is None for a in args[:1]):
            wrapper = _seg(text, prog, C.OPAQUE, f"{prog} runs a dynamic program")
        return [wrapper, *inner]

    def _shell_string(self, text: str, prog: str, script: str | None, depth: int) -> list[_Segment]:
        if script is None:
            return [_seg(text, prog, C.OPAQUE, f"{prog} -c with a dynamic script")]
        inner = self._segments(script, depth + 1)
        if not inner:
            return [_seg(text, prog, C.READ_ONLY, "empty script")]
        return inner


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", errors="replace")


def _literal(node: Node) -> str | None:
    """The static value of a word-like node, or None when it needs an expansion."""
    kind = node.type
    if kind in ("word", "number"):
        raw = _text(node)
        if any(ch in raw for ch in "*?[") and kind == "word":
            return raw
        out = []
        i = 0
        while i < len(raw):
            if raw[i] == "\\" and i + 1 < len(raw):
                out.append(raw[i + 1])
                i += 2
                continue
            out.append(raw[i])
            i += 1
        return "".join(out)
    if kind == "raw_string":
        return _text(node)[1:-1]
    if kind == "string":
        parts = []
        for child in node.children:
            if child.type == '"':
                continue
            if child.type == "string_content":
                parts.append(_text(child))
            else:
                return None
        return "".join(parts)
    if kind == "concatenation":
        pieces = []
        for child in node.children:
            value = _literal(child)
            if value is None:
                return None
            pieces.append(value)
        return "".join(pieces)
    return None


def _table_category(prog: str) -> CommandCategory | None:
    for table, cat in (
        (OPAQUE_PROGRAMS, C.OPAQUE),
        (PRIVILEGED_PROGRAMS, C.PRIVILEGED),
        (DESTRUCTIVE_PROGRAMS, C.DESTRUCTIVE),
        (PROCESS_CONTROL_PROGRAMS, C.PROCESS_CONTROL),
        (NETWORK_PROGRAMS, C.NETWORK),
        (FILE_MUTATION_PROGRAMS, C.FILE_MUTATION),
        (BUILD_TEST_PROGRAMS, C.BUILD_TEST),
        (READ_ONLY_PROGRAMS, C.READ_ONLY),
    ):
        if prog in table:
            return cat
    if prog in SHELLS or prog in INTERPRETERS:
        return C.OPAQUE
    return None


def _positional(args: Sequence[str | None]) -> list[str | None]:
    out: list[str | None] = []
    after_dashdash = False
    for a in args:
        if a == "--" and not after_dashdash:
            after_dashdash = True
            continue
        if a is not None and a.startswith("-") and not after_dashdash and a != "-":
            continue
        out.append(a)
    return out


def _write_targets(prog: str, args: Sequence[str | None]) -> list[str]:
    pos = _positional(args)
    if prog == "ln" and any(
        a is not None and a.startswith("-") and "s" in a.lstrip("-")[:4] for a in args
    ):
        return [p if p is not None else "$dynamic" for p in pos]
    if prog in ("cp", "mv", "install", "ln"):
        for i, a in enumerate(args):
            if a in ("-t", "--target-directory") and i + 1 < len(args):
                nxt = args[i + 1]
                return [nxt if nxt is not None else "$dynamic"]
            if a is not None and a.startswith("--target-directory="):
                return [a.split("=", 1)[1]]
        pos = pos[-1:] if len(pos) >= 2 else pos
    if prog == "tee":
        pos = [p for p in pos if p not in _NULL_TARGETS]
    return [p if p is not None else "$dynamic" for p in pos]


# -- program handlers ----------------------------------------------------------------------


def _h_sudo(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    rest = list(args)
    while rest and rest[0] is not None and rest[0].startswith("-"):
        opt = rest.pop(0)
        if opt in ("-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U") and rest:
            rest.pop(0)
    return a._inner(text, rest, depth, C.PRIVILEGED, prog, f"{prog} runs with elevated privileges")


def _h_su(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    return [_seg(text, prog, C.PRIVILEGED, "switches user")]


def _h_env(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    rest = list(args)
    out: list[_Segment] = []
    while rest:
        head = rest[0]
        if head is None:
            return [_seg(text, prog, C.OPAQUE, "env with a dynamic argument")]
        if head in ("-u", "--unset", "-C", "--chdir", "-S", "--split-string"):
            if head in ("-S", "--split-string"):
                return [_seg(text, prog, C.OPAQUE, "env -S splits a dynamic string")]
            rest = rest[2:]
            continue
        if head.startswith("-"):
            rest.pop(0)
            continue
        if "=" in head:
            name = head.split("=", 1)[0]
            if name in _DANGEROUS_ENV or name.startswith(("GIT_CONFIG_", "LD_", "DYLD_")):
                out.append(_seg(text, prog, C.OPAQUE, f"sets {name}, which changes what runs"))
            rest.pop(0)
            continue
        break
    if not rest:
        return [*out, _seg(text, prog, C.READ_ONLY, "prints the environment")]
    return [*out, *a._inner(text, rest, depth, C.READ_ONLY, prog, "env wrapper")]


def _skip_opts(args: list[str | None], with_value: Iterable[str] = ()) -> list[str | None]:
    rest = list(args)
    valued = set(with_value)
    while rest and rest[0] is not None and rest[0].startswith("-") and rest[0] != "-":
        opt = rest.pop(0)
        if opt == "--":
            break
        if opt in valued and rest:
            rest.pop(0)
    return rest


def _h_simple_wrapper(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    valued = {
        "nice": ("-n", "--adjustment"),
        "timeout": ("-s", "--signal", "-k", "--kill-after"),
        "stdbuf": ("-i", "-o", "-e"),
        "ionice": ("-c", "-n", "-p"),
        "taskset": (),
        "chrt": (),
        "time": ("-f", "-o"),
        "command": (),
        "builtin": (),
        "nohup": (),
        "setsid": (),
        "unbuffer": (),
        "caffeinate": (),
        "flock": ("-w", "-E"),
        "firejail": (),
    }.get(prog, ())
    rest = _skip_opts(args, valued)
    if prog == "command" and args and args[0] in ("-v", "-V"):
        return [_seg(text, prog, C.READ_ONLY, "looks a command up")]
    if prog == "timeout" and rest:
        rest = rest[1:]
    if prog == "taskset" and rest:
        rest = rest[1:]
    if prog == "flock" and rest:
        rest = rest[1:]
        if rest and rest[0] in ("-c",):
            return a._shell_string(text, prog, rest[1] if len(rest) > 1 else None, depth)
    floor = C.PROCESS_CONTROL if prog in ("nohup", "setsid", "firejail") else C.READ_ONLY
    if not rest:
        return [
            _seg(text, prog, floor if prog != "time" else C.READ_ONLY, f"{prog} without a command")
        ]
    return a._inner(text, rest, depth, floor, prog, f"{prog} wrapper")


def _h_xargs(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
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
        "--replace",
        "-i",
    }
    rest = list(args)
    while rest and rest[0] is not None and rest[0].startswith("-"):
        opt = rest.pop(0)
        if opt in valued and rest:
            rest.pop(0)
    if not rest:
        return [_seg(text, prog, C.READ_ONLY, "xargs echo")]
    return a._inner(text, rest, depth, C.READ_ONLY, prog, "xargs runs a command per input")


def _h_shell(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    rest = list(args)
    while rest:
        opt = rest[0]
        if opt is None:
            return [_seg(text, prog, C.OPAQUE, f"{prog} with a dynamic argument")]
        if opt == "--":
            rest.pop(0)
            break
        if opt.startswith("-") and opt != "-":
            rest.pop(0)
            letters = opt.lstrip("-")
            if opt.startswith("--"):
                if opt in ("--login", "--noprofile", "--norc", "--posix", "--noediting"):
                    continue
                return [_seg(text, prog, C.OPAQUE, f"{prog} {opt}")]
            if "c" in letters:
                return a._shell_string(text, prog, rest[0] if rest else None, depth)
            if "s" in letters or "i" in letters:
                return [_seg(text, prog, C.OPAQUE, f"{prog} reads commands from stdin")]
            if "o" in letters and rest:
                rest.pop(0)
            continue
        break
    if not rest or rest[0] == "-":
        return [_seg(text, prog, C.OPAQUE, f"{prog} reads commands from stdin")]
    script = rest[0]
    if script is None or script.startswith("/") or ".." in script.split("/"):
        return [_seg(text, prog, C.OPAQUE, f"{prog} runs a script outside the workspace")]
    return [_seg(text, prog, C.BUILD_TEST, f"{prog} runs the workspace script {script}")]


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


def _h_interpreter(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    base = prog.rstrip("0123456789.")
    code_flags = INTERPRETERS.get(prog, INTERPRETERS.get(base, ()))
    rest = list(args)
    while rest:
        opt = rest[0]
        if opt is None:
            return [_seg(text, prog, C.OPAQUE, f"{prog} with a dynamic argument")]
        if opt in code_flags or (
            opt.startswith("-")
            and not opt.startswith("--")
            and any(opt.endswith(f.lstrip("-")) for f in code_flags if len(f) == 2)
        ):
            return [_seg(text, prog, C.OPAQUE, f"{prog} runs inline code that cannot be analysed")]
        if opt == "-m" and base.startswith(("python", "pypy")):
            module = rest[1] if len(rest) > 1 else None
            if module is None:
                return [_seg(text, prog, C.OPAQUE, "python -m with a dynamic module")]
            if module == "pip":
                return _h_pip(a, text, "pip", rest[2:], depth)
            cat = _PY_MODULES.get(module)
            if cat is None:
                return [_seg(text, prog, C.OPAQUE, f"python -m {module} is not a known module")]
            return [_seg(text, prog, cat, f"python -m {module}")]
        if opt in ("-", "-i"):
            return [_seg(text, prog, C.OPAQUE, f"{prog} reads code from stdin")]
        if opt.startswith("-"):
            rest.pop(0)
            if opt in ("-W", "-X", "--require", "-r") and rest:
                rest.pop(0)
            continue
        break
    if not rest:
        return [_seg(text, prog, C.OPAQUE, f"{prog} reads code from stdin")]
    script = rest[0]
    if script is None or script.startswith(("/", "~")) or ".." in script.split("/"):
        return [_seg(text, prog, C.OPAQUE, f"{prog} runs a script outside the workspace")]
    return [_seg(text, prog, C.BUILD_TEST, f"{prog} runs the workspace script {script}")]


def _first_sub(
    args: Sequence[str | None], valued: Iterable[str] = ()
) -> tuple[str | None, list[str | None]]:
    rest = _skip_opts(list(args), valued)
    if not rest:
        return "", []
    return rest[0], rest[1:]


def _h_pip(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    sub, _ = _first_sub(args)
    if sub in (
        "list",
        "show",
        "freeze",
        "check",
        "help",
        "--version",
        "",
        "config",
        "debug",
        "inspect",
    ):
        return [_seg(text, prog, C.READ_ONLY, f"pip {sub}")]
    if sub == "uninstall":
        return [_seg(text, prog, C.DESTRUCTIVE, "pip uninstall")]
    if sub == "download":
        return [_seg(text, prog, C.NETWORK, "pip download")]
    if sub in ("install", "wheel"):
        return [_seg(text, prog, C.PACKAGE_INSTALL, f"pip {sub}")]
    return [_seg(text, prog, C.OPAQUE, f"pip {sub}")]


def _h_js_pm(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    sub, _rest = _first_sub(args)
    if prog in ("npx", "pnpx", "bunx"):
        return [_seg(text, prog, C.PACKAGE_INSTALL, f"{prog} fetches and runs a package")]
    if (
        sub in ("test", "t", "run", "run-script", "build", "lint", "start", "exec")
        and prog != "yarn"
    ):
        if sub == "exec":
            return [_seg(text, prog, C.PACKAGE_INSTALL, f"{prog} exec may fetch a package")]
        return [_seg(text, prog, C.BUILD_TEST, f"{prog} {sub}")]
    if sub in (
        "ls",
        "list",
        "view",
        "info",
        "outdated",
        "why",
        "config",
        "help",
        "--version",
        "-v",
        "audit",
        "",
    ):
        if sub == "" and prog == "yarn":
            return [_seg(text, prog, C.PACKAGE_INSTALL, "yarn installs dependencies")]
        return [_seg(text, prog, C.READ_ONLY, f"{prog} {sub}")]
    if sub in (
        "install",
        "i",
        "ci",
        "add",
        "update",
        "upgrade",
        "up",
        "link",
        "dlx",
        "create",
        "init",
    ):
        return [_seg(text, prog, C.PACKAGE_INSTALL, f"{prog} {sub}")]
    if sub in ("publish", "login", "adduser", "unpublish", "deprecate"):
        return [_seg(text, prog, C.NETWORK, f"{prog} {sub}")]
    if sub in ("uninstall", "remove", "rm", "prune"):
        return [_seg(text, prog, C.DESTRUCTIVE, f"{prog} {sub}")]
    if prog == "yarn" and sub in ("test", "build", "lint", "run", "start", "tsc", "jest"):
        return [_seg(text, prog, C.BUILD_TEST, f"yarn {sub}")]
    return [_seg(text, prog, C.OPAQUE, f"{prog} {sub}: unknown subcommand (may be a script)")]


def _h_cargo(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    sub, _ = _first_sub(args)
    if sub in (
        "build",
        "b",
        "test",
        "t",
        "check",
        "c",
        "clippy",
        "fmt",
        "run",
        "r",
        "bench",
        "doc",
        "tree",
        "metadata",
        "--version",
        "version",
    ):
        return [_seg(text, prog, C.BUILD_TEST, f"cargo {sub}")]
    if sub in ("install", "add", "update", "fetch", "new", "init"):
        return [_seg(text, prog, C.PACKAGE_INSTALL, f"cargo {sub}")]
    if sub in ("publish", "login", "yank", "owner"):
        return [_seg(text, prog, C.NETWORK, f"cargo {sub}")]
    if sub in ("clean", "uninstall", "remove"):
        return [_seg(text, prog, C.DESTRUCTIVE, f"cargo {sub}")]
    return [_seg(text, prog, C.OPAQUE, f"cargo {sub}")]


def _h_go(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    sub, _ = _first_sub(args)
    if sub in ("build", "test", "vet", "fmt", "run", "list", "version", "env", "doc", "generate"):
        return [_seg(text, prog, C.BUILD_TEST, f"go {sub}")]
    if sub in ("get", "install", "mod"):
        return [_seg(text, prog, C.PACKAGE_INSTALL, f"go {sub}")]
    if sub == "clean":
        return [_seg(text, prog, C.DESTRUCTIVE, "go clean")]
    return [_seg(text, prog, C.OPAQUE, f"go {sub}")]


def _h_uv(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    sub, rest = _first_sub(args)
    if prog in ("uv", "poetry", "pdm", "hatch", "pipenv", "rye") and sub == "run":
        inner = _skip_opts(rest, ("--with", "--python", "-p"))
        return a._inner(text, inner, depth, C.BUILD_TEST, prog, f"{prog} run")
    if sub == "pip":
        return _h_pip(a, text, "pip", rest, depth)
    if sub in ("add", "install", "sync", "lock", "update", "tool", "remove"):
        return [_seg(text, prog, C.PACKAGE_INSTALL, f"{prog} {sub}")]
    if sub in ("show", "tree", "version", "--version", "check", "env", ""):
        return [_seg(text, prog, C.READ_ONLY, f"{prog} {sub}")]
    if sub in ("build", "test"):
        return [_seg(text, prog, C.BUILD_TEST, f"{prog} {sub}")]
    return [_seg(text, prog, C.OPAQUE, f"{prog} {sub}")]


def _h_other_pm(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    sub, _ = _first_sub(args)
    if sub in (
        "list",
        "info",
        "search",
        "show",
        "outdated",
        "--version",
        "-v",
        "doctor",
        "deps",
        "",
    ):
        return [_seg(text, prog, C.READ_ONLY, f"{prog} {sub}")]
    if sub in ("uninstall", "remove", "cleanup"):
        return [_seg(text, prog, C.DESTRUCTIVE, f"{prog} {sub}")]
    return [_seg(text, prog, C.PACKAGE_INSTALL, f"{prog} {sub}")]


def _h_find(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    out: list[_Segment] = [_seg(text, prog, C.READ_ONLY, "find lists files")]
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            inner: list[str | None] = []
            while j < len(args) and args[j] not in (";", "+", "\\;"):
                inner.append(args[j])
                j += 1
            out.extend(a._argv(text, inner, depth + 1) if inner else [])
            i = j + 1
            continue
        if arg == "-delete":
            out.append(_seg(text, prog, C.DESTRUCTIVE, "find -delete removes files"))
        elif arg in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            out.append(_seg(text, prog, C.FILE_MUTATION, f"find {arg} writes a file"))
            if i + 1 < len(args):
                out[-1].write_targets.append(args[i + 1] or "$dynamic")
        i += 1
    return out


def _h_sed(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    in_place = any(
        x is not None
        and (
            x.startswith("-i")
            or x.startswith("--in-place")
            or (x.startswith("-") and not x.startswith("--") and "i" in x)
        )
        for x in args
    )
    scripts = [x for x in _positional(args)[:1]]
    for i, x in enumerate(args):
        if x in ("-e", "--expression") and i + 1 < len(args):
            scripts.append(args[i + 1])
    for script in scripts:
        if script is None:
            return [_seg(text, prog, C.OPAQUE, "sed with a dynamic script")]
        if _SED_EXEC.search(script) or _SED_SUBST_EXEC.search(script):
            return [_seg(text, prog, C.OPAQUE, "sed script runs shell commands (e)")]
        if " w " in f" {script} " or "/w " in script or script.startswith("w "):
            return [_seg(text, prog, C.OPAQUE, "sed script writes files (w)")]
    if in_place:
        seg = _seg(text, prog, C.FILE_MUTATION, "sed -i edits files in place")
        files = _positional(args)[1:]
        seg.write_targets.extend(f if f is not None else "$dynamic" for f in files)
        return [seg]
    return [_seg(text, prog, C.READ_ONLY, "sed filters text")]


_SED_EXEC = re.compile(r"(?:^|[;\n{}0-9$/,!])\s*e(?:\s|$|;)")
_SED_SUBST_EXEC = re.compile(r"s(.).*?\1.*?\1[gpIiMmw0-9]*e")


def _h_awk(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    for x in args:
        if x is None:
            continue
        if "system" in x or "|" in x or ">" in x.replace(">=", "") or "getline" in x:
            return [_seg(text, prog, C.OPAQUE, "awk program runs commands or writes files")]
    if any(x == "-f" for x in args):
        return [_seg(text, prog, C.OPAQUE, "awk runs a program file")]
    return [_seg(text, prog, C.READ_ONLY, "awk filters text")]


def _h_dd(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    for x in args:
        if x is None:
            return [_seg(text, prog, C.OPAQUE, "dd with a dynamic operand")]
        if x.startswith("of="):
            target = x[3:]
            if target.startswith(_DEVICE_PREFIXES) or target.startswith("/dev/"):
                if target not in _NULL_TARGETS:
                    return [_seg(text, prog, C.DESTRUCTIVE, f"dd writes the device {target}")]
                return [_seg(text, prog, C.READ_ONLY, "dd to /dev/null")]
            seg = _seg(text, prog, C.FILE_MUTATION, f"dd writes {target}")
            seg.write_targets.append(target)
            return [seg]
    return [_seg(text, prog, C.READ_ONLY, "dd copies to stdout")]


def _h_tar(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    first = next((x for x in args if x is not None), "")
    flags = first.lstrip("-") if first and not first.startswith("--") else ""
    long_flags = {x for x in args if x is not None and x.startswith("--")}
    if (
        any(
            f.startswith(
                (
                    "--to-command",
                    "--use-compress-program",
                    "--checkpoint-action",
                    "--info-script",
                    "--new-volume-script",
                )
            )
            for f in long_flags
        )
        or "-I" in args
    ):
        return [_seg(text, prog, C.OPAQUE, "tar runs an external program")]
    if "t" in flags or "--list" in long_flags:
        return [_seg(text, prog, C.READ_ONLY, "tar lists an archive")]
    if "x" in flags or "--extract" in long_flags or "--get" in long_flags:
        seg = _seg(text, prog, C.FILE_MUTATION, "tar extracts files")
        for i, x in enumerate(args):
            if x in ("-C", "--directory") and i + 1 < len(args):
                seg.write_targets.append(args[i + 1] or "$dynamic")
        if not seg.write_targets:
            seg.write_targets.append(".")
        return [seg]
    seg = _seg(text, prog, C.FILE_MUTATION, "tar writes an archive")
    for i, x in enumerate(args):
        if x in ("-f", "--file") and i + 1 < len(args):
            seg.write_targets.append(args[i + 1] or "$dynamic")
        elif (
            x is not None
            and x.startswith("-")
            and not x.startswith("--")
            and x.endswith("f")
            and i + 1 < len(args)
        ):
            seg.write_targets.append(args[i + 1] or "$dynamic")
        elif (
            i == 0
            and x is not None
            and not x.startswith("-")
            and x.endswith("f")
            and i + 1 < len(args)
        ):
            seg.write_targets.append(args[i + 1] or "$dynamic")
    return [seg]


def _h_chmod(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    pos = _positional(args)
    mode = pos[0] if pos else None
    if mode is None:
        return [_seg(text, prog, C.OPAQUE, "chmod with a dynamic mode")]
    if "s" in mode or (mode.isdigit() and len(mode) == 4 and mode[0] in "2467"):
        return [_seg(text, prog, C.PRIVILEGED, "chmod sets setuid/setgid")]
    seg = _seg(text, prog, C.FILE_MUTATION, "chmod changes file modes")
    if any(x is not None and x.startswith("-") and "R" in x for x in args) and mode in (
        "777",
        "a+rwx",
        "0777",
    ):
        seg = _seg(text, prog, C.DESTRUCTIVE, "recursive chmod 777")
    seg.write_targets.extend(p if p is not None else "$dynamic" for p in pos[1:])
    return [seg]


def _h_rsync(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    pos = _positional(args)
    if any(x is None for x in args):
        return [_seg(text, prog, C.OPAQUE, "rsync with dynamic arguments")]
    if any(x is not None and x.startswith(("-e", "--rsh", "--rsync-path")) for x in args):
        return [_seg(text, prog, C.OPAQUE, "rsync runs a remote shell command")]
    if any(":" in (p or "") for p in pos):
        return [_seg(text, prog, C.NETWORK, "rsync to or from a remote host")]
    cat = (
        C.DESTRUCTIVE
        if any(x is not None and x.startswith("--delete") for x in args)
        else C.FILE_MUTATION
    )
    seg = _seg(text, prog, cat, "rsync copies files")
    seg.write_targets.extend(p for p in pos[-1:] if p is not None)
    return [seg]


def _h_curl(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    seg = _seg(text, prog, C.NETWORK, f"{prog} uses the network")
    for i, x in enumerate(args):
        if x in ("-o", "--output", "-O" if prog == "wget" else "--output-document") and i + 1 < len(
            args
        ):
            seg.write_targets.append(args[i + 1] or "$dynamic")
    return [seg]


def _git_config_key_safe(key: str) -> bool:
    return key.startswith(_SAFE_GIT_CONFIG_KEYS)


def _h_git(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    rest = list(args)
    while rest:
        opt = rest[0]
        if opt is None:
            return [_seg(text, prog, C.OPAQUE, "git with a dynamic argument")]
        if opt == "-c" or opt.startswith("--config-env"):
            rest.pop(0)
            key = rest.pop(0) if rest else None
            if (
                opt.startswith("--config-env")
                or key is None
                or not _git_config_key_safe(key.split("=", 1)[0].lower())
            ):
                return [_seg(text, prog, C.OPAQUE, f"git -c {key} can run arbitrary programs")]
            continue
        if opt in (
            "--work-tree",
            "--git-dir",
            "--exec-path",
            "--namespace",
            "--super-prefix",
        ) or opt.startswith(("--work-tree=", "--git-dir=", "--exec-path=", "--namespace=")):
            return [_seg(text, prog, C.OPAQUE, f"git {opt} points git elsewhere")]
        if opt == "-C":
            rest = rest[2:]
            continue
        if opt.startswith("-"):
            rest.pop(0)
            if opt in ("--version", "--help", "-v", "-h"):
                return [_seg(text, prog, C.READ_ONLY, "git --version")]
            continue
        break
    if not rest:
        return [_seg(text, prog, C.READ_ONLY, "git help")]
    sub = rest[0]
    sargs = rest[1:]
    flags = {x for x in sargs if x is not None and x.startswith("-")}

    def g(cat: CommandCategory, why: str) -> list[_Segment]:
        return [_seg(text, prog, cat, why)]

    if sub is None:
        return g(C.OPAQUE, "git with a dynamic subcommand")
    if sub in ("-p", "--paginate", "--no-pager"):
        return g(C.OPAQUE, "git option order")
    if sub in ("reset",):
        if "--hard" in flags or "--merge" in flags or "--keep" in flags:
            return g(C.DESTRUCTIVE, "git reset --hard discards work")
        return g(C.VCS_MUTATION, "git reset")
    if sub == "clean":
        if flags & {"-n", "--dry-run"}:
            return g(C.READ_ONLY, "git clean --dry-run")
        return g(C.DESTRUCTIVE, "git clean deletes untracked files")
    if sub == "push":
        if (
            any(
                f in ("-f", "--force", "--mirror", "--delete", "-d", "--prune")
                or f.startswith("--force")
                for f in flags
            )
            or any(x is not None and x.startswith("+") for x in sargs)
            or any(x is not None and x.startswith(":") for x in sargs)
        ):
            return g(C.DESTRUCTIVE, "git push that rewrites or deletes remote history")
        return g(C.NETWORK, "git push")
    if sub in ("checkout", "restore"):
        if sub == "restore" and (flags & {"--staged", "-S"}) and not (flags & {"--worktree", "-W"}):
            return g(C.VCS_MUTATION, "git restore --staged")
        if sub == "restore" or "--" in sargs or "-f" in flags or "--force" in flags or "." in sargs:
            return g(C.DESTRUCTIVE, f"git {sub} discards working-tree changes")
        return g(C.VCS_MUTATION, f"git {sub}")
    if sub == "branch":
        if flags & {"-D"} or ("--delete" in flags and "--force" in flags):
            return g(C.DESTRUCTIVE, "git branch -D")
        if flags & {
            "-d",
            "--delete",
            "-m",
            "-M",
            "-c",
            "-C",
            "--set-upstream-to",
            "-u",
            "--unset-upstream",
            "-f",
            "--force",
        }:
            return g(C.VCS_MUTATION, "git branch changes branches")
        positional = [x for x in sargs if x is not None and not x.startswith("-")]
        if positional and not (
            flags & {"--list", "-l", "--contains", "--merged", "--no-merged", "--points-at"}
        ):
            return g(C.VCS_MUTATION, "git branch creates a branch")
        return g(C.READ_ONLY, "git branch lists branches")
    if sub == "tag":
        if flags & {"-d", "--delete"}:
            return g(C.DESTRUCTIVE, "git tag -d")
        positional = [x for x in sargs if x is not None and not x.startswith("-")]
        if positional and not (flags & {"-l", "--list", "--contains", "--points-at"}):
            return g(C.VCS_MUTATION, "git tag creates a tag")
        return g(C.READ_ONLY, "git tag lists tags")
    if sub == "stash":
        action = sargs[0] if sargs else "push"
        if action in ("list", "show"):
            return g(C.READ_ONLY, f"git stash {action}")
        if action in ("drop", "clear"):
            return g(C.DESTRUCTIVE, f"git stash {action}")
        return g(C.VCS_MUTATION, f"git stash {action}")
    if sub == "remote":
        action = sargs[0] if sargs else ""
        if action in ("", "-v", "show", "get-url", "--verbose"):
            return g(C.READ_ONLY if action != "show" else C.NETWORK, f"git remote {action}")
        if action in ("update", "prune"):
            return g(C.NETWORK, f"git remote {action}")
        if action in ("remove", "rm"):
            return g(C.DESTRUCTIVE, "git remote remove")
        return g(C.VCS_MUTATION, f"git remote {action}")
    if sub == "config":
        values = [x for x in sargs if x is not None and not x.startswith("-")]
        if flags & {"--global", "--system", "--file", "-f", "--blob", "--worktree"} and not (
            flags & {"--get", "--list", "-l", "--get-all", "--get-regexp"}
        ):
            return g(C.OPAQUE, "git config outside the repository")
        if (
            flags & {"--get", "--list", "-l", "--get-all", "--get-regexp", "--show-origin"}
            or len(values) <= 1
        ):
            if flags & {
                "--unset",
                "--unset-all",
                "--remove-section",
                "--rename-section",
                "--add",
                "--replace-all",
                "--edit",
                "-e",
            }:
                return g(C.OPAQUE, "git config edits configuration")
            return g(C.READ_ONLY, "git config reads configuration")
        key = values[0].lower() if values else ""
        if not _git_config_key_safe(key):
            return g(C.OPAQUE, f"git config {key} can change what git runs")
        return g(C.VCS_MUTATION, f"git config {key}")
    if sub in ("reflog",) and sargs and sargs[0] in ("expire", "delete"):
        return g(C.DESTRUCTIVE, "git reflog expire")
    if sub in ("gc", "prune", "filter-branch", "filter-repo", "replace", "update-ref"):
        if sub == "gc" and not any(x is not None and x.startswith("--prune") for x in sargs):
            return g(C.VCS_MUTATION, "git gc")
        return g(C.DESTRUCTIVE, f"git {sub} can lose history")
    if sub == "worktree":
        action = sargs[0] if sargs else "list"
        if action == "list":
            return g(C.READ_ONLY, "git worktree list")
        if action in ("remove", "prune"):
            return g(C.DESTRUCTIVE, f"git worktree {action}")
        return g(C.VCS_MUTATION, f"git worktree {action}")
    if sub == "submodule":
        action = sargs[0] if sargs else "status"
        if action in ("status", "summary"):
            return g(C.READ_ONLY, "git submodule status")
        if action == "foreach":
            return g(C.OPAQUE, "git submodule foreach runs commands")
        return g(C.NETWORK, f"git submodule {action}")
    if sub in (
        "hook",
        "credential",
        "credential-store",
        "credential-cache",
        "upload-pack",
        "receive-pack",
        "fast-import",
        "shell",
        "web--browse",
    ):
        return g(C.OPAQUE, f"git {sub}")
    if sub == "diff" and "--ext-diff" in flags:
        return g(C.OPAQUE, "git diff --ext-diff runs an external program")
    if sub == "rebase" and (
        flags & {"-x", "--exec"} or any(x is not None and x.startswith("--exec") for x in sargs)
    ):
        return g(C.OPAQUE, "git rebase --exec runs commands")
    if sub == "bisect" and sargs and sargs[0] == "run":
        return g(C.OPAQUE, "git bisect run runs commands")
    if sub == "commit" and any(f in ("--no-verify", "-n") for f in flags):
        return g(C.VCS_MUTATION, "git commit --no-verify")
    if sub in _GIT_READ:
        if sub == "grep" and any(
            x is not None and x.startswith(("-O", "--open-files-in-pager")) for x in sargs
        ):
            return g(C.OPAQUE, "git grep -O runs a pager program")
        return g(C.READ_ONLY, f"git {sub}")
    if sub in _GIT_VCS:
        return g(C.VCS_MUTATION, f"git {sub}")
    if sub in _GIT_NETWORK:
        return g(C.NETWORK, f"git {sub}")
    return g(C.OPAQUE, f"git {sub}: unknown subcommand or alias")


def _h_background(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    return [_seg(text, prog, C.PROCESS_CONTROL, f"{prog} controls processes")]


def _h_systemctl(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    sub, _ = _first_sub(args)
    if (
        prog == "systemctl"
        and "--user" in args
        and sub in ("status", "list-units", "is-active", "show")
    ):
        return [_seg(text, prog, C.READ_ONLY, f"systemctl {sub}")]
    if sub in ("status", "list-units", "is-active", "show", "list-unit-files", "cat"):
        return [_seg(text, prog, C.READ_ONLY, f"{prog} {sub}")]
    return [_seg(text, prog, C.PRIVILEGED, f"{prog} {sub} changes system services")]


def _h_apt(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    sub, _ = _first_sub(args)
    if sub in (
        "list",
        "show",
        "search",
        "policy",
        "depends",
        "rdepends",
        "showpkg",
        "-l",
        "-L",
        "-s",
        "--list",
        "--status",
    ) or (prog == "dpkg" and sub in ("-l", "-L", "-s", "-S")):
        return [_seg(text, prog, C.READ_ONLY, f"{prog} {sub}")]
    if sub in ("remove", "purge", "autoremove", "-r", "-P", "erase"):
        return [_seg(text, prog, C.PRIVILEGED, f"{prog} {sub} removes system packages")]
    return [_seg(text, prog, C.PRIVILEGED, f"{prog} {sub} changes system packages")]


_HandlerFn = Callable[[CommandRiskAnalyzer, str, str, list[str | None], int], list[_Segment]]
_HANDLERS: dict[str, _HandlerFn] = {
    "sudo": _h_sudo,
    "doas": _h_sudo,
    "pkexec": _h_sudo,
    "su": _h_su,
    "env": _h_env,
    "nice": _h_simple_wrapper,
    "timeout": _h_simple_wrapper,
    "stdbuf": _h_simple_wrapper,
    "ionice": _h_simple_wrapper,
    "taskset": _h_simple_wrapper,
    "time": _h_simple_wrapper,
    "command": _h_simple_wrapper,
    "builtin": _h_simple_wrapper,
    "nohup": _h_simple_wrapper,
    "setsid": _h_simple_wrapper,
    "unbuffer": _h_simple_wrapper,
    "flock": _h_simple_wrapper,
    "firejail": _h_simple_wrapper,
    "xargs": _h_xargs,
    "parallel": _h_xargs,
    "pip": _h_pip,
    "pip3": _h_pip,
    "npm": _h_js_pm,
    "pnpm": _h_js_pm,
    "yarn": _h_js_pm,
    "npx": _h_js_pm,
    "pnpx": _h_js_pm,
    "bunx": _h_js_pm,
    "cargo": _h_cargo,
    "go": _h_go,
    "uv": _h_uv,
    "poetry": _h_uv,
    "pdm": _h_uv,
    "hatch": _h_uv,
    "pipenv": _h_uv,
    "rye": _h_uv,
    "brew": _h_other_pm,
    "gem": _h_other_pm,
    "conda": _h_other_pm,
    "mamba": _h_other_pm,
    "pipx": _h_other_pm,
    "find": _h_find,
    "sed": _h_sed,
    "gsed": _h_sed,
    "awk": _h_awk,
    "gawk": _h_awk,
    "mawk": _h_awk,
    "nawk": _h_awk,
    "dd": _h_dd,
    "tar": _h_tar,
    "chmod": _h_chmod,
    "rsync": _h_rsync,
    "curl": _h_curl,
    "wget": _h_curl,
    "git": _h_git,
    "kill": _h_background,
    "systemctl": _h_systemctl,
    "service": _h_systemctl,
    "apt": _h_apt,
    "apt-get": _h_apt,
    "dpkg": _h_apt,
    "yum": _h_apt,
    "dnf": _h_apt,
    "pacman": _h_apt,
    "zypper": _h_apt,
    "apk": _h_apt,
    "rpm": _h_apt,
}
for _shell in SHELLS:
    _HANDLERS[_shell] = _h_shell
for _interp in INTERPRETERS:
    _HANDLERS[_interp] = _h_interpreter
for _minor in range(6, 15):
    _HANDLERS[f"python3.{_minor}"] = _h_interpreter
