"""The console's view of a session stored with its event position: a reopen folds only the tail.

Owns the codec of a ``ViewState`` with its revision (``encode_view`` / ``decode_view``: plain
JSON of the windowed records, IMPL-READ-2, and of the part of the fold a screen reads
(``shown_fold``) through the fold's own codec ``air.events.fold_snapshot.encode_state``; nothing
is imported or called by name from the stored text), ``load_view`` / ``save_view`` (one
``fold_snapshots`` row per session, kind ``console_view:<session id>``,
``air.store.read_model``), ``open_projection`` (the console's open: the stored view, then the
events after its ``seq`` read a page at a time; a new view is stored when that tail was long),
``ViewKeeper`` (the view stored again as the session grows, IMPL-READ-7) and ``check_view``
(the stored view + tail against a fold of the whole log: a difference is a
defect, never silently kept). A stored view is a cache made from durable events only (never
from live ones): deleting it changes nothing but the time the next open takes.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from typing import Any, NamedTuple

from immutables import Map

from air.contracts.ids import utc_now_iso
from air.contracts.ui import (
    ArtifactProjection,
    BlockerProjection,
    DiffProjection,
    EvidenceProjection,
    PermissionPromptProjection,
    SessionProjection,
)
from air.events.fold import FoldCursor
from air.events.fold_snapshot import SNAPSHOT_EVERY, decode_state, encode_state
from air.events.fold_state import SessionState
from air.events.store import EventStore
from air.events.transitions import TOOL_FROM
from air.projection.records import WINDOW, CommandRecord, MessageRecord, ViewState
from air.projection.store import ProjectionStore
from air.store.read_model import load_snapshot, save_snapshot, session_last_seq

__all__ = [
    "CODEC",
    "KIND",
    "DecodedView",
    "StoredView",
    "ViewKeeper",
    "check_view",
    "decode_view",
    "encode_view",
    "load_view",
    "open_projection",
    "save_view",
    "shown_fold",
]

KIND = "console_view"
CODEC = 2
"""The codec's version: a view written by another is ignored (the log is folded whole).
2: the fold's part is ``air.events.fold_snapshot`` codec 5 (IMPL-RSS-1)."""


class StoredView(NamedTuple):
    """A view read back: the records, the store's revision then, the ``seq`` of its last event."""

    state: ViewState
    revision: int
    seq: int


def shown_fold(state: ViewState) -> SessionState:
    """The part of ``state``'s fold the console reads, and all a later event needs: every task,
    agent, workspace and dependency; the tool and command runs still running or in the window;
    no attempt's evidence (``agent_events``: the scheduler's, never shown). An ended run out of
    the window is never shown again, and every event about it the fold refuses either way."""
    fold = state.fold.state
    tools = Map(
        (k, v) for k, v in fold.tool_runs.items() if v.status in TOOL_FROM or k in state.tool_runs
    )
    commands = Map(
        (k, v) for k, v in fold.command_runs.items() if not v.ended or k in state.commands
    )
    return fold._replace(tool_runs=tools, command_runs=commands, agent_events=Map())


def encode_view(state: ViewState, revision: int, root: str | None, window: int) -> str:
    """``state`` at ``revision`` as text; ``root`` is the artifact root its diffs were read in
    and ``window`` the store's (``decode_view`` gives equal records back)."""
    body: dict[str, Any] = {
        "revision": revision,
        "root": root,
        "window": window,
        "session": state.session.model_dump(mode="json") if state.session else None,
        "main_state": state.main_state,
        "direct_mode": state.direct_mode,
        "messages": [asdict(m) for m in state.messages.values()],
        "agent_live": [[k, list(v)] for k, v in state.agent_live.items()],
        "tool_runs": list(state.tool_runs.values()),
        "commands": [asdict(c) for c in state.commands.values()],
        "artifacts": [a.model_dump(mode="json") for a in state.artifacts.values()],
        "diffs": [d.model_dump(mode="json") for d in state.diffs.values()],
        "evidence": [e.model_dump(mode="json") for e in state.evidence.values()],
        "prompts": [p.model_dump(mode="json") for p in state.prompts.values()],
        "blockers": [b.model_dump(mode="json") for b in state.blockers.values()],
        "tasks": state.tasks.dump(),
        "last_event_at": state.last_event_at,
        "fold": encode_state(shown_fold(state)),
    }
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


class DecodedView(NamedTuple):
    """What ``encode_view`` wrote."""

    state: ViewState
    revision: int
    root: str | None
    window: int


