"""CommandRiskAnalyzer: classify a shell command line into one of the 10 command categories.

Owns the tree-sitter-bash walk that splits a command line into segments (``&&``, ``||``, ``;``,
pipes, subshells, command and process substitution, loops and conditionals), the redirects and
assignments of each, and the classification of one argv: a program run by path, then the
program's own handler (the ``HANDLERS`` of ``command_wrappers``, ``command_interpreters``,
``command_packages``, ``command_files``, ``command_text_tools``, ``command_git`` and
``command_builds``, merged here) or else its category in ``command_tables``. The command's
category is its riskiest segment's; anything dynamic, obfuscated or unparseable is ``opaque``
(SDD §9.2, §18.5).

``analyze`` also lists the paths the command touches for the engine to classify
(``write_targets``, ``read_targets``, ``tool_targets``), found per segment and resolved by
``command_targets``. Pure: no I/O.
"""

from __future__ import annotations

import functools
import os.path
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from air.contracts.permission import CommandCategory
from air.security.command_env import env_risk
from air.security.command_tables import DEVICE_PREFIXES, NULL_TARGETS, SAFE_BIN_DIRS, table_category
from air.security.command_targets import (
    add_moved_targets,
    program_writes,
    read_candidates,
    recursive_reader,
    resolve_targets,
)
from air.security.command_words import (
    DYNAMIC,
    MAX_DEPTH,
    MAX_NODES,
    HandlerFn,
    Segment,
    Word,
    argv_value,
    hidden_targets,
    literal,
    new_segment,
    node_text,
    scope_marker,
)

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

        try:
            found = self._segments(command, 0)
        except RecursionError:  # deeper than the walk's stack: `$($($(...)))` x 300 crashed air
            found = [new_segment(command, None, C.OPAQUE, "nested too deeply to analyze")]
        segments = [s for s in found if not s.hidden]
        category = riskiest(s.category for s in segments)
        writes, reads = resolve_targets(found, cwd)
        tools: list[str] = []
        if any(s.tool_targets for s in found):
            # resolved exactly like the writes (same cd / -C bookkeeping), nothing else kept
            only_tools = [
                replace(s, write_targets=list(s.tool_targets), read_targets=[], weak_reads=[])
                for s in found
            ]
            tools = [t for t in resolve_targets(only_tools, cwd)[0] if t in writes]
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

    def _segments(self, command: str, depth: int) -> list[Segment]:
        if depth > MAX_DEPTH:
            return [new_segment(command, None, C.OPAQUE, "nested shell commands too deep")]
        printable = command.replace("\n", "").replace("\t", "").isprintable()
        for ch in () if printable else command:  # no Cc, Cf, Co, Cs in a printable one
            cat = unicodedata.category(ch)
            if (cat == "Cc" and ch not in "\n\t") or cat in ("Cf", "Co", "Cs"):
                return [
                    new_segment(
                        command, None, C.OPAQUE, f"control or invisible character U+{ord(ch):04X}"
                    )
                ]
        if not command.strip():
            return []
        tree = self._parser.parse(command.encode("utf-8"))
        root = tree.root_node
        if root.has_error:
            return [new_segment(command, None, C.OPAQUE, "the command does not parse as bash")]
        if root.descendant_count > MAX_NODES:
            why = f"over {MAX_NODES:,} words and operators: too long to analyze"
            return [new_segment(command, None, C.OPAQUE, why)]
        out: list[Segment] = []
        self._walk(root, out, depth)
        return out

    def _walk(self, node: Node, out: list[Segment], depth: int) -> None:
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
            out.append(new_segment(node_text(node), None, C.OPAQUE, "defines a shell function"))
            return
        if kind == "&":
            out.append(
                new_segment("&", None, C.PROCESS_CONTROL, "runs a command in the background")
            )
            return
        if kind in ("ERROR", "MISSING"):
            out.append(new_segment(node_text(node), None, C.OPAQUE, "unparseable construct"))
            return
        if kind == "declaration_command":
            self._declaration(node, out, depth)
            return
        if kind in ("subshell", "command_substitution", "process_substitution"):
            # A `cd` inside does not move what follows the subshell.
            out.append(scope_marker("push"))
            for child in node.children:
                self._walk(child, out, depth)
            out.append(scope_marker("pop"))
            return
        if kind == "pipeline":
            for child in node.children:
                out.append(scope_marker("push"))
                self._walk(child, out, depth)
                out.append(scope_marker("pop"))
            return
        if kind == "list" and any(c.type == "&&" for c in node.children):
            # What follows `&&` runs only if what precedes succeeded: a `cd` there took effect.
            for child in node.children:
                if child.type == "&&":
                    out.append(scope_marker("and"))
                else:
                    self._walk(child, out, depth)
            return
        for child in node.children:
            self._walk(child, out, depth)

    def _assignment(self, node: Node, out: list[Segment], depth: int) -> None:
        name_node = node.child_by_field_name("name")
        name = node_text(name_node) if name_node is not None else ""
        value = node.child_by_field_name("value")
        risk = env_risk(name, literal(value) if value is not None else "")
        if risk:
            out.append(new_segment(node_text(node), None, C.OPAQUE, risk))
        if value is not None:
            reads = read_candidates(literal(value), node_text(value))
            if reads:
                out.append(hidden_targets(node_text(node), read_targets=reads))
        for child in node.children:
            self._walk_substitutions(child, out, depth)

    def _declaration(self, node: Node, out: list[Segment], depth: int) -> None:
        found = False
        for child in node.children:
            if child.type == "variable_assignment":
                before = len(out)
                self._assignment(child, out, depth)
                found = found or len(out) > before
            elif child.type == "word" and node_text(child) in ("-f", "-F"):
                out.append(new_segment(node_text(node), None, C.OPAQUE, "declares functions"))
                found = True
            else:
                self._walk_substitutions(child, out, depth)
        if not found:
            out.append(
                new_segment(
                    node_text(node),
                    node_text(node.children[0]),
                    C.READ_ONLY,
                    "variable declaration",
                )
            )

    def _walk_substitutions(self, node: Node, out: list[Segment], depth: int) -> None:
        if node.type in ("command_substitution", "process_substitution"):
            self._walk(node, out, depth)
            return
        for child in node.children:
            self._walk_substitutions(child, out, depth)

    def _redirect(self, node: Node, out: list[Segment], depth: int) -> None:
        text = node_text(node)
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
            reads = read_candidates(literal(dest), node_text(dest), always=True)
            if reads:
                out.append(hidden_targets(text, read_targets=reads))
        if op in ("<", "<&", "<&-", ">&-"):
            return
        if dest is None:
            out.append(new_segment(text, None, C.OPAQUE, "redirect without a target"))
            return
        if op in (">&", "<&") and dest.type == "number":
            return
        value = literal(dest)
        if value is None:
            out.append(new_segment(text, None, C.OPAQUE, "redirect target depends on an expansion"))
            return
        if value in NULL_TARGETS or value.startswith("/dev/fd/") or value == "-":
            return
        if value.startswith(DEVICE_PREFIXES):
            seg = new_segment(text, None, C.DESTRUCTIVE, f"writes to the device {value}")
        else:
            seg = new_segment(text, None, C.FILE_MUTATION, f"redirect writes {value}")
        seg.write_targets.append(value)
        out.append(seg)

    def _command(self, node: Node, out: list[Segment], depth: int) -> None:
        text = node_text(node)
        words: list[Word] = []
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
                name = None if inner.type == "ansi_c_string" else literal(inner)
                words.append(Word(name, inner))
                continue
            if child.type in ("comment",):
                continue
            self._walk_substitutions(child, out, depth)
            words.append(Word(literal(child), child))
        if not words:
            return
        segs = self.classify_argv(text, [argv_value(w) for w in words], depth)
        reads: list[str] = []
        for word in words[1:]:
            for target in read_candidates(word.value, node_text(word.node)):
                if target not in reads:
                    reads.append(target)
        if recursive_reader([w.value for w in words]):
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
                segs[0].chdir = DYNAMIC if dest in (None, "-") else dest
        out.extend(segs)

    # -- classification of one argv -------------------------------------------------------

    def classify_argv(self, text: str, argv: Sequence[str | None], depth: int) -> list[Segment]:
        """Classify one command's ``argv`` (``depth``: how deeply it is wrapped or nested)."""
        if not argv:
            return []
        if depth > MAX_DEPTH:
            return [new_segment(text, None, C.OPAQUE, "wrapped commands nested too deep")]
        raw = argv[0]
        if raw is None:
            return [new_segment(text, None, C.OPAQUE, "the program name depends on an expansion")]
        if not raw.isascii() or not raw.isprintable():
            return [
                new_segment(text, raw, C.OPAQUE, "non-ASCII program name (look-alike characters)")
            ]
        program = raw
        if "/" in raw:
            head, base = os.path.split(raw)
            if raw.startswith("/"):
                if os.path.normpath(head) not in SAFE_BIN_DIRS:
                    return [
                        new_segment(
                            text, raw, C.OPAQUE, f"runs a program outside system bin dirs: {raw}"
                        )
                    ]
                program = base
            elif ".." in raw.split("/"):
                return [new_segment(text, raw, C.OPAQUE, "runs a program through a '..' path")]
            elif raw.startswith("~"):
                return [
                    new_segment(text, raw, C.OPAQUE, f"runs a program from a home directory: {raw}")
                ]
            else:
                if table_category(base) is None:
                    return [new_segment(text, raw, C.BUILD_TEST, "runs a script of the workspace")]
                # `./ls`, `./bash -c x`: the workspace's own file runs, whatever its name: it
                # is workspace code (at least build_test), and the name's own reading counts too.
                own = new_segment(text, raw, C.BUILD_TEST, f"runs the workspace program {raw}")
                return [own, *self._program(text, base, list(argv[1:]), depth)]
        args = list(argv[1:])
        return self._program(text, program, args, depth)

    def _program(self, text: str, prog: str, args: list[str | None], depth: int) -> list[Segment]:
        segs = self._program_segments(text, prog, args, depth)
        if segs:
            add_moved_targets(segs[0], prog, args)
        return segs

    def handles(self, prog: str) -> bool:
        """Whether ``prog`` has a handler of its own (a multi-call binary's applet must)."""
        return prog in _handlers()

    def _program_segments(
        self, text: str, prog: str, args: list[str | None], depth: int
    ) -> list[Segment]:
        handler = _handlers().get(prog)
        if handler is not None:
            return handler(self, text, prog, args, depth)
        if prog.startswith("mkfs") or prog.startswith("fsck."):
            return [new_segment(text, prog, C.DESTRUCTIVE, "formats or repairs a file system")]
        cat = table_category(prog)
        if cat is None:
            return [new_segment(text, prog, C.OPAQUE, f"unknown program {prog!r}")]
        seg = new_segment(text, prog, cat, f"{prog} is {cat.value}")
        if cat in (C.FILE_MUTATION, C.DESTRUCTIVE):
            seg.write_targets.extend(program_writes(prog, args))
            if prog == "tee" and not seg.write_targets:
                return [new_segment(text, prog, C.READ_ONLY, "tee copies to standard output only")]
        return [seg]

    def wrapped_command(
        self,
        text: str,
        args: list[str | None],
        depth: int,
        floor: CommandCategory,
        prog: str,
        why: str,
    ) -> list[Segment]:
        """Classify a wrapped command ``args``; the wrapper adds ``floor``."""
        inner = self.classify_argv(text, args, depth + 1) if args else []
        wrapper = new_segment(text, prog, floor, why)
        if any(a is None for a in args[:1]):
            wrapper = new_segment(text, prog, C.OPAQUE, f"{prog} runs a dynamic program")
        return [wrapper, *inner]

    def shell_script(self, text: str, prog: str, script: str | None, depth: int) -> list[Segment]:
        """Classify the shell ``script`` that ``prog`` runs (None: a dynamic one, opaque)."""
        if script is None:
            return [new_segment(text, prog, C.OPAQUE, f"{prog} -c with a dynamic script")]
        inner = self._segments(script, depth + 1)
        if not inner:
            return [new_segment(text, prog, C.READ_ONLY, "empty script")]
        return inner


@functools.cache
def _handlers() -> dict[str, HandlerFn]:
    """Every program with a handler of its own (the rest are classified from the tables), one
    family a module; loaded at the first command analysed, like the parser (IMPL-BOOT-5)."""
    from air.security.command_builds import HANDLERS as BUILDS
    from air.security.command_files import HANDLERS as FILES
    from air.security.command_git import HANDLERS as GIT
    from air.security.command_interpreters import HANDLERS as INTERPRETERS
    from air.security.command_packages import HANDLERS as PACKAGES
    from air.security.command_text_tools import HANDLERS as TEXT_TOOLS
    from air.security.command_wrappers import HANDLERS as WRAPPERS

    return {**WRAPPERS, **INTERPRETERS, **PACKAGES, **FILES, **TEXT_TOOLS, **GIT, **BUILDS}
