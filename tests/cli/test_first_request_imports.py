"""What the parent of ``air run --headless`` has imported when its first model request leaves
(issue #10: process start -> first request; IMPL-BOOT-5). A real run in a fresh interpreter
(``air.cli.main``, a real spare worker, real SQLite, real bwrap probe) against the strict local
Anthropic server; an audit hook snapshots ``sys.modules`` at the ``socket.connect`` to that
server, i.e. just before the request is written. Nothing is patched in air."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.headless import review_project, review_verdict
from tests.llm.servers import LocalServer, Reply, Turn, anthropic_sse
from tests.trusted import trust_project

NOT_BEFORE_THE_FIRST_REQUEST = (
    "tree_sitter",  # the shell parser: the first shell command builds it
    "tree_sitter_bash",
    # the command classifier's program handlers: loaded with the parser, at the first command
    "air.security.command_wrappers",
    "air.security.command_interpreters",
    "air.security.command_packages",
    "air.security.command_files",
    "air.security.command_text_tools",
    "air.security.command_git",
    "air.security.command_builds",
    "air.agents",  # the ArchitectureDesigner: only with .air/shared/architecture.yaml
    "air.contracts.ui",  # the console's projections
    "air.llm.cassette",  # cassette runs only (IMPL-BOOT-4)
    "anthropic",  # the SDK transport is not the default one
    "sqlite_utils",
    "asyncio",
    "urwid",
    # the event payload groups a run records only after its first request (IMPL-BOOT-7)
    "air.events.payloads.ends",
    "air.events.payloads.tools",
    "air.events.payloads.conversation",
    "air.events.payloads.knowledge",
    "air.events.payloads.doctor",
    # IMPL-BOOT-8: what only a later step of the run needs
    "air.context.compactor",  # the compactor: built when a task's context asks for it
    "air.session.knowledge",  # the knowledge stores: only with something to converge
    "air.artifacts.knowledge",
    "air.artifacts.rules",
    "air.nursery.outcomes",  # once a worker has returned: evidence, gates, reviews, merge
    "air.artifacts.evidence",
    "air.nursery.reviews",
    "air.nursery.architecture_gate",  # only with .air/shared/architecture.yaml
    "air.roles",  # the worker's package: its prompts are read as files
    "logging.handlers",  # the log file's handler: at the first record it writes
    "pickle",
    "difflib",  # fs.write's diff
    "shlex",  # the git and cpp tools' command lines
    "zipfile",  # importlib.resources' readers: package data is read as files
    "_strptime",  # workspace GC parses its own timestamps with fromisoformat
    # IMPL-BOOT-10: the plain HTTP adapters' client is h11 on Trio; httpx only behind a proxy
    "httpx",
    "httpcore",
    "anyio",
    "http.client",
    "email",
    # IMPL-BOOT-12: contract models a run builds only after its first request
    "air.contracts.ipc_messages",  # the controls after agent.start, the worker's payloads
    "air.contracts.worker_result",  # a worker's result (and the role results)
    "air.supervision.task_outcome",  # how an attempt ended
    "air.contracts.task_results",  # SchedulerRunResult, RetryDecision, MergeResult
    "air.contracts.doctor_report",  # the Doctor's contracts
    "air.contracts.tool_runs",  # a tool call's context, result envelope, events, diagnostics
    "air.contracts.artifact_records",  # artifact refs and inputs, debug records, memories
    "air.contracts.evidence_records",  # evidence refs and inputs
    "air.contracts.permission_records",  # a permission check's request, analysis, decision
    # IMPL-BOOT-16: a tool's own machinery loads at its first call, not with its definition
    "air.tools.cpp_runner",  # the cpp.* tools' recorded, sandboxed commands
    "air.tools.sandbox_spawn",  # starting bwrap, its seccomp filter, the read-only view
    "air.tools.seccomp",
    "air.tools.task_view",
    "air.tools.output",  # a command's streamed output
    "air.tools.git_apply",  # fs.patch
    "air.tools.unified_diff",
    "air.workspace.authorship",  # a worktree's commits: a main-workspace task makes none
    "air.workspace.copies",  # an isolated copy's files
    "air.llm.local_context",  # asked only of a local keyless OpenAI-compatible server
    "air.mcp.config",  # only when ~/.air/mcp.yaml or the project's mcp.yaml exists
)


LATE_MODELS = {
    # air.contracts.ipc_messages
    "AgentCancelControl",
    "AgentPauseControl",
    "AgentResumeControl",
    "AgentExtendTimeoutControl",
    "AgentWrapUpControl",
    "AgentGetStateControl",
    "WorkerReadyPayload",
    "WorkerEventPayload",
    "LogPayload",
    "ToolStreamPayload",
    "WorkerCheckpointPayload",
    "ProtocolErrorPayload",
    # air.contracts.worker_result, air.supervision.task_outcome
    "WorkerResult",
    "ExecutorResult",
    "ReviewerResult",
    "TaskOutcome",
    # air.contracts.task_results, air.contracts.doctor_report
    "SchedulerRunResult",
    "RetryDecision",
    "MergeResult",
    "DoctorRunOutput",
    # air.contracts.tool_runs, artifact_records, evidence_records, permission_records
    "ToolExecutionContext",
    "ToolResultEnvelope",
    "ToolEvent",
    "Diagnostic",
    "ArtifactRef",
    "ArtifactCreateInput",
    "DebugRecord",
    "LearnedMemory",
    "EvidenceRef",
    "PermissionRequestContext",
    "PermissionDecision",
    "CommandRiskAnalysis",
    "PathRiskClassification",
    "PermissionPromptRequest",
    "_ToolResultLine",  # air.ipc.protocol's typed tool.result line: at the first tool result
}
"""Models a run creates only after its first request (IMPL-BOOT-12), by class name."""


def _no_proxy() -> dict[str, str]:
    """This environment without a proxy (with one, the adapter rightly uses httpx)."""
    proxies = ("http_proxy", "https_proxy", "all_proxy")
    return {k: v for k, v in os.environ.items() if k.lower() not in proxies}


PROBE = """
import json, sys

