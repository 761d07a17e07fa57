"""Switching providers mid-conversation: a reply each provider really produced (the
recordings in ../shared/recorded-streams), continued on every other target.

Every payload must pass the strict check against the SDK's request type, and keep what
the target can take: all the text, every client tool call and its result, and the
provider-specific thinking (signatures, reasoning items, reasoning fields) exactly where
the target is the provider that made it, and nowhere else.
"""

from __future__ import annotations

import json

import pytest
import sdk_params

from modelwire.protocols import decode_sse
from modelwire.errors import ProviderError
from modelwire.message import AssistantMsg, ToolResultBlock, UserMsg, origin
from modelwire.models import load_model

from paths import HAVE_SHARED, PA, ROOT

if not HAVE_SHARED:  # pragma: no cover - the shared folder sits beside the repository
    pytest.skip("../shared/recorded-streams is not present", allow_module_level=True)


def _provider_of(path, protocol: str) -> str:
    """The provider that sent a recording (see the recordings' INDEX.md)."""
    name = path.name.lower()
    if "tool_use_failed" in name:
        return "groq"
    for provider in ("groq", "openrouter", "deepseek"):
        if provider in name:
            return provider
    return {"anthropic": "anthropic", "openai-chat": "openai", "openai-responses": "openai-responses"}[protocol]


def _sources() -> list[tuple[str, str, object]]:
    out = []
    for path in sorted(PA.glob("*.sse")):
        raw = path.read_bytes()
        if b"event: message_start" in raw:
            protocol = "anthropic"
        elif b"chat.completion.chunk" in raw:
            protocol = "openai-chat"
        elif b"response.created" in raw:
            protocol = "openai-responses"
        else:
            continue
        if "pause_turn" in path.name and ".1." in path.name:
            continue  # a continuation: its results answer calls made in the stream before it
        out.append((protocol, _provider_of(path, protocol), path))
    for path in sorted((ROOT / "gemini").glob("*.sse")):
        out.append(("gemini", "vertex" if "vertex" in path.name else "google", path))
    out += [("bedrock-converse", "bedrock", p) for p in sorted((ROOT / "bedrock").glob("*.eventstream"))]
    out += [("anthropic", "anthropic", p) for p in sorted((ROOT / "anthropic-sdk-python").glob("*.txt"))]
    out += [("openai-chat", "openai", p) for p in sorted((ROOT / "openai-python").glob("*.bin"))]
    # OpenAI-compatible servers with ids of their own (Kimi: "functions.weather:0").
    out += [("openai-chat", "groq", p) for p in sorted((ROOT / "openai-compat").rglob("*kimi*.0.sse"))]
    return out


SOURCES = _sources()
TARGETS = [
    "anthropic",
    "openai",
    "openai-responses",
    "deepseek",
    "groq",
    "openrouter",
    "google",
    "vertex",
    "bedrock",
    "mistral",
    "minimax",
    "bedrock-anthropic",
    "vertex-anthropic",
    "ollama",
    "azure-v1",
    "azure-responses",
]


def _bedrock_id_pattern() -> str:
    import botocore.session

    shape = (
        botocore.session.Session().get_service_model("bedrock-runtime").shape_for("ToolUseBlock").members["toolUseId"]
    )
    return f"^{shape.metadata['pattern']}$"


# The tool-call ids each target takes, as its API documents them (Bedrock's from botocore's
# own shape): an id that breaks them must never be sent there.
ID_PATTERNS = {
    "anthropic": r"^[a-zA-Z0-9_-]+$",
    "minimax": r"^[a-zA-Z0-9_-]+$",
    "bedrock-anthropic": r"^[a-zA-Z0-9_-]+$",
    "vertex-anthropic": r"^[a-zA-Z0-9_-]+$",
    "mistral": r"^[a-zA-Z0-9]{9}$",
    "bedrock": _bedrock_id_pattern(),
    "openai": r"^.{1,40}$",
    "openai-responses": r"^.{1,40}$",
    "azure-v1": r"^.{1,40}$",
    "azure-responses": r"^.{1,40}$",
}
TARGET_PROTOCOL = {"anthropic": "anthropic", "openai-responses": "openai-responses"}


