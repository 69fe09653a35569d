"""Project trust (ARCHITECTURE §8a): which project files need the user's trust, and the record.

Owns the set of project-scope files that can widen what air does or reach a model's prompt
(``trust_scan``: ``.air/shared/models.yaml`` providers, ``permissions.yaml`` allow rules and
``headless_allow_ask``, ``mcp.yaml`` servers (a command air would run, a URL it would send
tool calls to), ``architecture.yaml``, ``capabilities/*.json``, ``rules/*.md``,
``compaction-rules.md``, ``AGENTS.md``, ``CLAUDE.md``, the agent files ``.air/agents/*.md``), what
each one would do (``Finding``),
and the user's decision, recorded outside the project in ``~/.air/trust.json``: per project
realpath, the sha256 over the exact set (relative path + bytes) of the widening files the user
saw, and when (read, changed and written under ``trust.json.lock``: air processes of several
projects update it). Any change of that set (a file edited, added, removed, or a file that
widened nothing now widening) makes the project untrusted again.
``require_trust`` is the check every front end makes before it reads the project's
configuration; it raises ``AirException(untrusted_config)`` naming the file and the field. A
symbolic link where one of these files (or their directories) should be is followed only when it
resolves inside the project and outside its git metadata and air's local state (``CLAUDE.md ->
AGENTS.md``); the link's target is part of the hash. Any other link is refused. A project whose
files widen nothing needs no trust (IMPL-TRUST-1).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from air.contracts.display import shown
from air.small_file import read_small

if TYPE_CHECKING:  # imported where raised: no pydantic before the console's first frame
    from air.contracts.error import AirException

__all__ = [
    "PROMPT_FILES",
    "ConfigSet",
    "Finding",
    "record_trust",
    "refresh_trust",
    "require_trust",
    "revoke_trust",
    "trust_file",
    "trust_scan",
    "trusted",
    "untrusted_error",
]

SHARED = ".air/shared"
PROMPT_FILES = ("AGENTS.md", "CLAUDE.md")
"""Instruction files at the project root that reach prompts (``air.context.loader``)."""
_SINGLE_FILES = (
    f"{SHARED}/models.yaml",
    f"{SHARED}/permissions.yaml",
    f"{SHARED}/mcp.yaml",
    f"{SHARED}/hosts.yaml",
    f"{SHARED}/architecture.yaml",
    f"{SHARED}/compaction-rules.md",
    *PROMPT_FILES,
)
AGENTS = ".air/agents"
"""Named agent files (``air.session.agent_files``): a link there is never used, so not read."""
_DIRECTORIES = (
    (f"{SHARED}/rules", ".md"),
    (f"{SHARED}/capabilities", ".json"),
    (AGENTS, ".md"),
)
_PREVIEW_LINES = 3


class Finding(NamedTuple):
    """One thing a project file would make air do: ``file: field detail``."""

    file: str
    """The file, relative to the project root."""
    field: str
    """Where in it (``providers.anthropic.base_url``, ``rules[0]``, ``file``)."""
    detail: str

    def line(self) -> str:
        """As the user reads it: every hidden character escaped (IMPL-UI-7), so a project file
        cannot hide what trusting it would allow behind a terminal escape or a bidi override."""
        return shown(f"{self.file}: {self.field} {self.detail}")


class ConfigSet(NamedTuple):
    """The trust-relevant files of one project as they are on disk now."""

    root: str
    """The project's realpath (the key of the record)."""
    files: tuple[tuple[str, bytes], ...]
    """(relative path, bytes) of every file that widens something, sorted by path; a file
    reached through an in-project link has ``-> <target>`` and a newline before its bytes."""
    findings: tuple[Finding, ...]

    @property
    def digest(self) -> str:
        """sha256 over every (relative path, bytes), length-prefixed so no two sets collide."""
        h = hashlib.sha256()
        for rel, data in self.files:
            name = rel.encode()
            h.update(len(name).to_bytes(8, "big") + name + len(data).to_bytes(8, "big") + data)
        return h.hexdigest()

    @property
    def widens(self) -> bool:
        """Whether anything here needs the user's trust."""
        return bool(self.findings)

    def summary(self) -> list[str]:
        """What trusting would allow, file by file (what ``air trust`` and the console show),
        every hidden character escaped (IMPL-UI-7)."""
        lines: list[str] = []
        for rel, _data in self.files:
            mine = [f for f in self.findings if f.file == rel]
            if mine:
                lines.append(shown(rel))
                lines += [f"  {shown(f'{f.field} {f.detail}')}" for f in mine]
        return lines


