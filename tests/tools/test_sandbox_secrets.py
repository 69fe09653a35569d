"""The sandbox sees no secrets (issue 9 item 4), as root and as an unprivileged user.

The filesystem is an allowlist: credentials in air's HOME, ``/etc/shadow``, ``/root``, ``/var``
and ``/home`` do not exist inside, whatever program reads them; the environment is an
allowlist: planted keys and tokens never arrive. Real toolchains still work: g++ builds and
runs a program, cmake configures with ninja and builds.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gitrepo import git
from tests.tools.conftest import Env
from tests.tools.sandbox_probe import IDENTITIES, Sandboxed, chown_tree

PLANTED_ENV = {
    "FOO_API_KEY": "AIRSBXENVFOOKEY",
    "ANTHROPIC_API_KEY": "sk-ant-AIRSBXENVANTHROPIC0000",
    "GH_TOKEN": "AIRSBXENVGHTOKEN",
    "GITHUB_TOKEN": "AIRSBXENVGITHUB",
    "GITHUB_ACTOR": "AIRSBXENVGITHUBACTOR",
    "AWS_SECRET_ACCESS_KEY": "AIRSBXENVAWSSECRET",
    "AWS_PROFILE": "AIRSBXENVAWSPROFILE",
    "SSH_AUTH_SOCK": "/tmp/AIRSBXENVSSHSOCK",
    "DATABASE_URL": "postgres://u:AIRSBXENVDBPASS@db/x",
    "NPM_CONFIG_USERCONFIG": "/root/AIRSBXENVNPMRC",
}


@pytest.fixture(params=IDENTITIES)
def box(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Sandboxed]:
    made = Sandboxed(tmp_path, request.param, PLANTED_ENV)
    yield made
    made.close()


def test_credentials_are_not_there_whatever_reads_them(box: Sandboxed) -> None:
    home = box.home
    readers = [
        "cat ~/.ssh/id_rsa",
        f"cat {home}/.ssh/id_rsa",
        f"base64 {home}/.aws/credentials",
        f"tar cf - {home}/.netrc",
        f"cp {home}/.ssh/id_rsa ./stolen",
        f"python3 -c 'print(open(\"{home}/.netrc\").read())'",
        f"cat {home}/.bashrc",
        "cat /etc/shadow",
        "cat /etc/gshadow",
        "ls /etc/ssh /etc/ssl/private",
        "ls /root",
        "ls /var",
        "ls /srv /opt /mnt /media",
        f"ls {os.path.expanduser('~')}",
    ]
    for command in readers:
        out = box.run(command)
        text = f"{out['stdout']}{out['stderr']}"
        assert out["exit_code"] != 0, (command, out)
        assert "No such file or directory" in text, (command, out)
        assert "AIRSBXSECRET" not in text, (command, out)
    assert not (box.workspace / "stolen").exists()
    assert str(box.run("ls -A /home")["stdout"]).split() == ["air"]
    assert str(box.run("ls -A ~")["stdout"]) == ""  # a fresh, empty HOME
    top = set(str(box.run("ls -A /")["stdout"]).split())
    assert not top & {"root", "var", "srv", "opt", "mnt", "media", "boot", "sys", "run"}


def test_a_git_file_a_task_writes_never_mounts_another_repository(box: Sandboxed) -> None:
    """A task in a copy (no repository of its own) writes a ``.git`` naming the worktree record
    of another repository on the machine: its next command saw that repository's whole git
    directory (history, objects), bound read-only because the record was in git's shape. Now
    the record must name this workspace's ``.git`` back (``air.tools.sandbox``)."""
    other, copy = box.base / "other", box.base / "copy"
    git(box.base, "init", "-q", "other")
    (other / "secret.txt").write_text("AIRSBXSECRETGIT\n")
    git(other, "add", "secret.txt")
    git(other, "-c", "user.name=T", "-c", "user.email=t@e", "commit", "-qm", "s")
    git(other, "worktree", "add", "-q", "--detach", str(box.base / "other-wt"))
    copy.mkdir()
    if box.unprivileged:
        chown_tree(box.base)
    record = other / ".git" / "worktrees" / "other-wt"
    planted = box.run(f"printf 'gitdir: {record}\\n' > .git && echo planted", copy)
    assert planted["stdout"] == "planted\n", planted
    out = box.run(f"git --git-dir={other / '.git'} show HEAD:secret.txt; ls {other}/.git", copy)
    text = f"{out['stdout']}{out['stderr']}"
    assert "AIRSBXSECRET" not in text, out
    assert "No such file or directory" in text, out


