"""The local model servers of the provider tests: the strict servers of ``air.testing`` (every
request is checked the way the real APIs check it; see air/testing/strict_servers.py)."""

from __future__ import annotations

from air.testing.cassette_model import CassetteModel
from air.testing.strict_servers import LocalServer, Received, StrictServer
from air.testing.wire_replies import Reply, Turn, anthropic_sse, blocks_sse, json_reply, openai_sse

__all__ = [
    "CassetteModel",
    "LocalServer",
    "Received",
    "Reply",
    "StrictServer",
    "Turn",
    "anthropic_sse",
    "blocks_sse",
    "json_reply",
    "openai_sse",
]