def trust_file(home: str | None = None) -> str:
    """``~/.air/trust.json``: the user's trust decisions (never inside a project)."""
    return os.path.join(home or os.path.expanduser("~"), ".air", "trust.json")


def _refuse_link(root: str, rel: str, real: str) -> None:
    from air.contracts.error import AirException, ErrorKind

    raise AirException.of(
        kind=ErrorKind.UNTRUSTED_CONFIG,
        message=f"{rel}: is a symbolic link to {real}, outside the project's own files; air "
        "never follows such a link for project configuration",
        user_action=f"Replace the link {os.path.join(root, rel)} with the file (or directory) "
        "itself, then run air again.",
        metadata={"file": rel, "field": "file"},
    )


_LINK_FORBIDDEN = (".git", ".air/local")
"""Where an in-project link may not lead: git's metadata and air's own state."""


def _inside(root: str, real: str) -> bool:
    if not real.startswith(root + os.sep):
        return False
    rel = real[len(root) + 1 :]
    return not any(rel == top or rel.startswith(top + os.sep) for top in _LINK_FORBIDDEN)


def _lstat(root: str, rel: str) -> os.stat_result | None:
    """The entry at ``rel`` (None: absent). A link there, or on the way to it, is followed only
    when it resolves inside the project (``_inside``); any other link is refused."""
    parts = rel.split("/")
    for depth in range(1, len(parts) + 1):
        sub = "/".join(parts[:depth])
        try:
            info = os.lstat(os.path.join(root, sub))
        except (FileNotFoundError, NotADirectoryError):
            return None
        if stat.S_ISLNK(info.st_mode):
            real = os.path.realpath(os.path.join(root, sub))
            if not _inside(root, real):
                _refuse_link(root, sub, real)
            try:
                info = os.stat(real)
            except (FileNotFoundError, NotADirectoryError):
                return None
    return info


def _read(root: str, rel: str) -> tuple[bytes, bytes]:
    """The bytes at ``rel`` as a loader reads them, and the bytes the hash covers: for a path
    through an in-project link the resolved path leads them (re-pointing a link asks again)."""
    real = os.path.realpath(os.path.join(root, rel))
    if not _inside(root, real):  # re-pointed since _lstat looked
        _refuse_link(root, rel, real)
    data = read_small(real, follow=False)  # whole: the hash covers every byte a loader reads
    target = os.path.relpath(real, root)
    return data, (data if target == rel else f"-> {target}\n".encode() + data)


def _paths(root: str) -> Iterator[str]:
    for rel in _SINGLE_FILES:
        info = _lstat(root, rel)
        if info is not None and stat.S_ISREG(info.st_mode):
            yield rel
    for folder, suffix in _DIRECTORIES:
        info = _lstat(root, folder)
        if info is None or not stat.S_ISDIR(info.st_mode):
            continue
        for name in sorted(os.listdir(os.path.join(root, folder))):
            rel = f"{folder}/{name}"
            if not name.endswith(suffix):
                continue
            if folder == AGENTS and os.path.islink(os.path.join(root, rel)):
                continue  # skipped by the agent files' reader: it widens nothing
            entry = _lstat(root, rel)
            if entry is not None and stat.S_ISREG(entry.st_mode):
                yield rel


def trust_scan(project_root: str) -> ConfigSet:
    """The trust-relevant files of the project at ``project_root`` and what they would do.

    Raises:
        AirException(untrusted_config): one of them (or its directory) is a symbolic link that
            leads out of the project, into its ``.git`` or into ``.air/local``;
        AirException(config_error): one of them cannot be read, is larger than air reads
            (4 MiB), or no regular file once opened.
    """
    root = os.path.realpath(project_root)
    files: list[tuple[str, bytes]] = []
    findings: list[Finding] = []
    try:
        for rel in sorted(set(_paths(root))):
            data, hashed = _read(root, rel)
            found = _findings(rel, data)
            if found:  # a file that widens nothing (a deny-only policy, air's stubs): not asked
                files.append((rel, hashed))
                findings += found
    except OSError as exc:  # also mid-run, where only an AirException fails just the task
        raise _unreadable(root, exc) from None
    return ConfigSet(root=root, files=tuple(files), findings=tuple(findings))