def conversation(protocol: str, provider: str, path) -> list:
    reply = AssistantMsg("agent", [], id="reply")
    try:
        events = decode_sse(protocol, path.read_bytes(), "reply", provider=provider)
    except ProviderError as err:
        events = err.events
    for event in events:
        reply.append_event(event)
    answered = {b.id for b in reply.content if b.type == "tool_result"}
    for call in [b for b in reply.content if b.type == "tool_call" and not getattr(b, "server_side", False)]:
        if call.id not in answered:
            reply.content.append(
                ToolResultBlock(id=call.id, name=call.name, output=f"result of {call.id}", state="success")
            )
    return [UserMsg("user", "Go on."), reply, UserMsg("user", "And then?")]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("source", SOURCES, ids=lambda s: f"{s[1]}:{s[2].name}")
def test_a_recorded_reply_continues_on_every_target(source, target):
    protocol, provider, path = source
    messages = conversation(protocol, provider, path)
    reply = messages[1]
    model = load_model(f"{target}:some-model", api_key="k", base_url="http://127.0.0.1:9")  # a key: nothing is signed
    body, _ = model.build_request(messages)
    sent = json.dumps(body, ensure_ascii=False)
    raw_items = _raw_items(reply)
    # Items the provider itself sent, replayed verbatim, can be newer than the SDK's
    # request types (Anthropic's compaction block, a web search source's name): they are
    # checked by being exactly what was received; the rest of the payload strictly.
    checked = _without(body, raw_items)
    if "anthropic_version" in checked:  # Claude on a cloud: the model is in the URL, the version in the body
        checked = {
            "model": "some-model",
            "stream": True,
            **{k: v for k, v in checked.items() if k != "anthropic_version"},
        }
    sdk_params.streaming_request(model.protocol, checked)

    for block in reply.content:
        if block.type == "text" and block.text.strip():
            assert json.dumps(block.text, ensure_ascii=False)[1:-1] in sent, f"text {block.text[:40]!r} lost"
        elif block.type == "tool_call" and not getattr(block, "server_side", False):
            if model.protocol == "ollama":
                assert f'"name": "{block.name}"' in sent, f"tool call {block.name} lost"  # Ollama pairs calls by order
            elif model.protocol == "gemini" and not (
                origin(block) and origin(block).provider == target and getattr(block, "server_call_id", False)
            ):
                # Gemini pairs calls and results by position; only its own server ids travel
                assert f'"name": "{block.name}"' in sent, f"tool call {block.name} lost"
            else:
                import re

                pattern = ID_PATTERNS.get(target)
                if pattern is None or re.match(pattern, block.id):
                    assert f'"{block.id}"' in sent, f"tool call {block.id} lost"  # taken as it is
                else:
                    assert f'"{block.id}"' not in sent, f"{block.id!r} sent to {target}, which refuses it"
        elif block.type == "thinking":
            came_from = origin(block)
            takes_back = model.protocol != "openai-chat" or model.formatter.reasoning_field is not None
            native = (
                takes_back
                and came_from is not None
                and came_from.protocol == model.protocol
                and (model.protocol == "anthropic" or came_from.provider == target)
            )
            # Plain reasoning text of a tool-call turn goes to a dialect that needs it back
            # (DeepSeek), whoever wrote it, as AgentScope sends it; what is signed never does.
            text_too = getattr(model.formatter, "reasoning_on_tool_calls", False) and any(
                b.type == "tool_call" and not getattr(b, "server_side", False) for b in reply.content
            )
            for marker in _markers(block):
                expected = native or (text_too and marker in _markers(block, text_only=True))
                assert (marker in sent) == expected, (
                    f"{marker[:30]!r} from {came_from} on {target}: expected {'kept' if expected else 'not sent'}"
                )
        signature = getattr(block, "thought_signature", None)
        if signature:  # Gemini signs any part: only Gemini, and only the same endpoint, gets it back
            native = model.protocol == "gemini" and origin(block).provider == target
            assert (signature in sent) == native, f"a Gemini signature on a {block.type} block, on {target}"
    if any(b.type == "tool_call" and not getattr(b, "server_side", False) for b in reply.content):
        assert "result of " in sent
        calls, results = _call_ids(body, model.protocol)
        assert calls == results, f"calls {calls} and their results {results} disagree"  # the same id for both
        if target in ID_PATTERNS:
            import re

            assert all(re.match(ID_PATTERNS[target], i) for i in calls), (target, calls)


