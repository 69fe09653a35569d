"""DiagnosticParser on the corpus the suite builds from the real gcc, clang, ld and CMake."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from air.contracts.error import AirException
from air.contracts.tool import DiagnosticSeverity
from air.cpp.diagnostics import DiagnosticParser, DiagnosticStream
from air.cpp.parsed_diagnostic import ParsedDiagnostic
from air.cpp.signatures import _unquoted, normalize_for_signature
from tests.cpp.corpus import KINDS, CorpusEntry, build_corpus
from tests.cpp.serialized import parse_serialized_diagnostics
from tests.cpu_limited import run_cpu_limited

COMPILED = [k.name for k in KINDS if k.category not in ("linker", "cmake", "cmake-project")]


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, CorpusEntry]]:
    root = tmp_path_factory.mktemp("corpus")
    return root, build_corpus(root)


def _parse(root: Path, entry: CorpusEntry, key: tuple[str, str, str]) -> list[ParsedDiagnostic]:
    return DiagnosticParser(str(root)).parse_compiler_output(entry.outputs[key])


def _first_error(diags: list[ParsedDiagnostic]) -> ParsedDiagnostic:
    errors = [d for d in diags if d.severity == DiagnosticSeverity.ERROR]
    assert errors, "no error parsed"
    return errors[0]


def test_corpus_has_enough_kinds_of_every_category() -> None:
    categories = {k.category for k in KINDS}
    assert {"syntax", "type", "overload", "template", "include", "werror", "linker"} <= categories
    assert {"cmake", "cmake-project"} & categories
    assert len(KINDS) >= 40


@pytest.mark.slow
def test_every_diagnostic_has_location_severity_and_message(
    corpus: tuple[Path, dict[str, CorpusEntry]],
) -> None:
    root, entries = corpus
    total = 0
    for name, entry in entries.items():
        for key, output in entry.outputs.items():
            diags = _parse(root, entry, key)
            assert diags, f"{name} {key}: nothing parsed from {output!r}"
            if key[1] == "text" and key[0] in ("gcc", "clang"):
                assert "\x1b[" in output or entry.kind.category == "linker"
            for d in diags:
                total += 1
                assert d.message, (name, key, d)
                assert "\x1b" not in d.message, (name, key, d)
                assert d.severity in (DiagnosticSeverity.ERROR, DiagnosticSeverity.WARNING)
                assert d.semantic_signature.startswith("cppdiag1:")
                if d.tool == "compiler":
                    assert d.file, (name, key, d)
                    assert d.line, (name, key, d)
                    assert d.column, (name, key, d)
                    assert (root / entry.files[key[2]]).parent.joinpath(
                        Path(d.file).name
                    ).exists() or d.file.startswith("/usr"), (name, key, d)
                elif d.tool == "cmake":
                    assert d.file, (name, key, d)
                    assert d.line, (name, key, d)
                else:
                    assert d.tool == "linker"
                    if "reference" in d.message or "definition" in d.message:
                        assert d.file, (name, key, d)
                        assert d.file.endswith(".cpp"), (name, key, d)
    assert total >= 2 * 3 * len(COMPILED)


@pytest.mark.slow
def test_same_error_in_two_files_and_lines_has_one_signature(
    corpus: tuple[Path, dict[str, CorpusEntry]],
) -> None:
    root, entries = corpus
    for name, entry in entries.items():
        tools = {(tool, form) for tool, form, _ in entry.outputs}
        for tool, form in tools:
            a = _first_error(_parse(root, entry, (tool, form, "A")))
            b = _first_error(_parse(root, entry, (tool, form, "B")))
            assert a.file != b.file or a.line != b.line or entry.kind.category == "linker"
            assert a.semantic_signature == b.semantic_signature, (name, tool, form, a, b)


@pytest.mark.slow
def test_different_errors_get_different_signatures(
    corpus: tuple[Path, dict[str, CorpusEntry]],
) -> None:
    root, entries = corpus
    for tool in ("gcc", "clang"):
        sigs = {}
        for name, entry in entries.items():
            key = (tool, "text", "A") if (tool, "text", "A") in entry.outputs else None
            if key is None:
                key = ("cmake", "text", "A")
            sigs[name] = _first_error(_parse(root, entry, key)).semantic_signature
        pairs = list(itertools.combinations(sigs, 2))
        differ = sum(1 for x, y in pairs if sigs[x] != sigs[y])
        assert len(pairs) >= 780
        assert differ / len(pairs) >= 0.95, (tool, differ, len(pairs))


@pytest.mark.slow
def test_text_and_json_forms_of_one_build_are_identical(
    corpus: tuple[Path, dict[str, CorpusEntry]],
) -> None:
    root, entries = corpus
    for name in COMPILED:
        entry = entries[name]
        for variant in ("A", "B"):
            text = [d.key() for d in _parse(root, entry, ("gcc", "text", variant))]
            structured = [d.key() for d in _parse(root, entry, ("gcc", "json", variant))]
            assert text == structured, (name, variant)


@pytest.mark.slow
def test_clang_text_and_serialized_forms_of_one_build_are_identical(
    corpus: tuple[Path, dict[str, CorpusEntry]],
) -> None:
    root, entries = corpus
    for name in COMPILED:
        entry = entries[name]
        for variant in ("A", "B"):
            text = _parse(root, entry, ("clang", "text", variant))
            structured = parse_serialized_diagnostics(entry.serialized[variant], str(root))
            assert [d.key() for d in text] == [d.key() for d in structured], (name, variant)
            assert [len(d.notes) for d in text] == [len(d.notes) for d in structured], name


@pytest.mark.slow
def test_stream_fed_in_small_chunks_equals_one_pass(
    corpus: tuple[Path, dict[str, CorpusEntry]],
) -> None:
    root, entries = corpus
    log = "".join(e.outputs[k] for e in entries.values() for k in sorted(e.outputs))
    whole = DiagnosticParser(str(root)).parse_compiler_output(log)
    stream = DiagnosticStream(str(root))
    pieces: list[ParsedDiagnostic] = []
    for i in range(0, len(log), 7):
        pieces.extend(stream.feed(log[i : i + 7]))
    pieces.extend(stream.close())
    assert [d.key() for d in pieces] == [d.key() for d in whole]
    assert [d.key() for d in whole] == [
        d.key() for d in DiagnosticParser(str(root)).parse_compiler_output(log)
    ]


@pytest.mark.slow
def test_notes_attach_and_backtraces_collapse(corpus: tuple[Path, dict[str, CorpusEntry]]) -> None:
    root, entries = corpus
    templ = entries["template_member_missing"]
    gcc = _first_error(_parse(root, templ, ("gcc", "text", "A")))
    assert any("required from here" in line for line in gcc.backtrace)
    assert any("In instantiation of" in line for line in gcc.backtrace)
    clang = _first_error(_parse(root, templ, ("clang", "text", "A")))
    assert any("in instantiation of" in line for line in clang.backtrace)
    overload = entries["ambiguous_overload"]
    for tool in ("gcc", "clang"):
        diags = _parse(root, overload, (tool, "text", "A"))
        assert len(diags) == 1
        assert len(diags[0].notes) >= 2  # the candidates
        assert all(n.severity == DiagnosticSeverity.NOTE for n in diags[0].notes)


def test_include_backtrace_collapses_into_the_error_it_leads_to(tmp_path: Path) -> None:
    header = "inline int h() { return missing_name; }\n"
    out = (
        "In file included from src/a.cpp:1:\n"
        "src/w.h: In function 'int h()':\n"
        f"src/w.h:1:25: error: 'missing_name' was not declared in this scope\n    1 | {header}"
        "      |                         ^~~~~~~~~~~~\n"
    )
    diags = DiagnosticParser().parse_compiler_output(out)
    assert len(diags) == 1
    assert diags[0].file == "src/w.h"
    assert diags[0].backtrace == (
        "In file included from src/a.cpp:1:",
        "src/w.h: In function 'int h()':",
    )


def test_sarif_log_parses_like_the_text_form() -> None:
    """A SARIF 2.1.0 log in the shape gcc 13 and clang 15 write (neither is installed here)."""
    text = "src/m.cpp:3:7: error: unused variable 'q' [-Werror=unused-variable]\n"
    sarif = {
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {"name": "GNU C++17", "rules": [{"id": "-Werror=unused-variable"}]}
                },
                "results": [
                    {
                        "ruleId": "-Werror=unused-variable",
                        "level": "error",
                        "message": {"text": "unused variable 'q'"},
                        "locations": [
                            {
                                "physicalLocation": {
                                    "artifactLocation": {"uri": "src/m.cpp"},
                                    "region": {"startLine": 3, "startColumn": 7},
                                }
                            }
                        ],
                    }
                ],
            }
        ],
    }
    parser = DiagnosticParser()
    from_text = [d.key() for d in parser.parse_compiler_output(text)]
    assert from_text == [d.key() for d in parser.parse_compiler_output(json.dumps(sarif, indent=2))]
    assert from_text == [d.key() for d in parser.parse_compiler_output(json.dumps(sarif) + "\n")]


def test_linker_and_driver_summary_lines() -> None:
    out = (
        "/usr/bin/ld: /tmp/ccA1b2.o: in function `main':\n"
        "main.cpp:(.text+0x9): undefined reference to `helper(int)'\n"
        "collect2: error: ld returned 1 exit status\n"
        "FAILED: app\n"
        "ninja: build stopped: subcommand failed.\n"
    )
    (d,) = DiagnosticParser().parse_compiler_output(out)
    assert (d.tool, d.file, d.severity) == ("linker", "main.cpp", DiagnosticSeverity.ERROR)
    assert d.message == "undefined reference to `helper(int)'"
    assert d.backtrace == ("/usr/bin/ld: /tmp/ccA1b2.o: in function `main':",)
    other = DiagnosticParser().parse_compiler_output(out.replace("helper(int)", "other(char*)"))
    assert other[0].semantic_signature == d.semantic_signature


def test_signature_is_deterministic_and_ignores_paths_and_machines() -> None:
    a = "/home/alice/p/src/x.cpp:10:4: error: 'foo' was not declared in this scope\n"
    b = "/build/bob/q/lib/y.cpp:99:12: error: 'bar_baz' was not declared in this scope\n"
    c = "/build/bob/q/lib/y.cpp:99:12: error: 'bar_baz' does not name a type\n"
    (da,) = DiagnosticParser().parse_compiler_output(a)
    (db,) = DiagnosticParser().parse_compiler_output(b)
    (dc,) = DiagnosticParser().parse_compiler_output(c)
    assert da.semantic_signature == db.semantic_signature != dc.semantic_signature
    assert DiagnosticParser.semantic_signature(da) == da.semantic_signature
    assert da.to_contract("dg_1").semantic_signature == da.semantic_signature


def test_colour_and_hyperlink_escapes_are_stripped() -> None:
    plain = "src/a.cpp:3:7: error: unused variable 'q' [-Werror=unused-variable]\n"
    coloured = (
        "\x1b[01m\x1b[Ksrc/a.cpp:3:7:\x1b[m\x1b[K \x1b[01;31m\x1b[Kerror: \x1b[m\x1b[K"
        "unused variable '\x1b[01m\x1b[Kq\x1b[m\x1b[K' "
        "[\x1b]8;;https://gcc.gnu.org/onlinedocs\x1b\\-Werror=unused-variable\x1b]8;;\x1b\\]\n"
    )
    parser = DiagnosticParser()
    assert [d.key() for d in parser.parse_compiler_output(coloured)] == [
        d.key() for d in parser.parse_compiler_output(plain)
    ]


@pytest.mark.slow
def test_broken_serialized_files_are_a_clear_tool_error(
    corpus: tuple[Path, dict[str, CorpusEntry]],
) -> None:
    _, entries = corpus
    data = entries["ambiguous_overload"].serialized["A"]
    for broken in (b"NOPE" + data[4:], data[: len(data) // 2]):
        with pytest.raises(AirException) as caught:
            parse_serialized_diagnostics(broken)
        assert caught.value.kind == "tool_error"
        assert caught.value.user_action


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(cuts=st.lists(st.integers(min_value=1, max_value=400), min_size=1, max_size=60))
def test_any_chunking_of_a_build_log_gives_the_same_diagnostics(
    corpus: tuple[Path, dict[str, CorpusEntry]], cuts: list[int]
) -> None:
    root, entries = corpus
    log = "".join(
        entries[k].outputs[key]
        for k in ("template_member_missing", "ambiguous_overload", "undefined_reference")
        for key in sorted(entries[k].outputs)
    )
    whole = [d.key() for d in DiagnosticParser(str(root)).parse_compiler_output(log)]
    stream = DiagnosticStream(str(root))
    got: list[ParsedDiagnostic] = []
    pos = 0
    for cut in cuts:
        got.extend(stream.feed(log[pos : pos + cut]))
        pos += cut
    got.extend(stream.feed(log[pos:]))
    got.extend(stream.close())
    assert [d.key() for d in got] == whole


_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["kind", "runs", "locations", "caret", "children", "message", "x"]),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(
        st.one_of(
            st.text(max_size=60),
            _JSONISH.map(lambda v: json.dumps(v)),
            st.sampled_from(
                [
                    "a.cpp:1:2: error: x",
                    "CMake Error at CMakeLists.txt:3 (x):",
                    "  body",
                    "a.o:(.text+0x1): undefined reference to `f'",
                    "In file included from a.h:1,",
                    "                 from a.cpp:2:",
                    "a.cpp:1:1: note: n",
                ]
            ),
        ),
        max_size=20,
    )
)
def test_whatever_a_build_prints_never_crashes_the_parser(lines: list[str]) -> None:
    out = "\n".join(lines)
    for d in DiagnosticParser("/tmp").parse_compiler_output(out):
        assert d.semantic_signature.startswith("cppdiag1:")


# -- output a task controls: no line or name makes the parser quadratic or unbounded ----------

_QUOTED_AS_IT_WAS = re.compile(r"‘[^’]*’|“[^”]*”|`[^'`]*'|'[^']*'|\"[^\"]*\"")
_REFERENCE_PATHLIKE = re.compile(  # the pattern as first written (tried at every position)
    r"(?:[\w.+-]*/)+[\w.+-]+|\b[\w.+-]+\.(?:c|cc|cpp|cxx|h|hh|hpp|hxx|o|a|so|txt|cmake)\b"
)
_PIECES = st.sampled_from(
    [*"ab1_./+-:'\"() é", "cpp", ".h", "/usr/", "txt", ".c", "so", "x.hpp", "lib"]
)


@settings(max_examples=3000, deadline=None)
@given(st.lists(_PIECES, max_size=40).map("".join))
def test_names_and_paths_are_replaced_as_the_first_pattern_replaced_them(text: str) -> None:
    """The linear pattern changes no signature: same replacements as the reference."""
    assert normalize_for_signature(text) == _normalize_with(_REFERENCE_PATHLIKE, text)


def _normalize_with(pattern: re.Pattern[str], message: str) -> str:
    from air.cpp import signatures

    text = _QUOTED_AS_IT_WAS.sub("<q>", message)
    text = signatures._LIBRARY.sub("-l<lib>", text)
    text = pattern.sub("<path>", text)
    text = signatures._HEX.sub("<n>", text)
    text = signatures._NUMBER.sub("<n>", text)
    return signatures._SPACE.sub(" ", text).strip().lower()


def test_a_hostile_diagnostic_line_costs_what_its_length_does() -> None:
    """A task's build can print a 1 MB ``#error`` word (or one of open quotes) or never end a
    line: the parse finishes (the reference patterns need ~45 and ~10 minutes on such words;
    run in a child with a generous CPU limit rather than timed) and the parser holds at most
    ``LINE_MAX`` of a line."""
    done = run_cpu_limited(
        "from air.cpp.diagnostics import DiagnosticStream\n"
        "from air.cpp.signatures import normalize_for_signature\n"
        "word = 'w' * 1_000_000\n"
        "assert normalize_for_signature(word + ' x.cpp') == word + ' <path>'\n"
        "assert normalize_for_signature('“' * 1_000_000) == '“' * 1_000_000\n"
        "assert normalize_for_signature('x “' * 300_000 + '”') == 'x <q>'\n"
        "p = DiagnosticStream('/w')\n"
        "out = p.feed('src/a.cpp:1:2: error: #error ' + 'a.' * 400_000 + '\\n')\n"
        "assert len(out) + len(p.close()) == 1\n"
        "for _ in range(2_000):\n"
        "    p.feed('x' * 65_536)\n"
        "assert len(p._buffer) <= 65_536\n"
        "print('ok')\n"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == "ok\n"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="‘’“”`'\"a "))
def test_quoted_parts_are_replaced_as_the_first_pattern_replaced_them(message: str) -> None:
    assert _unquoted(message) == _QUOTED_AS_IT_WAS.sub("<q>", message)