out, port = sys.argv[1], int(sys.argv[2])
seen = []

def models():
    base = sys.modules.get("pydantic.main")
    found, todo = set(), [base.BaseModel] if base else []
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                todo.append(sub)
    return sorted(f"{c.__module__}.{c.__qualname__}" for c in found)

def hook(event, args):
    if event == "socket.connect" and not seen:
        address = args[1]
        if isinstance(address, tuple) and len(address) >= 2 and address[1] == port:
            seen.append(sorted(sys.modules))
            with open(out, "w") as handle:
                json.dump({"modules": seen[0], "models": models()}, handle)

sys.addaudithook(hook)
from air.cli import main

sys.exit(main(["run", "--headless", "batch.yaml", "--json"]))
"""


def _loaded_at_first_request(tmp_path: Path) -> dict[str, list[str]]:
    """The modules imported and the pydantic models created when the first request leaves."""
    root, home = review_project(tmp_path)
    out = tmp_path / "modules.json"
    with LocalServer() as server:
        (root / ".air" / "shared" / "models.yaml").write_text(
            "default: local/claude-test\n"
            "providers:\n"
            "  local:\n"
            "    kind: anthropic\n"
            f"    base_url: {server.url}\n"
            "    auth_ref: AIR_TEST_PROVIDER_KEY\n"
            "    models:\n"
            "      claude-test: {context_window: 32768, max_output_tokens: 4096}\n"
        )
        trust_project(root, home)
        server.push(Reply(chunks=anthropic_sse(Turn(text=[review_verdict()]))))
        port = int(server.url.rstrip("/").rsplit(":", 1)[1])
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(PROBE), str(out), str(port)],
            cwd=root,
            env={**_no_proxy(), "HOME": str(home), "AIR_TEST_PROVIDER_KEY": "k-test-key"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        requests = list(server.requests)
        rejected = list(server.rejected)
    assert done.returncode == 0, done.stderr
    assert len(requests) == 1
    assert rejected == []
    loaded: dict[str, list[str]] = json.loads(out.read_text())
    return loaded


def test_the_first_request_leaves_before_the_parser_the_designer_and_the_console(
    tmp_path: Path,
) -> None:
    found = _loaded_at_first_request(tmp_path)
    loaded = found["modules"]
    assert "air.llm.anthropic_http" in loaded  # the snapshot is the request's own connect
    early = [
        m
        for m in loaded
        if any(m == top or m.startswith(top + ".") for top in NOT_BEFORE_THE_FIRST_REQUEST)
    ]
    assert early == []
    # what the run did need before it is there: the analyzer (its parser unbuilt), the engine
    assert {"air.security.commands", "air.security.engine"} <= set(loaded)
    assert "air.events.payloads.start" in loaded  # the payloads of what it has recorded
    # IMPL-BOOT-12: no model of a late contract module is created, wherever it is defined
    created = {name.rsplit(".", 1)[1] for name in found["models"]}
    assert {"TaskSpec", "ProviderCompletionInput", "IpcEnvelope", "ToolCallPayload"} <= created
    assert created & LATE_MODELS == set()


def test_the_factory_checks_the_designer_s_own_file_name() -> None:
    from air.agents.architecture import ARCHITECTURE_FILE
    from air.cli.factory import ARCHITECTURE_FILE as CHECKED

    assert CHECKED == ARCHITECTURE_FILE


def test_the_knowledge_check_names_the_stores_own_files() -> None:
    from air.artifacts.knowledge import DebugKnowledgeStore, LearnedMemoryStore
    from air.session.knowledge_recovery import KNOWLEDGE_FILES

    assert KNOWLEDGE_FILES == (DebugKnowledgeStore.FILENAME, LearnedMemoryStore.FILENAME)


@pytest.fixture(scope="module")
def first_request(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """One real run's modules and models at its first request, for the class-form checks."""
    return _loaded_at_first_request(tmp_path_factory.mktemp("first"))


