"""ProjectionStore: the console's view of one session, folded from its events (SDD §13.1).

Owns ``ProjectionStore`` (``hydrate`` from the session's event log a page at a time after
``last_seq``, ``restore`` from a stored view and its event position
(``air.projection.view_snapshot``), ``apply`` for every durable event and the key ephemeral
ones, ``snapshot``, ``subscribe``, ``feed`` from a Trio receive channel), its per-event
handlers and ``StoreSubscription``. State is kept in the plain mutable records of
``air.projection.records`` (each growing list windowed, IMPL-READ-2) so an ephemeral event
costs a dict lookup and a string append; the frozen ``ProjectionSnapshot`` is built
(``air.projection.snapshot``) only when asked for and only once per revision. Unknown event
types are ignored. Ephemeral events never create records (a delta for an unknown message or
command is dropped), so an event storm cannot grow memory beyond the bounded tails. The store
is never a scheduling or recovery source of truth.
"""

from __future__ import annotations

import logging
import os
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from air.contracts.error import AirException
from air.contracts.event import RuntimeEvent
from air.contracts.ui import (
    ArtifactProjection,
    BlockerProjection,
    DiffProjection,
    EvidenceProjection,
    PermissionPromptProjection,
    PermissionSegmentProjection,
    ProjectionSnapshot,
    SessionProjection,
)
from air.events.payloads import EPHEMERAL_TYPES, payload_model
from air.events.store import record_to_event
from air.projection.records import (
    DIFF_WINDOW,
    WINDOW,
    CommandRecord,
    MessageRecord,
    ViewState,
    keep_newest,
)
from air.projection.snapshot import build_snapshot

if TYPE_CHECKING:
    import trio

    from air.events.store import EventStore

__all__ = ["DIFF_TEXT_LIMIT", "PAGE", "TAIL_LIMIT", "ProjectionStore", "StoreSubscription"]

log = logging.getLogger("air.projection")

TAIL_LIMIT = 16 * 1024
"""Characters of a command's live output kept (the newest)."""
DIFF_TEXT_LIMIT = 256 * 1024
"""Bytes of a diff artifact read for display."""
PAGE = 512
"""Events ``hydrate`` reads from SQLite at once."""
RECENT_READ = 4096
"""Ids of the newest events ``hydrate`` read that are kept: one of them still queued on the
live channel is recognised and skipped."""


def _text_of(content: Any) -> str:
    if not isinstance(content, list):
        return ""
    parts = [
        str(block.get("text", ""))
        for block in content
        if isinstance(block, dict) and block.get("type") == "text"
    ]
    return "".join(parts)


def _error_text(error: Any) -> str | None:
    if isinstance(error, dict):
        return str(error.get("message") or error.get("kind") or "error")
    return None if error is None else str(error)


def _summarise_input(data: Any) -> str:
    if isinstance(data, dict):
        for key in ("command", "path", "query", "pattern"):
            if key in data:
                return str(data[key])
        return ", ".join(f"{k}={v}" for k, v in list(data.items())[:3])
    return ""


class StoreSubscription:
    """A change handler registered with ``ProjectionStore.subscribe``."""

    def __init__(self, store: ProjectionStore, handler: Callable[[int], None]) -> None:
        self._store = store
        self.handler = handler
        self.closed = False

    def close(self) -> None:
        self.closed = True
        self._store._drop(self)