def _unreadable(root: str, exc: OSError) -> AirException:
    """A trust-relevant file that cannot be read (unreadable, no regular file, over 4 MiB:
    IMPL-TRUST-5), as a ``config_error`` naming it."""
    from air.contracts.error import AirException

    where = os.fsdecode(exc.filename) if exc.filename is not None else root
    return AirException.of(
        kind="config_error",
        message=f"{shown(os.path.relpath(where, root))}: {exc.strerror or exc}",
        user_action=f"Make {where} a small readable text file, or remove it.",
    )


def _air_templates() -> dict[str, bytes]:
    """The files ``air init`` writes, byte for byte: air's own text widens nothing."""
    from air.session.project import PROJECT_RULES, TOOLCHAIN_RULES

    return {
        f"{SHARED}/rules/project-rules.md": PROJECT_RULES.encode(),
        f"{SHARED}/rules/toolchain-rules.md": TOOLCHAIN_RULES.encode(),
    }


def _findings(rel: str, data: bytes) -> list[Finding]:
    # the templates are rules files: other files do not load their module (and pydantic)
    if rel.startswith(f"{SHARED}/rules/") and _air_templates().get(rel) == data:
        return []
    if rel.endswith("models.yaml"):
        return _models_findings(rel, data)
    if rel.endswith("permissions.yaml"):
        return _policy_findings(rel, data)
    if rel.endswith("mcp.yaml"):
        return _mcp_findings(rel, data)
    if rel.endswith("architecture.yaml"):
        return [
            Finding(
                rel,
                "file",
                "declares the architecture every worker result is reviewed "
                "against (reaches the reviewer's prompt)",
            )
        ]
    if rel.endswith("hosts.yaml"):
        return _hosts_findings(rel, data)
    if rel.endswith(".json"):
        return _capability_findings(rel, data)
    if rel.startswith(f"{AGENTS}/"):
        return [
            Finding(
                rel, "file", "an agent a task may name (persona, model, budgets): " + _preview(data)
            )
        ]
    return [Finding(rel, "file", "reaches the prompts of every agent: " + _preview(data))]


def _preview(data: bytes) -> str:
    text = data.decode("utf-8", "replace")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    shown = " | ".join(line[:100] for line in lines[:_PREVIEW_LINES])
    more = f" (+{len(lines) - _PREVIEW_LINES} more lines)" if len(lines) > _PREVIEW_LINES else ""
    return (shown or "(empty)") + more


def _yaml(data: bytes) -> Any:
    """The parsed file, or None when it is not YAML: its own loader refuses such a file
    (``config_error``), so it cannot widen anything."""
    import yaml

    from air.yamlload import load

    try:
        return load(data.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError):
        return None


def _models_findings(rel: str, data: bytes) -> list[Finding]:
    """A provider entry widens (where a key goes, which variable is a key, where turns are
    recorded); ``default``/``roles``/``escalation``/``retry`` only pick among the user's."""
    raw = _yaml(data)
    providers = raw.get("providers") if isinstance(raw, dict) else None
    if not isinstance(providers, dict):
        return []
    out: list[Finding] = []
    for pid, entry in providers.items():
        where = f"providers.{pid}"
        if not isinstance(entry, dict):
            out.append(Finding(rel, where, "defines a provider"))
            continue
        url, ref, kind = entry.get("base_url"), entry.get("auth_ref"), entry.get("kind")
        if url and ref:
            out.append(Finding(rel, f"{where}.base_url", f"would send {ref} to {url}"))
        elif ref:
            out.append(
                Finding(
                    rel, f"{where}.auth_ref", f"reads {ref} as the key of a provider of kind {kind}"
                )
            )
        elif url:
            out.append(Finding(rel, f"{where}.base_url", f"sends the prompts to {url}"))
        else:
            out.append(Finding(rel, where, f"defines a provider (kind {kind})"))
        for key in ("record_to", "cassette"):
            if entry.get(key):
                out.append(Finding(rel, f"{where}.{key}", f"uses the file {entry[key]}"))
        target = url or f"the {kind} default endpoint"
        for name, ref in _dict(entry.get("header_refs")).items():
            what = f"would send ${ref} of your environment to {target} as the header {name}"
            out.append(Finding(rel, f"{where}.header_refs.{name}", what))
        if _dict(entry.get("headers")):
            named = ", ".join(str(k) for k in _dict(entry.get("headers")))
            out.append(Finding(rel, f"{where}.headers", f"sends {named} to {target}"))
    return out


