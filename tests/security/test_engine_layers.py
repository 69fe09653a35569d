"""PermissionEngine layer by layer: each item's action, risk, layer and reason, the worst item's
decision, grants, headless fail-closed and the recorded event (killing the mutants that survived
the older tests; see docs/mutation.md)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from air.contracts.event import RuntimeEvent
from air.contracts.permission import (
    CommandCategory,
    PathCategory,
    PermissionAction,
    PermissionGrantScope,
)
from air.contracts.permission_records import DeclaredPermissions, PermissionRequestContext
from air.contracts.runtime import PermissionTemplate
from air.security.engine import PermissionEngine
from air.security.items import Evaluation, Item
from air.security.paths import PathClassifier
from air.security.policy import PermissionPolicy, PolicyRule, parse_policy
from air.security.redact import SecretRedactor

A = PermissionAction
C = CommandCategory
P = PathCategory
T = PermissionTemplate


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    for d in ("src", "build", ".git", ".air/local", "docs"):
        (project / d).mkdir(parents=True)
    (project / "src" / "a.py").write_text("x\n")
    (tmp_path / "home" / ".ssh").mkdir(parents=True)
    (tmp_path / "home" / ".ssh" / "id_rsa").write_text("key\n")
    (tmp_path / "elsewhere").mkdir()
    return project


@pytest.fixture
def home(root: Path) -> Path:
    return root.parent / "home"


def ctx(root: Path, **kw: Any) -> PermissionRequestContext:
    fields: dict[str, Any] = {
        "session_id": "ses_1",
        "task_id": "task_1",
        "tool_name": "fs.write",
        "permission_template": T.EXECUTOR,
        "project_root": str(root),
        "workspace_root": str(root),
    }
    fields.update(kw)
    return PermissionRequestContext.model_validate(fields)


def engine_for(home: Path, rules: str = "", **kw: Any) -> PermissionEngine:
    policy = parse_policy(rules, "policy.yaml") if rules else PermissionPolicy()
    return PermissionEngine(policy=policy, classifier=PathClassifier(home=str(home)), **kw)


def items(ev: Evaluation, kind: str) -> list[Item]:
    return [i for i in ev.items if i.kind == kind]


def only(ev: Evaluation, kind: str) -> Item:
    found = items(ev, kind)
    assert len(found) == 1, ev.items
    return found[0]


# -- layer 1: the declaration --------------------------------------------------------------------


def test_an_undeclared_capability_is_refused_with_every_missing_one_named(
    root: Path, home: Path
) -> None:
    engine = engine_for(home)
    nothing = DeclaredPermissions(read=True)
    ev = engine.explain(
        ctx(root, write_paths=["src/a.py"], command="ls", network=True, declared=nothing)
    )
    assert len(ev.items) == 1
    item = ev.items[0]
    assert (item.kind, item.key, item.action, item.risk, item.layer) == (
        "tool",
        "fs.write",
        A.REFUSE,
        "high",
        "1-declaration",
    )
    assert item.reason == "fs.write writes, runs commands, uses the network without declaring it"
    assert ev.command is None
    assert ev.decision.action == A.REFUSE
    assert ev.decision.layer == "1-declaration"
    assert ev.decision.reason == item.reason
    cases: list[tuple[dict[str, Any], str]] = [
        ({"write_paths": ["src/a.py"]}, "writes"),
        ({"command": "ls"}, "runs commands"),
        ({"network": True}, "uses the network"),
    ]
    for kw, word in cases:
        one = engine.explain(ctx(root, declared=nothing, **kw)).decision
        assert one.action == A.REFUSE, kw
        assert one.reason == f"fs.write {word} without declaring it"


def test_a_declared_capability_passes_layer_one(root: Path, home: Path) -> None:
    everything = DeclaredPermissions(write=True, execute=True, network=True)
    ev = engine_for(home).explain(
        ctx(root, write_paths=["src/a.py"], command="ls", network=True, declared=everything)
    )
    tool = ev.items[0]
    assert (tool.kind, tool.action, tool.risk, tool.reason, tool.layer) == (
        "tool",
        A.ALLOW,
        "none",
        "fs.write is declared",
        "1-declaration",
    )
    assert ev.decision.action == A.ASK_USER  # the network item
    assert ev.command is not None
    assert ev.command.category == C.READ_ONLY


# -- layers 3-5 for writes -----------------------------------------------------------------------


def test_write_items_per_path_category(root: Path, home: Path) -> None:
    engine = engine_for(home)
    expected = {
        "src/a.py": (A.ALLOW, "low", "4-risk", False, P.PROJECT_SOURCE),
        "build/x.o": (A.ALLOW, "low", "4-risk", False, P.PROJECT_BUILD_OUTPUT),
        ".git/config": (A.ASK_USER, "high", "4-risk", False, P.PROJECT_GIT_INTERNAL),
        ".air/local/x": (A.DENY, "high", "4-risk", False, P.AIR_INTERNAL),
        str(root.parent / "elsewhere" / "f"): (A.ASK_USER, "medium", "4-risk", False, None),
        "/etc/hosts": (A.ASK_USER, "critical", "5-sensitive", True, P.SYSTEM_SENSITIVE),
        str(home / ".ssh" / "id_rsa"): (A.ASK_USER, "critical", "5-sensitive", True, None),
    }
    for path, (action, risk, layer, sensitive, category) in expected.items():
        item = only(engine.explain(ctx(root, write_paths=[path])), "write")
        assert (item.action, item.risk, item.layer, item.sensitive) == (
            action,
            risk,
            layer,
            sensitive,
        ), path
        assert item.path is not None
        assert item.key == item.path.resolved_path
        if category is not None:
            assert item.path.category == category
            assert item.reason == f"{path}: {category.value} ({item.path.reason})"
    system = only(
        engine.explain(ctx(root, write_paths=[".air/local/x"], permission_template=T.SYSTEM)),
        "write",
    )
    assert system.action == A.ALLOW
    assert system.risk == "high"


def test_a_task_writes_a_protected_path_only_when_its_write_area_names_it(
    root: Path, home: Path
) -> None:
    """The merge refused a worktree's change to AGENTS.md, CLAUDE.md or a ``.git*`` file
    unless the task's scope named it; in the project itself (``main``: a non-git project's
    lone writer, ``--isolation main``) no merge judged it, and a task rewrote the AGENTS.md the
    next task's prompt holds. The engine holds the merge's rule before the write."""
    engine = engine_for(home)
    protected = [
        "AGENTS.md",
        "docs/CLAUDE.md",
        "docs/deep/CLAUDE.md",
        ".gitignore",
        ".github/workflows/ci.yml",
    ]
    for area in (None, ["docs"], ["**"], ["."]):
        for path in protected:
            item = only(engine.explain(ctx(root, write_paths=[path], write_area=area)), "write")
            assert (item.action, item.layer) == (A.BLOCK, "3-scope"), (area, path)
            held = area is None or area != ["docs"] or path.startswith("docs/")
            said = "the task's write area must name it" if held else "outside the task's write"
            assert said in item.reason, (area, path)
    named = [
        ("AGENTS.md", ["AGENTS.md"]),
        ("docs/CLAUDE.md", ["docs/CLAUDE.md"]),
        ("Xtra/CLAUDE.md", ["Xtra/CLAUDE.md"]),
        (".gitignore", [".gitignore"]),
        (".github/workflows/ci.yml", [".github"]),
        (".github/workflows/ci.yml", [".github/workflows"]),
        (".github/workflows/ci.yml", [".github/*"]),  # the literal part names it
    ]
    for path, area in named:
        item = only(engine.explain(ctx(root, write_paths=[path], write_area=area)), "write")
        assert item.action == A.ALLOW, (path, area)
    outside = str(root.parent / "elsewhere" / "AGENTS.md")  # not the task's: asked as before
    item = only(engine.explain(ctx(root, write_paths=[outside])), "write")
    assert (item.action, item.layer) == (A.ASK_USER, "4-risk")
    ordinary = only(engine.explain(ctx(root, write_paths=["docs/AGENTS.txt"])), "write")
    assert ordinary.action == A.ALLOW
    for template in (T.DEBUGGER, T.MAIN_DIRECT):  # the person's own channel asks as before
        item = only(
            engine.explain(ctx(root, write_paths=["AGENTS.md"], permission_template=template)),
            "write",
        )
        assert item.action == (A.BLOCK if template == T.DEBUGGER else A.ALLOW), template
    shell = ctx(root, tool_name="shell.run", command="echo be-evil >> sub/AGENTS.md")
    worst = engine.explain(shell)
    assert worst.decision.action == A.BLOCK
    assert any("sub/AGENTS.md is protected" in i.reason for i in worst.items)
    git = only(engine.explain(ctx(root, write_paths=[".git/config"])), "write")
    assert git.action == A.ASK_USER  # git's own state: its category decides, as before
    air = only(engine.explain(ctx(root, write_paths=[".air/shared/AGENTS.md"])), "write")
    assert (air.action, air.layer) == (A.DENY, "4-risk")  # air's own: its category, as before


def test_a_dynamic_write_path_asks_and_a_link_out_is_denied(root: Path, home: Path) -> None:
    engine = engine_for(home)
    dynamic = only(engine.explain(ctx(root, write_paths=["src/$(id).py"])), "write")
    assert (dynamic.action, dynamic.risk, dynamic.layer) == (A.ASK_USER, "high", "4-risk")
    assert dynamic.key == "src/$(id).py"
    assert dynamic.reason.startswith("src/$(id).py: ")
    os.symlink(root.parent / "elsewhere", root / "src" / "out")
    link = only(engine.explain(ctx(root, write_paths=["src/out/f"])), "write")
    assert (link.action, link.risk, link.layer) == (A.DENY, "high", "4-risk")
    assert link.reason.startswith("src/out/f: a symlink leads out")
    # a link out is never lifted by a rule, however specific
    lifted = engine_for(
        home, "rules:\n  - action: allow\n    path: 'src/out/**'\n    sensitive: true\n"
    )
    assert lifted.evaluate_sync(ctx(root, write_paths=["src/out/f"])).action == A.DENY


def test_task_scope_denies_and_blocks_before_the_risk_tables(root: Path, home: Path) -> None:
    engine = engine_for(home)
    denied = only(
        engine.explain(ctx(root, write_paths=["src/a.py"], denied_paths=["src"])), "write"
    )
    assert (denied.action, denied.risk, denied.layer) == (A.DENY, "medium", "3-scope")
    assert denied.reason == "src/a.py is in the task's denied paths"
    other_denied = engine.explain(ctx(root, write_paths=["src/a.py"], denied_paths=["docs"]))
    assert only(other_denied, "write").action == A.ALLOW
    blocked = only(
        engine.explain(ctx(root, write_paths=["src/a.py"], write_area=["docs"])), "write"
    )
    assert (blocked.action, blocked.risk, blocked.layer) == (A.BLOCK, "medium", "3-scope")
    assert blocked.reason == "src/a.py is outside the task's write area"
    # allowed_paths stands in for a missing write_area; write_area wins when both are set
    via_allowed = engine.explain(ctx(root, write_paths=["src/a.py"], allowed_paths=["docs"]))
    assert only(via_allowed, "write").action == A.BLOCK
    both = engine.explain(
        ctx(root, write_paths=["src/a.py"], write_area=["src"], allowed_paths=["docs"])
    )
    assert only(both, "write").action == A.ALLOW
    inside = engine.explain(ctx(root, write_paths=["src/a.py"], write_area=["docs", "src"]))
    assert only(inside, "write").action == A.ALLOW
    # an allow rule lifts neither
    lenient = engine_for(home, "rules:\n  - action: allow\n    tool: 'fs.*'\n")
    assert (
        lenient.evaluate_sync(ctx(root, write_paths=["src/a.py"], write_area=["docs"])).action
        == A.BLOCK
    )
    assert (
        lenient.evaluate_sync(ctx(root, write_paths=["src/a.py"], denied_paths=["src"])).action
        == A.DENY
    )
    # a deny rule does not rewrite a scope block (it denies the tool item instead)
    strict = engine_for(home, "rules:\n  - action: deny\n    path: 'src/**'\n")
    scoped = strict.explain(ctx(root, write_paths=["src/a.py"], write_area=["docs"]))
    assert only(scoped, "write").action == A.BLOCK
    assert only(scoped, "write").layer == "3-scope"
    assert only(scoped, "tool").action == A.ALLOW


def test_the_reviewer_template_cannot_write(root: Path, home: Path) -> None:
    item = only(
        engine_for(home).explain(
            ctx(root, write_paths=["src/a.py"], permission_template=T.REVIEWER)
        ),
        "write",
    )
    assert (item.action, item.risk, item.layer) == (A.DENY, "medium", "2-profile")
    assert item.reason == "the reviewer template is read-only"


# -- reads ---------------------------------------------------------------------------------------


def test_read_items(root: Path, home: Path) -> None:
    engine = engine_for(home)
    ok = only(engine.explain(ctx(root, tool_name="fs.read", read_paths=["src/a.py"])), "read")
    assert (ok.action, ok.risk, ok.layer, ok.sensitive) == (A.ALLOW, "none", "4-risk", False)
    assert ok.reason == "src/a.py: reads are allowed"
    assert ok.key == str(root / "src" / "a.py")
    key = str(home / ".ssh" / "id_rsa")
    cred = only(engine.explain(ctx(root, tool_name="fs.read", read_paths=[key])), "read")
    assert (cred.action, cred.risk, cred.layer, cred.sensitive) == (
        A.ASK_USER,
        "critical",
        "5-sensitive",
        True,
    )
    assert cred.reason.startswith(f"{key}: ")
    dyn = only(engine.explain(ctx(root, tool_name="fs.read", read_paths=["$HOME/x"])), "read")
    assert (dyn.action, dyn.risk, dyn.layer, dyn.sensitive) == (
        A.ASK_USER,
        "medium",
        "4-risk",
        False,
    )
    assert dyn.key == "$HOME/x"
    denied = only(
        engine.explain(
            ctx(root, tool_name="fs.read", read_paths=["src/a.py"], denied_paths=["src"])
        ),
        "read",
    )
    assert (denied.action, denied.risk, denied.layer) == (A.DENY, "medium", "3-scope")
    assert denied.reason == "src/a.py is in the task's denied paths"
    not_denied = engine.explain(
        ctx(root, tool_name="fs.read", read_paths=["src/a.py"], denied_paths=["docs"])
    )
    assert only(not_denied, "read").action == A.ALLOW
    # reads are allowed whatever the write area
    scoped = engine.explain(
        ctx(root, tool_name="fs.read", read_paths=["src/a.py"], write_area=["docs"])
    )
    assert only(scoped, "read").action == A.ALLOW


# -- commands, network, system-sensitive ---------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "category", "action", "risk"),
    [
        ("ls", C.READ_ONLY, A.ALLOW, "none"),
        ("make", C.BUILD_TEST, A.ALLOW, "low"),
        ("touch src/new.py", C.FILE_MUTATION, A.ALLOW, "low"),
        ("git commit -m x", C.VCS_MUTATION, A.ANNOUNCE_THEN_RUN, "low"),
        ("pip install requests", C.PACKAGE_INSTALL, A.ASK_USER, "medium"),
        ("curl https://example.com", C.NETWORK, A.ASK_USER, "medium"),
        ("pkill python", C.PROCESS_CONTROL, A.ASK_USER, "medium"),
        ("rm src/a.py", C.DESTRUCTIVE, A.ASK_USER, "high"),
        ("mount /dev/x /mnt", C.PRIVILEGED, A.ASK_USER, "critical"),
        ("eval $X", C.OPAQUE, A.ASK_USER, "high"),
    ],
)
def test_command_segments_take_their_categorys_action_and_risk(
    root: Path, home: Path, command: str, category: C, action: A, risk: str
) -> None:
    ev = engine_for(home).explain(ctx(root, tool_name="shell.run", command=command))
    segment = next(i for i in ev.items if i.kind == "command")
    assert (segment.key, segment.category, segment.action, segment.risk, segment.layer) == (
        command,
        category,
        action,
        risk,
        "4-risk",
    )
    assert ev.command is not None
    assert segment.reason == f"`{command}`: {ev.command.segments[0].reason}"
    assert ev.decision.risk_level == risk
    reviewer = engine_for(home).explain(
        ctx(root, tool_name="shell.run", command=command, permission_template=T.REVIEWER)
    )
    seg = next(i for i in reviewer.items if i.kind == "command")
    if category in (C.READ_ONLY, C.BUILD_TEST):
        assert seg.action == action
    else:
        assert seg.action == A.DENY
        assert seg.reason.startswith("the reviewer template is read-only: `")


def test_network_grants_and_network_tools(root: Path, home: Path) -> None:
    engine = engine_for(home)
    curl = "curl https://example.com"
    granted = engine.explain(ctx(root, tool_name="shell.run", command=curl, network_granted=True))
    assert only(granted, "command").action == A.ANNOUNCE_THEN_RUN
    # a grant of the network does not soften other categories
    rm = engine.explain(ctx(root, tool_name="shell.run", command="rm x", network_granted=True))
    assert only(rm, "command").action == A.ASK_USER
    asks = only(engine.explain(ctx(root, tool_name="web.fetch", network=True)), "network")
    assert (asks.key, asks.action, asks.risk, asks.reason, asks.layer) == (
        "web.fetch",
        A.ASK_USER,
        "medium",
        "the tool uses the network",
        "4-risk",
    )
    ok = engine.explain(ctx(root, tool_name="web.fetch", network=True, network_granted=True))
    item = only(ok, "network")
    assert (item.action, item.risk, item.reason, item.layer) == (
        A.ANNOUNCE_THEN_RUN,
        "medium",
        "network granted",
        "4-risk",
    )
    assert ok.decision.action == A.ANNOUNCE_THEN_RUN
    assert items(engine.explain(ctx(root, tool_name="web.fetch")), "network") == []


def test_system_sensitive_tools_ask_and_are_never_granted(root: Path, home: Path) -> None:
    engine = engine_for(home)
    context = ctx(root, tool_name="sys.tweak", system_sensitive=True)
    ev = engine.explain(context)
    item = next(i for i in ev.items if i.key == "sys.tweak#system")
    assert (item.kind, item.action, item.risk, item.layer, item.sensitive) == (
        "tool",
        A.ASK_USER,
        "critical",
        "5-sensitive",
        True,
    )
    assert item.reason == "sys.tweak touches system-sensitive state"
    assert engine.grant(context, PermissionGrantScope.SESSION) == []
    assert engine.evaluate_sync(context).action == A.ASK_USER
    assert engine.grant(context, PermissionGrantScope.ONCE) == ["sys.tweak#system"]
    headless = engine_for(home, headless_allow_ask=True)
    assert headless.evaluate_sync(context.model_copy(update={"headless": True})).action == A.DENY
    assert items(engine.explain(ctx(root, tool_name="sys.tweak")), "tool")[-1].key == "sys.tweak"


def test_command_write_targets_become_write_items_once(root: Path, home: Path) -> None:
    engine = engine_for(home)
    target = str(root / "src" / "out.txt")
    ev = engine.explain(
        ctx(root, tool_name="shell.run", command="echo hi > src/out.txt", write_paths=[target])
    )
    writes = items(ev, "write")
    assert [w.key for w in writes] == [target]
    relative = engine.explain(
        ctx(root, tool_name="shell.run", command="echo hi > out.txt", cwd=str(root / "src"))
    )
    assert [w.key for w in items(relative, "write")] == [target]


# -- layer 2: policy rules -----------------------------------------------------------------------


def test_rules_deny_ask_allow_in_that_order(root: Path, home: Path) -> None:
    both = engine_for(
        home,
        "rules:\n"
        "  - action: allow\n    command: 'curl *'\n"
        "  - action: deny\n    command: 'curl *'\n    reason: no exfiltration\n",
    )
    ev = both.explain(ctx(root, tool_name="shell.run", command="curl https://x.org"))
    seg = only(ev, "command")
    assert (seg.action, seg.layer) == (A.DENY, "2-profile")
    assert seg.reason.endswith("; denied by a rule in policy.yaml (no exfiltration)")
    bare = engine_for(home, "rules:\n  - action: deny\n    command: 'curl *'\n")
    seg = only(
        bare.explain(ctx(root, tool_name="shell.run", command="curl https://x.org")), "command"
    )
    assert seg.reason.endswith("; denied by a rule in policy.yaml")
    asks = engine_for(
        home,
        "rules:\n  - action: allow\n    command: 'ls*'\n  - action: ask\n    command: 'ls*'\n",
    )
    seg = only(asks.explain(ctx(root, tool_name="shell.run", command="ls -la")), "command")
    assert (seg.action, seg.layer) == (A.ASK_USER, "2-profile")
    assert seg.reason.endswith("; a rule in policy.yaml asks")
    # an ask never softens something worse
    ask_rm = engine_for(home, "rules:\n  - action: ask\n    tool: 'fs.*'\n")
    item = only(ask_rm.explain(ctx(root, write_paths=[".air/local/x"])), "write")
    assert (item.action, item.layer) == (A.DENY, "4-risk")
    allows = engine_for(home, "rules:\n  - action: allow\n    command: 'curl *'\n")
    seg = only(
        allows.explain(ctx(root, tool_name="shell.run", command="curl https://x.org")), "command"
    )
    assert (seg.action, seg.layer) == (A.ALLOW, "2-profile")
    assert seg.reason.endswith("; allowed by a rule in policy.yaml")


def test_rules_apply_to_their_own_kind_of_item(root: Path, home: Path) -> None:
    # A command rule never matches a path, a path rule never a command, and a tool-only rule
    # applies to the tool and network items.
    command_rule = engine_for(home, "rules:\n  - action: deny\n    command: '*'\n")
    assert command_rule.evaluate_sync(ctx(root, write_paths=["src/a.py"])).action == A.ALLOW
    category_rule = engine_for(home, "rules:\n  - action: deny\n    category: read_only\n")
    assert category_rule.evaluate_sync(ctx(root, write_paths=["src/a.py"])).action == A.ALLOW
    assert (
        category_rule.evaluate_sync(ctx(root, tool_name="shell.run", command="ls")).action == A.DENY
    )
    path_rule = engine_for(home, "rules:\n  - action: deny\n    path: '**'\n")
    assert path_rule.evaluate_sync(ctx(root, tool_name="shell.run", command="ls")).action == A.ALLOW
    assert path_rule.evaluate_sync(ctx(root, write_paths=["src/a.py"])).action == A.DENY
    assert (
        path_rule.evaluate_sync(ctx(root, tool_name="fs.read", read_paths=["src/a.py"])).action
        == A.DENY
    )
    assert (
        path_rule.evaluate_sync(ctx(root, tool_name="web.fetch", network=True)).action == A.ASK_USER
    )
    docs_rule = engine_for(home, "rules:\n  - action: deny\n    path: 'docs/**'\n")
    assert docs_rule.evaluate_sync(ctx(root, write_paths=["src/a.py"])).action == A.ALLOW
    assert docs_rule.evaluate_sync(ctx(root, write_paths=["docs/x.md"])).action == A.DENY
    tool_rule = engine_for(home, "rules:\n  - action: allow\n    tool: 'web.*'\n")
    ev = tool_rule.explain(ctx(root, tool_name="web.fetch", network=True))
    assert only(ev, "network").action == A.ALLOW
    assert ev.decision.action == A.ALLOW
    assert (
        tool_rule.evaluate_sync(ctx(root, tool_name="curl.run", network=True)).action == A.ASK_USER
    )
    tool_deny = engine_for(home, "rules:\n  - action: deny\n    tool: 'fs.write'\n")
    assert tool_deny.evaluate_sync(ctx(root, write_paths=["src/a.py"])).action == A.DENY
    assert (
        tool_deny.evaluate_sync(ctx(root, tool_name="fs.read", read_paths=["src/a.py"])).action
        == A.ALLOW
    )
    # a dynamic path is matched by its text
    dyn = engine_for(home, "rules:\n  - action: allow\n    path: 'src/**'\n")
    assert dyn.evaluate_sync(ctx(root, write_paths=["src/$(id).py"])).action == A.ASK_USER


def test_an_allow_covers_sensitive_items_only_when_specific_and_marked(
    root: Path, home: Path
) -> None:
    key = str(home / ".ssh" / "id_rsa")
    broad = engine_for(home, "rules:\n  - action: allow\n    tool: 'fs.*'\n")
    item = only(broad.explain(ctx(root, write_paths=[key])), "write")
    assert item.action == A.ASK_USER
    assert item.reason.endswith("; a broad allow does not cover credentials or system paths")
    wildcard = engine_for(home, "rules:\n  - action: allow\n    path: '**'\n    sensitive: true\n")
    assert wildcard.evaluate_sync(ctx(root, write_paths=[key])).action == A.ASK_USER
    unmarked = engine_for(home, f"rules:\n  - action: allow\n    path: '{key}'\n")
    assert unmarked.evaluate_sync(ctx(root, write_paths=[key])).action == A.ASK_USER
    specific = engine_for(
        home, f"rules:\n  - action: allow\n    path: '{key}'\n    sensitive: true\n"
    )
    item = only(specific.explain(ctx(root, write_paths=[key])), "write")
    assert (item.action, item.layer) == (A.ALLOW, "2-profile")
    # template denials (.air, reviewer) are lifted only the same way
    air = engine_for(home, "rules:\n  - action: allow\n    path: '.air/**'\n")
    assert air.evaluate_sync(ctx(root, write_paths=[".air/local/x"])).action == A.DENY
    air_marked = engine_for(
        home, "rules:\n  - action: allow\n    path: '.air/local/x'\n    sensitive: true\n"
    )
    assert air_marked.evaluate_sync(ctx(root, write_paths=[".air/local/x"])).action == A.ALLOW
    air_broad_marked = engine_for(
        home, "rules:\n  - action: allow\n    path: '**'\n    sensitive: true\n"
    )
    assert air_broad_marked.evaluate_sync(ctx(root, write_paths=[".air/local/x"])).action == A.DENY


# -- layer 6 and the decision --------------------------------------------------------------------


def test_headless_fails_closed_unless_allowed_and_never_for_sensitive(
    root: Path, home: Path
) -> None:
    curl = ctx(root, tool_name="shell.run", command="curl https://x.org", headless=True)
    ev = engine_for(home).explain(curl)
    seg = only(ev, "command")
    assert (seg.action, seg.layer) == (A.DENY, "6-prompt")
    assert seg.reason.endswith(
        "; headless mode cannot ask, so it fails closed "
        "(add an allow rule to permissions.yaml to permit it)"
    )
    assert ev.decision.action == A.DENY
    assert ev.decision.required_confirmation is False
    lenient = engine_for(home, headless_allow_ask=True)
    seg = only(lenient.explain(curl), "command")
    assert (seg.action, seg.layer) == (A.ANNOUNCE_THEN_RUN, "6-prompt")
    assert seg.reason.endswith("; headless runs may proceed (headless_allow_ask)")
    from_policy = engine_for(home, "headless_allow_ask: true\nrules: []\n")
    assert from_policy.headless_allow_ask is True
    assert from_policy.evaluate_sync(curl).action == A.ANNOUNCE_THEN_RUN
    key = str(home / ".ssh" / "id_rsa")
    sensitive = ctx(root, write_paths=[key], headless=True)
    assert lenient.evaluate_sync(sensitive).action == A.DENY
    # items that do not ask are left alone
    ls = ctx(root, tool_name="shell.run", command="ls", headless=True)
    assert only(engine_for(home).explain(ls), "command").layer == "4-risk"
    interactive = engine_for(home).evaluate_sync(curl.model_copy(update={"headless": False}))
    assert interactive.action == A.ASK_USER
    assert interactive.required_confirmation is True


def test_the_decision_is_the_worst_items_with_the_highest_risk(root: Path, home: Path) -> None:
    engine = engine_for(home)
    ev = engine.explain(
        ctx(
            root,
            tool_name="shell.run",
            command="ls && git commit -m x && curl https://x.org && make",
            write_paths=["src/a.py", "/etc/hosts"],
        )
    )
    d = ev.decision
    assert d.action == A.ASK_USER
    assert d.risk_level == "critical"
    assert d.layer == "5-sensitive"  # the first asking item: /etc/hosts
    assert d.grant_scope == PermissionGrantScope.ONCE
    assert d.backup_required is False
    asking = [i.reason for i in ev.items if i.action == A.ASK_USER]
    assert d.reason == "; ".join(asking)
    allowed = engine.explain(ctx(root, tool_name="shell.run", command="ls; pwd; make; ls -l; id"))
    assert allowed.decision.action == A.ALLOW
    reasons = [i.reason for i in allowed.items]
    assert allowed.decision.reason == "allowed: " + "; ".join(reasons[:3])
    assert allowed.decision.layer == "1-declaration"
    assert allowed.decision.risk_level == "low"
    many = engine.explain(
        ctx(
            root,
            tool_name="shell.run",
            command="; ".join(f"curl https://x{i}.org" for i in range(8)),
        )
    )
    assert many.decision.reason == "; ".join(i.reason for i in items(many, "command")[:6])
    announce = engine.explain(ctx(root, tool_name="shell.run", command="ls && git commit -m x"))
    assert announce.decision.action == A.ANNOUNCE_THEN_RUN
    assert announce.decision.reason == items(announce, "command")[1].reason
    assert announce.decision.required_confirmation is False
    assert announce.pending == []
    assert [i.key for i in ev.pending] == [i.key for i in ev.items if i.action == A.ASK_USER]


# -- grants --------------------------------------------------------------------------------------


def test_grants_are_per_item_and_scope_and_skip_sensitive_items(root: Path, home: Path) -> None:
    engine = engine_for(home)
    key = str(home / ".ssh" / "id_rsa")
    mixed = ctx(root, tool_name="shell.run", command="curl https://x.org", write_paths=[key])
    assert engine.grant(mixed, PermissionGrantScope.ONCE) == [key, "curl https://x.org"]
    assert engine.evaluate_sync(mixed).action == A.ASK_USER
    granted = engine.grant(mixed, PermissionGrantScope.TASK)
    assert granted == ["curl https://x.org"]
    ev = engine.explain(mixed)
    seg = only(ev, "command")
    assert (seg.action, seg.layer) == (A.ALLOW, "6-grant")
    assert seg.reason.endswith("; approved earlier")
    assert only(ev, "write").action == A.ASK_USER
    # a grant given headless-free still serves headless calls
    curl = ctx(root, tool_name="shell.run", command="curl https://x.org", headless=True)
    assert engine.evaluate_sync(curl).action == A.ALLOW
    # TASK without a task id falls back to the session
    no_task = ctx(root, tool_name="shell.run", command="wget https://y.org", task_id=None)
    engine.grant(no_task, PermissionGrantScope.TASK)
    other_task = ctx(root, tool_name="shell.run", command="wget https://y.org", task_id="task_9")
    assert engine.evaluate_sync(other_task).action == A.ALLOW
    other_session = other_task.model_copy(update={"session_id": "ses_2"})
    assert engine.evaluate_sync(other_session).action == A.ASK_USER
    # nothing pending, nothing granted
    assert (
        engine.grant(ctx(root, tool_name="shell.run", command="ls"), PermissionGrantScope.SESSION)
        == []
    )


# -- recording -----------------------------------------------------------------------------------


async def test_record_redacts_and_reports_a_missing_or_failing_sink(root: Path, home: Path) -> None:
    seen: list[RuntimeEvent] = []

    async def sink(event: RuntimeEvent) -> None:
        seen.append(event)

    redactor = SecretRedactor(["hunter2-secret"])
    engine = engine_for(home, redactor=redactor, sink=sink)
    context = ctx(
        root,
        tool_name="shell.run",
        command="echo hunter2-secret",
        agent_id="agt_1",
    )
    decision = await engine.evaluate(context)
    decision = decision.model_copy(update={"reason": "saw hunter2-secret"})
    result = await engine.record(decision, context, tool_run_id="tr_1")
    assert result.ok is True
    assert result.error is None
    assert len(seen) == 1
    event = seen[0]
    assert result.event_id == event.id
    assert event.type == "permission.decision.recorded"
    assert event.session_id == "ses_1"
    assert event.source.kind == "tool"
    assert event.source.id == "shell.run"
    payload = event.payload
    assert payload["subject"] == "echo [REDACTED]"
    assert payload["decision"]["reason"] == "saw [REDACTED]"
    assert payload["decision"]["action"] == "allow"
    assert (
        payload["tool_name"],
        payload["tool_run_id"],
        payload["task_id"],
        payload["agent_id"],
    ) == (
        "shell.run",
        "tr_1",
        "task_1",
        "agt_1",
    )
    paths = ctx(root, write_paths=["src/hunter2-secret"], read_paths=["src/a.py"])
    await engine.record(decision, paths)
    assert seen[-1].payload["subject"] == "src/[REDACTED], src/a.py"
    assert seen[-1].payload["tool_run_id"] is None
    await engine.record(decision, ctx(root, tool_name="web.fetch", network=True))
    assert seen[-1].payload["subject"] is None

    missing = await engine_for(home).record(decision, context)
    assert missing.ok is False
    assert missing.event_id is None
    assert missing.error is not None
    assert missing.error.kind == "system_error"
    assert missing.error.message == "the permission engine has no event sink"
    assert missing.error.user_action == "Construct PermissionEngine with sink=<ingestor.ingest>."

    async def broken(event: RuntimeEvent) -> None:
        raise OSError("disk full")

    failed = await engine_for(home, sink=broken).record(decision, context)
    assert failed.ok is False
    assert failed.error is not None
    assert failed.error.kind == "storage_error"
    assert failed.error.message == "recording the decision failed: disk full"
    assert failed.error.user_action == "Check the session database (air doctor)."


def test_from_files_reads_both_policies_and_points_home(root: Path, home: Path) -> None:
    (home / ".air").mkdir()
    (home / ".air" / "permissions.yaml").write_text(
        "rules:\n  - action: deny\n    command: 'curl *'\n"
    )
    (root / ".air" / "shared").mkdir()
    (root / ".air" / "shared" / "permissions.yaml").write_text(
        "headless_allow_ask: true\nrules:\n  - action: allow\n    command: 'wget *'\n"
    )
    engine = PermissionEngine.from_files(str(root), home=str(home))
    assert engine.classifier.home == str(home)
    assert engine.headless_allow_ask is True
    assert [r.action for r in engine.policy.rules] == ["deny", "allow"]
    assert (
        engine.evaluate_sync(ctx(root, tool_name="shell.run", command="curl https://x")).action
        == A.DENY
    )
    assert (
        engine.evaluate_sync(ctx(root, tool_name="shell.run", command="wget https://x")).action
        == A.ALLOW
    )
    key = engine.explain(ctx(root, tool_name="fs.read", read_paths=["~/.ssh/id_rsa"]))
    assert only(key, "read").action == A.ASK_USER


def test_default_collaborators() -> None:
    engine = PermissionEngine()
    assert engine.policy == PermissionPolicy()
    assert engine.headless_allow_ask is False
    assert engine.sink is None
    assert engine.classifier.home == os.path.realpath(os.path.expanduser("~"))
    assert isinstance(engine.redactor, SecretRedactor)
    rule = PolicyRule(action="allow", command="ls")
    assert PermissionEngine(policy=PermissionPolicy(rules=(rule,))).policy.rules == (rule,)


def test_a_commands_build_directory_is_not_bounded_by_the_write_area(
    root: Path, home: Path
) -> None:
    """Where a build tool works (``cmake -S . -B build/x``, ``make -C docs``) is not a source
    edit: a task whose write area is one source file may still build there; a redirect into a
    file outside the area is still blocked, an explicit write into the build directory is still
    bounded, denied paths still deny and a tool moved outside the project still asks."""
    engine = engine_for(home)
    build = ctx(
        root, tool_name="shell.run", command="cmake -S . -B build/x", write_area=["src/a.py"]
    )
    assert [i.action for i in items(engine.explain(build), "write")] == [A.ALLOW, A.ALLOW]
    configure = ctx(root, tool_name="shell.run", command="make -C docs", write_area=["src/a.py"])
    assert [i.action for i in items(engine.explain(configure), "write")] == [A.ALLOW]
    redirect = ctx(
        root, tool_name="shell.run", command="make -C docs > docs/x", write_area=["src/a.py"]
    )
    assert sorted(i.action for i in items(engine.explain(redirect), "write")) == [
        A.ALLOW,
        A.BLOCK,
    ]
    explicit = ctx(root, write_paths=["build/x/y.o"], write_area=["src/a.py"])
    assert only(engine.explain(explicit), "write").action == A.BLOCK
    denied = ctx(root, tool_name="shell.run", command="cmake -B build/x", denied_paths=["build"])
    assert [i.action for i in items(engine.explain(denied), "write")] == [A.DENY]
    outside = ctx(root, tool_name="shell.run", command="make -C ../elsewhere")
    assert [i.action for i in items(engine.explain(outside), "write")] == [A.ASK_USER]


def test_items_carry_their_key_and_classification_in_every_branch(root: Path, home: Path) -> None:
    workspace = root / ".air" / "local" / "wt"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "a.py").write_text("x\n")
    os.link(workspace / "src" / "a.py", root.parent / "elsewhere" / "twin.py")
    os.symlink(root.parent / "elsewhere", workspace / "out")
    engine = engine_for(home)
    wsa = str(workspace / "src" / "a.py")

    def write(path: str, **kw: Any) -> Item:
        return only(
            engine.explain(ctx(root, workspace_root=str(workspace), write_paths=[path], **kw)),
            "write",
        )

    def read(path: str, **kw: Any) -> Item:
        return only(
            engine.explain(
                ctx(
                    root,
                    tool_name="fs.read",
                    workspace_root=str(workspace),
                    read_paths=[path],
                    **kw,
                )
            ),
            "read",
        )

    # relative paths are the workspace's; a hard-linked file is a link out only for writes
    hard = write("src/a.py")
    assert (hard.action, hard.key) == (A.DENY, wsa)
    assert hard.path is not None
    assert hard.path.via_link
    assert read("src/a.py").action == A.ALLOW
    for item, action in [
        (write("src/new.py", denied_paths=["src"]), A.DENY),
        (write("src/new.py", write_area=["docs"]), A.BLOCK),
        (write("src/new.py", permission_template=T.REVIEWER), A.DENY),
        (write("src/new.py"), A.ALLOW),
        (read("src/a.py", denied_paths=[str(workspace / "src")]), A.DENY),
        (read("src/a.py"), A.ALLOW),
    ]:
        assert item.action == action, item
        assert item.key.startswith(str(workspace / "src")), item
        assert item.path is not None
        assert item.path.resolved_path == item.key
    link = write("out/f")
    assert (link.action, link.key) == (A.DENY, str(root.parent / "elsewhere" / "f"))
    assert link.path is not None
    key = str(home / ".ssh" / "id_rsa")
    cred = read(key)
    assert (cred.key, cred.path is not None) == (key, True)
    dynamic_read = read("$X")
    assert (dynamic_read.key, dynamic_read.path is not None) == ("$X", True)
    dynamic_write = write("$X")
    assert (dynamic_write.key, dynamic_write.path is not None) == ("$X", True)
    net = only(
        engine.explain(ctx(root, tool_name="web.get", network=True, network_granted=True)),
        "network",
    )
    assert net.key == "web.get"


def test_home_rules_and_scope_denials_that_no_allow_lifts(root: Path, home: Path) -> None:
    notes = home / "notes"
    notes.mkdir()
    engine = engine_for(home, "rules:\n  - action: deny\n    path: '~/notes/**'\n")
    assert engine.evaluate_sync(ctx(root, write_paths=[str(notes / "x")])).action == A.DENY
    assert engine.evaluate_sync(ctx(root, write_paths=[str(home / "other")])).action == A.ASK_USER
    specific = engine_for(
        home, "rules:\n  - action: allow\n    path: 'src/a.py'\n    sensitive: true\n"
    )
    denied = ctx(root, write_paths=["src/a.py"], denied_paths=["src"])
    assert only(specific.explain(denied), "write").action == A.DENY
    read_denied = ctx(root, tool_name="fs.read", read_paths=["src/a.py"], denied_paths=["src"])
    assert only(specific.explain(read_denied), "read").action == A.DENY
    lenient = PermissionEngine.from_files(str(root), home=str(home), headless_allow_ask=True)
    assert lenient.headless_allow_ask is True
