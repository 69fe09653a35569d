"""air's two log files (SDD §16.2): ``air.log`` and the encrypted ``air.developer.log``.

Owns: ``configure_logging`` (attaches both handlers to the ``air`` logger, idempotently),
``RedactingFormatter`` (every line through the SecretRedactor, then shown as exact text: a
record is one line, its controls, escape sequences, bidi and zero-width characters escaped,
IMPL-UI-7), ``DeveloperLogEncryptor``
(``encrypt_log_chunk``: one record = X25519 ephemeral key agreement with the developer public
key, HKDF-SHA256, ChaCha20-Poly1305; IMPL-DOC-3) and ``decrypt_developer_log`` for whoever
holds the private key. Both files rotate by size (``MAX_BYTES``, ``BACKUP_COUNT`` old files)
and are created 0600. Without a public key at ``developer_key_path()`` no developer log is
written at all: air never writes the detailed log in the clear. ``cryptography`` is imported
only when a key exists.
"""

from __future__ import annotations

import base64
import logging
import os
from collections.abc import Iterator
from typing import Any, Protocol

from air.contracts.display import shown

__all__ = [
    "AIR_LOG",
    "BACKUP_COUNT",
    "DEVELOPER_LOG",
    "MAX_BYTES",
    "DeveloperLogEncryptor",
    "RedactingFormatter",
    "configure_logging",
    "decrypt_developer_log",
    "developer_key_path",
    "generate_developer_keypair",
    "log_dir",
    "log_files",
]

AIR_LOG = "air.log"
DEVELOPER_LOG = "air.developer.log"
MAX_BYTES = 1024 * 1024
"""Rotate a log file when it would pass 1 MiB."""
BACKUP_COUNT = 5
"""Keep at most 5 rotated files per log (``air.log.1`` … ``air.log.5``)."""
_RECORD_VERSION = 1
_HKDF_INFO = b"air.developer.log v1"
_HANDLER_TAG = "_air_doctor_handler"


class Redactor(Protocol):
    def redact(self, text: str) -> str: ...


def air_home(home: str | None = None) -> str:
    """``~/.air`` (or ``<home>/.air``)."""
    return os.path.join(home or os.path.expanduser("~"), ".air")


def log_dir(home: str | None = None) -> str:
    """Where both logs live: ``~/.air/logs`` (baselines §A.1)."""
    return os.path.join(air_home(home), "logs")


def developer_key_path(home: str | None = None) -> str:
    """The developer public key (raw or PEM X25519): ``~/.air/developer-log.pub``."""
    return os.path.join(air_home(home), "developer-log.pub")


def log_files(home: str | None = None) -> list[str]:
    """Every existing log file, current and rotated, oldest rotation last."""
    out = []
    root = log_dir(home)
    for base in (AIR_LOG, DEVELOPER_LOG):
        for suffix in ["", *(f".{i}" for i in range(1, BACKUP_COUNT + 1))]:
            path = os.path.join(root, base + suffix)
            if os.path.isfile(path):
                out.append(path)
    return out


class RedactingFormatter(logging.Formatter):
    """A formatter whose whole output (message, arguments, traceback) is redacted, then shown
    as exact text: the message (with its arguments) on one line, ``\\n`` and ``\\r`` included
    escaped, so a command in it can neither forge a line nor hide a part of itself in a
    terminal; a traceback keeps its lines. Redaction comes first: escaping a secret could
    break its match."""

    def __init__(self, redactor: Redactor, fmt: str) -> None:
        super().__init__(fmt)
        self.redactor = redactor

    def formatMessage(self, record: logging.LogRecord) -> str:
        return shown(self.redactor.redact(super().formatMessage(record)))

    def formatException(self, ei: Any) -> str:
        return shown(self.redactor.redact(super().formatException(ei)), keep_lines=True)

    def formatStack(self, stack_info: str) -> str:
        return shown(self.redactor.redact(super().formatStack(stack_info)), keep_lines=True)

    def format(self, record: logging.LogRecord) -> str:
        return self.redactor.redact(super().format(record))


def _load_public_key(data: bytes) -> Any:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey

    text = data.strip()
    if text.startswith(b"-----BEGIN"):
        key = serialization.load_pem_public_key(text)
        if not isinstance(key, X25519PublicKey):
            raise ValueError("the developer log key must be an X25519 public key")
        return key
    raw = base64.b64decode(text, validate=True)
    return X25519PublicKey.from_public_bytes(raw)


