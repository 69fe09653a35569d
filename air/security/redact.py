"""SecretRedactor: remove secrets from text before it reaches a log, an event or an artifact.

Owns the redactor (SDD §9.2, §16; baselines §A.11): the secret shapes of ``air.security.shapes``
over whole lines, private key blocks, and exact values registered at runtime, e.g. from
environment variables whose names look secret (``looks_secret_env_name``: ``*_KEY``, ``*_PAT``,
``*_PASS``, ``*_PWD``, ``*_TOKEN*``, ``*_SECRET*``, providers' names) when the value is no
ordinary text (``registrable_secret``); and ``RedactingStream``, the same redaction of a stream
fed in chunks (IMPL-REDACT-2).

Every shape and value lies within one line: registered values are registered line by line, one
alternation, longest first (past a few, found in one automaton pass first: IMPL-REDACT-3); the
patterns' whitespace never crosses a newline; a private key block is a line state (its BEGIN
line, then key lines until its END line). A line longer than ``LINE_MAX`` is redacted in pieces
of that size. So text can be redacted a batch of whole lines at a time: linear in the output.
"""

from __future__ import annotations

import codecs
import functools
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from air.security.shapes import REDACTED, shapes

__all__ = [
    "CUT_MARGIN",
    "LINE_MAX",
    "REDACTED",
    "WELL_KNOWN_SECRET_NAMES",
    "RedactingStream",
    "SecretRedactor",
    "looks_secret_env_name",
    "looks_secret_name",
    "registrable_secret",
]


SECRET_NAME_PATTERN = (
    r"(?i)(secret|token|passw(or)?d|passphrase|api[_-]?key|apikey|access[_-]?key|private[_-]?key|"
    r"auth(?!or)|credential|session[_-]?key|client[_-]?secret|signing[_-]?key|webhook|dsn|cookie)"
)
"""What a secret's name contains (searched anywhere, any case). An ASCII name, which every
environment name in practice is, is matched by ``_ASCII_SECRET_WORDS`` on its lower case, the
same set of names; any other name by this pattern (compiled at its first use: its Unicode case
folding is the regular expression engine's)."""

_KEY = ("key", "_key", "-key")
_ASCII_SECRET_WORDS = (
    "secret",
    "token",
    "passwd",
    "password",
    "passphrase",
    *(word + key for word in ("api", "access", "private", "session", "signing") for key in _KEY),
    "credential",
    "webhook",
    "dsn",
    "cookie",
)
"""``SECRET_NAME_PATTERN`` spelled out for lower-case ASCII, but ``auth(?!or)``
(``_has_auth``); ``client[_-]?secret`` holds ``secret``."""

_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----")
_PEM_BODY = re.compile(r"[A-Za-z0-9+/=\s]*|[A-Za-z][A-Za-z0-9-]*:[^\n]*")
"""A line inside a private key block: key material (base64, blank) or a header
(``Proc-Type: 4,ENCRYPTED``). Any other line ends a block that has no END line."""
_DIFF_KEY_LINE = re.compile(r"^([-+ ]|@@ [^@\n]* @@ )([A-Za-z0-9+/]{40,}={0,2})$", re.MULTILINE)
"""A unified diff's line that holds only 40 or more base64 characters behind its marker, or
a hunk header whose context (git's function line: the last before the hunk) is such a line."""
_PEM_WORD = "PRIVATE KEY"
_FEW_VALUES = 8
"""Up to this many registered values, a text is searched for each (``in``, fast) before the
alternation runs over it; past it, for all at once (``_Values``: one pass of an automaton)."""
LINE_MAX = 1 << 20
"""A line longer than this many characters is redacted in pieces of this size (a secret across
such a cut is not seen whole): what bounds a ``RedactingStream``'s memory."""
CUT_MARGIN = 4096
"""How far past a cut ``SecretRedactor.redact_cut`` reads at least (a private key block longer
than this past the cut is still redacted: its lines are key material to the end of the text)."""


def looks_secret_name(name: str) -> bool:
    """True when an environment variable or key name suggests its value is a secret."""
    if name.lower().endswith(("_ref", "_id", "_ids", "_count", "_tokens", "tokens")):
        return False
    if name.isascii():
        lower = name.lower()
        return _has_auth(lower) or any(word in lower for word in _ASCII_SECRET_WORDS)
    return _secret_name().search(name) is not None