def _air_classes(modules: list[str]) -> dict[str, type]:
    """``module.Class`` -> class, for every class defined in an air module of ``modules``."""
    import importlib
    import inspect

    found: dict[str, type] = {}
    for name in modules:
        if not name.startswith("air."):
            continue
        for value in vars(importlib.import_module(name)).values():
            if inspect.isclass(value) and value.__module__ == name:
                found[f"{name}.{value.__qualname__}"] = value
    return found


def test_no_dataclass_on_the_way_computes_its_docstring(
    first_request: dict[str, list[str]],
) -> None:
    # a dataclass without a docstring gets one from inspect.signature when it is created
    # (~40 us each, on the parent's critical path): every air dataclass the parent creates
    # before its first request has its own (IMPL-BOOT-13)
    import dataclasses

    classes = _air_classes(first_request["modules"])
    assert "air.supervision.worker_run.WorkerRun" in classes  # the run's modules were read
    generated = [
        name
        for name, cls in classes.items()
        if dataclasses.is_dataclass(cls) and (cls.__doc__ or "").startswith(cls.__name__ + "(")
    ]
    assert generated == []


ON_THE_WAY_NAMEDTUPLES = {
    "air.context.budget.BudgetFitResult",
    "air.nursery.planner.WaveDecision",
    "air.nursery.graph.OrphanReport",
    "air.ipc.launcher.Launched",
    "air.tools.registry._Entry",
    "air.security.items.Evaluation",
}
"""Read-only records on the way to the first request made NamedTuples (IMPL-BOOT-14)."""

VALUE_DATACLASSES = {
    "air.nursery.ledger.StoredTask",  # the ledger's view: compared by value (the fold's test)
    "air.nursery.ledger.StoredAgent",
    "air.nursery.ledger.LedgerState",
    "air.workspace.backups.Snapshot",  # a frozen record, read through __dict__
}
"""The only air dataclasses on the way that keep a generated ``__eq__`` (IMPL-BOOT-14)."""

NO_REPR = {
    "air.nursery.runtime.Runtime",
    "air.nursery.runtime.RuntimeServices",
    "air.nursery.runtime.RuntimeConfig",
    "air.session.manager.OpenSession",
}
"""Service holders whose generated repr would only dump live services (IMPL-BOOT-14)."""


def test_the_classes_on_the_way_are_the_cheap_forms(first_request: dict[str, list[str]]) -> None:
    # creating a dataclass compiles __init__, __repr__ and __eq__ from source (~100 us each for
    # a dozen fields, on the parent's critical path): a read-only record is a NamedTuple, a
    # service or state holder compares by identity, a service holder has no generated repr
    import dataclasses

    classes = _air_classes(first_request["modules"])
    for name in ON_THE_WAY_NAMEDTUPLES:
        cls = classes[name]
        assert issubclass(cls, tuple), name
        assert hasattr(cls, "_fields"), name
        assert not dataclasses.is_dataclass(cls), name
    on_the_way = {name: cls for name, cls in classes.items() if dataclasses.is_dataclass(cls)}
    assert VALUE_DATACLASSES | NO_REPR <= set(on_the_way)
    with_eq = {name for name, cls in on_the_way.items() if "__eq__" in vars(cls)}
    assert with_eq == VALUE_DATACLASSES
    assert len(on_the_way) - len(with_eq) >= 19  # WorkerRun, HeadlessOptions, Runtime, ...
    for name in NO_REPR:
        assert "__repr__" not in vars(on_the_way[name]), name
    # identity equality: two equal-looking holders are not equal, and each hashes
    from air.ipc.framing import LineDecoder

    first, second = LineDecoder(), LineDecoder()
    assert first == first
    assert first != second
    assert len({first, second}) == 2
