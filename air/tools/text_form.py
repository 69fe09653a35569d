"""A file's text as the project holds it: line breaks, a UTF-8 byte order mark and bytes that
are no UTF-8 (IMPL-FS-5).

Owns ``TextForm`` / ``form_of`` (what fs.read tells the model of a file's form), ``replace_in``
(fs.edit's exact replacement, in the file's own line breaks and bytes), ``written`` (fs.write's
bytes: an existing file keeps its CRLF line breaks and its byte order mark) and ``to_lf`` /
``crlf_bytes`` (fs.patch applies a patch written with LF line breaks to a CRLF file).

Why: projects hold Windows line breaks (a C++ tree from Visual Studio) and legacy encodings
(a Latin-1 comment); a model writes LF and reads undecodable bytes as U+FFFD. An edit must still
match, and must change only what it replaces: never a whole file's line breaks, never the bytes
around it. Bytes that are no UTF-8 travel through an edit unchanged (``surrogateescape``); an
edit may not add non-ASCII text beside them (the file's encoding is unknown: UTF-8 there would
mix two encodings in one file).
"""

from __future__ import annotations

from typing import NamedTuple

from air.contracts.error import AirException, ErrorKind

__all__ = ["TextForm", "crlf_bytes", "form_of", "replace_in", "to_crlf", "to_lf", "written"]

BOM = "\ufeff"


class TextForm(NamedTuple):
    """``line_breaks``: ``crlf`` (every line break is CRLF), ``lf``, ``mixed`` or ``none``;
    ``bom``: the text starts with a UTF-8 byte order mark; ``undecodable``: the offset of the
    first byte that is no UTF-8 (None: all of it is)."""

    line_breaks: str
    bom: bool
    undecodable: int | None


def _breaks(text: str) -> str:
    lf = text.count("\n")
    if lf == 0:
        return "none"
    crlf = text.count("\r\n")
    return "crlf" if crlf == lf else "lf" if crlf == 0 else "mixed"


def form_of(data: bytes) -> TextForm:
    """The form of ``data``, a file's bytes."""
    try:
        data.decode("utf-8")
        undecodable = None
    except UnicodeDecodeError as exc:
        undecodable = exc.start
    text = data.decode("utf-8", "surrogateescape")
    return TextForm(_breaks(text), text.startswith(BOM), undecodable)


def to_crlf(text: str) -> str:
    """LF line breaks as CRLF (text with no CR: what a model wrote)."""
    return text.replace("\n", "\r\n")


def to_lf(data: bytes) -> bytes:
    """A CRLF file's bytes with LF line breaks; ``crlf_bytes`` gives them back exactly when
    every line break was CRLF (a lone CR stays as it is both ways)."""
    return data.replace(b"\r\n", b"\n")


def crlf_bytes(data: bytes) -> bytes:
    """``to_lf``'s inverse: every LF as CRLF."""
    return data.replace(b"\n", b"\r\n")


def _bad(message: str, action: str) -> AirException:
    return AirException.of(kind=ErrorKind.TOOL_ERROR, message=message, user_action=action)


def _not_utf8(path: str, data: bytes, at: int) -> str:
    return f"{path} is not UTF-8 text (byte 0x{data[at]:02x} at offset {at})"


def replace_in(path: str, data: bytes, old: str, new: str, *, replace_all: bool) -> bytes:
    """``data`` (``path``'s bytes) with ``old`` replaced by ``new`` exactly, in the file's own
    form: where the file's line breaks are CRLF and the model wrote LF, both strings are taken
    as CRLF (the whole file when all its breaks are, the matched text when they are mixed);
    bytes that are no UTF-8 are kept as they are. Fails when ``old`` is absent, or ambiguous
    without ``replace_all``, or when ``new`` would add non-ASCII text to a file that is no
    UTF-8."""
    if old == "":
        raise _bad("old_string is empty", "Give the exact text to replace, copied from fs.read.")
    text = data.decode("utf-8", "surrogateescape")
    form = form_of(data)
    if form.undecodable is not None and not new.isascii():
        raise _bad(
            _not_utf8(path, data, form.undecodable)
            + ": new_string may add only ASCII text to it (its encoding is unknown; UTF-8 "
            "beside it would mix two encodings in one file)",
            "Write the non-ASCII text as an escape the language reads (\\u00fc), or rewrite the "
            "whole file with fs.write, which writes UTF-8.",
        )
    crlf = form.line_breaks == "crlf"
    if crlf and "\r" not in old:
        old = to_crlf(old)
    count = text.count(old)
    if count == 0 and form.line_breaks == "mixed" and "\n" in old and "\r" not in old:
        count = text.count(to_crlf(old))
        if count:
            old, crlf = to_crlf(old), True
    if crlf and "\r" not in new:
        new = to_crlf(new)
    if count == 0:
        if form.undecodable is not None and "\ufffd" in old:
            raise _bad(
                f"old_string was not found: it holds U+FFFD, which fs.read shows for the bytes "
                f"of {path} that are no UTF-8 (the file holds other bytes there)",
                "Choose old_string from the text around those bytes.",
            )
        raise _bad(
            "old_string was not found (exact match, no indentation guessing)",
            "Read the file again and copy old_string exactly.",
        )
    if count > 1 and not replace_all:
        raise _bad(
            f"old_string occurs {count} times", "Add context to make it unique or set replace_all."
        )
    after = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    return after.encode("utf-8", "surrogateescape")


def written(before: bytes | None, content: str) -> bytes:
    """The bytes fs.write writes for ``content``: a new file as given; an existing one whose
    line breaks are all CRLF keeps them, and one that starts with a byte order mark keeps it,
    when ``content`` has neither (a model writes LF and drops the mark: rewriting a file must
    not change every line of it, nor what MSVC reads its encoding by)."""
    if before is None:
        return content.encode("utf-8")
    form = form_of(before)
    if form.line_breaks == "crlf" and "\r" not in content:
        content = to_crlf(content)
    if form.bom and not content.startswith(BOM):
        content = BOM + content
    return content.encode("utf-8")