def _derive(shared: bytes, ephemeral: bytes, recipient: bytes) -> bytes:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(
        algorithm=hashes.SHA256(), length=32, salt=ephemeral + recipient, info=_HKDF_INFO
    ).derive(shared)


class DeveloperLogEncryptor:
    """SDD §16.2 ``DeveloperLogEncryptor``: seal one log chunk to the developer public key.

    Each chunk gets a fresh ephemeral X25519 key, so a leaked record key opens only that record
    and nothing on this machine can read the log back.
    """

    def __init__(self, public_key: bytes) -> None:
        """``public_key``: the key file's bytes (base64 of the 32 raw bytes, or PEM)."""
        from cryptography.hazmat.primitives import serialization

        self._key = _load_public_key(public_key)
        self._raw = self._key.public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )

    def encrypt_log_chunk(self, chunk: bytes) -> bytes:
        """One sealed record: version byte, ephemeral public key, nonce, ciphertext+tag."""
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
        from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

        ephemeral = X25519PrivateKey.generate()
        eph_raw = ephemeral.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        key = _derive(ephemeral.exchange(self._key), eph_raw, self._raw)
        nonce = os.urandom(12)
        sealed = ChaCha20Poly1305(key).encrypt(nonce, chunk, bytes([_RECORD_VERSION]))
        return bytes([_RECORD_VERSION]) + eph_raw + nonce + sealed


def decrypt_developer_log(path: str, private_key: bytes) -> Iterator[str]:
    """Yield the plain records of an ``air.developer.log`` file.

    Args:
        path: the log file (one base64 record per line).
        private_key: the developer private key (PEM, or base64 of the 32 raw bytes).

    Raises:
        cryptography.exceptions.InvalidTag: a record was not sealed to this key (or tampered).
    """
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

    text = private_key.strip()
    if text.startswith(b"-----BEGIN"):
        priv = serialization.load_pem_private_key(text, password=None)
        if not isinstance(priv, X25519PrivateKey):
            raise ValueError("the developer log key must be an X25519 private key")
    else:
        priv = X25519PrivateKey.from_private_bytes(base64.b64decode(text, validate=True))
    mine = priv.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    with open(path, "rb") as handle:
        for line in handle:
            line = line.strip()
            if not line:
                continue
            blob = base64.b64decode(line, validate=True)
            version, eph_raw, nonce, sealed = blob[0], blob[1:33], blob[33:45], blob[45:]
            if version != _RECORD_VERSION:
                raise ValueError(f"unknown developer log record version {version}")
            from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey

            shared = priv.exchange(X25519PublicKey.from_public_bytes(eph_raw))
            key = _derive(shared, eph_raw, mine)
            plain = ChaCha20Poly1305(key).decrypt(nonce, sealed, bytes([version]))
            yield plain.decode("utf-8", "replace")


