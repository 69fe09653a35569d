"""What `air trust` shows a person before they trust a project: every way a file would widen
what air does, line by line (IMPL-TRUST-1).

`scripts/mutation.sh trust` (docs/mutation.md) showed that no test read most of these lines in
process: a models.yaml provider's key, endpoint, recording files and headers, a permission
policy's rules, a capability, a hosts file that is no mapping, a long file's preview, and the
refusal's message after a change. A person trusts what they read here; each line a mutant
dropped or garbled went unseen.
"""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path

import pytest

from air.contracts.error import AirException
from air.session.project import ProjectStore
from air.session.trust import (
    record_trust,
    require_trust,
    revoke_trust,
    trust_file,
    trust_scan,
    trusted,
)
from air.small_file import open_regular

MODELS = """\
providers:
  relay:
    kind: anthropic
    base_url: https://relay.example/v1
    auth_ref: ANTHROPIC_API_KEY
    record_to: turns/
    cassette: replay.jsonl
    header_refs: {X-Org: ORG_TOKEN}
    headers: {X-Team: blue, X-Env: prod}
  keyed:
    kind: openai_compatible
    auth_ref: OPENAI_API_KEY
  local:
    kind: openai_compatible
    base_url: http://127.0.0.1:8000/v1
  replay:
    kind: scripted
  odd: just a string
default: relay/m
"""

POLICY = """\
headless_allow_ask: true
rules:
  - {action: deny, path: secrets/**}
  - {action: ask, command: "git push*"}
  - {action: allow, tool: fs.write, path: "src/**"}
  - {action: allow, command: "curl *", category: network, sensitive: true}
  - {action: allow}
"""


def _project(tmp: Path, files: dict[str, str]) -> str:
    root = tmp / "proj"
    root.mkdir()
    ProjectStore().initialize(root)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return str(root)


def test_every_provider_setting_that_sends_or_reads_something_is_shown(tmp_path: Path) -> None:
    root = _project(tmp_path, {".air/shared/models.yaml": MODELS})
    assert trust_scan(root).summary() == [
        ".air/shared/models.yaml",
        "  providers.relay.base_url would send ANTHROPIC_API_KEY to https://relay.example/v1",
        "  providers.relay.record_to uses the file turns/",
        "  providers.relay.cassette uses the file replay.jsonl",
        "  providers.relay.header_refs.X-Org would send $ORG_TOKEN of your environment to "
        "https://relay.example/v1 as the header X-Org",
        "  providers.relay.headers sends X-Team, X-Env to https://relay.example/v1",
        "  providers.keyed.auth_ref reads OPENAI_API_KEY as the key of a provider of kind "
        "openai_compatible",
        "  providers.local.base_url sends the prompts to http://127.0.0.1:8000/v1",
        "  providers.replay defines a provider (kind scripted)",
        "  providers.odd defines a provider",
    ]


def test_a_provider_without_an_endpoint_names_its_kinds_default(tmp_path: Path) -> None:
    text = (
        "providers:\n  p:\n    kind: anthropic\n    header_refs: {X-A: TOKEN}\n"
        "    headers: {X-B: c}\n"
    )
    root = _project(tmp_path, {".air/shared/models.yaml": text})
    assert trust_scan(root).summary()[2:] == [
        "  providers.p.header_refs.X-A would send $TOKEN of your environment to the anthropic "
        "default endpoint as the header X-A",
        "  providers.p.headers sends X-B to the anthropic default endpoint",
    ]
    # a file that picks among the user's providers only widens nothing
    (tmp_path / "b").mkdir()
    root2 = _project(tmp_path / "b", {".air/shared/models.yaml": "default: a/b\nroles: {}\n"})
    assert not trust_scan(root2).widens


def test_every_rule_that_allows_is_shown_and_no_rule_that_narrows(tmp_path: Path) -> None:
    root = _project(tmp_path, {".air/shared/permissions.yaml": POLICY})
    assert trust_scan(root).summary() == [
        ".air/shared/permissions.yaml",
        "  headless_allow_ask lets headless runs take `ask` actions",
        "  rules[2] allows tool=fs.write, path=src/**",
        "  rules[3] allows command=curl *, category=network, sensitive=True",
        "  rules[4] allows anything",
    ]


