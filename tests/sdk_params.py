"""Strict validation of a payload against the official SDKs' own request TypedDicts.

pydantic's TypeAdapter accepts these TypedDicts but validates ``Iterable[...]`` fields
lazily and ignores unknown keys, so a misspelled field inside a content block passes.
This walks the SDK's type hints instead: every key must be declared, every required key
present, every literal and scalar of the right kind, every list item checked.
"""

from __future__ import annotations

import json
import collections.abc as cabc
import types
import typing
from typing import Any

from typing_extensions import NotRequired, Required, get_args, get_origin, get_type_hints, is_typeddict


class ParamError(AssertionError):
    pass


def check(value: Any, tp: Any, path: str = "$") -> None:
    origin = get_origin(tp)
    if tp is Any or tp is object:
        return
    if origin is typing.Annotated:
        return check(value, get_args(tp)[0], path)
    if origin in (Required, NotRequired):
        return check(value, get_args(tp)[0], path)
    if isinstance(tp, typing.TypeVar):
        return
    if origin is typing.Literal:
        if value not in get_args(tp):
            raise ParamError(f"{path}: {value!r} is not one of {get_args(tp)}")
        return
    if origin in (typing.Union, types.UnionType):
        errors = []
        for arg in get_args(tp):
            try:
                check(value, arg, path)
                return
            except ParamError as exc:
                errors.append(str(exc))
        # Report the variant that got furthest (the longest path), it is the likely intent.
        raise ParamError(max(errors, key=lambda e: e.split(":")[0].count(".") + e.split(":")[0].count("[")))
    if tp is type(None) or tp is None:
        if value is not None:
            raise ParamError(f"{path}: expected null, got {type(value).__name__}")
        return
    if is_typeddict(tp):
        if not isinstance(value, dict):
            raise ParamError(f"{path}: expected an object ({tp.__name__}), got {type(value).__name__}")
        hints = get_type_hints(tp, include_extras=True)
        unknown = set(value) - set(hints)
        if unknown:
            raise ParamError(f"{path}: {tp.__name__} has no field(s) {sorted(unknown)}")
        # Required[...] marks are read from the hints: __required_keys__ misses them when
        # the SDK's TypedDicts are total=False (as they are) on some Python versions.
        total = getattr(tp, "__total__", True)
        required = set(tp.__required_keys__) | {
            k for k, h in hints.items() if get_origin(h) is Required or (total and get_origin(h) is not NotRequired)
        }
        missing = required - set(value)
        if missing:
            raise ParamError(f"{path}: {tp.__name__} needs {sorted(missing)}")
        for key, item in value.items():
            check(item, hints[key], f"{path}.{key}")
        return
    if origin in (list, cabc.Iterable, cabc.Sequence, typing.Iterable, typing.Sequence, typing.List):
        if not isinstance(value, list):
            raise ParamError(f"{path}: expected a list, got {type(value).__name__}")
        (arg,) = get_args(tp) or (Any,)
        for i, item in enumerate(value):
            check(item, arg, f"{path}[{i}]")
        return
    if origin in (dict, cabc.Mapping, typing.Dict, typing.Mapping):
        if not isinstance(value, dict):
            raise ParamError(f"{path}: expected an object, got {type(value).__name__}")
        return
    if tp is str:
        if not isinstance(value, str):
            raise ParamError(f"{path}: expected a string, got {type(value).__name__}")
        return
    if tp is bool:
        if not isinstance(value, bool):
            raise ParamError(f"{path}: expected a bool, got {type(value).__name__}")
        return
    if tp in (int, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ParamError(f"{path}: expected a number, got {type(value).__name__}")
        return
    if isinstance(tp, type):
        # A class (an SDK response model, bytes, a file type): a JSON payload is never one.
        if isinstance(value, tp):
            return
        raise ParamError(f"{path}: expected {tp.__name__}, got {type(value).__name__}")
    raise ParamError(f"{path}: cannot check {value!r} against {tp!r}")


def anthropic_request(payload: dict) -> None:
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

    check({"model": "claude-test", "max_tokens": 16, **payload}, MessageCreateParamsNonStreaming)


def anthropic_beta_request(payload: dict) -> None:
    """The beta Messages request (``client.beta.messages.create``): MCP servers and other
    beta fields are declared only there."""
    from anthropic.types.beta.message_create_params import MessageCreateParamsNonStreaming

    check({"model": "claude-test", "max_tokens": 16, **payload}, MessageCreateParamsNonStreaming)


def chat_request(payload: dict) -> None:
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming

    check({"model": "gpt-test", **payload}, CompletionCreateParamsNonStreaming)


def responses_request(payload: dict) -> None:
    from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming

    check({"model": "gpt-test", **payload}, ResponseCreateParamsNonStreaming)


# Fields OpenAI-compatible dialects add to Chat Completions, which OpenAI's own types do
# not declare (see modelwire.protocols.openai_chat): stripped before the strict check,
# and asserted by the tests that expect them.
DIALECT_MESSAGE_FIELDS = ("reasoning_content", "reasoning", "reasoning_details")
DIALECT_BODY_FIELDS = ("thinking", "enable_thinking", "thinking_budget", "chat_template_kwargs", "reasoning")


def streaming_request(protocol: str, body: dict) -> None:
    """A whole request body as a model sends it (``model``, ``stream: true`` included),
    checked strictly against the SDK's request type (the streaming variant differs only
    in ``stream``, which is checked here)."""
    body = dict(body)
    if protocol == "gemini":
        return gemini_request(body)
    if protocol == "bedrock-converse":
        return bedrock_request(body)
    if protocol == "ollama":
        return ollama_request(body)
    assert body.pop("stream") is True
    if protocol == "openai-chat":
        for key in DIALECT_BODY_FIELDS:
            body.pop(key, None)
        body["messages"] = [{k: v for k, v in m.items() if k not in DIALECT_MESSAGE_FIELDS} for m in body["messages"]]
    VALIDATORS[protocol](body)


def ollama_request(body: dict) -> None:
    """The official ollama client's ChatRequest (which takes unknown keys, so every key of
    the body and of each message must be one it declares)."""
    from ollama._types import ChatRequest, Message

    ChatRequest.model_validate(body)
    if set(body) - set(ChatRequest.model_fields):
        raise ParamError(f"$: ChatRequest has no field(s) {sorted(set(body) - set(ChatRequest.model_fields))}")
    for n, message in enumerate(body["messages"]):
        if set(message) - set(Message.model_fields):
            raise ParamError(
                f"$.messages[{n}]: Message has no field(s) {sorted(set(message) - set(Message.model_fields))}"
            )


def gemini_request(body: dict) -> None:
    """google-genai's types forbid unknown fields: every part of the body must fit them."""
    import json

    from google.genai import types

    allowed = {"contents", "systemInstruction", "tools", "toolConfig", "generationConfig"}
    if set(body) - allowed:
        raise ParamError(f"$: unknown top-level fields {sorted(set(body) - allowed)}")
    for content in body["contents"]:
        types.Content.model_validate_json(json.dumps(content))
    if "systemInstruction" in body:
        types.Content.model_validate_json(json.dumps(body["systemInstruction"]))
    for tool in body.get("tools", []):
        types.Tool.model_validate_json(json.dumps(tool))
    if "toolConfig" in body:
        types.ToolConfig.model_validate_json(json.dumps(body["toolConfig"]))
    if "generationConfig" in body:
        types.GenerationConfig.model_validate_json(json.dumps(body["generationConfig"]))


def bedrock_request(body: dict, model: str = "some-model") -> None:
    """botocore's own validator for ConverseStream (it rejects unknown keys and wrong
    types); blobs travel as base64 in JSON and are bytes to botocore."""
    import base64

    import botocore.session
    from botocore.validate import ParamValidator

    def blobs(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: blobs(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [blobs(v) for v in value]
        if key in ("bytes", "redactedContent") and isinstance(value, str):
            return base64.b64decode(value)
        return value

    shape = (
        botocore.session.Session().get_service_model("bedrock-runtime").operation_model("ConverseStream").input_shape
    )
    report = ParamValidator().validate({"modelId": model, **blobs(body)}, shape)
    if report.has_errors():
        raise ParamError(report.generate_report())


# A formatter's payload (no ``model``, no sampling options), checked by its protocol's SDK.
VALIDATORS = {
    "anthropic": anthropic_request,
    "openai-chat": chat_request,
    "openai-responses": responses_request,
    "gemini": gemini_request,
    "bedrock-converse": bedrock_request,
    "ollama": lambda payload: ollama_request({"model": "some-model", **payload}),
}


def validate(protocol: str, payload: dict) -> None:
    """A formatter's payload checked by its protocol's SDK where this file has its checker;
    any other protocol (a plugin's, or one whose SDK's check lives in its own test file) is
    checked to be what every request is: JSON that reads back the same."""
    checker = VALIDATORS.get(protocol)
    if checker is not None:
        checker(payload)
    elif json.loads(json.dumps(payload)) != payload:
        raise ParamError(f"{protocol}: the payload is not plain JSON")