class ProjectionStore:
    """The projection of one session, kept live event by event.

    Args:
        artifact_root: the session's artifact directory. A ``diff`` artifact's text, and the
            draft an interrupted answer's ``failure_artifact_id`` names, are read (bounded by
            ``DIFF_TEXT_LIMIT``) only when the real path lies inside this directory; without
            it no file is ever read.
        tail_limit: characters of live command output kept per command.
        window: newest entries kept of each growing list (``WINDOW``, IMPL-READ-2); diffs keep
            at most ``DIFF_WINDOW``.
    """

    def __init__(
        self,
        *,
        artifact_root: str | os.PathLike[str] | None = None,
        tail_limit: int = TAIL_LIMIT,
        window: int = WINDOW,
    ) -> None:
        self._root = Path(artifact_root).resolve() if artifact_root is not None else None
        self._tail_limit = tail_limit
        self.window = window
        self._diff_window = min(window, DIFF_WINDOW)
        self._state = ViewState()
        self._revision = 0
        self._cached: ProjectionSnapshot | None = None
        self._subs: list[StoreSubscription] = []
        self.last_seq = 0
        """The highest ``events.seq`` hydrated (for an incremental re-hydrate)."""
        self.rows_read = 0
        """Event rows read from the database, all hydrations together (tests, the bench)."""
        self._live_ids: set[str] = set()
        """Ids of the durable events applied live since the last hydration: it skips them."""
        self._read_ids: OrderedDict[str, None] = OrderedDict()
        """Ids of the newest events hydrated (``RECENT_READ``): the live feed skips them."""
        self._handlers: dict[str, Callable[[RuntimeEvent, dict[str, Any]], bool]] = {
            "session.created": self._session_created,
            "session.archived": self._session_status,
            "session.deleted": self._session_status,
            "session.model.changed": self._session_model,
            "user.message.created": self._user_message,
            "assistant.message.started": self._assistant_started,
            "assistant.message.delta": self._assistant_delta,
            "assistant.message.created": self._assistant_created,
            "assistant.message.failed": self._assistant_failed,
            "agent.started": self._agent_started,
            "agent.heartbeat": self._agent_heartbeat,
            "agent.completed": self._agent_end,
            "agent.failed": self._agent_end,
            "agent.lost": self._agent_end,
            "agent.cancelled": self._agent_end,
            "tool.started": self._tool_started,
            "tool.progress": self._tool_progress,
            "tool.completed": self._tool_end,
            "tool.failed": self._tool_end,
            "tool.cancelled": self._tool_end,
            "command.started": self._command_started,
            "command.stdout.delta": self._command_delta,
            "command.stderr.delta": self._command_delta,
            "command.completed": self._command_end,
            "command.failed": self._command_end,
            "artifact.created": self._artifact_created,
            "evidence.created": self._evidence_created,
            "permission.prompt.requested": self._prompt_requested,
            "permission.prompt.resolved": self._prompt_resolved,
            "model.usage.recorded": self._usage,
        }

    # --- public --------------------------------------------------------------------------

    @property
    def revision(self) -> int:
        return self._revision

    def hydrate(self, events: EventStore, session_id: str | None = None) -> int:
        """Fold the session's events stored after ``last_seq``, read ``PAGE`` rows at a time.

        Called on an empty store it rebuilds everything; after ``restore`` it folds the tail;
        called again it catches up (the console re-hydrates after the bus marked it lagging,
        IMPL-AGENT-6): events already applied live are recognised by id and skipped. Returns
        the events read.
        """
        sql = "SELECT * FROM events WHERE seq > ?"
        params: tuple[Any, ...] = (self.last_seq,)
        if session_id is not None:
            sql, params = sql + " AND session_id = ?", (self.last_seq, session_id)
        cursor = events.db.conn.execute(sql + " ORDER BY seq", params)
        names = [d[0] for d in cursor.description]
        count = 0
        while rows := cursor.fetchmany(PAGE):
            for values in rows:
                record = dict(zip(names, values, strict=True))
                event = record_to_event(record)
                if str(event.id) not in self._live_ids:
                    self._apply(event)
                self._note_read(str(event.id))
                self.last_seq = max(self.last_seq, int(record["seq"]))
                count += 1
        self.rows_read += count
        self._live_ids.clear()  # every event applied live so far was stored by now, and read
        return count

    def restore(self, state: ViewState, revision: int, last_seq: int) -> None:
        """Start from a stored view: ``state`` after the events up to ``last_seq``, at
        ``revision`` (``air.projection.opening``); ``hydrate`` then folds what came after."""
        self._state = state
        self._revision = revision
        self.last_seq = last_seq
        self._cached = None

    @property
    def artifact_root(self) -> str | None:
        """The artifact directory diffs and drafts are read in (resolved), or None."""
        return None if self._root is None else str(self._root)

    @property
    def view(self) -> ViewState:
        """The records as they are (for the view's snapshot; never to be changed)."""
        return self._state

    def _note_read(self, event_id: str) -> None:
        self._read_ids[event_id] = None
        if len(self._read_ids) > RECENT_READ:
            self._read_ids.popitem(last=False)

    def hydrate_events(self, events: Iterable[RuntimeEvent]) -> int:
        """Apply already-loaded events in order (a replay, or a test). Returns the count."""
        count = 0
        for event in events:
            self.apply(event)
            count += 1
        return count

    def apply(self, event: RuntimeEvent) -> bool:
        """Fold one live event in (once: an event a hydration read, or one applied already,
        is skipped). Returns True when the projection changed (then subscribers run)."""
        if event.type not in EPHEMERAL_TYPES:
            key = str(event.id)
            if key in self._live_ids or key in self._read_ids:
                return False  # already applied (a re-hydrate overlapping the live feed)
            self._live_ids.add(key)
        return self._apply(event)

    def _apply(self, event: RuntimeEvent) -> bool:
        """Fold one event in. Returns True when the projection changed (then subscribers run).

        A durable event's payload is read as its registered model dumps it (defaults filled
        in, exactly as the store keeps it), so a live event and its stored copy fold alike;
        a payload that does not validate is ignored (logged), never raised into the console.
        """
        p = event.payload
        state = self._state
        if event.type not in EPHEMERAL_TYPES:
            model = payload_model(event.type, event.version)
            if model is not None:
                try:
                    x = model.model_validate(p)
                    state.fold.feed(event, x)
                except (ValidationError, AirException) as exc:
                    log.warning("ignoring %s %s: %s", event.type, event.id, exc)
                    return False
                p = x.model_dump(mode="json")
        changed = False
        handler = self._handlers.get(event.type)
        if handler is not None:
            changed = handler(event, p)
        elif event.type == "task.progress":
            task_id = str(p.get("task_id"))
            changed = state.tasks.progress(task_id, str(p.get("message") or ""), state.fold.state)
        elif event.type.startswith("task.") or event.type.startswith("context.compaction."):
            state.tasks.after_fold(event, state.fold.state)
            changed = payload_model(event.type, event.version) is not None
            if event.type == "task.blocked":
                self._blocked(event, p)
            elif event.type == "task.started":
                state.blockers.pop(str(p.get("task_id")), None)
        elif event.type == "workspace.merge.completed":
            changed = state.tasks.merged(p, state.fold.state)
        elif event.type.startswith("main_agent."):
            changed = self._main_agent(p)
        if not changed:
            return False
        self._state.last_event_at = event.timestamp
        self._revision += 1
        self._cached = None
        for sub in list(self._subs):
            try:
                sub.handler(self._revision)
            except Exception:
                log.exception("projection subscriber failed")
        return True

    def snapshot(self) -> ProjectionSnapshot:
        """The current projection (built once per revision)."""
        if self._cached is None:
            self._cached = build_snapshot(self._state, self._revision)
        return self._cached

    def subscribe(self, handler: Callable[[int], None]) -> StoreSubscription:
        """Call ``handler(revision)`` after every change, synchronously; keep it cheap."""
        sub = StoreSubscription(self, handler)
        self._subs.append(sub)
        return sub

    async def feed(self, receive: trio.MemoryReceiveChannel[RuntimeEvent]) -> None:
        """Apply every event arriving on ``receive`` until it closes (the bus pump)."""
        async with receive:
            async for event in receive:
                self.apply(event)

    def _drop(self, sub: StoreSubscription) -> None:
        if sub in self._subs:
            self._subs.remove(sub)

    # --- handlers ------------------------------------------------------------------------

    def _session_created(self, event: RuntimeEvent, p: dict[str, Any]) -> bool:
        self._state.session = SessionProjection(
            session_id=str(p.get("session_id") or event.session_id),
            status="active",
            title=p.get("title"),
            mode=p.get("mode"),
            model_provider_id=p.get("model_provider_id"),
            model_id=p.get("model_id"),
            created_at=event.timestamp,
        )
        return True

    def _session_model(self, event: RuntimeEvent, p: dict[str, Any]) -> bool:
        """``/model`` switched (issue 24 item 4): the HUD and ``/model`` name the new one."""
        session = self._state.session
        if session is None:
            return False
        self._state.session = session.model_copy(
            update={"model_provider_id": p.get("model_provider_id"), "model_id": p.get("model_id")}
        )
        return True

    def _session_status(self, event: RuntimeEvent, p: dict[str, Any]) -> bool:
        return self._state.session is not None  # the fold moved the status

    def _main_agent(self, p: dict[str, Any]) -> bool:
        state = p.get("to_state") or p.get("state")
        if not isinstance(state, str):
            return False
        self._state.main_state = state.upper()
        self._state.direct_mode = self._state.main_state == "DIRECT_MODE"
        return True

    def _user_message(self, event: RuntimeEvent, p: dict[str, Any]) -> bool:
        mid = str(p["message_id"])
        self._state.messages[mid] = MessageRecord(
            mid, "user", _text_of(p.get("content")), task_id=p.get("task_id"),
            timestamp=event.timestamp,
        )  # fmt: skip
        keep_newest(self._state.messages, self.window)
        return True

    def _assistant_started(self, event: RuntimeEvent, p: dict[str, Any]) -> bool:
        mid = str(p["message_id"])
        if mid in self._state.messages:
            return False
        self._state.messages[mid] = MessageRecord(
            mid, "assistant", status="streaming", task_id=p.get("task_id"),
            agent_id=p.get("agent_id"), timestamp=event.timestamp,
        )  # fmt: skip
        keep_newest(self._state.messages, self.window)
        return True

    def _assistant_delta(self, event: RuntimeEvent, p: dict[str, Any]) -> bool:
        msg = self._state.messages.get(str(p.get("message_id")))
        if msg is None or msg.status != "streaming":
            return False
        msg.text += str(p.get("text") or "")
        return True

    def _assistant_created(self, event: RuntimeEvent, p: dict[str, Any]) -> bool:
        mid = str(p["message_id"])
        msg = self._state.messages.get(mid)
        if msg is None:
            msg = self._state.messages[mid] = MessageRecord(
                mid, "assistant", timestamp=event.timestamp
            )
            keep_newest(self._state.messages, self.window)
        msg.text = _text_of(p.get("content"))
        msg.status = "complete"
        msg.task_id = p.get("task_id") or msg.task_id
        msg.agent_id = p.get("agent_id") or msg.agent_id
        return True

    def _assistant_failed(self, event: RuntimeEvent, p: dict[str, Any]) -> bool:
        mid = str(p["message_id"])
        msg = self._state.messages.get(mid)
        if msg is None:
            msg = self._state.messages[mid] = MessageRecord(
                mid, "assistant", timestamp=event.timestamp
            )
            keep_newest(self._state.messages, self.window)
        msg.status = "failed"
        msg.error = _error_text(p.get("error"))
        artifact = self._state.artifacts.get(str(p.get("failure_artifact_id")))
        if not msg.text and artifact is not None:
            # a reopened session: the deltas were ephemeral, the draft was kept (IMPL-FRAME-3)
            msg.text = self._read_artifact(artifact.path)[0]
        return True

    def _agent_started(self, event: RuntimeEvent, p: dict[str, Any]) -> bool:
        return True  # the fold holds the agent

    def _agent_heartbeat(self, event: RuntimeEvent, p: dict[str, Any]) -> bool:
        fold = self._state.fold.state
        agent = fold.agents.get(str(p.get("agent_id")))
        if agent is None:
            return False
        turn, tokens = int(p.get("turn") or 0), int(p.get("tokens") or 0)
        self._state.agent_live[agent.agent_id] = (turn, tokens, str(p.get("state") or ""))
        if agent.task_id is not None:
            self._state.tasks.live_usage(agent.task_id, turn, fold)
        return True

    def _usage(self, event: RuntimeEvent, p: dict[str, Any]) -> bool:
        self._state.usage.add(p)  # the HUD, /cost and the task rows read the ledger
        return True

    def _agent_end(self, event: RuntimeEvent, p: dict[str, Any]) -> bool:
        return True  # the fold moved the agent's status

    def _tool_started(self, event: RuntimeEvent, p: dict[str, Any]) -> bool:
        tid = str(p["tool_run_id"])
        self._state.tool_runs[tid] = {
            "tool_run_id": tid,
            "tool_name": str(p.get("tool_name")),
            "status": "running",
            "task_id": p.get("task_id"),
            "agent_id": p.get("agent_id"),
            "input_summary": _summarise_input(p.get("input")),
            "started_at": event.timestamp,
        }
        keep_newest(self._state.tool_runs, self.window)
        return True

    def _tool_progress(self, event: RuntimeEvent, p: dict[str, Any]) -> bool:
        if p.get("kind") not in ("stdout", "stderr") or not isinstance(p.get("data"), str):
            return False
        tool_run_id = str(p.get("tool_run_id"))
        commands = self._state.fold.state.command_runs
        for cmd in self._state.commands.values():
            fact = commands.get(cmd.command_run_id)
            if cmd.tool_run_id == tool_run_id and fact is not None and not fact.ended:
                self._append_tail(cmd, p["data"])
                return True
        return False

    def _tool_end(self, event: RuntimeEvent, p: dict[str, Any]) -> bool:
        run = self._state.tool_runs.get(str(p.get("tool_run_id")))
        if run is None:
            return False
        run["duration_ms"] = p.get("duration_ms")
        run["output_summary"] = p.get("output_summary") or p.get("reason")
        run["error"] = _error_text(p.get("error"))
        return True

    def _command_started(self, event: RuntimeEvent, p: dict[str, Any]) -> bool:
        cid = str(p["command_run_id"])
        self._state.commands[cid] = CommandRecord(
            cid, str(p.get("command")), task_id=p.get("task_id"),
            tool_run_id=p.get("tool_run_id"), cwd=p.get("cwd"),
        )  # fmt: skip
        keep_newest(self._state.commands, self.window)
        return True

    def _append_tail(self, cmd: CommandRecord, data: str) -> None:
        tail = cmd.tail + data
        if len(tail) > self._tail_limit:
            tail = tail[-self._tail_limit :]
            cmd.tail_truncated = True
        cmd.tail = tail

    def _command_delta(self, event: RuntimeEvent, p: dict[str, Any]) -> bool:
        cid = str(p.get("command_run_id"))
        cmd = self._state.commands.get(cid)
        fact = self._state.fold.state.command_runs.get(cid)
        if cmd is None or fact is None or fact.ended:
            return False
        self._append_tail(cmd, str(p.get("data") or ""))
        return True

    def _command_end(self, event: RuntimeEvent, p: dict[str, Any]) -> bool:
        cmd = self._state.commands.get(str(p.get("command_run_id")))
        if cmd is None:
            return False
        cmd.duration_ms = p.get("duration_ms")
        return True

    def _artifact_created(self, event: RuntimeEvent, p: dict[str, Any]) -> bool:
        aid = str(p["artifact_id"])
        art = ArtifactProjection(
            artifact_id=aid,
            type=str(p.get("type")),
            path=str(p.get("path")),
            task_id=p.get("task_id"),
            size_bytes=p.get("size_bytes"),
        )
        self._state.artifacts[aid] = art
        keep_newest(self._state.artifacts, self.window)
        if art.type == "diff":
            text, truncated = self._read_artifact(art.path)
            self._state.diffs[aid] = DiffProjection(
                artifact_id=aid, path=art.path, text=text, truncated=truncated, task_id=art.task_id
            )
            keep_newest(self._state.diffs, self._diff_window)
        return True

    def _read_artifact(self, path: str) -> tuple[str, bool]:
        """An artifact's text (a diff, a kept draft) when its real path is a regular file
        inside the artifact root."""
        if self._root is None:
            return "", False
        try:
            real = Path(path).resolve()
            if not real.is_relative_to(self._root) or not real.is_file():
                return "", False
            with real.open("rb") as fh:
                data = fh.read(DIFF_TEXT_LIMIT + 1)
        except OSError:
            return "", False
        return data[:DIFF_TEXT_LIMIT].decode("utf-8", "replace"), len(data) > DIFF_TEXT_LIMIT

    def _evidence_created(self, event: RuntimeEvent, p: dict[str, Any]) -> bool:
        eid = str(p["evidence_ref_id"])
        entity_type = str(p.get("entity_type"))
        entity_id = str(p.get("entity_id"))
        task_id = entity_id if entity_type == "task" else None
        if task_id is None and entity_type == "command_run":
            cmd = self._state.commands.get(entity_id)
            task_id = cmd.task_id if cmd else None
        if task_id is None and entity_type == "tool_run":
            task_id = self._state.tool_runs.get(entity_id, {}).get("task_id")
        self._state.evidence[eid] = EvidenceProjection(
            evidence_ref_id=eid, kind=str(p.get("kind")), ref=str(p.get("ref")),
            claim=str(p.get("claim")), entity_type=entity_type, entity_id=entity_id,
            task_id=task_id,
        )  # fmt: skip
        keep_newest(self._state.evidence, self.window)
        return True

    def _prompt_requested(self, event: RuntimeEvent, p: dict[str, Any]) -> bool:
        pid = str(p["prompt_id"])
        segments = [
            PermissionSegmentProjection(
                text=str(s.get("text", "")),
                risk_level=str(s.get("risk_level", "unknown")),
                category=s.get("category"),
            )
            for s in p.get("segments") or []
            if isinstance(s, dict)
        ]
        extra: dict[str, Any] = {}
        if isinstance(p.get("scopes"), list):
            extra["scopes"] = p["scopes"]
        self._state.prompts[pid] = PermissionPromptProjection(
            prompt_id=pid, tool_name=str(p.get("tool_name")), summary=str(p.get("summary")),
            risk_level=str(p.get("risk_level")), task_id=p.get("task_id"),
            agent_id=p.get("agent_id"), tool_run_id=p.get("tool_run_id"), segments=segments,
            requested_at=event.timestamp, **extra,
        )  # fmt: skip
        return True

    def _prompt_resolved(self, event: RuntimeEvent, p: dict[str, Any]) -> bool:
        return self._state.prompts.pop(str(p.get("prompt_id")), None) is not None

    def _blocked(self, event: RuntimeEvent, p: dict[str, Any]) -> None:
        task_id = str(p["task_id"])
        blocker = p.get("blocker") or {}
        self._state.blockers[task_id] = BlockerProjection(
            task_id=task_id,
            reason=str(blocker.get("reason") or p.get("reason") or "blocked"),
            needs=str(blocker.get("needs") or "other"),
            options=[str(o) for o in blocker.get("options") or []],
            timestamp=event.timestamp,
        )
