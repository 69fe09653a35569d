"""OpenAI Responses API request rules (``POST /v1/responses``), as the API documents and
enforces them.

Owns ``responses_problem``: the bearer key, the known fields, ``max_output_tokens`` (at least
16, within the model's ceiling), ``reasoning.effort`` per model (gpt-6.1-sol and gpt-6-astra
take no ``none``; ``max`` here), sampling parameters refused by a reasoning model at an effort
other than none, ``include`` values (encrypted reasoning only for a reasoning model), flat
function tools (names, object schemas; a strict tool's schema must be strict), ``tool_choice``,
and the input items: message roles and content parts, ``function_call`` items, every
``function_call_output`` answering an earlier ``function_call`` of the same ``call_id`` and
every call answered, and reasoning items replayed with ``store: false``: each with its
``encrypted_content`` (verified), followed by the item that followed it, and an item that
followed a reasoning item (``REASONED`` ids) replayed only after it. A rule more lenient than
the real API is a defect (IMPL-API-1).
"""

from __future__ import annotations

from typing import Any

from air.testing.openai_rules import _REASONING, _efforts, _unsupported, bearer_problem
from air.testing.problems import TOOL_NAME, Problem, ceiling, invalid
from air.testing.responses_replies import REASONED, seal

__all__ = ["reasons", "responses_problem"]

_FIELDS = {
    "model",
    "input",
    "instructions",
    "max_output_tokens",
    "max_tool_calls",
    "stream",
    "stream_options",
    "store",
    "include",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "reasoning",
    "temperature",
    "top_p",
    "top_logprobs",
    "metadata",
    "previous_response_id",
    "conversation",
    "prompt",
    "prompt_cache_key",
    "prompt_cache_options",
    "prompt_cache_retention",
    "safety_identifier",
    "service_tier",
    "text",
    "truncation",
    "user",
    "background",
    "context_management",
}
_INCLUDABLE = {
    "file_search_call.results",
    "web_search_call.results",
    "web_search_call.action.sources",
    "message.input_image.image_url",
    "computer_call_output.output.image_url",
    "code_interpreter_call.outputs",
    "reasoning.encrypted_content",
    "message.output_text.logprobs",
}
MIN_OUTPUT_TOKENS = 16
_SAMPLING = ("temperature", "top_p", "top_logprobs")


def efforts(model: str) -> tuple[str, ...]:
    """The ``reasoning.effort`` values ``model`` takes on Responses (empty: none)."""
    if model.startswith(("gpt-6.1-sol", "gpt-6-astra")):
        return ("low", "medium", "high", "xhigh", "max")
    return _efforts(model)


def _effort(body: dict[str, Any]) -> str:
    reasoning = body.get("reasoning")
    effort = reasoning.get("effort") if isinstance(reasoning, dict) else None
    return effort if isinstance(effort, str) else "medium"


def reasons(body: dict[str, Any]) -> bool:
    """Whether the answer to ``body`` starts with a reasoning item (a reasoning model at an
    effort other than none)."""
    model = str(body.get("model"))
    return bool(efforts(model)) and _effort(body) != "none"


def _param(message: str, param: str, code: str | None = None) -> Problem:
    return invalid(message, code, param=param)


def _reasoning_problem(model: str, body: dict[str, Any]) -> Problem | None:
    takes = efforts(model)
    reasoning = body.get("reasoning")
    if reasoning is not None:
        if not isinstance(reasoning, dict):
            return _param("Invalid type for 'reasoning': expected an object.", "reasoning")
        effort = reasoning.get("effort")
        if effort is not None and not takes:
            return _unsupported(
                "reasoning.effort",
                "Unsupported parameter: 'reasoning.effort' is not supported with this model.",
            )
        if effort is not None and effort not in takes:
            listed = ", ".join(f"'{t}'" for t in takes[:-1]) + f", and '{takes[-1]}'"
            return _param(
                f"Invalid value: '{effort}'. Supported values are: {listed}.",
                "reasoning.effort",
                "invalid_value",
            )
    if _REASONING.match(model) and _effort(body) != "none":
        for name in _SAMPLING:
            if body.get(name) is not None:
                return _unsupported(
                    name, f"Unsupported parameter: '{name}' is not supported with this model."
                )
    include = body.get("include")
    if include is not None:
        if not isinstance(include, list):
            return _param("Invalid type for 'include': expected an array.", "include")
        for k, value in enumerate(include):
            if value not in _INCLUDABLE:
                return _param(
                    f"Invalid value: '{value}'. Supported values are: "
                    + ", ".join(f"'{v}'" for v in sorted(_INCLUDABLE))
                    + ".",
                    f"include[{k}]",
                    "invalid_value",
                )
        if "reasoning.encrypted_content" in include and not takes:
            return _param("Encrypted content is not supported with this model.", "include")
    return None


