"""clang's structured diagnostics: the ``--serialize-diagnostics`` file (LLVM bitstream) read,
the oracle the corpus tests hold air's text parser against (air reads no such file itself).

Owns ``parse_serialized_diagnostics``: a small LLVM bitstream reader (abbreviations, the
BLOCKINFO block, fixed/VBR/array/char6/blob operands) and the clang serialized-diagnostics
schema on top of it (``Diag`` blocks with ``DiagInfo``, ``FileName``, ``DiagFlag`` records;
nested ``Diag`` blocks are the notes). clang 14, installed here, writes no SARIF or JSON; this
is its structured form. The result follows the same rules as the text parser (notes attached,
instantiation notes collapsed into the backtrace) so the two forms of one build agree.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

from air.contracts.error import AirException, ErrorKind
from air.contracts.tool import DiagnosticSeverity
from air.cpp.parsed_diagnostic import ParsedDiagnostic
from air.cpp.signatures import make_signature

__all__ = ["parse_serialized_diagnostics"]

_MAGIC = b"DIAG"
_BLOCKINFO = 0
_DIAG_BLOCK = 9
_RECORD_DIAG = 2
_RECORD_FLAG = 4
_RECORD_FILENAME = 6
_LEVEL = {
    1: DiagnosticSeverity.NOTE,
    2: DiagnosticSeverity.WARNING,
    3: DiagnosticSeverity.ERROR,
    4: DiagnosticSeverity.ERROR,
    5: DiagnosticSeverity.NOTE,
}
_CHAR6 = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._"
_BACKTRACE = ("in instantiation of", "in file included from", "while substituting")


def _bad(message: str) -> AirException:
    return AirException.of(
        kind=ErrorKind.TOOL_ERROR,
        message=f"the serialized diagnostics file is broken: {message}",
        user_action="Run the build again; clang rewrites the file on each compile.",
    )


class _Bits:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0  # in bits

    def at_end(self) -> bool:
        return self.pos + 32 > len(self.data) * 8 and self.pos >= len(self.data) * 8 - 7

    def read(self, width: int) -> int:
        if width == 0:
            return 0
        end = self.pos + width
        if end > len(self.data) * 8:
            raise _bad("truncated")
        start_byte, end_byte = self.pos >> 3, (end + 7) >> 3
        chunk = int.from_bytes(self.data[start_byte:end_byte], "little")
        value = (chunk >> (self.pos & 7)) & ((1 << width) - 1)
        self.pos = end
        return value

    def vbr(self, width: int) -> int:
        hi = 1 << (width - 1)
        value = 0
        shift = 0
        while True:
            piece = self.read(width)
            value |= (piece & (hi - 1)) << shift
            if not piece & hi:
                return value
            shift += width - 1
            if shift > 64:
                raise _bad("a VBR value is too long")

    def align32(self) -> None:
        self.pos = (self.pos + 31) & ~31


@dataclass
class _Op:
    literal: int | None = None
    encoding: int = 0
    width: int = 0


@dataclass
class _Block:
    block_id: int
    width: int
    abbrevs: list[list[_Op]] = field(default_factory=list)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.bits = _Bits(data)
        self.info: dict[int, list[list[_Op]]] = {}

    def _define(self) -> list[_Op]:
        ops: list[_Op] = []
        count = self.bits.vbr(5)
        while len(ops) < count:
            if self.bits.read(1):
                ops.append(_Op(literal=self.bits.vbr(8)))
                continue
            encoding = self.bits.read(3)
            width = self.bits.vbr(5) if encoding in (1, 2) else 0
            if encoding not in (1, 2, 3, 4, 5):
                raise _bad(f"unknown operand encoding {encoding}")
            ops.append(_Op(encoding=encoding, width=width))
        return ops

    def _scalar(self, op: _Op) -> int:
        if op.literal is not None:
            return op.literal
        if op.encoding == 1:
            return self.bits.read(op.width)
        if op.encoding == 2:
            return self.bits.vbr(op.width)
        if op.encoding == 4:
            return ord(_CHAR6[self.bits.read(6)])
        raise _bad("an array or blob where a scalar was expected")

    def _record(self, abbrev: list[_Op]) -> tuple[int, list[int], bytes | None]:
        values: list[int] = []
        blob: bytes | None = None
        i = 0
        while i < len(abbrev):
            op = abbrev[i]
            if op.literal is None and op.encoding == 3:
                length = self.bits.vbr(6)
                element = abbrev[i + 1]
                values += [self._scalar(element) for _ in range(length)]
                i += 2
                continue
            if op.literal is None and op.encoding == 5:
                length = self.bits.vbr(6)
                self.bits.align32()
                start = self.bits.pos >> 3
                blob = self.bits.data[start : start + length]
                self.bits.pos += length * 8
                self.bits.align32()
                i += 1
                continue
            values.append(self._scalar(op))
            i += 1
        if not values:
            raise _bad("a record without a code")
        return values[0], values[1:], blob

    def walk(self) -> list[tuple[list[int], str, tuple[int, list[int], bytes | None]]]:
        """Every record as (enclosing block-id path, "", (code, ops, blob)), in order."""
        out: list[tuple[list[int], str, tuple[int, list[int], bytes | None]]] = []
        stack: list[_Block] = [_Block(-1, 2)]
        current_info: int | None = None
        while self.bits.pos < len(self.bits.data) * 8 - 31 or len(stack) > 1:
            block = stack[-1]
            abbrev_id = self.bits.read(block.width)
            if abbrev_id == 0:  # END_BLOCK
                self.bits.align32()
                if len(stack) == 1:
                    break
                stack.pop()
                continue
            if abbrev_id == 1:  # ENTER_SUBBLOCK
                block_id = self.bits.vbr(8)
                width = self.bits.vbr(4)
                self.bits.align32()
                self.bits.read(32)  # length in words
                stack.append(_Block(block_id, width, list(self.info.get(block_id, []))))
                continue
            if abbrev_id == 2:  # DEFINE_ABBREV
                ops = self._define()
                if block.block_id == _BLOCKINFO:
                    if current_info is None:
                        raise _bad("an abbreviation before SETBID")
                    self.info.setdefault(current_info, []).append(ops)
                else:
                    block.abbrevs.append(ops)
                continue
            if abbrev_id == 3:  # UNABBREV_RECORD
                code = self.bits.vbr(6)
                values = [self.bits.vbr(6) for _ in range(self.bits.vbr(6))]
                record: tuple[int, list[int], bytes | None] = (code, values, None)
            else:
                index = abbrev_id - 4
                if index >= len(block.abbrevs):
                    raise _bad(f"unknown abbreviation {abbrev_id}")
                record = self._record(block.abbrevs[index])
            if block.block_id == _BLOCKINFO:
                if record[0] == 1:  # SETBID
                    current_info = record[1][0]
                continue
            out.append(([b.block_id for b in stack[1:]], "", record))
        return out


def parse_serialized_diagnostics(data: bytes, root: str | None = None) -> list[ParsedDiagnostic]:
    """The diagnostics of a ``clang --serialize-diagnostics`` file, in the text parser's shape.

    Raises:
        AirException(tool_error): not a serialized diagnostics file, or a broken one.
    """
    if not data.startswith(_MAGIC):
        raise _bad("it does not start with DIAG")
    records = _Reader(data[4:]).walk()
    files: dict[int, str] = {}
    flags: dict[int, str] = {}
    real_root = os.path.realpath(root) if root else None
    out: list[ParsedDiagnostic] = []
    notes: list[ParsedDiagnostic] = []
    backtrace: list[str] = []
    current: ParsedDiagnostic | None = None

    def finish() -> None:
        if current is not None:
            out.append(
                replace(
                    current,
                    notes=tuple(notes),
                    backtrace=tuple(backtrace),
                    semantic_signature=make_signature(
                        current.severity, current.tool, current.code, current.message
                    ),
                )
            )

    for path, _, (code, ops, blob) in records:
        text = (blob or b"").decode("utf-8", "replace")
        if code == _RECORD_FILENAME and len(ops) >= 1 and _DIAG_BLOCK in path:
            name = os.path.normpath(text)
            if real_root and os.path.isabs(name):
                rel = os.path.relpath(name, real_root)
                name = rel if not rel.startswith("..") else name
            files[ops[0]] = name
        elif code == _RECORD_FLAG and ops:
            flags[ops[0]] = text
        elif code == _RECORD_DIAG and len(ops) >= 7:
            severity = _LEVEL.get(ops[0], DiagnosticSeverity.ERROR)
            file = files.get(ops[1])
            line = ops[2] or None
            column = ops[3] or None
            flag = f"-W{flags[ops[6]]}" if ops[6] and ops[6] in flags else None
            diag = ParsedDiagnostic(
                severity=severity,
                message=text.strip(),
                file=file,
                line=line,
                column=column,
                code=flag,
                tool="compiler",
                fatal=ops[0] == 4,
            )
            nested = path.count(_DIAG_BLOCK) > 1
            if severity == DiagnosticSeverity.NOTE and (nested or current is not None):
                if diag.message.startswith(_BACKTRACE):
                    backtrace.append(f"{file}:{line}:{column or 0}: {diag.message}")
                else:
                    notes.append(diag)
                continue
            finish()
            current, notes, backtrace = diag, [], []
    finish()
    return out
