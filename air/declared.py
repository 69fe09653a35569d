"""Named entries that the user's file and then the project's both declare (IMPL-MCP-1,
IMPL-REMOTE-2): ``read_declared`` reads each file that exists, parses it with the reader's own
parser and refuses a name declared twice, naming the file that declared it first. Imports only
the contracts (a layer of its own above them)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar

from air.contracts.error import AirException
from air.small_file import read_small

__all__ = ["read_declared"]


class _Named(Protocol):
    @property
    def name(self) -> str: ...


T = TypeVar("T", bound=_Named)


def read_declared(
    paths: Iterable[str],
    parse: Callable[[str, str], list[T]],
    bad: Callable[[str, str, str], AirException],
    section: str,
) -> list[T]:
    """Every entry of ``paths`` in order (a missing file declares none).

    Args:
        paths: the files, the user's first.
        parse: (text, path) -> the file's entries.
        bad: (path, field, message) -> the reader's ``config_error``.
        section: the top-level key the entries sit under (for the field of a refusal).

    Raises:
        AirException: an unreadable file, a bad one (``parse``), or a name declared twice.
    """
    entries: list[T] = []
    seen: dict[str, str] = {}
    for path in paths:
        try:
            text = read_small(path).decode("utf-8")
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError) as exc:
            raise bad(path, "file", f"cannot be read as UTF-8 text ({exc})") from None
        for entry in parse(text, path):
            if entry.name in seen:
                raise bad(
                    path, f"{section}.{entry.name}", f"already declared in {seen[entry.name]}"
                )
            seen[entry.name] = path
            entries.append(entry)
    return entries
