"""PermissionEngine: the six-layer decision of SDD §9.2 over one tool call.

Owns ``PermissionEngine`` (``evaluate_sync`` core, async ``evaluate``, ``grant``, ``record``),
the per-role templates and the grant book. The layers, in order:

1. tool capability declaration (a tool writing without declaring writes → ``refuse``);
2. permission profile: the role's template plus the policy files' allow/ask/deny rules;
3. task scope: ``denied_paths`` → ``deny``, outside ``write_area``/``allowed_paths`` → ``block``;
4. path / command / network risk classification;
5. credential / system-sensitive override (only a specific ``sensitive: true`` rule allows);
6. the user prompt: grants already given, ``ask_user``, or headless fail-closed.

Every write path and every command segment is an *item* decided on its own; the call's action is
the worst item's, and grants are stored per item, so approving one segment of a compound command
never approves another.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from air.contracts.error import ErrorKind, make_air_error
from air.contracts.event import EventSource, RuntimeEvent, new_event
from air.contracts.permission import (
    CommandCategory,
    PathCategory,
    PermissionAction,
    PermissionGrantScope,
    RiskLevel,
)
from air.contracts.runtime import PermissionTemplate
from air.security.commands import CommandRiskAnalyzer
from air.security.external import external_tool, not_for_tool
from air.security.paths import PathClassifier, in_write_area_entry, is_within
from air.security.policy import (
    PermissionPolicy,
    PolicyRule,
    load_policy,
    policy_files,
    rule_matches_command,
    rule_matches_path,
    rule_matches_tool,
)
from air.security.redact import SecretRedactor

if TYPE_CHECKING:  # built at the first permission check (IMPL-BOOT-12)
    from air.contracts.permission_records import (
        CommandRiskAnalysis,
        PathRiskClassification,
        PermissionDecision,
        PermissionRecordResult,
        PermissionRequestContext,
    )

__all__ = ["Evaluation", "EventSink", "Item", "PermissionEngine"]

A = PermissionAction
C = CommandCategory
P = PathCategory
EventSink = Callable[[RuntimeEvent], Awaitable[object]]

_ACTION_ORDER = {
    A.ALLOW: 0,
    A.ANNOUNCE_THEN_RUN: 1,
    A.ASK_USER: 2,
    A.BLOCK: 3,
    A.DENY: 4,
    A.REFUSE: 5,
}
_RISK_ORDER: dict[RiskLevel, int] = {"none": 0, "low": 1, "medium": 2, "high": 3, "critical": 4}

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


@dataclass(eq=False)
class Item:
    """One thing decided on its own: the tool, a read path, a write path or a command segment."""

    kind: str
    key: str
    action: PermissionAction
    risk: RiskLevel
    reason: str
    layer: str
    sensitive: bool = False
    path: PathRiskClassification | None = None
    category: CommandCategory | None = None


class Evaluation(NamedTuple):
    """The full picture behind a decision: every item and the analysis it came from; a
    read-only record, so a NamedTuple (IMPL-BOOT-14)."""

    decision: PermissionDecision
    items: list[Item]
    command: CommandRiskAnalysis | None = None

    @property
    def pending(self) -> list[Item]:
        """Items that still need the person's approval."""
        return [i for i in self.items if i.action == A.ASK_USER]