def _strict_problem(name: str, schema: dict[str, Any]) -> Problem | None:
    """A strict tool's schema: every object closed, every property required."""
    if schema.get("additionalProperties") is not False:
        return _param(
            f"Invalid schema for function '{name}': In context=(), 'additionalProperties' is "
            "required to be supplied and to be false.",
            "tools",
            "invalid_function_parameters",
        )
    properties = schema.get("properties") or {}
    missing = [p for p in properties if p not in (schema.get("required") or [])]
    if missing:
        return _param(
            f"Invalid schema for function '{name}': In context=(), 'required' is required to "
            f"be supplied and to be an array including every key in properties. Missing "
            f"'{missing[0]}'.",
            "tools",
            "invalid_function_parameters",
        )
    return None


def _tools(body: dict[str, Any]) -> tuple[set[str], Problem | None]:
    tools = body.get("tools")
    if tools is None:
        return set(), None
    if not isinstance(tools, list):
        return set(), _param("Invalid type for 'tools': expected an array.", "tools")
    names: set[str] = set()
    for k, tool in enumerate(tools):
        where = f"tools[{k}]"
        if not isinstance(tool, dict) or tool.get("type") != "function":
            return names, _param(f"Invalid value for '{where}.type'.", f"{where}.type")
        if "function" in tool:
            return names, _param(f"Unknown parameter: '{where}.function'.", f"{where}.function")
        name = tool.get("name")
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            return names, _param(
                f"Invalid '{where}.name': string does not match pattern. Expected a string "
                "that matches the pattern '^[a-zA-Z0-9_-]+$'.",
                f"{where}.name",
                "invalid_value",
            )
        if name in names:
            return names, _param(f"Duplicate function name '{name}' in 'tools'.", "tools")
        names.add(name)
        params = tool.get("parameters")
        if not isinstance(params, dict) or params.get("type") != "object":
            return names, _param(
                f"Invalid schema for function '{name}': schema must be a JSON Schema of "
                "'type: \"object\"'.",
                "tools",
                "invalid_function_parameters",
            )
        if tool.get("strict", True) is not False:  # strict by default on Responses
            problem = _strict_problem(name, params)
            if problem is not None:
                return names, problem
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        if choice.get("type") != "function" or choice.get("name") not in names:
            return names, _param(
                f"Tool choice '{choice.get('name')}' not found in 'tools' parameter.",
                "tool_choice",
            )
    elif choice is not None and choice not in ("auto", "none", "required"):
        return names, _param("Invalid value for 'tool_choice'.", "tool_choice", "invalid_value")
    return names, None


def _content(where: str, role: str, content: Any, with_id: bool) -> Problem | None:
    if isinstance(content, str) and not with_id:
        return None
    if not isinstance(content, list):
        return _param(f"Invalid type for '{where}': expected an array.", where)
    allowed = ("output_text", "refusal") if role == "assistant" else ("input_text",)
    for k, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in allowed and not (role != "assistant" and kind == "input_image"):
            return _param(
                f"Invalid value: '{kind}'. Supported values are: "
                + ", ".join(f"'{a}'" for a in allowed)
                + ".",
                f"{where}[{k}].type",
                "invalid_value",
            )
        field = "refusal" if kind == "refusal" else "text"
        if kind != "input_image" and not isinstance(part.get(field), str):
            return _param(f"Missing required parameter: '{where}[{k}].{field}'.", where)
    return None


