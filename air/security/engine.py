"""PermissionEngine: the six-layer decision of SDD §9.2 over one tool call.

Owns ``PermissionEngine`` (``evaluate_sync`` core, async ``evaluate``, ``explain``, ``grant``,
``record``), the per-role templates and the base action of each command and path category.
The layers, in order:

1. tool capability declaration (a tool writing without declaring writes → ``refuse``);
2. permission profile: the role's template plus the policy files' allow/ask/deny rules
   (``air.security.profile``);
3. task scope: ``denied_paths`` → ``deny``, outside ``write_area``/``allowed_paths`` → ``block``
   (an entry is the project's path and its place in the task's worktree or copy,
   ``PathClassifier.scope_places``), and a task's write of AGENTS.md, CLAUDE.md or a ``.git*``
   file no entry names → ``block`` (the merge's rule, ``protected_part``);
4. path / command / network risk classification;
5. credential / system-sensitive override (only a specific ``sensitive: true`` rule allows);
6. the user prompt: grants already given (``air.security.grants``), ``ask_user``, or headless
   fail-closed.

Every write path and every command segment is an *item* (``air.security.items``) decided on its
own; the call's action is the worst item's, and grants are stored per item, so approving one
segment of a compound command never approves another. Recording a decision is
``air.security.recording``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from air.contracts.permission import (
    CommandCategory,
    PathCategory,
    PermissionAction,
    PermissionGrantScope,
    RiskLevel,
)
from air.contracts.runtime import PermissionTemplate
from air.security.commands import CommandRiskAnalyzer
from air.security.external import external_item
from air.security.grants import GrantBook, scope_key
from air.security.items import RISK_ORDER, Evaluation, Item, worse
from air.security.paths import (
    PROTECTED_NAMES,
    PathClassifier,
    in_write_area_entry,
    names_protected,
    protected_part,
    resolve_root,
)
from air.security.policy import PermissionPolicy, load_policy, policy_files
from air.security.profile import apply_rules
from air.security.recording import EventSink, record_decision
from air.security.redact import SecretRedactor

if TYPE_CHECKING:  # built at the first permission check (IMPL-BOOT-12)
    from air.contracts.permission_records import (
        CommandRiskAnalysis,
        PathRiskClassification,
        PermissionDecision,
        PermissionRecordResult,
        PermissionRequestContext,
    )

__all__ = ["PermissionEngine"]

A = PermissionAction
C = CommandCategory
P = PathCategory

_COMMAND_BASE: dict[CommandCategory, tuple[PermissionAction, RiskLevel]] = {
    C.READ_ONLY: (A.ALLOW, "none"),
    C.BUILD_TEST: (A.ALLOW, "low"),
    C.FILE_MUTATION: (A.ALLOW, "low"),
    C.VCS_MUTATION: (A.ANNOUNCE_THEN_RUN, "low"),
    C.PACKAGE_INSTALL: (A.ASK_USER, "medium"),
    C.NETWORK: (A.ASK_USER, "medium"),
    C.PROCESS_CONTROL: (A.ASK_USER, "medium"),
    C.DESTRUCTIVE: (A.ASK_USER, "high"),
    C.PRIVILEGED: (A.ASK_USER, "critical"),
    C.OPAQUE: (A.ASK_USER, "high"),
}
_WRITE_BASE: dict[PathCategory, tuple[PermissionAction, RiskLevel]] = {
    P.PROJECT_SOURCE: (A.ALLOW, "low"),
    P.PROJECT_BUILD_OUTPUT: (A.ALLOW, "low"),
    P.PROJECT_GIT_INTERNAL: (A.ASK_USER, "high"),
    P.AIR_INTERNAL: (A.DENY, "high"),
    P.OUTSIDE_PROJECT: (A.ASK_USER, "medium"),
    P.SYSTEM_SENSITIVE: (A.ASK_USER, "critical"),
    P.CREDENTIALS: (A.ASK_USER, "critical"),
    P.UNKNOWN: (A.ASK_USER, "high"),
}
_SENSITIVE = (P.SYSTEM_SENSITIVE, P.CREDENTIALS)
_WORKSPACE_CATEGORIES = (P.PROJECT_SOURCE, P.PROJECT_BUILD_OUTPUT)


class PermissionEngine:
    """Decide tool calls (SDD §9.2). ``evaluate_sync`` is the pure core; ``evaluate`` wraps it.

    Args:
        policy: merged policy rules (see ``air.security.policy``).
        classifier: the PathClassifier (its ``home`` is where ``~`` points).
        analyzer: the CommandRiskAnalyzer.
        redactor: used to redact what ``record`` writes.
        sink: where ``record`` sends ``permission.decision.recorded`` (e.g. an ingestor).
        headless_allow_ask: let headless calls that would ask run (sensitive ones still fail).
    """

    def __init__(
        self,
        *,
        policy: PermissionPolicy | None = None,
        classifier: PathClassifier | None = None,
        analyzer: CommandRiskAnalyzer | None = None,
        redactor: SecretRedactor | None = None,
        sink: EventSink | None = None,
        headless_allow_ask: bool = False,
    ) -> None:
        self.policy = policy or PermissionPolicy()
        self.classifier = classifier or PathClassifier()
        self.analyzer = analyzer or CommandRiskAnalyzer()
        self.redactor = redactor or SecretRedactor()
        self.sink = sink
        self.headless_allow_ask = headless_allow_ask or self.policy.headless_allow_ask
        self._grants = GrantBook()

    @classmethod
    def from_files(
        cls, project_root: str, *, home: str | None = None, **kwargs: object
    ) -> PermissionEngine:
        """Build an engine with the policies of ``~/.air`` and ``<project>/.air/shared``."""
        policy = load_policy(policy_files(project_root, home))
        classifier = PathClassifier(home=home)
        return cls(policy=policy, classifier=classifier, **kwargs)  # type: ignore[arg-type]

    # -- evaluation ------------------------------------------------------------------------

    async def evaluate(self, context: PermissionRequestContext) -> PermissionDecision:
        """Async face of ``evaluate_sync`` (contracts §13)."""
        return self.evaluate_sync(context)

    def evaluate_sync(self, context: PermissionRequestContext) -> PermissionDecision:
        """Decide ``context`` synchronously; see ``explain`` for the items behind it."""
        return self.explain(context).decision

    def explain(self, ctx: PermissionRequestContext) -> Evaluation:
        """Run the six layers and return the decision with every item behind it."""
        items: list[Item] = []
        home = self.classifier.home
        project = resolve_root(ctx.project_root)
        workspace = resolve_root(ctx.workspace_root)
        base = ctx.cwd or workspace
        template = ctx.permission_template
        analysis: CommandRiskAnalysis | None = None

        # Layer 1: the tool's own declaration.
        if ctx.declared is not None:
            undeclared = []
            if ctx.write_paths and not ctx.declared.write:
                undeclared.append("writes")
            if ctx.command is not None and not ctx.declared.execute:
                undeclared.append("runs commands")
            if ctx.network and not ctx.declared.network:
                undeclared.append("uses the network")
            if undeclared:
                items.append(
                    Item(
                        "tool",
                        ctx.tool_name,
                        A.REFUSE,
                        "high",
                        f"{ctx.tool_name} {', '.join(undeclared)} without declaring it",
                        "1-declaration",
                    )
                )
                return self._finish(ctx, items, None)

        tool_item = external_item(ctx) or Item(  # an MCP server's tool asks (IMPL-MCP-2)
            "tool", ctx.tool_name, A.ALLOW, "none", f"{ctx.tool_name} is declared", "1-declaration"
        )
        items.append(tool_item)

        write_paths = list(ctx.write_paths)
        read_paths = list(ctx.read_paths)
        tool_targets: set[str] = set()
        if ctx.command is not None:
            analysis = self.analyzer.analyze(ctx.command, base)
            for target in analysis.write_targets:
                if target not in write_paths:
                    write_paths.append(target)
            tool_targets.update(analysis.tool_targets)
            # Whatever the program, a path it is given is read: credentials ask (item 4).
            read_paths.extend(t for t in analysis.read_targets if t not in read_paths)

        # Layers 3-5 for each write path.
        for raw in write_paths:
            cls = self.classifier.classify(
                raw, project, workspace_root=workspace, for_write=True, roots_resolved=True
            )
            # where a build tool works (cmake -B build, make -C sub) inside the workspace is
            # not a source edit: the write area does not bound it, denied paths do (IMPL-CLS-6)
            works_in = raw in tool_targets and cls.category in _WORKSPACE_CATEGORIES
            items.append(
                self._write_item(ctx, cls, template, project, workspace, tool_dir=works_in)
            )
        for raw in read_paths:
            cls = self.classifier.classify(
                raw, project, workspace_root=workspace, roots_resolved=True
            )
            items.append(self._read_item(ctx, cls, project, workspace))
        if analysis is not None:
            area = ctx.write_area if ctx.write_area is not None else ctx.allowed_paths
            for seg in analysis.segments:
                action, risk = _COMMAND_BASE[seg.category]
                reason = f"`{seg.text}`: {seg.reason}"
                layer = "4-risk"
                if seg.category == C.NETWORK and ctx.network_granted:
                    action = A.ANNOUNCE_THEN_RUN
                if seg.category == C.VCS_MUTATION and area == []:
                    # a VCS change moves the work tree (checkout, stash) or .git: no write target
                    # shows it, so a task without a write area is refused it here (IMPL-CLS-7)
                    action, layer = A.BLOCK, "3-scope"
                    reason = f"the task has no write area: {reason}"
                if template == PermissionTemplate.REVIEWER and seg.category not in (
                    C.READ_ONLY,
                    C.BUILD_TEST,
                ):
                    action, reason = A.DENY, f"the reviewer template is read-only: {reason}"
                items.append(
                    Item("command", seg.text, action, risk, reason, layer, category=seg.category)
                )
        if ctx.network:
            if ctx.network_granted:
                items.append(
                    Item(
                        "network",
                        ctx.tool_name,
                        A.ANNOUNCE_THEN_RUN,
                        "medium",
                        "network granted",
                        "4-risk",
                    )
                )
            else:
                items.append(
                    Item(
                        "network",
                        ctx.tool_name,
                        A.ASK_USER,
                        "medium",
                        "the tool uses the network",
                        "4-risk",
                    )
                )
        if ctx.system_sensitive:
            items.append(
                Item(
                    "tool",
                    f"{ctx.tool_name}#system",
                    A.ASK_USER,
                    "critical",
                    f"{ctx.tool_name} touches system-sensitive state",
                    "5-sensitive",
                    sensitive=True,
                )
            )

        # Layer 2: policy rules (deny wins; allow never lifts scope results or sensitive items).
        for item in items:
            apply_rules(self.policy, ctx, item, project, home)
        return self._finish(ctx, items, analysis)

    def _write_item(
        self,
        ctx: PermissionRequestContext,
        cls: PathRiskClassification,
        template: PermissionTemplate,
        project: str,
        workspace: str,
        *,
        tool_dir: bool = False,
    ) -> Item:
        key = cls.resolved_path or cls.path
        if cls.via_link:
            return Item(
                "write", key, A.DENY, "high", f"{cls.path}: {cls.reason}", "4-risk", path=cls
            )
        if cls.resolved_path is None:
            return Item(
                "write", key, A.ASK_USER, "high", f"{cls.path}: {cls.reason}", "4-risk", path=cls
            )
        resolved = cls.resolved_path
        # Layer 3: task scope.
        for denied in ctx.denied_paths or []:
            if any(
                in_write_area_entry(resolved, d)  # the merge's rule: a glob matches too
                for d in self.classifier.scope_places(denied, project, workspace)
            ):
                return Item(
                    "write",
                    key,
                    A.DENY,
                    "medium",
                    f"{cls.path} is in the task's denied paths",
                    "3-scope",
                    path=cls,
                )
        area = ctx.write_area if ctx.write_area is not None else ctx.allowed_paths
        places = (
            [workspace]  # the whole project
            if area is None
            else [
                place
                for a in area
                for place in self.classifier.scope_places(a, project, workspace, as_written=False)
            ]
        )
        if area is not None and not tool_dir and not any(_holds(resolved, places)):
            return Item(
                "write",
                key,
                A.BLOCK,
                "medium",
                f"{cls.path} is outside the task's write area",
                "3-scope",
                path=cls,
            )
        if template in _TASK_TEMPLATES and not _named_if_protected(resolved, workspace, places):
            return Item(
                "write",
                key,
                A.BLOCK,
                "medium",
                f"{cls.path} is protected: the task's write area must name it (AGENTS.md, "
                "CLAUDE.md and .git* files are written only so)",
                "3-scope",
                path=cls,
            )
        # Layer 2 template, layer 4 risk, layer 5 sensitive.
        if template == PermissionTemplate.REVIEWER:
            return Item(
                "write",
                key,
                A.DENY,
                "medium",
                "the reviewer template is read-only",
                "2-profile",
                path=cls,
            )
        action, risk = _WRITE_BASE[cls.category]
        layer = "5-sensitive" if cls.category in _SENSITIVE else "4-risk"
        if cls.category == P.AIR_INTERNAL and template == PermissionTemplate.SYSTEM:
            action = A.ALLOW
        return Item(
            "write",
            key,
            action,
            risk,
            f"{cls.path}: {cls.category.value} ({cls.reason})",
            layer,
            sensitive=cls.category in _SENSITIVE,
            path=cls,
        )

    def _read_item(
        self,
        ctx: PermissionRequestContext,
        cls: PathRiskClassification,
        project: str,
        workspace: str,
    ) -> Item:
        key = cls.resolved_path or cls.path
        for denied in ctx.denied_paths or []:
            if cls.resolved_path and any(
                in_write_area_entry(cls.resolved_path, d)  # the merge's rule: a glob too
                for d in self.classifier.scope_places(denied, project, workspace)
            ):
                return Item(
                    "read",
                    key,
                    A.DENY,
                    "medium",
                    f"{cls.path} is in the task's denied paths",
                    "3-scope",
                    path=cls,
                )
        if cls.category == P.CREDENTIALS:
            return Item(
                "read",
                key,
                A.ASK_USER,
                "critical",
                f"{cls.path}: {cls.reason}",
                "5-sensitive",
                sensitive=True,
                path=cls,
            )
        if cls.resolved_path is None:
            return Item(
                "read", key, A.ASK_USER, "medium", f"{cls.path}: {cls.reason}", "4-risk", path=cls
            )
        return Item(
            "read", key, A.ALLOW, "none", f"{cls.path}: reads are allowed", "4-risk", path=cls
        )

    def _finish(
        self, ctx: PermissionRequestContext, items: list[Item], analysis: CommandRiskAnalysis | None
    ) -> Evaluation:
        from air.contracts.permission_records import PermissionDecision

        # Layer 6: grants, prompt or headless fail-closed.
        for item in items:
            if item.action == A.ASK_USER and self._grants.granted(ctx, item):
                item.action, item.layer = A.ALLOW, "6-grant"
                item.reason = f"{item.reason}; approved earlier"
        if ctx.headless:
            for item in items:
                if item.action != A.ASK_USER:
                    continue
                if self.headless_allow_ask and not item.sensitive:
                    item.action, item.layer = A.ANNOUNCE_THEN_RUN, "6-prompt"
                    item.reason = f"{item.reason}; headless runs may proceed (headless_allow_ask)"
                else:
                    item.action, item.layer = A.DENY, "6-prompt"
                    item.reason = (
                        f"{item.reason}; headless mode cannot ask, so it fails closed "
                        "(add an allow rule to permissions.yaml to permit it)"
                    )
        worst = items[0]
        risk: RiskLevel = "none"
        for item in items:
            if worse(item.action, worst.action):
                worst = item
            if RISK_ORDER[item.risk] > RISK_ORDER[risk]:
                risk = item.risk
        reasons = [i.reason for i in items if i.action == worst.action]
        decision = PermissionDecision(
            action=worst.action,
            grant_scope=PermissionGrantScope.ONCE,
            risk_level=risk,
            reason="; ".join(reasons[:6])
            if worst.action != A.ALLOW
            else "allowed: " + "; ".join(reasons[:3]),
            layer=worst.layer,
            required_confirmation=worst.action == A.ASK_USER,
            backup_required=False,
        )
        return Evaluation(decision=decision, items=items, command=analysis)

    # -- grants ------------------------------------------------------------------------------

    def grant(self, ctx: PermissionRequestContext, scope: PermissionGrantScope) -> list[str]:
        """Remember the person's approval of the items ``ctx`` asks about, for ``scope``.

        Only the items pending now are granted (per segment / per path), so a later compound
        command with a new segment asks again. ``once`` stores nothing.

        Returns:
            The keys of the granted items.
        """
        pending = [i for i in self.explain(ctx.model_copy(update={"headless": False})).pending]
        if scope == PermissionGrantScope.ONCE:
            return [i.key for i in pending]
        key = scope_key(ctx, scope)
        for item in pending:
            if item.sensitive:
                continue
            self._grants.add(key, item)
        return [i.key for i in pending if not i.sensitive]

    # -- recording ---------------------------------------------------------------------------

    async def record(
        self,
        decision: PermissionDecision,
        context: PermissionRequestContext,
        *,
        tool_run_id: str | None = None,
    ) -> PermissionRecordResult:
        """Write ``permission.decision.recorded`` through the sink (contracts §13); see
        ``air.security.recording.record_decision``.

        Returns:
            ``ok`` with the event id, or ``ok=False`` with the error when the write failed.
        """
        return await record_decision(
            self.sink, self.redactor, decision, context, tool_run_id=tool_run_id
        )


_TASK_TEMPLATES = (PermissionTemplate.EXECUTOR, PermissionTemplate.DEBUGGER)
"""A task's writers: the protected paths need their scope's naming, as their merge does."""


def _holds(resolved: str, places: list[str]) -> Iterator[str]:
    """The write-area places that hold ``resolved``, lazily (the first answers the area)."""
    return (place for place in places if in_write_area_entry(resolved, place))


def _named_if_protected(resolved: str, workspace: str, places: list[str]) -> bool:
    """Whether a task may write ``resolved`` (in its workspace) as the merge judges it: an
    ordinary path, or a protected one (``protected_part``) that a write-area entry holding it
    (of ``places``) names (``names_protected``). The same rule as the merge's, applied before
    the write: in the project itself (``main``) no merge judges what a task writes."""
    if not resolved.startswith(workspace.rstrip("/") + "/"):
        return True  # outside the workspace (or it): the other layers decide
    rel = resolved[len(workspace.rstrip("/")) + 1 :]
    if "/.git" not in "/" + rel and rel.rsplit("/", 1)[-1] not in PROTECTED_NAMES:
        return True  # no protected component (most writes: no split, no search)
    parts = rel.split("/")
    index = protected_part(parts)
    if index is None or parts[index] in (".git", ".air"):
        return True  # ordinary, or git's and air's own state: their path categories decide
    return names_protected(parts, index, list(_holds(resolved, places)), workspace)