_SECRET_SUFFIXES = ("_key", "_pat", "_pass", "_passwd", "_password", "_pwd", "_credentials")
"""Environment names ending so (any case) hold a secret too (``DB_PASS``, ``GH_PAT``,
``MY_SERVICE_KEY``, ``MYSQL_PWD``); ``*_SECRET*``, ``*_TOKEN*``, ``*_PASSWORD`` are the words."""
WELL_KNOWN_SECRET_NAMES = frozenset(
    {
        "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "GOOGLE_API_KEY",
        "GEMINI_API_KEY", "MISTRAL_API_KEY", "GROQ_API_KEY", "OPENROUTER_API_KEY",
        "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "GITHUB_TOKEN", "GH_TOKEN", "GH_PAT",
        "GITLAB_TOKEN", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "NPM_TOKEN", "PYPI_TOKEN",
        "TWINE_PASSWORD", "PGPASSWORD", "MYSQL_PWD", "AZURE_STORAGE_CONNECTION_STRING",
        "AZURE_CLIENT_SECRET", "BW_SESSION", "VAULT_TOKEN", "SLACK_BOT_TOKEN",
    }
)  # fmt: skip
"""Providers' own names (most also match the words or suffixes; ``BW_SESSION`` and
``AZURE_STORAGE_CONNECTION_STRING`` only here)."""
_ORDINARY_VALUE_MIN = 8
"""A by-name environment value shorter than this is not registered (``no``, ``true``, ``1``)."""
_PLAIN_VALUE_MAX = 16
"""A number or a one-case word this long or longer is a secret all the same (a passphrase of
lowercase letters, a long numeric PIN): no ordinary word or count is that long."""


def looks_secret_env_name(name: str) -> bool:
    """True when an environment variable's name says its value is a secret (IMPL-REDACT-1):
    ``looks_secret_name``, a ``_SECRET_SUFFIXES`` ending or a ``WELL_KNOWN_SECRET_NAMES`` name;
    case-insensitive."""
    upper = name.upper()
    if upper in WELL_KNOWN_SECRET_NAMES or upper.startswith("OP_SESSION_"):
        return True
    return looks_secret_name(name) or name.lower().endswith(_SECRET_SUFFIXES)


def registrable_secret(value: str) -> bool:
    """True when an environment value found by name is worth redacting wherever it shows: at
    least 8 characters and not a number or one-case word under 16 characters (``directory``,
    ``Disabled``) or an absolute or home path (``/usr/bin``, ``~/.ssh/id_rsa``: where a secret
    lies, not the secret). Replacing such a value everywhere would mangle ordinary text."""
    value = value.strip()
    if len(value) < _ORDINARY_VALUE_MIN:
        return False
    if len(value) < _PLAIN_VALUE_MAX and (
        value.isdigit()
        or (value.isalpha() and (value.islower() or value.isupper() or value.istitle()))
    ):
        return False
    return not value.startswith(("/", "~/"))


def _has_auth(lower: str) -> bool:
    """``auth`` not followed by ``or`` somewhere in ``lower`` (``author`` is no secret)."""
    at = lower.find("auth")
    while at != -1:
        if not lower.startswith("or", at + 4):
            return True
        at = lower.find("auth", at + 1)
    return False


@functools.cache
def _secret_name() -> re.Pattern[str]:
    return re.compile(SECRET_NAME_PATTERN)


class _Values:
    """Registered values, longest first: their alternation, and whether a text holds any."""

    def __init__(self, ordered: list[str]) -> None:
        self.pattern = re.compile("|".join(re.escape(v) for v in ordered))
        self._ordered = ordered
        self.longest = len(ordered[0]) if ordered else 0
        self._finder: Any = None
        """Past ``_FEW_VALUES``: an automaton of them all, built at the first search."""

    def held_by(self, text: str) -> bool:
        if len(self._ordered) <= _FEW_VALUES:
            return any(v in text for v in self._ordered)
        if self._finder is None:
            from ahocorasick_rs import BytesAhoCorasick, Implementation

            self._finder = BytesAhoCorasick(
                [v.encode("utf-8", "surrogatepass") for v in self._ordered],
                implementation=Implementation.DFA,
            )
        data = text.encode("utf-8", "surrogatepass")
        return bool(self._finder.find_matches_as_indexes(data))