def test_capabilities_agents_and_instructions_are_shown_with_what_they_say(
    tmp_path: Path,
) -> None:
    long = "".join(f"line {i}\n" for i in range(6))
    root = _project(
        tmp_path,
        {
            ".air/shared/capabilities/good.json": '{"capability_id": "lint"}',
            ".air/shared/capabilities/bad.json": "not json",
            ".air/shared/architecture.yaml": "layers: []\n",
            ".air/agents/helper.md": long,
            "AGENTS.md": "\n\n",
        },
    )
    assert trust_scan(root).summary() == [
        ".air/agents/helper.md",
        "  file an agent a task may name (persona, model, budgets): line 0 | line 1 | line 2 "
        "(+3 more lines)",
        ".air/shared/architecture.yaml",
        "  file declares the architecture every worker result is reviewed against (reaches the "
        "reviewer's prompt)",
        ".air/shared/capabilities/bad.json",
        "  file declares the capability (unreadable) (its tools)",
        ".air/shared/capabilities/good.json",
        "  file declares the capability lint (its tools)",
        "AGENTS.md",
        "  file reaches the prompts of every agent: (empty)",
    ]


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        (
            "- just\n- a list\n",
            ["  file names hosts a task's code may be sent to: - just | - a list"],
        ),
        ("hosts:\n  box: a string\n", ["  hosts.box declares a host"]),
    ],
)
def test_a_hosts_file_of_another_shape_is_still_shown(
    tmp_path: Path, text: str, lines: list[str]
) -> None:
    root = _project(tmp_path, {".air/shared/hosts.yaml": text})
    assert trust_scan(root).summary() == [".air/shared/hosts.yaml", *lines]


