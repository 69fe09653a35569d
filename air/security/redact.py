"""SecretRedactor: remove secrets from text before it reaches a log, an event or an artifact.

Owns the provider key patterns (Anthropic, OpenAI, GitHub, GitLab, Slack, Stripe, Google, AWS,
npm, PyPI, Hugging Face), bearer/basic tokens, private key blocks, ``KEY=value`` lines whose name
looks secret (``.env`` style) and exact values registered at runtime, e.g. from environment
variables whose names look secret (``looks_secret_env_name``: ``*_KEY``, ``*_PAT``, ``*_PASS``,
``*_PWD``, ``*_TOKEN*``, ``*_SECRET*``, providers' names) when the value is no ordinary text
(``registrable_secret``) (SDD §9.2, §16; baselines §A.11). Registered values are one
alternation, longest first.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "REDACTED",
    "WELL_KNOWN_SECRET_NAMES",
    "SecretRedactor",
    "looks_secret_env_name",
    "looks_secret_name",
    "registrable_secret",
]

REDACTED = "[REDACTED]"

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

_PATTERN_SOURCES: tuple[tuple[str, int], ...] = (
    (
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----"
        r".*?-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----",
        re.S,
    ),
    (r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----[^\n]*(\n[A-Za-z0-9+/=]{16,})*", 0),
    (r"\bsk-ant-[A-Za-z0-9_\-]{16,}", 0),
    (r"\bsk-(proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}", 0),
    (r"\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}", 0),
    (r"\bgithub_pat_[A-Za-z0-9_]{40,}", 0),
    (r"\bglpat-[A-Za-z0-9_\-]{20,}", 0),
    (r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", 0),
    (r"\b(sk|rk|pk)_(live|test)_[A-Za-z0-9]{16,}", 0),
    (r"\bAIza[0-9A-Za-z_\-]{35}", 0),
    (r"\b(AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b", 0),
    (r"\bnpm_[A-Za-z0-9]{36}\b", 0),
    (r"\bpypi-[A-Za-z0-9_\-]{50,}", 0),
    (r"\bhf_[A-Za-z0-9]{30,}", 0),
    (r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}", 0),
    (r"(?i)(?<=[a-z]://)[^/\s:@]+:[^/\s@]+(?=@)", 0),
)
"""The secret shapes replaced whole (compiled at the first redaction: ``_shapes()``)."""


class _Shapes:
    """The compiled secret shapes (``_shapes()``: built once, by the first ``redact``; not at
    import: a run that logs nothing before its first model request does not pay the compiling)."""

    def __init__(self) -> None:
        self.patterns = [re.compile(source, flags) for source, flags in _PATTERN_SOURCES]
        self.bearer = re.compile(r"(?i)\b(bearer|basic|token)(\s+)([A-Za-z0-9._~+/\-]{12,}=*)")
        self.auth_header = re.compile(
            r"(?i)\b(authorization|x-api-key|api-key|x-auth-token)(\s*[:=]\s*)"
            r"((?:(?:bearer|basic|token)\s+)?[^\s\"',]+)"
        )
        self.assign = re.compile(
            r"(?im)\b([A-Z0-9_.\-]*?(?:secret|token|passw(?:or)?d|passphrase|api[_-]?key|apikey|access[_-]?key|"
            r"private[_-]?key|credential|client[_-]?secret)[A-Z0-9_.\-]*)(\s*[:=]\s*)(\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'#,;]+)"
        )
        self.aws_secret = re.compile(r"(?i)(aws_secret_access_key\s*[:=]\s*)([A-Za-z0-9/+=]{30,})")


@functools.cache
def _shapes() -> _Shapes:
    return _Shapes()


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


class SecretRedactor:
    """Replace secrets in text with ``[REDACTED]`` (SDD §9.2 ``SecretRedactor.redact``).

    Thread-safe; values registered with ``register`` are replaced wherever they occur.
    """

    def __init__(self, values: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._values: set[str] = set()
        self._exact: re.Pattern[str] | None = None
        self.register(*values)

    def register(self, *values: str) -> None:
        """Add exact secret values (ignored when shorter than 6 characters)."""
        with self._lock:
            changed = False
            for value in values:
                for candidate in {value, value.strip()}:
                    if len(candidate) >= 6 and candidate not in self._values:
                        self._values.add(candidate)
                        changed = True
            if changed:
                ordered = sorted(self._values, key=len, reverse=True)
                self._exact = re.compile("|".join(re.escape(v) for v in ordered))

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
        exact = self._exact
        if exact is not None:
            text = exact.sub(REDACTED, text)
        shapes = _shapes()
        for pattern in shapes.patterns:
            text = pattern.sub(REDACTED, text)
        text = shapes.aws_secret.sub(lambda m: m.group(1) + REDACTED, text)
        # Bearer/basic tokens first, so "Authorization: Bearer <tok>" loses the token itself.
        text = shapes.bearer.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
        text = shapes.auth_header.sub(
            lambda m: m.group(0) if m.group(3) == REDACTED else m.group(1) + m.group(2) + REDACTED,
            text,
        )
        text = shapes.assign.sub(
            lambda m: (
                m.group(1) + m.group(2) + (REDACTED if m.group(3) != REDACTED else m.group(3))
            ),
            text,
        )
        return text

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
