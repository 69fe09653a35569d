"""CommandRiskAnalyzer: classify a shell command line into one of the 10 command categories.

Owns the tree-sitter-bash walk that splits a command line into segments (``&&``, ``||``, ``;``,
pipes, subshells, command and process substitution, loops and conditionals), unwraps wrapper
programs (``sudo``, ``env``, ``timeout``, ``xargs``, ``sh -c``...), reads redirect targets and
classifies every segment from static program tables. The command's category is its riskiest
segment's; anything dynamic, obfuscated or unparseable is ``opaque`` (SDD §9.2, §18.5).

It also lists the paths a command touches for the engine to classify: ``write_targets``
(redirects, program outputs, and directories an option moves a build/VCS/install tool into, or a
path outside the project such a tool is given) and ``read_targets`` (every path-like argument,
``<`` redirect and assignment value, whatever the program, so ``base64 ~/.ssh/id_rsa`` is a
credential read). Relative targets are resolved against ``cwd`` and every directory a ``cd``,
``pushd``, ``env -C`` or ``tar -C`` moves to. Multi-call binaries (``busybox``, ``toybox``) are
classified as their applet. Pure: no I/O.
"""

from __future__ import annotations

import os.path
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, NamedTuple

from air.contracts.permission import CommandCategory
from air.security.options import (
    CMAKE_E_MODES,
    COMPRESSORS,
    KNOWN_LINKERS,
    MAKE_SPECIAL_VARIABLES,
    PYTEST_SAFE_INI,
    TOOLCHAIN_NAME,
    option_spec,
    scan,
)
from air.security.paths import names_credentials

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

    from air.contracts.permission_records import (
        CommandRiskAnalysis,  # built at the first command analysed
    )

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
    wait jobs cal bc expr factor numfmt tsort objdump nm readelf size c++filt addr2line
    gcov pydoc tokei cloc sloccount fd fdfind bat exa eza less glow highlight""".split()
)
BUILD_TEST_PROGRAMS = frozenset(
    """make gmake cmake ctest ninja meson gcc g++ cc c++ clang clang++ ld ar as ranlib pytest
    py.test tox nox mypy ruff black isort flake8 pylint pyright rustc javac java mvn gradle
    gradlew tsc eslint prettier jest vitest mocha cppcheck clang-tidy clang-format valgrind gdb
    lldb ldd pre-commit shellcheck bazel bazelisk sphinx-build coverage autoreconf autoconf clangd
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
SHELLS = frozenset("sh bash zsh dash ksh mksh fish ash csh tcsh".split())
MULTICALL = frozenset({"busybox", "toybox"})
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
# Variables naming a program to run (a bare name is looked up on PATH; a path outside the
# project runs code from elsewhere) and search paths for code (any component outside does).
_PROGRAM_ENV = frozenset(
    """CC CXX CPP LD AR AS NM RANLIB STRIP OBJCOPY FC F77 RUSTC RUSTC_WRAPPER
    RUSTC_WORKSPACE_WRAPPER CARGO_BUILD_RUSTC_WRAPPER CMAKE_C_COMPILER_LAUNCHER
    CMAKE_CXX_COMPILER_LAUNCHER MAKE SHELL CONFIG_SHELL PYTHON NODE JAVA_HOME GOROOT""".split()
)
_CODE_PATH_ENV = frozenset(
    """PYTHONPATH PYTHONHOME PYTHONUSERBASE PYTHONPYCACHEPREFIX NODE_PATH RUBYLIB PERLLIB
    CLASSPATH GEM_PATH GEM_HOME GOPATH GOFLAGS CARGO_HOME RUSTUP_HOME PKG_CONFIG_PATH
    CPATH C_INCLUDE_PATH LIBRARY_PATH ACLOCAL_PATH COMPILER_PATH GCC_EXEC_PREFIX""".split()
)
_ALWAYS_OPAQUE_ENV = frozenset(
    """JAVA_TOOL_OPTIONS _JAVA_OPTIONS JDK_JAVA_OPTIONS MAVEN_OPTS GRADLE_OPTS LESSOPEN
    LESSCLOSE MANPAGER BROWSER RUSTFLAGS RUSTDOCFLAGS CARGO_ENCODED_RUSTFLAGS PYTEST_ADDOPTS
    PYTEST_PLUGINS COVERAGE_PROCESS_START NPM_CONFIG_SCRIPT_SHELL npm_config_script_shell
    MAKEFLAGS MFLAGS GNUMAKEFLAGS MAKEFILES MAKEOVERRIDES RIPGREP_CONFIG_PATH""".split()
)


def _env_risk(name: str, value: str | None) -> str:
    """Why setting ``name=value`` changes what runs ("" when it does not)."""
    if name in _DANGEROUS_ENV or name in _ALWAYS_OPAQUE_ENV:
        return f"sets {name}, which changes what runs"
    if name.startswith(("GIT_CONFIG_", "LD_", "DYLD_")):
        return f"sets {name}, which changes what runs"
    if name in _PROGRAM_ENV or name in _CODE_PATH_ENV:
        if value is None:
            return f"sets {name} to a dynamic value, which changes what runs"
        parts = value.split(":") if name in _CODE_PATH_ENV else [value.split(" ", 1)[0]]
        outside = [p for p in parts if p and _outside_looking(p)]
        if outside:
            return f"sets {name} to {outside[0]}, code from outside the project"
        if name in _PROGRAM_ENV and value and not _program_value_ok(name, value):
            return f"sets {name} to {value.split(' ', 1)[0]}, which then runs in its place"
    if (name in _PROGRAM_ENV or name in _FLAG_VARIABLES) and value:
        why = _flags_risk(value.split())
        if why:
            return f"sets {name}: {why}"
    return ""