def test_the_refusal_names_what_changed_first(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    root = _project(
        tmp_path, {"AGENTS.md": "a\n", "CLAUDE.md": "b\n", ".air/shared/rules/r.md": "c\n"}
    )

    def refusal() -> str:
        with pytest.raises(AirException) as raised:
            require_trust(root, home=str(home))
        error = raised.value.error
        assert error.metadata is not None
        assert error.metadata["project"] == trust_scan(root).root
        return error.message

    assert refusal() == (
        "untrusted project configuration: .air/shared/rules/r.md: file reaches the prompts of "
        "every agent: c (and 2 more: `air trust` lists them)"
    )
    record_trust(trust_scan(root), home=str(home))
    Path(root, "CLAUDE.md").write_text("b, and more\n")
    assert refusal() == (
        "untrusted project configuration (changed since you trusted this project): CLAUDE.md: "
        "file reaches the prompts of every agent: b, and more (and 2 more: `air trust` lists "
        "them)"
    )
    record_trust(trust_scan(root), home=str(home))
    Path(root, "CLAUDE.md").unlink()
    assert refusal() == (
        "untrusted project configuration (changed since you trusted this project): CLAUDE.md: "
        "file was removed (and 1 more: `air trust` lists them)"
    )


def test_every_file_of_a_rules_or_agents_directory_is_scanned_past_what_it_skips(
    tmp_path: Path,
) -> None:
    """A name without the directory's suffix, a directory named like a rule and a linked agent
    file are passed over, and the scan goes on to the files after them (sorted by name)."""
    root = _project(
        tmp_path,
        {
            ".air/shared/rules/a-notes.txt": "not a rule\n",
            ".air/shared/rules/z.md": "obey\n",
            ".air/agents/b.md": "an agent\n",
        },
    )
    Path(root, ".air/shared/rules/m.md").mkdir()
    Path(root, ".air/agents/a.md").symlink_to("b.md")
    files = [rel for rel, _data in trust_scan(root).files]
    assert files == [".air/agents/b.md", ".air/shared/rules/z.md"]


def test_an_unreadable_file_and_a_damaged_record_are_named(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = _project(tmp_path, {})
    with open(Path(root, "AGENTS.md"), "wb") as big:
        big.truncate(5 << 20)
    with pytest.raises(AirException) as raised:
        trust_scan(root)
    error = raised.value.error
    assert error.kind == "config_error"
    assert error.message == (
        "AGENTS.md: 5.0 MiB, more than the 4.0 MiB air reads of such a file; none of it was read"
    )
    assert error.user_action == (
        f"Make {os.path.realpath(root)}/AGENTS.md a small readable text file, or remove it."
    )
    Path(root, "AGENTS.md").write_text("x\n")
    record = Path(trust_file(str(home)))
    record.parent.mkdir(parents=True)
    for shape in ("[1, 2]", '{"projects": []}'):
        record.write_text(shape)  # not air's shape: every project asks again
        assert not trusted(trust_scan(root), home=str(home))
    record.write_text("{not json")
    with pytest.raises(AirException) as raised:
        trusted(trust_scan(root), home=str(home))
    error = raised.value.error
    assert (error.kind, error.message) == (
        "config_error",
        f"{record}: cannot be read as air's trust record (JSONDecodeError)",
    )
    assert error.user_action == f"Remove {record} (every project then asks for trust again)."
    assert error.metadata == {"file": str(record), "field": "file"}


def test_a_descriptor_air_opens_for_a_file_stays_out_of_the_commands_it_starts(
    tmp_path: Path,
) -> None:
    path = tmp_path / "f"
    path.write_text("x\n")
    fd = open_regular(path)
    try:
        assert fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC
        assert os.get_blocking(fd)
    finally:
        os.close(fd)


def test_an_entry_of_another_shape_does_not_hide_the_ones_after_it(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        {
            ".air/shared/models.yaml": (
                "providers:\n  odd: x\n  later:\n    kind: anthropic\n    base_url: https://u\n"
            ),
            ".air/shared/hosts.yaml": "hosts:\n  box: x\n  later: {host: h2}\n",
        },
    )
    Path(root, "AGENTS.md").write_bytes(b"caf\xc3\xa9 \xff\n")  # not UTF-8: still shown
    assert trust_scan(root).summary() == [
        ".air/shared/hosts.yaml",
        "  hosts.box declares a host",
        "  hosts.later.host would send a task's code to h2 (ssh)",
        ".air/shared/models.yaml",
        "  providers.odd defines a provider",
        "  providers.later.base_url sends the prompts to https://u",
        "AGENTS.md",
        "  file reaches the prompts of every agent: caf\u00e9 \ufffd",
    ]


def test_the_record_is_the_users_alone_and_holds_every_project(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "a").mkdir()
    first = _project(tmp_path / "a", {"AGENTS.md": "a\n"})
    second = _project(tmp_path, {"AGENTS.md": "b\n"})
    for root in (first, second):
        record_trust(trust_scan(root), home=str(home))
    assert stat.S_IMODE((home / ".air").stat().st_mode) == 0o700
    assert stat.S_IMODE(Path(trust_file(str(home))).stat().st_mode) == 0o600
    assert all(trusted(trust_scan(r), home=str(home)) for r in (first, second))
    assert revoke_trust(first, home=str(home))
    assert not trusted(trust_scan(first), home=str(home))
    assert trusted(trust_scan(second), home=str(home))
    assert not revoke_trust(first, home=str(home))
    with pytest.raises(AirException) as raised:
        require_trust(first, home=str(home))
    error = raised.value.error
    assert error.message == (  # one finding: no count of more
        "untrusted project configuration: AGENTS.md: file reaches the prompts of every agent: a"
    )
    real = os.path.realpath(first)
    assert error.user_action == (
        f"Review the project's configuration (`air trust {real}` shows what it would do and "
        f"asks), or run `air trust {real} --yes` once you have read it; air then uses it until "
        "a file changes."
    )
    assert error.metadata == {"file": "AGENTS.md", "field": "file", "project": real}


def test_a_link_out_is_refused_naming_it_and_what_to_do(tmp_path: Path) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text("providers: {}\n")
    root = _project(tmp_path, {})
    Path(root, ".air/shared/models.yaml").symlink_to(outside)
    with pytest.raises(AirException) as raised:
        trust_scan(root)
    error = raised.value.error
    assert (error.kind, error.message) == (
        "untrusted_config",
        f".air/shared/models.yaml: is a symbolic link to {outside}, outside the project's own "
        "files; air never follows such a link for project configuration",
    )
    assert error.user_action == (
        f"Replace the link {os.path.realpath(root)}/.air/shared/models.yaml with the file (or "
        "directory) itself, then run air again."
    )
    assert error.metadata == {"file": ".air/shared/models.yaml", "field": "file"}
