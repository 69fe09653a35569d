"""A key of no known shape, resolved from an auth_ref, never reaches the record: a real run in
which the scripted model echoes the key into a command, a tool argument and its result finds it
in 0 event payloads, 0 table cells of the session database, 0 artifacts and 0 --json lines."""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import string
from pathlib import Path

from air.security.redact import SecretRedactor
from air.testing.strict_servers import StrictServer
from air.testing.wire_replies import Reply, Turn, openai_sse
from tests.headless import LOOK_BATCH, review_project, run_batch_json, strict_openai_models
from tests.trusted import trust_project


def _key() -> str:
    alphabet = string.ascii_lowercase + string.digits
    return "zq81" + "".join(secrets.choice(alphabet) for _ in range(40))


def _result(key: str) -> str:
    block = json.dumps(
        {
            "status": "completed",
            "summary": f"the key is {key}",
            "result": {"changes_made": False, "notes": f"found {key} in the environment"},
        }
    )
    return f"Done, key {key}.\n```json:result\n{block}\n```\n"


def _cells_with(db: Path, needle: str) -> int:
    found = 0
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                found += sum(1 for cell in row if needle in str(cell))
    return found


def test_a_shapeless_key_is_redacted_everywhere(tmp_path: Path) -> None:
    key = _key()
    assert SecretRedactor().redact(key) == key  # no pattern knows this shape
    root, home = review_project(tmp_path, LOOK_BATCH)
    with StrictServer(api_key=key) as server:
        strict_openai_models(root, server.url, "AIR_SHAPELESS")
        trust_project(root, home)
        command = json.dumps({"command": f"echo {key}"})
        read = json.dumps({"path": f"{key}.txt"})
        server.push(
            Reply(
                chunks=openai_sse(Turn(tool=("call_1", "shell_run", [command]), stop="tool_use"))
            ),
            Reply(chunks=openai_sse(Turn(tool=("call_2", "fs_read", [read]), stop="tool_use"))),
            Reply(chunks=openai_sse(Turn(text=[_result(key)]))),
        )
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))},
            "HOME": str(home),
            "AIR_SHAPELESS": key,
        }
        proc = run_batch_json(root, env)
        requests, rejected = list(server.requests), list(server.rejected)
    assert rejected == []
    assert len(requests) == 3, proc.stderr
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    events = [json.loads(line) for line in lines if line.startswith("{")]
    types = {e["type"] for e in events}
    assert {"tool.started", "task.completed"} <= types
    done = next(e for e in events if e["type"] == "task.completed")
    assert "[REDACTED]" in done["payload"]["worker_result"]["summary"]
    # the key really was in play: the model echoed it and the server received it
    assert key in json.dumps(requests[0].headers)
    assert [line for line in lines if key in line] == []
    assert key not in proc.stderr
    dbs = [p for p in root.rglob("*") if p.is_file() and p.suffix in (".db", ".sqlite")]
    assert dbs
    assert sum(_cells_with(db, key) for db in dbs) == 0
    written = [p for p in [*root.rglob("*"), *home.rglob("*")] if p.is_file()]
    assert [p for p in written if key.encode() in p.read_bytes()] == []
