"""A file's text as the project holds it: line breaks, a UTF-8 byte order mark and bytes that
are no UTF-8 (IMPL-FS-5).

Owns ``TextForm`` / ``form_of`` (what fs.read tells the model of a file's form), ``file_text`` (a
file's text as the model and a diff see it, UTF-16 by its byte order mark), ``replace_in``
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

import codecs
from typing import NamedTuple

from air.contracts.error import AirException, ErrorKind

__all__ = [
    "UTF16_MARKS",
    "TextForm",
    "crlf_bytes",
    "file_text",
    "form_of",
    "replace_in",
    "to_lf",
    "written",
]

BOM = "\ufeff"
_UTF16 = ((codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
UTF16_MARKS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
"""What a UTF-16 file starts with (``bytes.startswith`` takes the tuple)."""


def _utf16(data: bytes) -> str | None:
    """The codec of a UTF-16 file with its byte order mark (a Windows resource script), when
    all of it decodes; else None (read as UTF-8)."""
    for mark, codec in _UTF16:
        if data.startswith(mark) and not data.startswith(codecs.BOM_UTF32_LE):
            try:
                data[2:].decode(codec)
            except UnicodeDecodeError:
                return None
            return codec
    return None


def _as_text(data: bytes) -> str:
    """A file's text: UTF-16 by its byte order mark, else UTF-8 with the bytes that are no
    UTF-8 kept as surrogates (``surrogateescape``: written back unchanged)."""
    codec = _utf16(data)
    if codec is not None:
        return data[2:].decode(codec)
    return data.decode("utf-8", "surrogateescape")


def file_text(data: bytes) -> str:
    """A file's text as the model and a diff see it: UTF-16 by its byte order mark, else
    UTF-8 with each undecodable sequence as U+FFFD."""
    codec = _utf16(data)
    return data.decode("utf-8", "replace") if codec is None else data[2:].decode(codec)


def _as_bytes(text: str, codec: str | None) -> bytes:
    if codec is None:
        return text.encode("utf-8", "surrogateescape")
    mark = codecs.BOM_UTF16_LE if codec == "utf-16-le" else codecs.BOM_UTF16_BE
    return mark + text.encode(codec)


class TextForm(NamedTuple):
    """``line_breaks``: ``crlf`` (every line break is CRLF), ``lf``, ``mixed`` or ``none``;
    ``bom``: the text starts with a UTF-8 byte order mark; ``undecodable``: the offset of the
    first byte that is no UTF-8 (None: all of it is); ``utf16``: the UTF-16 codec of a file
    that starts with its byte order mark (None: UTF-8)."""

    line_breaks: str
    bom: bool
    undecodable: int | None
    utf16: str | None = None


def _breaks(text: str | bytes) -> str:
    """Counted on the bytes of a UTF-8 file (a byte 0x0a or 0x0d is only ever that character
    there: no decode), on the text of a UTF-16 one."""
    if isinstance(text, bytes):
        if b"\r" not in text:  # memchr: a file with no CR (most) is not counted
            return "lf" if b"\n" in text else "none"
        lf, crlf = text.count(b"\n"), text.count(b"\r\n")
    else:
        lf, crlf = text.count("\n"), text.count("\r\n")
    if lf == 0:
        return "none"
    return "crlf" if crlf == lf else "lf" if crlf == 0 else "mixed"


def form_of(data: bytes) -> TextForm:
    """The form of ``data``, a file's bytes."""
    codec = _utf16(data)
    if codec is not None:
        return TextForm(_breaks(data[2:].decode(codec)), False, None, codec)
    undecodable = None
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            undecodable = exc.start
    return TextForm(_breaks(data), data.startswith(codecs.BOM_UTF8), undecodable)


def _to_crlf(text: str) -> str:
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
    text = _as_text(data)
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
        old = _to_crlf(old)
    count = text.count(old)
    if count == 0 and form.line_breaks == "mixed" and "\n" in old and "\r" not in old:
        count = text.count(_to_crlf(old))
        if count:
            old, crlf = _to_crlf(old), True
    if crlf and "\r" not in new:
        new = _to_crlf(new)
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
    return _as_bytes(after, form.utf16)


def written(before: bytes | None, content: str) -> bytes:
    """The bytes fs.write writes for ``content``: a new file as given (UTF-8); an existing one
    whose line breaks are all CRLF keeps them, one that starts with a byte order mark keeps it,
    a UTF-16 one stays UTF-16, when ``content`` has neither (a model writes LF and drops the
    mark: rewriting a file must not change every line of it, nor what MSVC reads its encoding
    by)."""
    if before is None:
        return content.encode("utf-8")
    form = form_of(before)
    if form.line_breaks == "crlf" and "\r" not in content:
        content = _to_crlf(content)
    if form.bom and not content.startswith(BOM):
        content = BOM + content
    if form.utf16 is not None:
        return _as_bytes(content.removeprefix(BOM), form.utf16)
    return content.encode("utf-8")