def _dict(value: Any) -> dict[Any, Any]:
    return value if isinstance(value, dict) else {}


def _policy_findings(rel: str, data: bytes) -> list[Finding]:
    """Allow rules and ``headless_allow_ask`` widen; deny and ask rules only narrow."""
    raw = _yaml(data)
    if not isinstance(raw, dict):
        return []
    out: list[Finding] = []
    if raw.get("headless_allow_ask"):
        out.append(Finding(rel, "headless_allow_ask", "lets headless runs take `ask` actions"))
    rules = raw.get("rules")
    for i, rule in enumerate(rules if isinstance(rules, list) else []):
        if isinstance(rule, dict) and rule.get("action") not in ("deny", "ask"):
            named = ", ".join(
                f"{k}={rule[k]}"
                for k in ("tool", "path", "command", "category", "sensitive")
                if rule.get(k) is not None
            )
            out.append(Finding(rel, f"rules[{i}]", f"{rule.get('action')}s {named or 'anything'}"))
    return out


def _mcp_findings(rel: str, data: bytes) -> list[Finding]:
    """What each server of a project's mcp.yaml widens (``air.session.trust_mcp``)."""
    from air.session.trust_mcp import mcp_widenings

    return [Finding(rel, field, detail) for field, detail in mcp_widenings(_yaml(data))]


_HOST_FIELDS = (
    ("identity", "opens it with the key"),
    ("known_hosts", "takes its host key from"),
    ("python", "runs air there with"),
    ("workdir", "keeps the code there in"),
    ("srun_options", "passes srun"),
)


def _hosts_findings(rel: str, data: bytes) -> list[Finding]:
    """Every host widens: where a task's code and model loop go (``user@host:port``), which of
    the user's keys opens it, whose host key is believed, what runs there (IMPL-REMOTE-2). Found:
    the first three lines were all the user saw, and a file could name its host on the fifth."""
    raw = _yaml(data)
    hosts = raw.get("hosts") if isinstance(raw, dict) else None
    if not isinstance(hosts, dict):  # refused when read; said as it is
        return [Finding(rel, "file", "names hosts a task's code may be sent to: " + _preview(data))]
    out: list[Finding] = []
    for name, entry in hosts.items():
        where = f"hosts.{name}"
        if not isinstance(entry, dict):
            out.append(Finding(rel, where, "declares a host"))
            continue
        user = f"{entry['user']}@" if entry.get("user") else ""
        port = f":{entry['port']}" if entry.get("port") else ""
        via = entry.get("launcher") or "ssh"
        out.append(
            Finding(
                rel,
                f"{where}.host",
                f"would send a task's code to {user}{entry.get('host')}{port} ({via})",
            )
        )
        for key, says in _HOST_FIELDS:
            value = entry.get(key)
            if value:
                shown_value = " ".join(map(str, value)) if isinstance(value, list) else value
                out.append(Finding(rel, f"{where}.{key}", f"{says} {shown_value}"))
    return out


def _capability_findings(rel: str, data: bytes) -> list[Finding]:
    try:
        raw = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raw = None
    name = raw.get("capability_id") if isinstance(raw, dict) else None
    return [Finding(rel, "file", f"declares the capability {name or '(unreadable)'} (its tools)")]


# -- the record ----------------------------------------------------------------------------


def _load_record(home: str | None) -> dict[str, Any]:
    path = trust_file(home)
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        return {"version": 1, "projects": {}}
    except (OSError, ValueError) as exc:
        from air.contracts.error import AirException, ErrorKind

        raise AirException.of(
            kind=ErrorKind.CONFIG_ERROR,
            message=f"{path}: cannot be read as air's trust record ({exc.__class__.__name__})",
            user_action=f"Remove {path} (every project then asks for trust again).",
            metadata={"file": path, "field": "file"},
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("projects"), dict):
        return {"version": 1, "projects": {}}
    return data


