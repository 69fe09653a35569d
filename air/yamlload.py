"""The one YAML loader of air's configuration and batch readers (IMPL-BOOT-8).

Owns ``load`` (``yaml.safe_load``), ``compose`` (``yaml.compose`` with the safe loader) and
``compose_and_load`` (both from one parse: the node tree for line numbers and the data). They
parse with libyaml's ``CSafeLoader`` where PyYAML has it (the C scanner, parser and composer;
the same ``SafeConstructor`` builds the data), else with ``SafeLoader``, and accept, refuse and
report exactly what ``SafeLoader`` does: the pure-Python loader decides every text the two
could read differently — a text with a tab or a byte-order mark past its start, or a block
scalar's indicator followed by ``#`` (libyaml takes it for a comment), a plain scalar
holding ``?`` inside a flow collection, an empty plain scalar with an explicit tag — and every
text the C loader refuses, so an error is the Python loader's, with its message, line and column.
Before any parse, a text longer than the reader's ``max_chars`` (``MAX_CHARS`` unless it says)
or nesting collections deeper than ``MAX_DEPTH`` is refused with ``LimitError`` (a
``yaml.YAMLError``): a linear scan over-estimates the depth and, only when that passes the
limit, libyaml's event stream finds the real depth and stops at the first level too deep. What
the scan under-estimates is still caught: the C loader's tree is measured, and a text bound for
the Python loader is counted by libyaml's events first, so the pure-Python loader never reads a
text deeper than the limit. Imports only PyYAML (a layer of its own under every reader).
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.events import CollectionEndEvent, CollectionStartEvent, StreamEndEvent
from yaml.nodes import CollectionNode, MappingNode, Node, ScalarNode, SequenceNode

__all__ = ["MAX_CHARS", "MAX_DEPTH", "LimitError", "compose", "compose_and_load", "load"]

_C_LOADER: Any = getattr(yaml, "CSafeLoader", None)
_C_PARSER: Any = getattr(getattr(yaml, "cyaml", None), "CParser", None)

MAX_DEPTH = 64
"""The deepest nesting of collections air reads (a configuration needs a handful of levels)."""
MAX_CHARS = 1024 * 1024
"""The longest configuration text air reads, in characters (1 Mi); a reader may pass another."""


class LimitError(yaml.YAMLError):
    """A text past ``MAX_DEPTH`` or its reader's size limit.

    ``problem`` says which limit and whether the text was refused before any parse (the scan
    or the event stream found it) or after libyaml's tree (readers print it as they print a
    parser's problem); ``parsed`` says which. No ``problem_mark``: the limit is the file's.
    """

    problem_mark = None
    context_mark = None

    def __init__(self, limit: str, name: str | None, *, parsed: bool = False) -> None:
        self.parsed = parsed
        self.problem = limit if parsed else f"{limit}; refused before parsing"
        self.name = name
        super().__init__(self.problem)

    def __str__(self) -> str:
        return f"{self.name or '<unicode string>'}: {self.problem}"


def _too_deep(name: str | None, *, parsed: bool = False) -> LimitError:
    return LimitError(
        f"nested too deeply: more than {MAX_DEPTH} levels of collections, the most air reads",
        name,
        parsed=parsed,
    )


_STR_TAG = "tag:yaml.org,2002:str"
PYTHON_DECIDES = r"[\t\x85\u2028\u2029]|(?<!^)\ufeff|[|>][-+0-9]{0,2}#"
"""Texts only ``SafeLoader`` reads: see the module docstring (a superset: a quoted ``|#`` too).
``_python_decides`` finds exactly this pattern with string methods (compiling it took ~1 ms of
every start)."""

_INDICATOR_TAIL = frozenset("-+0123456789")


def load(text: str, *, name: str | None = None, max_chars: int = MAX_CHARS) -> Any:
    """The data of the one YAML document in ``text`` (None when there is none).

    ``name``: the file the text was read from, named in an error's marks (as
    ``yaml.safe_load(open(name))`` did); default ``<unicode string>``. ``max_chars``: the
    longest text this reader takes.

    Raises:
        LimitError: longer than ``max_chars`` or nested deeper than ``MAX_DEPTH`` (unparsed).
        yaml.YAMLError, RecursionError, ValueError: what ``yaml.safe_load`` raises.
    """
    return compose_and_load(text, name=name, max_chars=max_chars)[1]


def compose(text: str, *, name: str | None = None, max_chars: int = MAX_CHARS) -> Node | None:
    """The node tree of the one YAML document in ``text`` (``yaml.compose``, safe loader).

    Raises:
        LimitError, yaml.YAMLError: as ``load``.
    """
    _check_limits(text, name, max_chars)
    fast = _fast(text, construct=False, name=name)
    if fast is not None:
        return fast[0]
    return _python(text, name, construct=False)[0]


def compose_and_load(
    text: str, *, name: str | None = None, max_chars: int = MAX_CHARS
) -> tuple[Node | None, Any]:
    """The node tree and the data of the one YAML document in ``text``, from one parse.

    Raises:
        LimitError, yaml.YAMLError: as ``load``.
    """
    _check_limits(text, name, max_chars)
    fast = _fast(text, construct=True, name=name)
    if fast is not None:
        return fast
    return _python(text, name, construct=True)


def _check_limits(text: str, name: str | None, max_chars: int) -> None:
    """Refuse, before any parse, a text too long or (found cheaply) nested too deeply."""
    if len(text) > max_chars:
        raise LimitError(
            f"too large: {len(text)} characters, more than the {max_chars} air reads here",
            name,
        )
    if _may_nest_too_deeply(text) and _nests_too_deeply(text):
        raise _too_deep(name)


def _may_nest_too_deeply(text: str) -> bool:
    """A linear over-estimate: flow brackets still open, or a line's leading run of spaces,
    ``-`` and ``?`` (each block level takes at least one column), past ``MAX_DEPTH``.
    Quoted or literal text can fool it either way; the loaders' own checks stay exact."""
    if text.count("[") + text.count("{") > MAX_DEPTH:
        depth = 0
        for ch in re.sub(r"[^\[\]{}]+", "", text):
            depth = depth + 1 if ch in "[{" else max(0, depth - 1)
            if depth > MAX_DEPTH:
                return True
    return re.search(rf"^[ ?-]{{{MAX_DEPTH + 1}}}", text, re.MULTILINE) is not None


