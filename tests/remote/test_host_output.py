"""What a host prints to its own commands is bounded (IMPL-REMOTE-4; ``air.remote.bounded``),
over this machine's sshd as the remote user (tests/remote/conftest.py).

The host's ``python`` here is a wrapper that runs air's commands as they are, but one of them
(``air.remote.repo known``, ``result`` or ``receive``, ``air.remote.guard sweep``) replaced.
Before, the parent read a host command's whole stdout and stderr into memory until it ended or
60-600 s passed: a host printing without end grew the parent by what ssh carried (100+ MB/s
here), and ``receive`` naming its worktree in bytes that are no UTF-8 ended ``air run`` with a
UnicodeDecodeError."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from air.contracts.error import AirException
from air.remote import sync
from air.remote.bounded import STDERR_MAX, STDOUT_MAX
from air.remote.hosts import HostConfig
from air.remote.ssh import sweep_remote
from air.remote.sync import fetch_result, gc_remote, push_base
from air.workspace.gitsafe import locate_git
from tests.gitrepo import git, init_repo
from tests.remote.conftest import remote_uid

pytestmark = pytest.mark.slow

WRAPPER = """\
#!/bin/sh
# the host's own python; one of air's host commands replaced
if [ "$1 $2 $3 $4" = "-P -m {command}" ]; then
  {replacement}
fi
exec {python} "$@"
"""

ENDLESS = "exec yes 'a line no host command of air prints'"


def _host(remote_host: HostConfig, command: str, replacement: str) -> Iterator[HostConfig]:
    where = Path(remote_host.workdir, f"hostile-{os.urandom(4).hex()}")
    where.mkdir(parents=True)
    wrapper = where / "python"
    wrapper.write_text(
        WRAPPER.format(command=command, replacement=replacement, python=remote_host.python)
    )
    wrapper.chmod(stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    for path in (where, wrapper):
        os.chown(path, remote_uid(), remote_uid())
    yield remote_host.model_copy(update={"python": str(wrapper)})
    wrapper.unlink()
    where.rmdir()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = tmp_path / "proj"
    repo.mkdir()
    (repo / "a.txt").write_text("one\n")
    init_repo(repo, message="first")
    return repo


@pytest.mark.parametrize(
    ("stream", "bound"), [("stdout", STDOUT_MAX), ("stderr", STDERR_MAX)], ids=["out", "err"]
)
async def test_a_host_command_printing_without_end_is_ended_at_its_bound(
    remote_host: HostConfig, project: Path, stream: str, bound: int
) -> None:
    endless = ENDLESS if stream == "stdout" else ENDLESS + " >&2"
    for host in _host(remote_host, "air.remote.repo known", endless):
        location = locate_git(str(project), project_root=str(project))
        with trio.fail_after(50), pytest.raises(AirException) as info:  # the call's own 60 s
            await push_base(host, location, "run_endless_" + os.urandom(4).hex())
        assert info.value.kind == "workspace_error"
        assert "cannot reach the object cache" in info.value.error.message
        assert f"more than {bound:,} bytes on {stream}" in (info.value.error.detail or "")


async def test_a_result_over_its_bound_is_refused_and_nothing_kept(
    remote_host: HostConfig, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sync, "RESULT_MAX", 8 << 20)  # the real one is 4 GiB
    location = locate_git(str(project), project_root=str(project))
    remote = await push_base(remote_host, location, "run_big_" + os.urandom(4).hex())
    try:
        for host in _host(remote_host, "air.remote.repo result", ENDLESS):
            with trio.fail_after(50), pytest.raises(AirException) as info:
                await fetch_result(location, remote._replace(host=host))
        assert info.value.kind == "workspace_error"
        assert f"more than {8 << 20:,} bytes on stdout" in (info.value.error.detail or "")
        assert git(project, "for-each-ref", "refs/air/remote/") == ""
    finally:
        assert await gc_remote(remote)


@pytest.mark.parametrize(
    "named", ["printf '\\377\\376\\n'", "echo relative/path", "true"], ids=["latin1", "rel", "none"]
)
async def test_a_worktree_the_host_cannot_name_is_one_error(
    remote_host: HostConfig, project: Path, named: str
) -> None:
    for host in _host(remote_host, "air.remote.repo receive", f"cat > /dev/null; {named}; exit 0"):
        location = locate_git(str(project), project_root=str(project))
        with pytest.raises(AirException) as info:
            await push_base(host, location, "run_named_" + os.urandom(4).hex())
        assert info.value.kind == "workspace_error"
        assert "named no worktree for the run" in info.value.error.message


@pytest.mark.parametrize(
    "report",
    [
        '{"signalled": ["x"]}',
        '{"signalled": 5}',
        '{"signalled": {"1": 2}}',
        '{"signalled": [1e400]}',
    ],
    ids=["str", "int", "dict", "inf"],
)
async def test_a_sweep_report_unlike_the_guards_is_no_report(
    remote_host: HostConfig, report: str
) -> None:
    """Before, ``int()`` of each entry ran outside the parse: a ValueError or TypeError out of
    the session's close or the recovery sweep."""
    for host in _host(remote_host, "air.remote.guard sweep", f"echo '{report}'; exit 0"):
        assert await sweep_remote(host, ["no-such-marker"]) is None
    assert await sweep_remote(remote_host, ["no-such-marker"]) == []


