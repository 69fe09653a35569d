"""CompactionPolicy: when to compact a conversation and how a range is summarised (SDD §10.3).

Owns the trigger (about 70 % of the window, baselines §A.17), the compaction rules files
(built-in → ``~/.air/compaction-rules.md`` → ``<project>/.air/shared/compaction-rules.md``,
Markdown with YAML frontmatter), and ``compact``: choosing the older message range to replace,
asking an injected summariser for the summary and returning a ``CompactionResult``; and the
pieces of compaction as a task (IMPL-ARCH-4): ``pinned_facts`` (acceptance criteria, decision
lines and file paths under edit, kept verbatim), ``chunk_messages`` (an immutable range cut into
chunks that each fit a token budget) and ``render_summary`` (pinned facts first, then the chunk
summaries). It never deletes or edits messages (originals are preserved for backtracking) and
emits no events: ``air.context.compactor`` does that (SDD §19.3).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from air.context.loader import builtin_resource, read_text_file
from air.context.tokens import CHARS_PER_TOKEN, estimate_message_tokens, estimate_tokens
from air.contracts.error import AirException, ErrorKind, Retryability
from air.contracts.ids import new_id
from air.contracts.project import ProjectContext
from air.contracts.runtime import CompactionResult
from air.yamlload import load

__all__ = [
    "CompactionPolicy",
    "CompactionRules",
    "Summariser",
    "chunk_messages",
    "load_compaction_rules",
    "message_text",
    "pinned_facts",
    "pinned_of",
    "render_summary",
]

Summariser = Callable[[Sequence[Mapping[str, Any]], int, str], Awaitable[str]]
"""``(messages_to_replace, summary_token_budget, rules_text) -> summary text`` (an LLM call)."""

_TRUNCATION_MARK = "\n[summary cut to fit]"


class CompactionRules(NamedTuple):
    """The merged compaction rules: trigger, how much recent history stays, and instructions."""

    trigger_ratio: float = 0.7
    keep_recent_messages: int = 6
    instructions: str = ""
    sources: tuple[str, ...] = ()


def _split_frontmatter(text: str, source: str) -> tuple[dict[str, Any], str]:
    if not text.startswith("---"):
        return {}, text
    _, sep, rest = text.partition("\n")
    head, marker, body = rest.partition("\n---")
    if not sep or not marker:
        return {}, text
    try:
        meta = load(head) or {}
    except yaml.YAMLError as exc:
        raise AirException.of(
            kind=ErrorKind.CONFIG_ERROR,
            message=f"{source}: the YAML frontmatter is invalid",
            detail=str(exc),
            user_action=f"Fix the frontmatter between the '---' lines of {source}.",
        ) from exc
    if not isinstance(meta, dict):
        raise AirException.of(
            kind=ErrorKind.CONFIG_ERROR,
            message=f"{source}: the frontmatter must be a mapping",
            user_action=f"Write 'key: value' lines in the frontmatter of {source}.",
        )
    return meta, body.partition("\n")[2]


def _apply(rules: CompactionRules, meta: dict[str, Any], body: str, source: str) -> CompactionRules:
    ratio = meta.get("trigger_ratio", rules.trigger_ratio)
    keep = meta.get("keep_recent_messages", rules.keep_recent_messages)
    if (
        not isinstance(ratio, int | float)
        or isinstance(ratio, bool)
        or not 0 < ratio <= 1
        or not isinstance(keep, int)
        or isinstance(keep, bool)
        or keep < 0
    ):
        raise AirException.of(
            kind=ErrorKind.CONFIG_ERROR,
            message=f"{source}: trigger_ratio must be in (0, 1] and keep_recent_messages >= 0",
            user_action=f"Fix trigger_ratio / keep_recent_messages in {source}.",
        )
    body = body.strip()
    instructions = "\n\n".join(part for part in (rules.instructions, body) if part)
    return CompactionRules(
        trigger_ratio=float(ratio),
        keep_recent_messages=keep,
        instructions=instructions,
        sources=(*rules.sources, source),
    )


def load_compaction_rules(
    *,
    user_air_dir: str | os.PathLike[str] | None = None,
    project: ProjectContext | None = None,
) -> CompactionRules:
    """Merge the built-in rules, then ``~/.air/compaction-rules.md``, then the project's.

    Later files override frontmatter keys and append their instructions.

    Raises:
        AirException: ``config_error`` for invalid frontmatter or values.
    """
    rules = CompactionRules()
    meta, body = _split_frontmatter(builtin_resource("compaction-rules.md"), "builtin")
    rules = _apply(rules, meta, body, "builtin:compaction-rules.md")
    user_dir = Path(user_air_dir) if user_air_dir is not None else Path.home() / ".air"
    paths = [user_dir / "compaction-rules.md"]
    if project is not None:
        paths.append(Path(project.shared_root) / "compaction-rules.md")
    for path in paths:
        if path.is_file():
            meta, body = _split_frontmatter(read_text_file(path), str(path))
            rules = _apply(rules, meta, body, str(path))
    return rules


def _content(message: Mapping[str, Any]) -> Any:
    if "content" in message:
        return message["content"]
    raw = message.get("content_json")
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def _canonical(message: Mapping[str, Any]) -> dict[str, Any]:
    return {"role": message.get("role"), "content": _content(message)}


def _has_tool_result(message: Mapping[str, Any]) -> bool:
    content = _content(message)
    return isinstance(content, list) and any(
        isinstance(block, Mapping) and block.get("type") == "tool_result" for block in content
    )


class CompactionPolicy:
    """Decides when to compact and produces the summary of an older message range.

    Args:
        summariser: the async summary call (CompactorRole's model call, or a test double).
        rules: merged compaction rules (``load_compaction_rules``); built-in defaults otherwise.
        summary_ids: mints summary ids (``sum_<ULID>`` by default).
    """

    def __init__(
        self,
        *,
        summariser: Summariser | None = None,
        rules: CompactionRules | None = None,
        summary_ids: Callable[[], str] | None = None,
    ) -> None:
        self._summariser = summariser
        self._rules = rules or CompactionRules()
        self._summary_ids = summary_ids or (lambda: new_id("sum"))

    @property
    def rules(self) -> CompactionRules:
        return self._rules

    def should_compact(self, messages: Sequence[Mapping[str, Any]], token_budget: int) -> bool:
        """True when the messages use at least ``trigger_ratio`` (≈70 %) of ``token_budget``."""
        if not messages:
            return False
        used = sum(estimate_message_tokens(_canonical(m)) for m in messages)
        return used >= self._rules.trigger_ratio * max(token_budget, 0)

    def split(
        self, messages: Sequence[Mapping[str, Any]], target_tokens: int
    ) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
        """Split into (older range to replace, recent messages kept verbatim).

        At most ``keep_recent_messages`` newest messages are kept, and only while they fit in
        half of ``target_tokens``; a kept range never starts with a tool_result whose tool_use
        would be summarised away. At least one message is always replaced.
        """
        keep_budget = target_tokens // 2
        kept = 0
        used = 0
        for message in reversed(messages):
            cost = estimate_message_tokens(_canonical(message))
            if kept >= self._rules.keep_recent_messages or used + cost > keep_budget:
                break
            kept += 1
            used += cost
        kept = min(kept, len(messages) - 1)
        cut = len(messages) - kept
        while cut < len(messages) and _has_tool_result(messages[cut]):
            cut += 1
        return list(messages[:cut]), list(messages[cut:])

    async def compact(
        self, messages: Sequence[Mapping[str, Any]], target_tokens: int
    ) -> CompactionResult:
        """Summarise the older part of ``messages`` so that summary + recent fit ``target_tokens``.

        Args:
            messages: the conversation, oldest first; each needs an ``id`` (or ``message_id``).
            target_tokens: the size the compacted conversation should fit.

        Returns:
            The CompactionResult naming the replaced message ids (the originals are untouched).

        Raises:
            AirException: ``validation_error`` for no messages, a message without id, a target
                below 1 or an empty summary; ``config_error`` when no summariser was given.
        """
        if not messages:
            raise AirException.of(
                kind=ErrorKind.VALIDATION_ERROR,
                message="nothing to compact: the message list is empty",
                user_action="Request compaction only for a conversation with messages.",
            )
        if target_tokens < 1:
            raise AirException.of(
                kind=ErrorKind.VALIDATION_ERROR,
                message=f"target_tokens must be >= 1, got {target_tokens}",
                user_action="Pass a positive compaction target.",
            )
        if self._summariser is None:
            raise AirException.of(
                kind=ErrorKind.CONFIG_ERROR,
                message="CompactionPolicy.compact needs a summariser",
                user_action="Construct CompactionPolicy with summariser=... (the compactor call).",
            )
        replaced, kept = self.split(messages, target_tokens)
        ids: list[str] = []
        for message in replaced:
            message_id = message.get("id") or message.get("message_id")
            if not message_id:
                raise AirException.of(
                    kind=ErrorKind.VALIDATION_ERROR,
                    message="a message to compact has no id",
                    user_action="Compact messages read from the session DB (they carry ids).",
                )
            ids.append(str(message_id))
        kept_tokens = sum(estimate_message_tokens(_canonical(m)) for m in kept)
        summary_budget = max(target_tokens - kept_tokens, 1)
        summary = await self._summariser(
            [_canonical(m) for m in replaced], summary_budget, self._rules.instructions
        )
        summary = summary.strip()
        if not summary:
            raise AirException.of(
                kind=ErrorKind.VALIDATION_ERROR,
                message="the summariser returned an empty summary",
                retryability=Retryability.TRANSIENT,
                user_action="Retry the compaction; check the compactor model's output.",
            )
        if estimate_tokens(summary) > summary_budget:
            limit = max(summary_budget * CHARS_PER_TOKEN - len(_TRUNCATION_MARK), 0)
            summary = summary[:limit] + _TRUNCATION_MARK
            if estimate_tokens(summary) > summary_budget:
                summary = summary[: summary_budget * CHARS_PER_TOKEN]
        return CompactionResult(
            summary_id=self._summary_ids(),
            summary_text=summary,
            replaced_message_ids=ids,
            token_estimate=estimate_tokens(summary),
        )


# --- compaction as a task (IMPL-ARCH-4) ---------------------------------------------------

_DECISION = re.compile(r"^\s*(?:[-*]\s*)?(?:decision|decided|adr)\b\s*[:\-]", re.IGNORECASE)
_EDIT_TOOLS = frozenset({"fs.write", "fs.edit", "fs.patch", "fs.delete", "fs.move"})
PINNED_HEADER = "Pinned facts (verbatim):"
SUMMARY_HEADER = "Summary of the earlier conversation:"


def message_text(message: Mapping[str, Any]) -> str:
    """One message as ``role: text`` (tool calls as ``[tool_use name {input}]``, results as
    ``[tool_result] text``)."""
    content = _content(message)
    parts: list[str] = []
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        for block in content:
            if not isinstance(block, Mapping):
                continue
            kind = block.get("type")
            if kind == "text":
                parts.append(str(block.get("text", "")))
            elif kind == "tool_use":
                raw = json.dumps(block.get("input"), ensure_ascii=False, default=str)
                parts.append(f"[tool_use {block.get('name')} {raw}]")
            elif kind == "tool_result":
                inner = block.get("content")
                text = inner if isinstance(inner, str) else json.dumps(inner, default=str)
                parts.append(f"[tool_result] {text}")
    return f"{message.get('role', 'unknown')}: " + "\n".join(p for p in parts if p)


def pinned_facts(
    messages: Sequence[Mapping[str, Any]],
    *,
    acceptance_criteria: Sequence[str] = (),
    paths_under_edit: Sequence[str] = (),
) -> list[str]:
    """The facts a summary must keep word for word: every acceptance criterion, every decision
    line (``Decision:``, ``Decided -``, ``ADR:``) of the range, and every file path under edit
    (the given ones and each path an edit tool call in the range names). In first-seen order,
    without duplicates."""
    facts: list[str] = [f"Acceptance criterion: {c}" for c in acceptance_criteria if c.strip()]
    paths: list[str] = [p for p in paths_under_edit if p.strip()]
    for message in messages:
        content = _content(message)
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        for block in blocks:
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                facts += [ln.strip() for ln in block["text"].splitlines() if _DECISION.match(ln)]
            elif block.get("type") == "tool_use" and block.get("name") in _EDIT_TOOLS:
                tool_input = block.get("input")
                if isinstance(tool_input, Mapping):
                    paths += [
                        str(tool_input[k])
                        for k in ("path", "from", "to")
                        if isinstance(tool_input.get(k), str)
                    ]
    facts += [f"File under edit: {p}" for p in paths]
    return list(dict.fromkeys(facts))


def chunk_messages(messages: Sequence[Mapping[str, Any]], chunk_tokens: int) -> list[str]:
    """The range as text chunks, each at most ``chunk_tokens`` (estimated) and in order; a
    message longer than a chunk is cut across several.

    Raises:
        AirException: ``validation_error`` for a chunk budget below 1.
    """
    if chunk_tokens < 1:
        raise AirException.of(
            kind=ErrorKind.VALIDATION_ERROR,
            message=f"the compaction chunk budget must be >= 1 token, got {chunk_tokens}",
            user_action="Give the compactor a larger request budget than its prompt needs.",
        )
    limit = chunk_tokens * CHARS_PER_TOKEN
    chunks: list[str] = []
    current = ""
    for message in messages:
        text = message_text(message)
        while len(text) > limit:
            if current:
                chunks.append(current)
                current = ""
            chunks.append(text[:limit])
            text = text[limit:]
        joined = f"{current}\n\n{text}" if current else text
        if len(joined) > limit:
            chunks.append(current)
            current = text
        else:
            current = joined
    if current:
        chunks.append(current)
    return chunks


def render_summary(pinned: Sequence[str], chunk_summaries: Sequence[str]) -> str:
    """The summary text: the pinned facts verbatim, then the chunk summaries in order."""
    parts: list[str] = []
    if pinned:
        parts.append(PINNED_HEADER + "\n" + "\n".join(f"- {f}" for f in pinned))
    body = "\n\n".join(s.strip() for s in chunk_summaries if s.strip())
    parts.append(f"{SUMMARY_HEADER}\n{body}")
    return "\n\n".join(parts)


def pinned_of(summary_text: str) -> list[str]:
    """The pinned facts of a summary made by ``render_summary`` (a later compaction carries
    them on verbatim)."""
    if not summary_text.startswith(PINNED_HEADER):
        return []
    block = summary_text[len(PINNED_HEADER) :].split("\n\n", 1)[0]
    return [line[2:] for line in block.splitlines() if line.startswith("- ")]
