"""Files as projects hold them (IMPL-FS-5): CRLF line breaks, a byte order mark and bytes that are
no UTF-8 go through fs.read, fs.edit, fs.write and fs.patch with only what the model changed
changed; and a tool that raises something air did not expect ends that call, recorded, never
the run (SDD §9.1)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from air.contracts.ids import JsonObject
from air.contracts.provider import TextBlock, ToolUseBlock
from air.contracts.tool import ToolCategory, ToolDefinition
from air.llm.cassette import CassetteTurn
from air.tools.run import ToolRun
from air.tools.text_form import form_of, replace_in, written
from tests.forked_air import air_cli
from tests.gitrepo import init_repo
from tests.tools.conftest import Env

CRLF = b"#include <cstdio>\r\nint a;\r\nint b;\r\nint c;\r\n"
LATIN1 = b"// (c) M\xfcller GmbH\nint x = 1;\nint y = 2;\n"


async def _read(env: Env, path: str) -> dict[str, Any]:
    done = await env.registry.call("fs.read", {"path": path}, env.ctx())
    assert done.status == "ok", done.error
    assert isinstance(done.output, dict)
    return done.output


async def _edit(env: Env, path: str, old: str, new: str) -> Any:
    return await env.registry.call(
        "fs.edit", {"path": path, "old_string": old, "new_string": new}, env.ctx()
    )


async def test_an_edit_written_with_lf_changes_one_line_of_a_crlf_file(env: Env) -> None:
    (env.root / "src" / "win.cpp").write_bytes(CRLF)
    read = await _read(env, "src/win.cpp")
    assert read["line_breaks"] == "crlf"
    done = await _edit(env, "src/win.cpp", "int a;\nint b;\n", "int a;\nlong b;\nlong b2;\n")
    assert done.status == "ok", done.error
    after = (env.root / "src" / "win.cpp").read_bytes()
    assert after == b"#include <cstdio>\r\nint a;\r\nlong b;\r\nlong b2;\r\nint c;\r\n"
    # a one-line edit that adds lines adds them with the file's line breaks too
    await _read(env, "src/win.cpp")
    done = await _edit(env, "src/win.cpp", "int c;", "int c;\nint d;")
    assert done.status == "ok", done.error
    assert (env.root / "src" / "win.cpp").read_bytes().endswith(b"int c;\r\nint d;\r\n")
    assert form_of((env.root / "src" / "win.cpp").read_bytes()).line_breaks == "crlf"


async def test_a_mixed_file_keeps_each_regions_line_breaks(env: Env) -> None:
    (env.root / "src" / "mixed.txt").write_bytes(b"a\r\nb\r\nc\nd\n")
    assert (await _read(env, "src/mixed.txt"))["line_breaks"] == "mixed"
    done = await _edit(env, "src/mixed.txt", "a\nb", "A\nB")
    assert done.status == "ok", done.error
    await _read(env, "src/mixed.txt")
    done = await _edit(env, "src/mixed.txt", "c\nd", "C\nD")
    assert done.status == "ok", done.error
    assert (env.root / "src" / "mixed.txt").read_bytes() == b"A\r\nB\r\nC\nD\n"


async def test_an_lf_file_reads_and_edits_as_before(env: Env) -> None:
    read = await _read(env, "src/app.py")
    assert "line_breaks" not in read
    assert "not_utf8" not in read
    done = await _edit(env, "src/app.py", "print('hello')\n", "print('a')\nprint('b')\n")
    assert done.status == "ok", done.error
    assert (env.root / "src" / "app.py").read_bytes() == b"print('a')\nprint('b')\n"


async def test_a_latin1_file_is_edited_around_its_bytes(env: Env) -> None:
    (env.root / "src" / "legacy.cpp").write_bytes(LATIN1)
    read = await _read(env, "src/legacy.cpp")
    assert "byte 0xfc at offset 8" in read["not_utf8"]
    assert read["content"].startswith("// (c) M\ufffdller")
    done = await _edit(env, "src/legacy.cpp", "int x = 1;", "int x = 3; // ascii only")
    assert done.status == "ok", done.error
    assert (env.root / "src" / "legacy.cpp").read_bytes() == LATIN1.replace(
        b"int x = 1;", b"int x = 3; // ascii only"
    )


async def test_a_latin1_file_refuses_utf8_beside_its_bytes_and_copied_fffd(env: Env) -> None:
    (env.root / "src" / "legacy.cpp").write_bytes(LATIN1)
    await _read(env, "src/legacy.cpp")
    mixed = await _edit(env, "src/legacy.cpp", "int y = 2;", "int y = 2; // Grüße")
    assert mixed.status == "error"
    assert mixed.error is not None
    assert "not UTF-8 text (byte 0xfc at offset 8)" in mixed.error.message
    assert "only ASCII" in mixed.error.message
    copied = await _edit(env, "src/legacy.cpp", "M\ufffdller", "Mueller")
    assert copied.status == "error"
    assert copied.error is not None
    assert "U+FFFD" in copied.error.message
    assert (env.root / "src" / "legacy.cpp").read_bytes() == LATIN1
    assert [p["error"]["kind"] for p in env.payloads("tool.failed")] == ["tool_error"] * 2


async def test_a_latin1_file_is_searched_and_a_binary_one_is_not(env: Env) -> None:
    (env.root / "src" / "legacy.cpp").write_bytes(LATIN1)
    (env.root / "src" / "blob.o").write_bytes(b"\x7fELF\0\0int y = 2;\n")
    done = await env.registry.call("fs.search", {"pattern": r"int y = \d"}, env.ctx())
    assert done.status == "ok", done.error
    assert isinstance(done.output, dict)
    assert done.output["matches"] == [{"path": "src/legacy.cpp", "line": 3, "text": "int y = 2;"}]
    named = await env.registry.call("fs.search", {"pattern": "M.ller"}, env.ctx())
    assert isinstance(named.output, dict)
    assert [m["text"] for m in named.output["matches"]] == ["// (c) M\ufffdller GmbH"]


async def test_a_utf16_resource_script_reads_edits_searches_and_stays_utf16(env: Env) -> None:
    """A Windows resource script is UTF-16 with a byte order mark and CRLF line breaks: read as
    its text, edited and rewritten in its own encoding, searched like any text."""
    script = '\ufeffSTRINGTABLE\r\nBEGIN\r\n  1 "Grüße"\r\nEND\r\n'.encode("utf-16-le")
    (env.root / "src" / "app.rc").write_bytes(script)
    read = await _read(env, "src/app.rc")
    assert read["content"] == 'STRINGTABLE\r\nBEGIN\r\n  1 "Grüße"\r\nEND\r\n'
    assert read["encoding"] == "UTF-16LE"
    assert read["line_breaks"] == "crlf"
    assert "not_utf8" not in read
    done = await _edit(env, "src/app.rc", 'BEGIN\n  1 "Grüße"', 'BEGIN\n  1 "Grüße"\n  2 "Tschüs"')
    assert done.status == "ok", done.error
    edited = '\ufeffSTRINGTABLE\r\nBEGIN\r\n  1 "Grüße"\r\n  2 "Tschüs"\r\nEND\r\n'
    assert (env.root / "src" / "app.rc").read_bytes() == edited.encode("utf-16-le")
    found = await env.registry.call("fs.search", {"pattern": "Tsch.s"}, env.ctx())
    assert isinstance(found.output, dict)
    assert found.output["matches"] == [{"path": "src/app.rc", "line": 4, "text": '  2 "Tschüs"'}]
    await _read(env, "src/app.rc")
    rewrite = await env.registry.call(
        "fs.write", {"path": "src/app.rc", "content": "STRINGTABLE\nEND\n"}, env.ctx()
    )
    assert rewrite.status == "ok", rewrite.error
    assert (env.root / "src" / "app.rc").read_bytes() == (
        "\ufeffSTRINGTABLE\r\nEND\r\n".encode("utf-16-le")
    )


async def test_a_rewrite_keeps_crlf_and_the_byte_order_mark(env: Env) -> None:
    (env.root / "src" / "win.cpp").write_bytes(CRLF)
    (env.root / "src" / "bom.cpp").write_bytes(b"\xef\xbb\xbfint u = 1;\n")
    for path in ("src/win.cpp", "src/bom.cpp"):
        await _read(env, path)
    win = await env.registry.call(
        "fs.write", {"path": "src/win.cpp", "content": "int a;\nint z;\n"}, env.ctx()
    )
    assert win.status == "ok", win.error
    assert isinstance(win.output, dict)
    assert win.output["line_breaks"] == "crlf"
    assert (env.root / "src" / "win.cpp").read_bytes() == b"int a;\r\nint z;\r\n"
    bom = await env.registry.call(
        "fs.write", {"path": "src/bom.cpp", "content": "int u = 2;\n"}, env.ctx()
    )
    assert bom.status == "ok", bom.error
    assert (env.root / "src" / "bom.cpp").read_bytes() == b"\xef\xbb\xbfint u = 2;\n"
    new = await env.registry.call(
        "fs.write", {"path": "src/new.cpp", "content": "int n;\r\nint m;\n"}, env.ctx()
    )
    assert new.status == "ok", new.error
    assert (env.root / "src" / "new.cpp").read_bytes() == b"int n;\r\nint m;\n"


async def test_a_patch_written_with_lf_applies_to_a_crlf_file(env: Env) -> None:
    (env.root / "src" / "win.cpp").write_bytes(CRLF)
    patch = (
        "--- a/src/win.cpp\n+++ b/src/win.cpp\n@@ -2,3 +2,4 @@\n int a;\n-int b;\n+long b;\n"
        "+long b2;\n int c;\n"
    )
    done = await env.registry.call("fs.patch", {"patch": patch}, env.ctx())
    assert done.status == "ok", done.error
    assert (env.root / "src" / "win.cpp").read_bytes() == (
        b"#include <cstdio>\r\nint a;\r\nlong b;\r\nlong b2;\r\nint c;\r\n"
    )
    # a patch that carries the CR itself is applied as written
    crlf_patch = "--- a/src/win.cpp\n+++ b/src/win.cpp\n@@ -5 +5 @@\n-int c;\r\n+int e;\r\n"
    done = await env.registry.call("fs.patch", {"patch": crlf_patch}, env.ctx())
    assert done.status == "ok", done.error
    assert (env.root / "src" / "win.cpp").read_bytes().endswith(b"long b2;\r\nint e;\r\n")


async def test_a_tool_that_raises_the_unexpected_ends_that_call_recorded(env: Env) -> None:
    async def broken(input: JsonObject, run: ToolRun) -> Any:
        raise KeyError("a defect")

    for name, streaming in (("test.broken", False), ("test.broken_stream", True)):
        definition = ToolDefinition(
            name=name,
            description="raises what no tool should",
            input_schema={"type": "object"},
            category=ToolCategory.PROJECT,
            streaming=streaming,
        )
        if streaming:
            env.registry.register_streaming(definition, broken)
        else:
            env.registry.register(definition, broken)
        done = await env.registry.call(name, {}, env.ctx())
        assert done.status == "error"
        assert done.error is not None
        assert done.error.kind == "system_error"
        assert done.error.message == f"{name} failed on a defect of air (KeyError: 'a defect')"
        assert "air doctor --bundle" in (done.error.user_action or "")
    failed = [p["tool_run_id"] for p in env.payloads("tool.failed")]
    statuses = {r["id"]: r["status"] for r in env.rows("tool_runs")}
    assert [statuses[i] for i in failed] == ["error", "error"]


_LINES = st.lists(st.text(alphabet="ab \t{};", max_size=6), min_size=1, max_size=8)


@settings(max_examples=200, deadline=None)
@given(lines=_LINES, pick=st.integers(0, 7), span=st.integers(1, 3), new=_LINES)
def test_an_lf_edit_of_a_crlf_file_is_the_lf_edit_in_crlf(
    lines: list[str], pick: int, span: int, new: list[str]
) -> None:
    """For any CRLF file and any run of whole lines in it: replacing them with LF strings gives
    the bytes the same edit gives on the LF file, every line break then written as CRLF."""
    text = "".join(f"{line}\n" for line in lines)
    at = pick % len(lines)
    old = "".join(f"{line}\n" for line in lines[at : at + span])
    repl = "".join(f"{line}\n" for line in new)
    crlf = text.replace("\n", "\r\n").encode()
    try:
        expected = replace_in("f", text.encode(), old, repl, replace_all=False)
    except Exception as exc:  # absent or ambiguous: the CRLF file refuses it the same way
        with pytest.raises(type(exc)):
            replace_in("f", crlf, old, repl, replace_all=False)
        return
    assert replace_in("f", crlf, old, repl, replace_all=False) == expected.replace(b"\n", b"\r\n")


def test_written_keeps_a_new_files_text_and_an_old_files_form() -> None:
    assert written(None, "a\nb\n") == b"a\nb\n"
    assert written(b"x\r\ny\r\n", "a\nb\n") == b"a\r\nb\r\n"
    assert written(b"x\r\ny\n", "a\nb\n") == b"a\nb\n"  # mixed: as given
    assert written(b"\xef\xbb\xbfx\n", "\ufeffa\n") == b"\xef\xbb\xbfa\n"  # one mark, not two


def test_a_run_edits_crlf_latin1_and_utf16_files_and_merges_only_the_edits(tmp_path: Path) -> None:
    """Through a worker, the parent's tools and the merge: the project's files change only
    where the model's LF edits said (editing the Latin-1 file once ended the run with a
    traceback)."""
    root, home = tmp_path / "proj", tmp_path / "home"
    home.mkdir()
    (root / "cassettes").mkdir(parents=True)
    (root / "win.cpp").write_bytes(CRLF)
    (root / "legacy.cpp").write_bytes(LATIN1)
    (root / "app.rc").write_bytes("\ufeffBEGIN\r\nEND\r\n".encode("utf-16-le"))
    (root / "batch.yaml").write_text(
        "version: 1\ntasks:\n  - id: fix\n    title: Fix all\n"
        "    scope: {write_area: [win.cpp, legacy.cpp, app.rc]}\n"
    )
    calls = [
        ("fs.read", {"path": "win.cpp"}),
        ("fs.edit", {"path": "win.cpp", "old_string": "int a;\nint b;", "new_string": "int b;"}),
        ("fs.read", {"path": "legacy.cpp"}),
        ("fs.edit", {"path": "legacy.cpp", "old_string": "int x = 1;", "new_string": "int x;"}),
        ("fs.read", {"path": "app.rc"}),
        ("fs.edit", {"path": "app.rc", "old_string": "BEGIN\n", "new_string": "BEGIN\n  ü\n"}),
    ]
    result = {"status": "completed", "summary": "Done.", "result": {"changes_made": True}}
    turns = [
        CassetteTurn(
            content=[ToolUseBlock(id=f"t{i}", name=name, input=args)], stop_reason="tool_use"
        )
        for i, (name, args) in enumerate(calls)
    ]
    turns.append(
        CassetteTurn(
            content=[TextBlock(text=f"Done.\n```json:result\n{json.dumps(result)}\n```\n")],
            stop_reason="end_turn",
        )
    )
    (root / "cassettes" / "fix.jsonl").write_text(
        "".join(t.model_dump_json(exclude_none=True) + "\n" for t in turns)
    )
    init_repo(root, message="start")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIR_")} | {"HOME": str(home)}
    run = ("run", "--headless", "batch.yaml", "--cassette", "cassettes", "--json")
    done = air_cli(run, cwd=root, env=env)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    ends = [json.loads(line)["type"] for line in done.stdout.splitlines()]
    assert ends.count("tool.completed") == 6
    assert "tool.failed" not in ends
    assert (root / "win.cpp").read_bytes() == b"#include <cstdio>\r\nint b;\r\nint c;\r\n"
    assert (root / "legacy.cpp").read_bytes() == LATIN1.replace(b"int x = 1;", b"int x;")
    assert (root / "app.rc").read_bytes() == "\ufeffBEGIN\r\n  ü\r\nEND\r\n".encode("utf-16-le")
