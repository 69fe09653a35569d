"""Markdown in the console: an answer drawn with its structure (issue 24 item 6, IMPL-UI-9).

Owns the parse (markdown-it-py: CommonMark with tables and strikethrough, nesting capped by
its ``maxNesting``), ``split_blocks`` (an answer's fenced code blocks apart from its text, by a
line scan: each is folded, copied with Ctrl-Y and drawn on its own), ``markdown_widgets`` (urwid
widgets that wrap to any width: headings, lists with hanging indents, emphasis, tables, code
blocks with their info string and syntax colour, links as text and URL, block quotes, rules)
and ``markdown_plain`` (the same structure as plain lines for ``--plain``). Every glyph drawn
is one ``terminal.ASCII_GLYPHS`` has a stand-in for (a C locale), every style an attribute
``views.PALETTE`` names (``NO_COLOR`` keeps it as bold, italics, underline). The text given
has passed ``text.clean``; a text node passes it again, as the parser decodes character
references there (``&#x202e;``; code, info strings, URLs and raw HTML are not decoded, a URL is
%-encoded): none reaches the terminal raw (IMPL-UI-3). markdown-it is imported at the first
answer drawn, never before the console's first frame (IMPL-FRAME-1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

import urwid

from air.ui_urwid.syntax import code_markup
from air.ui_urwid.text import clean

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.tree import SyntaxTreeNode

__all__ = [
    "BULLETS",
    "Block",
    "code_body",
    "code_end",
    "code_top",
    "code_widgets",
    "markdown_plain",
    "markdown_widgets",
    "split_blocks",
]

BULLETS = ("•", "◦")
"""List marks by nesting depth (alternating)."""
_SEP = 3
"""Columns between two table cells (`` │ ``)."""
_MAX_LEVEL = 16
"""Deepest token level drawn as Markdown (the parser's ``maxNesting`` is 20)."""

_ALIGN: dict[str, Literal["left", "center", "right"]] = {"center": "center", "right": "right"}
"""A column's ``text-align`` as urwid's alignment (anything else is left)."""

Segments = list[tuple[str, str]]
"""Inline text as (attribute, text) runs."""


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable(["table", "strikethrough"])


def _tree(text: str) -> SyntaxTreeNode | None:
    """The parse of ``text``; None when it nests deeper than ``_MAX_LEVEL`` (the parser drops
    what nests past its ``maxNesting``: such text is shown as written, never cut)."""
    from markdown_it.tree import SyntaxTreeNode

    tokens = _parser().parse(text)
    if any(token.level > _MAX_LEVEL for token in tokens):
        return None
    return SyntaxTreeNode(tokens)


@dataclass(frozen=True)
class Block:
    kind: str
    """``text`` or ``code``."""
    text: str
    lang: str = ""
    """A code block's info string (```` ```json:result ```` gives ``json:result``)."""


_OPEN = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")


def split_blocks(text: str) -> list[Block]:
    """The fenced code blocks of ``text`` (CommonMark's fences: up to 3 spaces in, 3 or more
    backticks or tildes, any info string; an unclosed fence runs to the end) apart from the
    text around them. A line scan, not a parse: it runs on the whole answer at every frame of
    a streaming one (markdown-it takes ~10 ms per KiB). A fence in a quote (``> ```py``) or
    indented 4 or more stays in its text, which ``markdown_widgets`` draws."""
    blocks: list[Block] = []
    buf: list[str] = []
    fence: tuple[int, str, str] | None = None  # (indent, fence, info) of an open code block
    for line in text.split("\n"):
        if fence is None:
            m = _OPEN.match(line)
            if m and not (m.group(2)[0] == "`" and "`" in m.group(3)):
                if any(part.strip() for part in buf):
                    blocks.append(Block("text", "\n".join(buf)))
                buf, fence = [], (len(m.group(1)), m.group(2), m.group(3).strip())
            else:
                buf.append(line)
            continue
        indent, mark, info = fence
        stripped = line.strip()
        if (
            len(line) - len(line.lstrip(" ")) < 4
            and stripped.startswith(mark)
            and stripped == mark[0] * len(stripped)
        ):
            blocks.append(Block("code", "\n".join(buf), info))
            buf, fence = [], None
        else:
            drop = min(indent, len(line) - len(line.lstrip(" ")))
            buf.append(line[drop:])
    if fence is not None:
        blocks.append(Block("code", "\n".join(buf), fence[2]))
    elif any(part.strip() for part in buf):
        blocks.append(Block("text", "\n".join(buf)))
    return blocks


# --- inline ---------------------------------------------------------------------------------

_INLINE_ATTR = {"strong": "md_strong", "em": "md_emph", "s": "md_strike"}


def _inline(nodes: list[SyntaxTreeNode], attr: str, *, plain: bool) -> Segments:
    """The inline ``nodes`` as runs; the innermost style wins. ``plain``: inline code keeps
    its backticks (no style shows it)."""
    out: Segments = []
    for node in nodes:
        kind = node.type
        if kind in ("text", "text_special"):  # character references decoded: clean again
            out.append((attr, clean(node.content)))
        elif kind in ("softbreak", "hardbreak"):  # the author's lines stay lines
            out.append((attr, "\n"))
        elif kind == "code_inline":
            code = node.content
            out.append(("md_code", f"`{code}`" if plain else code))
        elif kind in _INLINE_ATTR:
            out.extend(_inline(node.children, _INLINE_ATTR[kind], plain=plain))
        elif kind in ("link", "image"):
            label = _inline(node.children, "md_link", plain=plain)
            url = str(node.attrs.get("href" if kind == "link" else "src", ""))  # %-encoded
            text = "".join(t for _a, t in label)
            out.extend(label)
            if url and url not in (text, f"mailto:{text}"):
                out.append(("md_url", f" ({url})"))
        elif node.children:
            out.extend(_inline(node.children, attr, plain=plain))
        else:  # raw inline HTML, as written
            out.append((attr, node.content))
    return out


def _inline_of(node: SyntaxTreeNode, attr: str = "body", *, plain: bool = False) -> Segments:
    """The runs of a block that holds one ``inline`` child (a paragraph, heading, cell)."""
    return _inline([n for child in node.children for n in child.children], attr, plain=plain)


def _markup(segments: Segments) -> list[Any]:
    return [(a, t) for a, t in segments if t] or [""]


def _text_of(segments: Segments) -> str:
    return "".join(t for _a, t in segments)


# --- urwid ----------------------------------------------------------------------------------


def code_top(info: str) -> urwid.Widget:
    """A code block's frame top: its info string (the language, ``json:result`` …)."""
    return urwid.Text(("code_label", f"┌─ {info or 'code'} (Ctrl-Y copies)"))


def code_end() -> urwid.Widget:
    """A code block's frame end."""
    return urwid.Text(("code_label", "└─"))


def code_body(code: str, info: str) -> urwid.Widget:
    """A code block's text, coloured by the language of its info string, indented."""
    return urwid.Padding(urwid.Text(code_markup(code, info)), left=2)


def code_widgets(code: str, info: str) -> list[urwid.Widget]:
    """A code block in its frame (one nested in a list or a quote; a top-level one is framed
    by ``views.message_widget``, which folds it)."""
    return [code_top(info), code_body(code, info), code_end()]


class _Table(urwid.Widget):
    """A table that fits its width: columns as wide as their widest cell while they fit, the
    widest cut down first when they do not (cells wrap); too narrow for 3 columns a cell,
    each row is one wrapped line of cells."""

    _sizing = frozenset([urwid.Sizing.FLOW])

    def __init__(self, rows: list[list[Segments]], aligns: list[str]) -> None:
        super().__init__()
        self._rows = rows
        self._aligns = aligns
        self._natural = [
            max([1, *(urwid.calc_width(_text_of(row[i]), 0, len(_text_of(row[i])))
                      for row in rows if i < len(row))])
            for i in range(len(aligns))
        ]  # fmt: skip
        self._built: tuple[int, urwid.Pile] | None = None

    def _widths(self, maxcol: int) -> list[int] | None:
        n = len(self._natural)
        avail = maxcol - _SEP * (n - 1)
        if avail < 3 * n:
            return None
        if sum(self._natural) <= avail:
            return list(self._natural)
        low, high = 1, max(self._natural)  # the largest cap at which the columns fit
        while low < high:
            cap = (low + high + 1) // 2
            if sum(min(w, cap) for w in self._natural) <= avail:
                low = cap
            else:
                high = cap - 1
        widths = [min(w, low) for w in self._natural]
        for i in sorted(range(n), key=lambda i: -self._natural[i]):
            if sum(widths) < avail and widths[i] < self._natural[i]:
                widths[i] += 1
        return widths

    def _pile(self, maxcol: int) -> urwid.Pile:
        if self._built is not None and self._built[0] == maxcol:
            return self._built[1]
        widths = self._widths(maxcol)
        lines: list[urwid.Widget] = []
        for index, row in enumerate(self._rows):
            attr = "md_table_head" if index == 0 else "body"
            cells = [[(attr if a == "body" else a, t) for a, t in cell] for cell in row]
            cells += [[] for _ in range(len(self._aligns) - len(cells))]
            if widths is None:
                joined: Segments = []
                for i, cell in enumerate(cells):
                    joined += ([("md_rule", " │ ")] if i else []) + cell
                lines.append(urwid.Text(_markup(joined)))
            else:
                columns: list[Any] = []
                for i, (cell, width) in enumerate(zip(cells, widths, strict=True)):
                    if i:
                        columns.append((1, urwid.AttrMap(urwid.SolidFill("│"), "md_rule")))
                    align = _ALIGN.get(self._aligns[i], "left")
                    columns.append((width, urwid.Text(_markup(cell), align=align)))
                boxes = list(range(1, len(columns), 2))
                lines.append(urwid.Columns(columns, dividechars=1, box_columns=boxes))
            if index == 0:
                rule = "─┼─".join("─" * w for w in widths) if widths else "─" * min(maxcol, 40)
                lines.append(urwid.Text(("md_rule", rule), wrap="clip"))
        pile = urwid.Pile(lines)
        self._built = (maxcol, pile)
        return pile

    def rows(self, size: tuple[int], focus: bool = False) -> int:
        return int(self._pile(size[0]).rows(size, focus))

    def render(self, size: tuple[int], focus: bool = False) -> urwid.Canvas:  # type: ignore[override]
        return self._pile(size[0]).render(size, focus)


def _table_cells(node: SyntaxTreeNode, *, plain: bool) -> tuple[list[list[Segments]], list[str]]:
    rows: list[list[Segments]] = []
    aligns: list[str] = []
    for section in node.children:
        for tr in section.children:
            rows.append([_inline_of(cell, plain=plain) for cell in tr.children])
            if not aligns:
                for cell in tr.children:
                    style = str(cell.attrs.get("style", ""))
                    aligns.append(style.removeprefix("text-align:") if style else "left")
    return rows, aligns


def _widgets(
    nodes: list[SyntaxTreeNode], *, gap: bool, depth: int = 0, base: str = "body"
) -> list[urwid.Widget]:
    """The block ``nodes`` drawn (``gap``: a blank line between two; ``base``: the attribute of
    unstyled text, ``md_quote`` in a quote)."""
    out: list[urwid.Widget] = []
    for node in nodes:
        drawn = _widget(node, depth, base)
        if out and gap and drawn:
            out.append(urwid.Divider())
        out.extend(drawn)
    return out


def _widget(node: SyntaxTreeNode, depth: int, base: str) -> list[urwid.Widget]:
    kind = node.type
    if kind == "paragraph":
        return [urwid.Text(_markup(_inline_of(node, base)))]
    if kind == "heading":
        text = urwid.Text(_markup(_inline_of(node, "md_heading")))
        return [text, urwid.Divider("═")] if node.tag == "h1" else [text]
    if kind in ("bullet_list", "ordered_list"):
        start = int(str(node.attrs.get("start", 1))) if kind == "ordered_list" else 1
        width = len(f"{start + len(node.children) - 1}. ") if kind == "ordered_list" else 2
        rows: list[urwid.Widget] = []
        for i, item in enumerate(node.children):
            mark = f"{start + i}." if kind == "ordered_list" else BULLETS[depth % len(BULLETS)]
            body = _widgets(item.children, gap=False, depth=depth + 1, base=base)
            body = body or [urwid.Text("")]
            rows.append(urwid.Columns([(width, urwid.Text(("md_bullet", mark))), urwid.Pile(body)]))
        return rows
    if kind == "blockquote":
        inner = _widgets(node.children, gap=True, depth=depth, base="md_quote")
        bar = urwid.AttrMap(urwid.SolidFill("▌"), "md_rule")
        quote = urwid.Pile(inner or [urwid.Text("")])
        return [urwid.Columns([(1, bar), quote], dividechars=1, box_columns=[0])]
    if kind == "fence":
        return code_widgets(node.content.removesuffix("\n"), node.info.strip())
    if kind == "code_block":
        return code_widgets(node.content.removesuffix("\n"), "")
    if kind == "hr":
        return [urwid.AttrMap(urwid.Divider("─"), "md_rule")]
    if kind == "table":
        rows_, aligns = _table_cells(node, plain=False)
        return [_Table(rows_, aligns)] if aligns else []
    if node.children:
        return _widgets(node.children, gap=True, depth=depth, base=base)
    content = node.content.rstrip("\n")
    return [urwid.Text((base, content))] if content else []


def markdown_widgets(text: str) -> list[urwid.Widget]:
    """``text`` (cleaned: ``text.clean``) drawn as Markdown, one widget per line of blocks.

    The last texts drawn are kept: a streaming answer re-draws only its block that grew."""
    return list(_drawn(text))


@lru_cache(maxsize=128)
def _drawn(text: str) -> tuple[urwid.Widget, ...]:
    tree = _tree(text)
    return (urwid.Text(text),) if tree is None else tuple(_widgets(tree.children, gap=True))


# --- plain ----------------------------------------------------------------------------------


def _plain_blocks(nodes: list[SyntaxTreeNode], *, gap: bool) -> list[str]:
    out: list[str] = []
    for node in nodes:
        lines = _plain(node)
        if out and gap and lines:
            out.append("")
        out.extend(lines)
    return out


def _plain_table(node: SyntaxTreeNode) -> list[str]:
    rows, aligns = _table_cells(node, plain=True)
    cells = [[_text_of(cell).replace("\n", " ") for cell in row] for row in rows]
    widths = [max(len(r[i]) if i < len(r) else 0 for r in cells) for i in range(len(aligns))]

    def line(row: list[str]) -> str:
        padded = [
            (row[i] if i < len(row) else "").rjust(w)
            if aligns[i] == "right"
            else (row[i] if i < len(row) else "").ljust(w)
            for i, w in enumerate(widths)
        ]
        return " | ".join(padded).rstrip()

    return [line(cells[0]), "-+-".join("-" * w for w in widths), *map(line, cells[1:])]


def _plain(node: SyntaxTreeNode) -> list[str]:
    kind = node.type
    if kind in ("paragraph", "heading"):
        return _text_of(_inline_of(node, plain=True)).split("\n")
    if kind in ("bullet_list", "ordered_list"):
        start = int(str(node.attrs.get("start", 1))) if kind == "ordered_list" else 1
        out: list[str] = []
        for i, item in enumerate(node.children):
            mark = f"{start + i}. " if kind == "ordered_list" else "- "
            body = _plain_blocks(item.children, gap=False) or [""]
            out.append(mark + body[0])
            out.extend((" " * len(mark) + line).rstrip() for line in body[1:])
        return out
    if kind == "blockquote":
        return [f"> {line}".rstrip() for line in _plain_blocks(node.children, gap=True)]
    if kind in ("fence", "code_block"):
        info = node.info.strip() if kind == "fence" else ""
        code = node.content.removesuffix("\n")
        return [f"```{info}", *code.split("\n"), "```"]
    if kind == "hr":
        return ["---"]
    if kind == "table":
        return _plain_table(node)
    if node.children:
        return _plain_blocks(node.children, gap=True)
    content = node.content.rstrip("\n")
    return content.split("\n") if content else []


def markdown_plain(text: str) -> str:
    """``text`` as plain lines that read well without styles: list marks, ``> `` quotes,
    aligned table columns, code between its fences, links as text and URL."""
    tree = _tree(text)
    return text if tree is None else "\n".join(_plain_blocks(tree.children, gap=True))