def _call_ids(body: dict, protocol: str) -> tuple[list[str], list[str]]:
    """The client tool-call ids of a payload, and the ids its results answer."""
    calls, results = [], []
    if protocol == "anthropic":
        for m in body["messages"]:
            for c in m["content"] if isinstance(m["content"], list) else []:
                if c["type"] == "tool_use":
                    calls.append(c["id"])
                elif c["type"] == "tool_result":
                    results.append(c["tool_use_id"])
    elif protocol == "openai-chat":
        for m in body["messages"]:
            calls += [c["id"] for c in m.get("tool_calls") or []]
            if m["role"] == "tool":
                results.append(m["tool_call_id"])
    elif protocol == "openai-responses":
        for item in body["input"]:
            if item.get("type") in ("function_call", "custom_tool_call"):
                calls.append(item["call_id"])
            elif item.get("type") in ("function_call_output", "custom_tool_call_output"):
                results.append(item["call_id"])
    elif protocol == "bedrock-converse":
        for m in body["messages"]:
            for c in m["content"]:
                if "toolUse" in c:
                    calls.append(c["toolUse"]["toolUseId"])
                elif "toolResult" in c:
                    results.append(c["toolResult"]["toolUseId"])
    elif protocol == "gemini":
        for content in body["contents"]:
            for part in content["parts"]:
                if "functionCall" in part:
                    calls.append(part["functionCall"].get("id", part["functionCall"]["name"]))
                elif "functionResponse" in part:
                    results.append(part["functionResponse"].get("id", part["functionResponse"]["name"]))
    return sorted(calls), sorted(results)


def _raw_items(reply) -> list[dict]:
    import base64

    out = []
    for block in reply.content:
        if block.type == "data" and getattr(block, "provider_block_type", None):
            out.append(json.loads(base64.b64decode(block.source.data)))
        elif block.type == "tool_result" and isinstance(block.metadata.get("provider_block"), dict):
            out.append(block.metadata["provider_block"])
    return out


def _without(value, items):
    """``value`` with every dict equal to one of ``items`` taken out of its lists."""
    if isinstance(value, dict):
        return {k: _without(v, items) for k, v in value.items()}
    if isinstance(value, list):
        return [_without(v, items) for v in value if not (isinstance(v, dict) and v in items)]
    return value


def _markers(block, text_only: bool = False) -> list[str]:
    """What only the producing provider may get back (``text_only``: its plain reasoning text)."""
    if text_only:
        return (
            _markers(block)[-1:] if getattr(block, "reasoning_field", None) and len(block.thinking.strip()) > 20 else []
        )
    out = []
    for key in ("signature", "redacted_thinking_data"):
        value = getattr(block, key, None)
        if value:
            out.append(value)
    raw = getattr(block, "reasoning_item_raw", None)
    if isinstance(raw, dict) and raw.get("encrypted_content"):
        out.append(raw["encrypted_content"])
    if getattr(block, "reasoning_field", None) and len(block.thinking.strip()) > 20:
        out.append(json.dumps(block.thinking.strip(), ensure_ascii=False)[1:-1][:60])
    return out


def test_the_matrix_covers_every_protocol_and_several_providers():
    assert {p for p, _, _ in SOURCES} == {"anthropic", "openai-chat", "openai-responses", "gemini", "bedrock-converse"}
    assert {"groq", "openrouter", "openai", "anthropic", "google", "vertex", "bedrock"} <= {
        prov for _, prov, _ in SOURCES
    }
