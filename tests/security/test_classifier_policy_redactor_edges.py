"""PathClassifier, the policy loader and matchers, and SecretRedactor at their edges: each
assertion pins a branch that a mutant flipped without failing the older tests
(docs/mutation.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from air.contracts.error import AirException
from air.contracts.permission import CommandCategory, PathCategory
from air.path_glob import glob_match
from air.security.paths import PathClassifier, is_within
from air.security.policy import (
    PermissionPolicy,
    PolicyRule,
    load_policy,
    parse_policy,
    policy_files,
    rule_matches_command,
    rule_matches_path,
    rule_matches_tool,
)
from air.security.redact import REDACTED, SecretRedactor, looks_secret_name

P = PathCategory


# -- is_within and the PathClassifier ------------------------------------------------------------


def test_is_within() -> None:
    assert is_within("/a/b", "/a/b")
    assert is_within("/a/b/c", "/a/b")
    assert is_within("/a/b/c", "/a/b/")
    assert not is_within("/a/bc", "/a/b")
    assert not is_within("/a", "/a/b")
    assert is_within("/a", "/")


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    project = tmp_path / "proj"
    workspace = project / ".air" / "local" / "worktrees" / "t1"
    for d in (project / "src", workspace / "src", workspace / "build" / "obj", project / "dist"):
        d.mkdir(parents=True)
    home = tmp_path / "home"
    (home / ".air").mkdir(parents=True)
    (home / ".config" / "systemd").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "f.txt").write_text("x")
    (workspace / "src" / "a.py").write_text("x")
    return {"project": project, "workspace": workspace, "home": home, "tmp": tmp_path}


def test_expand(tree: dict[str, Path]) -> None:
    home = str(tree["home"])
    c = PathClassifier(home=home)
    assert c.home == os.path.realpath(home)
    assert c.expand("~", "/base") == c.home
    assert c.expand("~/x/y", "/base") == c.home + "/x/y"
    assert c.expand("rel/x", "/base") == "/base/rel/x"
    assert c.expand("/abs", "/base") == "/abs"
    for dynamic in ("a$b", "`id`", "a\x00b", "~nosuchuser-xyz/x"):
        assert c.expand(dynamic, "/base") is None, dynamic
    assert c.expand("~root/x", "/base") == os.path.expanduser("~root/x")
    assert c.expand("x~y", "/base") == "/base/x~y"


def test_classify_inside_a_worktree_under_the_project(tree: dict[str, Path]) -> None:
    c = PathClassifier(home=str(tree["home"]))
    project, workspace = str(tree["project"]), str(tree["workspace"])

    def cls(path: str, **kw: bool) -> tuple[P, str, bool, bool, str | None]:
        got = c.classify(path, project, workspace_root=workspace, **kw)
        return got.category, got.reason, got.escapes, got.via_link, got.resolved_path

    ws = os.path.realpath(workspace)
    assert cls("src/a.py") == (
        P.PROJECT_SOURCE,
        "inside the workspace",
        False,
        False,
        f"{ws}/src/a.py",
    )
    assert cls("build/obj/x.o")[:2] == (P.PROJECT_BUILD_OUTPUT, "inside the build directory build")
    # a build directory itself, and a file merely named like one
    assert cls("build")[0] == P.PROJECT_BUILD_OUTPUT
    assert cls("src/build")[0] == P.PROJECT_SOURCE
    assert cls("cmake-build-debug/x")[:2] == (
        P.PROJECT_BUILD_OUTPUT,
        "inside the build directory cmake-build-debug",
    )
    assert cls("pkg.egg-info/PKG-INFO")[0] == P.PROJECT_BUILD_OUTPUT
    # the main checkout is inside the project too
    assert cls(str(tree["project"] / "dist" / "x"))[0] == P.PROJECT_BUILD_OUTPUT
    assert cls(str(tree["project"] / "src" / "m.py"))[:3] == (
        P.PROJECT_SOURCE,
        "inside the workspace",
        False,
    )
    # .git anywhere, folded for case and trailing dots
    assert cls(".git/config")[:2] == (P.PROJECT_GIT_INTERNAL, "inside .git")
    assert cls("sub/.GIT./hooks/x")[:2] == (P.PROJECT_GIT_INTERNAL, "inside .git")
    assert cls("sub/.git /x")[0] == P.PROJECT_GIT_INTERNAL
    # the project's .air: the worktree itself lives there but is the workspace
    assert cls(str(tree["project"] / ".air" / "shared" / "x"))[:2] == (
        P.AIR_INTERNAL,
        "inside the project's .air directory",
    )
    assert cls(".air/x")[:2] == (P.AIR_INTERNAL, "inside the project's .air directory")
    assert cls(str(tree["home"] / ".air" / "permissions.yaml"))[:3] == (
        P.AIR_INTERNAL,
        "inside ~/.air",
        True,
    )
    outside = str(tree["tmp"] / "outside" / "f.txt")
    assert cls(outside) == (
        P.OUTSIDE_PROJECT,
        "outside the project and its workspace",
        True,
        False,
        outside,
    )
    assert cls("../../../../../outside/f.txt")[:3] == (
        P.OUTSIDE_PROJECT,
        "'..' leads out of the workspace; outside the project and its workspace",
        True,
    )
    assert cls("$(id)") == (
        P.UNKNOWN,
        "the path depends on an expansion or holds a NUL byte",
        True,
        False,
        None,
    )


def test_links_out_and_hard_links(tree: dict[str, Path]) -> None:
    c = PathClassifier(home=str(tree["home"]))
    workspace = tree["workspace"]
    os.symlink(tree["tmp"] / "outside", workspace / "src" / "out")
    got = c.classify("src/out/f.txt", str(workspace))
    assert got.category == P.OUTSIDE_PROJECT
    assert got.via_link is True
    assert got.escapes is True
    assert (
        got.reason == "a symlink leads out of the workspace; outside the project and its workspace"
    )
    assert got.resolved_path == str(tree["tmp"] / "outside" / "f.txt")
    os.link(workspace / "src" / "a.py", tree["tmp"] / "outside" / "twin.py")
    hard = c.classify("src/a.py", str(workspace), for_write=True)
    assert (hard.category, hard.escapes, hard.via_link) == (P.UNKNOWN, True, True)
    assert hard.reason == "the file has other hard links; a write could reach a file elsewhere"
    assert hard.resolved_path == str(workspace / "src" / "a.py")
    read = c.classify("src/a.py", str(workspace))
    assert (read.category, read.via_link) == (P.PROJECT_SOURCE, False)
    (workspace / "src" / "single.py").write_text("x")
    single = c.classify("src/single.py", str(workspace), for_write=True)
    assert (single.category, single.via_link) == (P.PROJECT_SOURCE, False)
    missing = c.classify("src/new.py", str(workspace), for_write=True)
    assert missing.category == P.PROJECT_SOURCE
    os.mkdir(workspace / "src" / "d")
    assert c.classify("src/d", str(workspace), for_write=True).category == P.PROJECT_SOURCE


def test_system_paths_and_home_start_up_files(tree: dict[str, Path]) -> None:
    home = tree["home"]
    c = PathClassifier(home=str(home))
    project = str(tree["project"])

    def cls(path: str) -> tuple[P, str]:
        got = c.classify(path, project)
        return got.category, got.reason

    assert cls("/etc/hosts") == (P.SYSTEM_SENSITIVE, "inside the system directory /etc")
    assert cls("/usr/lib/x") == (P.SYSTEM_SENSITIVE, "inside the system directory /usr")
    assert cls("/dev/null")[0] == P.OUTSIDE_PROJECT
    assert cls("/tmp/scratch")[0] == P.OUTSIDE_PROJECT
    assert cls("/tmp")[0] == P.OUTSIDE_PROJECT
    assert cls("/var/tmp/x")[0] == P.OUTSIDE_PROJECT
    # (a home under /tmp is scratch space: the login files are checked on a real-looking home)
    real = PathClassifier(home="/home/someone")
    for entry in (".config/systemd/user/x.service", ".gitconfig", ".local/bin/tool"):
        got = real.classify(f"/home/someone/{entry}", project)
        first = entry.split("/user")[0].split("/tool")[0]
        assert (got.category, got.reason) == (
            P.SYSTEM_SENSITIVE,
            f"~/{first} changes what runs at login",
        ), entry
    assert real.classify("/home/someone", project).reason == "a file-system or home root"
    assert real.classify("/home/someone/notes", project).category == P.OUTSIDE_PROJECT
    assert cls(str(home / ".gitconfig"))[0] == P.OUTSIDE_PROJECT
    assert cls("/") == (P.SYSTEM_SENSITIVE, "a file-system or home root")
    assert cls(str(home / "notes.txt"))[0] == P.OUTSIDE_PROJECT
    # a shell start-up file is sensitive even inside the project
    assert cls("src/.bashrc") == (P.SYSTEM_SENSITIVE, ".bashrc is a shell start-up file")
    # a project inside a system directory is still the project
    c2 = PathClassifier(home=str(home))
    inside = c2.classify("/usr/share/doc", "/usr/share")
    assert inside.category == P.PROJECT_SOURCE
    # a home under a system directory does not make all of the home sensitive
    under_var = PathClassifier(home="/var/lib/someuser")
    assert under_var.classify("/var/lib/someuser/notes", project).category == P.OUTSIDE_PROJECT
    assert under_var.classify("/etc/x", project).category == P.SYSTEM_SENSITIVE


def test_credential_names_and_not_credentials(tree: dict[str, Path]) -> None:
    c = PathClassifier(home=str(tree["home"]))
    project = str(tree["project"])
    assert c.classify("src/server.pem", project).reason == "server.pem holds credentials"
    assert c.classify("src/.env.example", project).category == P.PROJECT_SOURCE
    # an env_file by any name (Compose's `env_file: prod.env`), but not its example
    assert c.classify("deploy/prod.env", project).reason == "prod.env holds credentials"
    assert c.classify("deploy/example.env", project).category == P.PROJECT_SOURCE
    assert c.classify("src/env.py", project).category == P.PROJECT_SOURCE
    assert c.classify(str(tree["home"] / ".aws" / "config"), project).reason == "inside ~/.aws"
    assert c.classify("/srv/x/.ssh/config", project).reason == "inside a credentials directory"
    assert c.classify("/srv/x/.gnupg/x", project).category == P.CREDENTIALS
    assert c.classify("/srv/x/.aws/x", project).category == P.CREDENTIALS


# -- policy files --------------------------------------------------------------------------------


def test_parse_policy_keeps_every_field(tmp_path: Path) -> None:
    policy = parse_policy(
        "version: 1\nheadless_allow_ask: true\nrules:\n"
        "  - action: deny\n    tool: 'fs.*'\n    path: 'secrets/**'\n    command: 'x*'\n"
        "    category: network\n    sensitive: true\n    reason: why\n"
        "  - action: ask\n    tool: shell.run\n",
        "p.yaml",
    )
    assert policy.headless_allow_ask is True
    assert policy.sources == ("p.yaml",)
    assert policy.rules == (
        PolicyRule(
            action="deny",
            tool="fs.*",
            path="secrets/**",
            command="x*",
            category=CommandCategory.NETWORK,
            sensitive=True,
            source="p.yaml",
            reason="why",
        ),
        PolicyRule(action="ask", tool="shell.run", source="p.yaml"),
    )
    assert parse_policy("rules: []\n", "q").headless_allow_ask is False
    assert parse_policy("# nothing\n", "e.yaml") == PermissionPolicy(sources=("e.yaml",))
    assert parse_policy("rules:\n", "n").rules == ()
    for rule in ("path: 'a/**'", "command: 'ls'", "category: network"):
        assert len(parse_policy(f"rules:\n  - action: ask\n    {rule}\n", "r").rules) == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rules:\n  - 3\n", "p.yaml: rule 0 is not a mapping"),
        ("rules:\n  - action: allow\n    tool: x\n  - [1]\n", "p.yaml: rule 1 is not a mapping"),
        ("rules: 3\n", "p.yaml: `rules` must be a list"),
        ("rules:\n  - action: ask\n    tool: 3\n", "p.yaml: rule 0: tool must be a string"),
        (
            "rules:\n  - action: ask\n    tool: x\n    command: 3\n",
            "p.yaml: rule 0: command must be a string",
        ),
        (
            "rules:\n  - action: ask\n    tool: x\n    reason: 3\n",
            "p.yaml: rule 0: reason must be a string",
        ),
        (
            "rules:\n  - action: ask\n    tool: ''\n",
            "p.yaml: rule 0 names no tool, path, command or category",
        ),
        (
            "rules:\n  - action: ALLOW\n    tool: x\n",
            "p.yaml: rule 0: action must be allow, ask or deny, not 'ALLOW'",
        ),
        ("[1, 2]\n", "p.yaml: the top level must be a mapping with a `rules` list"),
    ],
)
def test_bad_policies_name_the_rule_and_the_reason(text: str, message: str) -> None:
    with pytest.raises(AirException) as info:
        parse_policy(text, "p.yaml")
    assert info.value.error.message == message
    assert info.value.error.user_action == (
        "Fix p.yaml (see docs/decisions.md, IMPL-SEC-3 for the format) and retry."
    )


def test_load_policy_skips_missing_files_and_reports_unreadable_ones(tmp_path: Path) -> None:
    first = tmp_path / "a.yaml"
    first.write_text("rules:\n  - action: deny\n    tool: x\n", encoding="utf-8")
    second = tmp_path / "b.yaml"
    second.write_text("headless_allow_ask: true\nrules:\n  - action: allow\n    tool: 'ü'\n")
    policy = load_policy([str(tmp_path / "missing.yaml"), str(first), str(second)])
    assert [r.source for r in policy.rules] == [str(first), str(second)]
    assert policy.rules[1].tool == "ü"
    assert policy.sources == (str(first), str(second))
    assert policy.headless_allow_ask is True
    assert load_policy([str(first)]).headless_allow_ask is False
    with pytest.raises(AirException) as info:
        load_policy([str(tmp_path)])
    assert info.value.error.message.startswith(f"{tmp_path}: cannot be read (")
    merged = PermissionPolicy(headless_allow_ask=True, sources=("x",)).merged(PermissionPolicy())
    assert merged.headless_allow_ask is True
    assert merged.sources == ("x",)
    assert PermissionPolicy().merged(PermissionPolicy()).headless_allow_ask is False


def test_policy_files(tmp_path: Path) -> None:
    home = str(tmp_path)
    assert policy_files(None, home) == [f"{home}/.air/permissions.yaml"]
    assert policy_files("/p", home) == [
        f"{home}/.air/permissions.yaml",
        "/p/.air/shared/permissions.yaml",
    ]
    assert policy_files(None) == [os.path.join(os.path.expanduser("~"), ".air", "permissions.yaml")]


def test_glob_match() -> None:
    assert glob_match("src/*.py", "src/a.py")
    assert not glob_match("src/*.py", "src/sub/a.py")
    assert glob_match("src/**", "src/sub/a.py")
    assert glob_match("**/a.py", "a.py")
    assert glob_match("**/a.py", "x/y/a.py")
    assert not glob_match("**/a.py", "x/ya.py")
    assert glob_match("a?c", "abc")
    assert not glob_match("a?c", "a/c")
    assert not glob_match("a.c", "abc")
    assert glob_match("a+b(c)", "a+b(c)")
    assert glob_match("**", "anything/at/all")
    assert not glob_match("src", "src/a")
    assert not glob_match("*.py", "a.pyc")
    assert glob_match("x**y", "x/a/y")


def test_rule_matchers(tmp_path: Path) -> None:
    project, home = "/p", "/h"
    rule = PolicyRule(action="deny", path="docs")
    assert rule_matches_path(rule, "/p/docs", project, home)
    assert rule_matches_path(rule, "/p/docs/a/b.md", project, home)
    assert not rule_matches_path(rule, "/p/docsx", project, home)
    assert not rule_matches_path(rule, "/elsewhere/docs", project, home)
    assert rule_matches_path(PolicyRule(action="deny", path="docs/"), "/p/docs/x", project, home)
    assert rule_matches_path(PolicyRule(action="deny"), "/anything", project, home)
    home_rule = PolicyRule(action="deny", path="~/.cfg")
    assert rule_matches_path(home_rule, "/h/.cfg", project, home)
    assert rule_matches_path(home_rule, "/h/.cfg/x", project, home)
    assert not rule_matches_path(home_rule, "/p/.cfg", project, home)
    absolute = PolicyRule(action="deny", path="/opt/data/")
    assert rule_matches_path(absolute, "/opt/data", project, home)
    assert rule_matches_path(absolute, "/opt/data/x", project, home)
    assert not rule_matches_path(absolute, "/opt/database", project, home)

    cmd = PolicyRule(action="deny", command="git push*")
    assert rule_matches_command(cmd, "git   push  origin", None)
    assert not rule_matches_command(cmd, "git status", None)
    assert not rule_matches_command(cmd, "GIT PUSH", None)
    cat = PolicyRule(action="deny", category=CommandCategory.NETWORK)
    assert rule_matches_command(cat, "curl x", CommandCategory.NETWORK)
    assert not rule_matches_command(cat, "ls", CommandCategory.READ_ONLY)
    both = PolicyRule(action="deny", category=CommandCategory.NETWORK, command="curl*")
    assert rule_matches_command(both, "curl x", CommandCategory.NETWORK)
    assert not rule_matches_command(both, "wget x", CommandCategory.NETWORK)
    assert not rule_matches_command(both, "curl x", CommandCategory.READ_ONLY)

    assert rule_matches_tool(PolicyRule(action="deny"), "anything")
    assert rule_matches_tool(PolicyRule(action="deny", tool="fs.*"), "fs.write")
    assert not rule_matches_tool(PolicyRule(action="deny", tool="fs.*"), "FS.write")
    assert not rule_matches_tool(PolicyRule(action="deny", tool="fs.*"), "shell.run")


def test_specific_rules() -> None:
    assert PolicyRule(action="allow", path="secrets/key").is_specific
    assert PolicyRule(action="allow", command="git push origin").is_specific
    for vague in ("**", "*", "*/x", "**/x", "./", "?", ""):
        assert not PolicyRule(action="allow", path=vague).is_specific, vague
    assert not PolicyRule(action="allow", tool="fs.write").is_specific
    assert PolicyRule(action="allow", path="*", command="ls").is_specific


# -- the redactor --------------------------------------------------------------------------------


def test_secret_names() -> None:
    for name in ("API_KEY", "my_token", "DB_PASSWORD", "passwd", "AUTH_HEADER", "SENTRY_DSN"):
        assert looks_secret_name(name), name
    for name in (
        "token_ref",
        "SECRET_ID",
        "secret_ids",
        "token_count",
        "max_tokens",
        "output_tokens",
        "AUTHOR",
        "HOME",
    ):
        assert not looks_secret_name(name), name


def test_an_ascii_name_is_judged_as_the_pattern_judges_it() -> None:
    """``looks_secret_name`` reads an ASCII name without the regular expression (not compiled
    at start-up): on names made of the pattern's own words, cut and joined at random, in any
    case, both agree; a non-ASCII name still goes to the pattern (``ſ`` folds to ``s``)."""
    import random
    import re

    from air.security.redact import SECRET_NAME_PATTERN

    pattern = re.compile(SECRET_NAME_PATTERN)
    pieces = [
        *"secret token password passwd passphrase api access private session signing client "
        "key auth author authority credential webhook dsn cookie or".split(),
        *"_ - x o a d".split(),
    ]
    rng = random.Random(12)
    names = ["".join(rng.choice(pieces) for _ in range(rng.randrange(1, 5))) for _ in range(20000)]
    names += ["AUTHOR_AUTH", "authorauth", "auth", "AUTHOR", "APIKEY", "Api-Key", "Signing_KEY"]
    for name in names:
        name = "".join(c.upper() if rng.random() < 0.5 else c for c in name)
        expected = pattern.search(name) is not None
        if name.lower().endswith(("_ref", "_id", "_ids", "_count", "_tokens", "tokens")):
            expected = False
        assert looks_secret_name(name) == expected, name
    assert looks_secret_name("\u017fecret")  # ſecret: the pattern's case folding


def test_registered_values() -> None:
    r = SecretRedactor()
    r.register("short", "  padded-secret  ")
    assert r.redact("short") == "short"
    assert r.redact("x padded-secret y") == f"x {REDACTED} y"
    assert r.redact("x   padded-secret   y") == f"x {REDACTED} y"
    r.register("sixsix")
    assert r.redact("a sixsix b") == f"a {REDACTED} b"
    # the longest value wins where one contains another
    r.register("abcdefgh", "abcdefghijkl")
    assert r.redact("abcdefghijkl") == REDACTED
    r.register("sixsix")  # again: nothing changes
    assert r.redact("sixsix sixsix") == f"{REDACTED} {REDACTED}"
    assert SecretRedactor(["preset-value"]).redact("preset-value") == REDACTED
    assert SecretRedactor().redact("") == ""
    assert SecretRedactor().redact_bytes(b"k=v \xff ghp_" + b"a" * 36) == (
        "k=v \ufffd " + REDACTED
    ).encode("utf-8")


def test_register_environment_and_env_files() -> None:
    r = SecretRedactor()
    assert r.register_environment({"MY_TOKEN": "12345", "OTHER": "not-a-secret-name"}) == 0
    assert r.redact("not-a-secret-name 12345") == "not-a-secret-name 12345"
    assert r.register_environment({"MY_TOKEN": "12345678"}) == 0  # a number: ordinary text
    assert r.register_environment({"MY_TOKEN": "k7-zq8x1"}) == 1
    assert r.redact("k7-zq8x1 12345678") == REDACTED + " 12345678"
    count = r.register_env_file(
        "\n# A_SECRET=commented1\n  \nNOEQUALS\nK1='quoted-1'\nK2=\"dq-val-2\"\nK3=a=b=c=d\n"
        "SHORT=12345\nK4 =  spaced-4  \nK5=123456\n"
    )
    assert count == 5
    assert r.redact("quoted-1 dq-val-2 a=b=c=d spaced-4 123456 12345 commented1") == (
        " ".join([REDACTED] * 5) + " 12345 commented1"
    )


def test_redact_shapes_keep_their_labels() -> None:
    r = SecretRedactor()
    key = "A" * 40
    assert r.redact(f"aws_secret_access_key = {key}") == f"aws_secret_access_key = {REDACTED}"
    assert r.redact("Authorization: Bearer abcdefghijklmnop") == f"Authorization: {REDACTED}"
    assert r.redact("see bearer abcdefghijklmnop") == f"see bearer {REDACTED}"
    assert r.redact("token   abcdefghijklmnop") == f"token   {REDACTED}"
    assert r.redact("x-api-key: abcdef") == f"x-api-key: {REDACTED}"
    assert r.redact("X-Auth-Token=abc,def") == f"X-Auth-Token={REDACTED},def"
    assert r.redact("api_key: 'hunter2'") == f"api_key: {REDACTED}"
    assert r.redact("PASSWORD = s3cr3t # note") == f"PASSWORD = {REDACTED} # note"
    assert r.redact("https://user:pa55@example.com/x") == f"https://{REDACTED}@example.com/x"
    assert r.redact("nothing here") == "nothing here"


def test_redact_obj_replaces_secret_keys_and_walks_containers() -> None:
    r = SecretRedactor(["registered-1"])
    value = {
        "api_key": "abc",
        "token": "",
        "password": 5,
        "nested": ({"x": "registered-1"}, ["ok"]),
        3: "registered-1",
    }
    assert r.redact_obj(value) == {
        "api_key": REDACTED,
        "token": "",
        "password": 5,
        "nested": [{"x": REDACTED}, ["ok"]],
        3: REDACTED,
    }
    assert r.redact_obj(7) == 7
    assert r.redact_obj(None) is None