class SecretRedactor:
    """Replace secrets in text with ``[REDACTED]`` (SDD §9.2 ``SecretRedactor.redact``).

    Thread-safe; values registered with ``register`` are replaced wherever they occur.
    """

    def __init__(self, values: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._values: set[str] = set()
        self._exact: _Values | None = None
        """The registered values; one attribute, replaced whole (read without the lock)."""
        self.register(*values)

    def register(self, *values: str) -> None:
        """Add exact secret values (ignored when shorter than 6 characters); a value of several
        lines is registered line by line."""
        with self._lock:
            changed = False
            for value in values:
                for line in value.split("\n"):
                    for candidate in {line, line.strip()}:
                        if len(candidate) >= 6 and candidate not in self._values:
                            self._values.add(candidate)
                            changed = True
            if changed:
                self._exact = _Values(sorted(self._values, key=len, reverse=True))

    def register_environment(self, environ: Mapping[str, str]) -> int:
        """Register the values of variables whose names look secret (``looks_secret_env_name``)
        and which are no ordinary text (``registrable_secret``); return how many."""
        found = [
            v for k, v in environ.items() if looks_secret_env_name(k) and registrable_secret(v)
        ]
        self.register(*found)
        return len(found)

    def register_env_file(self, text: str) -> int:
        """Register the values of a ``.env`` file (every ``KEY=value`` line)."""
        values = []
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith("#") or "=" not in line:
                continue
            value = line.split("=", 1)[1].strip().strip("'\"")
            if len(value) >= 6:
                values.append(value)
        self.register(*values)
        return len(values)

    def redact(self, text: str) -> str:
        """Return ``text`` with every known secret shape and registered value replaced."""
        if not text:
            return text
        if len(text) <= LINE_MAX and _PEM_WORD not in text:
            return self.redact_lines(text)
        stream = RedactingStream(self)
        return stream.feed(text) + stream.finish()

    def redact_cut(self, text: str, limit: int, *, start: int = 0, end: int | None = None) -> str:
        """The first ``limit`` characters of ``text[start:end]`` redacted: redacted before the
        cut, as cutting first left a secret across the cut no longer whole and its first
        characters kept. What follows the cut is read as far as the longest registered value
        (at least ``CUT_MARGIN`` characters, longer than any shape the redactor knows).

        As the part reads within ``text``: from a ``start`` (a line's first character) inside
        a private key block whose BEGIN line lies before it, the block's lines are redacted
        too. Redacted alone, a part without that line held no key to the redactor."""
        stop = start + limit + self._margin()
        part = text[start : stop if end is None else min(end, stop)]
        opening = text.rfind(_PEM_WORD, 0, start) if start else -1
        if opening == -1:
            return self.redact(part)[:limit]
        stream = RedactingStream(self)
        # the block's state where the part begins: read from the line of the last mention
        stream.feed(text[text.rfind("\n", 0, opening) + 1 : text.rfind("\n", 0, start) + 1])
        return (stream.feed(part) + stream.finish())[:limit]

    def redact_diff(self, text: str, limit: int | None = None) -> str:
        """A unified diff redacted as any text, then each line that holds only 40 or more
        base64 characters, capitals, small letters and digits among them (key material; a hex
        digest has no capitals), and a hunk header's context that is one: a hunk inside a
        private key block shows its lines without the BEGIN line that makes them key to the
        redactor, and a removed line's ``-`` ended a block whose BEGIN it showed. With
        ``limit``: its first ``limit`` characters, redacted before the cut (``redact_cut``)."""
        if limit is None:
            return _DIFF_KEY_LINE.sub(_key_material, self.redact(text))
        return self.redact_diff(text[: limit + self._margin()])[:limit]

    def _margin(self) -> int:
        """How far past a cut the redactor reads: the longest registered value, at least
        ``CUT_MARGIN`` characters."""
        exact = self._exact
        return max(CUT_MARGIN, exact.longest if exact is not None else 0)

    def redacted_lines(self, text: str) -> list[str] | None:
        """``text`` redacted whole, split at its newlines (redaction keeps every newline), for
        a caller showing many of its lines; None when no private key block can make a line's
        redaction depend on the lines before it: each line then redacts alone (``redact_cut``).
        One pass a text: per line, from the block's last mention, costs the text per line."""
        if _PEM_WORD not in text:
            return None
        return self.redact(text).split("\n")

    def redact_lines(self, text: str) -> str:
        """Redact ``text``, whole lines (or a piece of a line of ``LINE_MAX``) outside any
        private key block: registered values, then the shapes on the lines holding a trigger."""
        exact = self._exact
        if exact is not None and exact.held_by(text):
            text = exact.pattern.sub(REDACTED, text)
        return shapes().apply_to_lines(text)

    def stream(self) -> RedactingStream:
        """A ``RedactingStream`` over this redactor's values and shapes."""
        return RedactingStream(self)

    def redact_bytes(self, data: bytes) -> bytes:
        """Redact UTF-8 ``data`` (undecodable bytes are kept as replacement characters)."""
        return self.redact(data.decode("utf-8", errors="replace")).encode("utf-8")

    def redact_obj(self, value: Any) -> Any:
        """Redact every string inside a JSON-like value (dicts, lists, tuples)."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, Mapping):
            out: dict[Any, Any] = {}
            for k, v in value.items():
                if isinstance(k, str) and looks_secret_name(k) and isinstance(v, str) and v:
                    out[k] = REDACTED
                else:
                    out[k] = self.redact_obj(v)
            return out
        if isinstance(value, list | tuple):
            return [self.redact_obj(v) for v in value]
        return value


def _key_material(line: re.Match[str]) -> str:
    body = line[2]
    mixed = any(c.isupper() for c in body) and any(c.islower() for c in body)
    return line[1] + REDACTED if mixed and any(c.isdigit() for c in body) else line[0]


class RedactingStream:
    """Redact text that arrives in chunks: the concatenation of what ``feed`` and ``finish``
    return is ``redactor.redact(whole)`` however the text was cut (IMPL-REDACT-2).

    Carries the current unfinished line (at most ``LINE_MAX`` characters) and whether a private
    key block is open; ``feed_bytes`` decodes UTF-8 incrementally (a character split between two
    chunks is decoded whole; undecodable bytes become U+FFFD). Not thread-safe: one per stream.
    """

    def __init__(self, redactor: SecretRedactor) -> None:
        self._redactor = redactor
        self._pending: list[str] = []
        self._pending_len = 0
        self._in_key = False
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed_bytes(self, data: bytes) -> str:
        """``feed`` the UTF-8 ``data``."""
        return self.feed(self._decoder.decode(data))

    def feed(self, text: str) -> str:
        """Take ``text``; return the redacted text of every line it completes."""
        if not text:
            return ""
        if "\n" not in text and self._pending_len + len(text) <= LINE_MAX:
            self._pending.append(text)
            self._pending_len += len(text)
            return ""
        if self._pending:
            self._pending.append(text)
            text = "".join(self._pending)
            self._pending.clear()
        out: list[str] = []
        pos, size = 0, len(text)
        while True:
            newline = text.rfind("\n", pos, pos + LINE_MAX + 1)
            if newline != -1:
                out.append(self._segment(text[pos : newline + 1]))
                pos = newline + 1
            elif size - pos > LINE_MAX:
                out.append(self._segment(text[pos : pos + LINE_MAX]))
                pos += LINE_MAX
            else:
                break
        if pos < size:
            self._pending.append(text[pos:])
        self._pending_len = size - pos
        return "".join(out)

    def finish(self) -> str:
        """The redacted rest (an unfinished last line); the stream starts afresh after it."""
        rest = "".join(self._pending) + self._decoder.decode(b"", final=True)
        self._pending.clear()
        self._pending_len = 0
        text = self._segment(rest) if rest else ""
        self._in_key = False
        return text

    def _segment(self, text: str) -> str:
        """Redact whole lines (or a ``LINE_MAX`` piece of one)."""
        if self._in_key or _PEM_WORD in text:
            text = self._key_lines(text)
        return self._redactor.redact_lines(text)

    def _key_lines(self, text: str) -> str:
        """Replace private key blocks: from BEGIN to the end of its line, then every key line
        up to and including END (or up to the first line that is no key material)."""
        return "\n".join([self._key_line(line) for line in text.split("\n")])

    def _key_line(self, line: str) -> str:
        if self._in_key:
            closing = _PEM_END.search(line)
            if closing is not None:
                self._in_key = False
                return REDACTED + self._key_line(line[closing.end() :])
            if _PEM_BODY.fullmatch(line):
                return REDACTED if line.strip() else line
            self._in_key = False
        opening = _PEM_BEGIN.search(line)
        if opening is None:
            return line
        self._in_key = True
        return line[: opening.start()] + REDACTED + self._key_line_rest(line[opening.end() :])

    def _key_line_rest(self, rest: str) -> str:
        """What follows BEGIN on its line: redacted, but what follows an END there."""
        closing = _PEM_END.search(rest)
        if closing is None:
            return ""
        self._in_key = False
        return self._key_line(rest[closing.end() :])