def _save_record(data: dict[str, Any], home: str | None) -> None:
    path = trust_file(home)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)  # ~/.air: the user's alone
    # projects that are gone (temporary directories) leave the record
    data["projects"] = {k: v for k, v in data["projects"].items() if os.path.isdir(k)}
    temp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(temp, path)


def trusted(config: ConfigSet, *, home: str | None = None) -> bool:
    """Whether the user trusted exactly this set of files (a set that widens nothing is)."""
    if not config.widens:
        return True
    entry = _load_record(home)["projects"].get(config.root)
    return isinstance(entry, dict) and entry.get("sha256") == config.digest


@contextmanager
def _updating(home: str | None) -> Iterator[None]:
    """The record read, changed and written by one air process at a time (an exclusive
    ``flock`` on ``trust.json.lock`` beside it): air processes of other projects refresh it
    after their own writes, and two read-modify-writes at once lost one's projects."""
    path = trust_file(home) + ".lock"
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)  # ~/.air: the user's alone
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def record_trust(config: ConfigSet, *, home: str | None = None) -> None:
    """Record that the user trusts ``config`` (this exact set of files) for its project."""
    with _updating(home):
        data = _load_record(home)
        data["projects"][config.root] = {
            "sha256": config.digest,
            "files": {rel: hashlib.sha256(data).hexdigest() for rel, data in config.files},
            "trusted_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        _save_record(data, home)


def revoke_trust(project_root: str, *, home: str | None = None) -> bool:
    """Forget the trust of the project; True when there was one."""
    with _updating(home):
        data = _load_record(home)
        gone = data["projects"].pop(os.path.realpath(project_root), None)
        _save_record(data, home)
    return gone is not None


def refresh_trust(
    project_root: str, before: ConfigSet, written: str, *, home: str | None = None
) -> None:
    """After air's own write of ``written`` (a learned rule file, relative path): record the
    new set, but only when the set just before the write was trusted (or widened nothing) and
    nothing but ``written`` changed since, so nothing a task slipped in becomes trusted."""
    if not trusted(before, home=home):
        return
    after = trust_scan(project_root)
    if [f for f in after.files if f[0] != written] == [f for f in before.files if f[0] != written]:
        record_trust(after, home=home)


def untrusted_error(config: ConfigSet, *, home: str | None = None) -> AirException:
    """The refusal of an untrusted set: the first widening file and field (after a change, the
    first changed one), and what to do."""
    first = config.findings[0]
    entry = _load_record(home)["projects"].get(config.root)
    changed = ""
    if isinstance(entry, dict):
        changed = " (changed since you trusted this project)"
        recorded = entry.get("files")
        seen: dict[str, str] = recorded if isinstance(recorded, dict) else {}
        now = {rel: hashlib.sha256(data).hexdigest() for rel, data in config.files}
        edited = [f for f in config.findings if seen.get(f.file) != now[f.file]]
        gone = sorted(set(seen) - set(now))
        if edited:
            first = edited[0]
        elif gone:
            first = Finding(gone[0], "file", "was removed")
    more = len(config.findings) - 1
    tail = f" (and {more} more: `air trust` lists them)" if more > 0 else ""
    from air.contracts.error import AirException, ErrorKind

    return AirException.of(
        kind=ErrorKind.UNTRUSTED_CONFIG,
        message=f"untrusted project configuration{changed}: {first.line()}{tail}",
        user_action=(
            f"Review the project's configuration (`air trust {config.root}` shows what it would "
            f"do and asks), or run `air trust {config.root} --yes` once you have read it; "
            "air then uses it until a file changes."
        ),
        metadata={"file": first.file, "field": first.field, "project": config.root},
    )


def require_trust(project_root: str, *, home: str | None = None) -> ConfigSet:
    """Check, before anything reads the project's configuration, that the user trusted it.

    Returns:
        The scanned set (trusted, or widening nothing).

    Raises:
        AirException(untrusted_config): a widening file the user has not trusted as it is now
            (the message names the file and the field), or a symbolic link among them;
        AirException(config_error): one of them is larger than air reads.
    """
    config = trust_scan(project_root)
    if not trusted(config, home=home):
        raise untrusted_error(config, home=home)
    return config
