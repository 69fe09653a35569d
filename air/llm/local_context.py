"""The context length a local OpenAI-compatible server says it serves a model with.

Owns ``local_context_length``: asked only of a server on this machine (127.0.0.1, localhost,
::1), for a model neither models.yaml nor the catalogue sizes. It reads what the real servers
expose: vLLM ``GET /v1/models`` (``data[].max_model_len``), Ollama ``POST /api/show``
(``num_ctx`` among the model's ``parameters``, else ``model_info.<arch>.context_length``) and
llama.cpp ``GET /props`` (``default_generation_settings.n_ctx``). Each request has a short
timeout; a server that says nothing, or a window no model has (over ``WINDOW_MAX``), leaves the
configured value. Standard library and the contracts only.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit

from air.contracts.provider import WINDOW_MAX

__all__ = ["LOCAL_HOSTS", "is_local", "local_context_length"]

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d{1,12})\s*$", re.MULTILINE)


def is_local(base_url: str | None) -> bool:
    return base_url is not None and urlsplit(base_url).hostname in LOCAL_HOSTS


def _get(url: str, body: dict[str, Any] | None, timeout_s: float) -> Any:
    import urllib.error
    import urllib.request  # only when a local server is asked: it costs start-up imports

    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url, data=data, headers={"content-type": "application/json"} if data else {}
    )
    try:
        # the URL is the configured local base_url: a server on this machine
        with urllib.request.urlopen(request, timeout=timeout_s) as reply:
            return json.loads(reply.read())
    except (OSError, ValueError, urllib.error.URLError):
        return None


def _positive(value: Any) -> int | None:
    """A window a model can have, else None (a server's 400 digits would end the run)."""
    return value if type(value) is int and 0 < value <= WINDOW_MAX else None


def _vllm(base: str, model: str, timeout_s: float) -> int | None:
    listing = _get(f"{base}/models", None, timeout_s)
    if not isinstance(listing, dict) or not isinstance(listing.get("data"), list):
        return None
    for entry in listing["data"]:
        if isinstance(entry, dict) and entry.get("id") == model:
            return _positive(entry.get("max_model_len"))
    return None


def _ollama(root: str, model: str, timeout_s: float) -> int | None:
    shown = _get(f"{root}/api/show", {"model": model}, timeout_s)
    if not isinstance(shown, dict):
        return None
    match = _NUM_CTX.search(str(shown.get("parameters") or ""))
    if match and _positive(int(match.group(1))):
        return int(match.group(1))
    info = shown.get("model_info")
    if isinstance(info, dict):
        for key, value in info.items():
            if key.endswith(".context_length") and _positive(value):
                return int(value)
    return None


def _llama_cpp(root: str, timeout_s: float) -> int | None:
    props = _get(f"{root}/props", None, timeout_s)
    if not isinstance(props, dict):
        return None
    settings = props.get("default_generation_settings")
    if isinstance(settings, dict) and _positive(settings.get("n_ctx")):
        return int(settings["n_ctx"])
    return _positive(props.get("n_ctx"))


def local_context_length(base_url: str, model: str, *, timeout_s: float = 1.0) -> int | None:
    """The context length the local server at ``base_url`` (``.../v1``) reports for ``model``,
    or ``None`` (not local, or it does not say)."""
    if not is_local(base_url):
        return None
    base = base_url.rstrip("/")
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    return (
        _vllm(base, model, timeout_s)
        or _ollama(root, model, timeout_s)
        or _llama_cpp(root, timeout_s)
    )