def test_a_hidden_git_file_mounts_no_main_git_dir(box: Sandboxed) -> None:
    """A task denied paths runs its commands with its ``.git`` hidden (its objects hold those
    paths): in a linked worktree, the main repository's git dir is then not bound either, so
    neither git in the worktree nor git pointed at the main one by its path reads them."""
    (box.workspace / "secrets").mkdir()
    (box.workspace / "secrets" / "plan.txt").write_text("AIRSBXSECRETDENIED\n")
    safe = ("-c", "safe.directory=*")  # the workspace is nobody's in the unprivileged run
    git(box.workspace, *safe, "add", "secrets")
    git(box.workspace, *safe, "-c", "user.name=T", "-c", "user.email=t@e", "commit", "-qm", "s")
    tree = box.base / "wt"
    git(box.workspace, *safe, "worktree", "add", "-q", "--detach", str(tree))
    if box.unprivileged:
        chown_tree(box.base)
    main = box.workspace / ".git"
    command = f"git log -p 2>&1; git --git-dir={main} log -p 2>&1; ls {main} 2>&1"
    seen = box.run(command, tree)
    assert "AIRSBXSECRETDENIED" in str(seen["stdout"]), seen  # bound: git works in a worktree
    out = box.run(command, tree, hide=(".git",))
    text = f"{out['stdout']}{out['stderr']}"
    assert "AIRSBXSECRET" not in text, out
    assert "No such file or directory" in text, out


def test_only_allowlisted_etc_entries_exist(box: Sandboxed) -> None:
    out = box.run("ls -A /etc")
    assert out["exit_code"] == 0
    names = set(str(out["stdout"]).split())
    assert {"passwd", "group", "ld.so.cache", "alternatives", "hosts"} <= names
    assert not names & {"shadow", "gshadow", "ssh", "sudoers", "gitconfig", "pip.conf", "npmrc"}
    passwd = box.run("cat /etc/passwd")
    assert len(str(passwd["stdout"]).splitlines()) == 3  # generated: root, air, nobody
    whoami = box.run("whoami; echo $USER")
    assert str(whoami["stdout"]).split() == ["air", "air"]


def test_planted_keys_and_tokens_never_reach_the_environment(box: Sandboxed) -> None:
    out = box.run("env; cat /proc/self/environ | tr '\\0' '\\n'")
    assert out["exit_code"] == 0
    text = str(out["stdout"])
    for name, value in PLANTED_ENV.items():
        assert f"{name}=" not in text, name
        assert value not in text, name
    names = {line.split("=", 1)[0] for line in text.splitlines() if "=" in line}
    assert names <= {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "TMPDIR",
        "LANG",
        "LANGUAGE",
        "LC_ALL",
        "LC_CTYPE",
        "LC_COLLATE",
        "LC_MESSAGES",
        "LC_NUMERIC",
        "LC_TIME",
        "LC_MONETARY",
        "TERM",
        "TZ",
        "NO_COLOR",
        "SOURCE_DATE_EPOCH",
        "CC",
        "CXX",
        "CFLAGS",
        "CXXFLAGS",
        "CPPFLAGS",
        "LDFLAGS",
        "CMAKE_GENERATOR",
        "PWD",
        "SHLVL",
        "_",
    }, names


CMAKE_PROJECT = """cmake_minimum_required(VERSION 3.16)
project(hello CXX)
add_executable(hello main.cpp)
"""
MAIN_CPP = '#include <iostream>\nint main() { std::cout << "built " << 6 * 7 << "\\n"; }\n'


def test_cpp_and_python_toolchains_still_work(box: Sandboxed) -> None:
    (box.workspace / "main.cpp").write_text(MAIN_CPP)
    (box.workspace / "CMakeLists.txt").write_text(CMAKE_PROJECT)
    if box.unprivileged:
        for name in ("main.cpp", "CMakeLists.txt"):
            os.chown(box.workspace / name, 65534, 65534)
    gxx = box.run("g++ -O0 -o hello main.cpp && ./hello")
    assert gxx["exit_code"] == 0, gxx
    assert str(gxx["stdout"]) == "built 42\n"
    cmake = box.run(
        "cmake -S . -B build -G Ninja >/dev/null && ninja -C build >/dev/null && build/hello"
    )
    assert cmake["exit_code"] == 0, cmake
    assert str(cmake["stdout"]) == "built 42\n"
    py = box.run("python3 -c 'import ssl, sqlite3, json; print(ssl.OPENSSL_VERSION[:7])'")
    assert py["exit_code"] == 0, py
    assert str(py["stdout"]).startswith("OpenSSL")


async def test_shell_run_gives_commands_the_allowlist_only(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert shutil.which("bwrap") is not None
    for name, value in PLANTED_ENV.items():
        monkeypatch.setenv(name, value)
    env.engine.headless_allow_ask = True
    res = await env.registry.call("shell.run", {"command": "env"}, env.ctx(headless=True))
    assert res.status == "ok", res.error
    assert isinstance(res.output, dict)
    text = str(res.output["stdout"])
    assert "HOME=/home/air" in text
    for name, value in PLANTED_ENV.items():
        assert name not in text
        assert value not in text