TWO_HEADS = (
    'repo="$5/runs/$6/repo.git"; {python} -P -m air.remote.repo result "$5" "$6" >/dev/null '
    '&& exec git -C "$repo" bundle create -q - refs/air/result refs/air/base'
)


async def test_a_result_bundle_of_more_than_one_head_is_refused(
    remote_host: HostConfig, project: Path
) -> None:
    """air's host makes one head (``refs/air/result``); before, the parent took the first of
    any number (every ref's line read into memory, then unbundled)."""
    location = locate_git(str(project), project_root=str(project))
    remote = await push_base(remote_host, location, "run_heads_" + os.urandom(4).hex())
    try:
        replacement = TWO_HEADS.format(python=remote_host.python)
        for host in _host(remote_host, "air.remote.repo result", replacement):
            with pytest.raises(AirException) as info:
                await fetch_result(location, remote._replace(host=host))
        assert info.value.kind == "workspace_error"
        assert "is not one commit" in info.value.error.message
        assert git(project, "for-each-ref", "refs/air/remote/") == ""
        assert (await fetch_result(location, remote)) == git(  # air's own host: taken
            project, "rev-parse", f"refs/air/remote/{remote.run}"
        )
    finally:
        assert await gc_remote(remote)


DOT_GIT_TREE = (
    'repo="$5/runs/$6/repo.git"; {python} -P -m air.remote.repo result "$5" "$6" >/dev/null '
    '&& cd "$repo" && blob=$(echo planted | git hash-object -w --stdin) '
    '&& tree=$(printf "100644 blob $blob\\t.git\\n" | git mktree) '
    "&& commit=$(git -c user.name=h -c user.email=h@h commit-tree $tree -p refs/air/base -m h) "
    "&& git update-ref refs/air/result $commit "
    "&& exec git bundle create -q - refs/air/base..refs/air/result"
)


async def test_a_result_holding_an_object_fsck_refuses_never_enters_the_repository(
    remote_host: HostConfig, project: Path
) -> None:
    """A host's result of one head, descending from the base, whose tree names ``.git``:
    git 2.39's ``bundle unbundle`` checks no object, and the tree entered the project's
    repository. Now the pack is indexed with ``--strict``: refused, no object of it kept."""
    location = locate_git(str(project), project_root=str(project))
    remote = await push_base(remote_host, location, "run_fsck_" + os.urandom(4).hex())
    try:
        for host in _host(
            remote_host, "air.remote.repo result", DOT_GIT_TREE.format(python=remote_host.python)
        ):
            with pytest.raises(AirException) as info:
                await fetch_result(location, remote._replace(host=host))
        assert info.value.kind == "workspace_error"
        assert "holds an object git refuses" in info.value.error.message
        assert "hasDotgit" in (info.value.error.detail or "")
        planted = hashlib.sha1(b"blob 8\0planted\n").hexdigest()
        kept = await trio.run_process(
            ["git", "-C", str(project), "cat-file", "-e", planted], check=False
        )
        assert kept.returncode != 0  # not one object of the pack is in the repository
        assert git(project, "for-each-ref", "refs/air/remote/") == ""
        assert (await fetch_result(location, remote)) == git(  # air's own host: taken
            project, "rev-parse", f"refs/air/remote/{remote.run}"
        )
    finally:
        assert await gc_remote(remote)
