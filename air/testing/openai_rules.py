"""OpenAI chat completions' request rules, as the real API documents and enforces them.

Owns: ``openai_problem`` — the bearer key (or a keyless local server), the known fields,
``max_tokens`` within the model's ceiling, at most ``MAX_TOOLS`` function tools, their names
and object schemas, message roles and content shapes, ``tool_calls`` ids and the ``tool``
messages answering them; the reasoning models (gpt-6*, gpt-5*, o1/o3/o4*) refuse
``max_tokens`` and a temperature other than 1, ``reasoning_effort`` is taken only by the models
and values that take it, and gpt-6* call function tools here only at effort none; DeepSeek's
V4 models (thinking by default) refuse a tool-call turn sent back without its
``reasoning_content``, Gemini 3+ a reply's first tool call without its thought signature,
Mistral's models ``stream_options``; OpenRouter's ``google/gemini-3*`` and ``anthropic/claude-*``
a turn without the ``reasoning_details`` it came with (``air.testing.openrouter_rules``). A rule
more lenient than the real API is a defect (IMPL-API-1).
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any

from air.testing.openrouter_rules import openrouter_problem
from air.testing.problems import TOOL_NAME, Problem, ceiling, invalid

_OPENAI_FIELDS = {
    "model",
    "messages",
    "max_tokens",
    "max_completion_tokens",
    "stream",
    "stream_options",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "temperature",
    "top_p",
    "stop",
    "n",
    "seed",
    "user",
    "response_format",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "metadata",
    "store",
    "reasoning_effort",
    "service_tier",
}

MAX_TOOLS = 128
"""The API reference's bound on ``tools`` ("A max of 128 functions are supported")."""


def _openai_tools(body: dict[str, Any]) -> tuple[set[str], Problem | None]:
    tools = body.get("tools")
    if tools is None:
        return set(), None
    if not isinstance(tools, list):
        return set(), invalid("Invalid type for 'tools': expected an array.", "invalid_type")
    if len(tools) > MAX_TOOLS:
        return set(), invalid(
            f"Invalid 'tools': array too long. Expected an array with maximum length "
            f"{MAX_TOOLS}, but got an array with length {len(tools)} instead.",
            "array_above_max_length",
            param="tools",
        )
    names: set[str] = set()
    for k, tool in enumerate(tools):
        if not isinstance(tool, dict) or tool.get("type") != "function":
            return names, invalid(f"Invalid value for 'tools[{k}].type': expected 'function'.")
        fn = tool.get("function")
        if not isinstance(fn, dict):
            return names, invalid(f"Missing required parameter: 'tools[{k}].function'.")
        name = fn.get("name")
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            return names, invalid(
                f"Invalid 'tools[{k}].function.name': string does not match pattern. Expected a "
                "string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.",
                "invalid_value",
            )
        if name in names:
            return names, invalid(f"Duplicate function name '{name}' in 'tools'.")
        names.add(name)
        params = fn.get("parameters")
        if params is not None and (not isinstance(params, dict) or params.get("type") != "object"):
            return names, invalid(
                f"Invalid schema for function '{name}': schema must be a JSON Schema of "
                "'type: \"object\"'.",
                "invalid_function_parameters",
            )
    return names, None


def _openai_content(where: str, content: Any) -> Problem | None:
    if isinstance(content, str):
        return None
    if not isinstance(content, list):
        return invalid(f"Invalid type for '{where}': expected a string or an array.")
    if not content:
        return invalid(
            f"Invalid '{where}': empty array. Expected an array with minimum length 1, but got "
            "an empty array instead.",
            "empty_array",
        )
    for k, part in enumerate(content):
        if not isinstance(part, dict) or part.get("type") != "text":
            return invalid(f"Invalid value: '{where}[{k}].type'. Supported values are: 'text'.")
        if not isinstance(part.get("text"), str):
            return invalid(f"Missing required parameter: '{where}[{k}].text'.")
    return None


