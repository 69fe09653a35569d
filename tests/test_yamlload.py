"""``air.yamlload`` (IMPL-BOOT-8): libyaml parses what it reads as PyYAML's pure-Python
``SafeLoader`` does, and ``SafeLoader`` decides everything else — the same data, the same
refusals, the same messages, lines and columns. Each routing rule has a case here that the C
loader alone gets wrong (checked against ``yaml.CSafeLoader`` itself)."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from air import yamlload

MODELS = """default: local/claude-test
providers:
  local:
    kind: anthropic
    base_url: http://127.0.0.1:8080
    auth_ref: AIR_TEST_PROVIDER_KEY
    models:
      claude-test: {context_window: 32768, max_output_tokens: 4096}
"""

BATCH = """version: 1
defaults:
  constraints: {hard_timeout_ms: 60000}
tasks:
  - id: review-notes
    type: review
    title: "Is it fit to ship?"
    depends_on: [setup, 'lint?']
    description: |
      Read notes.txt and say whether it is fit to ship!
  - id: setup
    title: &same Set up
    description: *same
    metadata: {k: v, n: 1.5, t: true, z: ~, when: 2001-12-14, hex: 0x1F}
"""

# what the C loader alone reads differently from SafeLoader: each must give SafeLoader's answer
C_DIFFERS = {
    "tab after a colon": "a: \tb\n",  # C: {'a': 'b'}; Python: a ScannerError
    "'?' in a flow plain scalar": "a: {m?atch: 1, x: [b?c]}\n",  # C accepts it
    "an empty scalar tagged '!'": "a: !\n",  # C: '', Python: None
    "a block scalar's '#'": "a: >#\n  folded\n",  # C takes '#' for a comment
    "a byte-order mark inside": "a: x\n\ufeff\nb: y\n",  # C reads it, Python refuses
    "a lone surrogate": "a: \ud800\n",  # C: UnicodeEncodeError (no YAMLError at all)
    "an unknown directive": "%FOO bar\n---\na: 1\n",  # C refuses it, Python ignores it
}

REFUSED = {
    "tab indentation": "a:\n\tb: 1\n",
    "duplicate anchor": "a: &x 1\nb: &x 2\nc: *x\n",
    "undefined alias": "a: *nope\n",
    "unclosed flow": "a: [1, 2\n",
    "bad indentation": "a:\n  b: 1\n c: 2\n",
    "two documents": "a: 1\n---\nb: 2\n",
    "a python tag": "a: !!python/object:os.system ls\n",
    "a control character": "a: \x07b\n",
    "an unknown escape": 'a: "\\q"\n',
}


def _tree(node: Node | None) -> Any:
    """What readers use of a node tree: kinds, tags, values, styles and start lines."""
    if node is None:
        return None
    if isinstance(node, ScalarNode):
        return ("scalar", node.tag, node.value, node.style, node.start_mark.line)
    if isinstance(node, SequenceNode):
        return ("seq", node.tag, [_tree(c) for c in node.value], node.start_mark.line)
    assert isinstance(node, MappingNode)
    pairs = [(_tree(k), _tree(v)) for k, v in node.value]
    return ("map", node.tag, pairs, node.start_mark.line)


def _python(text: str) -> tuple[str, Any, Any]:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        return "ok", repr(yaml.safe_load(text)), _tree(node)
    except Exception as exc:
        return "error", type(exc).__name__, str(exc)


def _ours(text: str) -> tuple[str, Any, Any]:
    try:
        node, data = yamlload.compose_and_load(text)
        return "ok", repr(data), _tree(node)
    except Exception as exc:
        return "error", type(exc).__name__, str(exc)


def _c_alone(text: str) -> tuple[str, Any]:
    try:
        return "ok", repr(yaml.load(text, Loader=yaml.CSafeLoader))
    except Exception as exc:
        return "error", type(exc).__name__


def test_libyaml_reads_ordinary_configuration() -> None:
    assert yaml.__with_libyaml__  # PyYAML here has libyaml: the fast path is the one taken
    for text in (MODELS, BATCH):
        assert yamlload._fast(text, construct=True) is not None
        assert _ours(text) == _python(text)
        assert yamlload.load(text) == yaml.safe_load(text)
        assert _tree(yamlload.compose(text)) == _tree(yaml.compose(text, Loader=yaml.SafeLoader))


@pytest.mark.parametrize("case", sorted(C_DIFFERS))
def test_what_libyaml_reads_differently_is_read_by_the_python_loader(case: str) -> None:
    text = C_DIFFERS[case]
    python = _python(text)
    assert _c_alone(text)[:2] != python[:2]  # the case is real: C alone would differ
    assert yamlload._fast(text, construct=True) is None
    assert _ours(text) == python


@pytest.mark.parametrize("separator", ["\x85", "\u2028", "\u2029"])
def test_unicode_line_separators_keep_the_python_loader_s_lines(separator: str) -> None:
    text = f"a: {{b: {separator}}}\n"

    def empty_value_line(loader: Any) -> int:
        root: Any = yaml.compose(text, Loader=loader)
        line: int = root.value[0][1].value[0][1].start_mark.line
        return line

    assert empty_value_line(yaml.CSafeLoader) != empty_value_line(yaml.SafeLoader)
    assert _ours(text) == _python(text)


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refusals_keep_the_python_loader_s_error_message_line_and_column(case: str) -> None:
    text = REFUSED[case]
    python = _python(text)
    assert python[0] == "error"
    assert _ours(text) == python  # same type, same message with its line and column


def test_a_file_name_is_named_in_the_error_as_a_stream_load_named_it() -> None:
    with pytest.raises(yaml.YAMLError) as raised:
        yamlload.load("a: [1, 2\n", name="/proj/.air/shared/models.yaml")
    assert 'in "/proj/.air/shared/models.yaml", line 2, column 1' in str(raised.value)


def test_an_alias_bomb_is_walked_once_per_distinct_node() -> None:
    lines = ['a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for i in range(1, 9):
        name, previous = chr(97 + i), chr(96 + i)
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 9) + "]")
    text = "\n".join(lines) + "\n"
    assert yamlload._fast(text, construct=True) is not None
    data = yamlload.load(text)
    assert len(data) == 9
    assert data["i"][0] is data["i"][1]  # shared, never expanded


def test_mutated_documents_read_as_the_python_loader_reads_them() -> None:
    """A differential check over random edits of real-looking documents."""
    rng = random.Random(10)
    alphabet = [*" \n:-[]{},#&*!|>'\"%@`?\\\t\r~.0=", "\u00e9", "\ufeff", "\x85", "\u2028"]
    for _ in range(600):
        text = rng.choice([MODELS, BATCH])
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(text) + 1)
            text = text[:at] + rng.choice(alphabet) + text[at + rng.randint(0, 1) :]
        ours, python = _ours(text), _python(text)
        assert ours[:2] == python[:2], text
        if ours[0] == "error":
            assert ours == python, text


def test_every_yaml_reader_of_air_goes_through_the_one_loader() -> None:
    air = Path(yamlload.__file__).parent
    calls = re.compile(r"yaml\.(safe_load|load|compose|full_load|unsafe_load|\w*Loader)\b")
    readers = [
        str(path.relative_to(air))
        for path in sorted(air.rglob("*.py"))
        if path.name != "yamlload.py" and calls.search(path.read_text(encoding="utf-8"))
    ]
    assert readers == []


def test_the_routing_check_finds_exactly_what_its_pattern_finds() -> None:
    """``_python_decides`` spells ``PYTHON_DECIDES`` out with string methods (no regex compiled
    at start-up); on texts made of the characters the pattern is about, both agree."""
    pattern = re.compile(yamlload.PYTHON_DECIDES)
    alphabet = "|>#-+09a \n\t\x85\u2028\u2029\ufeff"
    rng = random.Random(10)
    texts = ["", "#", "|#", ">-#", "|+2#", "|123#", "x|-9#", "\ufeffa", "a\ufeff", ">a#", "|--#"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(12))) for _ in range(20000)]
    for text in texts:
        assert yamlload._python_decides(text) == (pattern.search(text) is not None), repr(text)


# --- limits: refused before any parse (issue 23 item 8) --------------------------------------

DEEP_TEXTS = {
    "flow sequences": "a: " + "[" * 5000 + "]" * 5000 + "\n",
    "flow mappings": "a: " + "{a: " * 5000 + "1" + "}" * 5000 + "\n",
    "unclosed flow": "[" * 5000,
    "compact block sequences": "a:\n" + "- " * 5000 + "x\n",
    "block mappings by indentation": "".join(" " * i + f"k{i}:\n" for i in range(300)),
    "quoted brackets before": '"' + "]" * 100 + '": ' + "[" * 80 + "]" * 80 + "\n",
}


@pytest.mark.parametrize("case", sorted(DEEP_TEXTS))
def test_a_deep_text_is_refused_before_it_is_parsed(case: str) -> None:
    with pytest.raises(yamlload.LimitError) as raised:
        yamlload.compose_and_load(DEEP_TEXTS[case], name="/p/.air/shared/models.yaml")
    error = raised.value
    assert not error.parsed  # the scan and the event stream found it: no tree was built
    assert isinstance(error, yaml.YAMLError)  # every reader already reports YAMLError
    assert str(error) == (
        "/p/.air/shared/models.yaml: nested too deeply: more than 64 levels of collections, "
        "the most air reads; refused before parsing"
    )


@pytest.mark.parametrize(
    ("open_", "close"), [("[", "]"), ("{a: ", "}"), ("- ", ""), ("? ", "")], ids=str
)
def test_the_depth_limit_is_64_collections(open_: str, close: str) -> None:
    for depth in (63, 64):
        assert yamlload.compose(open_ * depth + "x" + close * depth) is not None
    with pytest.raises(yamlload.LimitError):
        yamlload.compose(open_ * 65 + "x" + close * 65)


def test_a_text_the_scan_under_estimates_is_refused_from_libyaml_s_tree() -> None:
    # `[a: [a: ...` opens two collections per bracket: 40 brackets, 80 levels
    text = "[a: " * 40 + "x" + "]" * 40
    assert not yamlload._may_nest_too_deeply(text)
    with pytest.raises(yamlload.LimitError) as raised:
        yamlload.load(text)
    assert raised.value.parsed  # libyaml's tree, and never the Python loader


def test_a_deep_text_for_the_python_loader_is_refused_by_events_first() -> None:
    text = 'tab: "\t"\nx: ' + "[a: " * 40 + "x" + "]" * 40 + "\n"
    assert yamlload._python_decides(text)
    assert not yamlload._may_nest_too_deeply(text)
    with pytest.raises(yamlload.LimitError) as raised:
        yamlload.load(text)
    assert not raised.value.parsed


def test_a_text_past_the_size_limit_is_refused_before_it_is_parsed() -> None:
    text = "a: " + "x" * yamlload.MAX_CHARS + "\n"
    with pytest.raises(yamlload.LimitError) as raised:
        yamlload.load(text, name="big.yaml")
    assert str(raised.value) == (
        f"big.yaml: too large: {len(text)} characters, more than the {yamlload.MAX_CHARS} air "
        "reads here; refused before parsing"
    )
    assert yamlload.load(text, max_chars=len(text)) == {"a": "x" * yamlload.MAX_CHARS}
    with pytest.raises(yamlload.LimitError):
        yamlload.compose("a: 1\n", max_chars=3)


def test_ordinary_files_are_never_sent_to_the_depth_check() -> None:
    for text in (MODELS, BATCH, Path("examples/calc/batch.yaml").read_text(encoding="utf-8")):
        assert not yamlload._may_nest_too_deeply(text)
