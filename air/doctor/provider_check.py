"""The doctor's provider check: the model configuration loads, keys are set, local servers answer.

Owns ``ProviderCheck``: models.yaml loads (``load`` raises ``config_error``), each provider's
``auth_ref`` and ``header_refs`` name set variables (no value is read into the report), a local
``base_url`` (127.0.0.1, localhost) answers HTTP, and no configured model is one its vendor
retired (``retired``, given by the CLI); ``found()`` lists each provider's state and
the client libraries' versions.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlparse

from air.contracts.error import AirException
from air.contracts.provider import ModelsConfig
from air.doctor.service import Problem, Severity, issue

__all__ = ["ProviderCheck"]


def _is_local(url: str) -> bool:
    host = urlparse(url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ProviderCheck:
    """Provider configuration: models.yaml loads (``load`` raises ``config_error``), each
    ``auth_ref`` and ``header_refs`` names a set variable (no value is read into the report),
    and a local
    ``base_url`` (127.0.0.1, localhost) answers HTTP."""

    name = "providers"

    def __init__(
        self,
        load: Callable[[], ModelsConfig],
        environ: Mapping[str, str],
        *,
        timeout_s: float = 3.0,
        retired: Callable[[ModelsConfig, str], AirException | None] | None = None,
    ) -> None:
        self.load = load
        self.environ = environ
        self.timeout_s = timeout_s
        self.retired = retired
        """Why a configured model cannot be called, its vendor having retired it (the CLI
        passes ``air.llm.lifecycle.retired_refusal``)."""
        self.facts: dict[str, Any] = {}

    async def run(self) -> list[Problem]:
        try:
            config = self.load()
        except AirException as exc:
            return [Problem(issue(self.name, "blocking", exc.error.message, exc.user_action))]
        problems: list[Problem] = []
        self.facts = {"sources": list(config.sources), "default": config.default, "providers": {}}
        if not config.providers:
            problems.append(
                Problem(
                    issue(
                        self.name,
                        "info",
                        "no model provider is configured",
                        "Set ANTHROPIC_API_KEY or OPENAI_API_KEY (OPENAI_BASE_URL for a local "
                        "server), or write ~/.air/models.yaml (`air init --models` writes a "
                        "template) to run real tasks.",
                    )
                )
            )
        for pid, provider in config.providers.items():
            seen: dict[str, Any] = {"kind": str(provider.kind), "base_url": provider.base_url}
            if provider.auth_ref:
                seen["auth_ref"] = provider.auth_ref
                seen["auth_ref_set"] = bool(self.environ.get(provider.auth_ref))
            if provider.header_refs:
                seen["header_refs"] = dict(provider.header_refs)
            for field, ref in provider.credential_refs():
                if not self.environ.get(ref):
                    problems.append(
                        Problem(
                            issue(
                                f"{self.name}.{pid}",
                                "warning",
                                f"provider {pid}: the variable {ref} ({field}) is not set",
                                f"Export {ref} before `air run`.",
                            )
                        )
                    )
            if provider.base_url and _is_local(provider.base_url):
                reached = await self._reach(provider.base_url)
                seen["reachable"] = reached is None
                if reached is not None:
                    problems.append(
                        Problem(
                            issue(
                                f"{self.name}.{pid}",
                                "warning",
                                f"provider {pid}: {provider.base_url} does not answer ({reached})",
                                "Start the local model server, or fix base_url in models.yaml.",
                            )
                        )
                    )
            self.facts["providers"][pid] = seen
        return problems + self._retired(config)

    def _retired(self, config: ModelsConfig) -> list[Problem]:
        """A retired model as the default (blocking: every run is refused), a role's or a rung
        of the escalation ladder (a warning)."""
        if self.retired is None:
            return []
        refs = [config.default, *config.roles.values(), *config.escalation]
        problems = []
        for ref in dict.fromkeys(r for r in refs if r):
            refusal = self.retired(config, ref)
            if refusal is not None:
                severity: Severity = "blocking" if ref == config.default else "warning"
                problems.append(
                    Problem(
                        issue(
                            f"{self.name}.retired",
                            severity,
                            refusal.error.message,
                            refusal.user_action or "",
                        )
                    )
                )
        return problems

    def found(self) -> str:
        """The client libraries' versions and each configured provider's state."""
        from importlib.metadata import PackageNotFoundError, version

        libs = []
        for lib in ("anthropic", "httpx"):
            try:
                libs.append(f"{lib} {version(lib)}")
            except PackageNotFoundError:
                libs.append(f"{lib} not installed")
        if "providers" not in self.facts:
            return "the model configuration does not load; " + ", ".join(libs)
        seen = []
        for pid, p in self.facts["providers"].items():
            bits = [p["kind"]]
            if "auth_ref" in p:
                bits.append(f"{p['auth_ref']} {'set' if p['auth_ref_set'] else 'NOT set'}")
            if "reachable" in p:
                bits.append(f"{p['base_url']} {'answers' if p['reachable'] else 'does not answer'}")
            seen.append(f"{pid} ({', '.join(bits)})")
        configured = "; ".join(seen) if seen else "no provider configured"
        return f"{configured}; default {self.facts['default'] or 'none'}; {', '.join(libs)}"

    async def _reach(self, url: str) -> str | None:
        import httpx

        try:
            async with httpx.AsyncClient(timeout=self.timeout_s, trust_env=False) as client:
                await client.get(url)
        except httpx.HTTPError as exc:
            return type(exc).__name__
        return None