def _openai_messages(messages: Any) -> Problem | None:
    if not isinstance(messages, list):
        return invalid("Missing required parameter: 'messages'.")
    if not messages:
        return invalid("[] is too short - 'messages'", "empty_array")
    pending: list[str] = []
    offered: set[str] = set()
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            return invalid(f"Invalid type for '{where}': expected an object.")
        role = message.get("role")
        if role not in ("system", "developer", "user", "assistant", "tool"):
            return invalid(
                f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', "
                "'user', 'tool', and 'developer'.",
                "invalid_value",
            )
        if role != "tool" and pending:
            return invalid(
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(pending)}"
            )
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str) or call_id not in offered:
                return invalid(
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'."
                )
            if call_id in pending:
                pending.remove(call_id)
            problem = _openai_content(f"{where}.content", message.get("content"))
            if problem is not None:
                return problem
            continue
        offered = set() if role != "assistant" else offered
        if role == "assistant":
            calls = message.get("tool_calls")
            content = message.get("content")
            if calls is None and content is None:
                return invalid(f"Invalid value for '{where}.content': expected a string, got null.")
            if content is not None:
                problem = _openai_content(f"{where}.content", content)
                if problem is not None:
                    return problem
            offered = set()
            for k, call in enumerate(calls or []):
                cw = f"{where}.tool_calls[{k}]"
                if (
                    not isinstance(call, dict)
                    or not isinstance(call.get("id"), str)
                    or not call["id"]
                ):
                    return invalid(f"Missing required parameter: '{cw}.id'.")
                if call.get("type") != "function":
                    return invalid(f"Missing required parameter: '{cw}.type'.")
                fn = call.get("function")
                if not isinstance(fn, dict):
                    return invalid(f"Missing required parameter: '{cw}.function'.")
                name = fn.get("name")
                if not isinstance(name, str) or not TOOL_NAME.match(name):
                    return invalid(
                        f"Invalid '{cw}.function.name': string does not match pattern. Expected "
                        "a string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.",
                        "invalid_value",
                    )
                if not isinstance(fn.get("arguments"), str):
                    return invalid(
                        f"Invalid type for '{cw}.function.arguments': expected a string."
                    )
                offered.add(call["id"])
            pending = list(offered)
            continue
        problem = _openai_content(f"{where}.content", message.get("content"))
        if problem is not None:
            return problem
    if pending:
        return invalid(
            "An assistant message with 'tool_calls' must be followed by tool messages responding "
            f"to each 'tool_call_id'. The following tool_call_ids did not have response "
            f"messages: {', '.join(pending)}"
        )
    return None


_REASONING = re.compile(r"^(?:gpt-6|gpt-5|o1|o3|o4)")
"""The models that refuse ``max_tokens`` (reasoning models: ``max_completion_tokens`` only)."""
_CHAT_TOOLS_AT_NONE = re.compile(r"^gpt-6")
"""The models whose Chat Completions call function tools only at ``reasoning_effort`` none
(their model pages: "Use the Responses API for built-in tools and function calling")."""


_DEEPSEEK_THINKING = re.compile(r"^deepseek-v4")
"""DeepSeek's V4 models, thinking by default: a turn that called tools must come back with its
``reasoning_content`` (their thinking-mode guide: "the reasoning_content must be fully passed
back to the API in all subsequent requests ... the API will return a 400 error")."""


def _deepseek_problem(model: str, body: dict[str, Any]) -> Problem | None:
    if not _DEEPSEEK_THINKING.match(model):
        return None
    for message in body.get("messages") or []:
        if (
            isinstance(message, dict)
            and message.get("role") == "assistant"
            and message.get("tool_calls")
            and not isinstance(message.get("reasoning_content"), str)
        ):
            return invalid(
                "The reasoning_content in the thinking mode must be passed back to the API.",
                "invalid_request_error",
            )
    return None


GEMINI_SIGNS = re.compile(r"^gemini-(?:3|4)")
"""Gemini 3 and later on Google's OpenAI-compatible endpoint: the first call of each reply
carries ``extra_content.google.thought_signature``, which must come back unchanged ("Function
call is missing a thought_signature in functionCall parts", their thought-signatures guide)."""


def thought_signature(call_id: str) -> str:
    """The signature this server gives the call ``call_id`` (and expects back)."""
    return base64.b64encode(hashlib.sha256(f"air-fake:{call_id}".encode()).digest()).decode()


def _gemini_problem(model: str, body: dict[str, Any]) -> Problem | None:
    if not GEMINI_SIGNS.match(model):
        return None
    for message in body.get("messages") or []:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        first = (message.get("tool_calls") or [None])[0]
        if not isinstance(first, dict):
            continue
        extra = first.get("extra_content")
        google = extra.get("google") if isinstance(extra, dict) else None
        signed = google.get("thought_signature") if isinstance(google, dict) else None
        if signed is None:
            return invalid(
                "Function call is missing a thought_signature in functionCall parts. This is "
                "required for tools to work correctly, and missing thought_signature may lead "
                "to degraded model performance."
            )
        if signed != thought_signature(str(first.get("id"))):
            return invalid("Corrupted thought signature.")
    return None


_MISTRAL = re.compile(r"^(?:mistral|magistral|devstral|codestral|ministral)-")
"""Mistral's models on its own API, which refuses a field it does not document (422
``extra_forbidden``, "Extra inputs are not permitted"): ``stream_options``,
``max_completion_tokens``, ``reasoning_effort`` on a model without it."""


def _mistral_problem(model: str, body: dict[str, Any]) -> Problem | None:
    if not _MISTRAL.match(model):
        return None
    for name in ("stream_options", "max_completion_tokens"):
        if name in body:
            return Problem(422, "invalid_request_error", "Extra inputs are not permitted", None)
    return None


def _efforts(model: str) -> tuple[str, ...]:
    """The ``reasoning_effort`` values ``model`` takes (empty: the parameter is refused)."""
    if _DEEPSEEK_THINKING.match(model):  # mapped to low, high or max
        return ("minimal", "low", "medium", "high", "xhigh", "max", "ultra")
    if not _REASONING.match(model) or model.startswith("gpt-5-chat"):
        return ()
    if model.startswith(("gpt-6.1-sol", "gpt-6-astra")):
        return ("low", "medium", "high", "xhigh")  # no none; max only on Responses
    if model.startswith("gpt-6"):
        return ("none", "low", "medium", "high", "xhigh", "max")
    if model.startswith("gpt-5."):
        return ("none", "low", "medium", "high")
    if model.startswith("gpt-5"):
        return ("minimal", "low", "medium", "high")
    return ("low", "medium", "high")


