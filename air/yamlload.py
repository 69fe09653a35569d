"""The one YAML loader of air's configuration and batch readers (IMPL-BOOT-8).

Owns ``load`` (``yaml.safe_load``), ``compose`` (``yaml.compose`` with the safe loader) and
``compose_and_load`` (both from one parse: the node tree for line numbers and the data). They
parse with libyaml's ``CSafeLoader`` where PyYAML has it (the C scanner, parser and composer;
the same ``SafeConstructor`` builds the data), else with ``SafeLoader``, and accept, refuse and
report exactly what ``SafeLoader`` does: the pure-Python loader decides every text the two
could read differently — a text with a tab or a byte-order mark past its start, or a block
scalar's indicator followed by ``#`` (libyaml takes it for a comment), a plain scalar
holding ``?`` inside a flow collection, an empty plain scalar with an explicit tag, a tree
nested deeper than ``MAX_FAST_DEPTH`` (the Python loader's own recursion limit decides those,
as before) — and every text the C loader refuses, so an error is the Python loader's, with its
message, line and column. Imports only PyYAML (a layer of its own under every reader).
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

__all__ = ["MAX_FAST_DEPTH", "compose", "compose_and_load", "load"]

_C_LOADER: Any = getattr(yaml, "CSafeLoader", None)

MAX_FAST_DEPTH = 64
"""Deeper trees are read again by ``SafeLoader``: it alone says which depth is too deep
(``RecursionError``, which the readers report as "nested too deeply")."""

_STR_TAG = "tag:yaml.org,2002:str"
PYTHON_DECIDES = r"[\t\x85\u2028\u2029]|(?<!^)\ufeff|[|>][-+0-9]{0,2}#"
"""Texts only ``SafeLoader`` reads: see the module docstring (a superset: a quoted ``|#`` too).
``_python_decides`` finds exactly this pattern with string methods (compiling it took ~1 ms of
every start)."""

_INDICATOR_TAIL = frozenset("-+0123456789")


def load(text: str, *, name: str | None = None) -> Any:
    """The data of the one YAML document in ``text`` (None when there is none).

    ``name``: the file the text was read from, named in an error's marks (as
    ``yaml.safe_load(open(name))`` did); default ``<unicode string>``.

    Raises:
        yaml.YAMLError, RecursionError, ValueError: what ``yaml.safe_load`` raises.
    """
    return compose_and_load(text, name=name)[1]


def compose(text: str, *, name: str | None = None) -> Node | None:
    """The node tree of the one YAML document in ``text`` (``yaml.compose``, safe loader)."""
    fast = _fast(text, construct=False)
    if fast is not None:
        return fast[0]
    return _python(text, name, construct=False)[0]


def compose_and_load(text: str, *, name: str | None = None) -> tuple[Node | None, Any]:
    """The node tree and the data of the one YAML document in ``text``, from one parse."""
    fast = _fast(text, construct=True)
    if fast is not None:
        return fast
    return _python(text, name, construct=True)


def _python(text: str, name: str | None, *, construct: bool) -> tuple[Node | None, Any]:
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


def _fast(text: str, *, construct: bool) -> tuple[Node | None, Any] | None:
    """The C loader's (node, data), or None when ``SafeLoader`` must decide."""
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
    except Exception:  # refused (or failed): the Python loader says how, as before
        return None
    finally:
        loader.dispose()


def _read_alike(root: Node) -> bool:
    """False when ``SafeLoader`` might read this tree's text differently (see the module
    docstring); plain scalars get the Python composer's style (None). Aliases are visited
    once (an alias bomb costs one pass over its distinct nodes)."""
    seen: set[int] = set()
    stack: list[tuple[Node, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, in_flow = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if depth > MAX_FAST_DEPTH:
            return False
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
