"""The README's key map is the help overlay's table: both come from ``keymap.KEYS``."""

from __future__ import annotations

from pathlib import Path

from air.ui_urwid.keymap import KEYS, help_text, key_map_markdown

README = Path(__file__).resolve().parents[2] / "README.md"
START = (
    "<!-- key map: generated from air/ui_urwid/keymap.py KEYS; "
    "tests/ui/test_keymap.py checks it -->\n"
)
END = "<!-- end of the key map -->"


def test_the_readme_key_map_is_the_help_overlays_table() -> None:
    text = README.read_text(encoding="utf-8")
    assert START in text, "the README lost its key map's first marker"
    assert END in text, "the README lost its key map's last marker"
    table = text.split(START, 1)[1].split(END, 1)[0]
    assert table == key_map_markdown(), (
        "README.md's key map differs from air/ui_urwid/keymap.py KEYS; paste this between "
        f"its markers:\n{key_map_markdown()}"
    )
    help_lines = help_text().splitlines()
    for key, what in KEYS:
        assert f"| {key} | {what} |" in table
        assert any(line.startswith(key) and line.endswith(what) for line in help_lines)
