"""Branch by branch, what CommandRiskAnalyzer and PathClassifier decide (issue #9 item 14).

The sampled mutation run of ``air/security/`` (docs/mutation.md) left these branches without a
test that notices when they change: a table entry, an option that takes a value, an escape, a
reason. Each case below pins one branch's observable outcome (category, reason, write or read
targets), grouped by the function it exercises; a case per known bug fixed with it (a workspace
``./ls``, ``ln -fnvrs``, ``xargs -i``, ``npm``/``pip config set``, a home under a system
directory, a NUL in ``$'...'``, a literal ``$`` in a dynamic word).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from air.contracts.error import AirException
from air.contracts.permission import CommandCategory, PathCategory, PermissionAction
from air.contracts.permission_records import PermissionRequestContext
from air.path_glob import glob_match
from air.security.commands import CommandRiskAnalyzer
from air.security.engine import PermissionEngine
from air.security.paths import PathClassifier, names_credentials
from air.security.policy import PolicyRule, parse_policy, rule_matches_path

C = CommandCategory
P = PathCategory
A = PermissionAction
CWD = "/work/proj"


@dataclass(frozen=True)
class Case:
    command: str
    category: CommandCategory
    reason: str | None = None
    writes: tuple[str, ...] | None = None
    reads: tuple[str, ...] | None = None
    programs: tuple[str | None, ...] | None = None


def _id(case: Case) -> str:
    return case.command


CASES: list[Case] = [
    # -- _env_risk: a program variable is judged on its first word, a search path per part
    Case("CC='/opt/cc -m32' make", C.OPAQUE, "sets CC to /opt/cc, code from outside the project"),
    Case("CC='gcc:/opt/x' make", C.BUILD_TEST, "make is build_test"),
    Case(
        "PYTHONPATH=src:/opt/lib pytest",
        C.OPAQUE,
        "sets PYTHONPATH to /opt/lib, code from outside the project",
    ),
    # -- _segments: a private-use character hides what is shown
    Case("ls \ue000", C.OPAQUE, "control or invisible character U+E000"),
    # -- _ansi_c / _literal: $'...' is decoded like bash does it
    Case("echo hi > $'\\U2f'tmp/x", C.FILE_MUTATION, "redirect writes /tmp/x", ("/tmp/x",)),
    Case("echo hi > $'\\x2ftmp/x'", C.FILE_MUTATION, "redirect writes /tmp/x", ("/tmp/x",)),
    Case("echo hi > $'\\057tmp/x'", C.FILE_MUTATION, "redirect writes /tmp/x", ("/tmp/x",)),
    Case("echo hi > $'out\\tfile'", C.FILE_MUTATION, None, (f"{CWD}/out\tfile",)),
    Case("echo hi > $'a\\cAb'", C.FILE_MUTATION, None, (f"{CWD}/a\x01b",)),
    Case("echo hi > $'/tmp/x'", C.FILE_MUTATION, "redirect writes /tmp/x", ("/tmp/x",)),
    # bash ends an argument at a NUL: these read /etc/shadow and write /tmp/x
    Case("cat $'/etc/shadow\\x00.txt'", C.READ_ONLY, reads=("/etc/shadow",)),
    Case("cat $'/etc/shadow\\0'", C.READ_ONLY, reads=("/etc/shadow",)),
    Case("echo > $'/tmp/x\\x00y'", C.FILE_MUTATION, "redirect writes /tmp/x", ("/tmp/x",)),
    # -- _walk / _redirect
    Case("> /tmp/x", C.FILE_MUTATION, "redirect writes /tmp/x", ("/tmp/x",)),
    Case("ls 2>&1 >> /tmp/log", C.FILE_MUTATION, "redirect writes /tmp/log", ("/tmp/log",)),
    Case("ls &>> /tmp/log", C.FILE_MUTATION, "redirect writes /tmp/log", ("/tmp/log",)),
    Case("cat <&3", C.READ_ONLY, writes=()),
    # -- _command: a recursive read of a directory reads below it
    Case(
        "tar czf /tmp/x.tgz /etc/",
        C.FILE_MUTATION,
        writes=("/tmp/x.tgz",),
        reads=("/tmp/x.tgz", "/etc/", "/tmp/x.tgz/**", "/etc/**"),
    ),
    # -- _read_candidates: option values and what is left of an expansion
    Case("grep --file=~/.netrc pattern", C.READ_ONLY, reads=("~/.netrc",)),
    Case("grep -f/etc/shadow x", C.READ_ONLY, reads=("/etc/shadow", "/etc/shadow/**")),
    Case("cat \"$H\"/.ssh/key'$'", C.READ_ONLY, reads=("/_dynamic_/.ssh/key$",)),
    # -- _write_targets: ln -s, with the letters in any order
    Case("ln -fnvrs A B", C.FILE_MUTATION, writes=(f"{CWD}/A", f"{CWD}/B")),
    Case("ln --symbolic ~/.ssh/id_rsa k", C.FILE_MUTATION, writes=("~/.ssh/id_rsa", f"{CWD}/k")),
    Case("ln -f A B", C.FILE_MUTATION, writes=(f"{CWD}/B",)),
    Case("ln -- -s B", C.FILE_MUTATION, writes=(f"{CWD}/B",)),
    Case("mv src -t -x", C.FILE_MUTATION, writes=(f"{CWD}/-x",)),
    Case("cp -t dir a", C.FILE_MUTATION, writes=(f"{CWD}/dir",)),
    Case("cp --target-directory=dir a", C.FILE_MUTATION, writes=(f"{CWD}/dir",)),
    # -- _option_values / _moved_targets: values holding `=`, attached short values
    Case("make --directory=/tmp/a=b", C.BUILD_TEST, writes=("/tmp/a=b",)),
    Case("make -Cb", C.BUILD_TEST, writes=(f"{CWD}/b",)),
    Case("make -C", C.BUILD_TEST, writes=()),
    Case("make --foo=/opt/a=b", C.BUILD_TEST, writes=("/opt/a=b",)),
    Case("make DESTDIR=/opt/a=b", C.BUILD_TEST, writes=("/opt/a=b",)),
    # -- _h_sudo: options with a value
    Case("sudo -r role ls", C.PRIVILEGED, programs=("sudo", "ls")),
    Case("sudo -t type ls", C.PRIVILEGED, programs=("sudo", "ls")),
    # -- _h_shell
    Case("bash -s ./x.sh", C.OPAQUE, "bash reads commands from stdin"),
    Case("bash -i ./x.sh", C.OPAQUE, "bash reads commands from stdin"),
    Case("bash -e -c 'rm -rf /'", C.DESTRUCTIVE, "rm is destructive"),
    Case("bash -o pipefail ./x.sh", C.BUILD_TEST, "bash runs the workspace script ./x.sh"),
    Case("bash --norc /tmp/x.sh", C.OPAQUE, "bash runs a script outside the workspace"),
    # -- _h_js_pm, _h_pip: options with a value, config
    Case("pnpm -F web install", C.PACKAGE_INSTALL, "pnpm install"),
    Case("pnpm --filter web test", C.BUILD_TEST, "pnpm test"),
    Case("npm config get registry", C.READ_ONLY, "npm config get"),
    Case("npm config list", C.READ_ONLY, "npm config list"),
    Case("npm config", C.READ_ONLY, "npm config"),
    Case(
        "npm config set registry http://x",
        C.FILE_MUTATION,
        "npm config set writes ~/.npmrc",
        ("~/.npmrc",),
    ),
    Case("npm config delete registry", C.FILE_MUTATION, writes=("~/.npmrc",)),
    Case(
        "npm config -g set a b",
        C.FILE_MUTATION,
        "npm config set writes its configuration",
        ("$dynamic",),
    ),
    Case("npm --location=project config set a b", C.FILE_MUTATION, writes=("$dynamic",)),
    Case("yarn config set a b", C.FILE_MUTATION, writes=("$dynamic",)),
    Case("npm config edit", C.OPAQUE, "npm config edit runs an editor"),
    Case("npm config $ACTION x", C.OPAQUE, "npm config with a dynamic action"),
    Case(
        "pip config set global.index-url http://x",
        C.FILE_MUTATION,
        "pip config set writes ~/.config/pip/pip.conf",
        ("~/.config/pip/pip.conf",),
    ),
    Case("pip config --global set a b", C.FILE_MUTATION, writes=("/etc/pip.conf",)),
    Case("pip config --site unset a", C.FILE_MUTATION, writes=("$dynamic",)),
    Case("pip config list", C.READ_ONLY, "pip config list"),
    Case("pip config get global.index-url", C.READ_ONLY, "pip config get"),
    Case("pip3 config debug", C.READ_ONLY, "pip3 config debug"),
    # -- _h_sed: every -e script counts, not only the first operand
    Case("sed -e 's/a/b/' -e '1e id' f", C.OPAQUE, "sed script runs shell commands (e)"),
    # -- _h_tar
    Case('tar -c -f "$OUT" src', C.FILE_MUTATION, writes=("$dynamic",)),
    Case("tar -c -f out.tar --exclude=*.swf src", C.FILE_MUTATION, writes=(f"{CWD}/out.tar",)),
    Case("tar -cf out.tar src", C.FILE_MUTATION, writes=(f"{CWD}/out.tar",)),
    # -- _h_curl: output options
    Case("wget -P /tmp/dl http://x", C.NETWORK, writes=("/tmp/dl",)),
    Case("curl -c /tmp/jar http://x", C.NETWORK, writes=("/tmp/jar",)),
    Case("curl -D /tmp/h http://x", C.NETWORK, writes=("/tmp/h",)),
    Case("curl --output=/tmp/a=b http://x", C.NETWORK, writes=("/tmp/a=b",)),
    # -- _git_segments
    Case("git -C sub commit -m x", C.VCS_MUTATION, writes=(f"{CWD}/sub",)),
    Case("git difftool", C.OPAQUE, "git difftool runs an external tool"),
    Case(
        "git archive --exec=/tmp/x --remote=o HEAD",
        C.OPAQUE,
        "git archive runs a given program for the remote side",
    ),
    Case(
        "git ls-remote --upload-pack=/tmp/x origin",
        C.OPAQUE,
        "git ls-remote runs a given program for the remote side",
    ),
    Case("git $SUB", C.OPAQUE, "git with a dynamic argument"),
    Case("git -p log", C.READ_ONLY, "git log"),
    Case("git config --list a b", C.READ_ONLY, "git config reads configuration"),
    Case("git config --rename-section a", C.OPAQUE, "git config edits configuration"),
    Case("git config --unset user.name", C.OPAQUE, "git config edits configuration"),
    # -- _h_multicall
    Case("busybox --list-full", C.READ_ONLY, "busybox --list-full", programs=("busybox",)),
    Case("busybox --list", C.READ_ONLY, "busybox --list", programs=("busybox",)),
    Case("busybox fsck.ext4 /dev/sda", C.DESTRUCTIVE, "formats or repairs a file system"),
    # -- _h_systemctl
    Case("systemctl --user is-active foo", C.READ_ONLY, "systemctl is-active"),
    Case("systemctl cat foo", C.READ_ONLY, "systemctl cat"),
    Case("systemctl --user restart foo", C.PRIVILEGED, "systemctl restart changes system services"),
    # -- _h_apt: dpkg's action is an option
    Case("dpkg --status x", C.READ_ONLY, "dpkg --status"),
    Case("dpkg -l", C.READ_ONLY, "dpkg -l"),
    Case("dpkg -L x", C.READ_ONLY, "dpkg -L"),
    Case("dpkg -r pkg", C.PRIVILEGED, "dpkg -r removes system packages"),
    Case("dpkg --purge pkg", C.PRIVILEGED, "dpkg --purge removes system packages"),
    Case("dpkg -i x.deb", C.PRIVILEGED, "dpkg -i changes system packages"),
    Case("dpkg -l -i x.deb", C.PRIVILEGED, "dpkg -l changes system packages"),
    Case("apt-get remove x", C.PRIVILEGED, "apt-get remove removes system packages"),
    # -- _h_reader_that_writes
    Case("uniq in.txt out.txt", C.FILE_MUTATION, "uniq writes out.txt", (f"{CWD}/out.txt",)),
    Case("yq -i '.a=1' f.yaml", C.FILE_MUTATION, "yq writes f.yaml", (f"{CWD}/f.yaml",)),
    Case("jq . in.json", C.READ_ONLY, writes=()),
    Case("yq . f.yaml", C.READ_ONLY, "yq is read_only", ()),
    Case("xxd a.bin a.hex", C.FILE_MUTATION, writes=(f"{CWD}/a.hex",), programs=("xxd",)),
    Case("uniq in.txt", C.READ_ONLY, writes=(), programs=("uniq",)),
    # -- _h_date
    Case("hostname -b", C.PRIVILEGED, "hostname sets the host name"),
    Case("hostname", C.READ_ONLY, "hostname prints the host name"),
    Case("date --set 2020-01-01", C.PRIVILEGED, "date --set changes the system clock"),
    Case("date -s x", C.PRIVILEGED, "date --set changes the system clock"),
    # -- _h_pager_user
    Case("more +10 f", C.OPAQUE, "more +10 runs pager commands"),
    Case("man --pager cat ls", C.OPAQUE, "man --pager runs a program"),
    Case("bat --pager cat f", C.OPAQUE, "bat --pager runs a program"),
    # -- _h_runner
    Case("perf record ls", C.BUILD_TEST, "perf runs a command", programs=("perf", "ls")),
    Case("perf list", C.BUILD_TEST, "perf list", programs=("perf",)),
    Case("sg docker 'rm -rf /'", C.DESTRUCTIVE, "rm is destructive"),
    Case("perf stat --output /tmp/o ls", C.BUILD_TEST, writes=("/tmp/o",)),
    Case("perf stat --output o.data ls", C.BUILD_TEST, writes=(f"{CWD}/o.data",)),
    Case("valgrind --log-file=v.log ./a.out", C.BUILD_TEST, writes=(f"{CWD}/v.log",)),
    # -- _h_zip
    Case("zip --unzip-command=x a.zip f", C.OPAQUE, "zip -TT runs a given test command"),
    Case("zip -TT cmd a.zip f", C.OPAQUE, "zip -TT runs a given test command"),
    # -- _h_bundle
    Case("bundle --gemfile G install", C.PACKAGE_INSTALL, "bundle install"),
    Case("bundle install", C.PACKAGE_INSTALL, "bundle install", programs=("bundle",)),
    Case("bundle show", C.READ_ONLY, "bundle show"),
    Case("bundle version", C.READ_ONLY, "bundle version"),
    # -- _h_gdb
    Case("gdb --eval-command x", C.OPAQUE, "gdb runs debugger commands (shell too)"),
    Case("gdb $X", C.OPAQUE, "gdb runs debugger commands (shell too)"),
    Case("gdb -ex run ./a.out", C.OPAQUE, "gdb runs debugger commands (shell too)"),
    Case("gdb --source f", C.OPAQUE, "gdb --source runs a command file"),
    Case("gdb --args rm -rf /", C.DESTRUCTIVE, "rm is destructive"),
    # -- _h_shell_strings: options with a value, scripts, outputs
    Case("hyperfine --warmup 3 make", C.BUILD_TEST, programs=("hyperfine", "make")),
    Case("hyperfine -N --runs 3 make", C.BUILD_TEST, programs=("hyperfine", "make")),
    Case("hyperfine --export-json out.json make", C.BUILD_TEST, writes=(f"{CWD}/out.json",)),
    Case("hyperfine --export-json ~/.bashrc make", C.BUILD_TEST, writes=("~/.bashrc",)),
    Case("hyperfine --export-csv=/tmp/r.csv make", C.BUILD_TEST, writes=("/tmp/r.csv",)),
    Case("hyperfine --setup 'rm -rf /' make", C.DESTRUCTIVE, "rm is destructive"),
    Case("hyperfine --cleanup 'rm -rf /' make", C.DESTRUCTIVE, "rm is destructive"),
    Case("hyperfine -p 'rm -rf /' make", C.DESTRUCTIVE, "rm is destructive"),
    Case("hyperfine make 'rm -rf /'", C.DESTRUCTIVE, "rm is destructive"),
    Case("script -c 'rm -rf /' log", C.DESTRUCTIVE, "rm is destructive"),
    Case("script --command 'rm -rf /' log", C.DESTRUCTIVE, "rm is destructive"),
    Case("script -c ls ~/.bashrc", C.BUILD_TEST, writes=("~/.bashrc",)),
    Case("script -c ls", C.BUILD_TEST, writes=(f"{CWD}/typescript",)),
    Case("script", C.OPAQUE, "script records an interactive shell", programs=("script",)),
    Case("script -O /tmp/log -c ls", C.BUILD_TEST, writes=("/tmp/log",)),
    Case("script -I /tmp/in -c ls out", C.BUILD_TEST, writes=("/tmp/in", f"{CWD}/out")),
    Case('script -c ls "$F"', C.BUILD_TEST, writes=("$dynamic",)),
    Case("script -t log", C.OPAQUE, "script records an interactive shell"),
    Case("hyperfine --output=null make", C.BUILD_TEST, writes=()),
    Case("hyperfine --output ./o.txt make", C.BUILD_TEST, writes=(f"{CWD}/./o.txt",)),
    Case("hyperfine --conclude 'rm -rf /' make", C.DESTRUCTIVE, "rm is destructive"),
    Case("hyperfine -L n 1,2 make", C.BUILD_TEST, programs=("hyperfine", "make")),
    Case("hyperfine -P n 1 3 make", C.BUILD_TEST, programs=("hyperfine", "make")),
    Case("hyperfine --setup", C.BUILD_TEST, programs=("hyperfine",)),
    Case("watch -n 1 git status", C.PROCESS_CONTROL, programs=("watch", "git")),
    Case("watch -d rm -rf /", C.DESTRUCTIVE, "rm is destructive"),
    Case("watch -q 3 ls", C.PROCESS_CONTROL, programs=("watch", "ls")),
    Case("watch $CMD", C.OPAQUE, "watch -c with a dynamic script"),
    # -- _h_xargs: -i and --replace take their value attached, if any
    Case("xargs -i ls", C.READ_ONLY, programs=("xargs", "ls")),
    Case("xargs --replace rm x", C.DESTRUCTIVE, programs=("xargs", "rm")),
    Case("xargs -I {} rm {}", C.DESTRUCTIVE, programs=("xargs", "rm")),
    # -- _argv: a program given by a relative path is the workspace's own file
    Case("./ls", C.BUILD_TEST, "runs the workspace program ./ls", programs=("./ls", "ls")),
    Case("bin/cat x", C.BUILD_TEST, "runs the workspace program bin/cat"),
    Case("./bash -c 'rm -rf /'", C.DESTRUCTIVE, "rm is destructive"),
    Case("./bash x.sh", C.BUILD_TEST, programs=("./bash", "bash")),
    Case("./run.sh", C.BUILD_TEST, "runs a script of the workspace", programs=("./run.sh",)),
]


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_each_branch_classifies_as_pinned(case: Case) -> None:
    got = CommandRiskAnalyzer().analyze(case.command, CWD)
    assert got.category == case.category, got
    if case.reason is not None:
        assert got.reason == case.reason, got
    if case.writes is not None:
        assert tuple(got.write_targets) == case.writes, got
    if case.reads is not None:
        assert tuple(got.read_targets) == case.reads, got
    if case.programs is not None:
        assert tuple(s.program for s in got.segments) == case.programs, got


# -- the fixed bugs, through the real engine ------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "ls").write_text("#!/bin/sh\ncat ~/.ssh/id_rsa\n")
    (tmp_path / "home" / ".ssh").mkdir(parents=True)
    return root


def _explain(project: Path, command: str) -> PermissionAction:
    engine = PermissionEngine(classifier=PathClassifier(home=str(project.parent / "home")))
    ctx = PermissionRequestContext(
        session_id="ses_b",
        task_id="task_1",
        tool_name="shell.run",
        permission_template="executor",
        project_root=str(project),
        workspace_root=str(project),
        command=command,
    )
    return engine.explain(ctx).decision.action


@pytest.mark.parametrize(
    "command",
    [
        "npm config set registry http://evil.example",
        "pip config set global.index-url http://evil.example",
        "pip config --global set global.index-url http://evil.example",
        "hyperfine --export-json ~/.profile true",
        "script -c true ~/.bashrc",
        "ln -fnvrs /etc/passwd key",
    ],
)
def test_writes_outside_the_workspace_are_not_automatic(project: Path, command: str) -> None:
    assert _explain(project, command) not in (A.ALLOW, A.ANNOUNCE_THEN_RUN)


def test_a_workspace_program_named_like_a_reader_is_recorded_as_workspace_code(
    project: Path,
) -> None:
    # ./ls is the workspace's own script (it reads a key here), not the system's ls.
    engine = PermissionEngine(classifier=PathClassifier(home=str(project.parent / "home")))
    for command, category, reason in (
        ("ls", C.READ_ONLY, "ls is read_only"),
        ("./ls", C.BUILD_TEST, "runs the workspace program ./ls"),
    ):
        ev = engine.explain(
            PermissionRequestContext(
                session_id="ses_b",
                task_id="task_1",
                tool_name="shell.run",
                permission_template="reviewer",
                project_root=str(project),
                workspace_root=str(project),
                command=command,
            )
        )
        assert ev.command is not None
        assert (ev.command.category, ev.command.reason) == (category, reason)
        assert ev.decision.action == A.ALLOW


def test_a_nul_in_an_ansi_c_word_does_not_hide_a_credential_read(project: Path) -> None:
    home = project.parent / "home"
    assert _explain(project, f"cat $'{home}/.ssh/id_rsa\\x00.pub'") == A.ASK_USER


# -- paths ----------------------------------------------------------------------------------------


def test_a_home_under_a_system_directory_unflags_only_itself(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    classifier = PathClassifier(home="/var/lib/jenkins")
    for path in ("/var/log/syslog", "/var/spool/cron/root", "/var/lib/dpkg/status"):
        got = classifier.classify(path, str(project))
        assert got.category == P.SYSTEM_SENSITIVE, got
        assert got.reason == "inside the system directory /var", got
    mine = classifier.classify("/var/lib/jenkins/notes.txt", str(project))
    assert mine.category == P.OUTSIDE_PROJECT, mine
    rc = classifier.classify("/var/lib/jenkins/.bashrc", str(project))
    assert rc.category == P.SYSTEM_SENSITIVE, rc


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/proc/1/mem", "/proc/1/mem holds a process's environment or memory (API keys)"),
        ("/proc/1/environ", "/proc/1/environ holds a process's environment or memory (API keys)"),
        ("/srv/u/.password-store/bank", "inside a credentials directory"),
        ("/srv/u/.config/gh/hosts.yml", ".config/gh holds credentials"),
        ("/srv/u/.kube/config", ".kube/config holds credentials"),
        ("/etc/**", "reading all of /etc includes /etc/shadow"),
        ("/etc/ssh/ssh_host_*", "/etc/ssh/ssh_host_* can match ssh_host_rsa_key"),
        ("/etc/sh*", "/etc/sh* can match shadow"),
        ("/home/bob/.n*", "/home/bob/.n* can match .netrc"),
    ],
)
def test_credential_reasons(tmp_path: Path, path: str, reason: str) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    got = PathClassifier(home=str(tmp_path / "home")).classify(path, str(project))
    assert (got.category, got.reason) == (P.CREDENTIALS, reason)


@pytest.mark.parametrize(
    ("word", "credential"),
    [(".ssh/", True), ("~/.ssh//", True), ("id_rsa", True), ("notes/", False), ("src", False)],
)
def test_names_credentials(word: str, credential: bool) -> None:
    assert names_credentials(word) is credential


# -- policy ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("**.py", "a/b.py", True),
        ("**.py", "xpy", False),
        ("**/x", "a/b/x", True),
        ("src/**", "src/a/b", True),
        ("*.py", "a/b.py", False),
    ],
)
def test_glob_match(pattern: str, path: str, matches: bool) -> None:
    assert glob_match(pattern, path) is matches


def test_a_relative_rule_never_matches_outside_the_project(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    rule = PolicyRule(action="deny", path="**")
    assert rule_matches_path(rule, str(project / "a" / "b"), str(project), str(tmp_path))
    assert not rule_matches_path(rule, str(tmp_path / "elsewhere"), str(project), str(tmp_path))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("\x07", "p.yaml: not valid YAML (ReaderError)"),
        (
            "[" * 5000,
            "p.yaml: not valid YAML (nested too deeply: more than 64 levels of collections, the "
            "most air reads; refused before parsing)",
        ),
    ],
)
def test_unreadable_yaml_says_why(text: str, message: str) -> None:
    with pytest.raises(AirException) as info:
        parse_policy(text, "p.yaml")
    assert info.value.error.message == message


def test_wildcards_that_cannot_match_a_credential(tmp_path: Path) -> None:
    # bash's `*` skips dot-names, and /etc holds no dot-name credential
    project = tmp_path / "proj"
    project.mkdir()
    home = tmp_path / "home"
    classifier = PathClassifier(home=str(home))
    for path in (f"{home}/s*", f"{home}/*", "/etc/.*", "/etc/X11/*"):
        got = classifier.classify(path, str(project))
        assert got.category != P.CREDENTIALS, got
    for path in (f"{home}/.s*", f"{home}/.[s]sh", f"{home}/.s?h"):
        assert classifier.classify(path, str(project)).category == P.CREDENTIALS, path
