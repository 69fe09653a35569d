"""ArtifactStore / EvidenceStore on a real session, and the orphan-file recovery scan."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from air.artifacts.store import recover_orphan_artifacts
from air.contracts.artifact_records import ArtifactContext, ArtifactCreateInput
from air.contracts.error import AirException, ErrorKind
from air.contracts.evidence_records import EvidenceCreateInput
from air.session.manager import OpenSession, SessionManager
from air.session.project import ProjectStore


@pytest.fixture
def session(tmp_path: Path) -> OpenSession:
    project = ProjectStore().initialize(tmp_path)
    return SessionManager().open_session(project)


def test_create_writes_the_file_and_records_the_event(session: OpenSession) -> None:
    content = b"gcc: error: x.c: No such file\n"
    ctx = ArtifactContext(session_id=session.session_id, task_id="task_1", command_run_id="cr_1")
    ref = session.artifacts.create(
        ArtifactCreateInput(type="log", slug="Build Output!", extension=".log", content=content),
        ctx,
    )
    path = Path(ref.path)
    assert path.parent == Path(session.context.artifact_root)
    assert re.fullmatch(rf"\d{{8}}T\d{{12}}Z-{ref.artifact_id}-build-output\.log", path.name)
    assert ref.artifact_id.startswith("art_")
    assert ref.uri == (
        f"artifact://project/{session.project.project_id}/session/{session.session_id}/"
        f"{ref.artifact_id}"
    )
    assert path.read_bytes() == content
    assert ref.sha256 == hashlib.sha256(content).hexdigest()
    assert ref.size_bytes == len(content)
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".tmp-")]
    assert session.artifacts.get(ref.artifact_id) == ref
    assert session.artifacts.get_by_uri(ref.uri) == ref
    assert session.artifacts.list_by_entity("task", "task_1") == [ref]
    assert session.artifacts.list_by_entity("command_run", "cr_1") == [ref]
    events = session.events.query()
    assert events[-1].type == "artifact.created"
    assert events[-1].payload["command_run_id"] == "cr_1"
    read = session.artifacts.read(ref.artifact_id, max_bytes=4)
    assert (read.content, read.truncated) == (content[:4], True)
    assert session.artifacts.read(ref.artifact_id).content == content


def test_a_read_never_leaves_the_sessions_artifact_directory(
    session: OpenSession, tmp_path: Path
) -> None:
    """What a row or a file of ``.air/local`` names (a cloned repository may ship both) is read
    only as a regular file directly in the session's artifact directory: a row naming a file
    elsewhere, or an artifact file that is a link to one, is refused, the secret never read."""
    secret = tmp_path / "outside" / "id_rsa"
    secret.parent.mkdir()
    secret.write_bytes(b"PRIVATE KEY\n")
    ctx = ArtifactContext(session_id=session.session_id, task_id="task_1")
    planted = ArtifactCreateInput(type="log", slug="x", extension=".log", content=b"fine\n")
    linked, named = session.artifacts.create(planted, ctx), session.artifacts.create(planted, ctx)
    Path(linked.path).unlink()
    Path(linked.path).symlink_to(secret)  # a link under an artifact's own name
    with session.db.transaction() as conn:  # a row naming a file outside the directory
        conn.execute(
            "UPDATE artifacts SET path = ? WHERE artifact_id = ?", (str(secret), named.artifact_id)
        )
    for ref in (linked, named):
        with pytest.raises(AirException) as info:
            session.artifacts.read(ref.artifact_id)
        assert info.value.kind == ErrorKind.NOT_FOUND
        assert "PRIVATE" not in str(info.value.error)


def test_bad_artifact_input_is_refused(session: OpenSession) -> None:
    with pytest.raises(AirException) as info:
        session.artifacts.create(
            ArtifactCreateInput(type="log", slug="x", extension="/../../etc", content=b""),
            ArtifactContext(session_id=session.session_id),
        )
    assert info.value.kind is ErrorKind.VALIDATION_ERROR
    with pytest.raises(AirException) as info:
        session.artifacts.create(
            ArtifactCreateInput(type="log", slug="x", content=b""),
            ArtifactContext(session_id="ses_other"),
        )
    assert info.value.kind is ErrorKind.VALIDATION_ERROR
    with pytest.raises(AirException) as info:
        session.artifacts.read("art_missing")
    assert info.value.kind is ErrorKind.NOT_FOUND
    assert list(Path(session.context.artifact_root).iterdir()) == []


def test_recovery_registers_named_orphans_and_quarantines_the_rest(session: OpenSession) -> None:
    root = Path(session.context.artifact_root)
    kept = session.artifacts.create(
        ArtifactCreateInput(type="diff", slug="patch", content=b"+x\n"),
        ArtifactContext(session_id=session.session_id),
    )
    orphan = root / "20260101T000000000000Z-art_01ORPHAN0000000000000000000-report.txt"
    orphan.write_bytes(b"renamed but never recorded")
    stray = root / "notes.txt"
    stray.write_bytes(b"?")
    temp = root / ".tmp-art_01HALFWRITTEN"
    temp.write_bytes(b"half")
    secret = root.parent / "elsewhere.key"
    secret.write_bytes(b"PRIVATE")
    link = root / "20260101T000000000000Z-art_01LINKED00000000000000000000-key.txt"
    link.symlink_to(secret)  # named like an artifact: still never registered nor read
    report = recover_orphan_artifacts(session.artifacts)
    assert report.registered == ["art_01ORPHAN0000000000000000000"]
    assert report.removed_temp == [str(temp)]
    assert len(report.quarantined) == 2
    assert Path(report.quarantined[0]).is_symlink()
    assert Path(report.quarantined[1]).read_bytes() == b"?"
    registered = session.artifacts.get("art_01ORPHAN0000000000000000000")
    assert registered is not None
    assert registered.sha256 == hashlib.sha256(b"renamed but never recorded").hexdigest()
    assert session.artifacts.get(kept.artifact_id) == kept
    assert sorted(p.name for p in root.iterdir()) == sorted([orphan.name, Path(kept.path).name])
    assert recover_orphan_artifacts(session.artifacts).registered == []  # idempotent


def test_evidence_is_recorded_and_listed(session: OpenSession) -> None:
    ref = session.evidence.create(
        EvidenceCreateInput(
            kind="test_output",
            ref="artifact://x",
            claim="12 tests pass",
            location_json={"lines": [1, 12]},
            entity_type="task",
            entity_id="task_9",
        )
    )
    assert ref.evidence_ref_id.startswith("evd_")
    assert session.evidence.list_for_entity("task", "task_9") == [ref]
    assert session.evidence.list_for_entity("task", "task_other") == []
    # evidence for a task that does not exist is an FK-off orphan (invariant 8)
    report = session.store.referential_check()
    assert [(v.invariant, v.missing_id) for v in report.violations] == [(8, "task_9")]
