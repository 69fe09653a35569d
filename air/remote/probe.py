"""What ``air doctor --host NAME`` learns about a remote host (issue #27 item 1; IMPL-REMOTE-2).

Owns: ``HostFinding`` (one aspect of the host: ``ok`` or what is wrong and what to fix),
``probe_host`` (one ssh connection with the host's own options — strict host keys, batch mode —
that runs a short script on the remote interpreter and prints one JSON line: air's version
there, the worker protocol version, ``bwrap`` (found, and a user-namespace sandbox actually
started), ``git``, and ``slirp4netns`` with a ``/dev/net/tun`` the user may open (a command
granted the network needs both: a warning); bytes before that line are a login script's
output, which would break the worker protocol).
The doctor check around it is built by the CLI (``air.cli.doctor_host``).
"""

from __future__ import annotations

import json
import shlex
from typing import NamedTuple

from air.remote.bounded import run_bounded
from air.remote.hosts import HostConfig
from air.remote.ssh import REMOTE_PATH, classify_ssh_failure, client_environment, ssh_argv

__all__ = ["PROBE_SCRIPT", "HostFinding", "probe_host"]

PROBE_SCRIPT = r"""
import json, os, shutil, subprocess
out = {"boot_id": open("/proc/sys/kernel/random/boot_id").read().strip()}
try:
    import air
    from air.roles.__main__ import PROTOCOL_VERSION
    out["air"] = air.__version__
    out["protocol"] = PROTOCOL_VERSION
except Exception as exc:
    out["air_error"] = f"{type(exc).__name__}: {exc}"
def run(argv):
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=20)
        return p.returncode, (p.stdout + p.stderr).strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        return -1, str(exc)
out["tun"] = os.access("/dev/net/tun", os.R_OK | os.W_OK)
for tool in ("git", "bwrap", "slirp4netns"):
    path = shutil.which(tool)
    out[tool] = {"path": path}
    if path:
        out[tool]["version"] = run([path, "--version"])[1].splitlines()[:1]
if out["bwrap"]["path"]:
    code, text = run([out["bwrap"]["path"], "--unshare-all", "--die-with-parent",
                      "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "true"])
    out["bwrap"]["sandbox"] = code == 0
    out["bwrap"]["sandbox_error"] = text[:300]
print(json.dumps(out))
"""


class HostFinding(NamedTuple):
    """One aspect of a host: ``problem`` is ``None`` when it is fine."""

    check: str
    found: str
    problem: str | None = None
    user_action: str | None = None
    severity: str = "blocking"


async def probe_host(
    host: HostConfig, local_air: str, timeout_s: float = 60.0
) -> list[HostFinding]:
    """Connect to ``host`` once and say what works there and what to fix."""
    remote = f"exec env -i PATH={REMOTE_PATH} LANG=C.UTF-8 {shlex.quote(host.python)} -P -c "
    argv = [*ssh_argv(host), "--", host.destination(), remote + shlex.quote(PROBE_SCRIPT)]
    done = await run_bounded(argv, env=client_environment(), timeout_s=timeout_s)
    if done is None:
        return [
            HostFinding(
                "connection",
                "no answer",
                f"{host.destination()} did not answer within {timeout_s:.0f} s",
                "Check the network path to the host (a firewall that drops packets).",
            )
        ]
    stdout = done.stdout.decode("utf-8", "replace")
    stderr = done.stderr.decode("utf-8", "replace")
    if done.returncode == 255:
        problem, action = classify_ssh_failure(host, stderr)
        return [HostFinding("connection", "failed", problem, action)]
    found = [HostFinding("connection", f"{host.destination()}:{host.port} (strict host key)")]
    if stdout and not stdout.startswith("{"):
        found.append(
            HostFinding(
                "login_noise",
                "output before the command",
                f"the remote shell printed {stdout[:80]!r} before any command ran: it would "
                "break the worker protocol",
                "Make ~/.bashrc and ~/.profile there print nothing when stdin is not a terminal.",
            )
        )
        return found
    try:
        facts = json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError, RecursionError):
        facts = None
    if not isinstance(facts, dict):  # no line, or not the probe's: the host chose it
        found.append(
            HostFinding(
                "python",
                "not run",
                f"{host.python} did not run there (exit {done.returncode}): "
                f"{stderr.strip()[:200] or 'no output'}",
                f"Install Python 3.11+ there and set `python:` in {host.source} to it.",
            )
        )
        return found
    return found + _facts(host, facts, local_air)


def _facts(host: HostConfig, facts: dict[str, object], local_air: str) -> list[HostFinding]:
    found = []
    version = facts.get("air")
    if version is None:
        found.append(
            HostFinding(
                "air",
                "missing",
                f"{host.python} cannot import air: {facts.get('air_error')}",
                f"Install the air wheel of this version ({local_air}) into that interpreter's "
                "venv (scripts/remote_setup.sh shows how).",
            )
        )
    elif version != local_air:
        found.append(
            HostFinding(
                "air",
                f"air {version}",
                f"the remote air is {version}, this one {local_air}",
                f"Install air {local_air} there.",
            )
        )
    else:
        found.append(HostFinding("air", f"air {version}, protocol {facts.get('protocol')}"))
    for tool, why in (("git", "workspaces travel by git"), ("bwrap", "tools run in its sandbox")):
        info = facts.get(tool)
        info = info if isinstance(info, dict) else {}
        if not info.get("path"):
            found.append(
                HostFinding(
                    tool,
                    "missing",
                    f"{tool} is not on the remote PATH ({REMOTE_PATH}): {why}",
                    f"Install {tool} there (apt-get install "
                    f"{'bubblewrap' if tool == 'bwrap' else tool}).",
                )
            )
            continue
        said = info.get("version")
        words = [str(w) for w in said] if isinstance(said, list) else [str(said or "")]
        version_line = " ".join(words).strip() or "unknown version"
        if tool == "bwrap" and not info.get("sandbox"):
            found.append(
                HostFinding(
                    tool,
                    version_line,
                    f"bwrap cannot start a sandbox there: {info.get('sandbox_error')}",
                    "Allow unprivileged user namespaces there "
                    "(sysctl kernel.unprivileged_userns_clone=1).",
                )
            )
            continue
        found.append(HostFinding(tool, f"{version_line} ({info['path']})"))
    return [*found, _network(facts)]


def _network(facts: dict[str, object]) -> HostFinding:
    """Whether a command granted the network can run there (IMPL-SBX-9): slirp4netns, and a
    ``/dev/net/tun`` the user may open. Without them only such commands are refused."""
    info = facts.get("slirp4netns")
    path = info.get("path") if isinstance(info, dict) else None
    if path and facts.get("tun") is True:
        return HostFinding("network", f"slirp4netns ({path})")
    return HostFinding(
        "network",
        "no /dev/net/tun it may open" if path else "no slirp4netns",
        "a command granted the network is refused there: it runs in a network namespace "
        "of its own that slirp4netns connects through /dev/net/tun",
        "Install slirp4netns there (apt-get install slirp4netns) and make /dev/net/tun mode 0666.",
        severity="warning",
    )