def _nests_too_deeply(text: str) -> bool:
    """Whether libyaml's events (else PyYAML's) open more than ``MAX_DEPTH`` collections;
    stops at the first level too deep. A text the parser refuses first for another reason is
    not too deep here (the loader reports it)."""
    try:
        parser: Any = _C_PARSER(text) if _C_PARSER is not None else yaml.SafeLoader(text)
    except Exception:  # e.g. a lone surrogate the C reader cannot encode
        return False
    depth = 0
    try:
        while True:
            event = parser.get_event()
            if isinstance(event, CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    return True
            elif isinstance(event, CollectionEndEvent):
                depth -= 1
            elif event is None or isinstance(event, StreamEndEvent):
                return False
    except yaml.YAMLError as exc:  # libyaml refuses past 1000 levels while it looks ahead
        return "maximum nesting depth" in str(getattr(exc, "problem", ""))
    except Exception:  # refused otherwise: not for this check to say
        return False
    finally:
        parser.dispose()


def _python(text: str, name: str | None, *, construct: bool) -> tuple[Node | None, Any]:
    if _C_PARSER is not None and _nests_too_deeply(text):  # never a deep text in pure Python
        raise _too_deep(name)
    loader = yaml.SafeLoader(text)
    if name is not None:
        loader.name = name  # before the first mark is made
    try:
        node = loader.get_single_node()
        return node, loader.construct_document(node) if construct and node is not None else None
    finally:
        loader.dispose()


def _python_decides(text: str) -> bool:
    """Whether ``PYTHON_DECIDES`` matches somewhere in ``text``."""
    if any(c in text for c in "\t\x85\u2028\u2029") or "\ufeff" in text[1:]:
        return True
    at = text.find("#")
    while at != -1:
        for tail in range(3):  # `[|>]`, then 0-2 of `[-+0-9]`, then the `#` at `at`
            start = at - tail - 1
            if start < 0 or (tail and text[start + 1] not in _INDICATOR_TAIL):
                break
            if text[start] in "|>":
                return True
        at = text.find("#", at + 1)
    return False


def _fast(text: str, *, construct: bool, name: str | None = None) -> tuple[Node | None, Any] | None:
    """The C loader's (node, data), or None when ``SafeLoader`` must decide.

    Raises:
        LimitError: the tree nests deeper than ``MAX_DEPTH`` (the scan can under-estimate).
    """
    if _C_LOADER is None or _python_decides(text):
        return None
    try:
        loader = _C_LOADER(text)
    except Exception:  # e.g. a lone surrogate the C reader cannot encode
        return None
    try:
        node = loader.get_single_node()
        if node is None:
            return None, None
        if not _read_alike(node):
            return None
        return node, loader.construct_document(node) if construct else None
    except _Deep:
        raise _too_deep(name, parsed=True) from None
    except Exception:  # refused (or failed): the Python loader says how, as before
        return None
    finally:
        loader.dispose()


class _Deep(Exception):
    """The C loader's tree nests collections deeper than ``MAX_DEPTH``."""


def _read_alike(root: Node) -> bool:
    """False when ``SafeLoader`` might read this tree's text differently (see the module
    docstring); plain scalars get the Python composer's style (None). Aliases are visited
    once (an alias bomb costs one pass over its distinct nodes).

    Raises:
        _Deep: a collection deeper than ``MAX_DEPTH``.
    """
    seen: set[int] = set()
    stack: list[tuple[Node, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, in_flow = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if depth > MAX_DEPTH and isinstance(node, CollectionNode):
            raise _Deep
        if isinstance(node, ScalarNode):
            if not node.style:
                node.style = None
                if node.value == "" and node.tag == _STR_TAG:
                    return False  # `!` (or `!!str`) with nothing after it
                if in_flow and "?" in node.value:
                    return False
        elif isinstance(node, SequenceNode):
            flow = in_flow or bool(node.flow_style)
            stack.extend((child, depth + 1, flow) for child in node.value)
        elif isinstance(node, MappingNode):
            flow = in_flow or bool(node.flow_style)
            for key, value in node.value:
                stack.append((key, depth + 1, flow))
                stack.append((value, depth + 1, flow))
    return True
