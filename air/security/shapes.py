"""The secret shapes and the search for the lines that may hold one (IMPL-REDACT-2, -3).

Owns the provider key patterns (Anthropic, OpenAI, GitHub, GitLab, Slack, Stripe, Google, AWS,
npm, PyPI, Hugging Face), bearer/basic tokens, secret headers and ``KEY=value`` assignments as
ordered stages, each with the trigger words one of which its every match holds and the
characters it needs, and ``shapes()``: the stages compiled once, with the search for the lines
holding a trigger word (one Aho-Corasick pass over the UTF-8 of a text of ``_SCAN_MIN``
characters or more, ``str.find`` per word otherwise), so that only those lines are matched
against the stages: linear in the text. ``air.security.redact`` applies them to whole lines.
"""

from __future__ import annotations

import functools
import re
from typing import Any

__all__ = ["REDACTED", "shapes"]

REDACTED = "[REDACTED]"

_PATTERN_SOURCES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"\bsk-ant-[A-Za-z0-9_\-]{16,}", ("sk-",)),
    (r"\bsk-(proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}", ("sk-",)),
    (r"\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    (r"\bgithub_pat_[A-Za-z0-9_]{40,}", ("github_pat_",)),
    (r"\bglpat-[A-Za-z0-9_\-]{20,}", ("glpat-",)),
    (r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", ("xox",)),
    (r"\b(sk|rk|pk)_(live|test)_[A-Za-z0-9]{16,}", ("k_",)),
    (r"\bAIza[0-9A-Za-z_\-]{35}", ("AIza",)),
    (r"\b(AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b", ("AKIA",)),
    (r"\bnpm_[A-Za-z0-9]{36}\b", ("npm_",)),
    (r"\bpypi-[A-Za-z0-9_\-]{50,}", ("pypi-",)),
    (r"\bhf_[A-Za-z0-9]{30,}", ("hf_",)),
    (r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}", ("eyj",)),
    (r"(?i)(?<=[a-z]://)[^/\s:@]+:[^/\s@]+(?=@)", ("://",)),
)
"""The secret shapes replaced whole, each with the trigger words one of which each of its
matches holds: lower case, found in the lower-cased text, but the AWS and Google prefixes
(``_AWS_GOOGLE``, found as written). Compiled at the first redaction: ``shapes()``."""

_NEEDS = ("-", "-", "_", "_", "-", "-", "_", "", "", "_", "-", "_", ".", "@", ":=", "", ":=", ":=")
"""Per stage (``_PATTERN_SOURCES``, then the AWS secret, bearer, header and ``KEY=value``
stages): characters one of which each of its matches holds; a line with none skips it."""
_H = r"[^\S\n]"
"""Whitespace but a newline: no shape crosses a line."""
_ASSIGN_WORDS = (
    r"secret|token|passw(?:or)?d|passphrase|api[_-]?key|apikey|access[_-]?key|"
    r"private[_-]?key|credential|client[_-]?secret"
)
_AWS_TRIGGERS = ("key",)
_BEARER_TRIGGERS = ("bearer", "basic", "token")
_HEADER_TRIGGERS = ("auth", "key")
_ASSIGN_TRIGGERS = ("secret", "token", "pass", "key", "credential")

_AWS_GOOGLE = ("AIza", "AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA")
_GATES: dict[str, tuple[str, ...]] = {
    "_": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "k_", "npm_", "hf_"),
    "-": ("sk-", "glpat-", "pypi-", "xox"),
    "J": ("eyj",),
    ":=": ("://", "key", "auth", "secret", "pass", "credential"),
}
"""Trigger words looked for only in a text that holds one of the gate's characters (as it is,
not lower-cased), which every match of their stages holds: one fast search skips the group.
``token`` is ungated: a bearer token needs no ``:``/``=``."""
_SCAN_MIN = 4096
"""From this many characters, a text's trigger words are found by ``finder``'s one pass over
its UTF-8, not ``str.find`` per word."""


def _keep_label(m: re.Match[str]) -> str:
    return m.group(1) + m.group(2) + REDACTED


def _keep_name(m: re.Match[str]) -> str:
    return m.group(1) + REDACTED


def _header(m: re.Match[str]) -> str:
    return m.group(0) if m.group(3) == REDACTED else m.group(1) + m.group(2) + REDACTED


def _assign(m: re.Match[str]) -> str:
    return m.group(1) + m.group(2) + (REDACTED if m.group(3) != REDACTED else m.group(3))


