"""The program handlers of the command classifier, one family a module (air/security/command_*):
no program is claimed by two families, so the merged dispatch of ``commands.py`` never depends on
the order it merges them in, and each handler the analyzer reaches is its family's."""

from __future__ import annotations

from itertools import combinations

from air.security import (
    command_builds,
    command_files,
    command_git,
    command_interpreters,
    command_packages,
    command_text_tools,
    command_wrappers,
)
from air.security.commands import CommandRiskAnalyzer

FAMILIES = {
    "wrappers": command_wrappers.HANDLERS,
    "interpreters": command_interpreters.HANDLERS,
    "packages": command_packages.HANDLERS,
    "files": command_files.HANDLERS,
    "text tools": command_text_tools.HANDLERS,
    "git": command_git.HANDLERS,
    "builds": command_builds.HANDLERS,
}


def test_no_program_has_two_handler_families() -> None:
    shared = {
        (a, b): sorted(set(FAMILIES[a]) & set(FAMILIES[b]))
        for a, b in combinations(FAMILIES, 2)
        if set(FAMILIES[a]) & set(FAMILIES[b])
    }
    assert shared == {}


def test_the_analyzer_handles_exactly_the_families_programs() -> None:
    analyzer = CommandRiskAnalyzer()
    programs = {p for table in FAMILIES.values() for p in table}
    assert len(programs) > 150
    assert all(analyzer.handles(p) for p in programs)
    assert not analyzer.handles("ls")  # a table program: classified by its category alone
    # a multi-call binary runs only an applet the analyzer knows
    assert analyzer.analyze("busybox sed -i s/a/b/ notes.txt").category.value == "file_mutation"
    assert analyzer.analyze("busybox frobnicate x").category.value == "opaque"
