"""``air.agents.doc_globs``: the architecture documents a pattern names, found in real trees —
the same files ``Path.glob`` found where it could, and in a tree a task made 1,500 directories
deep (``Path.glob``'s ``**`` raised ``RecursionError`` there and ended the architecture review),
never through a link out of the project."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from air.agents.doc_globs import doc_files, matches
from air.tree_walk import make_dirs, remove_tree


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    made = tmp_path / "proj"
    for d in ("docs/adr", "docs/arch/deep", "src"):
        (made / d).mkdir(parents=True)
    for f in ("docs/adr/0001.md", "docs/arch/deep/flow.md", "docs/arch/notes.txt", "ARCH.md"):
        (made / f).write_text(f"{f}\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("not the project's\n")
    os.symlink(outside / "secret.md", made / "docs" / "adr" / "linked.md")
    yield made
    remove_tree(str(tmp_path / "proj"), ignore_errors=True)  # pytest's own cleanup recurses


@pytest.mark.parametrize("pattern", ["docs/**/*.md", "docs/*/*.md", "*.md", "docs/arch/**/*.txt"])
def test_a_glob_names_the_files_path_glob_named_inside_the_project(
    root: Path, pattern: str
) -> None:
    inside = root.resolve()
    globbed = [p for p in root.glob(pattern) if p.is_file() and p.resolve().is_relative_to(inside)]
    assert sorted(doc_files(root, pattern)) == sorted(globbed)
    assert root / "docs" / "adr" / "linked.md" not in doc_files(root, pattern)


def test_a_trailing_double_star_names_every_file_below_as_the_gate_matches_it(root: Path) -> None:
    # Path.glob("docs/**") named directories only, so the review read none of the documents
    # whose changes the gate flagged as architecture changes
    assert sorted(p.relative_to(root).as_posix() for p in doc_files(root, "docs/**")) == [
        "docs/adr/0001.md",
        "docs/arch/deep/flow.md",
        "docs/arch/notes.txt",
    ]
    assert all(matches(f"docs/{p}", "docs/**") for p in ("adr/0001.md", "arch/notes.txt"))


def test_a_documents_tree_a_task_made_1500_deep_is_read_to_its_bottom(root: Path) -> None:
    deep = root / "docs" / os.path.join(*["d"] * 1_500)
    make_dirs(str(deep))
    (deep / "bottom.md").write_text("deep\n")
    with pytest.raises(RecursionError):
        list(root.glob("docs/**/*.md"))  # what the review did before
    found = doc_files(root, "docs/**/*.md")
    assert deep / "bottom.md" in found
    assert root / "docs" / "adr" / "0001.md" in found
    assert matches("docs/d/d/bottom.md", "docs/**/*.md")
    assert not matches("src/main.cpp", "docs/**/*.md")