class _Shapes:
    """The compiled secret shapes (``shapes()``: built once, by the first ``redact``; not at
    import: a run that logs nothing before its first model request does not pay the compiling).

    ``stages`` in their order (the shapes; the AWS secret; bearer/basic tokens before the
    headers, so "Authorization: Bearer <tok>" loses the token itself; ``KEY=value``), and the
    trigger words, each with the stages one of whose matches may hold it: ``finder`` over a
    long text's UTF-8, ``groups`` (by gate) and ``aws_google`` for any text."""

    def __init__(self) -> None:
        stages: list[tuple[re.Pattern[str], Any, tuple[str, ...]]] = [
            (re.compile(source), REDACTED, triggers) for source, triggers in _PATTERN_SOURCES
        ]
        aws = rf"(?i)(aws_secret_access_key{_H}*[:=]{_H}*)([A-Za-z0-9/+=]{{30,}})"
        bearer = rf"(?i)\b(bearer|basic|token)({_H}+)([A-Za-z0-9._~+/\-]{{12,}}=*)"
        header = (
            rf"(?i)\b(authorization|x-api-key|api-key|x-auth-token)({_H}*[:=]{_H}*)"
            rf"((?:(?:bearer|basic|token){_H}+)?[^\s\"',]+)"
        )
        assign = (
            rf"(?i)\b([A-Z0-9_.\-]*?(?:{_ASSIGN_WORDS})[A-Z0-9_.\-]*)"
            rf"({_H}*[:=]{_H}*)(\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'#,;]+)"
        )
        stages += [
            (re.compile(aws), _keep_name, _AWS_TRIGGERS),
            (re.compile(bearer), _keep_label, _BEARER_TRIGGERS),
            (re.compile(header), _header, _HEADER_TRIGGERS),
            (re.compile(assign), _assign, _ASSIGN_TRIGGERS),
        ]
        self.stages = [
            (pattern, repl, needs) for (pattern, repl, _), needs in zip(stages, _NEEDS, strict=True)
        ]
        masks: dict[str, int] = {}
        for index, (_, _, words) in enumerate(stages):
            for word in words:
                masks[word] = masks.get(word, 0) | (1 << index)
        gated = {word for words in _GATES.values() for word in words} | set(_AWS_GOOGLE)
        self.aws_google = re.compile("|".join(_AWS_GOOGLE))
        """The Google and AWS key prefixes, found case-sensitively in the text as it is: one
        search from their common ``A`` (``re``'s literal prefix), faster than seven."""
        self.aws_google_mask = masks["AIza"] | masks["AKIA"]
        self.groups: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = (
            ("", tuple((w, m) for w, m in masks.items() if w not in gated)),
            *((gate, tuple((w, masks[w]) for w in words)) for gate, words in _GATES.items()),
        )
        self.all = (1 << len(stages)) - 1
        self._masks = masks

    @functools.cached_property
    def finder(self) -> tuple[Any, tuple[int, ...]]:
        """Every trigger word in every ASCII case (~1,900 words; the AWS and Google prefixes as
        written) at once over a text's UTF-8: one pass, linear, the GIL released (IMPL-REDACT-3);
        and the stages of each word. Built (~6 ms) at the first text of ``_SCAN_MIN``
        characters."""
        from ahocorasick_rs import BytesAhoCorasick, Implementation

        masks = self._masks.items()
        forms = [(v, m) for word, m in masks if word not in _AWS_GOOGLE for v in _cases(word)]
        forms += [(w, self.aws_google_mask) for w in _AWS_GOOGLE]
        words = [w.encode("ascii") for w, _ in forms]
        finder = BytesAhoCorasick(words, implementation=Implementation.DFA)
        return finder, tuple(m for _, m in forms)

    def apply(self, text: str, mask: int) -> str:
        """The stages in ``mask``, in order, over ``text``."""
        for index, (pattern, repl, needs) in enumerate(self.stages):
            if mask >> index & 1 and (not needs or any(c in text for c in needs)):
                text = pattern.sub(repl, text)
        return text

    def apply_to_lines(self, text: str) -> str:
        """The stages over the lines of ``text`` that hold a trigger word (each line only the
        stages its trigger words name); the rest as it is.

        Exact because no stage crosses a newline, every match holds one of its stage's trigger
        words and ``[REDACTED]`` holds none, and the search finds every trigger word ``(?i)``
        would match: ``finder`` over the UTF-8 bytes (ASCII words in every case; no other
        character's bytes can be part of a match) unless the text holds a character ``(?i)``
        matches as an ASCII letter, ``str.find`` on ``_trigger_case`` otherwise."""
        if len(text) < _SCAN_MIN or any(odd in text for odd in _ODD_LETTERS):
            return self.apply_to_spans(text, self._spans(text))
        if text.isascii():
            return self.apply_to_spans(text, self._scan(text.encode("ascii")))
        data = text.encode("utf-8", "surrogatepass")
        return self.apply_to_spans(text, self._scan(data), data)

    def apply_to_spans(
        self, text: str, spans: dict[int, tuple[int, int]] | None, data: bytes | None = None
    ) -> str:
        """The stages of each of ``spans`` over its line (None: all stages over all); the spans
        index ``data``, the UTF-8 of ``text``, when it is given, else ``text``."""
        if spans is None:
            return self.apply(text, self.all)
        if not spans:
            return text

        def piece(start: int, end: int) -> str:
            if data is None:
                return text[start:end]
            return data[start:end].decode("utf-8", "surrogatepass")  # whole lines: whole chars

        out: list[str] = []
        done = 0
        for start in sorted(spans):
            end, mask = spans[start]
            line = piece(start, end)
            redacted = self.apply(line, mask)
            if redacted != line:
                out += (piece(done, start), redacted)
                done = end
        if not out:  # no line held a secret: the text as it came, not a copy
            return text
        out.append(piece(done, len(text) if data is None else len(data)))
        return "".join(out)

    def _scan(self, data: bytes) -> dict[int, tuple[int, int]]:
        """The lines of UTF-8 ``data`` holding a trigger word (start -> end, mask; byte
        offsets): one pass of ``finder``, every occurrence (overlapping) reported."""
        spans: dict[int, tuple[int, int]] = {}
        start = end = -1
        finder, masks = self.finder
        for index, at, _ in finder.find_matches_as_indexes(data, overlapping=True):
            if start <= at < end:  # the line of the last match (a start may go back: matches
                spans[start] = (end, spans[start][1] | masks[index])  # come by their end)
            else:
                start = data.rfind(b"\n", 0, at) + 1
                end = data.find(b"\n", at)
                end = len(data) if end == -1 else end
                known = spans.get(start)
                spans[start] = (end, masks[index] if known is None else known[1] | masks[index])
        return spans

    def _spans(self, text: str) -> dict[int, tuple[int, int]] | None:
        """``_scan`` for any text, by character: ``str.find`` of each trigger word on the lower case
        (a group only where its gate's characters are), the AWS and Google prefixes as
        written; None when no lower case of ``text`` keeps every character's index."""
        lower = _trigger_case(text)
        if len(lower) != len(text):
            return None
        spans: dict[int, tuple[int, int]] = {}
        for gate, triggers in self.groups:
            if gate and not any(c in text for c in gate):
                continue
            self._find(text, lower, triggers, spans)
        for match in self.aws_google.finditer(text):
            self._add_line(text, match.start(), self.aws_google_mask, spans)
        return spans

    @staticmethod
    def _find(
        text: str,
        lower: str,
        triggers: tuple[tuple[str, int], ...],
        spans: dict[int, tuple[int, int]],
    ) -> None:
        """Add the line of each occurrence of a trigger word to ``spans`` (start -> end, mask)."""
        for word, mask in triggers:
            at = lower.find(word)
            while at != -1:
                at = lower.find(word, _Shapes._add_line(text, at, mask, spans)[1])

    @staticmethod
    def _add_line(
        text: str, at: int, mask: int, spans: dict[int, tuple[int, int]]
    ) -> tuple[int, int]:
        """Add the line holding index ``at`` to ``spans`` with ``mask``; its start and end."""
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end == -1 else end
        known = spans.get(start)
        spans[start] = (end, mask if known is None else known[1] | mask)
        return start, end


_CASE_ODD = (("\u0130", "i"), ("\u0131", "i"), ("\u017f", "s"))
"""Characters the shapes' ``(?i)`` matches as ``i`` or ``s`` whose ``str.lower`` is not that
letter (``İ`` even lowers to two characters); the Kelvin sign lowers to ``k`` already."""
_ODD_LETTERS = (*(odd for odd, _ in _CASE_ODD), "\u212a")
"""Every character but the ASCII letters that ``(?i)`` matches as an ASCII letter: a text
holding one is searched with ``_trigger_case``, not ``finder``'s ASCII words."""


def _cases(word: str) -> list[str]:
    """``word`` in every ASCII case (``key``, ``Key``, ..., ``KEY``)."""
    forms = [""]
    for c in word:
        forms = [f + x for f in forms for x in dict.fromkeys((c.lower(), c.upper()))]
    return forms


def _trigger_case(text: str) -> str:
    """``text`` lower-cased for the trigger search, one character for one, where ``(?i)``
    would match a trigger word the lower case would not show."""
    for odd, plain in _CASE_ODD:
        if odd in text:
            text = text.replace(odd, plain)
    return text.lower()


@functools.cache
def shapes() -> _Shapes:
    return _Shapes()