def generate_developer_keypair() -> tuple[bytes, bytes]:
    """A new (private, public) X25519 pair, each as base64 text (for key rotation, docs/)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    priv = X25519PrivateKey.generate()
    raw_priv = priv.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    raw_pub = priv.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    return base64.b64encode(raw_priv) + b"\n", base64.b64encode(raw_pub) + b"\n"


class _EncryptingFormatter(logging.Formatter):
    """Redact, then seal: the line written is base64 of one sealed record."""

    def __init__(self, inner: logging.Formatter, encryptor: DeveloperLogEncryptor) -> None:
        super().__init__()
        self.inner = inner
        self.encryptor = encryptor

    def format(self, record: logging.LogRecord) -> str:
        plain = self.inner.format(record).encode("utf-8")
        return base64.b64encode(self.encryptor.encrypt_log_chunk(plain)).decode("ascii")


def _rotating_file(
    filename: str, *, max_bytes: int, backup_count: int, encoding: str
) -> logging.Handler:
    """The ``logging.handlers.RotatingFileHandler`` that writes the file, created 0600."""
    import logging.handlers

    class PrivateRotatingFile(logging.handlers.RotatingFileHandler):
        def _open(self) -> Any:
            fd = os.open(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            os.close(fd)
            return super()._open()

    return PrivateRotatingFile(
        filename, maxBytes=max_bytes, backupCount=backup_count, encoding=encoding, delay=True
    )


class _PrivateRotatingHandler(logging.Handler):
    """A size-rotated file created 0600 (a log may name paths and commands of the user).

    The stdlib's ``RotatingFileHandler`` (``logging.handlers``: pickle, queue, socket) that
    writes it is built at the first record this handler passes, not when logging is
    attached at the start of every command (IMPL-BOOT-8); it formats with this handler's
    formatter, so every line is redacted (and sealed) the same way.
    """

    def __init__(self, filename: str, *, max_bytes: int, backup_count: int, encoding: str) -> None:
        super().__init__()
        self.baseFilename = os.path.abspath(filename)
        self._options = {"max_bytes": max_bytes, "backup_count": backup_count}
        self._encoding = encoding
        self._file: logging.Handler | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self._file is None:
            try:
                self._file = _rotating_file(
                    self.baseFilename, encoding=self._encoding, **self._options
                )
            except Exception:
                self.handleError(record)
                return
            self._file.setFormatter(self.formatter)
        self._file.emit(record)  # under this handler's lock (``Handler.handle``)

    def setFormatter(self, fmt: logging.Formatter | None) -> None:
        super().setFormatter(fmt)
        if self._file is not None:
            self._file.setFormatter(fmt)

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        super().close()


def configure_logging(
    redactor: Redactor,
    *,
    home: str | None = None,
    verbose_user_log: bool = False,
    max_bytes: int = MAX_BYTES,
    backup_count: int = BACKUP_COUNT,
) -> list[str]:
    """Attach ``air.log`` (and, when a developer key exists, ``air.developer.log``) to the
    ``air`` logger, replacing handlers a previous call attached.

    Args:
        redactor: the SecretRedactor every line passes through (both files).
        home: the home directory (default ``~``).
        verbose_user_log: also write INFO records to ``air.log`` (default: WARNING and up).
        max_bytes: rotate a file when it would pass this size.
        backup_count: keep this many rotated files per log.

    Returns:
        The log files now attached. A directory that cannot be created attaches nothing: logging
        never stops a command.
    """
    logger = logging.getLogger("air")
    for handler in list(logger.handlers):
        if getattr(handler, _HANDLER_TAG, False):
            logger.removeHandler(handler)
            handler.close()
    root = log_dir(home)
    try:
        os.makedirs(os.path.dirname(root), mode=0o700, exist_ok=True)  # ~/.air: the user's alone
        os.makedirs(root, mode=0o700, exist_ok=True)
    except OSError:
        return []
    attached: list[str] = []
    user = os.path.join(root, AIR_LOG)
    fmt = "%(asctime)s %(levelname)s %(name)s: %(message)s"
    try:
        handler = _PrivateRotatingHandler(
            user, max_bytes=max_bytes, backup_count=backup_count, encoding="utf-8"
        )
    except OSError:
        return []
    handler.setLevel(logging.INFO if verbose_user_log else logging.WARNING)
    handler.setFormatter(RedactingFormatter(redactor, fmt))
    setattr(handler, _HANDLER_TAG, True)
    logger.addHandler(handler)
    attached.append(user)
    key_path = developer_key_path(home)
    try:
        with open(key_path, "rb") as fh:
            encryptor = DeveloperLogEncryptor(fh.read())
    except (OSError, ValueError):
        encryptor = None  # no (valid) key: no developer log, never a clear-text one
    if encryptor is not None:
        dev = os.path.join(root, DEVELOPER_LOG)
        dev_handler = _PrivateRotatingHandler(
            dev, max_bytes=max_bytes, backup_count=backup_count, encoding="ascii"
        )
        dev_handler.setLevel(logging.DEBUG)
        detail = (
            "%(asctime)s %(levelname)s %(name)s %(process)d %(pathname)s:%(lineno)d: %(message)s"
        )
        dev_handler.setFormatter(
            _EncryptingFormatter(RedactingFormatter(redactor, detail), encryptor)
        )
        setattr(dev_handler, _HANDLER_TAG, True)
        logger.addHandler(dev_handler)
        attached.append(dev)
    logger.setLevel(logging.DEBUG if encryptor is not None else logging.INFO)
    return attached
