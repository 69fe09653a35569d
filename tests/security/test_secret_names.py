"""Issue 22 item 5: secrets by name. The values of the parent's environment variables whose
names say secret (``*_KEY``, ``*_PAT``, ``*_PASS``, ``*_PWD``, ``*_CREDENTIALS``, ``*_SECRET*``,
``*_TOKEN*``, providers' names) are redacted by value wherever a tool shows them, even when the
tool read them from a project file (the sandbox never passes them); a value that is ordinary
text (``FOO_PASS=No``) is not, so "No such file or directory" stays readable, and ordinary
variables (``HOME``, ``PATH``, ``LANG``) are never redacted."""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import string
from pathlib import Path

import pytest

from air.security.redact import (
    REDACTED,
    SecretRedactor,
    looks_secret_env_name,
    registrable_secret,
)
from air.testing.strict_servers import StrictServer
from air.testing.wire_replies import Reply, Turn, openai_sse
from tests.headless import run_batch_json
from tests.trusted import trust_project

BATCH = """version: 1
tasks:
  - id: peek
    title: Look at the configuration
    description: Print the configuration and report.
    scope: {write_area: ["notes.txt"]}
"""


def _value(prefix: str) -> str:
    alphabet = string.ascii_letters + string.digits
    return prefix + "".join(secrets.choice(alphabet) for _ in range(20))


def _cells_with(db: Path, needle: str) -> int:
    found = 0
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                found += sum(1 for cell in row if needle in str(cell))
    return found


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("MY_SERVICE_TOKEN", True),
        ("DB_PASS", True),
        ("db_pass", True),
        ("MY_SERVICE_KEY", True),
        ("GH_PAT", True),
        ("MYSQL_PWD", True),
        ("CI_PASSWORD", True),
        ("GCP_CREDENTIALS", True),
        ("APP_SECRET_V2", True),
        ("VAULT_TOKEN_FILE_CONTENT", True),
        ("AZURE_STORAGE_CONNECTION_STRING", True),
        ("BW_SESSION", True),
        ("ANTHROPIC_API_KEY", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("AWS_SESSION_TOKEN", True),
        ("HOME", False),
        ("PATH", False),
        ("LANG", False),
        ("PWD", False),
        ("OLDPWD", False),
        ("MAX_TOKENS", False),
        ("AWS_ACCESS_KEY_ID", False),
        ("KEYBOARD_LAYOUT", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert looks_secret_env_name(name) is secret


@pytest.mark.parametrize(
    ("value", "registered"),
    [
        ("No", False),
        ("true", False),
        ("directory", False),
        ("Disabled", False),
        ("PRODUCTION", False),
        ("123456789012", False),
        ("/usr/bin", False),
        ("~/.config/gcloud/creds.json", False),
        ("hunter2!", True),
        ("s3cr3t-value", True),
        ("correct horse battery staple", True),
        ("Zq81Xv7Kp", True),
        ("correcthorsebatterystaple", True),
        ("12345678901234567890", True),
    ],
)
def test_ordinary_text_is_not_registered(value: str, registered: bool) -> None:
    assert registrable_secret(value) is registered


def test_register_environment_skips_ordinary_variables_and_values() -> None:
    redactor = SecretRedactor()
    environ = {
        "HOME": "/home/someone",
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "en_US.UTF-8",
        "FOO_PASS": "No",
        "BAR_TOKEN": "directory",
        "DB_PASS": "Pw-7c1e9a",
    }
    assert redactor.register_environment(environ) == 1
    text = "cat: x: No such file or directory; HOME=/home/someone LANG=en_US.UTF-8 /usr/bin"
    assert redactor.redact(text) == text
    assert redactor.redact("psql with Pw-7c1e9a") == f"psql with {REDACTED}"


def test_a_value_read_from_a_project_file_is_redacted_everywhere(tmp_path: Path) -> None:
    """A real headless run: the scripted model has the sandboxed shell print a project file that
    holds the values (not as ``NAME=value`` lines, which the shapes would catch) and then
    ``fs.read`` it. No event, table cell, artifact or ``--json`` line holds a value; the output
    says [REDACTED] in their place and still says "No such file or directory"."""
    values = {
        "MY_SERVICE_TOKEN": _value("t"),
        "DB_PASS": _value("p"),
        "MY_SERVICE_KEY": _value("k"),
        "GH_PAT": _value("g"),
        "MYSQL_PWD": _value("m"),
    }
    for value in values.values():
        assert SecretRedactor().redact(value) == value  # no shape knows them
    root, home = tmp_path / "proj", tmp_path / "home"
    (root / ".air" / "shared").mkdir(parents=True)
    home.mkdir()
    listing = "\n".join(f"{name.lower()} is {value}" for name, value in values.items())
    (root / "config.txt").write_text(f"{listing}\nhome is {home}\nlang is C.UTF-8\n")
    (root / "notes.txt").write_text("notes\n")
    (root / "batch.yaml").write_text(BATCH)
    key = _value("zq81")
    with StrictServer(api_key=key) as server:
        (root / ".air" / "shared" / "models.yaml").write_text(
            "default: local/m\nproviders:\n  local:\n    kind: openai_compatible\n"
            f"    base_url: {server.url}/v1\n    auth_ref: AIR_NAMES_KEY\n"
            "    models: {m: {max_output_tokens: 4096}}\n"
        )
        trust_project(root, home)
        command = json.dumps({"command": "cat config.txt missing.txt"})
        read = json.dumps({"path": "config.txt"})
        done = {"status": "completed", "summary": "Printed it.", "result": {"changes_made": False}}
        server.push(
            Reply(
                chunks=openai_sse(Turn(tool=("call_1", "shell_run", [command]), stop="tool_use"))
            ),
            Reply(chunks=openai_sse(Turn(tool=("call_2", "fs_read", [read]), stop="tool_use"))),
            Reply(chunks=openai_sse(Turn(text=[f"```json:result\n{json.dumps(done)}\n```\n"]))),
        )
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))},
            **values,
            "FOO_PASS": "No",
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "AIR_NAMES_KEY": key,
        }
        proc = run_batch_json(root, env)
        requests, rejected = list(server.requests), list(server.rejected)
    assert rejected == []
    assert proc.returncode == 0, proc.stderr
    # what the model was sent back (the tool results) is redacted too
    sent = json.dumps([r.body for r in requests[1:]])
    assert sent.count(REDACTED) >= 2 * len(values)
    assert "No such file or directory" in sent
    assert f"home is {home}" in sent
    assert "lang is C.UTF-8" in sent
    lines = proc.stdout.splitlines()
    shown = {json.loads(line)["type"] for line in lines if REDACTED in line}
    assert "tool.completed" in shown, shown
    written = [p for p in [*root.rglob("*"), *home.rglob("*")] if p.is_file()]
    artifacts = [p for p in written if "artifacts" in p.parts]
    stdout = b"".join(p.read_bytes() for p in artifacts if p.name.endswith("stdout.log"))
    stderr = b"".join(p.read_bytes() for p in artifacts if p.name.endswith("stderr.log"))
    assert stdout.count(REDACTED.encode()) == len(values), stdout
    assert b"No such file or directory" in stderr, stderr
    dbs = [p for p in written if p.suffix == ".db"]
    assert dbs
    for value in values.values():
        assert [line for line in lines if value in line] == []
        assert value not in proc.stderr
        assert sum(_cells_with(db, value) for db in dbs) == 0
        assert [
            p for p in written if p != root / "config.txt" and value.encode() in p.read_bytes()
        ] == []