class _Input:
    """The checks that follow the items of one ``input`` in order."""

    def __init__(self, store: bool) -> None:
        self.store = store
        self.calls: dict[str, int] = {}
        """call_id -> the position of its function_call."""
        self.answered: set[str] = set()
        self.reasoning: set[str] = set()
        """The reasoning items given so far."""
        self.needs_next: str | None = None
        """A reasoning item the fake gave, whose following item must come next."""

    def item(self, i: int, item: Any) -> Problem | None:
        where = f"input[{i}]"
        if not isinstance(item, dict):
            return _param(f"Invalid type for '{where}': expected an object.", where)
        kind = item.get("type", "message" if "role" in item else None)
        item_id = item.get("id")
        owner = REASONED.match(item_id) if isinstance(item_id, str) else None
        if self.needs_next is not None:
            first = (f"msg_{self.needs_next[3:]}_0", f"fc_{self.needs_next[3:]}_0")
            if item_id not in first:  # the item that came right after it
                return _param(
                    f"Item '{self.needs_next}' of type 'reasoning' was provided without its "
                    "required following item.",
                    "input",
                )
            self.needs_next = None
        if owner is not None and f"rs_{owner.group(1)}" not in self.reasoning:
            return _param(
                f"Item '{item_id}' of type '{kind}' was provided without its required "
                f"'reasoning' item: 'rs_{owner.group(1)}'.",
                "input",
            )
        if kind == "message":
            return self._message(where, item)
        if kind == "reasoning":
            return self._reasoning(where, item)
        if kind == "function_call":
            return self._call(i, where, item)
        if kind == "function_call_output":
            return self._output(where, item)
        return _param(f"Invalid value: '{kind}' for '{where}.type'.", f"{where}.type")

    def _message(self, where: str, item: dict[str, Any]) -> Problem | None:
        role = item.get("role")
        if role not in ("user", "assistant", "system", "developer"):
            return _param(
                f"Invalid value: '{role}'. Supported values are: 'assistant', 'system', "
                "'developer', and 'user'.",
                f"{where}.role",
                "invalid_value",
            )
        with_id = "id" in item
        if with_id and (role != "assistant" or item.get("status") is None):
            return _param(f"Missing required parameter: '{where}.status'.", where)
        return _content(f"{where}.content", str(role), item.get("content"), with_id)

    def _reasoning(self, where: str, item: dict[str, Any]) -> Problem | None:
        rs = item.get("id")
        if not isinstance(rs, str) or not rs:
            return _param(f"Missing required parameter: '{where}.id'.", where)
        if not isinstance(item.get("summary"), list):
            return _param(f"Missing required parameter: '{where}.summary'.", where)
        secret = item.get("encrypted_content")
        if secret is None and not self.store:
            return Problem(
                404,
                "invalid_request_error",
                f"Item with id '{rs}' not found. Items are not persisted when `store` is set "
                "to false. Try again with `store` set to true, or remove this item from your "
                "input.",
                param="input",
            )
        if secret is not None and secret != seal(rs):
            return _param(f"The encrypted content for item {rs} could not be verified.", "input")
        self.reasoning.add(rs)
        self.needs_next = rs
        return None

    def _call(self, i: int, where: str, item: dict[str, Any]) -> Problem | None:
        call_id = item.get("call_id")
        if not isinstance(call_id, str) or not call_id:
            return _param(f"Missing required parameter: '{where}.call_id'.", where)
        name = item.get("name")
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            return _param(
                f"Invalid '{where}.name': string does not match pattern.",
                f"{where}.name",
                "invalid_value",
            )
        if not isinstance(item.get("arguments"), str):
            return _param(f"Invalid type for '{where}.arguments': expected a string.", where)
        if call_id in self.calls:
            return _param(f"Duplicate item found with call_id '{call_id}'.", "input")
        self.calls[call_id] = i
        return None

    def _output(self, where: str, item: dict[str, Any]) -> Problem | None:
        call_id = item.get("call_id")
        if call_id not in self.calls:
            return _param(
                f"No tool call found for function call output with call_id {call_id}.", "input"
            )
        output = item.get("output")
        if not isinstance(output, str):
            problem = _content(f"{where}.output", "user", output, True)
            if problem is not None:
                return problem
        self.answered.add(str(call_id))
        return None

    def end(self) -> Problem | None:
        if self.needs_next is not None:
            return _param(
                f"Item '{self.needs_next}' of type 'reasoning' was provided without its "
                "required following item.",
                "input",
            )
        for call_id in self.calls:
            if call_id not in self.answered:
                return _param(f"No tool output found for function call {call_id}.", "input")
        return None


def _input_problem(body: dict[str, Any]) -> Problem | None:
    items = body.get("input")
    if isinstance(items, str):
        return None
    if not isinstance(items, list):
        return _param("Missing required parameter: 'input'.", "input")
    checks = _Input(store=body.get("store") is not False)
    for i, item in enumerate(items):
        problem = checks.item(i, item)
        if problem is not None:
            return problem
    return checks.end()


def responses_problem(
    headers: dict[str, str],
    body: Any,
    *,
    api_key: str | None = None,
    keyless: bool = False,
    ceilings: dict[str, int] | None = None,
) -> Problem | None:
    """Why ``POST /v1/responses`` would refuse this request, or ``None`` when it is valid."""
    problem = bearer_problem(headers, api_key=api_key, keyless=keyless)
    if problem is not None:
        return problem
    if not isinstance(body, dict):
        return invalid("We could not parse the JSON body of your request.")
    extra = sorted(set(body) - _FIELDS)
    if extra:
        return _param(f"Unknown parameter: '{extra[0]}'.", extra[0], "unknown_parameter")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return _param("Missing required parameter: 'model'.", "model")
    if ceilings is not None and model not in ceilings:
        return Problem(
            404,
            "invalid_request_error",
            f"The model `{model}` does not exist or you do not have access to it.",
            "model_not_found",
        )
    limit = body.get("max_output_tokens")
    most = ceiling(model, ceilings)
    if limit is not None:
        if type(limit) is not int or limit < MIN_OUTPUT_TOKENS:
            return _param(
                f"Invalid 'max_output_tokens': integer below minimum value. Expected a value "
                f">= {MIN_OUTPUT_TOKENS}, but got {limit} instead.",
                "max_output_tokens",
                "integer_below_min_value",
            )
        if limit > most:
            return _param(
                f"max_output_tokens is too large: {limit}. This model supports at most "
                f"{most} output tokens, whereas you provided {limit}.",
                "max_output_tokens",
                "invalid_value",
            )
    if "stream_options" in body and body.get("stream") is not True:
        return _param(
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            "stream_options",
        )
    problem = _reasoning_problem(model, body)
    if problem is not None:
        return problem
    _names, problem = _tools(body)
    if problem is not None:
        return problem
    return _input_problem(body)
