"""What a local OpenAI-compatible server says about the model it serves, as the real ones do.

Owns ``LocalServerInfo``: the introspection endpoints of Ollama (``POST /api/show``: the
model's ``parameters`` text, ``num_ctx`` only when the Modelfile sets it, and ``model_info``
with ``<arch>.context_length``; ``GET /v1/models`` without any length), llama.cpp's
``llama-server`` (``GET /props``: ``default_generation_settings.n_ctx``; ``GET /v1/models``
with the training length ``meta.n_ctx_train`` only) and vLLM (``GET /v1/models``:
``data[].max_model_len``). Any other path is a 404, as on those servers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from air.testing.wire_replies import Reply, json_reply

__all__ = ["LocalServerInfo"]


@dataclass(frozen=True)
class LocalServerInfo:
    flavour: Literal["ollama", "llama.cpp", "vllm"]
    model: str
    context_length: int
    """vLLM ``max_model_len``, llama.cpp ``n_ctx``; Ollama: the model's own length
    (``model_info``)."""
    num_ctx: int | str | None = None
    """Ollama: the Modelfile's ``num_ctx`` parameter (``None``: not set; a string: its text)."""
    trained_length: int = 131_072
    """llama.cpp: ``n_ctx_train`` (what the model was trained for, not what is served)."""

    def answer(self, method: str, path: str, body: Any) -> Reply | None:
        """The reply to an introspection request, ``None`` when ``path`` is not one."""
        path = path.split("?", 1)[0].rstrip("/")
        if method == "GET" and path == "/v1/models":
            return json_reply(200, {"object": "list", "data": [self._listed()]})
        if self.flavour == "ollama" and method == "POST" and path == "/api/show":
            return self._show(body)
        if self.flavour == "llama.cpp" and method == "GET" and path == "/props":
            return json_reply(
                200,
                {
                    "default_generation_settings": {
                        "n_ctx": self.context_length,
                        "params": {"n_predict": -1, "temperature": 0.8},
                    },
                    "total_slots": 1,
                    "model_path": f"/models/{self.model}.gguf",
                    "modalities": {"vision": False, "audio": False},
                    "build_info": "b6000",
                },
            )
        if method == "GET" or path.startswith("/api/") or path == "/props":
            return json_reply(404, {"error": {"code": 404, "message": "File Not Found"}})
        return None

    def _listed(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"id": self.model, "object": "model", "created": 1_700_000_000}
        if self.flavour == "vllm":
            entry.update(owned_by="vllm", root=self.model, max_model_len=self.context_length)
        elif self.flavour == "llama.cpp":
            entry.update(owned_by="llamacpp", meta={"n_ctx_train": self.trained_length})
        else:
            entry.update(owned_by="library")
        return entry

    def _show(self, body: Any) -> Reply:
        name = body.get("model") or body.get("name") if isinstance(body, dict) else None
        if name != self.model:
            return json_reply(404, {"error": f"model '{name}' not found"})
        parameters = 'stop "<|im_end|>"'
        if self.num_ctx is not None:
            parameters += f"\nnum_ctx {self.num_ctx}"
        return json_reply(
            200,
            {
                "modelfile": f"FROM {self.model}\n",
                "parameters": parameters,
                "template": "{{ .Prompt }}",
                "details": {"format": "gguf", "family": "qwen2", "parameter_size": "7.6B"},
                "model_info": {
                    "general.architecture": "qwen2",
                    "qwen2.context_length": self.context_length,
                    "qwen2.embedding_length": 3584,
                },
                "capabilities": ["completion", "tools"],
            },
        )