# Variables whose words a build passes to the compiler or linker (`make`'s implicit rules, cmake).
_FLAG_VARIABLES = frozenset(
    "CFLAGS CXXFLAGS CPPFLAGS LDFLAGS LDLIBS FFLAGS ASFLAGS TARGET_ARCH OBJCFLAGS CCFLAGS".split()
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
    format-patch bisect sparse-checkout""".split()
)
_GIT_NETWORK = frozenset(
    "clone fetch pull ls-remote send-email daemon instaweb request-pull svn p4 archive".split()
)


_DYNAMIC = "$dynamic"


@dataclass(eq=False)
class _Segment:
    """One simple command of a command line, classified, with the paths it reads and writes."""

    text: str
    program: str | None
    category: CommandCategory
    reason: str
    write_targets: list[str] = field(default_factory=list)
    read_targets: list[str] = field(default_factory=list)
    tool_targets: list[str] = field(default_factory=list)
    """The write targets ``_moved_targets`` added: where a build/test tool works."""
    weak_reads: list[str] = field(default_factory=list)
    """Bare words like ``shadow`` or ``credentials``: read targets only below a ``cd``'s
    directory (``cd /etc && cat shadow``), never as a search pattern or a message word."""
    bases: list[str] = field(default_factory=list)
    """Directories this segment's own relative targets are (also) relative to (``tar -C``)."""
    chdir: str | None = None
    """Where a ``cd``/``pushd`` moves the following segments (``$dynamic`` when unknown)."""
    hidden: bool = False
    """Carries targets only (a ``<`` redirect, an assignment): not a segment of the analysis."""
    scope: str | None = None
    """``push``/``pop`` around a subshell, ``and`` at a ``&&`` (hidden markers for ``cd``)."""


class _Word(NamedTuple):
    """An argument: its literal value, or None when it depends on an expansion. A read-only
    record, so a NamedTuple (cheaper to create than a dataclass: IMPL-BOOT-9, IMPL-BOOT-12)."""

    value: str | None
    node: Node | None = None


def _seg(text: str, program: str | None, cat: CommandCategory, reason: str) -> _Segment:
    return _Segment(text=text, program=program, category=cat, reason=reason)


class CommandRiskAnalyzer:
    """Classify shell command lines (SDD §9.2 ``CommandRiskAnalyzer.analyze``).

    One parser per analyzer, built at its first parse (tree-sitter is imported then, not at
    start-up: IMPL-BOOT-5); ``analyze`` is synchronous and pure.
    """

    def __init__(self) -> None:
        self._built: Parser | None = None

    @property
    def _parser(self) -> Parser:
        if self._built is None:
            import tree_sitter_bash
            from tree_sitter import Language, Parser

            self._built = Parser(Language(tree_sitter_bash.language()))
        return self._built

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
        from air.contracts.permission_records import CommandRiskAnalysis, CommandSegment

        found = self._segments(command, 0)
        segments = [s for s in found if not s.hidden]
        category = riskiest(s.category for s in segments)
        writes, reads = _resolve_targets(found, cwd)
        tools: list[str] = []
        if any(s.tool_targets for s in found):
            # resolved exactly like the writes (same cd / -C bookkeeping), nothing else kept
            only_tools = [
                replace(s, write_targets=list(s.tool_targets), read_targets=[], weak_reads=[])
                for s in found
            ]
            tools = [t for t in _resolve_targets(only_tools, cwd)[0] if t in writes]
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
            write_targets=writes,
            read_targets=reads,
            tool_targets=tools,
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
            for child in node.children:
                if child.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                    self._redirect(child, out, depth)
                else:
                    self._walk(child, out, depth)
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
        if kind in ("subshell", "command_substitution", "process_substitution"):
            # A `cd` inside does not move what follows the subshell.
            out.append(_scope("push"))
            for child in node.children:
                self._walk(child, out, depth)
            out.append(_scope("pop"))
            return
        if kind == "pipeline":
            for child in node.children:
                out.append(_scope("push"))
                self._walk(child, out, depth)
                out.append(_scope("pop"))
            return
        if kind == "list" and any(c.type == "&&" for c in node.children):
            # What follows `&&` runs only if what precedes succeeded: a `cd` there took effect.
            for child in node.children:
                if child.type == "&&":
                    out.append(_scope("and"))
                else:
                    self._walk(child, out, depth)
            return
        for child in node.children:
            self._walk(child, out, depth)

    def _assignment(self, node: Node, out: list[_Segment], depth: int) -> None:
        name_node = node.child_by_field_name("name")
        name = _text(name_node) if name_node is not None else ""
        value = node.child_by_field_name("value")
        risk = _env_risk(name, _literal(value) if value is not None else "")
        if risk:
            out.append(_seg(_text(node), None, C.OPAQUE, risk))
        if value is not None:
            reads = _read_candidates(_literal(value), _text(value))
            if reads:
                out.append(_hidden(_text(node), read_targets=reads))
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
            self._walk(node, out, depth)
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
        if op in ("<", "<>") and dest is not None:
            reads = _read_candidates(_literal(dest), _text(dest), always=True)
            if reads:
                out.append(_hidden(text, read_targets=reads))
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
                # An escaped program name ($'\x72m') is obfuscation: left dynamic (opaque).
                name = None if inner.type == "ansi_c_string" else _literal(inner)
                words.append(_Word(name, inner))
                continue
            if child.type in ("comment",):
                continue
            self._walk_substitutions(child, out, depth)
            words.append(_Word(_literal(child), child))
        if not words:
            return
        segs = self._argv(text, [_argv_value(w) for w in words], depth)
        reads: list[str] = []
        for word in words[1:]:
            for target in _read_candidates(word.value, _text(word.node)):
                if target not in reads:
                    reads.append(target)
        if _recursive_reader([w.value for w in words]):
            # `tar czf x ~`, `grep -r key /`: a directory read whole includes what is below it.
            reads.extend([t.rstrip("/") + "/**" for t in reads if not t.isalpha()])
        bases = [b for seg in segs for b in seg.bases]
        for seg in segs:
            seg.bases = list(bases)
        if segs:
            segs[0].read_targets.extend(r for r in reads if not r.isalpha())
            segs[0].weak_reads.extend(r for r in reads if r.isalpha())
            if words[0].value in ("cd", "pushd", "chdir"):
                dest = words[1].value if len(words) > 1 else "~"
                segs[0].chdir = _DYNAMIC if dest in (None, "-") else dest
        out.extend(segs)

    # -- classification of one argv -------------------------------------------------------

    def _argv(self, text: str, argv: Sequence[str | None], depth: int) -> list[_Segment]:
        if not argv:
            return []
        if depth > _MAX_DEPTH:
            return [_seg(text, None, C.OPAQUE, "wrapped commands nested too deep")]
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
            elif raw.startswith("~"):
                return [_seg(text, raw, C.OPAQUE, f"runs a program from a home directory: {raw}")]
            else:
                if _table_category(base) is None:
                    return [_seg(text, raw, C.BUILD_TEST, "runs a script of the workspace")]
                # `./ls`, `./bash -c x`: the workspace's own file runs, whatever its name: it
                # is workspace code (at least build_test), and the name's own reading counts too.
                own = _seg(text, raw, C.BUILD_TEST, f"runs the workspace program {raw}")
                return [own, *self._program(text, base, list(argv[1:]), depth)]
        args = list(argv[1:])
        return self._program(text, program, args, depth)

    def _program(self, text: str, prog: str, args: list[str | None], depth: int) -> list[_Segment]:
        segs = self._program_segments(text, prog, args, depth)
        if segs:
            _moved_targets(segs[0], prog, args)
        return segs

    def _program_segments(
        self, text: str, prog: str, args: list[str | None], depth: int
    ) -> list[_Segment]:
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
            if prog == "tee" and not seg.write_targets:
                return [_seg(text, prog, C.READ_ONLY, "tee copies to standard output only")]
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


_OPTION_PREFIX = re.compile(r"""^["']?(-[^$`"'\\]+)["']?[$`"]""")


def _argv_value(word: _Word) -> str | None:
    """The word as a program sees it: a dynamic word with a literal option prefix
    (``--pre=$X``, ``-o"$OUT"``, ``-j$(nproc)``) is that option with a ``$dynamic`` value, so the
    program's option tables still see the option; any other dynamic word stays None."""
    if word.value is not None or word.node is None:
        return word.value
    m = _OPTION_PREFIX.match(_text(word.node))
    return m.group(1) + _DYNAMIC if m else None


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", errors="replace")


_ANSI_C = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|c.|.)")
_ANSI_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b"}
_ANSI_SIMPLE.update({"f": "\f", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"})


def _ansi_c(body: str) -> str | None:
    """Decode a bash ``$'...'`` string (None for escapes it cannot decode faithfully)."""

    def one(m: re.Match[str]) -> str:
        esc = m.group(1)
        if esc[0] in "xuU":
            return chr(int(esc[1:], 16))
        if esc[0] in "01234567":
            return chr(int(esc, 8) & 0xFF)
        if esc[0] == "c":
            return chr(ord(esc[1].upper()) ^ 0x40)
        return _ANSI_SIMPLE.get(esc, "\\" + esc)

    try:
        decoded = _ANSI_C.sub(one, body)
    except (ValueError, OverflowError):
        return None
    # bash ends the word at a NUL: `cat $'/etc/shadow\x00x'` reads /etc/shadow.
    return decoded.split("\x00", 1)[0]


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
    if kind == "ansi_c_string":
        return _ansi_c(_text(node)[2:-1])
    if kind == "string":
        parts = []
        for child in node.children:
            if child.type == '"':
                continue
            if child.type == "string_content":
                # Inside double quotes a backslash only escapes $ ` " \ and a newline.
                parts.append(re.sub(r"\\([$`\"\\\n])", r"\1", _text(child)))
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
    if prog in SHELLS or prog in INTERPRETERS or prog in MULTICALL:
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


def _options_before_dashdash(args: Sequence[str | None]) -> list[str | None]:
    return list(args[: args.index("--")]) if "--" in args else list(args)


def _write_targets(prog: str, args: Sequence[str | None]) -> list[str]:
    pos = _positional(args)
    if prog == "ln" and any(
        a is not None
        and (a == "--symbolic" or (a.startswith("-") and not a.startswith("--") and "s" in a))
        for a in _options_before_dashdash(args)
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


_ALWAYS_RECURSIVE = frozenset(
    "tar zip 7z 7za rar cpio rsync rg ag ack find fd fdfind borg restic duplicity".split()
)
_RECURSIVE_WHEN_FLAGGED = frozenset("cp scp grep egrep fgrep zgrep chmod chown diff".split())


def _recursive_reader(argv: Sequence[str | None]) -> bool:
    """Whether the command reads whole directory trees (through wrappers and busybox)."""
    for i, word in enumerate(argv):
        if word is None:
            continue
        name = word.rsplit("/", 1)[-1]
        if name in _ALWAYS_RECURSIVE:
            return True
        if name in _RECURSIVE_WHEN_FLAGGED:
            return any(
                a is not None
                and (
                    a in ("--recursive", "--archive", "--dereference-recursive")
                    or (a.startswith("-") and not a.startswith("--") and any(c in a for c in "rRa"))
                )
                for a in argv[i + 1 :]
            )
    return False


def _scope(kind: str) -> _Segment:
    return _Segment(text="", program=None, category=C.READ_ONLY, reason="", hidden=True, scope=kind)


def _hidden(text: str, *, read_targets: list[str]) -> _Segment:
    return _Segment(
        text=text,
        program=None,
        category=C.READ_ONLY,
        reason="",
        read_targets=read_targets,
        hidden=True,
    )


_EXPANSION = re.compile(r"\$\{[^}]*\}|\$\([^)]*\)|\$[A-Za-z_][A-Za-z0-9_]*|\$.|`[^`]*`")
_HOME_PREFIX = re.compile(r"^(?:\$HOME|\$\{HOME\})(?=/|$)")
_BRACE = re.compile(r"\{([^{}]*,[^{}]*)\}")
_PLACEHOLDER = "/_dynamic_"
_CODE_CHARS = re.compile(r"[\s'\"();`|&<>]")
_TOKEN_SPLIT = re.compile(r"[\s'\"(),;:=<>|&`\[\]]+")


def _braces(word: str, limit: int = 16) -> list[str]:
    """Expand ``{a,b}`` groups (bash brace expansion) into at most ``limit`` words."""
    out = [word]
    for _ in range(4):
        nxt: list[str] = []
        changed = False
        for w in out:
            m = _BRACE.search(w)
            if m is None:
                nxt.append(w)
                continue
            changed = True
            nxt.extend(w[: m.start()] + alt + w[m.end() :] for alt in m.group(1).split(","))
        out = nxt[:limit]
        if not changed:
            break
    return out


_FILE_NAME = re.compile(r"[\w.@+,-]*[\w-]\.[A-Za-z0-9_]{1,12}")


def _pathish(value: str) -> bool:
    """A path (``/``, ``~``), a credential name, or a file name with an extension.

    Bare ``name.ext`` words are checked too: a workspace link ``notes.txt -> ~/.ssh/id_rsa``
    planted by a script is a credential once the engine resolves it.
    """
    return (
        "/" in value
        or value.startswith("~")
        or names_credentials(value)
        or _FILE_NAME.fullmatch(value) is not None
    )


def _read_candidates(value: str | None, raw: str, *, always: bool = False) -> list[str]:
    """The paths an argument may name, for the engine's read check (credentials).

    Option values (``--file=x``, ``-f/x``) and ``key=value`` operands count; ``$HOME`` becomes
    ``~``; any other expansion becomes ``/_dynamic_`` so ``$X/.ssh/id_rsa`` is still seen to
    name an SSH key. Words that do not look like paths are skipped (no I/O is spent on them).
    """
    if value is None:
        text = _HOME_PREFIX.sub("~", re.sub(r"[\"'\\]", "", raw))
        if "$" in text or "`" in text:
            # What is left of a `$` or a backquote is literal (`"$H"/.ssh/key'$'`).
            text = _EXPANSION.sub(_PLACEHOLDER, text)
            if not text.startswith(("/", "~")):
                text = "/" + text
            if text.replace(_PLACEHOLDER, "").strip("/") == "":
                return []
        value = text
    if not always:
        if value.startswith("-"):
            if "=" in value and value.startswith("--"):
                value = value.split("=", 1)[1]
            elif len(value) > 2 and value[1] != "-" and value[2] in "/~":
                value = value[2:]
            else:
                return []
        elif "=" in value and not value.startswith(("/", "~", ".")):
            value = value.split("=", 1)[1]
    if not value or "\x00" in value:
        return []
    if value.startswith("@") and not always:  # curl -d @file, @response-file arguments
        value = value[1:]
    if not always and _CODE_CHARS.search(value):
        # Inline code or a message (`python -c "open('~/.netrc')"`): check the path-like
        # tokens inside it.
        return [t for t in _TOKEN_SPLIT.split(value) if t and _pathish(t)][:16]
    words = _braces(value) if "{" in value else [value]
    return [w for w in words if always or _pathish(w)]


def _resolve_targets(found: list[_Segment], cwd: str | None) -> tuple[list[str], list[str]]:
    """Resolve relative targets against every directory the shell may be in at that point.

    A ``cd``/``pushd`` adds its directory to the possible ones (it may fail, so the old ones
    stay); after a ``&&`` it took effect and replaces them; a subshell, a substitution or a
    pipeline element does not move what follows it. ``bases`` (``tar -C``, ``env -C``) move one
    segment's own targets. A relative write after a dynamic ``cd`` could land anywhere: it adds
    ``$dynamic``.
    """
    writes: list[str] = []
    reads: list[str] = []
    possible: list[str | None] = [cwd]
    pending: list[str | None] | None = None
    dynamic_cd = False
    stack: list[tuple[list[str | None], list[str | None] | None, bool]] = []

    def add(out: list[str], target: str) -> None:
        if target not in out:
            out.append(target)

    def place(base: str | None, rel: str) -> str:
        if rel.startswith(("/", "~")) or base is None:
            return rel
        return os.path.join(base, rel)

    for seg in found:
        if seg.scope == "push":
            stack.append((list(possible), pending, dynamic_cd))
            pending = None
            continue
        if seg.scope == "pop":
            if stack:
                possible, pending, dynamic_cd = stack.pop()
            continue
        if seg.scope == "and":
            if pending is not None:
                possible, pending = pending, None
            continue
        own = [place(p, b) for b in seg.bases if b != _DYNAMIC for p in possible]
        dynamic = dynamic_cd or _DYNAMIC in seg.bases
        moved_bases = [*(p for p in possible if p != cwd), *own]
        for target in seg.weak_reads:
            for base in moved_bases:
                add(reads, place(base, target))
        for targets, out, is_write in (
            (seg.write_targets, writes, True),
            (seg.read_targets, reads, False),
        ):
            for target in targets:
                if target == _CWD:  # only where a `cd` moved it: the start is the workspace's
                    for base in (*possible, *own):
                        if base is not None and base != cwd:
                            add(out, base)
                    if dynamic:
                        add(out, _DYNAMIC)
                    continue
                if target == _DYNAMIC or target.startswith(("/", "~")):
                    add(out, target)
                    continue
                for base in (*possible, *own):
                    add(out, place(base, target))
                if is_write and dynamic:
                    add(out, _DYNAMIC)
        if seg.chdir is not None:
            if seg.chdir == _DYNAMIC:
                dynamic_cd = True
            else:
                moved: list[str | None] = [place(p, seg.chdir) for p in possible]
                pending = moved
                possible = [*possible, *(m for m in moved if m not in possible)]
    return writes, reads


def _outside_looking(value: str) -> bool:
    """Lexically leaves the project: absolute, under a home, or through ``..``."""
    return value.startswith(("/", "~")) or ".." in value.split("/")


# Options that move a tool's work, input or output to another directory or file. Their values
# become write targets: the engine then checks them like any write (outside the project asks,
# credentials and .git ask as sensitive, a symlink leading out is denied).
_MOVED_OPTIONS: dict[str, tuple[str, ...]] = {
    "make": ("-C", "--directory", "-f", "--file", "--makefile", "-o", "--old-file"),
    "ninja": ("-C", "-f"),
    "cmake": ("-S", "-B", "--build", "--install", "-P", "-C", "--toolchain", "--install-prefix"),
    "ctest": ("--test-dir", "-S", "--build-dir", "-O", "--output-log"),
    "meson": ("-C", "--prefix"),
    "npm": ("--prefix", "-C", "--cache", "--userconfig", "--globalconfig"),
    "pnpm": ("-C", "--dir", "--store-dir", "--config-dir"),
    "yarn": ("--cwd", "--modules-folder", "--cache-folder"),
    "go": ("-C", "-o", "-modfile", "-overlay"),
    "cargo": ("--manifest-path", "--target-dir", "--out-dir", "--artifact-dir", "-C"),
    "pytest": (
        "--rootdir",
        "-c",
        "--config-file",
        "--confcutdir",
        "--junitxml",
        "--junit-xml",
        "--cov-config",
    ),
    "tox": ("-c", "--conf", "--workdir", "--root"),
    "nox": ("-f", "--noxfile", "--envdir"),
    "pip": ("--target", "-t", "--prefix", "--root", "--src", "-e", "--editable", "--cache-dir"),
    "gcc": ("-o", "-MF", "-MJ"),
    "mvn": ("-f", "--file", "-s", "--settings", "-gs", "--global-settings"),
    "gradle": ("-b", "--build-file", "-p", "--project-dir", "-c", "--settings-file", "-I"),
    "pre-commit": ("-c", "--config"),
    "mypy": ("--config-file", "--cache-dir"),
    "ruff": ("--config", "--cache-dir"),
    "coverage": ("--rcfile", "--data-file", "-o"),
    "rsync": ("--files-from", "--exclude-from"),
    "sphinx-build": ("-c", "-d"),
    "bazel": ("--output_base", "--output_user_root", "--bazelrc"),
    "dotnet": ("--project", "-o", "--output"),
    "deno": ("--config", "-c", "--import-map"),
}
for _alias, _of in (
    ("gmake", "make"),
    ("py.test", "pytest"),
    ("pip3", "pip"),
    ("g++", "gcc"),
    ("cc", "gcc"),
    ("c++", "gcc"),
    ("clang", "gcc"),
    ("clang++", "gcc"),
    ("gradlew", "gradle"),
    ("bazelisk", "bazel"),
):
    _MOVED_OPTIONS[_alias] = _MOVED_OPTIONS[_of]


# Compilers and checkers only read their operands (`gcc -I /usr/include x.c`); their outputs
# are options of `_MOVED_OPTIONS` (`-o`).
_INPUT_ONLY_TOOLS = frozenset(
    """gcc g++ cc c++ clang clang++ ld as ar ranlib cppcheck mypy pylint flake8 pyright
    shellcheck bandit pydocstyle luacheck nm objdump readelf size addr2line gcov""".split()
)


def _option_values(args: Sequence[str | None], options: Iterable[str]) -> list[str]:
    """Values of ``options`` in ``args``: ``-C dir``, ``-Cdir``, ``--directory=dir``."""
    wanted = set(options)
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg is None:
            continue
        if arg == "--":
            break
        if arg in wanted:
            if i < len(args):
                value = args[i]
                out.append(value if value is not None else _DYNAMIC)
                i += 1
            continue
        if arg.startswith("--") and "=" in arg and arg.split("=", 1)[0] in wanted:
            out.append(arg.split("=", 1)[1])
        elif not arg.startswith("--") and len(arg) > 2 and arg[:2] in wanted:
            out.append(arg[2:])
    return [v for v in out if v and v not in _NULL_TARGETS]


# Tools that load code or configuration from the directory they run in (a Makefile, conftest.py,
# tox.ini): after a `cd` elsewhere that directory is a target like `make -C` (`cd /tmp/x && make`).
_CWD_CODE_TOOLS = frozenset("make gmake ninja cmake ctest pytest py.test tox nox meson".split())
_CWD = "$cwd"


def _moved_targets(seg: _Segment, prog: str, args: Sequence[str | None]) -> None:
    """Add the directories and files a tool is moved to, and what it is given outside the project.

    Build/test and install tools write where they run (caches, build trees, outputs) and run
    what they are given, so each option of ``_MOVED_OPTIONS`` and every literal operand that
    lexically leaves the project (``/x``, ``~/x``, ``../x``, ``--opt=/x``, ``DESTDIR=/x``) is
    a write target. Interpreters and shells are judged on their script instead.
    """
    options = _MOVED_OPTIONS.get(prog)
    found: list[str] = _option_values(args, options) if options else []
    if prog in _CWD_CODE_TOOLS and seg.category == C.BUILD_TEST:
        found.append(_CWD)  # its makefile / conftest.py / tox.ini are read where it runs
    if seg.category in (C.BUILD_TEST, C.PACKAGE_INSTALL) and not (
        prog in INTERPRETERS
        or prog in SHELLS
        or prog.startswith(("python", "pypy"))
        or prog in _INPUT_ONLY_TOOLS
    ):
        for arg in args:
            if arg is None:
                continue
            value = arg
            if arg.startswith("--") and "=" in arg:
                value = arg.split("=", 1)[1]
            elif arg.startswith("-"):
                continue
            elif "=" in arg and not arg.startswith(("/", "~", ".")):
                value = arg.split("=", 1)[1]
            if value and _outside_looking(value) and value not in _NULL_TARGETS:
                found.append(value)
    for value in found:
        if value not in seg.write_targets:
            seg.write_targets.append(value)
        if value not in seg.tool_targets:
            seg.tool_targets.append(value)


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


def _h_env(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    """``env [OPTION]... [NAME=VALUE]... [COMMAND]``: the command is classified; ``-S STRING``
    is split as env splits it and read again (a string with ``$`` or ``\\`` is opaque)."""
    if depth > _MAX_DEPTH:
        return [_seg(text, prog, C.OPAQUE, "wrapped commands nested too deep")]
    rest = list(args)
    out: list[_Segment] = []
    bases: list[str] = []
    assigned = False
    while rest:
        head = rest[0]
        if head is None:
            return [_seg(text, prog, C.OPAQUE, "env with a dynamic argument")]
        if head.startswith("-") and head != "-" and not assigned:  # options end at NAME=VALUE
            rest.pop(0)
            if head == "--":
                continue
            for name, value in _env_options(head, rest):
                if name in ("-S", "--split-string"):
                    if value is None or "$" in value or "\\" in value:
                        return [_seg(text, prog, C.OPAQUE, "env -S splits a dynamic string")]
                    import shlex  # only here: env -S is rare

                    try:
                        words: list[str | None] = list(shlex.split(value))
                    except ValueError:
                        return [_seg(text, prog, C.OPAQUE, "env -S string does not split")]
                    segs = _h_env(a, text, prog, [*words, *rest], depth + 1)
                    segs[0].bases.extend(bases)
                    return segs
                if name in ("-C", "--chdir"):
                    bases.append(value if value is not None else _DYNAMIC)
            continue
        if head == "-":
            rest.pop(0)
            continue
        if "=" in head:
            assigned = True
            name, value = head.split("=", 1)
            risk = _env_risk(name, value)
            if risk:
                out.append(_seg(text, prog, C.OPAQUE, risk))
            rest.pop(0)
            continue
        break
    if not rest:
        return [*out, _seg(text, prog, C.READ_ONLY, "prints the environment")]
    segs = [*out, *a._inner(text, rest, depth, C.READ_ONLY, prog, "env wrapper")]
    segs[0].bases.extend(bases)
    return segs


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
        "time": ("-f", "-o"),
        "flock": ("-w", "-E"),
    }.get(prog, ())  # the other wrappers' options take no value
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
            if opt.startswith("--"):
                if opt in ("--login", "--noprofile", "--norc", "--posix", "--noediting"):
                    continue
                return [_seg(text, prog, C.OPAQUE, f"{prog} {opt}")]
            if "c" in opt:  # a cluster of short options: `-ec`, `-xc`
                return a._shell_string(text, prog, rest[0] if rest else None, depth)
            if "s" in opt or "i" in opt:
                return [_seg(text, prog, C.OPAQUE, f"{prog} reads commands from stdin")]
            if "o" in opt and rest:
                rest.pop(0)
            continue
        break
    if not rest or rest[0] == "-":
        return [_seg(text, prog, C.OPAQUE, f"{prog} reads commands from stdin")]
    script = rest[0]
    if script is None or _outside_looking(script):
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


_CODE_LOADING = frozenset(
    """-r --require --import --loader --experimental-loader -I -M --preload --env-file
    --experimental-config-file""".split()
)


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
            if module in ("pytest", "py.test"):
                found = _h_pytest(a, text, "pytest", rest[2:], depth)
                found[0].program = prog
                if found[0].category == C.BUILD_TEST:
                    found[0].reason = f"python -m {module}"
                _moved_targets(found[0], "pytest", rest[2:])
                return found
            if module == "timeit" and len(rest) > 2:
                return [_seg(text, prog, C.OPAQUE, "python -m timeit runs the code it is given")]
            if module in ("cProfile", "profile"):
                return _h_profiler(a, text, prog, rest[2:], depth)
            cat = _PY_MODULES.get(module)
            if cat is None:
                return [_seg(text, prog, C.OPAQUE, f"python -m {module} is not a known module")]
            seg = _seg(text, prog, cat, f"python -m {module}")
            module_args = rest[2:]
            if module == "venv":
                seg.write_targets.extend(p or _DYNAMIC for p in _positional(module_args))
            elif module == "json.tool" and len(_positional(module_args)) >= 2:
                seg.category = C.FILE_MUTATION
                seg.write_targets.append(_positional(module_args)[1] or _DYNAMIC)
            _moved_targets(seg, module, module_args)
            return [seg]
        if opt in ("-", "-i"):
            return [_seg(text, prog, C.OPAQUE, f"{prog} reads code from stdin")]
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
            if loaded is None or (loaded and _outside_looking(loaded)):
                return [_seg(text, prog, C.OPAQUE, f"{prog} {opt} loads code from outside")]
            continue
        break
    if not rest:
        return [_seg(text, prog, C.OPAQUE, f"{prog} reads code from stdin")]
    script = rest[0]
    if script is None or script.startswith(("/", "~")) or ".." in script.split("/"):
        return [_seg(text, prog, C.OPAQUE, f"{prog} runs a script outside the workspace")]
    return [_seg(text, prog, C.BUILD_TEST, f"{prog} runs the workspace script {script}")]


def _h_profiler(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    """``python -m cProfile [-o FILE] [-s KEY] (-m MODULE | SCRIPT) ...`` is ``python`` running
    that module or script; ``-o FILE`` is written."""
    rest = list(args)
    writes: list[str] = []
    while len(rest) >= 2 and rest[0] in ("-o", "-s"):
        if rest[0] == "-o":
            writes.append(rest[1] or _DYNAMIC)
        rest = rest[2:]
    if depth > _MAX_DEPTH:
        return [_seg(text, prog, C.OPAQUE, "wrapped commands nested too deep")]
    segs = _h_interpreter(a, text, prog, rest, depth + 1)
    if writes:
        seg = _seg(text, prog, C.FILE_MUTATION, f"the profiler writes {writes[0]}")
        seg.write_targets.extend(writes)
        segs.append(seg)
    return segs


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
    sub, rest = _first_sub(args)
    if sub == "config":
        # `pip config set` writes the user's (or with --global the system's) pip.conf.
        where = "/etc/pip.conf" if "--global" in args else _DYNAMIC if "--site" in args else None
        return _config_command(text, prog, rest, where or "~/.config/pip/pip.conf")
    if sub in (
        "list",
        "show",
        "freeze",
        "check",
        "help",
        "",
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


def _config_command(text: str, prog: str, rest: list[str | None], where: str) -> list[_Segment]:
    """``pip config``/``npm config``: reading it is read_only; setting it writes ``where``."""
    action = next((x for x in rest if x is None or not x.startswith("-")), "")
    if action is None:
        return [_seg(text, prog, C.OPAQUE, f"{prog} config with a dynamic action")]
    if action in ("", "list", "ls", "get", "debug"):
        return [_seg(text, prog, C.READ_ONLY, f"{prog} config {action}".rstrip())]
    if action == "edit":
        return [_seg(text, prog, C.OPAQUE, f"{prog} config edit runs an editor")]
    what = "its configuration" if where == _DYNAMIC else where
    seg = _seg(text, prog, C.FILE_MUTATION, f"{prog} config {action} writes {what}")
    seg.write_targets.append(where)
    return [seg]


def _h_js_pm(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    sub, rest = _first_sub(
        args, ("--prefix", "-C", "--dir", "--cwd", "--filter", "-F", "--workspace", "-w")
    )
    if prog in ("npx", "pnpx", "bunx"):
        return [_seg(text, prog, C.PACKAGE_INSTALL, f"{prog} fetches and runs a package")]
    if sub in ("config", "c"):
        # npm writes ~/.npmrc (the global or project one with -g/--location); the others
        # keep theirs in places that depend on the version: an unknown target.
        glob = any(x in ("-g", "--global") or str(x).startswith("--location") for x in args)
        where = "~/.npmrc" if prog == "npm" and not glob else _DYNAMIC
        return _config_command(text, prog, rest, where)
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
        "help",
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
    if sub in ("show", "tree", "version", "check", "env", ""):
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
        starts.append(start or _DYNAMIC)
        i += 1
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
            out[-1].write_targets.extend(starts or ["."])
        elif arg in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            out.append(_seg(text, prog, C.FILE_MUTATION, f"find {arg} writes a file"))
            if i + 1 < len(args):
                out[-1].write_targets.append(args[i + 1] or "$dynamic")
        i += 1
    return out


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
                    "--rsh-command",
                    "--rmt-command",
                )
            )
            for f in long_flags
        )
        or "-I" in args
        or "-F" in args
    ):
        return [_seg(text, prog, C.OPAQUE, "tar runs an external program")]
    bases = _option_values(args, ("-C", "--directory"))
    if "t" in flags or "--list" in long_flags:
        return [_seg(text, prog, C.READ_ONLY, "tar lists an archive")]
    if "x" in flags or "--extract" in long_flags or "--get" in long_flags:
        seg = _seg(text, prog, C.FILE_MUTATION, "tar extracts files")
        seg.write_targets.extend(bases)
        if not seg.write_targets:
            seg.write_targets.append(".")
        return [seg]
    seg = _seg(text, prog, C.FILE_MUTATION, "tar writes an archive")
    seg.bases.extend(bases)
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
    outputs = (
        ("-O", "--output-document", "-P", "--directory-prefix", "-o", "--output-file", "-a")
        if prog == "wget"
        else ("-o", "--output", "--output-dir", "-c", "--cookie-jar", "-D", "--dump-header")
    )
    seg.write_targets.extend(_option_values(args, outputs))
    return [seg]


def _git_config_key_safe(key: str) -> bool:
    return key.startswith(_SAFE_GIT_CONFIG_KEYS)


def _h_git(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    moved: list[str] = []
    segs = _git_segments(text, prog, args, moved)
    # `git -C dir` works (and writes its index, objects, hooks' effects) in `dir`.
    for target in moved:
        if target not in segs[0].write_targets:
            segs[0].write_targets.append(target)
    return segs


def _git_segments(text: str, prog: str, args: list[str | None], moved: list[str]) -> list[_Segment]:
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
        if opt == "--exec-path":
            return [
                _seg(text, prog, C.READ_ONLY, "git --exec-path prints where git's programs are")
            ]
        if opt in (
            "--work-tree",
            "--git-dir",
            "--exec-path",
            "--namespace",
            "--super-prefix",
        ) or opt.startswith(("--work-tree=", "--git-dir=", "--exec-path=", "--namespace=")):
            return [_seg(text, prog, C.OPAQUE, f"git {opt} points git elsewhere")]
        if opt == "-C":
            moved.append(rest[1] if len(rest) > 1 and rest[1] is not None else _DYNAMIC)
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
        seg = _seg(text, prog, cat, why)
        seg.write_targets.extend(outputs)
        return [seg]

    # Files and directories git writes besides the repository: `--output`, `format-patch -o`,
    # `init DIR`, `worktree add DIR`, `clone URL DIR`, `apply --directory`.
    outputs = _option_values(sargs, ("--output", "--output-directory", "--directory"))
    if sub == "format-patch":
        outputs.extend(_option_values(sargs, ("-o",)))
    operands = _positional(sargs)
    where = None
    if sub == "init" and operands:
        where = (operands[-1],)
    elif sub == "clone" and len(operands) >= 2:
        where = (operands[1],)
    elif sub == "worktree" and operands[:1] == ["add"] and len(operands) >= 2:
        where = (operands[1],)
    if where is not None:
        outputs.append(where[0] if where[0] is not None else _DYNAMIC)
    if sub in ("mergetool", "difftool", "citool", "gui", "gitk"):
        return g(C.OPAQUE, f"git {sub} runs an external tool")
    if sub == "apply" and "--unsafe-paths" in flags:
        return g(C.OPAQUE, "git apply --unsafe-paths writes outside the work tree")
    runs_remote: tuple[str, ...] = ("--upload-pack", "--receive-pack", "--exec")
    if sub in ("clone", "ls-remote"):
        runs_remote = (*runs_remote, "-u")
    if sub in ("fetch", "pull", "clone", "push", "ls-remote", "archive", "remote") and any(
        x is not None and x.startswith(runs_remote) for x in sargs
    ):
        return g(C.OPAQUE, f"git {sub} runs a given program for the remote side")

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
    if "--ext-diff" in flags:
        return g(C.OPAQUE, f"git {sub} --ext-diff runs an external diff program")
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


def _h_multicall(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    """``busybox X ...`` / ``toybox X ...`` run the applet X: classify as X."""
    if not args:
        return [_seg(text, prog, C.READ_ONLY, f"{prog} lists its applets")]
    applet = args[0]
    if applet is None:
        return [_seg(text, prog, C.OPAQUE, f"{prog} runs a dynamic applet")]
    if applet.startswith("-"):
        if applet in ("--list", "--list-full", "--help", "--version"):
            return [_seg(text, prog, C.READ_ONLY, f"{prog} {applet}")]
        return [_seg(text, prog, C.OPAQUE, f"{prog} {applet}")]
    known = (
        applet in _HANDLERS
        or _table_category(applet) is not None
        or applet.startswith(("mkfs", "fsck."))
    )
    if "/" in applet or not known:
        return [_seg(text, prog, C.OPAQUE, f"{prog} applet {applet!r} is not known")]
    return a._argv(text, args, depth + 1)


def _h_background(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    return [_seg(text, prog, C.PROCESS_CONTROL, f"{prog} controls processes")]


def _h_systemctl(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    sub, _ = _first_sub(args)
    if sub in ("status", "list-units", "is-active", "show", "list-unit-files", "cat"):
        return [_seg(text, prog, C.READ_ONLY, f"{prog} {sub}")]
    return [_seg(text, prog, C.PRIVILEGED, f"{prog} {sub} changes system services")]


_DPKG_QUERIES = frozenset(
    "-l --list -L --listfiles -s --status -S --search -p --print-avail --version --help".split()
)


def _h_apt(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    sub, _ = _first_sub(args)
    if prog == "dpkg":
        # dpkg's action is an option (`dpkg -l`, `dpkg -r pkg`); a query asks nothing else.
        actions = [x for x in args if x is None or x.startswith("-")]
        sub = actions[0] if actions else ""
        if actions and all(x in _DPKG_QUERIES for x in actions):
            return [_seg(text, prog, C.READ_ONLY, f"dpkg {sub}")]
    if sub in ("list", "show", "search", "policy", "depends", "rdepends", "showpkg"):
        return [_seg(text, prog, C.READ_ONLY, f"{prog} {sub}")]
    if sub in ("remove", "purge", "autoremove", "-r", "--remove", "-P", "--purge", "erase"):
        return [_seg(text, prog, C.PRIVILEGED, f"{prog} {sub} removes system packages")]
    return [_seg(text, prog, C.PRIVILEGED, f"{prog} {sub} changes system packages")]


# Read-only programs that write a file when given an option or a second operand.
_OUTPUT_OPTIONS: dict[str, tuple[str, ...]] = {
    "sort": ("-o", "--output"),
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
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    targets = _option_values(args, _OUTPUT_OPTIONS[prog])
    pos = _positional(args)
    if prog in ("uniq", "xxd") and len(pos) >= 2:
        targets.append(pos[1] if pos[1] is not None else _DYNAMIC)
    if prog == "yq" and any(x in ("-i", "--inplace") for x in args):
        targets.extend(p if p is not None else _DYNAMIC for p in pos[1:])
    if prog == "file" and "-C" in args:
        targets.append(".")
    if not targets:
        return [_seg(text, prog, C.READ_ONLY, f"{prog} is read_only")]
    seg = _seg(text, prog, C.FILE_MUTATION, f"{prog} writes {targets[0]}")
    seg.write_targets.extend(targets)
    return [seg]


def _h_date(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    if prog == "hostname":
        setting = [x for x in _positional(args) if x != ""] or any(
            x is not None and x.startswith(("-F", "--file", "-b", "--boot")) for x in args
        )
        if setting:
            return [_seg(text, prog, C.PRIVILEGED, "hostname sets the host name")]
        return [_seg(text, prog, C.READ_ONLY, "hostname prints the host name")]
    if any(x is not None and x.startswith(("-s", "--set")) for x in args):
        return [_seg(text, prog, C.PRIVILEGED, "date --set changes the system clock")]
    return [_seg(text, prog, C.READ_ONLY, f"{prog} prints the date")]


def _h_pager_user(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    """``man -P cmd``, ``bat --pager cmd``, ``less +cmd`` (a ``!`` runs a shell): programs."""
    for x in args:
        if x is None:
            continue
        if prog in ("less", "more") and (x.startswith("+") or x.startswith("--init")):
            return [_seg(text, prog, C.OPAQUE, f"{prog} {x} runs pager commands")]
        if x in ("-P", "--pager", "-H", "--html", "--preprocessor", "-p") or x.startswith(
            ("--pager=", "-P", "--html=", "--preprocessor=")
        ):
            if prog == "man" or x.startswith("--pager"):
                return [_seg(text, prog, C.OPAQUE, f"{prog} {x} runs a program")]
    return [_seg(text, prog, C.READ_ONLY, f"{prog} is read_only")]


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
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    floor, valued, skip = _RUNNERS[prog]
    rest = _skip_opts(list(args), valued)
    if prog == "perf" and rest and rest[0] not in ("stat", "record", "trace", "top"):
        return [_seg(text, prog, floor, f"perf {rest[0]}")]
    if prog in ("sg",) and rest and rest[0] is not None and len(rest) > 1:
        return a._shell_string(text, prog, rest[1], depth)
    rest = rest[skip:]
    if prog == "perf":
        rest = _skip_opts(rest, valued)
    outputs = _option_values(args, ("-o", "--output", "--log-file"))
    segs = a._inner(text, rest, depth, floor, prog, f"{prog} runs a command")
    segs[0].write_targets.extend(outputs)
    return segs


def _h_zip(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    if any(x is None or x.startswith(("-TT", "--unzip-command")) for x in args):
        return [_seg(text, prog, C.OPAQUE, "zip -TT runs a given test command")]
    seg = _seg(text, prog, C.FILE_MUTATION, f"{prog} is file_mutation")
    seg.write_targets.extend(_write_targets(prog, args))
    return [seg]


def _h_bundle(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    sub, rest = _first_sub(args, ("--gemfile",))
    if sub == "exec":
        return a._inner(text, rest, depth, C.BUILD_TEST, prog, "bundle exec runs a command")
    if sub in ("install", "update", "add", "lock", "i"):
        return [_seg(text, prog, C.PACKAGE_INSTALL, f"bundle {sub}")]
    if sub in ("list", "show", "info", "check", "outdated", "version", ""):
        return [_seg(text, prog, C.READ_ONLY, f"bundle {sub}")]
    return [_seg(text, prog, C.OPAQUE, f"bundle {sub}")]


def _h_gdb(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    scripted = ("-ex", "-iex", "--eval-command", "-x", "--command", "-ix", "--init-command")
    for x in args:
        if x is None or x in scripted or x.startswith(tuple(f"{o}=" for o in scripted)):
            return [_seg(text, prog, C.OPAQUE, f"{prog} runs debugger commands (shell too)")]
        if x in ("-batch", "--batch", "-o", "--source"):
            return [_seg(text, prog, C.OPAQUE, f"{prog} {x} runs a command file")]
    if "--args" in args:
        inner = list(args[args.index("--args") + 1 :])
        return a._inner(text, inner, depth, C.BUILD_TEST, prog, f"{prog} debugs a command")
    return [_seg(text, prog, C.BUILD_TEST, f"{prog} debugs a program")]


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
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    """``hyperfine 'cmd'...``, ``script -c cmd``, ``watch cmd``: operands are shell commands."""
    command_options, valued, outputs = _SHELL_STRINGS[prog]
    if prog == "watch":
        first = _seg(text, prog, C.PROCESS_CONTROL, "watch runs a command repeatedly")
    else:
        first = _seg(text, prog, C.BUILD_TEST, f"{prog} runs commands")
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
    logs = [v for v in _option_values(args, outputs) if v not in ("null", "pipe", "inherit")]
    first.write_targets.extend(logs)
    scripts = ordered
    if prog == "script":
        if not commands:
            return [_seg(text, prog, C.OPAQUE, "script records an interactive shell")]
        scripts = commands
        if operands:  # the typescript file
            first.write_targets.append(operands[0] if operands[0] is not None else _DYNAMIC)
        elif not logs:
            first.write_targets.append("typescript")
    if prog == "watch" and ordered:
        parts = [x for x in ordered if x is not None]
        scripts = [" ".join(parts)] if len(parts) == len(ordered) else [None]
    out = [first]
    for script in scripts:
        out.extend(a._shell_string(text, prog, script, depth))
    return out


# -- options that run a program, load code or write a file (options.py's tables) -------------


def _program_value_ok(name: str, value: str) -> bool:
    """Whether ``value`` of a variable naming a program (``CC``, ``SHELL``, ``PYTHON``) names a
    program of that kind; a directory variable (``JAVA_HOME``) is judged on its path only."""
    if name in ("JAVA_HOME", "GOROOT"):
        return True
    word = value.split(" ", 1)[0]
    head, base = os.path.split(word)
    if head and os.path.normpath(head) not in _SAFE_BIN_DIRS and not _outside_looking(word):
        return True  # a program of the project (`CC=./tools/cc`): workspace code, as before
    if name in ("SHELL", "CONFIG_SHELL", "MAKESHELL"):
        return base in SHELLS and value.strip() == word  # `SHELL='sh -c "rm x"'` is no shell
    if name in ("PYTHON", "NODE"):
        return base.startswith(("python", "pypy", "node"))
    return TOOLCHAIN_NAME.fullmatch(base) is not None or base in BUILD_TEST_PROGRAMS


_CMAKE_SPEC = option_spec(
    "DUCGTAStP",
    ("--build", "--install", "--toolchain", "--preset", "--target", "--config", "--prefix"),
)
_CMAKE_LAUNCH = re.compile(r"CMAKE_\w*_(?:COMPILER|COMPILER_LAUNCHER|LINKER_LAUNCHER|LINKER)$")
_CMAKE_FLAGS = re.compile(r"CMAKE_\w*FLAGS\w*$")
_CMAKE_CODE = frozenset(
    """CMAKE_TOOLCHAIN_FILE CMAKE_PROJECT_INCLUDE CMAKE_PROJECT_INCLUDE_BEFORE
    CMAKE_PROJECT_TOP_LEVEL_INCLUDES""".split()
)


def _h_cmake(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    """``cmake -E <mode>`` by its mode (options.CMAKE_E_MODES), ``-P``/``-C`` scripts and
    ``-D`` variables naming a program or code, ``--build DIR -- <native tool options>``."""
    if "-E" in args:
        return _cmake_e(a, text, list(args[args.index("-E") + 1 :]), depth)
    opts, _ = scan(_options_before_dashdash(args), _CMAKE_SPEC)
    for opt in opts:
        value = opt.value
        if value is None:
            return [_seg(text, prog, C.OPAQUE, f"cmake {opt.name} with a dynamic value")]
        if opt.name in ("-P", "-C") and _outside_looking(value):
            return [
                _seg(
                    text, prog, C.OPAQUE, f"cmake {opt.name} runs CMake code from outside: {value}"
                )
            ]
        if opt.name == "-D":
            var, _, setting = value.partition("=")
            var = var.split(":", 1)[0]
            if var in _CMAKE_CODE and _outside_looking(setting):
                return [_seg(text, prog, C.OPAQUE, f"cmake -D{var} loads CMake code from outside")]
            if _CMAKE_FLAGS.match(var) or _CMAKE_LAUNCH.match(var):
                why = _flags_risk(setting.split())
                if why:
                    return [_seg(text, prog, C.OPAQUE, f"cmake -D{var}: {why}")]
            if _CMAKE_LAUNCH.match(var) and setting and not _program_value_ok("CC", setting):
                return [
                    _seg(
                        text,
                        prog,
                        C.OPAQUE,
                        f"cmake -D{var}={setting} runs {setting} as the compiler",
                    )
                ]
    if "--build" in args and "--" in args:
        native = list(args[args.index("--") + 1 :])
        why = _make_risk(native)
        if why:
            return [_seg(text, prog, C.OPAQUE, f"cmake --build passes {why}")]
    if "-P" in args:
        return [_seg(text, prog, C.BUILD_TEST, "cmake -P runs a CMake script of the workspace")]
    return [_seg(text, prog, C.BUILD_TEST, "cmake is build_test")]


def _cmake_e(
    a: CommandRiskAnalyzer, text: str, rest: list[str | None], depth: int
) -> list[_Segment]:
    mode = rest[0] if rest else ""
    operands = rest[1:]
    if mode is None:
        return [_seg(text, "cmake", C.OPAQUE, "cmake -E with a dynamic mode")]
    kind = CMAKE_E_MODES.get(mode)
    if kind is None:
        return [_seg(text, "cmake", C.OPAQUE, f"cmake -E {mode}: unknown mode")]
    if kind == "read":
        return [_seg(text, "cmake", C.READ_ONLY, f"cmake -E {mode} reads only")]
    if kind == "wrap_env":
        return _h_env(a, text, "cmake", operands, depth + 1)
    if kind == "wrap":
        return a._inner(
            text, operands, depth, C.READ_ONLY, "cmake", f"cmake -E {mode} runs a command"
        )
    if kind == "chdir":
        where = operands[0] if operands and operands[0] is not None else _DYNAMIC
        segs = a._inner(
            text, operands[1:], depth, C.READ_ONLY, "cmake", "cmake -E chdir runs a command"
        )
        segs[0].bases.append(where)
        return segs
    if kind == "tar":
        return _h_tar(a, text, "cmake", operands, depth)
    paths = [
        p for p in operands if p is None or p not in ("-r", "-f", "-rf", "-fr", "-R", "--", "-t")
    ]
    if kind == "write_last" and "-t" in operands:  # copy -t DEST FILES...
        at = operands.index("-t")
        paths = operands[at + 1 : at + 2]
    elif kind == "write_last":
        paths = paths[-1:]
    cat = C.DESTRUCTIVE if kind == "remove" else C.FILE_MUTATION
    verb = "deletes" if kind == "remove" else "writes"
    seg = _seg(text, "cmake", cat, f"cmake -E {mode} {verb} files")
    seg.write_targets.extend(p if p is not None else _DYNAMIC for p in paths)
    return [seg]


def _h_ctest(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    """``ctest --test-command CMD`` runs CMD; ``-S``/``-SP``/``-SR`` scripts from outside are
    code from outside."""
    for i, x in enumerate(args):
        if x is None:
            continue
        if x == "--test-command":
            return a._inner(
                text,
                list(args[i + 1 :]),
                depth,
                C.BUILD_TEST,
                prog,
                "ctest --test-command runs a command",
            )
        if x in ("-S", "-SP", "-SR") and i + 1 < len(args):
            script = args[i + 1]
            if script is None or _outside_looking(script):
                return [_seg(text, prog, C.OPAQUE, f"ctest {x} runs a CTest script from outside")]
    return [_seg(text, prog, C.BUILD_TEST, "ctest is build_test")]


_MAKE_SPEC = option_spec(  # -j/-l/-O take an optional, attached-only value here
    "CfIoWE",
    (
        "--directory",
        "--file",
        "--makefile",
        "--include-dir",
        "--old-file",
        "--assume-old",
        "--what-if",
        "--new-file",
        "--assume-new",
        "--eval",
    ),
    (
        "--jobs",
        "--load-average",
        "--output-sync",
        "--debug",
        "--dry-run",
        "--just-print",
        "--recon",
        "--keep-going",
        "--silent",
        "--quiet",
        "--always-make",
        "--environment-overrides",
        "--ignore-errors",
        "--question",
        "--touch",
        "--trace",
        "--print-directory",
        "--shuffle",
    ),
)
_MAKE_CODE_SUBST = re.compile(r"\$[({]\s*(?:shell|eval|file|guile|call|value)\b")
_STDIN_FILES = ("-", "/dev/stdin", "/proc/self/fd/0")


def _make_risk(args: Sequence[str | None]) -> str:
    """Why ``make args`` runs something the makefile does not say ("" when it does not)."""
    opts, operands = scan(args, _MAKE_SPEC)
    for opt in opts:
        if opt.name in ("-E", "--eval"):
            return f"make {opt.name} evaluates makefile text (its $(shell ...) runs commands)"
        if opt.name in ("-f", "--file", "--makefile") and (
            opt.value is None or opt.value in _STDIN_FILES or opt.value.startswith("/dev/fd/")
        ):
            return "make reads its makefile from standard input or a dynamic name"
        if opt.name in ("-I", "--include-dir") and (
            opt.value is None or _outside_looking(opt.value)
        ):
            return "make includes makefiles from outside the project"
    for word in operands:
        if word is None:
            continue
        name, eq, value = word.partition("=")
        if not eq:
            continue
        name, value = name.split()[-1] if name.strip() else name, value.strip()
        if name.endswith("!"):
            return f"make {word} assigns the output of a shell command"
        name = name.rstrip(":+?").strip()
        kind = MAKE_SPECIAL_VARIABLES.get(name)
        if kind == "make":
            return f"make {name}= sets make's own options or makefiles"
        if kind == "shell" and not _program_value_ok("SHELL", value):
            return f"make {name}={value} runs every recipe with {value}"
        if kind == "shellflags" and re.fullmatch(r"-[a-z]*c", value.strip()) is None:
            return f"make .SHELLFLAGS={value} changes how recipes run"
        if name in _PROGRAM_ENV and value and not _program_value_ok(name, value):
            return f"make {name}={value} runs {value.split(' ', 1)[0]} as its {name}"
        if name in _PROGRAM_ENV or name in _FLAG_VARIABLES:
            why = _flags_risk(value.split())
            if why:
                return f"make {name}=: {why}"
        if _MAKE_CODE_SUBST.search(value):
            return f"make {name}= holds a make function that runs code"
    return ""


def _h_make(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    why = _make_risk(args)
    if why:
        return [_seg(text, prog, C.OPAQUE, why)]
    return [_seg(text, prog, C.BUILD_TEST, f"{prog} is build_test")]


_LINKER_B_MODES = frozenset(
    "-Bstatic -Bdynamic -Bsymbolic -Bsymbolic-functions -Bshareable -Bgroup -Bno-symbolic".split()
)


def _compiler_option_risk(prog: str, x: str, nxt: str | None) -> str:
    """Why one compiler/linker option runs or loads code ("" when it does not)."""
    if x.startswith(("-fplugin=", "-fpass-plugin=", "--plugin=")) or x in (
        "-fplugin",
        "-plugin",
        "--plugin",
        "-load",
    ):
        return f"{prog} {x} loads a plugin into the compiler or linker"
    if x.startswith(("-specs", "--specs", "--spec")):
        return f"{prog} {x} reads a spec file (spec files run programs)"
    if x.startswith(("@", "--config")) or (x.startswith("-Wl,") and ",@" in x):
        return f"{prog} {x} reads more options from a file"
    if (x.startswith("-B") and x not in _LINKER_B_MODES) or x.startswith("--prefix"):
        # `-Bstatic`/`-Bdynamic` are linker modes; `-B DIR` is where cc1/as/ld are found
        return f"{prog} {x} runs its sub-programs (cc1, as, ld) from another directory"
    if (x.startswith("-fuse-ld=") and x.split("=", 1)[1] not in KNOWN_LINKERS) or x.startswith(
        "--ld-path"
    ):
        return f"{prog} {x} runs another program as the linker"
    if x == "-wrapper":
        return f"{prog} -wrapper runs another program around each sub-program"
    linked = f"{x},{nxt}" if x in ("-Xlinker", "-Xclang") else x
    if (linked.startswith(("-Wl,", "-Xlinker", "-Xclang")) and "plugin" in linked) or (
        x == "-Xclang" and nxt == "-load"
    ):
        return f"{prog} {x if x.startswith('-Wl,') else f'{x} {nxt}'} loads a plugin"
    return ""


def _flags_risk(words: Sequence[str]) -> str:
    """Why compiler flags held by a variable (``CFLAGS``, ``CC='gcc ...'``) run code."""
    for i, word in enumerate(words):
        why = _compiler_option_risk(
            "the compiler", word, words[i + 1] if i + 1 < len(words) else ""
        )
        if why:
            return why
    return ""


def _h_compiler(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    """Compiler drivers and linkers: ``-wrapper`` runs its program (classified), plugins,
    spec and response files, ``-B`` and unknown linkers run or load code (opaque)."""
    own = _seg(text, prog, C.BUILD_TEST, f"{prog} is build_test")
    for i, x in enumerate(args):
        nxt = args[i + 1] if i + 1 < len(args) else ""
        if x is None:
            continue
        if x == "-wrapper":
            if nxt is None:
                return [_seg(text, prog, C.OPAQUE, f"{prog} -wrapper with a dynamic program")]
            wrapped: list[str | None] = list(nxt.split(","))
            return [own, *a._argv(text, wrapped, depth + 1)]
        why = _compiler_option_risk(prog, x, nxt)
        if why:
            return [_seg(text, prog, C.OPAQUE, why)]
    return [own]


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


def _h_sed(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
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
                _seg(
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
        return [_seg(text, prog, C.OPAQUE, "sed with a dynamic script")]
    from air.security.scripts import read_sed  # its regexes are built at the first sed

    effects = read_sed("\n".join(s for s in scripts if s is not None))
    if effects.runs and not sandbox:
        return [_seg(text, prog, C.OPAQUE, effects.runs)]
    writes = [] if sandbox else [w if w is not None else _DYNAMIC for w in effects.writes]
    writes = [w for w in writes if w not in _NULL_TARGETS]
    if in_place:
        writes.extend(f if f is not None else _DYNAMIC for f in operands)
    if not writes:
        seg = _seg(text, prog, C.READ_ONLY, "sed filters text")
    else:
        why = "sed -i edits files in place" if in_place else f"sed script writes {writes[0]}"
        seg = _seg(text, prog, C.FILE_MUTATION, why)
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


def _h_awk(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
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
                return [_seg(text, prog, C.OPAQUE, f"{prog} -D reads debugger commands")]
            writes.append(
                x[2:] or {"o": "awkprof.out", "p": "awkprof.out", "d": "awkvars.out"}[x[1]]
            )
            continue
        rest.append(x)
    opts, operands = scan(rest, _AWK_SPEC)
    for opt in opts:
        if opt.name in ("-f", "--file", "-E", "--exec", "-i", "--include", "-l", "--load"):
            return [_seg(text, prog, C.OPAQUE, f"{prog} {opt.name} runs or loads a program file")]
        if opt.name == "-W" and (opt.value or "") not in _AWK_W_SAFE:
            return [_seg(text, prog, C.OPAQUE, f"{prog} -W {opt.value} (mawk/gawk option)")]
        if opt.name in ("-e", "--source"):
            programs.append(opt.value)
        elif opt.name == "--debug":
            return [_seg(text, prog, C.OPAQUE, f"{prog} --debug reads debugger commands")]
        elif opt.name in ("--pretty-print", "--profile", "--dump-variables"):
            writes.append(
                opt.value or ("awkvars.out" if opt.name == "--dump-variables" else "awkprof.out")
            )
        elif opt.name == "--sandbox":
            sandbox = True
    if not programs:
        programs = operands[:1]
    if not programs or any(p is None for p in programs):
        return [_seg(text, prog, C.OPAQUE, f"{prog} with a dynamic program")]
    from air.security.scripts import read_awk  # its regexes are built at the first awk

    effects = read_awk("\n".join(p for p in programs if p is not None))
    if effects.runs and not sandbox:
        return [_seg(text, prog, C.OPAQUE, effects.runs)]
    if not sandbox:
        writes.extend(w if w is not None else _DYNAMIC for w in effects.writes)
    writes = [w for w in writes if w not in _NULL_TARGETS and w != "-"]
    if not writes:
        seg = _seg(text, prog, C.READ_ONLY, "awk filters text")
    else:
        seg = _seg(text, prog, C.FILE_MUTATION, f"{prog} writes {writes[0]}")
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


def _h_sort(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    """sort: ``--compress-program`` runs a program (a plain compressor stays read_only, else
    it is classified), ``-o``/``--output`` writes (also abbreviated: ``--out=F``)."""
    opts, _ = scan(args, _SORT_SPEC)
    targets: list[str] = []
    out: list[_Segment] = []
    for opt in opts:
        if opt.name == "--compress-program":
            if opt.value is None:
                return [
                    _seg(text, prog, C.OPAQUE, "sort --compress-program with a dynamic program")
                ]
            if os.path.basename(opt.value) not in COMPRESSORS or (
                "/" in opt.value and os.path.dirname(opt.value) not in _SAFE_BIN_DIRS
            ):
                out.extend(a._argv(text, [opt.value], depth + 1))
        elif opt.name in ("-o", "--output"):
            targets.append(opt.value if opt.value is not None else _DYNAMIC)
    if targets:
        seg = _seg(text, prog, C.FILE_MUTATION, f"{prog} writes {targets[0]}")
        seg.write_targets.extend(targets)
    else:
        seg = _seg(text, prog, C.READ_ONLY, f"{prog} is read_only")
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


def _h_rg(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    """rg: ``--pre``/``--hostname-bin`` run a program (classified), ``-z`` runs decompressors
    found on PATH (opaque)."""
    opts, _ = scan(args, _RG_SPEC)
    out = [_seg(text, prog, C.READ_ONLY, f"{prog} is read_only")]
    for opt in opts:
        if opt.name in ("--pre", "--hostname-bin"):
            if opt.value is None:
                return [_seg(text, prog, C.OPAQUE, f"{prog} {opt.name} with a dynamic program")]
            if opt.value:
                out.extend(a._argv(text, [opt.value], depth + 1))
        elif opt.name in ("-z", "--search-zip"):
            return [
                _seg(
                    text, prog, C.OPAQUE, f"{prog} {opt.name} runs decompression programs from PATH"
                )
            ]
    return out


_PYTEST_SPEC = option_spec(
    "pockmrW",
    (
        "--override-ini",
        "--basetemp",
        "--rootdir",
        "--config-file",
        "--confcutdir",
        "--pdbcls",
        "--junitxml",
        "--junit-xml",
        "--import-mode",
        "--deselect",
        "--ignore",
        "--ignore-glob",
        "--cov",
        "--cov-report",
        "--cov-config",
        "--debug",
        "--log-file",
        "--maxfail",
        "--durations",
        "--tb",
        "--capture",
    ),
    ("--collect-only", "--exitfirst", "--verbose", "--quiet", "--lf", "--ff", "--pyargs"),
)


def _h_pytest(
    a: CommandRiskAnalyzer, text: str, prog: str, args: list[str | None], depth: int
) -> list[_Segment]:
    """pytest: ``-p NAME`` imports a plugin (``-p no:NAME`` only disables one), ``-o`` ini keys
    outside ``PYTEST_SAFE_INI`` and ``--pdbcls`` load code; ``--basetemp DIR`` deletes DIR
    first (destructive); ``--debug FILE``/``-o cache_dir=`` write there."""
    opts, _ = scan(args, _PYTEST_SPEC)
    destroyed: list[str] = []
    writes: list[str] = []
    for opt in opts:
        value = opt.value
        if value is None:
            return [_seg(text, prog, C.OPAQUE, f"{prog} {opt.name} with a dynamic value")]
        if opt.name == "-p" and not value.startswith("no:"):
            return [_seg(text, prog, C.OPAQUE, f"{prog} -p {value} imports a plugin module")]
        if opt.name in ("-o", "--override-ini"):
            key = value.split("=", 1)[0].strip()
            if key == "cache_dir":
                writes.append(value.split("=", 1)[1] if "=" in value else _DYNAMIC)
            elif key not in PYTEST_SAFE_INI:
                return [
                    _seg(
                        text, prog, C.OPAQUE, f"{prog} -o {key}= changes what pytest loads or runs"
                    )
                ]
        elif opt.name == "--pdbcls":
            return [_seg(text, prog, C.OPAQUE, f"{prog} --pdbcls imports {value}")]
        elif opt.name == "--basetemp":
            destroyed.append(value)
    if destroyed:
        seg = _seg(
            text, prog, C.DESTRUCTIVE, f"{prog} --basetemp deletes {destroyed[0]} before the run"
        )
        seg.write_targets.extend(destroyed)
    else:
        seg = _seg(text, prog, C.BUILD_TEST, f"{prog} is build_test")
    seg.write_targets.extend(writes)
    return [seg]


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
for _multi in MULTICALL:
    _HANDLERS[_multi] = _h_multicall
for _reader in _OUTPUT_OPTIONS:
    _HANDLERS[_reader] = _h_reader_that_writes
for _runner in _RUNNERS:
    _HANDLERS[_runner] = _h_runner
_HANDLERS.update(
    {
        "date": _h_date,
        "hostname": _h_date,
        "man": _h_pager_user,
        "bat": _h_pager_user,
        "gdb": _h_gdb,
        "less": _h_pager_user,
        "more": _h_pager_user,
        "zip": _h_zip,
        "bundle": _h_bundle,
        "cgdb": _h_gdb,
        "hyperfine": _h_shell_strings,
        "script": _h_shell_strings,
        "watch": _h_shell_strings,
    }
)
for _compiler in ("gcc", "g++", "cc", "c++", "clang", "clang++", "ld"):
    _HANDLERS[_compiler] = _h_compiler
_HANDLERS.update(
    {
        "cmake": _h_cmake,
        "ctest": _h_ctest,
        "make": _h_make,
        "gmake": _h_make,
        "sort": _h_sort,
        "rg": _h_rg,
        "pytest": _h_pytest,
        "py.test": _h_pytest,
    }
)
for _interp in INTERPRETERS:
    _HANDLERS[_interp] = _h_interpreter
for _minor in range(6, 15):
    _HANDLERS[f"python3.{_minor}"] = _h_interpreter