def decode_view(body: str) -> DecodedView:
    """The records, revision, artifact root and window ``encode_view`` wrote.

    Raises:
        ValueError: the text is not a view of this codec.
    """
    try:
        d = json.loads(body)
        state = ViewState(
            session=SessionProjection.model_validate(d["session"]) if d["session"] else None,
            main_state=str(d["main_state"]),
            direct_mode=bool(d["direct_mode"]),
            messages={m["message_id"]: MessageRecord(**m) for m in d["messages"]},
            agent_live={k: (int(v[0]), int(v[1]), str(v[2])) for k, v in d["agent_live"]},
            tool_runs={str(r["tool_run_id"]): dict(r) for r in d["tool_runs"]},
            commands={c["command_run_id"]: CommandRecord(**c) for c in d["commands"]},
            artifacts={
                a["artifact_id"]: ArtifactProjection.model_validate(a) for a in d["artifacts"]
            },
            diffs={x["artifact_id"]: DiffProjection.model_validate(x) for x in d["diffs"]},
            evidence={
                e["evidence_ref_id"]: EvidenceProjection.model_validate(e) for e in d["evidence"]
            },
            prompts={
                p["prompt_id"]: PermissionPromptProjection.model_validate(p) for p in d["prompts"]
            },
            blockers={b["task_id"]: BlockerProjection.model_validate(b) for b in d["blockers"]},
            fold=FoldCursor(decode_state(d["fold"])),
            last_event_at=d["last_event_at"],
        )
        state.tasks.load(d["tasks"])
        return DecodedView(state, int(d["revision"]), d["root"], int(d["window"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"unreadable console view: {exc}") from exc


def _kind(session_id: str) -> str:
    return f"{KIND}:{session_id}"


def load_view(events: EventStore, session_id: str, store: ProjectionStore) -> StoredView | None:
    """The stored view of ``session_id`` when ``store`` can start from it: this codec, read in
    the same artifact root with the same window, and not past the end of the log; else None
    (the log is folded whole)."""
    stored = load_snapshot(events.db, _kind(session_id))
    if stored is None or stored.codec != CODEC:
        return None
    if stored.event_seq > session_last_seq(events.db, session_id):
        return None  # the log was rebuilt shorter: the view is of another log
    try:
        view = decode_view(stored.body)
    except ValueError:
        return None  # a damaged view is a cache miss; `check_view` reports it
    if (view.root, view.window) != (store.artifact_root, store.window):
        return None
    return StoredView(view.state, view.revision, stored.event_seq)


def save_view(events: EventStore, session_id: str, store: ProjectionStore, now: str) -> None:
    """Store ``store``'s view at its ``last_seq`` as the session's view (its own transaction).
    Only for a store fed from the log alone (``open_projection``), never from live events."""
    body = encode_view(store.view, store.revision, store.artifact_root, store.window)
    save_snapshot(events.db, _kind(session_id), store.last_seq, CODEC, body, now)


def open_projection(
    events: EventStore,
    session_id: str,
    *,
    artifact_root: str | os.PathLike[str] | None = None,
    save_after: int = SNAPSHOT_EVERY,
    window: int = WINDOW,
) -> ProjectionStore:
    """The console's ProjectionStore of a session: its stored view, then the events stored
    after it (a page at a time); when that tail held ``save_after`` events or more, the new
    view is stored for the next open.

    Args:
        events: the session database's EventStore.
        session_id: the session.
        artifact_root: the session's artifact directory (``ProjectionStore``'s).
        save_after: how long a tail makes the view worth storing again.
        window: the store's window (``ProjectionStore``).
    """
    store = ProjectionStore(artifact_root=artifact_root, window=window)
    stored = load_view(events, session_id, store)
    if stored is not None:
        store.restore(stored.state, stored.revision, stored.seq)
    tail = store.hydrate(events, session_id)
    if tail >= save_after and store.last_seq > 0:
        save_view(events, session_id, store, utc_now_iso())
    return store


class ViewKeeper:
    """The console's view stored as a session grows (IMPL-READ-7): each call folds the events
    stored since the last (the first starts from the stored view, ``open_projection``) and
    stores the view at its ``seq``, so any reopen is a view and a short tail, however long the
    session ran headless. The runtime calls it with each fold snapshot (``SessionLedger``'s
    ``on_snapshot``). It keeps one windowed store and reads the log only, never live events.

    Args:
        events: the session database's EventStore.
        session_id: the session.
        artifact_root: the session's artifact directory, as the console opens it.
    """

    def __init__(
        self,
        events: EventStore,
        session_id: str,
        artifact_root: str | os.PathLike[str] | None = None,
        *,
        window: int = WINDOW,
    ) -> None:
        self.events = events
        self.session_id = session_id
        self.artifact_root = artifact_root
        self.window = window
        self._store: ProjectionStore | None = None

    def __call__(self) -> None:
        if self._store is None:
            self._store = open_projection(
                self.events,
                self.session_id,
                artifact_root=self.artifact_root,
                save_after=1,
                window=self.window,
            )
        elif self._store.hydrate(self.events, self.session_id) > 0:
            save_view(self.events, self.session_id, self._store, utc_now_iso())


def check_view(events: EventStore, session_id: str) -> str | None:
    """None when the session's stored view (if any) plus the events after it give exactly the
    projection a fold of the whole log gives; else what differs, in one sentence."""
    stored = load_snapshot(events.db, _kind(session_id))
    if stored is None or stored.codec != CODEC:
        return None
    try:
        view = decode_view(stored.body)
    except ValueError as exc:
        return f"the console view at event {stored.event_seq} cannot be read ({exc})"
    if stored.event_seq > session_last_seq(events.db, session_id):
        return f"the console view claims event {stored.event_seq}, past the end of the log"
    resumed = ProjectionStore(artifact_root=view.root, window=view.window)
    resumed.restore(view.state, view.revision, stored.event_seq)
    resumed.hydrate(events, session_id)
    full = ProjectionStore(artifact_root=view.root, window=view.window)
    full.hydrate(events, session_id)
    a, b = resumed.snapshot(), full.snapshot()
    if a == b:
        return None
    fields = [f for f in type(a).model_fields if getattr(a, f) != getattr(b, f)]
    return (
        f"the console view at event {stored.event_seq} differs from a fold of the whole log "
        f"in {', '.join(fields)}"
    )