def _unsupported(parameter: str, message: str) -> Problem:
    return invalid(message, "unsupported_parameter", param=parameter)


def _reasoning_problem(model: str, body: dict[str, Any]) -> Problem | None:
    """The parameters a reasoning model refuses, and ``reasoning_effort`` where it is not
    taken or not one of the model's values."""
    if _REASONING.match(model):
        if "max_tokens" in body:
            return _unsupported(
                "max_tokens",
                "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                "'max_completion_tokens' instead.",
            )
        temperature = body.get("temperature")
        if temperature is not None and temperature != 1:
            return invalid(
                f"Unsupported value: 'temperature' does not support {temperature} with this "
                "model. Only the default (1) value is supported.",
                "unsupported_value",
                param="temperature",
            )
    if _CHAT_TOOLS_AT_NONE.match(model) and body.get("tools"):
        effort = body.get("reasoning_effort", "medium")
        if effort != "none":
            return _unsupported(
                "tools",
                f"Function tools are not supported in Chat Completions with reasoning_effort "
                f"'{effort}' for this model. Set reasoning_effort to 'none', or use the "
                "Responses API.",
            )
    if "reasoning_effort" not in body:
        return None
    takes = _efforts(model)
    if not takes:
        return _unsupported(
            "reasoning_effort",
            "Unsupported parameter: 'reasoning_effort' is not supported with this model.",
        )
    effort = body["reasoning_effort"]
    if effort not in takes:
        listed = ", ".join(f"'{t}'" for t in takes[:-1]) + f", and '{takes[-1]}'"
        return invalid(
            f"Invalid value: '{effort}'. Supported values are: {listed}.",
            "invalid_value",
            param="reasoning_effort",
        )
    return None


def bearer_problem(
    headers: dict[str, str], *, api_key: str | None, keyless: bool = False
) -> Problem | None:
    """The 401 of a request without a valid bearer key (both OpenAI wires)."""
    auth = headers.get("authorization", "")
    if not auth and not keyless:
        return Problem(
            401,
            "invalid_request_error",
            "You didn't provide an API key. You need to provide your API key in an "
            "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
        )
    if auth:
        scheme, _, token = auth.partition(" ")
        if scheme.lower() != "bearer" or not token or (api_key is not None and token != api_key):
            return Problem(
                401, "invalid_request_error", "Incorrect API key provided.", "invalid_api_key"
            )
    return None


def openai_problem(
    headers: dict[str, str],
    body: Any,
    *,
    api_key: str | None = None,
    keyless: bool = False,
    ceilings: dict[str, int] | None = None,
) -> Problem | None:
    """Why chat completions would refuse this request, or ``None`` when it is valid.

    Args:
        keyless: accept a request without ``Authorization`` (a local server such as Ollama).
    """
    problem = bearer_problem(headers, api_key=api_key, keyless=keyless)
    if problem is not None:
        return problem
    if not isinstance(body, dict):
        return invalid("We could not parse the JSON body of your request.")
    extra = set(body) - _OPENAI_FIELDS
    if extra:
        return invalid(f"Unrecognized request argument supplied: {sorted(extra)[0]}")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return invalid("you must provide a model parameter")
    if ceilings is not None and model not in ceilings:
        return Problem(
            404,
            "invalid_request_error",
            f"The model `{model}` does not exist or you do not have access to it.",
            "model_not_found",
        )
    problem = (
        _reasoning_problem(model, body)
        or _deepseek_problem(model, body)
        or _gemini_problem(model, body)
        or _mistral_problem(model, body)
        or openrouter_problem(model, body)
    )
    if problem is not None:
        return problem
    most = ceiling(model, ceilings)
    for name in ("max_tokens", "max_completion_tokens"):
        value = body.get(name)
        if value is None:
            continue
        if type(value) is not int or value < 1:
            return invalid(
                f"Invalid '{name}': integer below minimum value.", "integer_below_min_value"
            )
        if value > most:
            return invalid(
                f"{name} is too large: {value}. This model supports at most {most} "
                f"completion tokens, whereas you provided {value}.",
                "invalid_value",
            )
    if "stream_options" in body and body.get("stream") is not True:
        return invalid("The 'stream_options' parameter is only allowed when 'stream' is enabled.")
    names, problem = _openai_tools(body)
    if problem is not None:
        return problem
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        chosen = (choice.get("function") or {}).get("name")
        if chosen not in names:
            return invalid(f"Invalid value for 'tool_choice': function '{chosen}' is not in tools.")
    elif choice is not None and choice not in ("auto", "none", "required"):
        return invalid("Invalid value for 'tool_choice'.", "invalid_value")
    return _openai_messages(body.get("messages"))
