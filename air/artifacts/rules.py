"""Learned rule files: ``<project>/.air/shared/rules/learned-<memory_id>.md`` (SDD §18.4).

Owns ``RuleFiles`` (write a promoted rule memory's file, remove an archived one's, clear temp
files a crash left) and ``one_line``, the form model-written text takes before it lands in a
rule file: the PromptLayerLoader puts every ``rules/*.md`` into L3 of later prompts, so the text
may not open headings, front matter or fences of its own (IMPL-LEARN-1).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from air.contracts.artifact_records import LearnedMemory
from air.contracts.error import AirException, ErrorKind

__all__ = ["RULE_TEXT_MAX", "RuleFiles", "one_line"]

RULE_TEXT_MAX = 400
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


def one_line(text: str, limit: int = RULE_TEXT_MAX) -> str:
    """``text`` as one plain line of at most ``limit`` characters (control characters gone)."""
    flat = " ".join(_CONTROL.sub(" ", text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class RuleFiles:
    """The learned rule files of one project's ``.air/shared/rules``."""

    def __init__(self, shared_root: str | os.PathLike[str]) -> None:
        self.shared_root = Path(shared_root)
        self.root = self.shared_root / "rules"

    @staticmethod
    def target_ref(memory_id: str) -> str:
        """The rule file of a memory, relative to the project root (memory target_ref)."""
        return f".air/shared/rules/learned-{memory_id}.md"

    def path(self, memory_id: str) -> Path:
        return self.root / f"learned-{memory_id}.md"

    def _checked_root(self) -> Path:
        """The rules directory, created, after checking it resolves inside the shared root.

        Raises:
            AirException: ``permission_denied`` when it (a link) leads elsewhere.
        """
        self.root.mkdir(parents=True, exist_ok=True)
        real = os.path.realpath(self.root)
        if Path(real) != Path(os.path.realpath(self.shared_root)) / "rules":
            raise AirException.of(
                kind=ErrorKind.PERMISSION_DENIED,
                message=f"{self.root} resolves outside the project ({real})",
                user_action=f"Replace the link {self.root} with a directory, then run air again.",
            )
        return self.root

    def write(self, memory: LearnedMemory) -> None:
        """Write the memory's rule file (the same bytes on every replay): temp, fsync, rename."""
        root = self._checked_root()
        final = root / f"learned-{memory.memory_id}.md"
        text = (
            f"<!-- air learned memory {memory.memory_id}; archived memories are removed -->\n"
            f"# Learned rule\n\n- {one_line(memory.content)}\n"
        ).encode()
        if final.is_file() and not final.is_symlink() and final.read_bytes() == text:
            return
        temp = root / f".learned-{memory.memory_id}.md.tmp"
        temp.unlink(missing_ok=True)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temp, final)

    def remove(self, memory_id: str) -> None:
        self.path(memory_id).unlink(missing_ok=True)

    def clean_temp(self) -> list[str]:
        """Remove the temp files of writes a crash interrupted; their names."""
        if not self.root.is_dir():
            return []
        gone = []
        for temp in sorted(self.root.glob(".learned-*.md.tmp")):
            temp.unlink(missing_ok=True)
            gone.append(temp.name)
        return gone