def _worse(a: PermissionAction, b: PermissionAction) -> bool:
    return _ACTION_ORDER[a] > _ACTION_ORDER[b]


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
        self._grants: set[tuple[str, str, str]] = set()

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
        project = os.path.realpath(ctx.project_root)
        workspace = os.path.realpath(ctx.workspace_root)
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

        declared = f"{ctx.tool_name} is declared"
        tool_item = Item("tool", ctx.tool_name, A.ALLOW, "none", declared, "1-declaration")
        external = external_tool(ctx)  # an MCP server's tool asks (IMPL-MCP-2)
        items.append(tool_item if external is None else Item(**external))

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
            cls = self.classifier.classify(raw, project, workspace_root=workspace, for_write=True)
            # where a build tool works (cmake -B build, make -C sub) inside the workspace is
            # not a source edit: the write area does not bound it, denied paths do (IMPL-CLS-6)
            works_in = raw in tool_targets and cls.category in _WORKSPACE_CATEGORIES
            items.append(
                self._write_item(ctx, cls, template, project, workspace, tool_dir=works_in)
            )
        for raw in read_paths:
            cls = self.classifier.classify(raw, project, workspace_root=workspace)
            items.append(self._read_item(ctx, cls, project))
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
            self._apply_rules(ctx, item, project, home)
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
            d = self._scope_path(denied, workspace)
            if is_within(resolved, d):
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
        if (
            area is not None
            and not tool_dir
            and not any(in_write_area_entry(resolved, self._scope_path(a, workspace)) for a in area)
        ):
            return Item(
                "write",
                key,
                A.BLOCK,
                "medium",
                f"{cls.path} is outside the task's write area",
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
        self, ctx: PermissionRequestContext, cls: PathRiskClassification, project: str
    ) -> Item:
        key = cls.resolved_path or cls.path
        for denied in ctx.denied_paths or []:
            if cls.resolved_path and is_within(
                cls.resolved_path, self._scope_path(denied, project)
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

    def _scope_path(self, value: str, base: str) -> str:
        expanded = self.classifier.expand(value, base) or value
        return os.path.realpath(expanded)

    def _apply_rules(
        self, ctx: PermissionRequestContext, item: Item, project: str, home: str
    ) -> None:
        if item.action in (A.REFUSE, A.BLOCK) or (
            item.action == A.DENY and item.layer == "3-scope"
        ):
            return
        if item.path is not None and item.path.via_link:
            return
        matched: list[PolicyRule] = []
        for rule in self.policy.rules:
            if not rule_matches_tool(rule, ctx.tool_name):
                continue
            if item.kind in ("write", "read"):
                if rule.command is not None or rule.category is not None:
                    continue
                # a path item's key is its resolved path when there is one (_write_item)
                if not rule_matches_path(rule, item.key, project, home):
                    continue
            elif item.kind == "command":
                if rule.path is not None:
                    continue
                if not rule_matches_command(rule, item.key, item.category):
                    continue
            elif not_for_tool(rule, item.category):
                continue
            matched.append(rule)
        if not matched:
            return
        deny = next((r for r in matched if r.action == "deny"), None)
        if deny is not None:
            item.action, item.layer = A.DENY, "2-profile"
            item.reason = f"{item.reason}; denied by a rule in {deny.source}" + (
                f" ({deny.reason})" if deny.reason else ""
            )
            return
        ask = next((r for r in matched if r.action == "ask"), None)
        if ask is not None:
            if _worse(A.ASK_USER, item.action):
                item.action, item.layer = A.ASK_USER, "2-profile"
                item.reason = f"{item.reason}; a rule in {ask.source} asks"
            return
        allow = matched[0]
        if item.action == A.DENY:
            # Template denials (reviewer, .air) are not lifted by a broad allow.
            if not (allow.sensitive and allow.is_specific):
                return
        if item.sensitive and not (allow.sensitive and allow.is_specific):
            item.reason = f"{item.reason}; a broad allow does not cover credentials or system paths"
            return
        item.action, item.layer = A.ALLOW, "2-profile"
        item.reason = f"{item.reason}; allowed by a rule in {allow.source}"

    def _finish(
        self, ctx: PermissionRequestContext, items: list[Item], analysis: CommandRiskAnalysis | None
    ) -> Evaluation:
        from air.contracts.permission_records import PermissionDecision

        # Layer 6: grants, prompt or headless fail-closed.
        for item in items:
            if item.action == A.ASK_USER and self._granted(ctx, item):
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
            if _worse(item.action, worst.action):
                worst = item
            if _RISK_ORDER[item.risk] > _RISK_ORDER[risk]:
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

    def _scope_keys(self, ctx: PermissionRequestContext) -> list[str]:
        keys = [f"session:{ctx.session_id}", f"project:{os.path.realpath(ctx.project_root)}"]
        if ctx.task_id:
            keys.append(f"task:{ctx.task_id}")
        return keys

    def _granted(self, ctx: PermissionRequestContext, item: Item) -> bool:
        return any((scope, item.kind, item.key) in self._grants for scope in self._scope_keys(ctx))

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
        if scope == PermissionGrantScope.TASK:
            if not ctx.task_id:
                scope_key = f"session:{ctx.session_id}"
            else:
                scope_key = f"task:{ctx.task_id}"
        elif scope == PermissionGrantScope.SESSION:
            scope_key = f"session:{ctx.session_id}"
        else:
            scope_key = f"project:{os.path.realpath(ctx.project_root)}"
        for item in pending:
            if item.sensitive:
                continue
            self._grants.add((scope_key, item.kind, item.key))
        return [i.key for i in pending if not i.sensitive]

    # -- recording ---------------------------------------------------------------------------

    async def record(
        self,
        decision: PermissionDecision,
        context: PermissionRequestContext,
        *,
        tool_run_id: str | None = None,
    ) -> PermissionRecordResult:
        """Write ``permission.decision.recorded`` through the sink (contracts §13).

        The payload follows ``air.events.payloads.PermissionDecisionRecordedPayload``: the
        decision (reason redacted), the tool, the ids, and the subject judged (the command,
        else the paths), redacted.

        Returns:
            ``ok`` with the event id, or ``ok=False`` with the error when the write failed.
        """
        from air.contracts.permission_records import PermissionRecordResult

        if context.command:
            subject: str | None = self.redactor.redact(context.command)
        else:
            paths = [*context.write_paths, *context.read_paths]
            subject = self.redactor.redact(", ".join(paths)) if paths else None
        redacted = decision.model_copy(update={"reason": self.redactor.redact(decision.reason)})
        payload = {
            "decision": redacted.model_dump(mode="json", exclude_none=True),
            "tool_name": context.tool_name,
            "tool_run_id": tool_run_id,
            "task_id": context.task_id,
            "agent_id": context.agent_id,
            "subject": subject,
        }
        event = new_event(
            "permission.decision.recorded",
            payload,
            session_id=context.session_id,
            source=EventSource(kind="tool", id=context.tool_name),
        )
        if self.sink is None:
            return PermissionRecordResult(
                ok=False,
                error=make_air_error(
                    kind=ErrorKind.SYSTEM_ERROR,
                    message="the permission engine has no event sink",
                    user_action="Construct PermissionEngine with sink=<ingestor.ingest>.",
                ),
            )
        try:
            await self.sink(event)
        except Exception as exc:  # the contract turns a failed write into a value
            return PermissionRecordResult(
                ok=False,
                error=make_air_error(
                    kind=ErrorKind.STORAGE_ERROR,
                    message=f"recording the decision failed: {exc}",
                    user_action="Check the session database (air doctor).",
                ),
            )
        return PermissionRecordResult(ok=True, event_id=event.id)
